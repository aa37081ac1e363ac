"""The installed JAX package uses nondiff_argnums legitimately: check must stay silent on it."""

from __future__ import annotations

from pathlib import Path

import jax

from vjp_migrate.api import check_paths
from vjp_migrate.model import Status


def test_check_over_installed_jax_reports_nothing_and_never_fails() -> None:
    root = Path(jax.__file__).parent
    results = check_paths([root])
    assert len(results) > 300  # the whole package was walked
    assert [(r.path, r.reason) for r in results if r.status is Status.FAILED] == []
    assert [f"{d.path}:{d.line} {d.code}" for r in results for d in r.diagnostics] == []
    # and the files that do mention nondiff_argnums were really analysed, not skipped
    mentions = [p for p in root.rglob("*.py") if b"nondiff_argnums" in p.read_bytes()]
    assert len(mentions) >= 10
