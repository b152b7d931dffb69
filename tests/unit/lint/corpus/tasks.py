"""Steps wrapped in tasks (or gathered) that nobody awaits: "Always await your steps"."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "create-task-as-a-statement",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Notify(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.create_task(step.do("send analytics", lambda: 1))  # expect: WF104
                return await step.do("main work", lambda: 2)
        """,
    ),
    Case(
        "create-task-stored-and-forgotten",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Audit(WorkflowEntrypoint):
            async def run(self, event, step):
                audit = asyncio.create_task(step.do("write audit", lambda: 1))  # expect: WF104
                result = await step.do("charge", lambda: 2)
                return result
        """,
    ),
    Case(
        "ensure-future-of-a-sleep",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Timer(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.ensure_future(step.sleep("grace period", "10 minutes"))  # expect: WF104
                await step.do("go on", lambda: 1)
        """,
    ),
    Case(
        "loop-create-task",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Loopy(WorkflowEntrypoint):
            async def run(self, event, step):
                loop = asyncio.get_running_loop()
                loop.create_task(step.do("side job", lambda: 1))  # expect: WF104
                await step.do("main job", lambda: 2)
        """,
    ),
    Case(
        "create-task-imported-by-name",
        """
        from asyncio import create_task

        from lambda_workflows import WorkflowEntrypoint


        class Imported(WorkflowEntrypoint):
            async def run(self, event, step):
                create_task(step.wait_for_event("approval", type="approved"))  # expect: WF104
                await step.do("prepare", lambda: 1)
        """,
    ),
    Case(
        "background-task-set-pattern",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint

        background = set()


        class FireAndForget(WorkflowEntrypoint):
            async def run(self, event, step):
                task = asyncio.create_task(step.do("notify", lambda: 1))  # expect: WF104
                background.add(task)
                task.add_done_callback(background.discard)
                return "queued"
        """,
    ),
    Case(
        "list-of-tasks-never-awaited",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Fanout(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = [
                    asyncio.create_task(step.do(f"part {i}", lambda: 1))  # expect: WF104
                    for i in range(3)
                ]
                return len(tasks)
        """,
    ),
    Case(
        "gather-without-await",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Forgot(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.gather(step.do("a", lambda: 1), step.do("b", lambda: 2))  # expect: WF104
                return "done"
        """,
    ),
    Case(
        "shield-without-await",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Shielded(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.shield(step.do("important", lambda: 1))  # expect: WF104
                await step.do("other", lambda: 2)
        """,
    ),
    Case(
        "step-helper-coroutine-not-awaited",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Welcome(WorkflowEntrypoint):
            async def send_welcome(self, step, user):
                await step.do(f"welcome {user}", lambda: "sent")

            async def run(self, event, step):
                self.send_welcome(step, event.payload["user"])  # expect: WF104
                await step.do("create account", lambda: 1)
        """,
    ),
    Case(
        "task-of-a-step-helper-never-awaited",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        async def index_document(step, doc):
            return await step.do(f"index {doc}", lambda: 1)


        class Indexer(WorkflowEntrypoint):
            async def run(self, event, step):
                for doc in event.payload["docs"]:
                    asyncio.create_task(index_document(step, doc))  # expect: WF104
        """,
    ),
    Case(
        "create-task-then-sleep-zero-is-still-unawaited",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Yielder(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.create_task(step.do("kick off", lambda: 1))  # expect: WF104
                await asyncio.sleep(0)
        """,
    ),
    # --- near misses: every task is awaited before run() returns ----------------------------
    Case(
        "task-awaited-later",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Overlap(WorkflowEntrypoint):
            async def run(self, event, step):
                report = asyncio.create_task(step.do("build report", lambda: "r"))
                await step.do("notify", lambda: 1)
                return await report
        """,
    ),
    Case(
        "tasks-gathered-later",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Parallel(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = []
                for region in ["us", "eu"]:
                    tasks.append(asyncio.create_task(step.do(f"deploy {region}", lambda: 1)))
                return await asyncio.gather(*tasks)
        """,
    ),
    Case(
        "task-group-awaits-its-tasks",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Grouped(WorkflowEntrypoint):
            async def run(self, event, step):
                async with asyncio.TaskGroup() as tg:
                    first = tg.create_task(step.do("a", lambda: 1))
                    tg.create_task(step.do("b", lambda: 2))
                return first.result()
        """,
    ),
    Case(
        "tasks-awaited-one-by-one",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class OneByOne(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = [asyncio.ensure_future(step.do(f"n {i}", lambda: 1)) for i in range(3)]
                results = []
                for task in tasks:
                    results.append(await task)
                return results
        """,
    ),
    Case(
        "gather-of-a-list-comprehension",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class FanIn(WorkflowEntrypoint):
            async def run(self, event, step):
                items = await step.do("list items", lambda: ["a", "b"])
                return await asyncio.gather(*[step.do(f"item {i}", lambda: 1) for i in items])
        """,
    ),
    Case(
        "ensure-future-awaited-through-a-name",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Futures(WorkflowEntrypoint):
            async def run(self, event, step):
                pending = asyncio.ensure_future(step.do("slow", lambda: 1))
                fast = await step.do("fast", lambda: 2)
                slow = await pending
                return fast + slow
        """,
    ),
    Case(
        "step-helper-awaited",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Helpers(WorkflowEntrypoint):
            async def charge(self, step, amount):
                return await step.do(f"charge {amount}", lambda: amount)

            async def run(self, event, step):
                first = await self.charge(step, 10)
                rest = await asyncio.gather(self.charge(step, 20), self.charge(step, 30))
                return [first, *rest]
        """,
    ),
]
