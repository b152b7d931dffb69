"""Requests for the HTTP property test, drawn from a seeded ``random.Random``: the same stream
of requests for the same stream name.

Two sources, mixed:

- the served OpenAPI document: every operation of every path, with path, query and header
  parameters and bodies generated from their schemas — valid values, and values mutated to be
  wrong in one place (a wrong type, a missing or unknown field, a bound crossed, a bad pattern);
- the malformed families a fuzzer sends: JSON arrays to object routes, duplicate keys, wrong,
  uppercase and missing content types, invalid UTF-8, truncated JSON, huge bodies, chunked
  bodies, unusable ``Content-Length``, ids with quotes, backslashes, control characters, a
  trailing newline or percent-encodings, forged cursors, unknown methods, broken request lines.

Each request carries what its answer must be when that is known (``expect``), which instance a
success must name (``names``), and the statuses its operation documents (``documented``).
"""

from __future__ import annotations

import base64
import json
import random
import string
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from .wire import request_bytes

ID_CHARS = string.ascii_letters + string.digits + "-_"
EVENT_TYPES = ("approved", "ping", "go", "done_1")
# step names of the examples (some recorded by the shared instances), and awkward ones
STEP_NAMES = ("say hello", "fetch cat", "cool down", "Sleep step", "💤💤💤💤", "a/b", "nope")
# path segments that no workflow name, instance id or event type may be, sent as they are
# (percent-encoded, or raw: the dev server passes the path on as API Gateway's REST API does)
BAD_SEGMENTS = (
    '"q"',
    "a\\b",
    "%22abc",
    "a%5Cb",
    "abc%0A",
    "abc%0D%0A",
    "%00",
    "a%7F",
    "a%1Fb",
    "%E2%80%8F",
    "caf%C3%A9",
    "a%20b",
    "%2F",
    "%25",
    "%",
    "%zz",
    "..",
    ".",
    "-lead",
    "a;b",
    "a,b",
    "~a",
    "a*b",
    "a'b",
    "{a}",
    "<a>",
    "a|b",
    "^a",
    "[a]",
    "a\x01b",
    "a\x7fb",
    "a`b",
    "x" * 101,
)
UNKNOWN_METHODS = ("FOO", "PROPFIND", "TRACE", "CONNECT", "PURGE", "M-SEARCH", "LINK")
BAD_CONTENT_TYPES = (
    "text/plain",
    "application/x-www-form-urlencoded",
    "multipart/form-data; boundary=x",
    "application/jsonx",
    "application/json-patch+json",
    "application/xml",
    "image/png",
)
JSON_CONTENT_TYPES = (
    "application/json",
    "APPLICATION/JSON",
    "Application/Json; charset=utf-8",
    "application/json;charset=UTF-8",
    None,  # no Content-Type: the API reads the body as JSON
)
BAD_LENGTHS = ("abc", "-1", "+5", "1, 2", "0x10", "1e3", " ", "99999999999999999999999999999999x")
BAD_REQUEST_LINES = (
    b"garbage\r\n\r\n",
    b"GET /workflows\r\n\r\n",
    b"GET /workflows HTTP/2.0\r\nHost: x\r\n\r\n",
    b"GET /workflows HTTP/1.1.1\r\nHost: x\r\n\r\n",
    b"GET /workflows HTTX/1.1\r\nHost: x\r\n\r\n",
    b"GET /a\x1fb HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GE(T /workflows HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET  /workflows  extra HTTP/1.1\r\nHost: x\r\n\r\n",
    b"\r\n\r\nGET /workflows HTTP/1.1 x\r\n\r\n",
)


@dataclass(frozen=True)
class Probe:
    """One request, and what is known of its answer."""

    family: str
    method: str
    target: str
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    chunks: tuple[bytes, ...] | None = None
    raw: bytes | None = None  # the request's bytes, as they are (everything else ignored)
    expect: frozenset[int] | None = None  # the statuses it may get (None: any non-5xx)
    names: tuple[str, str] | None = None  # (workflow, id) a 2xx answer must be about
    documented: frozenset[int] | None = None  # its operation's documented statuses
    says: str | None = None  # a 4xx message must contain this
    operation: str | None = None  # "METHOD /path/{template}" of a request drawn from OpenAPI

    def wire(self) -> bytes:
        """The request as sent."""
        if self.raw is not None:
            return self.raw
        return request_bytes(self.method, self.target, self.headers, self.body, chunks=self.chunks)

    def shown(self) -> str:
        """The request, short, for a failure message."""
        body = (self.body or b"".join(self.chunks or ()) or self.raw or b"")[:160]
        return f"[{self.family}] {self.method} {self.target!r} {list(self.headers)} {body!r}"


@dataclass
class World:
    """What the generator knows of the server: names, ids, and a cursor it issued."""

    openapi: Mapping[str, Any]
    workflows: Sequence[str]
    shared_ids: Mapping[str, Sequence[str]]  # per workflow: ids that exist, or may
    cursors: Mapping[str, str] = field(default_factory=dict)  # workflow -> an issued cursor


class Generator:
    """A deterministic stream of probes for one client.

    Args:
        world: what the server serves.
        stream: names the random stream (same name, same requests).
        prefix: the client's own id prefix: ids it creates and nobody else touches.
    """

    def __init__(self, world: World, stream: str, prefix: str) -> None:
        self.world = world
        self.rng = random.Random(stream)
        self.prefix = prefix
        self.fresh = 0
        self.created: list[tuple[str, str]] = []  # own instances, once their 201 came
        self.path_workflow = ""  # the workflow in the path of the request being drawn
        self.operations = list(operations(world.openapi))
        # events and batches are DynamoDB transactions, which moto runs on a deep copy of every
        # table: fewer of them keeps the run short (every operation is still drawn)
        self.operation_weights = [
            0.4 if m == "POST" and t.endswith(("/batch", "}")) else 1.0
            for t, m, _ in self.operations
        ]
        families: list[tuple[int, Callable[[], Probe]]] = [
            (30, self.from_openapi),
            (12, self.own_instance),
            (4, self.array_to_object),
            (4, self.duplicate_keys),
            (5, self.content_type),
            (3, self.invalid_utf8),
            (4, self.truncated_json),
            (1, self.huge_body),
            (5, self.chunked),
            (3, self.bad_length),
            (8, self.bad_segment),
            (5, self.forged_cursor),
            (3, self.unknown_method),
            (2, self.bad_request_line),
        ]
        self.families = [f for _, f in families]
        self.weights = [w for w, _ in families]

    def __iter__(self) -> Iterator[Probe]:
        while True:
            yield self.rng.choices(self.families, self.weights)[0]()

    def saw(self, probe: Probe, status: int) -> None:
        """Learn from an answer: an own instance exists once its create got a 201, and not
        once a delete may have removed it (a batch delete's ids are forgotten whatever its
        answer says of each)."""
        creates = probe.method == "POST" and probe.target.endswith("/instances")
        if creates and status == 201 and probe.names is not None:
            self.created.append(probe.names)
        if 200 <= status < 300 and (gone := deleted_by(probe)):
            self.created = [own for own in self.created if own not in gone]

    # --- names ----------------------------------------------------------------------------

    def workflow(self) -> str:
        return self.rng.choice(self.world.workflows)

    def new_id(self) -> str:
        self.fresh += 1
        return f"{self.prefix}-{self.fresh}"

    def some_id(self, workflow: str) -> str:
        """An id of this workflow: shared, own, or one that was never created."""
        pick = self.rng.random()
        own = [i for w, i in self.created if w == workflow]
        if own and pick < 0.4:
            return self.rng.choice(own)
        if pick < 0.8:
            return self.rng.choice(self.world.shared_ids[workflow])
        return f"{self.prefix}-never-{self.rng.randrange(1000)}"

    def valid_id_text(self) -> str:
        length = self.rng.choice((1, 2, 5, 12, 40, 100))
        first = self.rng.choice(string.ascii_letters + string.digits + "_")
        return first + "".join(self.rng.choice(ID_CHARS) for _ in range(length - 1))

    # --- the OpenAPI document ---------------------------------------------------------------

    def from_openapi(self) -> Probe:
        """A request for one documented operation, valid or wrong in one place."""
        template, method, operation = self.rng.choices(self.operations, self.operation_weights)[0]
        if self.rng.random() < 0.08:  # a method the path does not take
            taken = {m for t, m, _ in self.operations if t == template}
            other = [m for m in ("GET", "POST", "PATCH", "PUT", "DELETE") if m not in taken]
            return self._documented_call(template, operation, self.rng.choice(other), wrong=True)
        return self._documented_call(template, operation, method)

    def _documented_call(
        self, template: str, operation: Mapping[str, Any], method: str, *, wrong: bool = False
    ) -> Probe:
        workflow = self.workflow() if self.rng.random() < 0.9 else self.rng.choice(BAD_SEGMENTS)
        self.path_workflow = workflow
        path_values: dict[str, str] = {}
        query: list[tuple[str, str]] = []
        headers: list[tuple[str, str]] = []
        for parameter in operation.get("parameters", []):
            name, where = parameter["name"], parameter["in"]
            schema = self._resolve(parameter.get("schema", {}))
            if where == "path":
                path_values[name] = self._path_value(name, workflow)
            elif where == "query" and (parameter.get("required") or self.rng.random() < 0.5):
                query.append((name, self._query_value(name, schema)))
            elif where == "header" and self.rng.random() < 0.3:
                headers.append((parameter["name"], self._header_value(schema)))
        if self.rng.random() < 0.05:
            query.append((self.rng.choice(("x", "status", "limit")), self._text()))
        path = template
        for name, value in path_values.items():
            path = path.replace("{" + name + "}", value)
        target = path + (
            "?" + "&".join(f"{quote(k)}={quote(v)}" for k, v in query) if query else ""
        )
        body: bytes | None = None
        request_body = operation.get("requestBody")
        if request_body and method in ("POST", "PATCH", "PUT"):
            schema = self._resolve(request_body["content"]["application/json"]["schema"])
            if request_body.get("required") or self.rng.random() < 0.8:
                valid = self.rng.random() < 0.5
                value = self._value(schema, 0) if valid else self._wrong(schema)
                body = json.dumps(value).encode()
        if body is not None:
            headers.append(("Content-Type", "application/json"))
        documented = None if wrong else frozenset(int(c) for c in operation["responses"])
        return Probe(
            "openapi-wrong-method" if wrong else "openapi",
            method,
            target,
            tuple(headers),
            body,
            expect=frozenset({404, 405}) if wrong else None,
            documented=documented,
            operation=f"{method} {template}",
        )

    def _path_value(self, name: str, workflow: str) -> str:
        if name == "name":
            return workflow
        if self.rng.random() < 0.15:
            return self.rng.choice(BAD_SEGMENTS)
        if name == "instance_id":
            ok = workflow in self.world.shared_ids
            return self.some_id(workflow) if ok else self.valid_id_text()
        if name == "event_type":
            return self.rng.choice(EVENT_TYPES) if self.rng.random() < 0.8 else self.valid_id_text()
        if name == "step_name":
            return quote(self.rng.choice(STEP_NAMES) if self.rng.random() < 0.7 else self._text())
        return self.valid_id_text()

    def _query_value(self, name: str, schema: Mapping[str, Any]) -> str:
        if name == "cursor":
            issued = list(self.world.cursors.values())
            return self.rng.choice(issued) if issued and self.rng.random() < 0.5 else self._text()
        if self.rng.random() < 0.7:
            return _as_query(self._value(schema, 0))
        return self.rng.choice(("", "x", "-1", "0", "1001", "1e3", "null", "[]", "é", "1.5"))

    def _header_value(self, schema: Mapping[str, Any]) -> str:
        if self.rng.random() < 0.6:
            return self.valid_id_text()
        return self.rng.choice(("", "a b", "-x", "x" * 101, "é", "a\tb"))

    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        while "$ref" in schema:
            name = str(schema["$ref"]).rsplit("/", 1)[-1]
            schema = self.world.openapi["components"]["schemas"][name]
        return schema

    def _value(self, schema: Mapping[str, Any], depth: int) -> Any:
        """A value the schema accepts (its pattern and bounds kept)."""
        schema = self._resolve(schema)
        if "anyOf" in schema:
            return self._value(self.rng.choice(schema["anyOf"]), depth)
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        kind = schema.get("type")
        if kind == "object":
            properties = schema.get("properties", {})
            required = set(schema.get("required", []))
            chosen = [p for p in properties if p in required or self.rng.random() < 0.5]
            if {"id", "instance_id"} <= set(chosen):  # the model takes one or the other
                chosen.remove(self.rng.choice(("id", "instance_id")))
            elif "instance_id" in properties and not {"id", "instance_id"} & set(chosen):
                # few generated ids: each one is one more instance in the table
                chosen += ["instance_id"] if self.rng.random() < 0.95 else []
            return {p: self._property(p, properties[p], depth) for p in chosen}
        if kind == "array":
            top = min(int(schema.get("maxItems", 3)), 3)
            return [self._value(schema.get("items", {}), depth + 1) for _ in range(top)][
                : self.rng.randrange(top + 1)
            ]
        if kind == "string":
            return self.valid_id_text() if "pattern" in schema else self._text()
        if kind == "integer":
            low, high = int(schema.get("minimum", 0)), int(schema.get("maximum", 1000))
            return self.rng.randint(low, high)
        if kind == "null":
            return None
        return self.json_value(depth)  # no type: any JSON

    def _property(self, name: str, schema: Mapping[str, Any], depth: int) -> Any:
        if name in ("id", "instance_id"):  # mostly ids that exist (409) or few new ones
            if self.rng.random() < 0.5 and self.path_workflow in self.world.shared_ids:
                return self.some_id(self.path_workflow)
            return f"{self.prefix}-pool-{self.rng.randrange(2)}"
        if name == "ids" and self.path_workflow in self.world.shared_ids:  # a batch delete
            count = self.rng.randrange(3)
            ids: list[Any] = [self.some_id(self.path_workflow) for _ in range(count)]
            return [*ids, self._text()] if self.rng.random() < 0.3 else ids
        return self._value(schema, depth + 1)

    def _wrong(self, schema: Mapping[str, Any]) -> Any:
        """A value the schema refuses, wrong in one place."""
        schema = self._resolve(schema)
        if "anyOf" in schema:
            objects = [self._resolve(s) for s in schema["anyOf"] if s.get("type") != "null"]
            return self._wrong(objects[0]) if objects else 1
        kind = schema.get("type")
        value = self._value(schema, 0)
        pick = self.rng.random()
        if kind == "object":
            properties = schema.get("properties", {})
            if pick < 0.25:
                return {**value, self.rng.choice(("param", "ID", "", "status2")): 1}
            if pick < 0.45 and schema.get("required"):
                return {k: v for k, v in value.items() if k not in schema["required"]}
            name = self.rng.choice(list(properties))
            return {**value, name: self._wrong_leaf(self._resolve(properties[name]))}
        if kind == "array":
            if pick < 0.3:
                return [value, 1] if value else [1]
            if pick < 0.5:
                return [{"instance_id": self.new_id()} for _ in range(101)]  # over maxItems
            return {"items": value}
        return self.rng.choice((None, [], {}, "x", 1.5, True))

    def _wrong_leaf(self, schema: Mapping[str, Any]) -> Any:
        if "enum" in schema:
            return self.rng.choice(("PAUSE", "stop", "", 1, None, ["pause"]))
        options: tuple[Any, ...] = ("a b", "-x", "", "x" * 101, "é", "a\nb", 1, 1.5, [], {}, True)
        if "anyOf" in schema:
            return self.rng.choice(options)
        return self.rng.choice(options)

    def json_value(self, depth: int = 0) -> Any:
        """Random JSON (small)."""
        pick = self.rng.random()
        if depth < 3 and pick < 0.2:
            return [self.json_value(depth + 1) for _ in range(self.rng.randrange(4))]
        if depth < 3 and pick < 0.4:
            return {self._text(): self.json_value(depth + 1) for _ in range(self.rng.randrange(4))}
        leaves: tuple[Any, ...] = (
            None,
            True,
            False,
            0,
            -1,
            2**53 + 1,
            1e308,
            -0.0,
            1.5,
            "",
            "é\u2028\U0001f600",
            "\x00",
            self._text(),
        )
        return self.rng.choice(leaves)

    def _text(self) -> str:
        alphabet = string.printable + "é\u2028\U0001f600\x00"
        return "".join(self.rng.choice(alphabet) for _ in range(self.rng.randrange(12)))

    # --- own instances: answers that can only be this request's ----------------------------

    def own_instance(self) -> Probe:
        """Create an own instance, or read, control or signal one: the answer must name it."""
        pick = self.rng.random()
        if pick < 0.1 or len(self.created) < 3:
            workflow, instance_id = self.workflow(), self.new_id()
            key = self.rng.choice(("instance_id", "id"))
            body = json.dumps({key: instance_id, "params": self.json_value()}).encode()
            return Probe(
                "own-create",
                "POST",
                f"/workflows/{workflow}/instances",
                (("Content-Type", "application/json"),),
                body,
                expect=frozenset({201}),
                names=(workflow, instance_id),
            )
        workflow, instance_id = self.rng.choice(self.created)
        base = f"/workflows/{workflow}/instances/{instance_id}"
        json_type = (("Content-Type", "application/json"),)
        if pick < 0.6:  # its id is taken
            body = json.dumps({"instance_id": instance_id}).encode()
            return Probe(
                "own-taken",
                "POST",
                f"/workflows/{workflow}/instances",
                json_type,
                body,
                expect=frozenset({409}),
                says=instance_id,
            )
        if pick < 0.78:
            return Probe(
                "own-get", "GET", base, expect=frozenset({200}), names=(workflow, instance_id)
            )
        if pick < 0.9:
            action = self.rng.choice(("pause", "resume", "terminate", "restart"))
            body = json.dumps({"status": action}).encode()
            return Probe(
                "own-status",
                "PATCH",
                base + "/status",
                json_type,
                body,
                expect=frozenset({200, 409}),
                names=(workflow, instance_id),
            )
        if pick < 0.95:
            body = json.dumps(self.json_value()).encode()
            return Probe(
                "own-event",
                "POST",
                f"{base}/events/{self.rng.choice(EVENT_TYPES)}",
                json_type,
                body,
                expect=frozenset({202, 409}),
                names=(workflow, instance_id),
            )
        never = f"{self.prefix}-never-{self.rng.randrange(10_000)}"
        return Probe(
            "own-missing",
            "GET",
            f"/workflows/{workflow}/instances/{never}",
            expect=frozenset({404}),
            says=never,
        )

    # --- the malformed families -----------------------------------------------------------

    def _object_route(self) -> tuple[str, str, Any]:
        """A route that takes one JSON object, and a good object for it."""
        workflow = self.workflow()
        if self.rng.random() < 0.5:
            return "POST", f"/workflows/{workflow}/instances", {"instance_id": self.new_id()}
        instance_id = self.some_id(workflow)
        action = {"status": self.rng.choice(("pause", "terminate", "resume", "restart"))}
        return "PATCH", f"/workflows/{workflow}/instances/{instance_id}/status", action

    def array_to_object(self) -> Probe:
        method, target, good = self._object_route()
        items = [good] + [self._object_route()[2] for _ in range(self.rng.randrange(3))]
        body = json.dumps(items).encode()
        headers = (("Content-Type", "application/json"),)
        return Probe("array-to-object", method, target, headers, body, expect=frozenset({422}))

    def duplicate_keys(self) -> Probe:
        method, target, good = self._object_route()
        key, value = next(iter(good.items()))
        other = json.dumps(self.rng.choice((value, "x", "terminate", self.new_id())))
        text = json.dumps(good)[:-1] + f", {json.dumps(key)}: {other}}}"
        if self.rng.random() < 0.3:  # twice in a nested object, inside params or a payload
            workflow = self.workflow()
            target = f"/workflows/{workflow}/instances"
            method = "POST"
            text = '{"params": {"a": 1, "b": {"c": 1, "c": 2}}}'
        headers = (("Content-Type", "application/json"),)
        return Probe(
            "duplicate-keys", method, target, headers, text.encode(), expect=frozenset({400})
        )

    def content_type(self) -> Probe:
        """A good body with a content type that is wrong, or right in an unusual spelling."""
        if self.rng.random() < 0.5:
            method, target, good = self._object_route()
            bad = self.rng.choice(BAD_CONTENT_TYPES)
            headers = (("Content-Type", bad),)
            body = json.dumps(good).encode()
            return Probe(
                "wrong-content-type", method, target, headers, body, expect=frozenset({415})
            )
        spelled = self.rng.choice(JSON_CONTENT_TYPES)
        probe = self._about_own_instance("json-content-type")
        return replace(probe, headers=(("Content-Type", spelled),) if spelled else ())

    def _about_own_instance(self, family: str) -> Probe:
        """A request with a JSON body about an own instance (its answer must name it): a
        create, or a status change or an event for one created before."""
        json_type = (("Content-Type", "application/json"),)
        if len(self.created) < 3 or self.rng.random() < 0.1:
            workflow, instance_id = self.workflow(), self.new_id()
            body = json.dumps({"instance_id": instance_id, "params": self.json_value()})
            target, expect = f"/workflows/{workflow}/instances", {201}
        else:
            workflow, instance_id = self.rng.choice(self.created)
            base = f"/workflows/{workflow}/instances/{instance_id}"
            if self.rng.random() < 0.85:  # an event is a transaction: slow in moto
                action = self.rng.choice(("pause", "resume", "terminate", "restart"))
                body = json.dumps({"status": action})
                return Probe(
                    family,
                    "PATCH",
                    base + "/status",
                    json_type,
                    body.encode(),
                    expect=frozenset({200, 409}),
                    names=(workflow, instance_id),
                )
            body = json.dumps(self.json_value())
            target, expect = f"{base}/events/{self.rng.choice(EVENT_TYPES)}", {202, 409}
        return Probe(
            family,
            "POST",
            target,
            json_type,
            body.encode(),
            expect=frozenset(expect),
            names=(workflow, instance_id),
        )

    def invalid_utf8(self) -> Probe:
        method, target, good = self._object_route()
        text = json.dumps(good).encode()
        cut = self.rng.randrange(1, len(text) - 1)
        body = (
            text[:cut] + self.rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80")) + text[cut:]
        )
        headers = (("Content-Type", "application/json"),)
        return Probe("invalid-utf8", method, target, headers, body, expect=frozenset({400}))

    def truncated_json(self) -> Probe:
        method, target, good = self._object_route()
        text = json.dumps({**good, "params": self.json_value()} if "instance_id" in good else good)
        body = text[: self.rng.randrange(1, len(text))].encode()
        headers = (("Content-Type", "application/json"),)
        return Probe("truncated-json", method, target, headers, body, expect=frozenset({400}))

    def huge_body(self) -> Probe:
        """Over the API's 1 MiB (the API's 413), or over the server's 6 MiB (the server's)."""
        workflow = self.workflow()
        size = self.rng.choice((1024 * 1024 + 1, 1024 * 1024 + 1, 7 * 1024 * 1024))
        instance_id = self.new_id()
        body = json.dumps({"instance_id": instance_id, "params": "x" * size}).encode()
        headers = (("Content-Type", "application/json"),)
        target = f"/workflows/{workflow}/instances"
        return Probe("huge-body", "POST", target, headers, body, expect=frozenset({413}))

    def chunked(self) -> Probe:
        """A body in chunked coding: well-formed (the same answer as with a length), or not."""
        if self.rng.random() < 0.7:
            probe = self._about_own_instance("chunked")
            text = probe.body or b""
            cuts = sorted(self.rng.sample(range(1, len(text)), min(3, len(text) - 1)))
            pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
            return replace(probe, body=None, chunks=tuple(pieces))
        method, target, good = self._object_route()
        text = json.dumps(good).encode()
        broken = self.rng.choice(
            (
                b"zz\r\n" + text + b"\r\n0\r\n\r\n",  # size not hexadecimal
                b"%x\r\n%sXX0\r\n\r\n" % (len(text), text),  # no CRLF after the data
                b"-1\r\n" + text + b"\r\n0\r\n\r\n",
            )
        )
        head = f"{method} {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        framing = self.rng.choice(("Transfer-Encoding: chunked\r\n", "Transfer-Encoding: gzip\r\n"))
        if self.rng.random() < 0.2:  # both framings: refused, whichever would have won
            framing += f"Content-Length: {len(text)}\r\n"
        raw = (head + framing + "\r\n").encode() + broken
        return Probe("chunked-malformed", method, target, raw=raw, expect=frozenset({400}))

    def bad_length(self) -> Probe:
        method, target, good = self._object_route()
        text = json.dumps(good).encode()
        headers = (
            ("Content-Type", "application/json"),
            ("Content-Length", self.rng.choice(BAD_LENGTHS)),
        )
        return Probe(
            "bad-content-length",
            method,
            target,
            headers,
            text,
            expect=frozenset({400}),
            says="Content-Length",
        )

    def bad_segment(self) -> Probe:
        """An instance id (or a workflow name, or an event type) no id may be."""
        workflow = self.workflow()
        segment = self.rng.choice(BAD_SEGMENTS)
        where = self.rng.random()
        if where < 0.75:
            base = f"/workflows/{workflow}/instances/{segment}"
            says = "letters, digits" if segment != "x" * 101 else None
        elif where < 0.9:
            base = f"/workflows/{segment}/instances/{self.some_id(workflow)}"
            says = None
        else:
            base = f"/workflows/{workflow}/instances/{self.some_id(workflow)}/events/{segment}"
            return Probe(
                "bad-event-type",
                "POST",
                base,
                (("Content-Type", "application/json"),),
                b"{}",
                expect=frozenset({400, 404}),
            )
        method, suffix, body = self.rng.choice(
            (
                ("GET", "", None),
                ("PATCH", "/status", b'{"status": "terminate"}'),
                ("POST", "/events/approved", b'{"user": "ana"}'),
            )
        )
        headers = (("Content-Type", "application/json"),) if body else ()
        return Probe(
            "bad-id", method, base + suffix, headers, body, expect=frozenset({400, 404}), says=says
        )

    def forged_cursor(self) -> Probe:
        """A cursor the API did not issue (or one it issued, altered)."""
        workflow = self.workflow()
        issued = self.world.cursors.get(workflow) or next(iter(self.world.cursors.values()), "")
        nested = "[" * 5000 + "]" * 5000
        forged = self.rng.choice(
            (
                _b64(nested.encode()),
                _b64(json.dumps({"pk": "x"}).encode()),
                _b64(json.dumps({}).encode()),
                _b64(json.dumps([1, 2]).encode()),
                _b64(bytes(self.rng.randrange(256) for _ in range(self.rng.randrange(1, 60)))),
                _b64(json.dumps({"gsi2pk": workflow, "gsi2sk": "0#x", "pk": "I#x#y"}).encode()),
                nested,
                "%%%",
                "=",
                self._text() or "x",
                _flip(issued, self.rng) if issued else "AAAA",
                issued[: len(issued) // 2] if issued else "A",
                issued + "A" if issued else "AA==",
            )
        )
        target = f"/workflows/{workflow}/instances?cursor={quote(forged, safe='')}"
        return Probe("forged-cursor", "GET", target, expect=frozenset({400}))

    def unknown_method(self) -> Probe:
        method = self.rng.choice(UNKNOWN_METHODS)
        workflow = self.workflow()
        target = self.rng.choice(
            ("/workflows", f"/workflows/{workflow}/instances", f"/workflows/{workflow}/instances/x")
        )
        return Probe("unknown-method", method, target, expect=frozenset({404, 405}))

    def bad_request_line(self) -> Probe:
        raw = self.rng.choice(BAD_REQUEST_LINES)
        return Probe("bad-request-line", "GET", "-", raw=raw, expect=frozenset({400}))


def deleted_by(probe: Probe) -> set[tuple[str, str]]:
    """The instances a request may delete: the one a DELETE names, the ids of a batch delete."""
    segments = probe.target.split("?", 1)[0].split("/")
    if len(segments) != 5 or segments[1:4:2] != ["workflows", "instances"]:
        return set()
    workflow, last = segments[2], segments[4]
    if probe.method == "DELETE":
        return {(workflow, last)}
    if probe.method != "POST" or last != "delete":
        return set()
    try:
        body = json.loads(probe.body or b"".join(probe.chunks or ()) or b"null")
    except ValueError:
        return set()
    ids = body.get("ids") if isinstance(body, dict) else None
    return {(workflow, i) for i in ids if isinstance(i, str)} if isinstance(ids, list) else set()


def operations(openapi: Mapping[str, Any]) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(path template, method, operation) of every operation the document describes."""
    for template, item in openapi["paths"].items():
        for method, operation in item.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield template, method.upper(), operation


def _as_query(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode()


def _flip(text: str, rng: random.Random) -> str:
    at = rng.randrange(len(text))
    replacement = "A" if text[at] != "A" else "B"
    return text[:at] + replacement + text[at + 1 :]
