"""Local stand-ins for the Cloudflare bindings the examples use.

The examples read them as ``self.env.KV``, ``self.env.PAYMENTS``, ... exactly like
``this.env.KV`` in a Cloudflare Worker; :func:`example_env` builds the set of values to pass
as the runtime's ``env`` (e.g. ``WorkflowTestEnv(GOOD_WORKFLOWS, env=example_env())``).

Every fake is deterministic, keeps its state in memory, takes a lock around it (sync step
callbacks run in worker threads) and never touches the network.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = [
    "DatabaseConnection",
    "DatasetApi",
    "HttpCat",
    "HttpResponse",
    "InMemoryKV",
    "IssueTracker",
    "ObjectStore",
    "PaymentProcessor",
    "WorkflowClient",
    "WorkflowInstanceHandle",
    "create_db_connection",
    "example_env",
]

DEFAULT_KV: Mapping[str, Any] = {
    "cutest-http-cat": "418",
    "cutest-http-cat-1": "418",
    "cutest-http-cat-2": "203",
    "cat-list": ["200", "404", "418"],
    "200": "ok cat",
    "404": "lost cat",
    "418": "teapot cat",
    "feature-flags": {"enable_email_notifications": True},
    "alice": {"name": "Alice", "plan": "premium"},
    "bob": {"name": "Bob", "plan": "free"},
}


class InMemoryKV:
    """A key-value namespace (Workers KV stand-in): ``get``, ``put``, ``delete``.

    Counts reads per key, so a test can tell how often a step really ran.
    """

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._values: dict[str, Any] = dict(DEFAULT_KV if initial is None else initial)
        self.reads: Counter[str] = Counter()

    def get(self, key: str) -> Any:
        """The value stored under ``key``, or ``None``."""
        with self._lock:
            self.reads[key] += 1
            return self._values.get(key)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` under ``key``."""
        with self._lock:
            self._values[key] = value

    def delete(self, key: str) -> None:
        """Remove ``key`` (no error when absent)."""
        with self._lock:
            self._values.pop(key, None)


class PaymentProcessor:
    """A payment API whose ``charge`` is *not* idempotent: every call charges again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._charges: Counter[str] = Counter()

    def charge(self, customer_id: str | int, amount: float) -> dict[str, Any]:
        """Charge the customer; returns a receipt with the running charge number."""
        with self._lock:
            self._charges[str(customer_id)] += 1
            number = self._charges[str(customer_id)]
        return {"customer_id": str(customer_id), "amount": amount, "charge_number": number}

    def is_charged(self, customer_id: str | int) -> bool:
        """True when the customer was charged at least once."""
        return self.charge_count(customer_id) > 0

    def charge_count(self, customer_id: str | int) -> int:
        """How many times the customer was charged (a correct workflow keeps this at 1)."""
        with self._lock:
            return self._charges[str(customer_id)]


class HttpCat:
    """``https://http.cat/<code>`` stand-in: a tiny text "image" per status code."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.fetches: Counter[str] = Counter()

    def fetch(self, code: str | int | None) -> str:
        """The image for ``code``; raises LookupError for a missing code (like a 404)."""
        if code is None or not str(code).isdigit():
            raise LookupError(f"http.cat has no image for {code!r}")
        with self._lock:
            self.fetches[str(code)] += 1
        return f"<jpeg http.cat/{code} 24x24>"


class ObjectStore:
    """An object store (R2 / S3 stand-in): ``put``, ``get``, ``keys``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, str] = {}

    def put(self, key: str, body: str) -> None:
        """Store ``body`` under ``key``, replacing any previous object (idempotent)."""
        with self._lock:
            self._objects[key] = body

    def get(self, key: str) -> str | None:
        """The object's body, or ``None``."""
        with self._lock:
            return self._objects.get(key)

    def keys(self) -> list[str]:
        """All keys, sorted."""
        with self._lock:
            return sorted(self._objects)


@dataclass(frozen=True)
class HttpResponse:
    """What :class:`DatasetApi` answers: a status and a text body."""

    status: int
    text: str

    def json(self) -> Any:
        """The body decoded as JSON."""
        return json.loads(self.text)


class DatasetApi:
    """``https://api.example.com`` stand-in; ``/large-dataset`` is over 1 MiB (about 1.2 MiB)."""

    def __init__(self, records: int = 20_000) -> None:
        self.records = records

    def get(self, url: str) -> HttpResponse:
        """Answer a GET; unknown paths get a 404."""
        if not url.endswith("/large-dataset"):
            return HttpResponse(404, json.dumps({"error": "not found"}))
        rows = [
            {"id": i, "name": f"record-{i:05d}", "score": (i * 7919) % 1000, "tags": ["a", "b"]}
            for i in range(self.records)
        ]
        return HttpResponse(200, json.dumps(rows))


class IssueTracker:
    """A GitHub issues stand-in: ``list_issues(repo)``."""

    def list_issues(self, repo: str) -> list[dict[str, Any]]:
        """Two open issues for any repository."""
        return [
            {"number": 1, "repo": repo, "title": "cats are not cute enough"},
            {"number": 2, "repo": repo, "title": "more teapots"},
        ]


@dataclass(frozen=True)
class DatabaseConnection:
    """A database handle built without I/O (connections are opened lazily, per query)."""

    url: str
    token: str

    def query(self, sql: str) -> list[dict[str, Any]]:
        """Run a query (this fake knows none and returns no rows)."""
        return []


def create_db_connection(url: str, token: str) -> DatabaseConnection:
    """Build a connection object; no I/O happens here, so it may run outside a step."""
    return DatabaseConnection(url, token)


class WorkflowInstanceHandle(Protocol):
    """The part of an instance handle the examples use (``create()`` returns one)."""

    @property
    def id(self) -> str:
        """The instance id."""
        ...

    def status(self) -> Any:
        """The instance's status, output and error."""
        ...


class WorkflowClient(Protocol):
    """The part of a workflow client (``Workflow(name)``, ``env.workflow(name)``) used here."""

    def create(self, id: str | None = None, params: Any = None) -> WorkflowInstanceHandle:
        """Create one instance; a taken id is an error."""
        ...

    def create_batch(self, items: Sequence[Mapping[str, Any]]) -> Any:
        """Create up to 100 instances in one call."""
        ...


def example_env() -> dict[str, Any]:
    """Fresh fakes for one runtime, keyed by the names the examples read from ``self.env``."""
    return {
        "KV": InMemoryKV(),
        "PAYMENTS": PaymentProcessor(),
        "HTTP_CAT": HttpCat(),
        "BUCKET": ObjectStore(),
        "DATASET_API": DatasetApi(),
        "GITHUB": IssueTracker(),
        "DB_URL": "postgres://db.internal/app",
        "DB_TOKEN": "local-token",
    }
