"""``POST /_dev/events``: put an EventBridge event on ``lambda-workflows dev``, as ``aws events
put-events`` puts one on the trigger bus of a deployed stack.

The body is one put-events entry::

    {"Source": "workflows.trigger", "DetailType": "Workflow Event",
     "Detail": {"workflow": "orders", "instance_id": "order-42", "type": "approved"},
     "Id": "evt-1"}

``Detail`` is a JSON object, or a string holding one (as put-events takes it); ``Id`` is
optional (EventBridge gives every event a new one: give it to send the same event again);
``EventBusName`` and ``Resources`` are taken as put-events takes them. The dev server wraps the
entry in the envelope EventBridge would deliver (``id``, ``source``, ``detail-type``,
``detail``, ``time`` from the dev clock...) and hands it to the real TriggerFunction handler,
which routes it by its detail-type as on AWS: ``Workflow Event`` sends the event to an
instance's ``wait_for_event``, once per event id; any other detail-type creates an instance.

Only events the template's rules would deliver to TriggerFunction are taken: the source (and
the bus, when named) must be the trigger's, else a 400 names the expected one. An event that
cannot be delivered or create an instance, which on AWS would be logged, retried and
dead-lettered, is a 4xx here with the reason, and nothing is written:

- delivered → 200 ``{"id", "detail-type", "outcome": "delivered", "workflow", "instance_id",
  "type", "event_id"}`` (``event_id``: the event as the instance stored it; sending the same
  ``Id`` again answers the same one and stores nothing);
- created → 201 ``{"id", "detail-type", "outcome": "created", "workflow", "instance_id"}``,
  or 200 with ``"outcome": "exists"`` when that instance id was already taken (a redelivery).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from lambda_workflows.engine.clock import iso
from lambda_workflows.engine.errors import (
    ConcurrentModification,
    ConfigurationError,
    InfrastructureError,
    InstanceAlreadyExists,
    InstanceNotFound,
    InvalidTransition,
    UnknownWorkflow,
    WorkflowError,
)

if TYPE_CHECKING:
    from .embedded import EmbeddedAws

__all__ = ["EVENTS_PATH", "BadEntry", "DevEvents", "TriggerRules", "envelope", "trigger_rules"]

EVENTS_PATH = "/_dev/events"
_ENTRY_KEYS = ("Source", "DetailType", "Detail", "Id", "EventBusName", "Resources")
_EXAMPLE = (
    '{"Source": "<source>", "DetailType": "Workflow Event", "Detail": {"workflow": "orders", '
    '"instance_id": "order-42", "type": "approved", "payload": {}}, "Id": "<optional>"}'
)
_ACCOUNT = "123456789012"  # moto's account: the one the embedded AWS runs in
Answer = tuple[int, dict[str, str], bytes]
Printer = Callable[[str], None]


class BadEntry(ValueError):
    """A body that is not a put-events entry the trigger's rules would deliver."""


@dataclass(frozen=True, slots=True)
class TriggerRules:
    """What TriggerFunction's EventBridge rules in template.yaml match: the source every
    event must carry, on the bus they listen to."""

    source: str
    bus: str


def trigger_rules(template: Mapping[str, Any] | None = None) -> TriggerRules:
    """The source and bus of TriggerFunction's EventBridge rules, parameters at their defaults
    (``lambda-workflows dev`` deploys the template as it is)."""
    from lambda_workflows.infra.intrinsics import Values, resolve
    from lambda_workflows.infra.template import load_template, parameter_defaults, resource

    template = load_template() if template is None else template
    values = Values(refs=parameter_defaults(template))
    events = resource(template, "TriggerFunction")["Properties"]["Events"]
    sources: set[str] = set()
    buses: set[str] = set()
    for event in events.values():
        if event.get("Type") == "EventBridgeRule":
            properties = event["Properties"]
            sources.update(resolve(properties["Pattern"]["source"], values))
            buses.add(resolve(properties.get("EventBusName", "default"), values))
    if len(sources) != 1 or len(buses) != 1:  # each rule of one source on one bus, as shipped
        raise ValueError(f"TriggerFunction's rules match sources {sources} on buses {buses}")
    return TriggerRules(sources.pop(), buses.pop())


def envelope(body: bytes, rules: TriggerRules, now: float, region: str) -> dict[str, Any]:
    """The EventBridge event a ``POST /_dev/events`` body puts, as TriggerFunction receives it.

    Raises:
        BadEntry: the body is not one put-events entry, or not of the trigger's source or bus.
    """
    entry = _entry(body)
    source, detail_type = _text(entry, "Source"), _text(entry, "DetailType")
    if source != rules.source:
        raise BadEntry(
            f"Source {source!r} is not the trigger's: the template's rules deliver only events "
            f'of source {rules.source!r} to TriggerFunction; send "Source": "{rules.source}"'
        )
    _check_bus(entry.get("EventBusName"), rules.bus)
    resources = entry.get("Resources", [])
    if not isinstance(resources, list) or not all(isinstance(r, str) for r in resources):
        raise BadEntry("Resources must be a list of strings (ARNs), as put-events takes it")
    event_id = entry.get("Id", str(uuid.uuid4()))
    if not isinstance(event_id, str) or not event_id.strip():
        raise BadEntry(
            f"Id must be a non-empty string, not {event_id!r}; leave it out for a new one"
        )
    return {
        "version": "0",
        "id": event_id,
        "detail-type": detail_type,
        "source": source,
        "account": _ACCOUNT,
        "time": datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": resources,
        "detail": _detail(entry.get("Detail")),
    }


def _entry(body: bytes) -> dict[str, Any]:
    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    if not body.strip():
        raise BadEntry(f"the body is empty; send one put-events entry: {_EXAMPLE}")
    try:
        entry = json.loads(body, parse_constant=refuse)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise BadEntry(f"the body is not JSON; send one put-events entry: {_EXAMPLE}") from None
    if isinstance(entry, list):
        raise BadEntry(f"send one entry (a JSON object), not a list: {_EXAMPLE}")
    if not isinstance(entry, dict):
        raise BadEntry(f"the body must be a JSON object: {_EXAMPLE}")
    unknown = sorted(set(entry) - set(_ENTRY_KEYS))
    if unknown:
        raise BadEntry(
            f"unknown key(s) {', '.join(map(repr, unknown))}; an entry takes "
            f"{', '.join(_ENTRY_KEYS)} (the time is the dev clock's)"
        )
    return entry


def _text(entry: Mapping[str, Any], key: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise BadEntry(f"{key} is required, a non-empty string; e.g. {_EXAMPLE}")
    return value


def _check_bus(named: Any, bus: str) -> None:
    if named is None:
        return
    # put-events takes the bus's name or its ARN (arn:aws:events:...:event-bus/<name>)
    name = named.rpartition("event-bus/")[2] if isinstance(named, str) else named
    if name != bus:
        raise BadEntry(
            f"EventBusName {named!r} is not the trigger's bus: the template's rules listen on "
            f"{bus!r}; send {bus!r} or leave EventBusName out"
        )


def _detail(detail: Any) -> dict[str, Any]:
    """The entry's ``Detail``: a JSON object, or a string holding one (put-events' form)."""
    if detail is None:
        raise BadEntry(f"Detail is required, a JSON object; e.g. {_EXAMPLE}")
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except ValueError as exc:
            raise BadEntry(
                f"Detail is a string that is not JSON ({exc}); send a JSON object"
            ) from None
    if not isinstance(detail, dict):
        raise BadEntry(
            f"Detail must be a JSON object (or a string holding one), not "
            f"{type(detail).__name__}; e.g. {_EXAMPLE}"
        )
    return detail


# The API's statuses for the errors TriggerFunction raises (see lambda_workflows.entrypoints.api).
_STATUSES: tuple[tuple[type[WorkflowError] | tuple[type[WorkflowError], ...], int], ...] = (
    ((UnknownWorkflow, InstanceNotFound), 404),
    ((InstanceAlreadyExists, InvalidTransition, ConcurrentModification), 409),
    (InfrastructureError, 503),
    (ConfigurationError, 500),
)


class DevEvents:
    """The ``POST /_dev/events`` route of a local runtime.

    Args:
        aws: the embedded AWS whose runtime the real TriggerFunction handler runs on.
        out: where the line saying what became of each event goes.
        rules: the source and bus taken (default: template.yaml's trigger rules).
    """

    def __init__(self, aws: EmbeddedAws, out: Printer, rules: TriggerRules | None = None) -> None:
        from lambda_workflows.entrypoints.trigger import make_handler

        self._aws = aws
        self._out = out
        self.rules = trigger_rules() if rules is None else rules
        self._trigger = make_handler(aws.runtime)

    def routes(self) -> dict[str, dict[str, Callable[[bytes], Answer]]]:
        """The route, for :meth:`DevRoutes.add
        <lambda_workflows.local.dev_routes.DevRoutes.add>`."""
        return {EVENTS_PATH: {"POST": self.put}}

    def put(self, body: bytes) -> Answer:
        """Put one event: build its envelope, run it through TriggerFunction, say what it did."""
        now = self._aws.clock.time()
        try:
            event = envelope(body, self.rules, now, self._aws.resources.region)
        except BadEntry as exc:
            return _error(400, "invalid_input", str(exc))
        from .embedded import LambdaContext

        heading = f"[{iso(now)}] EventBridge event {event['id']} ({event['detail-type']})"
        try:
            done = self._trigger(event, LambdaContext("TriggerFunction", 60_000))
        except WorkflowError as exc:
            self._out(f"{heading} refused: {exc}")
            status = next((s for kinds, s in _STATUSES if isinstance(exc, kinds)), 400)
            return _error(status, exc.code, f"{exc} (on AWS this event would be dead-lettered)")
        answer = {"id": event["id"], "detail-type": event["detail-type"]}
        if "event_id" in done:  # a Workflow Event, sent to its instance
            self._out(f"{heading} delivered to {done['workflow']}/{done['instance_id']}")
            return _json(200, {**answer, "outcome": "delivered", **done})
        outcome = "created" if done["created"] else "exists"
        self._out(f"{heading} {outcome}: instance {done['workflow']}/{done['id']}")
        found = {"workflow": done["workflow"], "instance_id": done["id"]}
        return _json(201 if done["created"] else 200, {**answer, "outcome": outcome, **found})


def _json(status: int, body: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _error(status: int, code: str, message: str) -> Answer:
    return _json(status, {"error": {"code": code, "message": message}})
