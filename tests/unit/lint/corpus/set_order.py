"""Steps named (or fed) while iterating a set: string hashing changes the order per process."""

from __future__ import annotations

from . import Case

CASES = [
    Case(
        "for-over-a-set-literal",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Deploy(WorkflowEntrypoint):
            async def run(self, event, step):
                for region in {"us-east-1", "eu-west-1", "ap-south-1"}:
                    await step.do(f"deploy to {region}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "for-over-set-of-the-payload",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Tags(WorkflowEntrypoint):
            async def run(self, event, step):
                for tag in set(event.payload["tags"]):
                    await step.do(f"index tag {tag}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "set-stored-in-a-variable-first",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Dedup(WorkflowEntrypoint):
            async def run(self, event, step):
                emails = set(event.payload["emails"])
                emails.discard("")
                for email in emails:
                    await step.do(f"invite {email}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "frozenset-of-step-results",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Frozen(WorkflowEntrypoint):
            async def run(self, event, step):
                users = await step.do("list users", lambda: ["ann", "bob", "ann"])
                for user in frozenset(users):
                    await step.do(f"notify {user}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "set-comprehension",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Owners(WorkflowEntrypoint):
            async def run(self, event, step):
                owners = {doc["owner"] for doc in event.payload["docs"]}
                for owner in owners:
                    await step.do(f"email {owner}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "union-of-two-sets",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Union(WorkflowEntrypoint):
            async def run(self, event, step):
                admins = set(event.payload["admins"])
                editors = set(event.payload["editors"])
                for person in admins | editors:
                    await step.do(f"grant {person}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "keys-of-a-dict-built-from-a-set",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Keys(WorkflowEntrypoint):
            async def run(self, event, step):
                unique = dict.fromkeys(set(event.payload["skus"]), 0)
                for sku in unique.keys():
                    await step.do(f"restock {sku}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "set-pop-until-empty",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Drain(WorkflowEntrypoint):
            async def run(self, event, step):
                pending = set(event.payload["jobs"])
                while pending:
                    job = pending.pop()
                    await step.do(f"run job {job}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "module-constant-set",
        """
        from lambda_workflows import WorkflowEntrypoint

        CHANNELS = {"email", "sms", "push"}


        class Broadcast(WorkflowEntrypoint):
            async def run(self, event, step):
                for channel in CHANNELS:
                    await step.do(f"send via {channel}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "gathered-steps-over-a-set",
        """
        import asyncio

        from lambda_workflows import WorkflowEntrypoint


        class Gather(WorkflowEntrypoint):
            async def run(self, event, step):
                ids = set(event.payload["ids"])
                return await asyncio.gather(
                    *[step.do(f"fetch {i}", lambda: 1) for i in ids]  # expect: WF116
                )
        """,
    ),
    Case(
        "joined-set-in-a-step-name",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Joined(WorkflowEntrypoint):
            async def run(self, event, step):
                tags = set(event.payload["tags"])
                await step.do(f"tag {','.join(tags)}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "enumerate-a-set",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Enumerated(WorkflowEntrypoint):
            async def run(self, event, step):
                for index, name in enumerate(set(event.payload["names"])):
                    await step.do(f"part {index}", lambda: name)  # expect: WF116
        """,
    ),
    Case(
        "list-of-a-set-keeps-its-order",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Listed(WorkflowEntrypoint):
            async def run(self, event, step):
                hosts = list(set(event.payload["hosts"]))
                for host in hosts:
                    await step.do(f"ping {host}", lambda: 1)  # expect: WF116
        """,
    ),
    Case(
        "set-difference-in-a-helper-taking-the-step",
        """
        from lambda_workflows import WorkflowEntrypoint


        async def sync_missing(step, wanted, present):
            for name in set(wanted) - set(present):
                await step.do(f"create {name}", lambda: 1)  # expect: WF116


        class Sync(WorkflowEntrypoint):
            async def run(self, event, step):
                present = await step.do("list present", lambda: ["a"])
                await sync_missing(step, event.payload["wanted"], present)
        """,
    ),
    Case(
        "same-step-name-but-the-callback-takes-the-element",
        """
        import functools

        from lambda_workflows import WorkflowEntrypoint


        def handle(user):
            return user


        class Pairs(WorkflowEntrypoint):
            async def run(self, event, step):
                results = []
                for user in set(event.payload["users"]):
                    results.append(await step.do("handle user", functools.partial(handle, user)))  # expect: WF116
                return results
        """,
    ),
    # --- near misses ----------------------------------------------------------------------
    Case(
        "sorted-set",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Sorted(WorkflowEntrypoint):
            async def run(self, event, step):
                for tag in sorted(set(event.payload["tags"])):
                    await step.do(f"index tag {tag}", lambda: 1)
        """,
    ),
    Case(
        "set-sorted-into-the-same-variable",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Resorted(WorkflowEntrypoint):
            async def run(self, event, step):
                emails = set(event.payload["emails"])
                emails = sorted(emails)
                for email in emails:
                    await step.do(f"invite {email}", lambda: 1)
        """,
    ),
    Case(
        "sorted-union",
        """
        from lambda_workflows import WorkflowEntrypoint


        class SortedUnion(WorkflowEntrypoint):
            async def run(self, event, step):
                people = sorted(set(event.payload["a"]) | set(event.payload["b"]))
                for person in people:
                    await step.do(f"grant {person}", lambda: 1)
        """,
    ),
    Case(
        "set-used-for-membership-only",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Membership(WorkflowEntrypoint):
            async def run(self, event, step):
                seen = set()
                for item in event.payload["items"]:
                    if item in seen:
                        continue
                    seen.add(item)
                    await step.do(f"item {item}", lambda: 1)
        """,
    ),
    Case(
        "size-of-a-set-in-a-name",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Count(WorkflowEntrypoint):
            async def run(self, event, step):
                unique = set(event.payload["ids"])
                await step.do(f"process {len(unique)} ids", lambda: sorted(unique))
        """,
    ),
    Case(
        "dict-and-list-iteration",
        """
        from lambda_workflows import WorkflowEntrypoint

        PRICES = {"basic": 5, "pro": 10}


        class Ordered(WorkflowEntrypoint):
            async def run(self, event, step):
                for plan, price in PRICES.items():
                    await step.do(f"price {plan} {price}", lambda: 1)
                for item in event.payload["items"]:
                    await step.do(f"item {item}", lambda: 1)
        """,
    ),
    Case(
        "set-of-small-integers",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Shards(WorkflowEntrypoint):
            async def run(self, event, step):
                for shard in {0, 1, 2, 3}:
                    await step.do(f"shard {shard}", lambda: 1)
        """,
    ),
    Case(
        "set-iterated-inside-a-step",
        """
        from lambda_workflows import WorkflowEntrypoint


        class Inside(WorkflowEntrypoint):
            async def run(self, event, step):
                async def collect():
                    return [tag.upper() for tag in set(event.payload["tags"])]

                return await step.do("collect tags", collect)
        """,
    ),
]
