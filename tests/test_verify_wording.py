"""verify says 'where BEFORE gives 0' only where the largest difference really is at a zero of
BEFORE (notes/mut17-findings.md)."""

from __future__ import annotations

import numpy as np
import pytest

from vjp_migrate.verify.compare import compare_trees


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
