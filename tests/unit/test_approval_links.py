"""``step.wait_for_event(..., link=True)`` on the test kit, on both backends: the workflow gets
the link before it waits, the link delivers that one event once, while the wait is pending."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from lambda_workflows.engine.links import LinkRefused
from lambda_workflows.testing import WorkflowTestEnv
from tests.functional.workflows_under_test import Approves

from .backends import EnvFactory

pytestmark = pytest.mark.backends("memory", "aws")


def waiting(make_env: EnvFactory, id: str = "a-1") -> tuple[WorkflowTestEnv, str]:
    env = make_env({"approvals": Approves})
    env.create("approvals", id=id)
    env.run_until_idle()
    url = env.get("approvals", id).step_output("mail the link")["output"]
    return env, str(url)


def events_of(env: WorkflowTestEnv, id: str = "a-1") -> int:
    return len(env.store.load(env.get("approvals", id).ref).events)


def refusal(call: Any) -> LinkRefused:
    with pytest.raises(LinkRefused) as caught:
        call()
    return caught.value


def test_the_link_delivers_its_event_with_the_payload(make_env: EnvFactory) -> None:
    # GIVEN an instance waiting on its wait, the link mailed from a step
    env, url = waiting(make_env)
    assert "/links/l1." in url

    # WHEN the link is opened (nothing sent), then used with a payload
    assert env.open_link(url) == {
        "workflow": "approvals",
        "instance": "a-1",
        "wait": "approval",
        "type": "approved",
    }
    assert events_of(env) == 0
    env.use_link(url, {"by": "ana"})
    env.run_until_idle()

    # THEN the wait got it, and every replay minted the same URL
    output = env.get("approvals", "a-1").status().output
    assert output == {"mailed": url, "same_url": True, "payload": {"by": "ana"}}


def test_a_second_use_is_refused_and_writes_nothing(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)
    env.use_link(url)
    before = events_of(env)

    error = refusal(lambda: env.use_link(url, {"again": True}))

    assert (error.status, error.code) == (409, "link_used")
    assert refusal(lambda: env.open_link(url)).code == "link_used"
    assert events_of(env) == before == 1


def test_concurrent_uses_send_one_event(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)
    outcomes: list[str] = []
    start = threading.Barrier(6)

    def use() -> None:
        start.wait()
        try:
            env.use_link(url)
            outcomes.append("sent")
        except LinkRefused as refused:
            outcomes.append(refused.code)

    threads = [threading.Thread(target=use) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["link_used"] * 5 + ["sent"]
    assert events_of(env) == 1


def test_a_tampered_link_is_refused(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)
    tampered = url[:-3] + ("AAA" if not url.endswith("AAA") else "BBB")

    error = refusal(lambda: env.use_link(tampered))

    assert (error.status, error.code) == (403, "link_invalid")
    assert events_of(env) == 0


def test_a_link_past_its_waits_timeout_is_refused(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)

    # WHEN the wait's hour has passed (before the runner recorded the timeout, and after)
    env.clock.advance("61 minutes")
    assert refusal(lambda: env.use_link(url)).code == "link_expired"
    env.run_until_idle()
    error = refusal(lambda: env.use_link(url))

    # THEN it is refused as expired, and the wait timed out with no event
    assert (error.status, error.code) == (410, "link_expired")
    assert env.get("approvals", "a-1").status().output["timed_out"] is True
    assert events_of(env) == 0


def test_a_restart_invalidates_the_links_of_the_run_before(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)

    env.get("approvals", "a-1").restart()
    env.run_until_idle()

    error = refusal(lambda: env.use_link(url))
    assert (error.status, error.code) == (410, "link_stale")
    fresh = env.get("approvals", "a-1").step_output("mail the link")["output"]
    assert fresh != url
    env.use_link(fresh)  # the new run's link works


def test_terminating_the_instance_revokes_its_link(make_env: EnvFactory) -> None:
    env, url = waiting(make_env)

    env.get("approvals", "a-1").terminate()

    assert refusal(lambda: env.open_link(url)).code == "link_expired"
    assert events_of(env) == 0


def test_a_link_of_one_instance_never_reaches_another(make_env: EnvFactory) -> None:
    env = make_env({"approvals": Approves})
    for id in ("a-1", "a-2"):
        env.create("approvals", id=id)
    env.run_until_idle()
    url_1 = env.get("approvals", "a-1").step_output("mail the link")["output"]

    env.use_link(url_1)
    env.run_until_idle()

    assert env.get("approvals", "a-1").status().status == "complete"
    assert env.get("approvals", "a-2").status().status == "waiting"
    assert events_of(env, "a-2") == 0
