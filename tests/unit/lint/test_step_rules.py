"""WF104 (not awaited), WF105 (event mutated), WF106 (state mutated in a step), WF107 (race)."""

from __future__ import annotations

import pytest

from .snippets import body_line, lint_run, rules, run_rules

# --- WF104: step not awaited --------------------------------------------------------------


def test_a_step_stored_and_never_awaited_is_wf104() -> None:
    findings = lint_run('bad_issues = step.do("fetch issues", lambda: [])')
    assert rules(findings) == ["WF104"]
    assert "await step.do" in findings[0].message


@pytest.mark.parametrize(
    "statement",
    [
        'step.do("fire and forget", lambda: 1)',
        'step.sleep("nap", "1 hour")',
        'step.sleep_until("nap", 0)',
        'step.wait_for_event("approval", type="approved")',
        'step.run_workflow("pay", workflow="charge")',
    ],
)
def test_a_bare_step_call_is_wf104(statement: str) -> None:
    assert run_rules(statement) == ["WF104"]


@pytest.mark.parametrize(
    "body",
    [
        'await step.do("a", lambda: 1)',
        'value = (await step.do("a", lambda: {"k": 1}))["k"]',
        'a, b = await asyncio.gather(step.do("a", lambda: 1), step.do("b", lambda: 2))',
        'results = await asyncio.gather(*[step.do(f"n {i}", lambda: 1) for i in range(3)])',
        'task = asyncio.create_task(step.do("a", lambda: 1))\nawait task',
        'pending = step.do("a", lambda: 1)\nvalue = await pending',
        'tasks = []\ntasks.append(step.do("a", lambda: 1))\nawait asyncio.gather(*tasks)',
        'first = step.do("a", lambda: 1)\nboth = [first]\nawait asyncio.gather(*both)',
        'async with asyncio.TaskGroup() as group:\n    group.create_task(step.do("a", lambda: 1))',
        'return await step.do("a", lambda: 1)',
    ],
)
def test_awaited_gathered_or_task_wrapped_steps_are_fine(body: str) -> None:
    assert run_rules(body) == []


def test_a_nested_step_inside_a_callback_must_be_awaited_too() -> None:
    findings = lint_run(
        """
        async def outer():
            step.do("inner", lambda: 1)

        await step.do("outer", outer)
        """
    )
    assert rules(findings) == ["WF104"]
    assert body_line(findings) == 2


# --- WF105: event mutated -------------------------------------------------------------------


@pytest.mark.parametrize(
    "statement",
    [
        "event.payload = {}",
        'event.payload["user"] = "bob"',
        'event.payload["a"]["b"] += 1',
        'del event.payload["user"]',
        'event.payload.update({"a": 1})',
        'event.payload["items"].append(1)',
        'setattr(event, "payload", {})',
        'payload = event.payload\npayload["user"] = "bob"',
    ],
)
def test_changing_the_event_is_wf105(statement: str) -> None:
    assert run_rules(statement) == ["WF105"]


def test_changing_the_event_inside_a_step_is_wf105_too() -> None:
    # Cloudflare's 🔴: the step callback assigns event.payload.
    findings = lint_run(
        """
        async def load():
            user_data = self.env.KV.get(event.payload["user"])
            event.payload = user_data

        await step.do("bad step that mutates the incoming event", load)
        """
    )
    assert rules(findings) == ["WF105"]
    assert body_line(findings) == 3


def test_reading_and_copying_the_event_is_fine() -> None:
    assert (
        run_rules(
            """
            user = event.payload["user"]
            copy = dict(event.payload)
            copy["user"] = "bob"
            items = list(event.payload.get("items", []))
            items.append(1)
            """
        )
        == []
    )


# --- WF106: state changed inside a step -----------------------------------------------------


def test_appending_to_a_list_of_run_inside_a_step_is_wf106() -> None:
    # Cloudflare's 🔴: imageList.push(httpCat) inside step callbacks.
    findings = lint_run(
        """
        image_list = []

        async def first():
            image_list.append(self.env.KV.get("cutest-http-cat-1"))

        await step.do("get first cutest cat", first)
        await step.do("second", lambda: image_list.append("x"))
        """
    )
    assert rules(findings) == ["WF106", "WF106"]
    assert "image_list" in findings[0].message


@pytest.mark.parametrize(
    "callback_body",
    [
        'results["cat"] = 1',
        "self.count = 1",
        "self.seen[1] = 2",
        "nonlocal total\ntotal = total + 1",
        "results.update({1: 2})",
    ],
)
def test_changing_state_outside_the_step_from_a_callback_is_wf106(callback_body: str) -> None:
    callback = "\n".join(f"    {line}" for line in callback_body.splitlines())
    body = f'results = {{}}\ntotal = 0\n\ndef change():\n{callback}\n\nawait step.do("s", change)'
    assert run_rules(body) == ["WF106"]


def test_a_callback_using_its_own_variables_is_fine() -> None:
    assert (
        run_rules(
            """
            image_list = await asyncio.gather(step.do("a", lambda: 1), step.do("b", lambda: 2))

            async def collect():
                found = []
                for image in image_list:
                    found.append(image)
                return found

            collected = await step.do("collect", collect)
            collected.append(3)
            """
        )
        == []
    )


def test_a_callback_parameter_that_shadows_a_run_variable_is_local() -> None:
    assert (
        run_rules(
            """
            items = []

            def add(ctx, items=None):
                items = []
                items.append(ctx)
                return items

            await step.do("add", add)
            """
        )
        == []
    )


# --- WF107: race outside a step ---------------------------------------------------------------


def test_first_completed_between_steps_outside_a_step_is_wf107() -> None:
    findings = lint_run(
        """
        done, pending = await asyncio.wait(
            [asyncio.ensure_future(step.do("a", lambda: 1)),
             asyncio.ensure_future(step.do("b", lambda: 2))],
            return_when=asyncio.FIRST_COMPLETED,
        )
        """
    )
    assert rules(findings) == ["WF107"]


@pytest.mark.parametrize(
    "statement",
    [
        'async for first in asyncio.as_completed([step.do("a", lambda: 1)]):\n    pass',
        'value = await asyncio.wait_for(step.do("a", lambda: 1), 5)',
        'async with asyncio.timeout(5):\n    await step.do("a", lambda: 1)',
        'done, _ = await asyncio.wait([asyncio.ensure_future(step.do("a", lambda: 1))], timeout=1)',
    ],
)
def test_races_against_steps_or_timers_outside_a_step_are_wf107(statement: str) -> None:
    assert run_rules(statement) == ["WF107"]


def test_a_race_inside_a_step_is_fine() -> None:
    # Cloudflare's ✅: Promise.race wrapped in step.do.
    assert (
        run_rules(
            """
            async def race():
                done, pending = await asyncio.wait(
                    [asyncio.ensure_future(step.do("a", lambda: 1)),
                     asyncio.ensure_future(step.do("b", lambda: 2))],
                    return_when=asyncio.FIRST_COMPLETED,
                )
                return done.pop().result()

            winner = await step.do("race", race)
            """
        )
        == []
    )


def test_waiting_for_all_steps_is_not_a_race() -> None:
    body = 'done, _ = await asyncio.wait([asyncio.ensure_future(step.do("a", lambda: 1))])'
    assert run_rules(body) == []
