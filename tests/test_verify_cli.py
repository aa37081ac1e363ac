"""The thin CLI over the verify API: exit codes and output formats."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from vjp_migrate.cli import main

DATA = Path(__file__).parent / "data" / "verify"


def test_verify_cli_mismatch_exit_1_names_function_and_argument() -> None:
    wrong = DATA / "wrong"
    done = CliRunner().invoke(
        main,
        [
            "verify",
            str(wrong / "before.py"),
            str(wrong / "after.py"),
            "--examples",
            str(wrong / "examples.py"),
            "--output-format",
            "json",
        ],
    )
    assert done.exit_code == 1, done.output
    data = json.loads(done.output)
    swapped = next(f for f in data["functions"] if f["name"] == "clip_swapped")
    failing = [c for c in swapped["checks"] if c["status"] == "fail"]
    assert failing[0]["where"] == "argument x (position 2)" and failing[0]["max_abs_err"] > 0


def test_verify_cli_not_verified_is_a_warning_unless_strict() -> None:
    args = ["verify", str(DATA / "callable" / "before.py"), str(DATA / "callable" / "after.py")]
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert "not verified (no inputs)" in done.output
    assert CliRunner().invoke(main, [*args, "--strict"]).exit_code == 2


def test_record_cli_needs_a_command() -> None:
    done = CliRunner().invoke(main, ["record", "--out", "x.npz"])
    assert done.exit_code == 2
    assert "Missing argument 'COMMAND...'" in done.output
