"""The pure replay core: one pass of ``run()`` over the journal, and what each step call does.

Imports the standard library, pydantic and the engine's own vocabulary
(``lambda_workflows.engine``'s
modules and :mod:`~lambda_workflows.engine.model`) only, never the instance layer nor an
adapter, and reads no clock: the pass is given one.
"""
