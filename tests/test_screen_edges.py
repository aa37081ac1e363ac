"""The ast screen keeps what classify reports at the edges the last sessions added, under every
selection of codes (notes/mut17-findings.md)."""

from __future__ import annotations

from test_prefilter import _POSITION_IN_STAR_ARGS, _findings

from vjp_migrate import screen
from vjp_migrate.model import Settings


def test_screen_keeps_a_position_in_star_args_when_only_vjp002_is_selected() -> None:
    # `--select VJP002`: the argument `args[0]` is unknown, reported as VJP002 with no fix.
    text = _POSITION_IN_STAR_ARGS.replace("x * args[0]", "log(args[0], x)").replace("(g * w,)", "(g,)")
    settings = Settings(frozenset({"VJP002"}))
    assert _findings(text, "case.py", settings) == ["VJP002"]
    assert screen.may_report(text, settings)
