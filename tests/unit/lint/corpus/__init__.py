"""A corpus of workflow modules written the way users write them, each with its expected findings.

Every case is a whole module. A line that must be reported ends with a marker comment naming
the rules, ``# expect: WF113`` (or ``# expect: WF102, WF105``); a case without markers must be
clean. The modules of this package group the cases by the rule of Workflows they exercise, bad
cases and near misses side by side.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass

_EXPECT = re.compile(r"#\s*expect:\s*(?P<rules>WF\d{3}(?:\s*,\s*WF\d{3})*)")


@dataclass(frozen=True)
class Case:
    """One module of the corpus.

    Attributes:
        name: a short id, shown by pytest.
        source: the module's text (dedented when read).
    """

    name: str
    source: str

    @property
    def text(self) -> str:
        """The module's text, dedented."""
        return textwrap.dedent(self.source).lstrip("\n")

    @property
    def expected(self) -> set[tuple[int, str]]:
        """``(line, rule)`` for every ``# expect: ...`` marker of the module."""
        found: set[tuple[int, str]] = set()
        for number, line in enumerate(self.text.splitlines(), start=1):
            match = _EXPECT.search(line)
            if match:
                found.update((number, rule.strip()) for rule in match["rules"].split(","))
        return found
