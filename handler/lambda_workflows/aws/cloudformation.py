"""The CloudFormation adapter: what ``lambda-workflows doctor`` reads of a deployed stack."""

from __future__ import annotations

import boto3
from botocore.exceptions import BotoCoreError, ClientError

from lambda_workflows.engine.errors import InfrastructureError

__all__ = ["stack_outputs"]


def stack_outputs(stack: str, region: str | None = None) -> dict[str, str]:
    """The outputs of ``stack``, by key (the credentials and region boto3 finds by default).

    Raises:
        InfrastructureError: the stack cannot be read (it does not exist, no credentials,
            denied, unreachable), with CloudFormation's own words.
    """
    try:
        client = boto3.client("cloudformation", region_name=region)
        stacks = client.describe_stacks(StackName=stack)["Stacks"]
    except (BotoCoreError, ClientError) as exc:
        message = f"stack {stack} cannot be read from CloudFormation: {exc}"
        raise InfrastructureError(message) from None
    outputs = stacks[0].get("Outputs", []) if stacks else []
    return {o["OutputKey"]: o.get("OutputValue", "") for o in outputs if "OutputKey" in o}
