"""fix --verify: a rewrite is written only once real JAX gradients prove it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner
from conftest import FIXTURES

from vjp_migrate import api, verified_writes
from vjp_migrate.cli import main
from vjp_migrate.model import Status
from vjp_migrate.verify import VerifyOptions

BEFORE = (FIXTURES / "seed_clip_gradient" / "before.py").read_text(encoding="utf-8")
AFTER = (FIXTURES / "seed_clip_gradient" / "after.py").read_text(encoding="utf-8")


def test_a_faulty_rewrite_is_refused_and_a_correct_one_written(tmp_path: Path) -> None:
    wrong_file, right_file = tmp_path / "wrong.py", tmp_path / "right.py"
    wrong_file.write_text(BEFORE, encoding="utf-8")
    right_file.write_text(BEFORE, encoding="utf-8")
    planned = api.fix_paths([wrong_file, right_file], write=False)
    assert all(r.changed and not r.written for r in planned)
    faulty = AFTER.replace("jnp.clip(g, lo, hi)", "-jnp.clip(g, lo, hi)")
    assert faulty != AFTER
    injected = [dataclasses.replace(planned[0], new_text=faulty), planned[1]]
    results = verified_writes.write_verified(injected, VerifyOptions())
    wrong, right = results
    assert wrong.status is Status.FAILED and not wrong.written
    assert wrong.reason is not None and "verification failed" in wrong.reason and "clip_gradient" in wrong.reason
    assert wrong_file.read_text(encoding="utf-8") == BEFORE
    assert right.status is Status.OK and right.written
    assert right_file.read_text(encoding="utf-8") == AFTER


def test_fix_verify_command_writes_a_verified_file(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(BEFORE, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--verify", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") == AFTER


def test_write_result_refuses_a_file_changed_since_planning(tmp_path: Path) -> None:
    path = tmp_path / "seed.py"
    path.write_text(BEFORE, encoding="utf-8")
    (planned,) = api.fix_paths([path], write=False)
    path.write_text(BEFORE + "# edited meanwhile\n", encoding="utf-8")
    result = api.write_result(planned)
    assert result.status is Status.FAILED and "changed on disk" in (result.reason or "")
    assert path.read_text(encoding="utf-8").endswith("# edited meanwhile\n")


def test_fix_help_says_multi_file_migrations_are_proven_as_one_group() -> None:
    result = CliRunner().invoke(main, ["fix", "--help"], terminal_width=200)
    assert result.exit_code == 0
    help_text = " ".join(result.output.split())
    assert "Prove each file's rewrite, and each multi-file migration as one group" in help_text
    assert "written all or none" in help_text


def test_fix_verify_says_what_it_proved(tmp_path: Path) -> None:
    import jax

    path = tmp_path / "seed.py"
    path.write_text(BEFORE, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--verify", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert (
        f"Verified before writing (JAX {jax.__version__}, {jax.default_backend()}): 1 custom_vjp function gives "
        "equal outputs and cotangents, and runs under jit and vmap (`clip_gradient` on synthesized inputs only: "
        "give examples for the values that matter)." in result.stdout
    )
    path.write_text(BEFORE, encoding="utf-8")
    quiet = CliRunner().invoke(main, ["fix", "--verify", "--quiet", str(path)], catch_exceptions=False)
    assert quiet.exit_code == 0 and "Verified" not in quiet.stdout
    assert path.read_text(encoding="utf-8") == AFTER


NO_INPUTS = """\
from functools import partial

import jax


class Box:
    def __init__(self, v):
        self.v = v


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scale(box, s):
    return box.v * s


def scale_fwd(box, s):
    return scale(box, s), None


def scale_bwd(s, _, g):
    return (Box(g * s),)


scale.defvjp(scale_fwd, scale_bwd)
"""


def test_fix_verify_names_a_rewrite_it_could_not_run(tmp_path: Path) -> None:
    # verify synthesizes no Box: the rewrite is written (not refused), and the run says it is unproven
    path = tmp_path / "box.py"
    path.write_text(NO_INPUTS, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--verify", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert path.read_text(encoding="utf-8") != NO_INPUTS
    assert "written without proof, no inputs to run `scale` (give examples: docs/verify.md)." in result.stdout
    assert "gives equal" not in result.stdout


POWER = """\
from functools import partial
import operator
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def power(n, x):
  return x ** operator.index(n)

def power_fwd(n, x):
  return x ** operator.index(n), x

def power_bwd(n, x, g):
  return (g * operator.index(n) * x ** (operator.index(n) - 1),)

power.defvjp(power_fwd, power_bwd)
"""


def _power_examples(tmp_path: Path) -> list[str]:
    """An unsafe fix that verification refuses: `n` moved out of nondiff_argnums is traced under jit."""
    examples = tmp_path / "ex.py"
    examples.write_text("EXAMPLES = {'power': [(2, 3.0)]}\n", encoding="utf-8")
    return ["--verify", "--verify-examples", str(examples), "--unsafe-fixes", "--select", "VJP"]


REFUSED = "error: rewrite not written, verification failed: power: jit, example #0"


def test_fix_verify_from_stdin_prints_a_refused_rewrite_back_unchanged(tmp_path: Path) -> None:
    """cli29 15: `fix --verify -` printed the rewrite `fix --verify FILE` refuses, exit 0."""
    result = CliRunner().invoke(main, ["fix", *_power_examples(tmp_path), "-"], input=POWER, catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stdout == POWER
    assert result.stderr.startswith(f"-: {REFUSED}")
    path = tmp_path / "power.py"
    path.write_text(POWER, encoding="utf-8")
    in_file = CliRunner().invoke(main, ["fix", *_power_examples(tmp_path), str(path)], catch_exceptions=False)
    assert in_file.exit_code == 2 and in_file.stderr.startswith(f"{path}: {REFUSED}")


def test_fix_verify_from_stdin_prints_a_proven_rewrite_and_says_so_on_stderr() -> None:
    result = CliRunner().invoke(main, ["fix", "--verify", "-"], input=BEFORE, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout == AFTER
    assert result.stderr.startswith("Verified before writing (JAX ")


def test_fix_verify_interactive_writes_an_accepted_change_only_once_proven(tmp_path: Path) -> None:
    """cli29 15: `yes y | fix -i --verify` wrote the rewrite verification refuses."""
    path = tmp_path / "power.py"
    path.write_text(POWER, encoding="utf-8")
    args = ["fix", "-i", *_power_examples(tmp_path), str(path)]
    result = CliRunner().invoke(main, args, input="y\n", catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"{path}: {REFUSED}")
    assert path.read_text(encoding="utf-8") == POWER


def test_fix_verify_interactive_proves_a_multi_file_migration_as_one_group(tmp_path: Path) -> None:
    import shutil

    case = FIXTURES / "project_absolute_imports"
    tree = tmp_path / "proj"
    shutil.copytree(case / "before", tree)
    args = ["fix", "-i", "--verify", "--verify-examples", str(case / "examples.py"), str(tree)]
    result = CliRunner().invoke(main, args, input="y\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.stdout.count("Apply this change?") == 1
    assert "Verified before writing" in result.stdout and "3 custom_vjp functions give equal" in result.stdout
    for after in (case / "after").rglob("*.py"):
        assert (tree / after.relative_to(case / "after")).read_bytes() == after.read_bytes()


def _notebook(code: str) -> str:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": ["# A notebook\n"]},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": "%matplotlib inline"},
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": code},
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}, indent=1) + "\n"


def test_fix_verify_proves_a_notebook_from_its_code_cells(tmp_path: Path) -> None:
    # Verify imported the notebook's JSON as Python before (NameError: null): every notebook refused.
    path = tmp_path / "clip.ipynb"
    path.write_text(_notebook(BEFORE), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--verify", str(path)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "1 custom_vjp function gives equal outputs and cotangents" in result.stdout
    assert json.loads(path.read_text(encoding="utf-8"))["cells"][2]["source"] == AFTER


def test_fix_verify_refuses_a_faulty_notebook_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "clip.ipynb"
    path.write_text(_notebook(BEFORE), encoding="utf-8")
    (planned,) = api.fix_paths([path], write=False)
    faulty = _notebook(AFTER.replace("jnp.clip(g, lo, hi)", "-jnp.clip(g, lo, hi)"))
    (result,) = verified_writes.write_verified([dataclasses.replace(planned, new_text=faulty)], VerifyOptions())
    assert result.status is Status.FAILED and result.reason is not None
    assert "verification failed: clip_gradient" in result.reason
    assert path.read_text(encoding="utf-8") == _notebook(BEFORE)


def test_verify_command_takes_notebooks(tmp_path: Path) -> None:
    before, after = tmp_path / "before.ipynb", tmp_path / "after.ipynb"
    before.write_text(_notebook(BEFORE), encoding="utf-8")
    after.write_text(_notebook(AFTER), encoding="utf-8")
    result = CliRunner().invoke(main, ["verify", str(before), str(after)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "1 equal (exit code 0)" in result.stdout
    after.write_text(_notebook(AFTER.replace("jnp.clip(g, lo, hi)", "-jnp.clip(g, lo, hi)")), encoding="utf-8")
    assert CliRunner().invoke(main, ["verify", str(before), str(after)], catch_exceptions=False).exit_code == 1
