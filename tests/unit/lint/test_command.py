"""``lambda-workflows lint`` as a command: output formats, exit codes, bad usage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import lambda_workflows
from lambda_workflows.lint import RULES, RULES_OF_WORKFLOWS, Finding, lint_paths, main

HANDLER_DIR = Path(lambda_workflows.__file__).parents[1]

BAD = """\
import random
from lambda_workflows import WorkflowEntrypoint


class W(WorkflowEntrypoint):
    async def run(self, event, step):
        coin = random.random()
        quiet = random.random()  # lambda-workflows: ignore[WF102]
"""

CLEAN = """\
import random

import lambda_workflows
from lambda_workflows import WorkflowEntrypoint


class W(WorkflowEntrypoint):
    async def run(self, event, step):
        return await step.do("coin", lambda: random.random())
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "bad.py").write_text(BAD)
    (tmp_path / "pkg" / "clean.py").write_text(CLEAN)
    (tmp_path / "pkg" / ".hidden").mkdir()
    (tmp_path / "pkg" / ".hidden" / "skipped.py").write_text(BAD)
    return tmp_path


def test_text_output_names_file_line_column_rule_severity_and_rule_of_workflows(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # WHEN linting a directory with one bad line and one suppressed bad line
    code = main([str(project / "pkg")])
    out = capsys.readouterr()
    # THEN exactly the unsuppressed finding is printed, and the exit status is 1
    assert code == 1
    lines = out.out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(f"{project / 'pkg' / 'bad.py'}:7:16: WF102 error: ")
    assert lines[0].endswith("(rules of Workflows: avoid doing side effects outside of a step)")
    assert out.err == "checked 2 files, 1 problem (1 error, 0 warnings)\n"


def test_no_ignore_reports_suppressed_findings_too(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(project / "pkg" / "bad.py"), "--no-ignore"]) == 1
    assert len(capsys.readouterr().out.splitlines()) == 2


def test_json_output_is_a_list_of_findings(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(project / "pkg"), "--format", "json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)
    assert finding == {
        "path": str(project / "pkg" / "bad.py"),
        "line": 7,
        "col": 16,
        "rule": "WF102",
        "severity": "error",
        "message": finding["message"],
        "workflow_rule": "side-effects-in-steps",
    }
    assert "step" in finding["message"]


def test_clean_code_exits_0_and_prints_only_the_summary(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(project / "pkg" / "clean.py")]) == 0
    assert capsys.readouterr().out == "checked 1 file, no problems\n"


def test_clean_code_in_json_is_an_empty_list(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(project / "pkg" / "clean.py"), "--format=json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_warnings_alone_also_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "start.py"
    path.write_text(
        "def start(env, ids):\n    for i in ids:\n        env.MY_WORKFLOW.create(id=i)\n"
    )
    assert [f.severity for f in lint_paths([path])] == ["warning"]
    assert main([str(path)]) == 1


def test_a_missing_path_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nope.py")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--format", "xml", "x.py"], ["--bogus", "x.py"]])
def test_bad_usage_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage: lambda-workflows lint" in capsys.readouterr().err


def test_no_path_checks_the_projects_code_named_by_its_template(
    project: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a project folder whose template's functions take their code from pkg/
    (project / "template.yaml").write_text(
        "Transform: AWS::Serverless-2016-10-31\nGlobals:\n  Function:\n    CodeUri: pkg/\n"
    )
    monkeypatch.chdir(project)
    # WHEN linting with no path THEN pkg/ is what is checked (its one unsuppressed finding)
    assert main([]) == 1
    out = capsys.readouterr()
    assert out.out.startswith(f"{Path('pkg') / 'bad.py'}:7:16: WF102 error: ")
    assert out.err == "checked 2 files, 1 problem (1 error, 0 warnings)\n"


def test_no_path_and_no_template_checks_the_current_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "clean.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    assert main([]) == 0
    assert capsys.readouterr().out == "checked 1 file, no problems\n"


def test_help_lists_every_rule(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert all(rule_id in out for rule_id in RULES)


def test_an_undecodable_file_is_reported_as_wf100(tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(b"x = '\xff\xfe'  # WorkflowEntrypoint\n")
    assert [f.rule for f in lint_paths([path])] == ["WF100"]


def test_findings_are_frozen_and_columns_are_one_based(tmp_path: Path) -> None:
    path = tmp_path / "w.py"
    path.write_text(BAD)
    (finding,) = lint_paths([path])
    assert isinstance(finding, Finding)
    assert (finding.line, finding.col) == (7, 16)
    with pytest.raises(AttributeError):
        finding.line = 1  # type: ignore[misc]


def test_many_files_are_linted_in_parallel_with_the_same_result(tmp_path: Path) -> None:
    # GIVEN enough files for worker processes, linted from a fresh single-threaded process
    for n in range(120):
        (tmp_path / f"w{n:03d}.py").write_text(BAD if n % 2 else CLEAN)
    script = (
        "import json, sys\n"
        "from lambda_workflows.lint import lint_paths\n"
        "from lambda_workflows.lint.parallel import map_in_processes\n"
        "assert map_in_processes(sorted, [3, 1, 2], 2) is not None, 'no worker processes'\n"
        "print(json.dumps([f.line for f in lint_paths([sys.argv[1]], jobs=2)]))\n"
    )
    # WHEN it runs with two worker processes
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(HANDLER_DIR)},
    )
    # THEN it finds what a serial run finds
    serial = lint_paths([tmp_path], jobs=1)
    assert len(serial) == 60
    assert json.loads(done.stdout) == [f.line for f in serial]


def test_every_rule_is_documented_with_its_rule_of_workflows() -> None:
    import lambda_workflows.lint as package

    doc = " ".join((package.__doc__ or "").split())
    for rule in RULES.values():
        assert rule.id in doc
        if rule.workflow_rule is not None:
            assert f'"{RULES_OF_WORKFLOWS[rule.workflow_rule]}"' in doc


def test_a_syntax_error_names_no_rule_of_workflows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a file that does not parse
    (tmp_path / "broken.py").write_text("from lambda_workflows import WorkflowEntrypoint\ndef (:\n")
    # WHEN it is linted
    assert main([str(tmp_path / "broken.py")]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    # THEN the finding is WF100 and cites no rule of Workflows (it is not about replay)
    assert " WF100 error: cannot parse the file " in line
    assert line.endswith("fix the syntax error first")
