"""Real-time sleeps in run(): they hold the runner and repeat on every replay (use step.sleep)."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "asyncio-sleep-an-hour-in-run",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


        class Reminder(WorkflowEntrypoint):
            async def run(self, event: WorkflowEvent, step: WorkflowStep):
                await step.do("send first reminder", lambda: "sent")
                await asyncio.sleep(3600)  # expect: WF113
                await step.do("send second reminder", lambda: "sent")
        """,
    ),
    Case(
        "time-sleep-in-run",
        """
        import time

        from lambda_workflows import WorkflowEntrypoint


        class Poller(WorkflowEntrypoint):
            async def run(self, event, step):
                job = await step.do("start job", lambda: {"id": "j-1"})
                time.sleep(10)  # expect: WF113
                return await step.do("read job", lambda: job)
        """,
    ),
    Case(
        "asyncio-imported-as-alias-sleeps-a-variable",
        """
        import asyncio as aio

        from lambda_workflows import WorkflowEntrypoint


        class Backoff(WorkflowEntrypoint):
            async def run(self, event, step):
                delay = event.payload.get("delay_seconds", 30)
                await aio.sleep(delay)  # expect: WF113
                return await step.do("work", lambda: 1)
        """,
    ),
    Case(
        "sleep-imported-from-asyncio",
        """
        from asyncio import sleep

        from lambda_workflows import WorkflowEntrypoint


        class Drip(WorkflowEntrypoint):
            async def run(self, event, step):
                for day in range(3):
                    await step.do(f"email day {day}", lambda: "ok")
                    await sleep(24 * 60 * 60)  # expect: WF113
        """,
    ),
    Case(
        "sleep-imported-from-time",
        """
        from time import sleep as pause

        from lambda_workflows import WorkflowEntrypoint


        class Throttled(WorkflowEntrypoint):
            async def run(self, event, step):
                pause(5)  # expect: WF113
                await step.do("call the rate limited API", lambda: 1)
        """,
    ),
    Case(
        "polling-loop-sleeps-between-checks",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class WaitForExport(WorkflowEntrypoint):
            async def run(self, event, step):
                export = await step.do("start export", lambda: {"id": "e-1"})
                attempt = 0
                while True:
                    attempt += 1
                    status = await step.do(f"check export {attempt}", lambda: "done")
                    if status == "done":
                        break
                    await asyncio.sleep(60)  # expect: WF113
                return export
        """,
    ),
    Case(
        "module-helper-that-sleeps-called-from-run",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        async def cool_down(seconds):
            await asyncio.sleep(seconds)


        class Batch(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("first batch", lambda: 1)
                await cool_down(120)  # expect: WF113
                await step.do("second batch", lambda: 2)
        """,
    ),
    Case(
        "method-backoff-helper-called-from-run",
        """
        import asyncio
        import random

        from lambda_workflows import NonRetryableError, WorkflowEntrypoint


        class Sync(WorkflowEntrypoint):
            async def _backoff(self, attempt):
                await asyncio.sleep(2**attempt)

            async def run(self, event, step):
                for attempt in range(5):
                    try:
                        return await step.do(f"sync {attempt}", lambda: 1)
                    except NonRetryableError:
                        await self._backoff(attempt)  # expect: WF113
        """,
    ),
    Case(
        "nested-helper-in-run-sleeps",
        """
        import time

        from lambda_workflows import WorkflowEntrypoint


        class Nested(WorkflowEntrypoint):
            async def run(self, event, step):
                def wait_a_bit():
                    time.sleep(3)  # expect: WF113

                await step.do("a", lambda: 1)
                wait_a_bit()
                await step.do("b", lambda: 2)
        """,
    ),
    Case(
        "helper-sleeps-two-calls-deep",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        async def _pause():
            await asyncio.sleep(30)


        async def settle():
            await _pause()


        class Settle(WorkflowEntrypoint):
            async def run(self, event, step):
                await settle()  # expect: WF113
                await step.do("after settle", lambda: 1)
        """,
    ),
    Case(
        "threading-event-wait-in-run",
        """
        import threading

        from lambda_workflows import WorkflowEntrypoint


        class Blocking(WorkflowEntrypoint):
            async def run(self, event, step):
                threading.Event().wait(15)  # expect: WF113
                await step.do("a", lambda: 1)
        """,
    ),
    Case(
        "anyio-sleep-in-run",
        """
        import anyio

        from lambda_workflows import WorkflowEntrypoint


        class AnyioWorkflow(WorkflowEntrypoint):
            async def run(self, event, step):
                await anyio.sleep(90)  # expect: WF113
                await step.do("a", lambda: 1)
        """,
    ),
    Case(
        "sleep-in-a-helper-taking-the-step",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Orders(WorkflowEntrypoint):
            async def ship(self, step, order):
                await step.do(f"pack {order}", lambda: 1)
                await asyncio.sleep(600)  # expect: WF113
                await step.do(f"ship {order}", lambda: 1)

            async def run(self, event, step):
                for order in event.payload["orders"]:
                    await self.ship(step, order)
        """,
    ),
    # --- near misses: sleeping is the step's own work, or yields without waiting ----------
    Case(
        "asyncio-sleep-zero-yields-only",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Yielding(WorkflowEntrypoint):
            async def run(self, event, step):
                await asyncio.sleep(0)
                await step.do("a", lambda: 1)
        """,
    ),
    Case(
        "asyncio-sleep-inside-a-step-callback",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class RateLimited(WorkflowEntrypoint):
            async def run(self, event, step):
                async def call_api():
                    await asyncio.sleep(1)  # the API allows one call a second
                    return {"ok": True}

                return await step.do("call the API", call_api)
        """,
    ),
    Case(
        "time-sleep-in-a-sync-callback",
        """
        import time

        from lambda_workflows import WorkflowEntrypoint


        def upload():
            time.sleep(0.5)
            return "uploaded"


        class Upload(WorkflowEntrypoint):
            async def run(self, event, step):
                return await step.do("upload", upload)
        """,
    ),
    Case(
        "sleeping-helper-called-only-inside-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        async def polite_get(url):
            await asyncio.sleep(2)
            return url


        class Crawler(WorkflowEntrypoint):
            async def run(self, event, step):
                page = await step.do("get page", lambda: polite_get("https://example.com"))
                return page
        """,
    ),
    Case(
        "step-sleep-is-the-way",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Patient(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("a", lambda: 1)
                await step.sleep("wait an hour", "1 hour")
                await step.sleep_until("wait for the launch", "2030-01-01T00:00:00Z")
                await step.do("b", lambda: 2)
        """,
    ),
]
