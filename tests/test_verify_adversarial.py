"""verify against migrations that are wrong only for some inputs, and examples files that are
easy to get wrong (real JAX on CPU): synthesized inputs reach sign and zero branches, an
equal verdict on synthesized inputs says how far it goes, a misspelt EXAMPLES key is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from vjp_migrate.verify import Verdict, VerifyOptions, render_report, verify_files
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


def test_an_error_whose_first_line_ends_in_a_colon_keeps_the_next_line() -> None:
    error = TypeError("Binding failed with the error:\n  missing a required argument: 'x'")
    assert error_text(error) == "TypeError: Binding failed with the error: missing a required argument: 'x'"
