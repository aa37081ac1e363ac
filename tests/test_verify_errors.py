"""verify's failures: one line that names the file, the place in it and the reason, never a
traceback; exit code 2 (real worker processes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vjp_migrate.verify import Verdict, VerifyOptions, render_report, verify_files

DATA = Path(__file__).parent / "data" / "verify"
BROKEN = DATA / "broken"
SEED_BEFORE = DATA / "seed" / "before.py"


def _one_error(errors: tuple[str, ...]) -> str:
    (error,) = errors
    assert "\n" not in error and "Traceback" not in error
    return error


def test_import_error_names_the_line_of_the_module_that_raised() -> None:
    report = verify_files(BROKEN / "before.py", BROKEN / "after.py", VerifyOptions())
    error = _one_error(report.errors)
    assert error.endswith(f"RuntimeError: this module cannot be imported ({BROKEN / 'after.py'}, line 3)")
    assert report.exit_code == 2


def test_examples_file_that_raises_is_one_line_with_its_place() -> None:
    options = VerifyOptions(examples=BROKEN / "examples_raise.py")
    report = verify_files(SEED_BEFORE, DATA / "seed" / "after.py", options)
    error = _one_error(report.errors)
    assert error == (
        "could not load the inputs: RuntimeError: this examples file cannot be loaded "
        f"({BROKEN / 'examples_raise.py'}, line 2)"
    )


def test_timeout_says_what_was_running() -> None:
    report = verify_files(BROKEN / "before.py", BROKEN / "slow.py", VerifyOptions(timeout=2))
    error = _one_error(report.errors)
    assert error.startswith("timed out after 2s while running the import of AFTER (")
    assert report.exit_code == 2


def test_worker_that_dies_in_user_code_says_how_and_where(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VJP_MIGRATE_TEST_EXIT", "os")
    report = verify_files(SEED_BEFORE, BROKEN / "exits.py", VerifyOptions())
    error = _one_error(report.errors)
    assert error.startswith("the worker crashed (exit 7) while running clip_gradient, example #0 on cpu: AFTER (")
    assert report.exit_code == 2


def test_sys_exit_in_a_rule_fails_the_check_and_the_run_goes_on() -> None:
    report = verify_files(SEED_BEFORE, BROKEN / "exits.py", VerifyOptions())
    assert not report.errors, render_report(report)
    (row,) = report.rows
    assert row.verdict is Verdict.MISMATCH
    assert row.message == "primal, example #0, on cpu: fail: AFTER raised SystemExit: 3"
    assert report.exit_code == 1
