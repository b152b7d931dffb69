"""Thin adapters from the engine's ports to AWS, one module per service.

Each takes an injected boto3 client and turns ``ClientError`` codes into the engine's domain
errors at this boundary.
"""
