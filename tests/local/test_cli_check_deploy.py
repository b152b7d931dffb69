"""``lambda-workflows check-deploy`` against a running ``lambda-workflows dev``: the instances in
flight there, replayed with the local code (``WORKFLOWS`` here), as a table and an exit status."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

from lambda_workflows.cli import check_deploy, main
from lambda_workflows.cli.console import Console
from lambda_workflows.local.runtime import LocalRuntime
from lambda_workflows.registry import load_workflows
from lambda_workflows.remote import HttpApi

from . import deploy_code
from .devserver import serving, until_status
from .test_cli import nothing_listens


@dataclass
class Ran:
    code: int
    out: str
    err: str


@contextmanager
def deployed_stack() -> Iterator[str]:
    """``lambda-workflows dev`` running the deployed code, on a free port: its URL."""
    runtime = LocalRuntime(load_workflows(deploy_code.DEPLOYED), out=lambda line: None)
    with serving(runtime) as running:
        yield running.url


@pytest.fixture(scope="module")
def stack() -> Iterator[str]:
    """Three instances in flight (orders o-1 and o-2, shipping s-1, each waiting for an
    event) and one finished (orders o-done), all created on version 1."""
    with deployed_stack() as url:
        api = HttpApi(url)
        for workflow, instance_id in [
            ("orders", "o-1"),
            ("orders", "o-2"),
            ("shipping", "s-1"),
            ("orders", "o-done"),
        ]:
            api.request("POST", f"/workflows/{workflow}/instances", {"instance_id": instance_id})
            until_status(api, workflow, instance_id, "waiting")
        api.request("POST", "/workflows/orders/instances/o-done/events/shipped", {"payload": 1})
        until_status(api, "orders", "o-done", "complete")
        yield url


def check(local_code: str, *argv: str, url: str, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """``lambda-workflows check-deploy --url URL argv...`` with ``WORKFLOWS=local_code`` here."""
    monkeypatch.setenv("WORKFLOWS", local_code)
    out, err = io.StringIO(), io.StringIO()
    code = main(["check-deploy", "--url", url, *argv], console=Console(out, err))
    return Ran(code, out.getvalue(), err.getvalue())


def test_a_step_added_after_the_last_is_compatible_and_reordered_steps_diverge_exit_1(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN pages of one instance, so every listing goes through its cursors
    monkeypatch.setattr(check_deploy, "PAGE_SIZE", 1)
    # WHEN the local code adds a step to orders and swaps shipping's first two (version 2,
    # version 1 not kept)
    ran = check(deploy_code.CHANGED, url=stack, monkeypatch=monkeypatch)
    # THEN each instance in flight has its row (the finished one none), and the exit is 1
    assert ran.out.splitlines() == [
        "INSTANCE      VERSION  RESULT",
        "orders/o-1    1        compatible",
        "orders/o-2    1        compatible",
        "shipping/s-1  1        diverges at step 1 (recorded step.do('pack') vs new "
        "step.do('label'))",
    ]
    assert ran.code == 1
    assert "checked 3/3" in ran.err
    assert "1 of 3 instance(s) would not replay" in ran.err


def test_every_page_of_a_long_history_is_replayed(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an instance in flight whose history takes several pages of the API (120 entries
    # of ~9 KB), and local code that renames its 60th and last step
    runtime = LocalRuntime(load_workflows(deploy_code.CHATTY), out=lambda line: None)
    with serving(runtime) as running:
        api = HttpApi(running.url)
        api.request("POST", "/workflows/chatty/instances", {"instance_id": "c-1"})
        until_status(api, "chatty", "c-1", "waiting")
        history = api.request("GET", "/workflows/chatty/instances/c-1/history").body
        assert "cursor" in history and len(history["entries"]) < 120
        # WHEN the instance is checked
        ran = check(deploy_code.CHATTY_CHANGED, "--json", url=running.url, monkeypatch=monkeypatch)
    # THEN it diverges at call #60, which only its history's last page holds (the first page
    # alone would replay as a history cut short: compatible)
    assert ran.code == 1, ran.err
    [checked] = json.loads(ran.out)["instances"]
    assert checked["divergence"]["position"] == 60
    assert checked["divergence"]["recorded"] == {"name": "talk 59", "kind": "do"}


def test_the_old_class_pinned_as_name_at_1_replays_its_instances_exit_0(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = check(deploy_code.CHANGED_AND_PINNED, url=stack, monkeypatch=monkeypatch)
    assert ran.out.splitlines() == [
        "INSTANCE      VERSION  RESULT",
        "orders/o-1    1        compatible",
        "orders/o-2    1        compatible",
        "shipping/s-1  1        compatible",
    ]
    assert ran.code == 0, ran.err


def test_workflow_checks_only_that_workflows_instances(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = check(deploy_code.CHANGED, "--workflow", "orders", url=stack, monkeypatch=monkeypatch)
    assert ran.code == 0, ran.err
    assert [line.split()[0] for line in ran.out.splitlines()] == [
        "INSTANCE",
        "orders/o-1",
        "orders/o-2",
    ]


def test_json_gives_each_instances_divergence_and_the_verdict(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = check(
        deploy_code.CHANGED, "--json", "--concurrency", "1", url=stack, monkeypatch=monkeypatch
    )
    assert ran.code == 1
    answer = json.loads(ran.out)
    assert answer["compatible"] is False
    shipping = answer["instances"][2]
    assert (shipping["workflow"], shipping["id"], shipping["version"]) == ("shipping", "s-1", "1")
    assert shipping["replayed_with"] == "2" and shipping["compatible"] is False
    divergence = shipping["divergence"]
    assert divergence["position"] == 1
    assert divergence["recorded"] == {"name": "pack", "kind": "do"}
    assert divergence["replayed"] == {"name": "label", "kind": "do"}
    assert "shipping@1" in divergence["hint"]
    assert [i["compatible"] for i in answer["instances"][:2]] == [True, True]


def test_a_workflow_of_the_stack_not_registered_here_fails_its_instances(
    stack: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = check(f"orders={deploy_code.MODULE}:Orders", url=stack, monkeypatch=monkeypatch)
    assert ran.code == 1
    assert "shipping/s-1  1        workflow not registered here" in ran.out.splitlines()


@pytest.mark.parametrize(
    ("local_code", "argv", "said"),
    [
        ("", [], "no workflows are registered"),
        (deploy_code.CHANGED, ["--workflow", "billing"], "no workflow 'billing' is registered"),
        (deploy_code.CHANGED, ["--concurrency", "0"], None),
    ],
)
def test_nothing_registered_an_unknown_workflow_or_a_bad_option_exits_2(
    stack: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    local_code: str,
    argv: list[str],
    said: str | None,
) -> None:
    try:
        ran = check(local_code, *argv, url=stack, monkeypatch=monkeypatch)
    except SystemExit as exc:  # argparse refuses the option itself
        assert exc.code == 2
        assert "--concurrency" in capsys.readouterr().err
        return
    assert ran.code == 2 and ran.out == ""
    assert said is not None and said in ran.err


def test_an_api_that_does_not_answer_exits_2(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = check(deploy_code.CHANGED, url=nothing_listens(), monkeypatch=monkeypatch)
    assert ran.code == 2
    assert "cannot reach" in ran.err and ran.out == ""
