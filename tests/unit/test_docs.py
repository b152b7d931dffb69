"""What users read: no internal jargon, and the documentation's links lead somewhere."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
USER_VISIBLE = [ROOT / "handler", ROOT / "infra", ROOT / "template.yaml", ROOT / "README.md"]
USER_VISIBLE += [ROOT / "docs"]
JARGON = re.compile(r"seed rule|\[seed:|the seed's|DESIGN (§|section)|\.\./shared/", re.I)
SUFFIXES = {".py", ".md", ".yaml", ".txt", ".toml"}
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)]*)?\)")
DOCS = sorted((ROOT / "docs").glob("*.md"))


def _files() -> list[Path]:
    found: list[Path] = []
    for path in USER_VISIBLE:
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        found += [
            p
            for p in candidates
            if p.is_file() and p.suffix in SUFFIXES and "egg-info" not in str(p)
        ]
    return found


def test_nothing_a_user_reads_cites_internal_notes() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in _files()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if JARGON.search(line)
    ]
    assert offenders == []


def test_readme_lists_the_documentation() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in ("semantics", "architecture", "operations", "security"):
        assert f"(docs/{name}.md)" in readme


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_every_relative_link_leads_to_a_file(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for target, _anchor in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        assert (page.parent / target).exists(), f"{page.name} links to missing {target}"
