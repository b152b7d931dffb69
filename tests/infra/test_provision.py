"""lambda_workflows.infra.provision creates what template.yaml declares, in any boto3 session (here:
moto)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from lambda_workflows.infra import Resources, provision
from lambda_workflows.infra.template import function_environment, resource

from .conftest import REGION


def properties(template: dict[str, Any], logical_id: str) -> dict[str, Any]:
    props: dict[str, Any] = resource(template, logical_id)["Properties"]
    return props


def queue_attributes(session: boto3.Session, url: str) -> dict[str, str]:
    response = session.client("sqs").get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    return {str(name): value for name, value in response["Attributes"].items()}


def queue_url_of(session: boto3.Session, arn: str) -> str:
    name = arn.rsplit(":", 1)[1]
    return session.client("sqs").get_queue_url(QueueName=name)["QueueUrl"]


def test_the_table_has_the_templates_keys_index_and_ttl(
    session: boto3.Session, template: dict[str, Any]
) -> None:
    # GIVEN the template's table
    wanted = properties(template, "Table")
    # WHEN the resources are provisioned
    resources = provision(session)
    # THEN the table matches it: keys, attribute types, the GSI, TTL, recovery, encryption
    dynamodb = session.client("dynamodb")
    table = dynamodb.describe_table(TableName=resources.table_name)["Table"]
    assert table["KeySchema"] == wanted["KeySchema"]
    assert sorted(table["AttributeDefinitions"], key=str) == sorted(
        wanted["AttributeDefinitions"], key=str
    )
    assert table["BillingModeSummary"]["BillingMode"] == wanted["BillingMode"]
    indexes = {
        index["IndexName"]: {"KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        for index in table["GlobalSecondaryIndexes"]
    }
    assert indexes == {
        index["IndexName"]: {"KeySchema": index["KeySchema"], "Projection": index["Projection"]}
        for index in wanted["GlobalSecondaryIndexes"]
    }
    ttl = dynamodb.describe_time_to_live(TableName=resources.table_name)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED"
    assert ttl["AttributeName"] == wanted["TimeToLiveSpecification"]["AttributeName"]
    backups = dynamodb.describe_continuous_backups(TableName=resources.table_name)
    recovery = backups["ContinuousBackupsDescription"]["PointInTimeRecoveryDescription"]
    assert recovery["PointInTimeRecoveryStatus"] == "ENABLED"
    assert table["SSEDescription"]["Status"] == "ENABLED"


@pytest.mark.parametrize(
    ("queue", "dead_letter_queue"),
    [("WorkQueue", "WorkDeadLetterQueue"), ("TriggerQueue", "TriggerDeadLetterQueue")],
)
def test_each_queue_has_the_templates_attributes_and_redrive_policy(
    session: boto3.Session, template: dict[str, Any], queue: str, dead_letter_queue: str
) -> None:
    resources = provision(session)
    url = resources.work_queue_url if queue == "WorkQueue" else resources.trigger_queue_url
    attributes = queue_attributes(session, url)
    wanted = properties(template, queue)

    assert attributes["VisibilityTimeout"] == str(wanted["VisibilityTimeout"])
    assert attributes["MessageRetentionPeriod"] == str(wanted["MessageRetentionPeriod"])
    assert attributes["SqsManagedSseEnabled"] == "true"
    redrive = json.loads(attributes["RedrivePolicy"])
    assert int(redrive["maxReceiveCount"]) == wanted["RedrivePolicy"]["maxReceiveCount"] == 5
    assert wanted["RedrivePolicy"]["deadLetterTargetArn"] == {
        "Fn::GetAtt": [dead_letter_queue, "Arn"]
    }
    # The redrive target is the provisioned dead-letter queue, itself without a redrive.
    dead_letters = queue_attributes(session, queue_url_of(session, redrive["deadLetterTargetArn"]))
    assert dead_letters["QueueArn"] == redrive["deadLetterTargetArn"]
    assert "RedrivePolicy" not in dead_letters
    assert dead_letters["SqsManagedSseEnabled"] == "true"


def test_the_work_queue_arn_is_the_work_queues(session: boto3.Session) -> None:
    resources = provision(session)
    attributes = queue_attributes(session, resources.work_queue_url)
    assert resources.work_queue_arn == attributes["QueueArn"]


def test_a_wake_up_can_be_scheduled_in_the_group_onto_the_work_queue(
    session: boto3.Session,
) -> None:
    # GIVEN provisioned resources (moto raises a bare KeyError for a missing group)
    resources = provision(session)
    scheduler = session.client("scheduler")
    assert scheduler.get_schedule_group(Name=resources.schedule_group)["State"] == "ACTIVE"
    # WHEN a one-time wake-up is scheduled the way the engine does it
    scheduler.create_schedule(
        Name="wake-up",
        GroupName=resources.schedule_group,
        ScheduleExpression="at(2030-01-01T00:00:00)",
        FlexibleTimeWindow={"Mode": "OFF"},
        ActionAfterCompletion="DELETE",
        Target={
            "Arn": resources.work_queue_arn,
            "RoleArn": resources.scheduler_role_arn,
            "Input": "{}",
        },
    )
    # THEN it is in the group
    schedules = scheduler.list_schedules(GroupName=resources.schedule_group)["Schedules"]
    assert [schedule["Name"] for schedule in schedules] == ["wake-up"]


def test_the_scheduler_role_trusts_scheduler_and_may_only_send_to_the_two_queues(
    session: boto3.Session,
) -> None:
    # wake-ups go to the work queue; recurring schedules' firings to the trigger queue
    resources = provision(session)
    iam = session.client("iam")
    role_name = resources.scheduler_role_arn.rsplit("/", 1)[1]
    # boto3 decodes the URL-encoded JSON documents into dicts.
    role = iam.get_role(RoleName=role_name)["Role"]
    trust: dict[str, Any] = role["AssumeRolePolicyDocument"]  # type: ignore[assignment]
    (statement,) = trust["Statement"]
    assert statement["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == "123456789012"
    (policy_name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
    policy = iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)
    document: dict[str, Any] = policy["PolicyDocument"]  # type: ignore[assignment]
    trigger_queue_arn = resources.environment("SweepFunction")["TRIGGER_QUEUE_ARN"]
    assert document["Statement"] == [
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": resources.work_queue_arn},
        {"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": trigger_queue_arn},
    ]


def test_provisioning_twice_is_harmless_and_finds_the_same_resources(
    session: boto3.Session,
) -> None:
    first = provision(session)
    second = provision(session)
    assert second == first
    assert len(session.client("sqs").list_queues(QueueNamePrefix="wf-")["QueueUrls"]) == 4
    assert session.client("dynamodb").list_tables()["TableNames"] == [first.table_name]


def test_another_prefix_gives_a_separate_set(session: boto3.Session) -> None:
    first = provision(session, prefix="a")
    second = provision(session, prefix="b")
    assert first.table_name != second.table_name
    assert first.work_queue_url != second.work_queue_url
    assert first.schedule_group != second.schedule_group


def test_a_session_without_region_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    with pytest.raises(ValueError, match="no region"):
        provision(boto3.Session())


def test_environment_gives_every_variable_the_template_sets(
    session: boto3.Session, template: dict[str, Any]
) -> None:
    # GIVEN provisioned resources
    resources = provision(session)
    # WHEN the environment of a function is asked for
    environment = resources.environment()
    trigger_environment = resources.environment("TriggerFunction")
    # THEN it has exactly the template's variables (plus the region), all resolved to strings
    assert set(environment) == set(function_environment(template)) | {
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
    }
    assert set(trigger_environment) == set(environment) | {
        "TRIGGER_WORKFLOW",
        "RUNNER_FUNCTION_ARN",
    }
    # the senders name one runner: the trigger by its ARN, the API by its name
    runner = trigger_environment["RUNNER_FUNCTION_ARN"]
    assert runner.endswith(":function:local-runner")
    assert resources.environment("ApiFunction")["RUNNER_FUNCTION_ARN"] == runner
    assert all(isinstance(value, str) for value in trigger_environment.values())
    assert environment == {
        "TABLE_NAME": resources.table_name,
        "WORK_QUEUE_URL": resources.work_queue_url,
        "WORK_QUEUE_ARN": resources.work_queue_arn,
        "SCHEDULE_GROUP": resources.schedule_group,
        "SCHEDULER_ROLE_ARN": resources.scheduler_role_arn,
        "WORKFLOWS": "",
        "RETENTION_DAYS": "30",
        "WORKFLOWS_LINK_KEY": resources.link_key,
        "POWERTOOLS_SERVICE_NAME": "lambda-workflows",
        "POWERTOOLS_METRICS_NAMESPACE": "LambdaWorkflows",
        "POWERTOOLS_LOG_LEVEL": "INFO",
        "AWS_REGION": REGION,
        "AWS_DEFAULT_REGION": REGION,
    }


def test_resources_are_frozen() -> None:
    resources = Resources("t", "u", "a", "v", "g", "r", REGION)
    with pytest.raises(AttributeError):
        resources.table_name = "other"  # type: ignore[misc]
