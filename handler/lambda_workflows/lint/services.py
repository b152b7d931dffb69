"""Who a call talks to: AWS/HTTP clients, workflow clients, bindings — and what it returns.

Used by the checks for I/O outside a step (WF103), two services in one step (WF108) and large
step results (WF109). A *service* is identified by the object a method is called on:

- ``self.env.NAME`` (a binding, as in Cloudflare) and module-level ``UPPER_CASE`` objects;
- variables bound to ``boto3.client(...)``, ``httpx.Client()``, ``requests.Session()``, ...
  (in the module, in ``run()``, or as ``self.attr`` in any method of the class);
- workflow clients: ``self.env.workflow("name")``, ``Workflow("name")``, ``env.MY_WORKFLOW``;
- plain HTTP functions (``requests.get``, ``httpx.post``, ``urlopen``, ``fetch``) and any
  ``get/post/.../fetch`` call whose first argument is an ``http(s)://`` literal; HTTP calls
  to the same host (or to an unknown host) count as one service.
"""

from __future__ import annotations

import ast

from .apis import (
    CLIENT_FACTORIES,
    HTTP_FUNCTIONS,
    HTTP_VERBS,
    INSTANCE_CONTROL,
    PURE_CLIENT_METHODS,
    SIDE_EFFECT_FUNCTIONS,
    WORKFLOW_CREATE,
    ImportAliases,
    dotted_name,
    url_host,
)
from .run_model import RunAnalysis

_FETCHERS = HTTP_VERBS | {"fetch", "stream"}


def is_workflow_client(
    expr: ast.expr, workflow_names: set[str] | frozenset[str], self_name: str | None
) -> bool:
    """True when ``expr`` is (very likely) a client of a workflow: something with ``create``."""
    if isinstance(expr, ast.Call):
        func = expr.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        return name in ("Workflow", "workflow")
    dotted = dotted_name(expr)
    if dotted is None:
        return False
    parts = dotted.split(".")
    if dotted in workflow_names or "workflow" in parts[-1].lower():
        return True
    if self_name is not None and len(parts) >= 3 and parts[:2] == [self_name, "env"]:
        return True
    return len(parts) >= 2 and parts[-2] == "env"


def _first_arg(call: ast.Call) -> ast.expr | None:
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == "url"), None)


def _literal(call: ast.Call) -> str:
    arg = _first_arg(call)
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return "?"


def is_http_function(func: ast.expr, aliases: ImportAliases) -> bool:
    """``requests.get``, ``httpx.post``, ``urlopen``, a bare ``fetch``, ..."""
    qualname = aliases.qualify(func)
    if qualname is None:
        return False
    if qualname in HTTP_FUNCTIONS:
        return True
    return isinstance(func, ast.Name) and qualname.rpartition(".")[2] in ("fetch", "urlopen")


class Services:
    """Answers "what does this call talk to" for the calls of one workflow function."""

    def __init__(self, analysis: RunAnalysis) -> None:
        facts = analysis.facts
        self.analysis = analysis
        self.aliases = analysis.aliases
        self.self_name = analysis.function.self_name
        self.class_name = analysis.function.class_name
        self.self_clients = facts.self_clients
        self.bindings = facts.bindings
        self.url_constants = facts.url_constants
        self.clients: dict[str, str] = dict(facts.clients)
        self.workflow_vars: set[str] = set(facts.workflow_clients)
        self.instance_vars: set[str] = set()
        for statement, _region in analysis.stores:
            if isinstance(statement, ast.Assign):
                for target in statement.targets:
                    self._bind(target, statement.value)
        for with_node, _region in analysis.withs:
            for item in with_node.items:
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, item.context_expr)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(value, ast.Await):
            value = value.value
        if not isinstance(target, ast.Name):
            return
        kind = self.client_kind(value) if isinstance(value, ast.Call) else None
        if kind is not None:
            self.clients[target.id] = kind
        elif isinstance(value, ast.Call) and self._is_factory_of_client(value):
            self.clients[target.id] = "HTTP"
        elif self.is_workflow_client(value):
            self.workflow_vars.add(target.id)
        elif self._is_instance(value):
            self.instance_vars.add(target.id)

    def _is_factory_of_client(self, call: ast.Call) -> bool:
        """``session.get(url)`` used as a context manager on an HTTP session."""
        func = call.func
        return (
            isinstance(func, ast.Attribute)
            and func.attr in _FETCHERS
            and self.client_kind(func.value) == "HTTP"
        )

    def client_kind(self, expr: ast.expr) -> str | None:
        """``"AWS"``, ``"AWS session"``, ``"HTTP"`` for a client object expression, else None."""
        if isinstance(expr, ast.Name):
            return self.clients.get(expr.id)
        if isinstance(expr, ast.Call):
            qualname = self.aliases.qualify(expr.func) or ""
            kind = CLIENT_FACTORIES.get(qualname)
            func = expr.func
            if (
                kind is None
                and isinstance(func, ast.Attribute)
                and func.attr in ("client", "resource")
                and self.client_kind(func.value) == "AWS session"
            ):
                return "AWS"
            return kind
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == self.self_name
        ):
            kind = self.self_clients.get((self.class_name, expr.attr))
            return None if kind == "workflow" else kind
        return None

    def is_workflow_client(self, expr: ast.expr) -> bool:
        """See :func:`is_workflow_client`; also knows this function's workflow variables."""
        if (
            isinstance(expr, ast.Attribute)
            and isinstance(expr.value, ast.Name)
            and expr.value.id == self.self_name
            and self.self_clients.get((self.class_name, expr.attr)) == "workflow"
        ):
            return True
        return is_workflow_client(expr, self.workflow_vars, self.self_name)

    def _is_instance(self, expr: ast.expr) -> bool:
        if isinstance(expr, ast.Name):
            return expr.id in self.instance_vars
        if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute):
            method = expr.func
            return method.attr in ("get", "create") and self.is_workflow_client(method.value)
        return False

    def side_effect(self, call: ast.Call) -> str | None:
        """A description of the I/O this call does, or ``None`` for a call that does none."""
        func = call.func
        qualname = self.aliases.qualify(func)
        if qualname in SIDE_EFFECT_FUNCTIONS or is_http_function(func, self.aliases):
            return f"{qualname}() does I/O"
        if not isinstance(func, ast.Attribute):
            return None
        method, receiver = func.attr, func.value
        kind = self.client_kind(receiver)
        if kind == "AWS session":
            return "creating an AWS client" if method in ("client", "resource") else None
        if kind is not None and method not in PURE_CLIENT_METHODS:
            return f".{method}() on an {kind} client does I/O"
        if method in WORKFLOW_CREATE and self.is_workflow_client(receiver):
            return f".{method}() creates workflow instances"
        if method in INSTANCE_CONTROL and self._is_instance(receiver):
            return f".{method}() changes another workflow instance"
        if method in _FETCHERS and self.url_of(call) is not None:
            return f".{method}() sends an HTTP request"
        return None

    def url_of(self, call: ast.Call) -> str | None:
        """The host of the call's URL argument (``""`` if unknown), ``None`` if it has none.

        A module-level constant holding a URL (``API = "https://..."``) counts as one.
        """
        arg = _first_arg(call)
        if isinstance(arg, ast.Name):
            return self.url_constants.get(arg.id)
        return url_host(arg)

    def is_http_request(self, call: ast.Call) -> bool:
        """True when the call returns an HTTP response."""
        func = call.func
        if is_http_function(func, self.aliases):
            return True
        if not isinstance(func, ast.Attribute) or func.attr not in _FETCHERS:
            return False
        return self.client_kind(func.value) == "HTTP" or self.url_of(call) is not None

    def service(self, call: ast.Call) -> tuple[str, str] | None:
        """``(service, method)`` that this call talks to, or ``None`` for local work.

        HTTP services are named ``"http"`` (unknown host) or ``"http://host"``.
        """
        func = call.func
        method = func.attr if isinstance(func, ast.Attribute) else ""
        if self.analysis.is_step_call(call):
            return None
        if self.is_http_request(call) and not self._is_binding(func):
            host = self.url_of(call)
            return (f"http://{host}" if host else "http", method)
        if not isinstance(func, ast.Attribute):
            return None
        receiver = func.value
        if isinstance(receiver, ast.Call):
            qualname = self.aliases.qualify(receiver.func) or ""
            if qualname in CLIENT_FACTORIES:
                return (f"{qualname}({_literal(receiver)})", method)
            if isinstance(receiver.func, ast.Attribute) and receiver.func.attr == "workflow":
                return (f"workflow {_literal(receiver)}", method)
            return None
        dotted = dotted_name(receiver)
        if dotted is None:
            return None
        if self.client_kind(receiver) is not None or dotted in self.workflow_vars:
            return (dotted, method)
        return (self._binding_of(dotted), method) if self._is_binding(func) else None

    def _is_binding(self, func: ast.expr) -> bool:
        if not isinstance(func, ast.Attribute):
            return False
        dotted = dotted_name(func.value)
        return dotted is not None and bool(self._binding_of(dotted))

    def _binding_of(self, dotted: str) -> str:
        parts = dotted.split(".")
        if self.self_name and len(parts) >= 3 and parts[:2] == [self.self_name, "env"]:
            return ".".join(parts[:3])
        return parts[0] if parts[0] in self.bindings else ""
