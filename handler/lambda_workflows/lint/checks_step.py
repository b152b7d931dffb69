"""Checks of what one step callback does: WF108 (two services) and WF109 (large result)."""

from __future__ import annotations

import ast

from .apis import BODY_ATTRIBUTES, BODY_READERS, STORE_WRITES
from .findings import Issue
from .run_model import Region, RunAnalysis
from .services import Services


def check_steps(analysis: RunAnalysis, services: Services) -> list[Issue]:
    """All WF108 and WF109 issues of one workflow function's step callbacks."""
    issues: list[Issue] = []
    calls: dict[int, list[ast.Call]] = {}
    for call, region in analysis.calls:
        if region.callback is not None and not region.opaque:
            calls.setdefault(id(region.callback), []).append(call)
    for callback in analysis.callbacks():
        if callback.opaque:
            continue
        own_calls = calls.get(id(callback), [])
        if len(own_calls) >= 2:
            _two_services(services, own_calls, issues)
        _large_result(analysis, services, callback, issues)
    return issues


def _position(node: ast.AST) -> tuple[int, int]:
    return (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))


def _two_services(services: Services, calls: list[ast.Call], issues: list[Issue]) -> None:
    """WF108: calls to two unrelated services in one callback."""
    first_call: dict[str, ast.Call] = {}
    methods: dict[str, set[str]] = {}
    for call in sorted(calls, key=_position):
        found = services.service(call)
        if found is None:
            continue
        service, method = found
        first_call.setdefault(service, call)
        methods.setdefault(service, set()).add(method)
    # Writing the step's own output to a store is the cure for a large result ("Keep step
    # return values under 1 MiB": store it, return a reference), not a second service; and
    # HTTP calls to an unknown host may well go to a host already called.
    named = [s for s in first_call if not methods[s] <= STORE_WRITES]
    if any(s.startswith("http://") for s in named):
        named = [s for s in named if s != "http"]
    if len(named) < 2:
        return
    first, second = named[0], named[1]
    message = (
        f"this step calls two services ({first} and {second}): when the second call fails, "
        "the retry repeats the first one too, and the step may not be idempotent; give each "
        "service its own step.do (each then gets its own retries and timeout)"
    )
    issues.append(Issue(first_call[second], "WF108", message))


def _returned(analysis: RunAnalysis, callback: Region) -> list[ast.expr]:
    function = callback.function
    if isinstance(function, ast.Lambda):
        return [function.body]
    return [
        node.value
        for node, region in analysis.returns
        if region is callback and node.value is not None
    ]


def _response_names(analysis: RunAnalysis, services: Services, callback: Region) -> set[str]:
    names: set[str] = set()
    for statement, region in analysis.stores:
        if region.callback is not callback or not isinstance(statement, ast.Assign):
            continue
        value = statement.value
        if isinstance(value, ast.Await):
            value = value.value
        if isinstance(value, ast.Call) and services.is_http_request(value):
            names.update(t.id for t in statement.targets if isinstance(t, ast.Name))
    for with_node, region in analysis.withs:
        if region.callback is not callback:
            continue
        for item in with_node.items:
            expr, target = item.context_expr, item.optional_vars
            if (
                isinstance(expr, ast.Call)
                and isinstance(target, ast.Name)
                and services.is_http_request(expr)
            ):
                names.add(target.id)
    return names


class _Sizer:
    """Says whether a returned expression is (part of) a whole HTTP response."""

    def __init__(self, services: Services, responses: set[str]) -> None:
        self.services = services
        self.responses = responses

    def is_response(self, node: ast.expr) -> bool:
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Name):
            return node.id in self.responses
        if isinstance(node, ast.Subscript):
            return self.is_response(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr == "get_object":
                return True
            return self.services.is_http_request(node)
        return False

    def describe(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Await):
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.responses:
            return "a whole HTTP response"
        if isinstance(node, ast.Attribute) and node.attr in BODY_ATTRIBUTES:
            if not self.is_response(node.value):
                return None
            return f"the whole response body (.{node.attr})"
        if not isinstance(node, ast.Call):
            return None
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr in BODY_READERS
            and self.is_response(func.value)
        ):
            return f"the whole response body (.{func.attr}())"
        qualname = self.services.aliases.qualify(func)
        if qualname in ("json.loads", "json.load") and node.args:
            inner = node.args[0]
            return self.describe(inner) or ("a whole response" if self.is_response(inner) else None)
        if self.services.is_http_request(node):
            return "a whole HTTP response"
        return None


def _large_result(
    analysis: RunAnalysis, services: Services, callback: Region, issues: list[Issue]
) -> None:
    """WF109: the callback returns a whole HTTP response or body."""
    returned = _returned(analysis, callback)
    if not returned:
        return
    sizer = _Sizer(services, _response_names(analysis, services, callback))
    for value in returned:
        what = sizer.describe(value)
        if what is None:
            continue
        message = (
            f"this step returns {what}, which becomes the step's recorded result and can "
            "exceed the 1 MiB limit; store large data elsewhere (e.g. an object store) inside "
            "the step and return a small reference, or return only the fields you need"
        )
        issues.append(Issue(value, "WF109", message))
