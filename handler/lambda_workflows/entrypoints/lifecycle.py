"""LifecycleEventsFunction: publishes instances' lifecycle events to an EventBridge bus.

Created only when the stack's ``LifecycleEventBus`` parameter names a bus (template.yaml). Its
event source is the table's stream, filtered to the writes of instance items (and, with
``LifecycleStepEvents=true``, to the step outcomes inserted in journals), so the runner, the
API and the trigger make no call of their own for it: a status change is published after the
write that made it, never on the way of a step.

Each batch is published in the stream's order (the order of an instance's writes); what could
not be published is reported as a batch item failure, the first such record, and the event
source mapping retries from there (see :mod:`lambda_workflows.aws.eventbridge` for why that
keeps each instance's events in order, with no gap). docs/events.md has the events' shapes.

Environment: ``LIFECYCLE_EVENT_BUS`` (the bus), ``LIFECYCLE_STEP_EVENTS`` (``true``: also
``step.completed`` and ``step.failed``). It needs no other resource of the stack: it reads
only the records it is given.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from aws_lambda_powertools.metrics import MetricUnit

from lambda_workflows.aws.eventbridge import EventBridgePublisher
from lambda_workflows.aws.table_stream import lifecycle_events, sequence_number
from lambda_workflows.engine.errors import ConfigurationError
from lambda_workflows.engine.instances.lifecycle import LifecycleEvent
from lambda_workflows.observability import logger, metrics

from ._wiring import LambdaHandler

PublisherSource = EventBridgePublisher | Callable[[], EventBridgePublisher]


def make_handler(publisher: PublisherSource, *, steps: bool | None = None) -> LambdaHandler:
    """The Lambda entry point (the table's stream), publishing through ``publisher``.

    Args:
        publisher: the publisher, or what gives it on first use.
        steps: publish step outcomes too (default: ``LIFECYCLE_STEP_EVENTS``).
    """

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        @metrics().log_metrics  # built on the first call: nothing at import time
        def run(event: dict[str, Any], context: Any) -> dict[str, Any]:
            chosen = publisher if isinstance(publisher, EventBridgePublisher) else publisher()
            with_steps = step_events() if steps is None else steps
            return publish_records(chosen, event.get("Records", []), steps=with_steps)

        return cast(dict[str, Any], run(event, context))

    return handler


def publish_records(
    publisher: EventBridgePublisher, records: Sequence[Mapping[str, Any]], *, steps: bool
) -> dict[str, Any]:
    """Publish the events of ``records``, in order; the first record whose event is not
    published is reported as a batch item failure (the stream retries it and those after it).
    """
    found = [(sequence_number(record), event) for record, event in _events(records, steps)]
    done = publisher.publish([event for _, event in found])
    if done.published:
        metrics().add_metric(
            name="LifecycleEventsPublished", unit=MetricUnit.Count, value=done.published
        )
    if done.published == len(found):
        return {"batchItemFailures": []}
    first, event = found[done.published]
    logger().warning(
        "publishing lifecycle events failed; the stream retries from this record",
        extra={"event_id": event.id, "error": done.failure, "sequence_number": first},
    )
    metrics().add_metric(
        name="LifecycleEventFailures", unit=MetricUnit.Count, value=len(found) - done.published
    )
    return {"batchItemFailures": [{"itemIdentifier": first}]}


def _events(
    records: Sequence[Mapping[str, Any]], steps: bool
) -> list[tuple[Mapping[str, Any], LifecycleEvent]]:
    """Each record's events, in order (records that publish nothing left out). A record this
    engine did not write (it cannot be read as an instance or a step) is logged and skipped:
    retrying it could not help."""
    found: list[tuple[Mapping[str, Any], LifecycleEvent]] = []
    for record in records:
        try:
            events = lifecycle_events(record, steps=steps)
        except ConfigurationError:
            raise  # the whole stack is misconfigured: fail the batch, loudly
        except (KeyError, ValueError, TypeError) as exc:
            keys = (record.get("dynamodb") or {}).get("Keys")
            logger().error(
                "skipped an unreadable stream record", extra={"keys": keys, "error": repr(exc)}
            )
            continue
        found.extend((record, event) for event in events)
    return found


def step_events(environ: Mapping[str, str] | None = None) -> bool:
    """``LIFECYCLE_STEP_EVENTS``: ``true`` publishes step outcomes too (anything else: no)."""
    env = os.environ if environ is None else environ
    return env.get("LIFECYCLE_STEP_EVENTS", "false").strip().lower() == "true"


@functools.cache
def environment_publisher() -> EventBridgePublisher:
    """The publisher to ``LIFECYCLE_EVENT_BUS``, built on first use."""
    import boto3

    bus = os.environ.get("LIFECYCLE_EVENT_BUS", "")
    if not bus:
        raise ConfigurationError(
            "LIFECYCLE_EVENT_BUS is not set: template.yaml sets it from the LifecycleEventBus "
            "parameter on LifecycleEventsFunction, which exists only when that names a bus"
        )
    return EventBridgePublisher(boto3.client("events"), bus)


handler = make_handler(environment_publisher)
