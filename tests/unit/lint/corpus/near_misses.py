"""The ✅ patterns of the rules of Workflows as users write them, and the 🔴 ones the linter knew.

The clean cases here must stay clean whatever rule is added; the bad ones pin that the new
analyses did not lose what the linter already caught.
"""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "random-inside-a-callback",
        """
        import random
        import uuid
        from datetime import datetime, timezone

        from lambda_workflows import WorkflowEntrypoint


        class Good(WorkflowEntrypoint):
            async def run(self, event, step):
                pick = await step.do("pick", lambda: random.choice(["a", "b"]))
                token = await step.do("token", lambda: str(uuid.uuid4()))

                async def stamp():
                    print(f"stamped at {datetime.now(timezone.utc)}")
                    return {"pick": pick, "token": token}

                return await step.do("stamp", stamp)
        """,
    ),
    Case(
        "conditions-on-step-results-and-the-payload",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Conditions(WorkflowEntrypoint):
            async def run(self, event, step):
                config = await step.do("fetch config", lambda: {"email": True})
                if config["email"]:
                    await step.do("send email", lambda: None)
                if event.payload.get("user_type") == "premium":
                    await step.do("premium processing", lambda: None)
                go = await step.do("decide randomly", lambda: __import__("random").random() > 0.5)
                if go:
                    await step.do("conditionally do something", lambda: None)
        """,
    ),
    Case(
        "promise-all-of-steps",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class All(WorkflowEntrypoint):
            async def run(self, event, step):
                images = await asyncio.gather(
                    step.do("first cat", lambda: "a"), step.do("second cat", lambda: "b")
                )
                await step.sleep("nap", "3 hours")
                return await step.do("choose", lambda: images[0])
        """,
    ),
    Case(
        "one-step-per-entry-of-a-step-result",
        """
        from lambda_workflows import WorkflowEntrypoint


        class PerCat(WorkflowEntrypoint):
            async def run(self, event, step):
                cats = await step.do("get cat list", lambda: ["tom", "felix"])
                for cat in cats:
                    await step.do(f"get cat: {cat}", lambda: cat)
                for index, cat in enumerate(cats):
                    await step.do(f"cat #{index}", lambda: cat)
        """,
    ),
    Case(
        "helpers-taking-the-step-used-correctly",
        """
        import asyncio
        import random

        from lambda_workflows import WorkflowEntrypoint


        async def charge(step, customer, amount):
            async def call():
                return {"customer": customer, "amount": amount, "jitter": random.random()}

            return await step.do(f"charge {customer}", call)


        class Billing(WorkflowEntrypoint):
            async def run(self, event, step):
                customers = await step.do("customers", lambda: ["a", "b"])
                return await asyncio.gather(*[charge(step, c, 10) for c in customers])
        """,
    ),
    Case(
        "logger-and-self-state-outside-steps",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Logged(WorkflowEntrypoint):
            def __init__(self, env):
                super().__init__(env)
                self.seen = []

            async def run(self, event, step):
                self.logger.info("starting %s", event.instance_id)
                self.seen.append("start")
                result = await step.do(f"work {len(self.seen)}", lambda: 1)
                return result
        """,
    ),
    # --- what the linter caught before, still caught --------------------------------------
    Case(
        "time-in-a-step-name",
        """
        import time

        from lambda_workflows import WorkflowEntrypoint


        class Timed(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do(f"step #1 running at: {time.time()}", lambda: 1)  # expect: WF101
        """,
    ),
    Case(
        "random-branch-outside-a-step",
        """
        import random

        from lambda_workflows import WorkflowEntrypoint


        class Branch(WorkflowEntrypoint):
            async def run(self, event, step):
                if random.random() > 0.5:  # expect: WF102
                    await step.do("maybe", lambda: None)
        """,
    ),
    Case(
        "step-not-awaited",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Forgot(WorkflowEntrypoint):
            async def run(self, event, step):
                issues = step.do("fetch issues", lambda: [])  # expect: WF104
                return "ok"
        """,
    ),
    Case(
        "image-list-filled-inside-steps",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Images(WorkflowEntrypoint):
            async def run(self, event, step):
                image_list = []
                await step.do("first", lambda: image_list.append("a"))  # expect: WF106
                await step.sleep("nap", "3 hours")
                return await step.do("choose", lambda: image_list[0])
        """,
    ),
]
