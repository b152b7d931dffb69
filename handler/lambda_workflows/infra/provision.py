"""Create the template's stateful resources in any boto3 session (moto included).

``provision(session)`` makes the DynamoDB table, the work and trigger queues with their
dead-letter queues, the EventBridge Scheduler group and the scheduler's IAM role, reading
every property from ``template.yaml``: key schema, index, TTL, queue attributes and redrive
policies are never re-typed here, so tests and the local runtime cannot drift from what is
deployed. A template property this module does not know how to apply is an error, not a
silent omission.

Idempotent: calling it again with the same prefix finds what exists and converges it.
"""

from __future__ import annotations

import graphlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import boto3
from botocore.exceptions import ClientError

from .intrinsics import Values, references, resolve
from .template import function_environment, load_template, parameter_defaults, resource
from .template import resources_of_type as _resources_of_type

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_iam import IAMClient
    from mypy_boto3_scheduler import EventBridgeSchedulerClient
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

__all__ = ["Resources", "provision"]

# Logical ids of the template resources the engine talks to.
TABLE = "Table"
WORK_QUEUE = "WorkQueue"
TRIGGER_QUEUE = "TriggerQueue"
SCHEDULE_GROUP = "ScheduleGroup"
SCHEDULER_ROLE = "SchedulerRole"
LINK_KEY = "LinkKey"

# AWS::DynamoDB::Table properties: which ones are applied, and which are deliberately not.
_TABLE_CREATE_PROPERTIES = frozenset(
    {
        "AttributeDefinitions",
        "BillingMode",
        "DeletionProtectionEnabled",
        "GlobalSecondaryIndexes",
        "KeySchema",
        "LocalSecondaryIndexes",
        "ProvisionedThroughput",
        "SSESpecification",
    }
)
_TABLE_LATER_PROPERTIES = frozenset({"TimeToLiveSpecification", "PointInTimeRecoverySpecification"})
_TABLE_IGNORED_PROPERTIES = frozenset(
    {
        "TableName",  # the name comes from the prefix
        "Tags",  # no behaviour
        "ContributorInsightsSpecification",  # monitoring only
        # read only by an event source mapping (SweepFunction's ExpiredInstances), which a
        # provisioned stack has none of; moto would keep a record of every write in memory
        "StreamSpecification",
    }
)
# AWS::SQS::Queue properties that are not queue attributes of the same name.
_QUEUE_IGNORED_PROPERTIES = frozenset({"QueueName", "Tags"})
_QUEUE_JSON_ATTRIBUTES = frozenset({"RedrivePolicy", "RedriveAllowPolicy"})


@dataclass(frozen=True, slots=True)
class Resources:
    """Names and addresses of the provisioned resources.

    Attributes:
        table_name: the DynamoDB table.
        work_queue_url: the runner's work queue.
        work_queue_arn: its ARN (the target of wake-up schedules).
        trigger_queue_url: the trigger queue.
        schedule_group: the EventBridge Scheduler group of wake-ups.
        scheduler_role_arn: the role EventBridge Scheduler assumes to send wake-ups.
        region: the region everything was created in.
        link_key: stands for the LinkKey secret (a stack resolves it when it deploys).
    """

    table_name: str
    work_queue_url: str
    work_queue_arn: str
    trigger_queue_url: str
    schedule_group: str
    scheduler_role_arn: str
    region: str
    link_key: str = ""  # stands for the LinkKey secret (generated: see provision)

    def environment(self, function: str | None = None) -> dict[str, str]:
        """The environment variables a deployed function would get, for these resources.

        Resolved from the template's ``Globals`` (and the function's own variables when
        ``function`` is given), parameters at their defaults, plus ``AWS_REGION`` and
        ``AWS_DEFAULT_REGION`` as Lambda sets them.

        Args:
            function: logical id of a function (e.g. ``"TriggerFunction"``); None for the
                variables every function shares.

        Returns:
            Variable name → value, e.g. ``{"TABLE_NAME": "wf-table", ...}``.
        """
        template = load_template()
        values = _values_for(self, template)
        variables = {
            name: self._resolved(_as_string(resolve(value, values)))
            for name, value in function_environment(template, function).items()
        }
        variables["AWS_REGION"] = variables["AWS_DEFAULT_REGION"] = self.region
        return variables

    def _resolved(self, value: str) -> str:
        """A value, with the dynamic reference to the LinkKey secret (resolved when a stack
        deploys) replaced by its stand-in."""
        return self.link_key if value.startswith(_SECRET_REFERENCE) else value


_SECRET_REFERENCE = "{{resolve:secretsmanager:"


def provision(session: boto3.Session, *, prefix: str = "wf") -> Resources:
    """Create (or find) the template's table, queues, schedule group and scheduler role.

    Args:
        session: where to create them; under moto's ``mock_aws`` that is the mock.
        prefix: start of every name (``{prefix}-table``, ``{prefix}-work-queue``, ...), so that
            several sets can live in one account.

    Returns:
        Their names and addresses.

    Raises:
        ValueError: the session has no region, or a resource exists with an incompatible
            shape (a table with another key schema).
        NotImplementedError: the template uses a property this module cannot apply.
        botocore.exceptions.ClientError: AWS refused a call.
    """
    region = session.region_name
    if not region:
        raise ValueError("the boto3 session has no region: pass boto3.Session(region_name=...)")
    template = load_template()
    values = _pseudo_parameters(session, template, region, prefix)
    table_name = _provision_table(session.client("dynamodb"), template, values, prefix)
    _provision_queues(session.client("sqs"), template, values, prefix)
    group_name = f"{prefix}-wake-ups"
    group_arn = _ensure_schedule_group(session.client("scheduler"), group_name)
    values.refs[SCHEDULE_GROUP] = group_name
    values.attributes[SCHEDULE_GROUP, "Arn"] = group_arn
    role_name = f"{prefix}-{_kebab(SCHEDULER_ROLE)}"
    role_arn = _ensure_role(
        session.client("iam"), role_name, resolve(_properties(template, SCHEDULER_ROLE), values)
    )
    return Resources(
        table_name=table_name,
        work_queue_url=values.ref(WORK_QUEUE),
        work_queue_arn=values.get_att(WORK_QUEUE, "Arn"),
        trigger_queue_url=values.ref(TRIGGER_QUEUE),
        schedule_group=group_name,
        scheduler_role_arn=role_arn,
        region=region,
        link_key=_ensure_link_key(session.client("secretsmanager"), f"{prefix}-link-key"),
    )


def _pseudo_parameters(
    session: boto3.Session, template: Mapping[str, Any], region: str, prefix: str
) -> Values:
    """The template's parameters at their defaults and the pseudo parameters of ``session``
    (the stack name is the prefix); resources are added as they are created."""
    account = session.client("sts").get_caller_identity()["Account"]
    return Values(
        refs={
            **parameter_defaults(template),
            "AWS::AccountId": account,
            "AWS::Partition": session.get_partition_for_region(region),
            "AWS::Region": region,
            "AWS::StackName": prefix,
            "AWS::URLSuffix": "amazonaws.com",
        }
    )


def _provision_table(
    client: DynamoDBClient, template: Mapping[str, Any], values: Values, prefix: str
) -> str:
    """Create or converge the table; record its name and ARN in ``values``; return the name."""
    table_name = f"{prefix}-{_kebab(TABLE)}"
    _ensure_table(client, table_name, resolve(_properties(template, TABLE), values))
    values.refs[TABLE] = table_name
    values.attributes[TABLE, "Arn"] = (
        f"arn:{values.ref('AWS::Partition')}:dynamodb:{values.ref('AWS::Region')}:"
        f"{values.ref('AWS::AccountId')}:table/{table_name}"
    )
    return table_name


def _provision_queues(
    client: SQSClient, template: Mapping[str, Any], values: Values, prefix: str
) -> None:
    """Create or converge every queue, dead-letter queues first (a redrive policy names its
    queue's ARN); record each one's URL, ARN and name in ``values``."""
    for logical_id, properties in _queues_in_creation_order(template):
        name = f"{prefix}-{_kebab(logical_id)}"
        url, arn = _ensure_queue(client, name, resolve(properties, values))
        values.refs[logical_id] = url
        values.attributes[logical_id, "Arn"] = arn
        values.attributes[logical_id, "QueueName"] = name


# --- DynamoDB ---------------------------------------------------------------------------------


def _ensure_table(client: DynamoDBClient, name: str, properties: Mapping[str, Any]) -> None:
    unknown = set(properties) - _TABLE_CREATE_PROPERTIES - _TABLE_LATER_PROPERTIES
    unknown -= _TABLE_IGNORED_PROPERTIES
    if unknown:
        raise NotImplementedError(
            f"lambda_workflows.infra.provision cannot apply Table properties {unknown}"
        )
    create: dict[str, Any] = {
        key: value for key, value in properties.items() if key in _TABLE_CREATE_PROPERTIES
    }
    if "SSESpecification" in create:
        # CloudFormation spells it SSEEnabled; the API, Enabled.
        sse = dict(create["SSESpecification"])
        sse["Enabled"] = sse.pop("SSEEnabled")
        create["SSESpecification"] = sse
    try:
        existing = client.describe_table(TableName=name)["Table"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
        client.create_table(TableName=name, **create)
        client.get_waiter("table_exists").wait(
            TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 300}
        )
    else:
        indexes = {index["IndexName"] for index in existing.get("GlobalSecondaryIndexes", [])}
        wanted = {index["IndexName"] for index in properties.get("GlobalSecondaryIndexes", [])}
        if existing.get("KeySchema") != properties["KeySchema"] or indexes != wanted:
            raise ValueError(
                f"table {name} exists with another key schema or other indexes;"
                " delete it or provision with another prefix"
            )

    ttl = properties.get("TimeToLiveSpecification")
    if ttl and ttl.get("Enabled"):
        current = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        # Enabling twice is a ValidationException on AWS, so look first.
        if current.get("TimeToLiveStatus") not in ("ENABLED", "ENABLING"):
            client.update_time_to_live(
                TableName=name,
                TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
            )
    recovery = properties.get("PointInTimeRecoverySpecification")
    if recovery and recovery.get("PointInTimeRecoveryEnabled"):
        client.update_continuous_backups(
            TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
        )


# --- SQS --------------------------------------------------------------------------------------


def _queues_in_creation_order(template: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every queue of the template, each after the queues it refers to (its dead-letter
    queue before it)."""
    queues = {
        logical_id: definition.get("Properties", {})
        for logical_id, definition in _resources_of_type(template, "AWS::SQS::Queue").items()
    }
    order = graphlib.TopologicalSorter(
        {logical_id: references(props) & queues.keys() for logical_id, props in queues.items()}
    )
    return [(logical_id, queues[logical_id]) for logical_id in order.static_order()]


def _ensure_queue(client: SQSClient, name: str, properties: Mapping[str, Any]) -> tuple[str, str]:
    """Create the queue (or bring an existing one to ``properties``); return (url, arn)."""
    # The template's property names are the queue attribute names (QueueName, Tags aside).
    attributes = {
        key: json.dumps(value) if key in _QUEUE_JSON_ATTRIBUTES else _as_string(value)
        for key, value in properties.items()
        if key not in _QUEUE_IGNORED_PROPERTIES
    }
    if attributes.get("FifoQueue") == "true":
        name += ".fifo"
    try:
        url = client.create_queue(QueueName=name, Attributes=_queue_attributes(attributes))[
            "QueueUrl"
        ]
    except ClientError as error:
        # SQS returns the existing queue when the attributes are equal, and this error when
        # they differ (the template changed since): converge the existing queue.
        if error.response["Error"]["Code"] not in ("QueueAlreadyExists", "QueueNameExists"):
            raise
        url = client.get_queue_url(QueueName=name)["QueueUrl"]
        changeable = {k: v for k, v in attributes.items() if k != "FifoQueue"}
        client.set_queue_attributes(QueueUrl=url, Attributes=_queue_attributes(changeable))
    arn = client.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def _queue_attributes(attributes: dict[str, str]) -> dict[QueueAttributeNameType, str]:
    return cast("dict[QueueAttributeNameType, str]", attributes)


# --- EventBridge Scheduler --------------------------------------------------------------------


def _ensure_schedule_group(client: EventBridgeSchedulerClient, name: str) -> str:
    """Create the group unless it exists; return its ARN.

    It must exist before any schedule is created in it: moto answers a schedule in a missing
    group with a raw KeyError rather than ResourceNotFoundException.
    """
    try:
        return client.get_schedule_group(Name=name)["Arn"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ResourceNotFoundException":
            raise
    try:
        return client.create_schedule_group(Name=name)["ScheduleGroupArn"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "ConflictException":  # created meanwhile
            raise
        return client.get_schedule_group(Name=name)["Arn"]


# --- IAM --------------------------------------------------------------------------------------


def _ensure_role(client: IAMClient, name: str, properties: Mapping[str, Any]) -> str:
    """Create the role (or update an existing one's trust policy); put its inline policies."""
    trust = json.dumps(properties["AssumeRolePolicyDocument"])
    try:
        arn = client.get_role(RoleName=name)["Role"]["Arn"]
    except ClientError as error:
        if error.response["Error"]["Code"] != "NoSuchEntity":
            raise
        arn = client.create_role(
            RoleName=name,
            AssumeRolePolicyDocument=trust,
            Description=properties.get("Description", ""),
        )["Role"]["Arn"]
    else:
        client.update_assume_role_policy(RoleName=name, PolicyDocument=trust)
    for policy in properties.get("Policies", []):
        client.put_role_policy(
            RoleName=name,
            PolicyName=policy["PolicyName"],
            PolicyDocument=json.dumps(policy["PolicyDocument"]),
        )
    return arn


# --- helpers ----------------------------------------------------------------------------------


def _ensure_link_key(client: Any, name: str) -> str:
    """The LinkKey secret's value: generated once (as the template's GenerateSecretString,
    64 letters and digits), then found again."""
    try:
        return str(client.get_secret_value(SecretId=name)["SecretString"])
    except client.exceptions.ResourceNotFoundException:
        pass
    value = str(
        client.get_random_password(PasswordLength=64, ExcludePunctuation=True, IncludeSpace=False)[
            "RandomPassword"
        ]
    )
    client.create_secret(Name=name, SecretString=value)
    return value


def _properties(template: Mapping[str, Any], logical_id: str) -> dict[str, Any]:
    properties: dict[str, Any] = resource(template, logical_id).get("Properties", {})
    return properties


LOCAL_ACCOUNT = "123456789012"  # moto's


def _values_for(resources: Resources, template: Mapping[str, Any]) -> Values:
    """What the template's names mean for already provisioned ``resources``."""
    return Values(
        refs={
            **parameter_defaults(template),
            "AWS::Region": resources.region,
            TABLE: resources.table_name,
            WORK_QUEUE: resources.work_queue_url,
            TRIGGER_QUEUE: resources.trigger_queue_url,
            SCHEDULE_GROUP: resources.schedule_group,
            LINK_KEY: f"arn:aws:secretsmanager:{resources.region}:000000000000:secret:link-key",
            # what an approval link's URL starts with in a deployed stack; `lambda-workflows
            # dev` mints links to its own address instead
            "WorkflowsHttpApi": "local",
            "WorkflowsApi": "local",
            "AWS::URLSuffix": "amazonaws.com",
            # the runner as the senders name it (RUNNER_FUNCTION_ARN); locally its invokes
            # never leave the process (lambda_workflows.local.embedded)
            "AWS::Partition": "aws",
            "AWS::AccountId": LOCAL_ACCOUNT,
            "AWS::StackName": "local",
        },
        conditions=dict(template.get("Conditions", {})),
        attributes={
            (WORK_QUEUE, "Arn"): resources.work_queue_arn,
            (TRIGGER_QUEUE, "Arn"): _queue_arn(resources.trigger_queue_url, resources.region),
            (SCHEDULER_ROLE, "Arn"): resources.scheduler_role_arn,
            ("RunnerFunction", "Arn"): (
                f"arn:aws:lambda:{resources.region}:{LOCAL_ACCOUNT}:function:local-runner"
            ),
        },
    )


def _queue_arn(url: str, region: str) -> str:
    """The ARN of the queue at ``url`` (``https://sqs.<region>.../<account>/<name>``)."""
    account, name = url.rstrip("/").split("/")[-2:]
    return f"arn:aws:sqs:{region}:{account}:{name}"


def _as_string(value: Any) -> str:
    """A template scalar as AWS attribute / environment strings spell it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _kebab(logical_id: str) -> str:
    """``WorkDeadLetterQueue`` → ``work-dead-letter-queue``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id).lower()
