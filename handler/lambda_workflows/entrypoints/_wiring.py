"""The runtime a handler works on.

Each entrypoint's ``make_handler`` takes an :class:`~lambda_workflows.aws.runtime.AwsRuntime`, or a
function that gives one on each request. The module-level ``handler`` that template.yaml names
is ``make_handler(get_runtime)``: the runtime this process builds from its environment on its
first request. The local runtime and the test kit pass the runtime they built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from lambda_workflows.aws.runtime import AwsRuntime

RuntimeSource = AwsRuntime | Callable[[], AwsRuntime]
LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def runtime_of(source: RuntimeSource) -> AwsRuntime:
    """The runtime ``source`` names (built or looked up now, for a function)."""
    return source if isinstance(source, AwsRuntime) else source()
