"""The event changed directly, through aliases, helpers and callbacks (EventMutationError)."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "module-helper-normalises-the-payload",
        """
        from lambda_workflows import WorkflowEntrypoint


        def normalise(payload):
            payload["email"] = payload["email"].strip().lower()
            return payload


        class Signup(WorkflowEntrypoint):
            async def run(self, event, step):
                data = normalise(event.payload)  # expect: WF105
                return await step.do("create user", lambda: data["email"])
        """,
    ),
    Case(
        "method-enriches-the-event",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Enrich(WorkflowEntrypoint):
            def _enrich(self, event):
                event.payload["source"] = "api"

            async def run(self, event, step):
                self._enrich(event)  # expect: WF105
                await step.do("store", lambda: 1)
        """,
    ),
    Case(
        "helper-two-calls-deep-pops-a-secret",
        """
        from lambda_workflows import WorkflowEntrypoint


        def _strip_secrets(data):
            data.pop("password", None)


        def prepare(payload):
            _strip_secrets(payload)
            return payload


        class Register(WorkflowEntrypoint):
            async def run(self, event, step):
                clean = prepare(event.payload)  # expect: WF105
                await step.do("register", lambda: clean)
        """,
    ),
    Case(
        "helper-uses-setattr",
        """
        from lambda_workflows import WorkflowEntrypoint


        def stamp(evt, value):
            setattr(evt, "payload", value)


        class Stamp(WorkflowEntrypoint):
            async def run(self, event, step):
                stamp(event, {"stamped": True})  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "async-helper-sets-a-default",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Validate(WorkflowEntrypoint):
            async def _validate(self, payload):
                payload.setdefault("currency", "EUR")
                return payload

            async def run(self, event, step):
                payload = await self._validate(event.payload)  # expect: WF105
                await step.do("charge", lambda: payload["currency"])
        """,
    ),
    Case(
        "helper-called-with-a-keyword-argument",
        """
        from lambda_workflows import WorkflowEntrypoint


        def tag(*, payload, label):
            payload.setdefault("labels", []).append(label)


        class Tagging(WorkflowEntrypoint):
            async def run(self, event, step):
                tag(payload=event.payload, label="vip")  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "helper-mutates-through-its-own-alias",
        """
        from lambda_workflows import WorkflowEntrypoint


        def mark_seen(evt):
            data = evt.payload
            meta = data["meta"]
            meta["seen"] = True


        class Seen(WorkflowEntrypoint):
            async def run(self, event, step):
                mark_seen(event)  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "helper-called-inside-a-step-callback",
        """
        from lambda_workflows import WorkflowEntrypoint


        def add_total(order):
            order["total"] = sum(line["price"] for line in order["lines"])
            return order


        class Totals(WorkflowEntrypoint):
            async def run(self, event, step):
                return await step.do("total", lambda: add_total(event.payload))  # expect: WF105
        """,
    ),
    Case(
        "mutation-inside-a-step-callback",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Callback(WorkflowEntrypoint):
            async def run(self, event, step):
                async def load():
                    user = {"name": "ann"}
                    event.payload.update(user)  # expect: WF105
                    return user

                await step.do("load user", load)
        """,
    ),
    Case(
        "lambda-callback-appends-to-the-payload",
        """
        from lambda_workflows import WorkflowEntrypoint


        class LambdaAppend(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("log", lambda: event.payload["log"].append("seen"))  # expect: WF105
        """,
    ),
    Case(
        "loop-variable-over-the-payload-items",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Items(WorkflowEntrypoint):
            async def run(self, event, step):
                for item in event.payload["items"]:
                    item["status"] = "queued"  # expect: WF105
                    await step.do(f"queue {item['id']}", lambda: 1)
        """,
    ),
    Case(
        "get-with-a-default-then-changed",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Meta(WorkflowEntrypoint):
            async def run(self, event, step):
                meta = event.payload.get("meta", {})
                meta["retries"] = 0  # expect: WF105
                await step.do("go", lambda: meta)
        """,
    ),
    Case(
        "nested-append-three-levels-down",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Deep(WorkflowEntrypoint):
            async def run(self, event, step):
                event.payload["order"]["lines"][0]["tags"].append("gift")  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "plus-equals-on-a-nested-list",
        """
        from lambda_workflows import WorkflowEntrypoint


        class PlusEquals(WorkflowEntrypoint):
            async def run(self, event, step):
                event.payload["recipients"] += ["ops@example.com"]  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "plus-equals-on-an-alias-of-a-list",
        """
        from lambda_workflows import WorkflowEntrypoint


        class AliasPlus(WorkflowEntrypoint):
            async def run(self, event, step):
                recipients = event.payload["recipients"]
                recipients += ["ops@example.com"]  # expect: WF105
                await step.do("go", lambda: recipients)
        """,
    ),
    Case(
        "del-through-an-alias",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Delete(WorkflowEntrypoint):
            async def run(self, event, step):
                p = event.payload
                del p["token"]  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "setattr-on-the-event",
        """
        from lambda_workflows import WorkflowEntrypoint


        class SetAttr(WorkflowEntrypoint):
            async def run(self, event, step):
                setattr(event, "payload", {"replaced": True})  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "nested-function-marks-each-item",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Nested(WorkflowEntrypoint):
            async def run(self, event, step):
                def mark(entry):
                    entry["done"] = False

                for entry in event.payload["entries"]:
                    mark(entry)  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "shuffle-the-payload-list",
        """
        import random

        from lambda_workflows import WorkflowEntrypoint


        class Shuffle(WorkflowEntrypoint):
            async def run(self, event, step):
                random.shuffle(event.payload["candidates"])  # expect: WF102, WF105
                await step.do("pick", lambda: 1)
        """,
    ),
    Case(
        "sort-in-place",
        """
        from lambda_workflows import WorkflowEntrypoint


        class SortInPlace(WorkflowEntrypoint):
            async def run(self, event, step):
                items = event.payload["items"]
                items.sort(key=lambda item: item["priority"])  # expect: WF105
                for item in items:
                    await step.do(f"item {item['id']}", lambda: 1)
        """,
    ),
    Case(
        "shallow-copy-then-nested-change",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Shallow(WorkflowEntrypoint):
            async def run(self, event, step):
                order = dict(event.payload)
                order["lines"].append({"sku": "gift-wrap"})  # expect: WF105
                await step.do("go", lambda: order)
        """,
    ),
    Case(
        "operator-setitem",
        """
        import operator

        from lambda_workflows import WorkflowEntrypoint


        class Operator(WorkflowEntrypoint):
            async def run(self, event, step):
                operator.setitem(event.payload, "seen", True)  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "map-with-a-mutating-function",
        """
        from lambda_workflows import WorkflowEntrypoint


        def reset(line):
            line.clear()


        class Mapped(WorkflowEntrypoint):
            async def run(self, event, step):
                list(map(reset, event.payload["lines"]))  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "payload-dict-update-via-the-unbound-method",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Unbound(WorkflowEntrypoint):
            async def run(self, event, step):
                dict.update(event.payload, {"x": 1})  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "walrus-alias",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Walrus(WorkflowEntrypoint):
            async def run(self, event, step):
                if (address := event.payload.get("address")) is not None:
                    address["country"] = address.get("country", "NL")  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "items-loop-values-mutated",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Values(WorkflowEntrypoint):
            async def run(self, event, step):
                for name, settings in event.payload["services"].items():
                    settings["enabled"] = True  # expect: WF105
                await step.do("apply", lambda: 1)
        """,
    ),
]
