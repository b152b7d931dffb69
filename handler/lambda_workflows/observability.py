"""Powertools logging and metrics for the Lambdas (created lazily, never at import time).

The engine logs through the standard ``logging`` module under ``lambda_workflows.*``; the Lambdas
copy the Powertools JSON configuration onto those loggers, so every line carries the workflow and
instance id (appended per record) and, for step lines, the step name and attempt.
"""

from __future__ import annotations

import logging
import os
import sys
from functools import lru_cache
from typing import Any

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers


class _StdoutHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stdout`` is at the time (Lambda's, or a test's capture)."""

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


@lru_cache(maxsize=1)
def logger() -> Logger:
    """The service logger, with the engine's loggers sharing its JSON format and keys."""
    log = Logger(
        service=os.environ.get("POWERTOOLS_SERVICE_NAME", "lambda-workflows"),
        logger_handler=_StdoutHandler(),
    )
    copy_config_to_registered_loggers(source_logger=log, include={"lambda_workflows"})
    return log


@lru_cache(maxsize=1)
def metrics() -> Metrics:
    """EMF metrics in the configured namespace (default ``Workflows``)."""
    return Metrics(namespace=os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "LambdaWorkflows"))
