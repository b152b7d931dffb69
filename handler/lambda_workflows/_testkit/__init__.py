"""The test kit's parts: :mod:`lambda_workflows.testing` is its public face, and re-exports
every name a test uses from here.

No Lambda handler loads it (``tests/unit/test_import_graph.py`` holds that).
"""
