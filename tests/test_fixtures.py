"""Golden fixtures: check output, fix(before) == after, idempotence, no-ops untouched."""

from __future__ import annotations

import ast

import pytest
from conftest import Case, fixture_cases

from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import expand_selection
from vjp_migrate.model import Settings

CASES = fixture_cases()
PARAMS = [pytest.param(case, id=case.name) for case in CASES]


def settings_for(case: Case) -> Settings:
    options = case.spec.get("options", {})
    return Settings(
        expand_selection(options.get("select"), None),
        bool(options.get("unsafe_fixes", False)),
        array_args=frozenset(options.get("array_args", ())),
    )


def test_there_are_enough_fixtures() -> None:
    assert len(CASES) >= 30
    assert sum(1 for c in CASES if c.after is None and not c.spec["findings"]) >= 10  # no-ops
    assert sum(1 for c in CASES if c.after is not None) >= 20


@pytest.mark.parametrize("case", PARAMS)
def test_check_reports_expected_findings(case: Case) -> None:
    found = check_source(case.before, path="before.py", settings=settings_for(case))
    keys = ("code", "function", "argument", "index", "line", "column", "fixable")
    got = [{k: getattr(d, k) for k in keys} for d in found]
    expected = [{k: f[k] for k in keys} for f in case.spec["findings"]]
    assert sorted(got, key=str) == sorted(expected, key=str)


@pytest.mark.parametrize("case", PARAMS)
def test_fix_gives_after(case: Case) -> None:
    result = fix_source(case.before, path="before.py", settings=settings_for(case))
    expected = case.after if case.after is not None else case.before
    assert result.source == expected
    assert result.changed == (case.after is not None)


@pytest.mark.parametrize("case", [p for p in PARAMS if p.values[0].after is not None])
def test_after_is_a_fixed_point(case: Case) -> None:
    assert case.after is not None
    ast.parse(case.after)
    again = fix_source(case.after, path="after.py", settings=settings_for(case))
    assert again.source == case.after
    assert not [d for d in again.diagnostics if d.code in ("VJP001", "VJP003")]


MESSAGE_PARAMS = [p for p in PARAMS if any("message" in f for f in p.values[0].spec["findings"])]


@pytest.mark.parametrize("case", MESSAGE_PARAMS)
def test_findings_give_the_expected_reason(case: Case) -> None:
    """A finding in case.json may carry `message`: a part of the reported message (VJP003's reason)."""
    found = check_source(case.before, path="before.py", settings=settings_for(case))
    for expected in (f for f in case.spec["findings"] if "message" in f):
        (got,) = [
            d
            for d in found
            if (d.code, d.function, d.index) == (expected["code"], expected["function"], expected["index"])
        ]
        assert expected["message"] in got.message
