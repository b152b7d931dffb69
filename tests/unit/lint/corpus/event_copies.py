"""Near misses of "Don't mutate your incoming events": copies changed locally, reads, and
helpers that do not change what they are given."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "deepcopy-then-changed",
        """
        import copy

        from lambda_workflows import WorkflowEntrypoint


        class Copy(WorkflowEntrypoint):
            async def run(self, event, step):
                payload = copy.deepcopy(event.payload)
                payload["email"] = payload["email"].lower()
                payload["lines"].append({"sku": "gift"})
                await step.do("go", lambda: payload)
        """,
    ),
    Case(
        "dict-copy-top-level-change",
        """
        from lambda_workflows import WorkflowEntrypoint


        class DictCopy(WorkflowEntrypoint):
            async def run(self, event, step):
                order = dict(event.payload)
                order["status"] = "new"
                order.pop("token", None)
                extra = {**event.payload, "source": "api"}
                copy = event.payload.copy()
                copy["seen"] = True
                await step.do("go", lambda: [order, extra, copy])
        """,
    ),
    Case(
        "list-copy-of-a-payload-list",
        """
        from lambda_workflows import WorkflowEntrypoint


        class ListCopy(WorkflowEntrypoint):
            async def run(self, event, step):
                items = list(event.payload["items"])
                items.append("extra")
                items.sort()
                ordered = sorted(event.payload["items"])
                ordered.reverse()
                await step.do("go", lambda: [items, ordered])
        """,
    ),
    Case(
        "helper-returns-a-new-dict",
        """
        from lambda_workflows import WorkflowEntrypoint


        def normalised(payload):
            result = dict(payload)
            result["email"] = payload["email"].lower()
            return result


        class Pure(WorkflowEntrypoint):
            async def run(self, event, step):
                data = normalised(event.payload)
                await step.do("go", lambda: data)
        """,
    ),
    Case(
        "mutating-helper-called-with-a-copy",
        """
        import copy

        from lambda_workflows import WorkflowEntrypoint


        def normalise(payload):
            payload["email"] = payload["email"].lower()


        class CopyFirst(WorkflowEntrypoint):
            async def run(self, event, step):
                data = copy.deepcopy(event.payload)
                normalise(data)
                await step.do("go", lambda: data)
        """,
    ),
    Case(
        "alias-rebound-to-a-copy-before-the-change",
        """
        import copy

        from lambda_workflows import WorkflowEntrypoint


        class Rebound(WorkflowEntrypoint):
            async def run(self, event, step):
                payload = event.payload
                payload = copy.deepcopy(payload)
                payload["seen"] = True
                await step.do("go", lambda: payload)
        """,
    ),
    Case(
        "numbers-from-the-payload-added-to",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Numbers(WorkflowEntrypoint):
            async def run(self, event, step):
                total = event.payload["amount"]
                total += 5
                name = event.payload["name"]
                name += "!"
                await step.do("go", lambda: (total, name))
        """,
    ),
    Case(
        "step-result-changed-locally",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Result(WorkflowEntrypoint):
            async def run(self, event, step):
                user = await step.do("load", lambda: {"name": event.payload["name"]})
                user["greeted"] = True
                await step.do("greet", lambda: user)
        """,
    ),
]
