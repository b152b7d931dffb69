"""Races between steps (or a step and a timer) outside a step: Promise.race() in Python."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "wait-for-a-step-with-a-timeout",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Deadline(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    return await asyncio.wait_for(step.do("slow call", lambda: 1), timeout=30)  # expect: WF107
                except asyncio.TimeoutError:
                    return None
        """,
    ),
    Case(
        "wait-for-an-event-with-aliased-asyncio",
        """
        import asyncio as aio

        from lambda_workflows import WorkflowEntrypoint


        class Approval(WorkflowEntrypoint):
            async def run(self, event, step):
                approval = await aio.wait_for(  # expect: WF107
                    step.wait_for_event("approval", type="approved"), 3600
                )
                return approval
        """,
    ),
    Case(
        "wait-for-imported-by-name",
        """
        from asyncio import wait_for

        from lambda_workflows import WorkflowEntrypoint


        class Imported(WorkflowEntrypoint):
            async def run(self, event, step):
                return await wait_for(step.do("a", lambda: 1), 5)  # expect: WF107
        """,
    ),
    Case(
        "as-completed-in-a-plain-for",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class FirstQuote(WorkflowEntrypoint):
            async def run(self, event, step):
                quotes = [step.do(f"quote {v}", lambda: 1) for v in ("a", "b", "c")]
                for next_quote in asyncio.as_completed(quotes):  # expect: WF107
                    best = await next_quote
                    return best
        """,
    ),
    Case(
        "first-completed-imported-names",
        """
        from asyncio import FIRST_COMPLETED, ensure_future, wait

        from lambda_workflows import WorkflowEntrypoint


        class Fastest(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = {ensure_future(step.do(n, lambda: 1)) for n in ("a", "b")}
                done, pending = await wait(tasks, return_when=FIRST_COMPLETED)  # expect: WF107
                return done.pop().result()
        """,
    ),
    Case(
        "first-exception",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class FailFast(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = [asyncio.create_task(step.do(n, lambda: 1)) for n in ("a", "b")]
                done, pending = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)  # expect: WF107
                return len(done)
        """,
    ),
    Case(
        "timeout-context-around-a-helper-running-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Budget(WorkflowEntrypoint):
            async def _import(self, step):
                await step.do("download", lambda: 1)
                await step.do("load", lambda: 1)

            async def run(self, event, step):
                async with asyncio.timeout(300):  # expect: WF107
                    await self._import(step)
        """,
    ),
    Case(
        "anyio-move-on-after-around-a-step",
        """
        import anyio

        from lambda_workflows import WorkflowEntrypoint


        class MoveOn(WorkflowEntrypoint):
            async def run(self, event, step):
                with anyio.move_on_after(10):  # expect: WF107
                    await step.do("maybe", lambda: 1)
        """,
    ),
    Case(
        "wait-for-around-gathered-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class GatherDeadline(WorkflowEntrypoint):
            async def run(self, event, step):
                both = asyncio.gather(step.do("a", lambda: 1), step.do("b", lambda: 2))
                return await asyncio.wait_for(both, 60)  # expect: WF107
        """,
    ),
    Case(
        "race-helper-in-the-module",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        async def race(*contenders):
            tasks = [asyncio.ensure_future(c) for c in contenders]
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            return done.pop().result()


        class Race(WorkflowEntrypoint):
            async def run(self, event, step):
                winner = await race(step.do("a", lambda: 1), step.do("b", lambda: 2))  # expect: WF107
                await step.do(f"use {winner}", lambda: winner)
        """,
    ),
    Case(
        "race-in-a-helper-taking-the-step",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Quotes(WorkflowEntrypoint):
            async def fastest_quote(self, step):
                calls = [step.do("quote a", lambda: 1), step.do("quote b", lambda: 2)]
                for first in asyncio.as_completed(calls):  # expect: WF107
                    return await first

            async def run(self, event, step):
                quote = await self.fastest_quote(step)
                return await step.do("book", lambda: quote)
        """,
    ),
    # --- near misses ----------------------------------------------------------------------
    Case(
        "race-wrapped-in-a-step",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Wrapped(WorkflowEntrypoint):
            async def run(self, event, step):
                async def race():
                    return await asyncio.wait_for(step.do("inner", lambda: 1), timeout=5)

                return await step.do("race", race)
        """,
    ),
    Case(
        "step-timeout-config-instead-of-wait-for",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Config(WorkflowEntrypoint):
            async def run(self, event, step):
                approval = await step.wait_for_event("approval", type="approved", timeout="1 hour")
                return await step.do("slow", {"timeout": "30 seconds"}, lambda: approval)
        """,
    ),
    Case(
        "wait-for-all",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class All(WorkflowEntrypoint):
            async def run(self, event, step):
                tasks = [asyncio.create_task(step.do(n, lambda: 1)) for n in ("a", "b")]
                done, _ = await asyncio.wait(tasks, return_when=asyncio.ALL_COMPLETED)
                return len(done)
        """,
    ),
]
