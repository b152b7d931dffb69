"""A second round of cases, written after the analyses to check they catch each pattern and
not only the first examples: sleeps, tasks, catchers and races.
"""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "sleep-with-a-keyword-and-a-timedelta",
        """
        import asyncio
        from datetime import timedelta

        from lambda_workflows import WorkflowEntrypoint


        class Keyword(WorkflowEntrypoint):
            async def run(self, event, step):
                await asyncio.sleep(delay=timedelta(minutes=5).total_seconds())  # expect: WF113
                await step.do("a", lambda: 1)
        """,
    ),
    Case(
        "sync-sleep-in-a-method-called-from-run",
        """
        import time

        from lambda_workflows import WorkflowEntrypoint


        class Method(WorkflowEntrypoint):
            def _throttle(self):
                time.sleep(2)

            async def run(self, event, step):
                for page in range(3):
                    await step.do(f"page {page}", lambda: 1)
                    self._throttle()  # expect: WF113
        """,
    ),
    Case(
        "task-kept-on-self-and-awaited-later",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class OnSelf(WorkflowEntrypoint):
            async def run(self, event, step):
                self._report = asyncio.create_task(step.do("report", lambda: 1))
                await step.do("other", lambda: 2)
                return await self._report
        """,
    ),
    Case(
        "task-kept-on-self-and-forgotten",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Forgotten(WorkflowEntrypoint):
            async def run(self, event, step):
                self._report = asyncio.create_task(step.do("report", lambda: 1))  # expect: WF104
                return await step.do("other", lambda: 2)
        """,
    ),
    Case(
        "get-event-loop-create-task",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class EventLoop(WorkflowEntrypoint):
            async def run(self, event, step):
                asyncio.get_event_loop().create_task(step.sleep("later", "1 day"))  # expect: WF104
                return "ok"
        """,
    ),
    Case(
        "task-group-made-before-the-with",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Before(WorkflowEntrypoint):
            async def run(self, event, step):
                group = asyncio.TaskGroup()
                async with group:
                    group.create_task(step.do("a", lambda: 1))
        """,
    ),
    Case(
        "except-base-exception-in-a-helper-taking-the-step",
        """
        from lambda_workflows import WorkflowEntrypoint


        async def notify(step, user):
            try:
                await step.do(f"notify {user}", lambda: 1)
            except BaseException:  # expect: WF114
                pass


        class Notify(WorkflowEntrypoint):
            async def run(self, event, step):
                await notify(step, event.payload["user"])
        """,
    ),
    Case(
        "cancelled-error-re-raised",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class ReRaise(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.sleep("nap", "1 hour")
                except asyncio.CancelledError:
                    print("suspended")
                    raise
        """,
    ),
    Case(
        "timeout-around-wait-for-event",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Timeout(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    async with asyncio.timeout(3600):  # expect: WF107
                        return await step.wait_for_event("approval", type="approved")
                except TimeoutError:
                    return None
        """,
    ),
    Case(
        "wait-with-a-timeout-on-tasks",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class WaitTimeout(WorkflowEntrypoint):
            async def run(self, event, step):
                task = asyncio.create_task(step.do("slow", lambda: 1))
                done, pending = await asyncio.wait({task}, timeout=60)  # expect: WF107
                return bool(done)
        """,
    ),
    Case(
        "wait-for-a-helper-running-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class HelperDeadline(WorkflowEntrypoint):
            async def _sync(self, step):
                await step.do("pull", lambda: 1)
                await step.do("push", lambda: 1)

            async def run(self, event, step):
                await asyncio.wait_for(self._sync(step), timeout=120)  # expect: WF107
        """,
    ),
    Case(
        "sleep-on-a-thread",
        """
        import asyncio
        import time

        from lambda_workflows import WorkflowEntrypoint


        class Threaded(WorkflowEntrypoint):
            async def run(self, event, step):
                await asyncio.to_thread(time.sleep, 30)  # expect: WF113
                await step.do("a", lambda: 1)
        """,
    ),
    Case(
        "wrapper-that-swallows-what-it-awaits",
        """
        from lambda_workflows import WorkflowEntrypoint


        async def quietly(awaitable):
            try:
                return await awaitable
            except BaseException:
                return None


        class Quiet(WorkflowEntrypoint):
            async def run(self, event, step):
                await quietly(step.sleep("nap", "1 hour"))  # expect: WF114
                await step.do("after", lambda: 1)
        """,
    ),
    Case(
        "wrapper-that-catches-exception-only",
        """
        from lambda_workflows import WorkflowEntrypoint


        async def logged(awaitable):
            try:
                return await awaitable
            except Exception as error:
                print("step failed", error)
                raise


        class Logged(WorkflowEntrypoint):
            async def run(self, event, step):
                return await logged(step.do("work", lambda: 1))
        """,
    ),
]
