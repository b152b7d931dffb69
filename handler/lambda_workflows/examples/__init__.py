"""The rules of Workflows (Cloudflare's good / bad examples), ported to Python.

One module per rule, with the good workflow (``...Workflow``) and the bad one
(``Bad...Workflow``) side by side. Each bad line carries ``# lambda-workflows: ignore[WF1xx]``
naming the lint rule that catches it, so ``lambda-workflows lint handler/`` is clean and
``lambda-workflows lint --no-ignore handler/lambda_workflows/examples`` shows every bad pattern.

The examples read their services from ``self.env`` (``self.env.KV``, ``self.env.PAYMENTS``,
...), as Cloudflare Workers read bindings; :func:`lambda_workflows.examples._fakes.example_env`
gives local fakes for all of them. :data:`GOOD_WORKFLOWS` maps registration names to the good
classes;
:data:`EXAMPLES` is the registration spec of every example (the good ones and the showcase),
for ``WORKFLOWS`` or :func:`lambda_workflows.registry.load_workflows`::

    WORKFLOWS="$(python -c 'import lambda_workflows.examples as e; print(e.EXAMPLES)')"
    lambda-workflows dev
"""

from __future__ import annotations

from lambda_workflows import WorkflowEntrypoint

from .await_steps import AwaitStepsWorkflow
from .conditional_logic import ConditionalLogicWorkflow
from .deterministic_side_effects import AnotherWorkflow, DeterministicSideEffectsWorkflow
from .deterministic_step_names import DeterministicStepNamesWorkflow
from .dont_mutate_event import DontMutateEventWorkflow
from .granular_steps import GranularStepsWorkflow
from .idempotent_charge import IdempotentChargeWorkflow
from .large_results import LargeResultsWorkflow
from .no_state_outside_steps import NoStateOutsideStepsWorkflow
from .race_inside_step import RaceInsideStepWorkflow
from .showcase import SHOWCASE_WORKFLOWS

__all__ = ["EXAMPLES", "GOOD_WORKFLOWS"]

GOOD_WORKFLOWS: dict[str, type[WorkflowEntrypoint]] = {
    "idempotent-charge": IdempotentChargeWorkflow,
    "granular-steps": GranularStepsWorkflow,
    "no-state-outside-steps": NoStateOutsideStepsWorkflow,
    "deterministic-side-effects": DeterministicSideEffectsWorkflow,
    "another-workflow": AnotherWorkflow,
    "dont-mutate-event": DontMutateEventWorkflow,
    "deterministic-step-names": DeterministicStepNamesWorkflow,
    "race-inside-step": RaceInsideStepWorkflow,
    "await-steps": AwaitStepsWorkflow,
    "conditional-logic": ConditionalLogicWorkflow,
    "large-results": LargeResultsWorkflow,
}
"""Registration name → good workflow class (the code starting workflows lives in
:mod:`lambda_workflows.examples.unique_instance_ids` and
:mod:`lambda_workflows.examples.batch_create`)."""

EXAMPLES = ",".join(
    f"{name}={cls.__module__}:{cls.__qualname__}"
    for name, cls in {**GOOD_WORKFLOWS, **SHOWCASE_WORKFLOWS}.items()
)
"""Every example as a ``WORKFLOWS`` spec (``name=module:Class,...``): the library registers
nothing by itself, so the demo, ``lambda-workflows dev`` and the tests that serve the examples pass
this."""
