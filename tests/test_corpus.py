"""A real corpus (issue #6, item 5): the whole site-packages of the interpreter running the tests.

`check` and `fix --diff` run over thousands of real files (jax, numpy, libcst, click, rich,
hypothesis, pytest...): no crash, no traceback, no internal error, no change proposed for a
file without a finding, nothing written, and every file the walk finds accounted for in the
summary. Marked `slow` (about a minute), but run by default and in CI.
"""

from __future__ import annotations

import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

import pytest

from vjp_migrate.discover import discover

pytestmark = pytest.mark.slow

SITE_PACKAGES = Path(sysconfig.get_paths()["purelib"])
FINDING = re.compile(r"^(?P<path>.+?):\d+:\d+: VJP\d{3} ")
SUMMARY = re.compile(
    r"(?:(?P<checked>\d+) files? checked|Nothing checked)(?:[;:] (?P<failed>\d+) files? could not be processed)?[.)]"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    # --no-cache: every file really analysed; the cwd is a scratch folder either way.
    options = ("--no-cache",) if args[0] == "check" else ()
    return subprocess.run(
        [sys.executable, "-m", "vjp_migrate", *args, *options, "--isolated", str(SITE_PACKAGES)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tempfile.mkdtemp(prefix="vjp-corpus-"),
    )


def disk_state(paths: list[Path]) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_mtime_ns, p.stat().st_size) for p in paths}


@pytest.fixture(scope="module")
def corpus() -> list[Path]:
    candidates, rejected = discover([SITE_PACKAGES])
    files = [c.path for c in candidates] + [r.path for r in rejected]
    assert len(files) > 1000, f"site-packages looks empty: {SITE_PACKAGES}"
    assert any(p.parts[-2:] == ("_src", "custom_derivatives.py") for p in files)  # jax is in the corpus
    return files


def assert_no_crash(done: subprocess.CompletedProcess[str], summary_on_stderr: bool = False) -> None:
    output = done.stdout + done.stderr
    assert "Traceback" not in output and "internal error" not in output, output[-3000:]
    assert done.returncode in (0, 1, 2), output[-3000:]
    lines = done.stderr.splitlines()
    if summary_on_stderr:  # `fix --diff`: the patch alone on stdout
        lines = lines[:-1]
    for line in lines:  # nothing on stderr but one line per unprocessable file
        assert ": error: " in line, line


def test_check_accounts_for_every_file(corpus: list[Path]) -> None:
    done = run("check")
    assert_no_crash(done)
    summary = SUMMARY.search(done.stdout.splitlines()[-1])
    assert summary, done.stdout[-500:]
    checked, failed = int(summary["checked"] or 0), int(summary["failed"] or 0)
    assert checked + failed == len(corpus)
    assert failed == len(done.stderr.splitlines())
    assert (done.returncode == 2) == bool(failed)


def test_fix_diff_changes_only_files_with_findings_and_writes_nothing(corpus: list[Path]) -> None:
    before = disk_state(corpus)
    findings = {m["path"] for line in run("check").stdout.splitlines() if (m := FINDING.match(line))}
    done = run("fix", "--diff")
    assert_no_crash(done, summary_on_stderr=True)
    assert done.stderr.splitlines()[-1].startswith(("Nothing to fix", "Would fix")), done.stderr[-500:]
    diffed = {line[4:] for line in done.stdout.splitlines() if line.startswith("+++ ")}
    assert diffed <= findings, f"changed without a finding: {sorted(diffed - findings)}"
    assert (done.returncode == 1) == bool(diffed) or done.returncode == 2
    assert disk_state(corpus) == before  # --diff wrote nothing
