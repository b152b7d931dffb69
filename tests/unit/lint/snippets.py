"""Helpers for the lint tests: build a workflow around a snippet, lint it, read the result."""

from __future__ import annotations

import textwrap

from lambda_workflows.lint import Finding, lint_source

PRELUDE = """\
import asyncio
import datetime
import functools
import random
import time
import uuid

import boto3
import httpx
import requests

from lambda_workflows import WorkflowEntrypoint, WorkflowEvent, WorkflowStep


class Snippet(WorkflowEntrypoint):
    async def run(self, event: WorkflowEvent, step: WorkflowStep):
"""
BODY_FIRST_LINE = PRELUDE.count("\n") + 1


def workflow(body: str) -> str:
    """A module whose only workflow's run() is ``body`` (dedented, then indented into run)."""
    return PRELUDE + textwrap.indent(textwrap.dedent(body).strip("\n") + "\n", " " * 8)


def lint_module(source: str, *, honor_ignores: bool = True) -> list[Finding]:
    """Lint a whole module given as (possibly indented) text."""
    return lint_source(textwrap.dedent(source), "snippet.py", honor_ignores=honor_ignores)


def lint_run(body: str, *, honor_ignores: bool = True) -> list[Finding]:
    """Lint a workflow whose run() is ``body``."""
    return lint_source(workflow(body), "snippet.py", honor_ignores=honor_ignores)


def rules(findings: list[Finding]) -> list[str]:
    """The rule ids of ``findings``, in order."""
    return [finding.rule for finding in findings]


def run_rules(body: str) -> list[str]:
    """The rule ids found in a workflow whose run() is ``body``."""
    return rules(lint_run(body))


def body_line(findings: list[Finding], index: int = 0) -> int:
    """The 1-based line of a finding, counted from the first line of run()'s body."""
    return findings[index].line - BODY_FIRST_LINE + 1
