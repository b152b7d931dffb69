"""The engine: what a workflow is and how it runs, with no AWS in it.

Three layers, each a package that imports only the ones before it (docs/architecture.md's
package map, held by a test):

- this package's own modules: the programming model's vocabulary (``WorkflowEntrypoint``,
  ``WorkflowStep``, the step config, durations, errors) and the records (:mod:`.model`);
- :mod:`.replay`: one pass of ``run()`` over the journal, what each step call does on replay;
- :mod:`.instances`: the instance state machine, the runner's advance, the instance service
  (commands and queries), children, slots, schedules, deletion, and the ports it drives.

The standard library and pydantic only: never boto3 (a test and a lint rule keep it out), and
no clock read (time comes from an injected ``Clock``). The engine decides; the adapters in
``lambda_workflows.aws`` and ``lambda_workflows.memory`` act.
"""
