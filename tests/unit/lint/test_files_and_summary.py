"""``lambda-workflows lint``: the one-line summary, syntax errors always reported, non-Python files
skipped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lambda_workflows.lint import lint_paths, lint_source, main

CLEAN_WORKFLOW = """\
from lambda_workflows import WorkflowEntrypoint


class W(WorkflowEntrypoint):
    async def run(self, event, step):
        return await step.do("hello", lambda: "hello")
"""

BAD_WORKFLOW = """\
import time
from lambda_workflows import WorkflowEntrypoint


class W(WorkflowEntrypoint):
    async def run(self, event, step):
        return await step.do(f"at {time.time()}", lambda: 1)
"""


def write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


# --- the summary ----------------------------------------------------------------------------


def test_a_clean_run_prints_how_many_files_it_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN three clean Python files, one of them not a workflow at all
    write(tmp_path, {"a.py": CLEAN_WORKFLOW, "b.py": CLEAN_WORKFLOW, "util/c.py": "x = 1\n"})
    # WHEN the folder is linted
    code = main([str(tmp_path)])
    # THEN it exits 0 and says so in one line
    out = capsys.readouterr()
    assert code == 0
    assert out.out == "checked 3 files, no problems\n"
    assert out.err == ""


def test_the_summary_in_json_goes_to_stderr_so_stdout_stays_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"a.py": CLEAN_WORKFLOW})
    assert main([str(tmp_path), "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out) == []
    assert out.err == "checked 1 file, no problems\n"


def test_with_findings_the_summary_counts_files_and_problems_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"bad.py": BAD_WORKFLOW, "good.py": CLEAN_WORKFLOW})
    assert main([str(tmp_path)]) == 1
    out = capsys.readouterr()
    assert " WF101 error: " in out.out
    assert out.err == "checked 2 files, 1 problem (1 error, 0 warnings)\n"


# --- syntax errors --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "broken",
    [
        "def broken(:\n",  # a module with nothing of Workflows in it
        "from lambda_workflows import WorkflowEntrypoint\ndef broken(:\n",
        "def broken(:  # lambda-workflows: ignore\n",
        "def broken(:  # lambda-workflows: ignore[WF100]\n",
        "# lambda-workflows: ignore\nclass W(WorkflowEntrypoint)\n",
    ],
)
@pytest.mark.parametrize("flags", [[], ["--no-ignore"], ["--format", "json"]])
def test_a_file_with_a_syntax_error_is_always_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str, flags: list[str]
) -> None:
    # GIVEN a folder with a clean file and one that does not parse
    write(tmp_path, {"clean.py": CLEAN_WORKFLOW, "broken.py": broken})
    # WHEN it is linted, with or without honouring ignores, in either format
    code = main([str(tmp_path), *flags])
    out = capsys.readouterr().out
    # THEN the syntax error is a finding, and the exit status says so
    assert code == 1
    assert "WF100" in out and "broken.py" in out
    assert "cannot parse the file" in out


def test_lint_source_reports_a_syntax_error_in_any_module() -> None:
    (finding,) = lint_source("x = (\n", "plain.py")
    assert (finding.rule, finding.path, finding.line) == ("WF100", "plain.py", 1)
    assert lint_source("x = (\n", "plain.py", honor_ignores=False) == [finding]


# --- non-Python files -----------------------------------------------------------------------


def test_a_non_python_file_given_by_name_is_skipped_not_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a README and a template that mention create( and do not parse as Python
    write(
        tmp_path,
        {
            "README.md": "# Orders\n\nCall `Workflow('orders').create(id=...)` :\n",
            "template.yaml": "Resources: {create: [WorkflowEntrypoint]}\n",
            "a.py": CLEAN_WORKFLOW,
        },
    )
    files = [str(tmp_path / n) for n in ("README.md", "template.yaml", "a.py")]
    # WHEN they are given by name
    code = main(files)
    out = capsys.readouterr()
    # THEN only the Python file is checked; the others are skipped with a note, not a WF100
    assert code == 0
    assert out.out == "checked 1 file, no problems\n"
    assert "WF100" not in out.out + out.err
    assert f"skipped {tmp_path / 'README.md'}: not a Python file" in out.err
    assert f"skipped {tmp_path / 'template.yaml'}: not a Python file" in out.err
    assert lint_paths(files) == []


def test_non_python_files_in_a_folder_are_skipped_silently(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(
        tmp_path,
        {
            "a.py": CLEAN_WORKFLOW,
            "notes.txt": "create( WorkflowEntrypoint\n",
            "data/events.json": '{"create": [}',
            "Makefile": "demo:\n\tworkflows dev\n",
        },
    )
    assert main([str(tmp_path)]) == 0
    out = capsys.readouterr()
    assert out.out == "checked 1 file, no problems\n"
    assert out.err == ""


def test_a_script_with_a_python_shebang_given_by_name_is_linted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, {"start-orders": "#!/usr/bin/env python3\n" + BAD_WORKFLOW})
    assert main([str(tmp_path / "start-orders")]) == 1
    out = capsys.readouterr()
    assert " WF101 error: " in out.out
    assert out.err == "checked 1 file, 1 problem (1 error, 0 warnings)\n"
