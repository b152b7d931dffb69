"""The in-memory adapters: the instance, slot and schedule stores behind the engine's ports,
for the test kit and the benchmarks.

Imports the engine only (never boto3, never ``lambda_workflows.aws``).
"""
