"""The IAM actions a function's code can reach, read from the handler source.

Each adapter module of ``lambda_workflows.aws`` talks to one AWS service through ``self.client``;
the engine reaches the adapters through the attributes the runtime wires them to (``service``,
``store``, ``queue``, ``scheduler`` / ``wakeups``). Starting from an entrypoint module, this
follows those attributes, ``self.<method>`` calls and calls to functions of the same module,
and collects the AWS operations called on a client along the way, as the IAM actions that
authorize them. moto does not enforce IAM; AWS does, so a missing grant only shows in a
deployed stack, and an unused one never shows at all.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "handler" / "lambda_workflows"

# The IAM prefix of each adapter module (one module per service).
ADAPTER_SERVICES = {
    "aws/dynamodb.py": "dynamodb",
    "aws/sqs.py": "sqs",
    "aws/runner_invoke.py": "lambda",
    "aws/scheduler.py": "scheduler",
    "aws/recurring.py": "scheduler",
    "aws/slots.py": "dynamodb",
    "aws/reaper.py": "dynamodb",
    "aws/firings.py": "dynamodb",
    "aws/deletes.py": "dynamodb",
    "aws/instance_listing.py": "dynamodb",
    "aws/creation_writes.py": "dynamodb",
    "aws/instance_reads.py": "dynamodb",
    "aws/journal_store.py": "dynamodb",
    "aws/event_store.py": "dynamodb",
    "aws/leases.py": "dynamodb",
}
# Adapters outside the engine: the client and the runner never reach them, only the entrypoint
# that wires them (LifecycleEventsFunction's publisher).
PUBLISHER_SERVICES = {
    "aws/eventbridge.py": "events",
}
# The classes the runtime wires together, by the attribute (or accessor) code reaches them by.
COMPONENTS = {
    "service": ("engine/instances/service.py", "InstanceService"),
    "creation": ("engine/instances/creation.py", "InstanceCreation"),  # InstanceService.creation
    "commands": ("engine/instances/commands.py", "InstanceCommands"),  # InstanceService.commands
    "queries": ("engine/instances/queries.py", "InstanceQueries"),  # InstanceService.queries
    "store": ("aws/dynamodb.py", "DynamoStore"),
    "queue": ("aws/sqs.py", "SqsWorkQueue"),
    "direct": ("aws/runner_invoke.py", "RunnerInvokes"),  # SqsWorkQueue.direct
    "scheduler": ("aws/scheduler.py", "SchedulerWakeUps"),  # InstanceService.scheduler
    "wakeups": ("aws/scheduler.py", "SchedulerWakeUps"),  # AwsRuntime.wakeups
    "recurring": ("aws/recurring.py", "RecurringSchedules"),  # the sweep's reconciliation
    "slots": ("engine/instances/slots.py", "SlotGate"),  # InstanceService.slots, Runner.slots
    "slot_items": ("aws/slots.py", "DynamoSlots"),  # SlotGate.slot_items
    "slot_store": ("aws/slots.py", "DynamoSlots"),  # AwsRuntime.slot_store
    "listing_indexes": ("aws/instance_listing.py", "ListingIndexes"),  # DynamoStore's
    "reaper": ("aws/reaper.py", "ExpiredInstanceReaper"),  # the sweep's stream records
    "firings": (
        "engine/instances/firing_recovery.py",
        "FiringRecovery",
    ),  # the sweep's lost firings
    "ledger": ("aws/firings.py", "DynamoFiringLedger"),  # FiringRecovery.ledger
    "schedule_store": ("aws/firings.py", "DynamoFiringLedger"),  # AwsRuntime.schedule_store
    "deletes": ("aws/deletes.py", "InstanceDeletes"),  # DynamoStore.deletes
    # DynamoStore's collaborators, one per responsibility (see aws/dynamodb.py)
    "creation_writes": ("aws/creation_writes.py", "CreationWrites"),
    "reads": ("aws/instance_reads.py", "InstanceReads"),
    "journal_store": ("aws/journal_store.py", "JournalStore"),
    "event_store": ("aws/event_store.py", "EventStore"),
    "leases": ("aws/leases.py", "InstanceLeases"),
    "publisher": ("aws/eventbridge.py", "EventBridgePublisher"),  # lifecycle events
}
# Operations authorized by other actions (Service Authorization Reference).
AUTHORIZED_BY = {
    "sqs:SendMessageBatch": {"sqs:SendMessage"},
    "sqs:DeleteMessageBatch": {"sqs:DeleteMessage"},
    "lambda:Invoke": {"lambda:InvokeFunction"},
    "dynamodb:TransactGetItems": {"dynamodb:GetItem"},
    "scheduler:CreateSchedule": {"scheduler:CreateSchedule", "iam:PassRole"},
    "scheduler:UpdateSchedule": {"scheduler:UpdateSchedule", "iam:PassRole"},
}
# TransactWriteItems has no action of its own: it is authorized by the actions it contains.
TRANSACT_ITEM_ACTIONS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
_NOT_OPERATIONS = {"get_waiter", "can_paginate", "close"}


def is_client(node: ast.expr) -> bool:
    """``client``, ``self.client``, ``self._client``: what an adapter calls AWS through."""
    if isinstance(node, ast.Attribute):
        return node.attr.lstrip("_").endswith("client")
    return isinstance(node, ast.Name) and node.id.lstrip("_").endswith("client")


def operation_of(call: ast.Call) -> str | None:
    """``ListSchedules`` for ``client.list_schedules(...)`` or ``client.get_paginator(
    "list_schedules")``; None when the call is not an AWS operation on a client."""
    func = call.func
    if not isinstance(func, ast.Attribute) or not is_client(func.value):
        return None
    name = func.attr
    if name == "get_paginator" and call.args:
        argument = call.args[0]
        if not isinstance(argument, ast.Constant):
            raise AssertionError(f"a paginator named at run time: {ast.unparse(call)}")
        name = str(argument.value)
    if name in _NOT_OPERATIONS:
        return None
    return "".join(part.title() for part in name.split("_"))


def transact_kinds(tree: ast.AST) -> set[str]:
    """The kinds of transaction items (``Put``, ``Update``...) dict literals in ``tree`` build."""
    return {
        key.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Dict)
        for key in node.keys
        if isinstance(key, ast.Constant) and key.value in TRANSACT_ITEM_ACTIONS
    }


def iam_actions(service: str, operations: Iterable[str], kinds: set[str]) -> set[str]:
    """The IAM actions that authorize ``operations`` of ``service``; ``kinds`` are the items
    its transactions contain."""
    needed: set[str] = set()
    for operation in operations:
        action = f"{service}:{operation}"
        if action == "dynamodb:TransactWriteItems":
            needed |= {TRANSACT_ITEM_ACTIONS[kind] for kind in kinds}
        else:
            needed |= AUTHORIZED_BY.get(action, {action})
    return needed


def module_actions(path: Path, service: str) -> set[str]:
    """Every IAM action the operations called anywhere in one adapter module need."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    operations = {
        op for node in ast.walk(tree) if isinstance(node, ast.Call) if (op := operation_of(node))
    }
    return iam_actions(service, operations, transact_kinds(tree))


def all_adapter_actions() -> set[str]:
    """Every IAM action any adapter calls: what code that may use the whole engine needs."""
    return set().union(
        *(module_actions(PACKAGE / module, service) for module, service in ADAPTER_SERVICES.items())
    )


# --- following the code path -----------------------------------------------------------------


@dataclass(frozen=True)
class Code:
    """One function (``Class.method`` or ``function``) of a module, or a whole module ("")."""

    module: str
    name: str


@functools.cache
def _tree(module: str) -> ast.Module:
    return ast.parse((PACKAGE / module).read_text(encoding="utf-8"))


@functools.cache
def _definitions(module: str) -> dict[str, ast.AST]:
    """``{"f": ..., "Class.m": ...}``: the module's functions and methods."""
    found: dict[str, ast.AST] = {}
    for node in _tree(module).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{item.name}"] = item
                elif _forwarded(item) is not None:  # name = forward("part", Part.name)
                    for target in item.targets:  # type: ignore[attr-defined]
                        found[f"{node.name}.{target.id}"] = item
    return found


def _forwarded(node: ast.AST) -> tuple[str, str] | None:
    """``("queries", "status")`` for a facade's ``status = forward("queries",
    InstanceQueries.status)`` (lambda_workflows.engine.instances.forwarding); None for anything
    else."""
    if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
        return None
    call = node.value
    if not (isinstance(call.func, ast.Name) and call.func.id == "forward" and len(call.args) == 2):
        return None
    part, method = call.args
    if isinstance(part, ast.Constant) and isinstance(method, ast.Attribute):
        return str(part.value), method.attr
    return None


def _component(node: ast.expr) -> str | None:
    """The component an expression names: ``runtime.store``, ``self.queue``, ``service``,
    ``_service()``, ``get_runtime().service``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        name = node.attr
    elif isinstance(node, ast.Name):
        name = node.id
    else:
        return None
    name = name.lstrip("_")
    return name if name in COMPONENTS else None


def _reached(code: Code) -> Iterator[Code]:
    """The functions ``code`` calls (or takes as bound methods) that this module can follow."""
    node = _tree(code.module) if not code.name else _definitions(code.module)[code.name]
    own_class = code.name.split(".")[0] if "." in code.name else None
    definitions = _definitions(code.module)
    if (forwarded := _forwarded(node)) is not None:
        module, cls = COMPONENTS[forwarded[0]]
        yield Code(module, f"{cls}.{forwarded[1]}")
        return
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute):
            component = _component(child.value)
            if component is not None:
                module, cls = COMPONENTS[component]
                if f"{cls}.{child.attr}" in _definitions(module):
                    yield Code(module, f"{cls}.{child.attr}")
            elif (
                own_class
                and isinstance(child.value, ast.Name)
                and child.value.id == "self"
                and f"{own_class}.{child.attr}" in definitions
            ):
                yield Code(code.module, f"{own_class}.{child.attr}")
        elif (
            isinstance(child, ast.Call)
            and isinstance(child.func, ast.Name)
            and child.func.id in definitions
        ):
            yield Code(code.module, child.func.id)
        elif (
            not code.name
            and isinstance(child, ast.ImportFrom)
            and child.level == 1
            and (child.module or "").startswith("_")
        ):
            # an entrypoint's private helper module (``from ._events import ...``): its code
            # runs on the entrypoint's requests
            yield Code(f"{Path(code.module).parent}/{child.module}.py", "")


def code_path(entrypoint: str) -> set[Code]:
    """Everything reachable from ``workflows/entrypoints/<entrypoint>.py``."""
    seen: set[Code] = set()
    pending = [Code(f"entrypoints/{entrypoint}.py", "")]
    while pending:
        code = pending.pop()
        if code not in seen:
            seen.add(code)
            pending.extend(_reached(code))
    return seen


def needed_by(entrypoint: str) -> set[str]:
    """The IAM actions the AWS operations on the entrypoint's code path need."""
    needed: set[str] = set()
    reached = code_path(entrypoint)
    for module, service in (ADAPTER_SERVICES | PUBLISHER_SERVICES).items():
        nodes = [_definitions(c.module)[c.name] for c in reached if c.module == module and c.name]
        operations = {
            op
            for node in nodes
            for call in ast.walk(node)
            if isinstance(call, ast.Call)
            if (op := operation_of(call))
        }
        kinds = set().union(*(transact_kinds(node) for node in nodes))
        needed |= iam_actions(service, operations, kinds)
    return needed
