"""Catchers that swallow the engine's suspension of a step (BaseException, CancelledError)."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "except-base-exception-around-a-sleep",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Careful(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.sleep("cool down", "1 hour")
                except BaseException:  # expect: WF114
                    pass
                await step.do("after", lambda: 1)
        """,
    ),
    Case(
        "bare-except-around-a-step",
        """
        import logging

        from lambda_workflows import WorkflowEntrypoint

        log = logging.getLogger(__name__)


        class BestEffort(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.do("optional enrichment", lambda: 1)
                except:  # expect: WF114
                    log.warning("enrichment failed, going on")
                return await step.do("main", lambda: 2)
        """,
    ),
    Case(
        "exception-and-base-exception-in-a-tuple",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Tuple(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    approval = await step.wait_for_event("approval", type="approved")
                except (Exception, BaseException) as error:  # expect: WF114
                    approval = {"error": str(error)}
                return approval
        """,
    ),
    Case(
        "cancelled-error-around-wait-for-event",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Cancellable(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.wait_for_event("payment", type="paid", timeout="1 day")
                except asyncio.CancelledError:  # expect: WF114
                    return "cancelled"
                return "paid"
        """,
    ),
    Case(
        "cancelled-error-imported-by-name",
        """
        from asyncio import CancelledError

        from lambda_workflows import WorkflowEntrypoint


        class Imported(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.sleep("nap", "5 minutes")
                except CancelledError:  # expect: WF114
                    pass
        """,
    ),
    Case(
        "cancelled-error-among-others",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Mixed(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    value = await step.do("fetch", lambda: 1)
                except (ValueError, asyncio.CancelledError):  # expect: WF114
                    value = None
                return value
        """,
    ),
    Case(
        "base-exception-turned-into-another-error",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Wrapped(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    return await step.do("charge", lambda: 1)
                except BaseException as exc:  # expect: WF114
                    raise RuntimeError("charge failed") from exc
        """,
    ),
    Case(
        "retry-loop-catching-everything",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Retry(WorkflowEntrypoint):
            async def run(self, event, step):
                for attempt in range(3):
                    try:
                        return await step.do(f"try {attempt}", lambda: 1)
                    except BaseException:  # expect: WF114
                        continue
                return None
        """,
    ),
    Case(
        "base-exception-around-a-module-helper-running-steps",
        """
        from lambda_workflows import WorkflowEntrypoint


        async def charge_card(step, amount):
            return await step.do(f"charge {amount}", lambda: amount)


        class Billing(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await charge_card(step, event.payload["amount"])
                except BaseException:  # expect: WF114
                    return "failed"
                return "charged"
        """,
    ),
    Case(
        "bare-except-around-a-method-running-steps",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Provisioning(WorkflowEntrypoint):
            async def _provision(self, step):
                await step.do("create bucket", lambda: 1)
                await step.sleep("wait for DNS", "10 minutes")

            async def run(self, event, step):
                try:
                    await self._provision(step)
                except:  # expect: WF114
                    await step.do("clean up", lambda: 1)
        """,
    ),
    Case(
        "return-in-finally-swallows-everything",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Finally(WorkflowEntrypoint):
            async def run(self, event, step):
                result = None
                try:
                    result = await step.do("work", lambda: 1)
                    await step.sleep("settle", "1 hour")
                finally:
                    return result  # expect: WF114
        """,
    ),
    Case(
        "suppress-base-exception-around-a-step",
        """
        import contextlib

        from lambda_workflows import WorkflowEntrypoint


        class Suppressed(WorkflowEntrypoint):
            async def run(self, event, step):
                with contextlib.suppress(BaseException):  # expect: WF114
                    await step.do("optional", lambda: 1)
                await step.do("required", lambda: 2)
        """,
    ),
    Case(
        "suppress-cancelled-error-imported-by-name",
        """
        import asyncio
        from contextlib import suppress

        from lambda_workflows import WorkflowEntrypoint


        class Quiet(WorkflowEntrypoint):
            async def run(self, event, step):
                with suppress(asyncio.CancelledError):  # expect: WF114
                    await step.sleep("nap", "1 minute")
        """,
    ),
    Case(
        "except-star-base-exception-around-a-task-group",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Groups(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    async with asyncio.TaskGroup() as tg:
                        tg.create_task(step.do("a", lambda: 1))
                        tg.create_task(step.do("b", lambda: 2))
                except* BaseException:  # expect: WF114
                    pass
        """,
    ),
    Case(
        "bare-except-around-gathered-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Gathered(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await asyncio.gather(step.do("a", lambda: 1), step.sleep("b", "1 hour"))
                except:  # expect: WF114
                    return "partial"
        """,
    ),
    # --- near misses ----------------------------------------------------------------------
    Case(
        "base-exception-logged-and-re-raised",
        """
        import logging

        from lambda_workflows import WorkflowEntrypoint

        log = logging.getLogger(__name__)


        class Logged(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.do("work", lambda: 1)
                except BaseException:
                    log.info("run() interrupted or failed")
                    raise
        """,
    ),
    Case(
        "base-exception-re-raised-by-name",
        """
        from lambda_workflows import WorkflowEntrypoint


        class ByName(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.sleep("nap", "1 hour")
                except BaseException as exc:
                    print("leaving run()")
                    raise exc
        """,
    ),
    Case(
        "except-exception-around-a-step",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Compensate(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.do("reserve seat", lambda: 1)
                except Exception:
                    await step.do("release seat", lambda: 1)
                    raise
        """,
    ),
    Case(
        "bare-except-inside-a-step-callback",
        """
        from lambda_workflows import WorkflowEntrypoint


        def parse(text):
            try:
                return int(text)
            except:
                return 0


        class Parse(WorkflowEntrypoint):
            async def run(self, event, step):
                async def fetch():
                    try:
                        return {"n": parse("12")}
                    except BaseException:
                        return {"n": 0}

                return await step.do("fetch", fetch)
        """,
    ),
    Case(
        "base-exception-around-code-without-steps",
        """
        import json

        from lambda_workflows import WorkflowEntrypoint


        class Config(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    config = json.loads(event.payload.get("config", "{}"))
                except BaseException:
                    config = {}
                return await step.do("apply config", lambda: config)
        """,
    ),
    Case(
        "keyboard-interrupt-is-not-a-suspension",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Interrupt(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    await step.do("work", lambda: 1)
                except KeyboardInterrupt:
                    return "interrupted"
        """,
    ),
    Case(
        "finally-that-cleans-up-only",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Cleanup(WorkflowEntrypoint):
            async def run(self, event, step):
                try:
                    return await step.do("work", lambda: 1)
                finally:
                    print("run() pass ended")
        """,
    ),
    Case(
        "suppress-value-error-around-a-step",
        """
        import contextlib

        from lambda_workflows import WorkflowEntrypoint


        class SuppressValue(WorkflowEntrypoint):
            async def run(self, event, step):
                with contextlib.suppress(ValueError):
                    await step.do("parse", lambda: 1)
        """,
    ),
]
