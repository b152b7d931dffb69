"""``# lambda-workflows: ignore[WF101,WF102]`` comments: silence findings on their own line."""

from __future__ import annotations

import io
import re
import tokenize

_IGNORE = re.compile(r"#\s*lambda-workflows:\s*ignore\b(?:\[(?P<rules>[^\]]*)\])?", re.IGNORECASE)
ALL = "*"


def ignored_rules(line: str) -> frozenset[str]:
    """The rule ids a source line silences; ``{"*"}`` for a bare ``# lambda-workflows: ignore``.

    Only a real comment counts: the same text inside a string literal does not.
    """
    if "workflows" not in line or not _IGNORE.search(line):
        return frozenset()
    found: set[str] = set()
    for comment in _comments(line):
        for match in _IGNORE.finditer(comment):
            rules = match.group("rules")
            if rules is None:
                found.add(ALL)
            else:
                found.update(r.strip().upper() for r in rules.split(",") if r.strip())
    return frozenset(found)


def _comments(line: str) -> list[str]:
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line).readline))
    except (tokenize.TokenError, SyntaxError):
        # The line is part of a multi-line construct; fall back to the text after '#'.
        return [line[line.index("#") :]] if "#" in line else []
    return [token.string for token in tokens if token.type == tokenize.COMMENT]


def is_suppressed(rule: str, line: str) -> bool:
    """True when ``line`` carries a comment that silences ``rule``."""
    rules = ignored_rules(line)
    return ALL in rules or rule in rules
