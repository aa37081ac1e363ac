"""verify end to end through the library API: real JAX on CPU, in the worker subprocess."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from vjp_migrate.verify import (
    MISSING_JAX,
    CheckStatus,
    Verdict,
    VerifyOptions,
    VerifyReport,
    render_report,
    verify_files,
    verify_sources,
)

DATA = Path(__file__).parent / "data" / "verify"
WRONG = DATA / "wrong"


@pytest.fixture(scope="module")
def wrong_report() -> VerifyReport:
    return verify_files(WRONG / "before.py", WRONG / "after.py", VerifyOptions(examples=WRONG / "examples.py"))


def _row(report: VerifyReport, name: str):  # type: ignore[no-untyped-def]
    return next(r for r in report.rows if r.name == name)


def test_seed_clip_gradient_verifies_equal_by_synthesis_without_examples() -> None:
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions())
    assert report.exit_code == 0, render_report(report)
    (row,) = report.rows
    assert (row.name, row.verdict, row.input_source, row.moved) == (
        "clip_gradient",
        Verdict.EQUAL,
        "synthesized",
        ("lo", "hi"),
    )
    assert (row.jit, row.vmap) == ("ok", "ok")
    assert row.before_traced == "fails (UnexpectedTracerError)"
    checks = {c.check for c in row.checks}
    assert {"primal", "cotangent", "moved cotangents", "jit", "vmap", "scan", "cond", "grad of grad"} <= checks
    import jax

    vjp3 = [c for c in row.checks if c.check.startswith("custom_vjp3")]
    if hasattr(jax.config, "jax_custom_vjp3"):
        assert vjp3 and all(c.status is CheckStatus.PASS for c in vjp3), vjp3
    else:  # a JAX before the option
        assert [(c.status, c.detail) for c in vjp3] == [(CheckStatus.NOT_APPLICABLE, "not in this JAX")]


@pytest.mark.parametrize(
    ("function", "where"),
    [
        pytest.param("clip_swapped", "argument x (position 2)", id="residuals swapped"),
        pytest.param("clip_none_misplaced", "argument x (position 2)", id="None in the wrong position"),
        pytest.param("scaled_mul_dropped", "argument y (position 2)", id="cotangent dropped"),
        pytest.param("soft_clip_sign", "argument x (position 0)", id="wrong sign"),
    ],
)
def test_wrong_migration_is_caught(wrong_report: VerifyReport, function: str, where: str) -> None:
    row = _row(wrong_report, function)
    assert row.verdict is Verdict.MISMATCH
    first = row.problems[0]
    assert (first.check, first.where, first.example) == ("cotangent", where, 0)
    assert first.max_abs_err is not None and first.max_abs_err > 0.1
    assert function in render_report(wrong_report)


def test_correct_function_beside_wrong_ones_is_equal(wrong_report: VerifyReport) -> None:
    assert _row(wrong_report, "clip_correct").verdict is Verdict.EQUAL
    assert wrong_report.exit_code == 1


def test_misplaced_none_gives_a_migrated_argument_a_cotangent(wrong_report: VerifyReport) -> None:
    row = _row(wrong_report, "clip_none_misplaced")
    moved = [c for c in row.problems if c.check == "moved cotangents"]
    assert moved and moved[0].where == "argument hi (position 1)"


def test_callable_argument_without_examples_is_not_verified_not_a_crash() -> None:
    report = verify_files(DATA / "callable" / "before.py", DATA / "callable" / "after.py", VerifyOptions())
    (row,) = report.rows
    assert row.verdict is Verdict.NOT_VERIFIED
    assert "'f'" in row.message
    assert report.exit_code == 0
    assert any("not verified (no inputs)" in w for w in report.warnings)
    assert dataclasses.replace(report, strict=True).exit_code == 2


def test_callable_argument_with_examples_verifies(tmp_path: Path) -> None:
    examples = tmp_path / "examples.py"
    examples.write_text("import jax.numpy as jnp\nEXAMPLES = {'apply_scaled': [(jnp.sin, 2.0, jnp.arange(3.0))]}\n")
    report = verify_files(
        DATA / "callable" / "before.py", DATA / "callable" / "after.py", VerifyOptions(examples=examples)
    )
    assert [r.verdict for r in report.rows] == [Verdict.EQUAL], render_report(report)


def test_module_that_cannot_import_exits_2() -> None:
    report = verify_files(DATA / "broken" / "before.py", DATA / "broken" / "after.py", VerifyOptions())
    assert report.exit_code == 2
    assert "could not import AFTER" in report.errors[0]
    assert "RuntimeError: this module cannot be imported" in report.errors[0]


def test_timeout_exits_2() -> None:
    report = verify_files(DATA / "broken" / "before.py", DATA / "broken" / "slow.py", VerifyOptions(timeout=2))
    assert report.exit_code == 2
    assert "timed out after 2s" in report.errors[0]


def test_missing_jax_says_how_to_install(tmp_path: Path) -> None:
    # An interpreter without JAX (the system one), in a clean environment.
    python = "/usr/bin/python3"
    if not Path(python).exists() or subprocess.run([python, "-c", "import jax"], capture_output=True).returncode == 0:
        pytest.skip("needs an interpreter without JAX")
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions(python=python))
    assert report.errors == (MISSING_JAX,)
    assert "pip install 'vjp-migrate[verify]'" in render_report(report)
    assert report.exit_code == 2


def test_unavailable_backend_exits_2_and_cpu_is_picked_by_name() -> None:
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions(device="tpu"))
    assert report.exit_code == 2 and "no tpu backend" in report.errors[0]


def test_device_all_compares_available_backends() -> None:
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions(device="all"))
    assert report.exit_code == 0, render_report(report)
    assert "cpu" in report.backends


def test_in_memory_sources_with_a_relative_import_write_nothing() -> None:
    path = DATA / "pkg" / "clipper" / "ops.py"
    before = path.read_text()
    after = (
        before.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=()")
        .replace("return x, None", "return x, (lo, hi)")
        .replace(
            "def clip_gradient_bwd(lo, hi, _, g):\n    return (clip(g, lo, hi),)",
            "def clip_gradient_bwd(res, g):\n    lo, hi = res\n    return (None, None, clip(g, lo, hi))",
        )
    )
    listing = sorted(p.name for p in path.parent.rglob("*"))
    report = verify_sources(before, after, path, VerifyOptions())
    assert report.exit_code == 0, render_report(report)
    # the call site `clip_gradient(-1.0, 1.0, x)` gave the synthesized lo and hi
    assert report.rows[0].input_source == "synthesized"
    assert sorted(p.name for p in path.parent.rglob("*")) == listing


def test_in_memory_faulty_rewrite_is_a_mismatch() -> None:
    path = DATA / "pkg" / "clipper" / "ops.py"
    before = path.read_text()
    faulty = (
        before.replace("nondiff_argnums=(0, 1)", "nondiff_argnums=()")
        .replace("return x, None", "return x, (hi, lo)")
        .replace(
            "def clip_gradient_bwd(lo, hi, _, g):\n    return (clip(g, lo, hi),)",
            "def clip_gradient_bwd(res, g):\n    lo, hi = res\n    return (None, None, clip(g, lo, hi))",
        )
    )
    report = verify_sources(before, faulty, path, VerifyOptions())
    assert report.exit_code == 1
    assert report.rows[0].verdict is Verdict.MISMATCH


def test_json_output_round_trips(wrong_report: VerifyReport) -> None:
    data = json.loads(render_report(wrong_report, "json"))
    assert data["exit_code"] == 1
    verdicts = {f["name"]: f["verdict"] for f in data["functions"]}
    assert verdicts["clip_correct"] == "equal" and verdicts["clip_swapped"] == "mismatch"


def test_emitted_tests_that_cannot_be_written_are_an_error_of_the_report(tmp_path: Path) -> None:
    """The CLI refuses such a folder up front; a failure at the end (a full disk) is still no traceback."""
    (tmp_path / "a_file").write_text("")
    out = tmp_path / "a_file" / "proofs"
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions(emit_tests=out))
    assert report.errors == (f"cannot write the tests into {out}: Not a directory",)
    assert report.exit_code == 2 and report.emitted == ()


def test_emit_tests_writes_standalone_tests_that_pass(tmp_path: Path) -> None:
    out = tmp_path / "proofs"
    report = verify_files(DATA / "seed" / "before.py", DATA / "seed" / "after.py", VerifyOptions(emit_tests=out))
    assert report.emitted == (str(out / "test_vjp_after_clip_gradient.py"),)
    unverified = tmp_path / "unverified"
    callable_report = verify_files(
        DATA / "callable" / "before.py", DATA / "callable" / "after.py", VerifyOptions(emit_tests=unverified)
    )
    (emitted,) = callable_report.emitted
    assert '@pytest.mark.skip(reason="not verified (no inputs)' in Path(emitted).read_text()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(out)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "9 passed" in done.stdout  # 3 synthesized examples x (eager, jit, moved cotangents)


def test_importing_the_verify_package_does_not_import_jax_or_rich() -> None:
    code = "import sys, vjp_migrate.verify; assert 'jax' not in sys.modules and 'rich' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
