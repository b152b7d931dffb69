"""Functional tests of the API and trigger handlers (moto)."""
