"""Every golden fixture pair (fixtures/<case>/before.py + after.py) verifies equal with real
JAX gradients, using the case's examples.py. All pairs run in two worker processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from vjp_migrate.verify import VerifyOptions, VerifyReport, render_report, verify_many

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p for p in FIXTURES.iterdir() if (p / "after.py").is_file()) if FIXTURES.is_dir() else []


def test_there_are_fixture_pairs_to_verify() -> None:
    assert CASES, f"no fixtures/<case>/after.py under {FIXTURES}"


@pytest.fixture(scope="module")
def reports() -> dict[str, VerifyReport]:
    examples = [c / "examples.py" if (c / "examples.py").is_file() else None for c in CASES]
    pairs = [(c / "before.py", c / "after.py") for c in CASES]
    return {c.name: r for c, r in zip(CASES, verify_many(pairs, VerifyOptions(), examples, workers=2), strict=False)}


@pytest.mark.parametrize("case", [pytest.param(c.name, id=c.name) for c in CASES])
def test_fixture_pair_verifies_equal(reports: dict[str, VerifyReport], case: str) -> None:
    report = reports[case]
    if any(e.startswith("could not import BEFORE") for e in report.errors):
        # a BEFORE that JAX itself rejects on import, which the codemod must still parse
        pytest.xfail(f"JAX rejects this fixture's BEFORE: {report.errors[0]}")
    assert report.exit_code == 0, render_report(report)
    assert report.rows, f"{case}: no custom_vjp function differs between before.py and after.py"
    assert all(r.input_source == "examples" for r in report.rows), render_report(report)
