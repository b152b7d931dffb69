"""The pure replay core: replay, steps, durations, retries, codec, clock and ports.

Imports only the standard library and pydantic (never boto3: a test and a lint rule keep it
out). The core decides; the adapters in ``lambda_workflows.aws`` act.
"""
