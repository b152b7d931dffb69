"""WF108 (two services in one step) and WF109 (a step returning a large value)."""

from __future__ import annotations

import pytest

from .snippets import body_line, lint_module, lint_run, rules, run_rules

# --- WF108: two services in one step -------------------------------------------------------


def test_kv_and_http_cat_in_one_step_is_wf108() -> None:
    # Cloudflare's 🔴: KV read and fetch(http.cat) in one step.
    findings = lint_run(
        """
        async def cat_and_image():
            http_cat = self.env.KV.get("cutest-http-cat")
            return self.env.HTTP_CAT.fetch(http_cat)

        image = await step.do("get cutest cat from KV", cat_and_image)
        """
    )
    assert rules(findings) == ["WF108"]
    assert findings[0].severity == "warning"
    assert body_line(findings) == 3
    assert "self.env.KV" in findings[0].message
    assert "self.env.HTTP_CAT" in findings[0].message


@pytest.mark.parametrize(
    "callback_body",
    [
        'cat = self.env.KV.get("c")\nreturn requests.get(f"https://http.cat/{cat}").status_code',
        'boto3.client("s3").get_object(Bucket="b", Key="k")\n'
        'boto3.client("sqs").send_message(QueueUrl="q", MessageBody="m")',
        'requests.get("https://a.example.com/x")\nhttpx.get("https://b.example.com/y")',
    ],
)
def test_two_different_services_in_one_step_are_wf108(callback_body: str) -> None:
    callback = "\n".join(f"    {line}" for line in callback_body.splitlines())
    assert run_rules(f'def both():\n{callback}\n\nawait step.do("both", both)') == ["WF108"]


def test_one_step_per_service_is_fine() -> None:
    # Cloudflare's ✅: one step for KV, one for http.cat.
    assert (
        run_rules(
            """
            http_cat = await step.do("get cutest cat", lambda: self.env.KV.get("cutest-http-cat"))
            image = await step.do("fetch image", lambda: self.env.HTTP_CAT.fetch(http_cat))
            """
        )
        == []
    )


def test_check_then_act_on_the_same_service_is_one_service() -> None:
    # Cloudflare's idempotent charge: a GET then a POST to the payment processor.
    assert (
        run_rules(
            """
            async def charge():
                url = "https://payment.processor/subscriptions/1"
                if requests.get(url).json()["charged"]:
                    return None
                return requests.post(url, json={"amount": 10.0}).status_code

            await step.do("charge", charge)
            """
        )
        == []
    )


def test_storing_the_steps_own_output_does_not_count_as_a_second_service() -> None:
    # Cloudflare's ✅ for large results: fetch, put into R2, return a reference.
    assert (
        run_rules(
            """
            async def fetch_and_store():
                response = self.env.DATASET_API.get("https://api.example.com/large-dataset")
                self.env.BUCKET.put("dataset-123", response.text)
                return {"key": "dataset-123"}

            ref = await step.do("fetch and store", fetch_and_store)
            """
        )
        == []
    )


def test_nested_steps_count_as_their_own_steps() -> None:
    assert (
        run_rules(
            """
            async def outer():
                a = await step.do("kv", lambda: self.env.KV.get("a"))
                return await step.do("cat", lambda: self.env.HTTP_CAT.fetch(a))

            await step.do("outer", outer)
            """
        )
        == []
    )


def test_module_level_upper_case_bindings_are_services() -> None:
    source = """
        from lambda_workflows import WorkflowEntrypoint
        from fakes import KV, HTTP_CAT

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                def both():
                    return HTTP_CAT.fetch(KV.get("cat"))

                await step.do("both", both)
        """
    assert rules(lint_module(source)) == ["WF108"]


def test_module_level_loggers_locks_and_patterns_are_not_services() -> None:
    source = """
        import logging
        import re
        from lambda_workflows import WorkflowEntrypoint

        LOGGER = logging.getLogger(__name__)
        PATTERN = re.compile("cat-[0-9]+")

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                def read():
                    value = self.env.KV.get("cat")
                    LOGGER.info("read %s", value)
                    return PATTERN.match(value) is not None

                await step.do("read", read)
        """
    assert rules(lint_module(source)) == []


# --- WF109: large step results ------------------------------------------------------------


def test_returning_the_json_body_of_an_http_call_is_wf109() -> None:
    # Cloudflare's 🔴: `return await response.json()` from "fetch large dataset".
    findings = lint_run(
        """
        async def fetch_large():
            response = requests.get("https://api.example.com/large-dataset")
            return response.json()

        large = await step.do("fetch large dataset", fetch_large)
        """
    )
    assert rules(findings) == ["WF109"]
    assert findings[0].severity == "warning"
    assert body_line(findings) == 3
    assert "1 MiB" in findings[0].message


@pytest.mark.parametrize(
    "callback",
    [
        'lambda: requests.get("https://api.example.com/data")',
        'lambda: requests.get("https://api.example.com/data").content',
        'lambda: httpx.get("https://api.example.com/data").text',
        'lambda: self.env.API.get("https://api.example.com/data").json()',
        'lambda: boto3.client("s3").get_object(Bucket="b", Key="k")["Body"].read()',
    ],
)
def test_returning_a_whole_response_or_body_is_wf109(callback: str) -> None:
    assert run_rules(f'data = await step.do("fetch", {callback})') == ["WF109"]


def test_a_url_held_in_a_module_constant_counts_as_http() -> None:
    source = """
        from lambda_workflows import WorkflowEntrypoint

        DATASET_URL = "https://api.example.com/large-dataset"

        class W(WorkflowEntrypoint):
            async def run(self, event, step):
                async def fetch():
                    response = self.env.DATASET_API.get(DATASET_URL)
                    return response.json()

                return await step.do("fetch", fetch)
        """
    assert rules(lint_module(source)) == ["WF109"]


@pytest.mark.parametrize(
    "callback",
    [
        'lambda: requests.get("https://api.example.com/data").status_code',
        'lambda: len(requests.get("https://api.example.com/data").content)',
        'lambda: summarize(requests.get("https://api.example.com/data").json())',
        'lambda: self.env.HTTP_CAT.fetch("418")',
        'lambda: {"key": "dataset-123"}',
    ],
)
def test_small_or_derived_results_are_fine(callback: str) -> None:
    assert run_rules(f'data = await step.do("fetch", {callback})') == []
