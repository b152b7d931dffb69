"""WF110 (create in a loop) and WF111 (a user id as instance id), anywhere in a file."""

from __future__ import annotations

from .snippets import lint_module, rules


def test_creating_instances_one_by_one_in_a_loop_is_wf110() -> None:
    # Cloudflare's 🔴: `for (let instance of instances) await env.MY_WORKFLOW.create(...)`.
    source = """
        def start_all(env, instances):
            for instance in instances:
                env.MY_WORKFLOW.create(id=instance["id"], params=instance["params"])
        """
    findings = lint_module(source)
    assert rules(findings) == ["WF110"]
    assert findings[0].line == 4
    assert "create_batch" in findings[0].message


def test_create_in_a_comprehension_is_wf110() -> None:
    source = """
        def start_all(orders_workflow, ids):
            return [orders_workflow.create(id=i) for i in ids]
        """
    assert rules(lint_module(source)) == ["WF110"]


def test_create_batch_is_fine() -> None:
    # Cloudflare's ✅: `await env.MY_WORKFLOW.createBatch(instances)`.
    source = """
        def start_all(env, instances):
            for chunk in (instances[:100], instances[100:]):
                env.MY_WORKFLOW.create_batch(chunk)
            return env.MY_WORKFLOW.create(id="one-off")
        """
    assert rules(lint_module(source)) == []


def test_create_in_a_loop_inside_run_is_wf110_too() -> None:
    source = """
        from lambda_workflows import WorkflowEntrypoint

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                def start_children():
                    for child in ("a", "b"):
                        self.env.workflow("child").create(id=child)

                await step.do("start children", start_children)
        """
    assert rules(lint_module(source)) == ["WF110"]


def test_the_user_id_as_instance_id_is_wf111() -> None:
    # Cloudflare's 🔴: `env.MY_WORKFLOW.create({ id: userId, params: payload })`.
    source = """
        def handle(req, env):
            user_id = get_user_id(req)
            return env.MY_WORKFLOW.create(id=user_id, params={})
        """
    findings = lint_module(source)
    assert rules(findings) == ["WF111"]
    assert findings[0].severity == "warning"
    assert "unique" in findings[0].message


def test_entity_ids_in_any_spelling_are_wf111() -> None:
    source = """
        def handle(req, env, my_workflow):
            my_workflow.create(id=req.customer_id)
            my_workflow.create(req["userId"])
            my_workflow.create(id=get_user_id(req))
            my_workflow.create(id=email)
        """
    assert rules(lint_module(source)) == ["WF111"] * 4


def test_unique_ids_are_fine() -> None:
    # Cloudflare's ✅: a transaction id, or the user id with a random suffix.
    source = """
        import uuid

        def handle(req, env):
            instance_id = f"{get_user_id(req)}-{uuid.uuid4().hex[:6]}"
            env.MY_WORKFLOW.create(id=instance_id, params={})
            env.MY_WORKFLOW.create(id=get_transaction_id())
            env.MY_WORKFLOW.create(id=req.order_id)
            env.MY_WORKFLOW.create()
        """
    assert rules(lint_module(source)) == []


def test_create_on_something_that_is_not_a_workflow_client_is_ignored() -> None:
    source = """
        def build(users, table):
            for user in users:
                table.create(id=user.user_id)
        """
    assert rules(lint_module(source)) == []
