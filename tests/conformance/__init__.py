"""Conformance: every one of Cloudflare's rules of Workflows, on this engine.

One module per rule. Each ✅ example is run under ``Crash`` + replay to prove its
guarantee; each 🔴 example either reproduces the failure Cloudflare describes, or shows that the
engine now stops it with a clear error. The examples themselves
(``handler/lambda_workflows/examples``) are never edited: crashes are injected by wrapping the fake
services in ``self.env`` or by a test-local subclass (see :mod:`tests.conformance._support`).
"""
