"""What verify says: 'where BEFORE gives 0' only where the largest difference really is at a zero
of BEFORE, and no 'nothing differs' beside a function AFTER lacks (notes/mut17-findings.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vjp_migrate.verify import VerifyOptions, verify_files
from vjp_migrate.verify.compare import compare_trees
from vjp_migrate.verify.model import Verdict


@pytest.mark.parametrize(
    ("expected", "actual", "at_zero"),
    [
        pytest.param((0.0, np.array([0.0, 1.0])), (0.0, np.array([0.0, 1.0])), False, id="equal, zeros first"),
        pytest.param(np.array([0.0, 2.0]), np.array([0.5, 2.0]), True, id="off at a zero"),
        pytest.param(np.array([0.0, 2.0]), np.array([0.0, 3.0]), False, id="off elsewhere"),
    ],
)
def test_a_difference_is_at_a_zero_of_before_only_when_there_is_one(
    expected: object, actual: object, at_zero: bool
) -> None:
    # Equal trees have no largest difference: nothing is 'where BEFORE gives 0'.
    assert compare_trees(expected, actual, None, None).at_zero is at_zero


_RULE = """
@jax.custom_vjp
def {name}(x):
    return x * 2.0


{name}.defvjp(lambda x: ({name}(x), None), lambda _, g: (g * 2.0,))
"""


def test_a_function_after_lacks_is_no_case_of_nothing_differing(tmp_path: Path) -> None:
    # `scale` is gone, `keep` is the same: the run fails on `scale`, and nothing says that no
    # custom_vjp function differs.
    before = tmp_path / "before.py"
    after = tmp_path / "after.py"
    before.write_text("import jax\n" + _RULE.format(name="keep") + _RULE.format(name="scale"))
    after.write_text("import jax\n" + _RULE.format(name="keep"))
    report = verify_files(before, after, VerifyOptions())
    assert [(r.name, r.verdict) for r in report.rows] == [("scale", Verdict.MISSING)]
    assert report.exit_code == 1
    assert not any("differs" in w for w in report.warnings), report.warnings
