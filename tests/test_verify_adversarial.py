"""verify against migrations that are wrong only for some inputs, and examples files that are
easy to get wrong (real JAX on CPU): synthesized inputs reach sign and zero branches, an
equal verdict on synthesized inputs says how far it goes, a misspelt EXAMPLES key is named."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from vjp_migrate.verify import (
    CheckOutcome,
    CheckStatus,
    Verdict,
    VerifyOptions,
    VerifyReport,
    render_report,
    verify_files,
)
from vjp_migrate.verify.checks import error_text

DATA = Path(__file__).parent / "data" / "verify" / "branches"


def test_synthesized_inputs_reach_a_bwd_wrong_for_negative_values_only() -> None:
    report = verify_files(DATA / "before.py", DATA / "after.py", VerifyOptions())
    row = report.rows[0]
    assert row.input_source == "synthesized"
    assert row.verdict is Verdict.MISMATCH, render_report(report)
    assert report.exit_code == 1


def test_synthesized_inputs_reach_a_bwd_wrong_at_zero_only() -> None:
    report = verify_files(DATA / "before.py", DATA / "after_zero.py", VerifyOptions())
    assert report.rows[0].verdict is Verdict.MISMATCH, render_report(report)


def test_equal_on_synthesized_inputs_says_it_is_only_that() -> None:
    report = verify_files(DATA / "before.py", DATA / "after_right.py", VerifyOptions())
    assert report.rows[0].verdict is Verdict.EQUAL
    assert any(w.startswith("scale: equal on 3 synthesized inputs only") for w in report.warnings)
    assert "give --examples" in render_report(report)


def test_misspelt_examples_key_is_a_warning_naming_the_functions() -> None:
    options = VerifyOptions(examples=DATA / "examples_typo.py")
    report = verify_files(DATA / "before.py", DATA / "after_right.py", options)
    assert "EXAMPLES key 'scael' names no custom_vjp function; not used (functions: scale)" in report.warnings


def test_one_example_written_without_its_list_is_one_clear_error() -> None:
    options = VerifyOptions(examples=DATA / "examples_one_tuple.py")
    report = verify_files(DATA / "before.py", DATA / "after_right.py", options)
    assert report.exit_code == 2
    assert "EXAMPLES['scale'] is a tuple, not a list of examples" in report.errors[0]


def test_an_empty_list_of_examples_says_so() -> None:
    options = VerifyOptions(examples=DATA / "examples_empty.py")
    report = verify_files(DATA / "before.py", DATA / "after_right.py", options)
    assert report.rows[0].verdict is Verdict.NOT_VERIFIED
    assert "scale: not verified (no inputs): the examples file lists no example for it" in report.warnings


def test_a_module_of_the_current_folder_does_not_shadow_the_standard_library() -> None:
    # DATA holds a glob.py; the worker runs with it as its current folder
    env = dict(os.environ)
    code = (
        "from pathlib import Path; from vjp_migrate.verify import VerifyOptions, verify_files; "
        "r = verify_files(Path('before.py'), Path('after_right.py'), VerifyOptions()); "
        "print(r.exit_code, list(r.errors))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=DATA, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0 []"


def test_another_vjp_migrate_in_the_current_folder_does_not_shadow_the_worker(tmp_path: Path) -> None:
    # A checkout of another vjp-migrate as the current folder: its worker must not run.
    shadow = tmp_path / "checkout" / "vjp_migrate" / "verify"
    shadow.mkdir(parents=True)
    (shadow.parent / "__init__.py").write_text("")
    (shadow / "__init__.py").write_text("")
    (shadow / "worker.py").write_text('print(\'{"fatal": "the other copy ran"}\', flush=True)\n')
    runner = tmp_path / "tools" / "run.py"  # started by path: its folder, not the current one, on sys.path
    runner.parent.mkdir()
    runner.write_text(
        "import sys\nfrom pathlib import Path\nfrom vjp_migrate.verify import VerifyOptions, verify_files\n"
        "r = verify_files(Path(sys.argv[1]), Path(sys.argv[2]), VerifyOptions())\n"
        "print(r.exit_code, list(r.errors))\n"
    )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    command = [sys.executable, str(runner), str(DATA / "before.py"), str(DATA / "after_right.py")]
    done = subprocess.run(command, cwd=shadow.parent.parent, env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "0 []", done.stderr


def test_an_error_whose_first_line_ends_in_a_colon_keeps_the_next_line() -> None:
    error = TypeError("Binding failed with the error:\n  missing a required argument: 'x'")
    assert error_text(error) == "TypeError: Binding failed with the error: missing a required argument: 'x'"


# ---------------------------------------------------------------- round 13: one pair per kind of subtle bug
# adversarial/before.py holds one custom_vjp function per case; after_wrong.py gets every one of
# them subtly wrong, after_right.py migrates every one faithfully. One worker run per AFTER.

ADV = Path(__file__).parent / "data" / "verify" / "adversarial"
WRONG_IN_AFTER = {
    "interleaved": "x and y trade cotangents (two moved arguments between them)",
    "clip": "x's cotangent one slot early, in lo's",
    "signed_scale": "the residual is abs(lo), not lo",
    "affine": "a dict of arrays as nondiff data; the rule reads the wrong key",
    "weighted": "a tuple of arrays as nondiff data; the rule trades its items",
    "gather": "integer indices; .set for .add, wrong for repeated indices only",
    "global_scaled": "a module global AFTER changed",
    "untouched": "code unchanged, but a module global it reads changed",
    "two_outputs": "a pytree output; the aux output's cotangent dropped",
    "above": "a bool output, >= for >",
    "Ops.shift": "a staticmethod; the cotangent's sign",
    "softplus_scaled": "wrong when run eagerly only",
    "clip_synth": "x's cotangent in lo's slot; synthesized inputs only",
    "expscale": "float64 inputs (jax_enable_x64); the cotangent cast down to float32",
}


@pytest.fixture(scope="module")
def wrong_report() -> VerifyReport:
    return verify_files(ADV / "before.py", ADV / "after_wrong.py", VerifyOptions(examples=ADV / "examples.py"))


@pytest.fixture(scope="module")
def right_report() -> VerifyReport:
    return verify_files(ADV / "before.py", ADV / "after_right.py", VerifyOptions(examples=ADV / "examples.py"))


@pytest.mark.parametrize("name", sorted(WRONG_IN_AFTER))
def test_a_subtly_wrong_after_is_never_equal(wrong_report: VerifyReport, name: str) -> None:
    rows = {r.name: r for r in wrong_report.rows}
    assert name in rows, f"{name} ({WRONG_IN_AFTER[name]}) was not verified"
    assert rows[name].verdict is Verdict.MISMATCH, WRONG_IN_AFTER[name]


def test_a_faithful_after_is_equal_everywhere(right_report: VerifyReport) -> None:
    # gather's vmap check failed here: the unbatched x reached fwd as a NumPy array, which
    # NumPy then indexed with the traced idx (no JAX caller passes one)
    assert {r.name: r.verdict for r in right_report.rows} == dict.fromkeys(
        sorted(set(WRONG_IN_AFTER) - {"untouched"} | {"offset", "gate"}), Verdict.EQUAL
    ), render_report(right_report)
    assert right_report.exit_code == 0


def test_a_function_renamed_in_after_fails_the_run_on_one_line(wrong_report: VerifyReport) -> None:
    row = next(r for r in wrong_report.rows if r.name == "offset")
    assert row.verdict is Verdict.MISSING
    assert wrong_report.exit_code == 1
    line = (
        f"offset: a custom_vjp function of BEFORE ({ADV / 'before.py'}) that AFTER ({ADV / 'after_wrong.py'}) "
        "lacks; AFTER has shifted instead: a migration never renames or removes one"
    )
    assert line in render_report(wrong_report).splitlines()
    assert json.loads(render_report(wrong_report, "json"))["functions"][0]["verdict"] == "missing in AFTER"


def test_an_error_against_a_zero_of_before_reads_as_an_absolute_one(wrong_report: VerifyReport) -> None:
    text = render_report(wrong_report)
    assert "above: primal, example #0, on cpu, output[1]: fail (max abs err 1 where BEFORE gives 0)" in text
    assert "e+30" not in text and "e+30" not in render_report(wrong_report, "json")
    clip_moved = "clip: moved cotangents, example #0, on cpu, argument lo (position 0): fail (max abs err 0.64 where"
    assert clip_moved in text
    above = next(r for r in wrong_report.rows if r.name == "above")
    assert above.problems[0].reference_zero and above.problems[0].max_rel_err == 0.0


def test_describe_says_where_before_gives_zero_instead_of_a_ratio() -> None:
    outcome = CheckOutcome("primal", CheckStatus.FAIL, 0, "cpu", "output", 1.0, 0.0, reference_zero=True)
    assert outcome.describe() == "primal, example #0, on cpu, output: fail (max abs err 1 where BEFORE gives 0)"
    mixed = CheckOutcome("primal", CheckStatus.FAIL, max_abs_err=2.0, max_rel_err=0.5, reference_zero=True)
    assert mixed.describe() == "primal: fail (max abs err 2 where BEFORE gives 0, max rel err 0.5 elsewhere)"


def test_fix_verify_refuses_a_rewrite_whose_after_lacks_a_function() -> None:
    from vjp_migrate.verified_writes import _failure
    from vjp_migrate.verify.model import missing_row

    report = VerifyReport("a.py (before)", "a.py (after)", rows=(missing_row("clip", "a.py (before)", "a.py (after)"),))
    assert _failure(report) == (
        "clip: a custom_vjp function of BEFORE (a.py (before)) that AFTER (a.py (after)) lacks: "
        "a migration never renames or removes one"
    )


def test_a_gate_no_input_opens_is_named_even_when_equal(wrong_report: VerifyReport) -> None:
    # gate's AFTER is wrong beyond x = 10, which no synthesized input reaches: equal, but said
    assert next(r for r in wrong_report.rows if r.name == "gate").verdict is Verdict.EQUAL
    assert (
        "gate: BEFORE gives argument x (position 1) a zero cotangent on every input, so its rule was never "
        "exercised: give --examples where it is not zero"
    ) in wrong_report.warnings


def test_an_argument_with_a_nonzero_cotangent_on_some_input_is_exercised(right_report: VerifyReport) -> None:
    # clip_synth's x has a zero cotangent on the inputs outside its bounds only: its rule ran.
    zero = [w.split(":", 1)[0] for w in right_report.warnings if "zero cotangent on every input" in w]
    assert zero == ["gate"], right_report.warnings


def test_a_float64_result_of_before_is_held_to_float64_tolerance_when_after_gives_float32() -> None:
    import jax
    import jax.numpy as jnp

    from vjp_migrate.verify.compare import compare_trees

    # jax.enable_x64 from JAX 0.7 on, jax.experimental.enable_x64 before
    enable_x64 = (
        jax.enable_x64 if hasattr(jax, "enable_x64") else importlib.import_module("jax.experimental").enable_x64
    )
    with enable_x64(True):
        before = jnp.asarray([1.0, 34.123456789], jnp.float64)
        after = before.astype(jnp.float32)  # a rule that drops to single precision
        assert not compare_trees(before, after, None, None).ok
        # a Python scalar of BEFORE may come back as either precision
        assert compare_trees(float(before[1]), after[1], None, None).ok


PAIRING_SOURCE = """
import functools
import jax
import jax.numpy as jnp

SCALE = {scale}
_double = jax.jit(lambda x: x * 2.0)
_clip = functools.partial(jnp.clip, min=-1.0)


def _helper(x):
    return _clip(_double(x)) * SCALE


@jax.custom_vjp
def f(x):
    return _helper(x)


f.defvjp(lambda x: (_helper(x), None), lambda _, g: (g * SCALE,))
"""


def _module(name: str, scale: float) -> object:
    import types

    module = types.ModuleType(name)
    exec(compile(PAIRING_SOURCE.format(scale=scale), name, "exec"), vars(module))
    return module


def test_pairing_sees_a_changed_global_behind_an_unchanged_rule_and_nothing_else() -> None:
    import jax

    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions

    before = find_custom_vjps(_module("before_m", 2.0), jax.custom_vjp)  # type: ignore[arg-type]
    same = find_custom_vjps(_module("after_m", 2.0), jax.custom_vjp)  # type: ignore[arg-type]
    changed = find_custom_vjps(_module("after_m", 2.5), jax.custom_vjp)  # type: ignore[arg-type]
    assert pair_functions(before, same)[0] == []  # fresh jit/partial objects, same code: not verified again
    assert [p.name for p in pair_functions(before, changed)[0]] == ["f"]


def test_pairing_sees_a_changed_closure_value_of_a_factory() -> None:
    import types

    import jax

    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions

    source = (
        "import jax\n\n\ndef make_op(k={k}):\n    @jax.custom_vjp\n    def op(x):\n        return x * k\n\n"
        "    op.defvjp(lambda x: (x * k, None), lambda _, g: (g * k,))\n    return op\n"
    )

    def found(k: float) -> dict[str, object]:
        module = types.ModuleType("factory_m")
        exec(compile(source.format(k=k), "factory_m", "exec"), vars(module))
        return find_custom_vjps(module, jax.custom_vjp, ["make_op()"])

    assert pair_functions(found(2.0), found(2.0))[0] == []
    assert [p.name for p in pair_functions(found(2.0), found(2.5))[0]] == ["make_op()"]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            "import jax\n\n\ndef f_bwd(_, g, k={k}):\n    return (g * k,)\n\n\n"
            "@jax.custom_vjp\ndef f(x):\n    return x\n\n\nf.defvjp(lambda x: (x, None), f_bwd)\n",
            id="a default of the rule",
        ),
        pytest.param(
            "import jax\nimport numpy as np\n\nW = np.array([{k}, 1.0])\n\n\n"
            "@jax.custom_vjp\ndef f(x):\n    return x\n\n\nf.defvjp(lambda x: (x, None), lambda _, g: (g * W[0],))\n",
            id="the values of a global array",
        ),
    ],
)
def test_pairing_sees_a_changed_value_the_rule_reads(source: str) -> None:
    import types

    import jax

    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions

    def found(k: float) -> dict[str, Any]:
        module = types.ModuleType("values_m")
        exec(compile(source.format(k=k), "values_m", "exec"), vars(module))
        return find_custom_vjps(module, jax.custom_vjp)

    assert pair_functions(found(2.0), found(2.0))[0] == []  # the same values: not verified again
    assert [p.name for p in pair_functions(found(2.0), found(2.5))[0]] == ["f"]


def test_pairing_sees_an_unchanged_rule_with_a_nested_function_as_unchanged() -> None:
    # A lambda, def or generator in a rule made every load of it differ: verified again each
    # time, and a global only a nested function reads was never what told the two apart.
    import types

    import jax

    from vjp_migrate.verify.pairing import find_custom_vjps, pair_functions

    source = (
        "import jax\n\nK = {k}\n\n\ndef f_bwd(_, g):\n    scale = lambda: K\n    return (g * scale(),)\n\n\n"
        "@jax.custom_vjp\ndef f(x):\n    return x\n\n\nf.defvjp(lambda x: (x, None), f_bwd)\n"
    )

    def found(k: float) -> dict[str, Any]:
        module = types.ModuleType("nested_m")
        exec(compile(source.format(k=k), "nested_m", "exec"), vars(module))
        return find_custom_vjps(module, jax.custom_vjp)

    assert [p.name for p in pair_functions(found(2.0), found(2.5))[0]] == ["f"]
    assert pair_functions(found(2.0), found(2.0))[0] == []
