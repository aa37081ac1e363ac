from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    before: str
    after: str | None
    spec: dict  # type: ignore[type-arg]


def read_exact(path: Path) -> str:
    # newline="" keeps CRLF files byte-faithful
    with open(path, encoding="utf-8", newline="") as handle:
        return handle.read()


def fixture_cases() -> list[Case]:
    cases = []
    for folder in sorted(p for p in FIXTURES.iterdir() if (p / "before.py").is_file()):
        after = folder / "after.py"
        cases.append(
            Case(
                name=folder.name,
                folder=folder,
                before=read_exact(folder / "before.py"),
                after=read_exact(after) if after.is_file() else None,
                spec=json.loads((folder / "case.json").read_text(encoding="utf-8")),
            )
        )
    return cases


# Hypothesis profiles for tests/test_properties.py: `ci` (the default) keeps the suite fast;
# `pytest --hypothesis-profile=long` explores far more generated modules. Registered here
# because the hypothesis plugin resolves --hypothesis-profile when pytest starts.
try:
    from hypothesis import HealthCheck
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # pragma: no cover - hypothesis is a test extra
    pass
else:
    _hypothesis_settings.register_profile(
        "ci", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
    )
    _hypothesis_settings.register_profile(
        "long", max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    _hypothesis_settings.load_profile("ci")


@pytest.fixture
def own_git_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No git configuration of the machine's (global excludes!): a home folder of the test's, no system file."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("GIT_CONFIG_GLOBAL", raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    return home
