"""The Python client: create and control instances from your code, a script, or inside a step.

::

    from lambda_workflows import Workflow

    orders = Workflow("orders", url="http://127.0.0.1:8787")   # `lambda-workflows dev`
    instance = orders.create(id="order-1234", params={"sku": "cat-poster"})
    instance.status().status               # "queued", "running", ..., "complete"
    instance.send_event(type="approved", payload={"user": "ana"}, key="approval-1234")

It works in one of two modes, with the same methods, return types and exceptions:

- **HTTP mode**, with ``url=``: requests to the HTTP API at that address — ``lambda-workflows dev``
  (``http://127.0.0.1:8787``), or a deployed stack's ``ApiUrl`` output. An ``execute-api`` URL
  (the template's default ``ApiAuth=AWS_IAM``) is signed with SigV4 from the default AWS
  credential chain (environment, profile, SSO, instance role), as ``curl --aws-sigv4`` would.
  Without ``url=`` and ``service=``, the ``WORKFLOWS_URL`` environment variable, when set, is
  the URL. Use this mode from scripts, services and notebooks.
- **Direct mode**, otherwise: the instance service of the AWS runtime built from this process's
  environment (the variables template.yaml sets on each Lambda function: the table, the work
  queue, the schedule group, ``WORKFLOWS``), talking to DynamoDB and SQS itself. It is the mode
  of code running in the stack's functions.

Errors are the engine's in both modes: ``UnknownWorkflow``, ``InstanceNotFound``,
``InstanceAlreadyExists``, ``InvalidTransition``, ``InvalidInput``; ``ConfigurationError`` and
the retryable ``InfrastructureError`` (over HTTP, its subclass
:class:`~lambda_workflows.http_service.ApiUnavailable`) are in
:mod:`lambda_workflows.engine.errors`.

Inside a workflow, use ``self.env.workflow("orders")`` — and call ``create`` inside a
``step.do`` so a replay does not create the instance twice (rules of Workflows: avoid doing side
effects outside of a step).
"""

from __future__ import annotations

import os

from lambda_workflows.engine.instances.clients import InstanceApi, WorkflowClient, WorkflowInstance

from .engine.errors import ConfigurationError
from .http_service import HttpInstanceService
from .remote import URL_VARIABLE, HttpApi

__all__ = ["Workflow", "WorkflowInstance"]

_DIRECT_MODE_HINT = (
    "Workflow(name) without url= is the direct mode, for code running in the stack's Lambda "
    "functions, whose environment names the stack's resources; from a script or another "
    "service, call the HTTP API instead: Workflow(name, url='http://127.0.0.1:8787') for "
    "`lambda-workflows dev`, Workflow(name, url=<the stack's ApiUrl output>) for a deployed stack, "
    f"or set {URL_VARIABLE} to that URL"
)


class Workflow(WorkflowClient):
    """A client of one registered workflow.

    Args:
        name: the workflow's registered name.
        url: the HTTP API's base URL (HTTP mode); default: ``WORKFLOWS_URL`` when it is set
            and no ``service`` is given.
        sign: sign requests with SigV4 (HTTP mode); default: when ``url`` is an execute-api URL.
        region: the region to sign for; default: the one in the execute-api host name.
        service: the instance API to work through, instead of a URL or the environment.

    Raises:
        ValueError: ``url`` is not an http(s) URL.
        TypeError: both ``url`` and ``service`` are given, or ``sign``/``region`` without a URL.
    """

    def __init__(
        self,
        name: str,
        *,
        url: str | None = None,
        sign: bool | None = None,
        region: str | None = None,
        service: InstanceApi | None = None,
    ) -> None:
        if url is not None and service is not None:
            raise TypeError("give Workflow either url= (HTTP mode) or service=, not both")
        if service is None and url is None:
            url = os.environ.get(URL_VARIABLE) or None
        if url is None and (sign is not None or region is not None):
            raise TypeError(
                f"sign= and region= apply to the HTTP mode: give url= (or set {URL_VARIABLE})"
            )
        self.url = url
        """The API's URL in the HTTP mode; None in the direct mode (or with ``service=``)."""
        if url is not None:
            service = HttpInstanceService(HttpApi(url, sign=sign, region=region))
        super().__init__(name, service)

    def _default_service(self) -> InstanceApi:
        """The direct mode: the AWS runtime built from this process's environment."""
        from .aws.runtime import get_runtime  # boto3 is loaded only when it is needed

        try:
            return get_runtime().service
        except ConfigurationError as exc:
            raise ConfigurationError(f"{exc}. {_DIRECT_MODE_HINT}") from None

    def __repr__(self) -> str:
        shown = f", url={self.url!r}" if self.url is not None else ""
        return f"{type(self).__name__}({self.name!r}{shown})"
