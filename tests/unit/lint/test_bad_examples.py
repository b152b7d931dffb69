"""Each 🔴 example of the rules of Workflows, ported to :mod:`examples`, is caught by its rule.

Each test lints one example module with suppression comments disabled (``--no-ignore``) and
checks that the bad construct is reported with the expected rule, and that the module reports
nothing else.
"""

from __future__ import annotations

from lambda_workflows.lint import Finding, lint_paths

from .examples_index import example_path, line_of, marked


def _no_ignore(module: str) -> list[Finding]:
    return lint_paths([example_path(module)], honor_ignores=False, jobs=1)


def _found(module: str) -> set[tuple[int, str]]:
    return {(finding.line, finding.rule) for finding in _no_ignore(module)}


def test_bad_granular_steps_kv_and_http_cat_in_one_step_is_wf108() -> None:
    path = example_path("granular_steps")
    bad = line_of(path, "return self.env.HTTP_CAT.fetch(http_cat)", "BadGranularStepsWorkflow")
    assert _found("granular_steps") == {(bad, "WF108")}


def test_bad_no_state_outside_steps_image_list_appends_are_wf106() -> None:
    path = example_path("no_state_outside_steps")
    bad_class = line_of(path, "class BadNoStateOutsideStepsWorkflow")
    lines = path.read_text().splitlines()
    appends = [n for n, line in enumerate(lines, start=1) if "image_list.append(" in line]
    assert len(appends) == 2
    assert all(bad_class < number for number in appends)
    assert _found("no_state_outside_steps") == {(n, "WF106") for n in appends}


def test_bad_side_effects_instance_created_outside_a_step_is_wf103() -> None:
    path = example_path("deterministic_side_effects")
    bad = line_of(path, "bad_instance = another.create()")
    assert (bad, "WF103") in _found("deterministic_side_effects")


def test_bad_side_effects_random_outside_a_step_is_wf102() -> None:
    path = example_path("deterministic_side_effects")
    bad = line_of(path, "bad_random = random.random()")
    assert (bad, "WF102") in _found("deterministic_side_effects")
    assert len(_found("deterministic_side_effects")) == 2


def test_bad_dont_mutate_event_assignment_to_the_payload_is_wf105() -> None:
    path = example_path("dont_mutate_event")
    bad = line_of(path, "event.payload = user_data")
    assert _found("dont_mutate_event") == {(bad, "WF105")}


def test_bad_step_name_with_the_time_is_wf101() -> None:
    path = example_path("deterministic_step_names")
    bad_name = line_of(path, 'f"step #1 running at: {time.time()}"')
    mutation = line_of(path, "event.payload = user_data")
    assert _found("deterministic_step_names") == {(bad_name, "WF101"), (mutation, "WF105")}


def test_bad_race_outside_a_step_is_wf107() -> None:
    path = example_path("race_inside_step")
    bad = line_of(path, "race_return = await first_completed(", "BadRaceInsideStepWorkflow")
    assert _found("race_inside_step") == {(bad, "WF107")}


def test_bad_instance_id_from_the_user_id_is_wf111() -> None:
    path = example_path("unique_instance_ids")
    bad = line_of(path, "id=user_id,")
    assert _found("unique_instance_ids") == {(bad, "WF111")}


def test_bad_step_not_awaited_is_wf104() -> None:
    path = example_path("await_steps")
    bad = line_of(path, "bad_issues = step.do(")
    assert _found("await_steps") == {(bad, "WF104")}


def test_bad_branch_on_random_outside_a_step_is_wf102_from_conditional_logic() -> None:
    path = example_path("conditional_logic")
    bad = line_of(path, "if random.random() > 0.5:")
    findings = _no_ignore("conditional_logic")
    assert {(f.line, f.rule) for f in findings} == {(bad, "WF102")}
    assert findings[0].workflow_rule == "conditional-logic"


def test_bad_create_one_by_one_is_wf110() -> None:
    path = example_path("batch_create")
    bad = line_of(path, "handle = my_workflow.create(")
    assert _found("batch_create") == {(bad, "WF110")}


def test_bad_large_step_result_is_wf109() -> None:
    path = example_path("large_results")
    bad = line_of(path, "return response.json()")
    assert _found("large_results") == {(bad, "WF109")}


def test_the_idempotent_charge_example_has_no_bad_construct() -> None:
    # Cloudflare shows only the ✅ version (check, then charge): nothing to catch statically.
    assert _found("idempotent_charge") == set()
    assert marked(example_path("idempotent_charge")) == set()
