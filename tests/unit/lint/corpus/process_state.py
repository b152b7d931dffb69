"""Step names built from module or class state, which outlives one run() in a warm process."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "global-counter-in-step-name",
        """
        from lambda_workflows import WorkflowEntrypoint

        counter = 0


        class Numbered(WorkflowEntrypoint):
            async def run(self, event, step):
                global counter
                counter += 1
                await step.do(f"step {counter}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "module-list-grows-and-names-steps",
        """
        from lambda_workflows import WorkflowEntrypoint

        PROCESSED = []


        class Items(WorkflowEntrypoint):
            async def run(self, event, step):
                for item in event.payload["items"]:
                    PROCESSED.append(item)
                    await step.do(f"item {len(PROCESSED)}", lambda: item)  # expect: WF115
        """,
    ),
    Case(
        "module-dict-of-attempts",
        """
        from lambda_workflows import WorkflowEntrypoint

        ATTEMPTS: dict[str, int] = {}


        class Attempts(WorkflowEntrypoint):
            async def run(self, event, step):
                order = event.payload["order"]
                ATTEMPTS[order] = ATTEMPTS.get(order, 0) + 1
                name = f"charge {order} attempt {ATTEMPTS[order]}"
                await step.do(name, lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "module-itertools-count",
        """
        from itertools import count

        from lambda_workflows import WorkflowEntrypoint

        _ids = count()


        class Ids(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do(f"task-{next(_ids)}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "helper-bumps-a-global-for-the-name",
        """
        from lambda_workflows import WorkflowEntrypoint

        _sequence = 0


        def next_name(prefix):
            global _sequence
            _sequence += 1
            return f"{prefix}-{_sequence}"


        class Sequenced(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do(next_name("charge"), lambda: 1)  # expect: WF115
                await step.do(next_name("email"), lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "class-attribute-counter",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Runs(WorkflowEntrypoint):
            runs = 0

            async def run(self, event, step):
                Runs.runs += 1
                await step.do(f"run {Runs.runs}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "class-attribute-through-type-of-self",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Shared(WorkflowEntrypoint):
            started = 0

            async def run(self, event, step):
                type(self).started += 1
                await step.do(f"start #{type(self).started}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "class-level-list-shared-by-instances",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Seen(WorkflowEntrypoint):
            seen = []

            async def run(self, event, step):
                self.seen.append(event.instance_id)
                await step.do(f"visit {len(self.seen)}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "global-copied-into-a-local-first",
        """
        from lambda_workflows import WorkflowEntrypoint

        batch_number = 0


        class Batches(WorkflowEntrypoint):
            async def run(self, event, step):
                global batch_number
                batch_number = batch_number + 1
                label = f"batch {batch_number}"
                for part in ("a", "b"):
                    await step.sleep(f"{label} {part}", "1 minute")  # expect: WF115
        """,
    ),
    Case(
        "module-state-changed-inside-a-step-names-a-later-step",
        """
        from lambda_workflows import WorkflowEntrypoint

        totals = {"calls": 0}


        def count_call():
            totals["calls"] += 1
            return totals["calls"]


        class Calls(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("call", count_call)
                await step.do(f"after {totals['calls']} calls", lambda: 1)  # expect: WF115
        """,
    ),
    # --- near misses ----------------------------------------------------------------------
    Case(
        "module-constant-in-step-name",
        """
        from lambda_workflows import WorkflowEntrypoint

        PREFIX = "order"
        REGIONS = ["us", "eu"]


        class Constant(WorkflowEntrypoint):
            async def run(self, event, step):
                for region in REGIONS:
                    await step.do(f"{PREFIX} {region}", lambda: 1)
        """,
    ),
    Case(
        "self-counter-reset-every-run",
        """
        from lambda_workflows import WorkflowEntrypoint


        class PerRun(WorkflowEntrypoint):
            async def run(self, event, step):
                self.counter = 0
                for item in event.payload["items"]:
                    self.counter += 1
                    await step.do(f"item {self.counter}", lambda: item)
        """,
    ),
    Case(
        "int-class-attribute-becomes-an-instance-attribute",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Attempt(WorkflowEntrypoint):
            attempt = 0

            async def run(self, event, step):
                self.attempt += 1
                await step.do(f"attempt {self.attempt}", lambda: 1)
        """,
    ),
    Case(
        "local-counter-in-run",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Local(WorkflowEntrypoint):
            async def run(self, event, step):
                n = 0
                for page in range(3):
                    n += 1
                    await step.do(f"page {n}", lambda: page)
        """,
    ),
    Case(
        "module-registry-filled-at-import",
        """
        from lambda_workflows import WorkflowEntrypoint

        HANDLERS = {}


        def handler(name):
            def register(function):
                HANDLERS[name] = function
                return function

            return register


        @handler("email")
        def send_email():
            return "sent"


        class Dispatch(WorkflowEntrypoint):
            async def run(self, event, step):
                for name, function in HANDLERS.items():
                    await step.do(f"handler {name}", function)
        """,
    ),
    Case(
        "module-client-cache-used-in-a-step",
        """
        import boto3

        from lambda_workflows import WorkflowEntrypoint

        _clients = {}


        def client(name):
            if name not in _clients:
                _clients[name] = boto3.client(name)
            return _clients[name]


        class Cached(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("list buckets", lambda: client("s3").list_buckets()["Buckets"][:1])
        """,
    ),
]
