"""verify on inputs that are easy to get wrong in the verifier itself: bfloat16, an example
that leaves a defaulted argument out, a BEFORE that is not deterministic, and --emit-tests
with PRNG keys, complex values and large arrays (real JAX on CPU)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from vjp_migrate.verify import FunctionRow, Verdict, VerifyOptions, VerifyReport, render_report, verify_files

EDGE = Path(__file__).parent / "data" / "verify" / "edge"


@pytest.fixture(scope="module")
def report() -> VerifyReport:
    return verify_files(EDGE / "before.py", EDGE / "after.py", VerifyOptions(examples=EDGE / "examples.py"))


def _row(report: VerifyReport, name: str) -> FunctionRow:
    return next(r for r in report.rows if r.name == name)


def test_bfloat16_migration_gets_bfloat16_cotangents_and_verifies_equal(report: VerifyReport) -> None:
    row = _row(report, "scale_bf16")
    assert row.verdict is Verdict.EQUAL, render_report(report)
    assert (row.jit, row.vmap) == ("ok", "ok")


def test_bfloat16_wrong_cotangent_is_a_mismatch_on_the_argument(report: VerifyReport) -> None:
    row = _row(report, "scale_bf16_wrong")
    assert row.verdict is Verdict.MISMATCH
    first = row.problems[0]
    assert (first.check, first.where) == ("cotangent", "argument x (position 1)")


def test_example_leaving_a_defaulted_migrated_argument_out_uses_the_default(report: VerifyReport) -> None:
    row = _row(report, "soft_clip")
    assert row.verdict is Verdict.EQUAL, render_report(report)
    assert row.before_traced.startswith("fails")  # `limit` (the default) was traced


def test_before_that_is_not_deterministic_is_an_error_not_a_mismatch(report: VerifyReport) -> None:
    row = _row(report, "noisy")
    assert row.verdict is Verdict.ERROR
    assert "BEFORE is not deterministic" in row.message
    assert report.exit_code == 2


def test_each_problem_is_one_line_however_long(report: VerifyReport) -> None:
    lines = render_report(report).splitlines()
    noisy = [line for line in lines if "not deterministic" in line]
    assert len(noisy) == 1 and noisy[0].startswith("noisy: before, example #0")
    assert noisy[0].rstrip().endswith("a jax.random key argument)")


def test_emitted_tests_write_keys_check_imaginary_parts_and_leave_large_arrays_out(tmp_path: Path) -> None:
    emit = EDGE.parent / "emit"
    out = tmp_path / "proofs"
    options = VerifyOptions(examples=emit / "examples.py", emit_tests=out)
    report = verify_files(emit / "before.py", emit / "after.py", options)
    assert not report.errors, render_report(report)
    assert _row(report, "cscale").verdict is Verdict.MISMATCH  # wrong in the imaginary part only
    assert "jax.random.wrap_key_data(" in (out / "test_vjp_after_dropout.py").read_text()
    shift = out / "test_vjp_after_shift.py"
    assert "# example #0 left out: an array of 40,000 values is too large" in shift.read_text()
    assert shift.stat().st_size < 20_000
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
    )
    failed = sorted({line.split("::")[0].rpartition("/")[2] for line in done.stdout.splitlines() if "FAILED" in line})
    assert failed == ["test_vjp_after_cscale.py"], done.stdout
    assert "2 failed, 7 passed" in done.stdout, done.stdout


def test_an_output_class_the_module_defines_is_no_mismatch(report: VerifyReport) -> None:
    # probe30 G2: BEFORE's cotangent held BEFORE's NamedTuple; AFTER's vjp refused it (tree structure)
    row = _row(report, "scaled_out")
    assert row.verdict is Verdict.EQUAL, render_report(report)
    assert (row.jit, row.vmap) == ("ok", "ok")
