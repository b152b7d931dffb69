"""A second round of cases, written after the analyses to check they catch each pattern and
not only the first examples: module state, set order, the event and its parts.
"""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "global-list-appended-by-a-helper",
        """
        from lambda_workflows import WorkflowEntrypoint

        HISTORY = []


        def remember(item):
            HISTORY.append(item)


        class History(WorkflowEntrypoint):
            async def run(self, event, step):
                remember(event.payload["id"])
                await step.do(f"entry {len(HISTORY)}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "global-counter-drives-a-range",
        """
        from lambda_workflows import WorkflowEntrypoint

        retries = 0


        class Ranged(WorkflowEntrypoint):
            async def run(self, event, step):
                global retries
                retries += 1
                for attempt in range(retries):
                    await step.do(f"attempt {attempt}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "class-counter-through-a-classmethod",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Counted(WorkflowEntrypoint):
            count = 0

            @classmethod
            def bump(cls):
                cls.count += 1
                return cls.count

            async def run(self, event, step):
                await step.do(f"run {self.bump()}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "global-cursor-set-inside-a-step",
        """
        from lambda_workflows import WorkflowEntrypoint

        cursor = None


        class Cursor(WorkflowEntrypoint):
            async def run(self, event, step):
                def fetch():
                    global cursor
                    cursor = "next-page"  # expect: WF106
                    return []

                await step.do("fetch page", fetch)
                await step.do(f"fetch {cursor}", lambda: 1)  # expect: WF115
        """,
    ),
    Case(
        "intersection-of-sets",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Common(WorkflowEntrypoint):
            async def run(self, event, step):
                wanted = set(event.payload["wanted"])
                for sku in wanted.intersection(event.payload["stock"]):
                    await step.do(f"reserve {sku}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "dict-keys-difference",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Missing(WorkflowEntrypoint):
            async def run(self, event, step):
                current = await step.do("current", lambda: {"a": 1})
                for key in event.payload["desired"].keys() - current.keys():
                    await step.do(f"add {key}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "set-built-with-add-then-iterated",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Built(WorkflowEntrypoint):
            async def run(self, event, step):
                domains = set()
                for email in event.payload["emails"]:
                    domains.add(email.split("@")[1])
                for domain in domains:
                    await step.do(f"check {domain}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "star-unpacked-set-display",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Star(WorkflowEntrypoint):
            async def run(self, event, step):
                for name in {*event.payload["a"], *event.payload["b"]}:
                    await step.do(f"greet {name}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "dict-comprehension-of-steps-over-a-set",
        """
        from lambda_workflows import WorkflowEntrypoint


        class DictComp(WorkflowEntrypoint):
            async def run(self, event, step):
                ids = set(event.payload["ids"])
                return {i: await step.do(f"load {i}", lambda: 1) for i in ids}  # expect: WF116
        """,
    ),
    Case(
        "order-preserving-dedup-is-fine",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Dedup(WorkflowEntrypoint):
            async def run(self, event, step):
                for email in dict.fromkeys(event.payload["emails"]):
                    await step.do(f"invite {email}", lambda: 1)
        """,
    ),
    Case(
        "enumerate-payload-items-mutated",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Numbered(WorkflowEntrypoint):
            async def run(self, event, step):
                for position, item in enumerate(event.payload["items"]):
                    item["position"] = position  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "payload-or-default-mutated",
        """
        from lambda_workflows import WorkflowEntrypoint


        class OrDefault(WorkflowEntrypoint):
            async def run(self, event, step):
                options = event.payload.get("options") or {}
                options.setdefault("retries", 3)  # expect: WF105
                await step.do("go", lambda: options)
        """,
    ),
    Case(
        "partial-callback-mutates-the-payload",
        """
        import functools

        from lambda_workflows import WorkflowEntrypoint


        def stamp(payload):
            payload["stamped"] = True
            return payload


        class Partial(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do("stamp", functools.partial(stamp, event.payload))  # expect: WF105
        """,
    ),
    Case(
        "lambda-in-map-updates-items",
        """
        from lambda_workflows import WorkflowEntrypoint


        class LambdaMap(WorkflowEntrypoint):
            async def run(self, event, step):
                list(map(lambda line: line.update(done=True), event.payload["lines"]))  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "payload-merged-with-or-equals",
        """
        from lambda_workflows import WorkflowEntrypoint


        class OrEquals(WorkflowEntrypoint):
            async def run(self, event, step):
                event.payload |= {"source": "api"}  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "helper-method-three-deep-through-self",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Deep(WorkflowEntrypoint):
            def _clean(self, order):
                order["lines"].clear()

            def _prepare(self, order):
                self._clean(order)

            def _load(self, evt):
                self._prepare(evt.payload["order"])

            async def run(self, event, step):
                self._load(event)  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "helper-with-the-same-parameter-name-given-a-local-dict",
        """
        from lambda_workflows import WorkflowEntrypoint


        def add_defaults(payload):
            payload.setdefault("currency", "EUR")
            return payload


        class Local(WorkflowEntrypoint):
            async def run(self, event, step):
                payload = {"amount": event.payload["amount"]}
                add_defaults(payload)
                await step.do("charge", lambda: payload)
        """,
    ),
    Case(
        "helper-returns-a-part-that-run-then-changes",
        """
        from lambda_workflows import WorkflowEntrypoint


        def meta_of(evt):
            return evt.payload["meta"]


        class Returned(WorkflowEntrypoint):
            async def run(self, event, step):
                meta = meta_of(event)
                meta["seen"] = True  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "helper-returns-a-copy-that-run-then-changes",
        """
        from lambda_workflows import WorkflowEntrypoint


        def order_of(evt):
            return dict(evt.payload["order"])


        class CopyReturned(WorkflowEntrypoint):
            async def run(self, event, step):
                order = order_of(event)
                order["status"] = "new"
                await step.do("go", lambda: order)
        """,
    ),
    Case(
        "set-held-on-self",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Regions(WorkflowEntrypoint):
            regions = {"us-east-1", "eu-west-1"}

            async def run(self, event, step):
                for region in self.regions:
                    await step.do(f"deploy {region}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "sorted-set-held-on-self",
        """
        from lambda_workflows import WorkflowEntrypoint


        class SortedRegions(WorkflowEntrypoint):
            regions = {"us-east-1", "eu-west-1"}

            async def run(self, event, step):
                for region in sorted(self.regions):
                    await step.do(f"deploy {region}", lambda: 1)
        """,
    ),
    Case(
        "module-level-run-id-in-a-step-name",
        """
        import uuid

        from lambda_workflows import WorkflowEntrypoint

        RUN_ID = uuid.uuid4().hex


        class Tagged(WorkflowEntrypoint):
            async def run(self, event, step):
                await step.do(f"export {RUN_ID}", lambda: 1)  # expect: WF101
        """,
    ),
    Case(
        "reversed-list-of-a-set",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Reversed(WorkflowEntrypoint):
            async def run(self, event, step):
                for name in reversed(list(set(event.payload["names"]))):
                    await step.do(f"undo {name}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "comprehension-updates-payload-items",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Comprehension(WorkflowEntrypoint):
            async def run(self, event, step):
                [item.update(done=True) for item in event.payload["items"]]  # expect: WF105
                await step.do("go", lambda: 1)
        """,
    ),
    Case(
        "string-hash-picks-the-shard",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Sharded(WorkflowEntrypoint):
            async def run(self, event, step):
                user = event.payload["user"]
                await step.do(f"shard {hash(user) % 8}", lambda: 1)  # expect: WF101
        """,
    ),
]
