"""check --output-format concise|json|github|sarif|junit; SARIF validated against the 2.1.0 schema."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any
from xml.etree import ElementTree as ET

import jsonschema
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT

from vjp_migrate.api import fix_source
from vjp_migrate.cli import main
from vjp_migrate.formats import render_sarif
from vjp_migrate.model import Diagnostic, FileResult, FixSafety, Status

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))


def check(tmp_path: Path, fmt: str, *extra: str) -> tuple[int, str]:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("nondiff_argnums = (\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["check", "--output-format", fmt, *extra, str(tmp_path)], catch_exceptions=False)
    return result.exit_code, result.stdout


def test_concise_is_one_line_per_finding_and_per_bad_file(tmp_path: Path) -> None:
    code, out = check(tmp_path, "concise")
    assert code == 2  # broken.py
    assert out.splitlines() == [
        f"{tmp_path / 'broken.py'}:1:19: invalid-syntax: '(' was never closed",
        f"{tmp_path / 'seed.py'}:8:19: VJP001 `lo` (position 0) of custom_vjp `clip_gradient` is array-valued but "
        "listed in nondiff_argnums; it raises UnexpectedTracerError under jit/vmap/grad",
        f"{tmp_path / 'seed.py'}:8:23: VJP001 `hi` (position 1) of custom_vjp `clip_gradient` is array-valued but "
        "listed in nondiff_argnums; it raises UnexpectedTracerError under jit/vmap/grad",
    ]


def test_github_workflow_commands(tmp_path: Path) -> None:
    _, out = check(tmp_path, "github")
    lines = out.splitlines()
    assert lines[0].startswith(
        f"::error file={tmp_path / 'broken.py'},line=1,col=19,title=invalid-syntax::syntax error"
    )
    assert lines[1] == (
        f"::error file={tmp_path / 'seed.py'},line=8,col=19,endLine=8,endColumn=21,title=VJP001::"
        "`lo` (position 0) of custom_vjp `clip_gradient` is array-valued but listed in nondiff_argnums; "
        "it raises UnexpectedTracerError under jit/vmap/grad"
    )


def test_sarif_is_valid_and_carries_rules_and_fixes(tmp_path: Path) -> None:
    _, out = check(tmp_path, "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    run = log["runs"][0]
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [
        "VJP001",
        "VJP002",
        "VJP003",
        "VJP004",
        "invalid-syntax",  # broken.py
    ]
    first = run["results"][1]
    assert first["ruleId"] == "VJP001" and first["locations"][0]["physicalLocation"]["region"]["startLine"] == 8
    (change,) = first["fixes"][0]["artifactChanges"]
    # Applying the replacements to the original text gives what `fix` writes.
    assert _applied(SEED, change) == fix_source(SEED).source
    assert run["invocations"][0]["executionSuccessful"] is False  # broken.py


def _applied(text: str, change: dict[str, Any]) -> str:
    """``text`` with a SARIF artifactChange's replacements made, as a SARIF viewer applies them."""
    for replacement in reversed(change["replacements"]):
        region = replacement["deletedRegion"]
        start, end = region["charOffset"], region["charOffset"] + region["charLength"]
        text = text[:start] + replacement["insertedContent"]["text"] + text[end:]
    return text


def test_sarif_fix_of_a_multi_file_migration_changes_every_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cli30 4: the fix held ops.py only; applied, it left rules.py's bwd with the old signature,
    `check` passed and jax.grad raised. It must change each file `fix` writes together."""
    project = FIXTURES / "project_absolute_imports"
    shutil.copytree(project / "before", tmp_path, dirs_exist_ok=True)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", "mypkg"], catch_exceptions=False)
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    results = log["runs"][0]["results"]
    assert len(results) == 3
    for finding in results:
        (fix,) = finding["fixes"]
        changes = {c["artifactLocation"]["uri"]: c for c in fix["artifactChanges"]}
        assert sorted(changes) == ["mypkg/ops.py", "mypkg/rules.py"]
        for uri, change in changes.items():
            before = (tmp_path / uri).read_text(encoding="utf-8")
            assert _applied(before, change) == (project / "after" / uri).read_text(encoding="utf-8")


def test_no_sarif_fix_when_a_file_of_its_migration_is_not_known(tmp_path: Path) -> None:
    """A partial multi-file fix breaks the code: without the other file's migrated text, none."""
    old, new = "def f(): pass\n", "def f(): return 1\n"
    finding = Diagnostic(
        "VJP001", "m", "ops.py", 1, 1, 1, 2, "f", "x", 0, True, FixSafety.SAFE, also_touches=("rules.py",)
    )
    ops = FileResult(Path("ops.py"), Status.OK, diagnostics=(finding,), old_text=old, new_text=new)
    rules = FileResult(Path("rules.py"), Status.OK, old_text=old, new_text=new)
    for others, files in (
        ([rules], ["ops.py", "rules.py"]),
        ([], None),
        ([dataclasses.replace(rules, new_text=None)], None),
    ):
        (result,) = json.loads(render_sarif([ops, *others]))["runs"][0]["results"]
        fixed = [c["artifactLocation"]["uri"] for fix in result.get("fixes", []) for c in fix["artifactChanges"]]
        assert fixed == (files or [])


def test_sarif_of_a_clean_run_is_valid(tmp_path: Path) -> None:
    code, out = check(tmp_path, "sarif", "--exclude", "seed.py", "--exclude", "broken.py")
    assert code == 0
    jsonschema.Draft4Validator(SCHEMA).validate(json.loads(out))


def test_junit_has_a_failure_per_finding_and_an_error_per_bad_file(tmp_path: Path) -> None:
    _, out = check(tmp_path, "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    failures = root.findall(".//failure")
    assert [f.get("type") for f in failures] == ["VJP001", "VJP001"]


@pytest.mark.parametrize("fmt", ["concise", "json", "github", "sarif", "junit"])
def test_machine_formats_have_no_colour_or_summary(tmp_path: Path, fmt: str) -> None:
    _, out = check(tmp_path, fmt)
    assert "\x1b[" not in out and "Found 2 findings" not in out


def test_sarif_uris_are_percent_encoded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path is a URI reference: a space or `#` (a fragment) must be escaped."""
    (tmp_path / "my models").mkdir()
    (tmp_path / "my models" / "clip#1.py").write_text(SEED, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", "my models"], catch_exceptions=False)
    uris = {
        location["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(result.stdout)["runs"][0]["results"]
        for location in r["locations"]
    }
    assert uris == {"my%20models/clip%231.py"}


def test_odd_file_names_are_escaped_in_junit_and_sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A control character, or a byte that is no UTF-8 (a surrogate escape in Python), has no
    place in XML 1.0 and no UTF-8 for a URI: JUnit shows it as `\\x..`, SARIF quotes the byte."""
    odd = os.fsdecode(b"bad\xff")  # a lone surrogate
    (tmp_path / f"esc\x1b{odd}.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "tab\tbell\x07.py").write_bytes(b"\x00nondiff_argnums")  # an error entry
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "--output-format", "junit", "."], catch_exceptions=False)
    root = ET.fromstring(result.stdout.split("\n", 1)[1])  # well-formed
    assert sorted({case.get("classname") for case in root.iter("testcase")}) == [
        "esc\\x1bbad\\xff.py",
        "tab\tbell\\x07.py",
    ]
    (error,) = root.iter("error")
    assert error.text == "tab\tbell\\x07.py: error: binary file (contains NUL bytes)"
    result = CliRunner().invoke(main, ["check", "--output-format", "sarif", "."], catch_exceptions=False)
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(result.stdout)["runs"][0]["results"]
    }
    assert uris == {"esc%1Bbad%FF.py", "tab%09bell%07.py"}


def test_files_that_could_not_be_processed_are_entries_too(tmp_path: Path) -> None:
    """As ruff reports them: E902 at 1:1 for a file it cannot read or decode, invalid-syntax at the
    error; so CI sees them in the machine-readable output, besides the stderr line and exit 2."""
    (tmp_path / "binary.py").write_bytes(b"\x00nondiff_argnums")
    code, out = check(tmp_path, "json")
    assert code == 2
    entries = [(e["code"], Path(e["path"]).name, e["line"], e["column"], e["message"]) for e in json.loads(out)]
    assert entries[:2] == [
        ("E902", "binary.py", 1, 1, "binary file (contains NUL bytes)"),
        ("invalid-syntax", "broken.py", 1, 19, "'(' was never closed"),
    ]
    assert [e[0] for e in entries[2:]] == ["VJP001", "VJP001"]
    error = json.loads(out)[0]
    assert set(error) == set(json.loads(out)[2]) - {"cell", "also_touches"}  # the findings' keys
    assert (error["function"], error["argument"], error["fixable"], error["fix_safety"]) == (None, None, False, "none")

    _, out = check(tmp_path, "concise")
    assert out.splitlines()[:2] == [
        f"{tmp_path / 'binary.py'}:1:1: E902 binary file (contains NUL bytes)",
        f"{tmp_path / 'broken.py'}:1:19: invalid-syntax: '(' was never closed",
    ]
    _, out = check(tmp_path, "github")
    assert out.splitlines()[:2] == [
        f"::error file={tmp_path / 'binary.py'},title=E902::binary file (contains NUL bytes)",
        f"::error file={tmp_path / 'broken.py'},line=1,col=19,title=invalid-syntax::"
        "syntax error at line 1, column 19: '(' was never closed",
    ]
    _, out = check(tmp_path, "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    run = log["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    located = [
        (r["ruleId"], rules[r["ruleIndex"]], r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in run["results"]
    ]
    assert located == [("E902", "E902", 1), ("invalid-syntax", "invalid-syntax", 1), *[("VJP001", "VJP001", 8)] * 2]
    assert len(run["invocations"][0]["toolExecutionNotifications"]) == 2

    result = CliRunner().invoke(main, ["check", "--output-format", "json", str(tmp_path)], catch_exceptions=False)
    assert result.stderr.splitlines() == [
        f"{tmp_path / 'binary.py'}: error: binary file (contains NUL bytes)",
        f"{tmp_path / 'broken.py'}: error: syntax error at line 1, column 19: '(' was never closed",
    ]
