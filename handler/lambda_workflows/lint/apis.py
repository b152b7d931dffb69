"""What the linter knows about APIs: which calls are non-deterministic, do I/O, race, mutate.

Everything is matched on *qualified* names (``datetime.datetime.now``), resolved through the
file's imports by :class:`ImportAliases`, so ``from datetime import datetime as dt; dt.now()``
is recognised. A name that is not imported is taken as written, which keeps snippets without
imports (``datetime.now()``) working.
"""

from __future__ import annotations

import ast
from urllib.parse import urlsplit

STEP_METHODS = frozenset({"do", "sleep", "sleep_until", "wait_for_event", "run_workflow"})

NON_DETERMINISTIC = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.process_time",
        "time.process_time_ns",
        "time.thread_time",
        "time.thread_time_ns",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "datetime.now",
        "datetime.utcnow",
        "datetime.today",
        "date.today",
        "uuid.uuid1",
        "uuid.uuid4",
        "os.urandom",
        "os.getrandom",
        "os.getpid",
        "id",
        "hash",  # of a str or bytes: randomised per process (PYTHONHASHSEED)
    }
)
NON_DETERMINISTIC_PREFIXES = ("random.", "secrets.", "numpy.random.", "np.random.")
# Seeded generators are deterministic: random.seed(1), random.Random(1).
SEEDABLE = frozenset({"random.seed", "random.Random"})
# These read the clock only when the time argument is left out: time.gmtime() vs gmtime(t).
CLOCK_WHEN_FEWER_ARGS = {
    "time.localtime": 1,
    "time.gmtime": 1,
    "time.ctime": 1,
    "time.asctime": 1,
    "time.strftime": 2,
}

HTTP_VERBS = frozenset({"get", "post", "put", "patch", "delete", "head", "options", "request"})
HTTP_FUNCTIONS = frozenset(
    {f"{lib}.{verb}" for lib in ("requests", "httpx") for verb in HTTP_VERBS}
    | {"httpx.stream", "urllib.request.urlopen", "urllib.request.urlretrieve", "aiohttp.request"}
    | {"urlopen", "fetch"}
)
SIDE_EFFECT_FUNCTIONS = HTTP_FUNCTIONS | {
    "boto3.client",
    "boto3.resource",
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "os.system",
    "smtplib.SMTP",
    "smtplib.SMTP_SSL",
    "socket.create_connection",
}

# Constructors of objects whose method calls do I/O, by kind.
CLIENT_FACTORIES = {
    "boto3.client": "AWS",
    "boto3.resource": "AWS",
    "boto3.Session": "AWS session",
    "boto3.session.Session": "AWS session",
    "requests.Session": "HTTP",
    "requests.session": "HTTP",
    "httpx.Client": "HTTP",
    "httpx.AsyncClient": "HTTP",
    "aiohttp.ClientSession": "HTTP",
    "urllib3.PoolManager": "HTTP",
    "http.client.HTTPConnection": "HTTP",
    "http.client.HTTPSConnection": "HTTP",
}
# Methods of those objects that do no I/O.
PURE_CLIENT_METHODS = frozenset({"close", "aclose", "get_paginator", "can_paginate"})

WORKFLOW_CREATE = frozenset({"create", "create_batch"})
INSTANCE_CONTROL = frozenset({"send_event", "pause", "resume", "terminate", "restart"})
STORE_WRITES = frozenset({"put", "put_object", "upload_file", "upload_fileobj"})
BODY_READERS = frozenset({"json", "read", "text", "content", "body", "iter_bytes", "readlines"})
BODY_ATTRIBUTES = frozenset({"content", "text", "body", "data"})

GATHERERS = frozenset(
    {
        "asyncio.gather",
        "asyncio.wait",
        "asyncio.as_completed",
        "asyncio.create_task",
        "asyncio.ensure_future",
        "asyncio.shield",
        "asyncio.wait_for",
        "asyncio.run_coroutine_threadsafe",
    }
)
GATHERER_METHODS = frozenset({"create_task", "gather", "ensure_future", "start_soon"})
TIMEOUT_CONTEXTS = frozenset(
    {
        "asyncio.timeout",
        "asyncio.timeout_at",
        "async_timeout.timeout",
        "async_timeout.timeout_at",
        "anyio.fail_after",
        "anyio.fail_at",
        "anyio.move_on_after",
        "anyio.move_on_at",
        "trio.fail_after",
        "trio.fail_at",
        "trio.move_on_after",
        "trio.move_on_at",
    }
)
# Sleeps that hold the process for real time (asyncio.sleep(0) only yields, and is fine).
BLOCKING_SLEEPS = frozenset(
    {
        "time.sleep",
        "asyncio.sleep",
        "anyio.sleep",
        "trio.sleep",
        "gevent.sleep",
        "eventlet.sleep",
    }
)
# Objects whose .wait(timeout) blocks the thread.
BLOCKING_WAITERS = frozenset(
    {"threading.Event", "threading.Condition", "threading.Barrier", "threading.Semaphore"}
)
# Exceptions an ``except`` catches the engine's suspension of a step with (it is a
# BaseException, delivered to run() as a cancellation).
SUSPENSION_CATCHERS = frozenset(
    {
        "BaseException",
        "builtins.BaseException",
        "asyncio.CancelledError",
        "asyncio.exceptions.CancelledError",
        "concurrent.futures.CancelledError",
        "CancelledError",
    }
)
# Functions that change the container given as their first argument.
IN_PLACE_FUNCTIONS = frozenset(
    {
        "random.shuffle",
        "operator.setitem",
        "operator.delitem",
        "operator.iadd",
        "operator.ior",
        "heapq.heappush",
        "heapq.heappop",
        "heapq.heapify",
        "heapq.heapreplace",
        "heapq.heappushpop",
        "bisect.insort",
        "bisect.insort_left",
        "bisect.insort_right",
        "setattr",
        "delattr",
        "object.__setattr__",
        "object.__delattr__",
    }
)

MUTATING_METHODS = frozenset(
    {
        "append",
        "appendleft",
        "extend",
        "extendleft",
        "insert",
        "add",
        "update",
        "setdefault",
        "pop",
        "popitem",
        "popleft",
        "remove",
        "discard",
        "clear",
        "sort",
        "reverse",
        "__setitem__",
        "__delitem__",
    }
)


def dotted_name(node: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else ``None``."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def root_name(node: ast.expr) -> str | None:
    """The name at the bottom of ``a.b[1].c(...)``-like chains (attributes and subscripts)."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def url_host(node: ast.AST | None) -> str | None:
    """``""`` for an HTTP(S) URL literal whose host is not spelled out, its host when it is,
    ``None`` when ``node`` is not a URL literal (plain string or f-string)."""
    if isinstance(node, ast.JoinedStr) and node.values:
        first = node.values[0]
        text = first.value if isinstance(first, ast.Constant) else None
        whole = False
    elif isinstance(node, ast.Constant):
        text, whole = node.value, True
    else:
        return None
    if not isinstance(text, str) or not text.startswith(("http://", "https://")):
        return None
    rest = text.split("://", 1)[1]
    if not whole and "/" not in rest:
        return ""
    return urlsplit(text).hostname or ""


class ImportAliases:
    """Maps local names to the qualified names the file imported them as."""

    __slots__ = ("_aliases", "_cache")

    def __init__(self) -> None:
        self._aliases: dict[str, str] = {}
        self._cache: dict[int, str | None] = {}

    def add(self, node: ast.Import | ast.ImportFrom) -> None:
        """Record what an import statement binds."""
        self._cache.clear()
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    self._aliases[alias.asname] = alias.name
                else:
                    head = alias.name.partition(".")[0]
                    self._aliases[head] = head
            return
        if node.level or node.module is None:
            return
        for alias in node.names:
            self._aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def qualify(self, node: ast.expr) -> str | None:
        """The qualified name of a name/attribute chain, or ``None`` for anything else.

        Answers are cached per node, so keep the tree alive while using this object.
        """
        key = id(node)
        if key in self._cache:
            return self._cache[key]
        name = dotted_name(node)
        if name is not None:
            head, dot, rest = name.partition(".")
            full = self._aliases.get(head)
            if full is not None:
                name = f"{full}{dot}{rest}"
        self._cache[key] = name
        return name


def is_blocking_sleep(call: ast.Call, aliases: ImportAliases) -> bool:
    """``time.sleep(5)``, ``await asyncio.sleep(delay)``, ``threading.Event().wait(10)``: a call
    that holds the process for real time (``asyncio.sleep(0)``, a bare yield, is not)."""
    qualname = aliases.qualify(call.func)
    if qualname in BLOCKING_SLEEPS:
        first = call.args[0] if call.args else None
        if first is None:
            first = next((k.value for k in call.keywords if k.arg in ("delay", "seconds")), None)
        return not (isinstance(first, ast.Constant) and first.value == 0)
    func = call.func
    if qualname == "asyncio.to_thread" or (
        isinstance(func, ast.Attribute) and func.attr == "run_in_executor"
    ):  # await asyncio.to_thread(time.sleep, 5): the sleep runs on a thread, run() waits
        return any(aliases.qualify(arg) in BLOCKING_SLEEPS for arg in call.args)
    if isinstance(func, ast.Attribute) and func.attr == "wait" and (call.args or call.keywords):
        maker = func.value
        return isinstance(maker, ast.Call) and aliases.qualify(maker.func) in BLOCKING_WAITERS
    return False


def is_non_deterministic(qualname: str, call: ast.Call) -> bool:
    """True when calling ``qualname`` this way gives a different value on each replay."""
    if qualname in NON_DETERMINISTIC:
        return True
    if qualname in SEEDABLE:
        return not call.args and not call.keywords
    if qualname.startswith(NON_DETERMINISTIC_PREFIXES):
        return True
    needed = CLOCK_WHEN_FEWER_ARGS.get(qualname)
    return needed is not None and len(call.args) < needed


# Fields that never hold a child node worth visiting (names, flags, operators, contexts).
_LEAF_FIELDS = frozenset(
    {
        "ctx",
        "op",
        "ops",
        "id",
        "attr",
        "arg",
        "kind",
        "type_comment",
        "type_ignores",
        "level",
        "module",
        "is_async",
        "conversion",
        "names",
        "name",
        "simple",
        "tag",
        "asname",
        "rest",
        "kwd_attrs",
    }
)
_CHILD_FIELDS: dict[type[ast.AST], tuple[str, ...]] = {
    ast.Constant: (),
    ast.MatchSingleton: (),
}


def _call_children(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.Call)
    return [node.func, *node.args, *node.keywords]


def _value_child(node: ast.AST) -> list[ast.AST]:
    return [node.value]  # type: ignore[attr-defined]


def _assign_children(node: ast.AST) -> list[ast.AST]:
    assert isinstance(node, ast.Assign)
    return [*node.targets, node.value]


def _element_children(node: ast.AST) -> list[ast.AST]:
    return list(node.elts)  # type: ignore[attr-defined]


# The most frequent node kinds get a direct accessor; the rest go through their fields.
_FAST_CHILDREN = {
    ast.Call: _call_children,
    ast.Expr: _value_child,
    ast.Attribute: _value_child,
    ast.keyword: _value_child,
    ast.Await: _value_child,
    ast.Starred: _value_child,
    ast.Assign: _assign_children,
    ast.List: _element_children,
    ast.Tuple: _element_children,
}


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """The direct children of ``node`` (like :func:`ast.iter_child_nodes`, but faster).

    Skips fields that can only hold names, flags, operators or contexts.
    """
    kind = type(node)
    fast = _FAST_CHILDREN.get(kind)
    if fast is not None:
        return fast(node)
    fields = _CHILD_FIELDS.get(kind)
    if fields is None:
        fields = tuple(f for f in kind._fields if f not in _LEAF_FIELDS)
        _CHILD_FIELDS[kind] = fields
    children: list[ast.AST] = []
    for field_name in fields:
        value = getattr(node, field_name, None)
        if value is None:
            continue
        if type(value) is list:
            children.extend(item for item in value if isinstance(item, ast.AST))
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def walk(node: ast.AST | None) -> list[ast.AST]:
    """``node`` and all its descendants (like :func:`ast.walk`, order not guaranteed)."""
    if node is None:
        return []
    found = [node]
    index = 0
    while index < len(found):
        found.extend(child_nodes(found[index]))
        index += 1
    return found
