"""verify's inputs and verdicts (real JAX on CPU): examples and recorded calls with keyword
arguments, inputs committed to the `--device` chosen, and an AFTER that fails only under vmap
(its own verdict, not a mismatch). BEFORE/AFTER: tests/data/verify/ux/."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vjp_migrate.verify import FunctionRow, Verdict, VerifyOptions, VerifyReport, call, render_report, verify_files

UX = Path(__file__).parent / "data" / "verify" / "ux"


@pytest.fixture(scope="module")
def report() -> VerifyReport:
    options = VerifyOptions(examples=UX / "examples.py", device="cpu")
    return verify_files(UX / "before.py", UX / "after.py", options)


def _row(report: VerifyReport, name: str) -> FunctionRow:
    return next(r for r in report.rows if r.name == name)


def test_examples_given_with_keyword_arguments_are_verified(report: VerifyReport) -> None:
    row = _row(report, "clip_kw")
    assert (row.verdict, row.input_source, row.examples) == (Verdict.EQUAL, "examples", 2), render_report(report)
    assert (row.jit, row.vmap) == ("ok", "ok")
    assert row.before_traced.startswith("fails")  # lo and hi, given by keyword, were traced


def test_inputs_reach_the_rule_committed_to_the_chosen_device(report: VerifyReport) -> None:
    # `placed` raises on a concrete input that is not a jax.Array committed to jax.devices("cpu")[0].
    row = _row(report, "placed")
    assert row.verdict is Verdict.EQUAL, render_report(report)


def test_an_after_that_fails_only_under_vmap_says_so(report: VerifyReport) -> None:
    row = _row(report, "logged")
    assert row.verdict is Verdict.FAILS_UNDER_VMAP, render_report(report)
    assert (row.jit, row.vmap) == ("ok", "FAIL")
    assert row.message.startswith("AFTER raises under jax.vmap (example #0, on cpu): NotImplementedError: vmap is only")
    assert row.message.endswith("; no value was compared there, all other checks pass")
    assert "\n" not in row.message
    assert report.exit_code == 1
    assert json.loads(report.to_json())["functions"][1]["verdict"] == "fails under vmap"
    assert render_report(report).splitlines()[-1] == "2 equal, 1 fails under vmap (exit code 1)"


def test_device_put_commits_only_the_arrays_of_traced_arguments() -> None:
    import jax

    from vjp_migrate.verify.pairing import VjpPair
    from vjp_migrate.verify.session import _on_device

    cpu = jax.devices("cpu")[0]
    pair = VjpPair("f", None, None, ("n", "s", "x"), before_nondiff=(0, 1), after_nondiff=(0,))
    n, s, x = np.arange(2), np.float32(2.0), {"a": np.ones(3), "k": 3}
    static, moved, data = _on_device(pair, (n, s, x), cpu)
    assert static is n  # stays in nondiff_argnums: left as given
    assert isinstance(moved, jax.Array) and moved.committed and moved.devices() == {cpu}
    assert data["a"].committed and data["a"].devices() == {cpu} and data["k"] == 3


def _primal(lo: Any, hi: Any, x: Any, scale: float = 1.0, *, mode: str = "") -> Any:
    return x


@pytest.mark.parametrize(
    "example, expected",
    [
        pytest.param(call(1, 2, 3), (1, 2, 3, 1.0), id="positional, default filled in"),
        pytest.param(call(1, x=3, hi=2), (1, 2, 3, 1.0), id="keywords in any order"),
        pytest.param(call(1, 2, x=3, scale=0.5), (1, 2, 3, 0.5), id="a defaulted one by keyword"),
        pytest.param((1, 2, 3), (1, 2, 3, 1.0), id="a plain tuple"),
    ],
)
def test_keywords_bind_to_their_positions(example: Any, expected: tuple[Any, ...]) -> None:
    from vjp_migrate.verify.inputs import positional
    from vjp_migrate.verify.pairing import VjpPair

    pair = VjpPair("f", _primal, _primal, ("lo", "hi", "x", "scale"), (0, 1), ())
    assert positional(pair, example) == expected


@pytest.mark.parametrize(
    "example, reason",
    [
        pytest.param(call(1, 2, 3, y=3), "got an unexpected keyword argument 'y'", id="unknown keyword"),
        pytest.param(call(1, hi=2), "missing a required argument: 'x'", id="missing argument"),
        pytest.param(
            call(1, 2, 3, mode="a"), "keyword-only parameters cannot be passed to a custom_vjp: mode", id="kw-only"
        ),
    ],
)
def test_an_example_that_does_not_fit_is_an_error_for_its_function(example: Any, reason: str) -> None:
    from vjp_migrate.verify.inputs import _given
    from vjp_migrate.verify.pairing import VjpPair
    from vjp_migrate.verify.session import PairResult

    pair = VjpPair("f", _primal, _primal, ("lo", "hi", "x", "scale"), (0, 1), ())
    inputs = _given(pair, [call(1, 2, 3), example])
    assert inputs.broken and inputs.note == f"example #1 does not fit the signature of `f`: {reason}"
    row = PairResult(pair, inputs).row()
    assert (row.verdict, row.message) == (Verdict.ERROR, inputs.note)


RECORDED = """\
import sys
import numpy as np

sys.path.insert(0, {folder!r})
import before

before.clip_kw(np.float32(-0.5), x=np.array([0.5, -2.0], np.float32), hi=np.float32(0.5), scale=2.0)
"""


def test_recorded_keyword_calls_are_replayed(tmp_path: Path) -> None:
    from vjp_migrate.verify.record import record

    script = tmp_path / "run.py"
    script.write_text(RECORDED.format(folder=str(UX)), encoding="utf-8")
    result = record([sys.executable, "-B", str(script)], tmp_path / "in.npz", capture=True, cwd=tmp_path)
    assert result.exit_code == 0, result.message
    done = verify_files(UX / "before.py", UX / "after.py", VerifyOptions(inputs=tmp_path / "in.npz"))
    row = _row(done, "clip_kw")
    assert (row.verdict, row.input_source, row.examples) == (Verdict.EQUAL, "recorded", 1), render_report(done)
