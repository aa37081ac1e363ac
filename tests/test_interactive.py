"""fix --interactive: each site's diff, then y / n / q."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, ROOT
from test_plan_needs import chained

from vjp_migrate.api import fix_source
from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
TWO = (
    SEED
    + "\n\n"
    + SEED.split("\n", 1)[1].replace("clip_gradient", "other").replace("from functools import partial\n", "")
)


@pytest.mark.parametrize(
    "answers, first_fixed, second_fixed",
    [
        pytest.param("y\ny\n", True, True, id="accept both"),
        pytest.param("n\ny\n", False, True, id="reject the first"),
        pytest.param("y\nq\n", True, False, id="quit keeps what was accepted"),
        pytest.param("maybe\nn\nn\n", False, False, id="asks again after a bad answer"),
    ],
)
def test_interactive_applies_only_accepted_sites(
    tmp_path: Path, answers: str, first_fixed: bool, second_fixed: bool
) -> None:
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--interactive", str(target)], input=answers, catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == answers.count("\n")
    assert "+@jax.custom_vjp" in result.stdout
    text = target.read_text(encoding="utf-8")
    assert ("def clip_gradient_bwd(res, g):" in text) is first_fixed
    assert ("def other_bwd(res, g):" in text) is second_fixed
    if first_fixed and second_fixed:
        assert text == fix_source(TWO).source
        assert result.exit_code == 0
    else:
        assert result.exit_code == 1  # findings remain


def test_users_of_a_shared_rule_are_asked_about_once(tmp_path: Path) -> None:
    target = tmp_path / "ops.py"
    target.write_bytes((FIXTURES / "shared_bwd_same_positions" / "before.py").read_bytes())
    result = CliRunner().invoke(main, ["fix", "--interactive", str(target)], input="y\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 1
    assert "custom_vjp `clip_min`, `clip_max`" in result.stdout
    assert target.read_bytes() == (FIXTURES / "shared_bwd_same_positions" / "after.py").read_bytes()
    assert result.exit_code == 0


def test_a_walk_reads_only_files_that_mention_a_trigger_as_fix_does(tmp_path: Path) -> None:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "unrelated.py").write_text("def broken(:\n", encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], input="y\n", catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "unrelated.py" not in result.output


def test_an_unreadable_file_gets_the_usual_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from vjp_migrate import api

    target = tmp_path / "seed.py"
    target.write_text(SEED, encoding="utf-8")
    real = api.read_bytes

    def read_bytes(path: Path) -> bytes:
        if path == target:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(api, "read_bytes", read_bytes)  # as root, chmod 000 would not stop the read
    result = CliRunner().invoke(main, ["fix", "-i", "-j", "1", str(target)], catch_exceptions=False)
    assert result.exit_code == 2
    assert result.stderr == f"{target}: error: cannot be read: Permission denied\n"


def test_a_notebook_is_not_skipped_silently(tmp_path: Path) -> None:
    from test_notebook import notebook_text

    target = tmp_path / "clip.ipynb"
    target.write_text(notebook_text(), encoding="utf-8")
    (tmp_path / "other.ipynb").write_text(notebook_text([("code", "import jax")]), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], catch_exceptions=False)
    assert result.exit_code == 1  # its findings remain
    assert "clip.ipynb:cell 3:2:19: VJP001" in result.stdout
    assert result.stderr == (
        f"vjp-migrate: {target}: notebooks are not reviewed site by site; "
        f"`vjp-migrate fix --diff {target}` shows their change\n"
    )


def test_the_command_for_a_notebook_works_for_a_path_that_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_notebook import notebook_text

    monkeypatch.chdir(tmp_path)
    Path("-nb.ipynb").write_text(notebook_text(), encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", "--", "-nb.ipynb"], catch_exceptions=False)
    assert result.stderr.endswith("`vjp-migrate fix --diff ./-nb.ipynb` shows their change\n")
    shown = CliRunner().invoke(main, ["fix", "--diff", "./-nb.ipynb"], catch_exceptions=False)
    assert shown.exit_code == 1 and shown.stdout.startswith("--- -nb.ipynb\n")


@pytest.mark.parametrize(
    "answers, first_fixed",
    [
        pytest.param("", False, id="no answer at all"),
        pytest.param("y\n", True, id="after one answer"),
    ],
)
def test_end_of_input_stops_and_applies_nothing_more(tmp_path: Path, answers: str, first_fixed: bool) -> None:
    """End of input means q: what was accepted is written, nothing more, and the run ends cleanly."""
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    other = tmp_path / "zzz.py"
    other.write_text(SEED, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tmp_path)], input=answers, catch_exceptions=False)
    assert "Aborted!" not in result.output
    assert result.stderr == "vjp-migrate: end of input: stopped; nothing more is applied\n"
    assert result.stdout.count("Apply this change?") == answers.count("\n") + 1
    text = target.read_text(encoding="utf-8")
    assert ("def clip_gradient_bwd(res, g):" in text) is first_fixed
    assert "def other_bwd(res, g):" not in text
    assert other.read_text(encoding="utf-8") == SEED  # never asked about
    summary = "Fixed 2 findings in 1 file, 2 remaining." if first_fixed else "Nothing fixed, 4 findings remaining."
    assert result.stdout.endswith(summary + "\n")
    assert result.exit_code == 1  # findings remain, as after q


def test_interactive_and_diff_together_are_a_usage_error(tmp_path: Path) -> None:
    """cli28 03: `--diff` writes nothing, yet an accepted change was written."""
    target = tmp_path / "two.py"
    target.write_text(TWO, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--diff", "--interactive", str(target)], input="y\ny\n")
    assert result.exit_code == 2 and "--diff writes nothing" in result.output, result.output
    assert target.read_text(encoding="utf-8") == TWO


def fixed_by_fix(tree: Path, tmp_path: Path) -> dict[str, bytes]:
    """Every file of ``tree`` as plain `fix` leaves it (run on a copy)."""
    copy = tmp_path / "by_fix"
    shutil.copytree(tree, copy)
    CliRunner().invoke(main, ["fix", str(copy)], catch_exceptions=False)
    return {p.relative_to(copy).as_posix(): p.read_bytes() for p in sorted(copy.rglob("*.py"))}


def files_of(tree: Path) -> dict[str, bytes]:
    return {p.relative_to(tree).as_posix(): p.read_bytes() for p in sorted(tree.rglob("*.py"))}


@pytest.mark.parametrize("answer", ["y", "n", "q"])
def test_a_multi_file_migration_is_one_question_showing_every_file(tmp_path: Path, answer: str) -> None:
    """cli29 16: `fix -i FOLDER` analysed each file alone, so rules imported from another file of
    the folder were VJP003 there, and nothing was asked, where `fix FOLDER` migrates them."""
    case = FIXTURES / "project_absolute_imports"
    tree = tmp_path / "proj"
    shutil.copytree(case / "before", tree)
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input=f"{answer}\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 1
    ops, rules = tree / "mypkg" / "ops.py", tree / "mypkg" / "rules.py"
    assert f"{ops}, {rules}: custom_vjp `scale`, `shifted_abs`, `gated`" in result.stdout
    assert f"--- {ops}\n" in result.stdout and f"--- {rules}\n" in result.stdout
    assert "VJP003" not in result.output
    if answer == "y":
        assert result.exit_code == 0 and result.stdout.endswith("Fixed 3 findings in 2 files.\n")
        assert files_of(tree) == files_of(case / "after")
    else:
        assert result.exit_code == 1 and result.stdout.count("VJP001") == 3
        assert files_of(tree) == files_of(case / "before")


def helper_tree(root: Path) -> Path:
    """ops.py: `capped`, whose `cap` is array data only in a helper of _helpers.py (phase 2 reads
    it), and a custom_vjp of its own."""
    from test_project_helpers import DEEPER, HELPERS, SITE

    local = SEED.split("import jax.numpy as jnp\n", 1)[1]
    site = SITE.format(spelling="import jax.numpy as jnp\nfrom ._helpers import soft_cap", call="soft_cap")
    files = {"pkg/__init__.py": "", "pkg/_helpers.py": HELPERS, "pkg/deeper.py": DEEPER, "pkg/ops.py": site + local}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


@pytest.mark.parametrize("answers", ["y\ny\n", "y\nn\n"])
def test_sites_that_follow_helpers_into_other_files_are_asked_one_by_one(tmp_path: Path, answers: str) -> None:
    tree = helper_tree(tmp_path / "t")
    expected = fixed_by_fix(tree, tmp_path)
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input=answers, catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 2
    assert "custom_vjp `capped`\n" in result.stdout and "custom_vjp `clip_gradient`\n" in result.stdout
    ops = (tree / "pkg" / "ops.py").read_text(encoding="utf-8")
    assert "@jax.custom_vjp\ndef capped(x, cap):" in ops  # `cap` moved, as the run over the package sees it
    if answers == "y\ny\n":
        assert files_of(tree) == expected and result.exit_code == 0
    else:
        assert "def clip_gradient_bwd(lo, hi, _, g):" in ops and result.exit_code == 1


def test_a_file_whose_sites_alone_do_not_make_fixs_change_is_one_question(tmp_path: Path) -> None:
    """`weighted_twin` shares its fwd with `weighted_flipped`, whose bwd is shared across files by
    users that disagree: the run blocks both. Planned again file by file, `weighted_twin` would
    migrate (changing the fwd `weighted_flipped` still needs), so the file's change, the one to
    `clip_gradient`, is asked as a whole."""
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "project_shared_bwd_differs" / "before", tree)
    flipped = tree / "mypkg" / "flipped.py"
    twin = (
        "\n\n@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef weighted_twin(weight, x):\n    return x * weight\n\n\n"
        "def twin_bwd(weight, x, g):\n    return (g * weight,)\n\n\nweighted_twin.defvjp(weighted_flipped_fwd, twin_bwd)\n"
    )
    local = "\n\nimport jax.numpy as jnp\n" + SEED.split("import jax.numpy as jnp\n", 1)[1]
    flipped.write_text(flipped.read_text(encoding="utf-8") + twin + local, encoding="utf-8")
    expected = fixed_by_fix(tree, tmp_path)
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input="y\ny\ny\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 1
    assert f"{flipped}: custom_vjp `clip_gradient`\n" in result.stdout
    assert files_of(tree) == expected
    assert "def weighted_flipped_fwd(weight, x):\n    return x * weight, x\n" in flipped.read_text(encoding="utf-8")


def test_a_site_the_run_blocks_leaves_the_other_sites_of_its_file_asked_one_by_one(tmp_path: Path) -> None:
    """`weighted`'s bwd is shared across files by users that disagree: planned again alone it would
    migrate, changing rules.py too; it is not among the changes of a file changed on its own."""
    tree = tmp_path / "t"
    shutil.copytree(FIXTURES / "project_shared_bwd_differs" / "before", tree)
    linear = tree / "mypkg" / "linear.py"
    before = linear.read_text(encoding="utf-8")
    linear.write_text(before + "\n\n" + TWO, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input="y\nn\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 2
    text = linear.read_text(encoding="utf-8")
    assert text.startswith(before)  # `weighted` as it was
    assert "def clip_gradient_bwd(res, g):" in text and "def other_bwd(lo, hi, _, g):" in text


NEEDY = chained(("inner", None), ("outer", "inner"))  # outer passes its moved `w` on to inner's nondiff `w`
LEFT = (
    "custom_vjp `outer` is left as it is: its fix needs the fix of `inner`, which is not applied (the primal "
    "`outer` passes `w` to position 1 of `inner`, which stays in nondiff_argnums: `w` would be a Tracer passed "
    "as a static argument)\n"
)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(NEEDY, id="inner first"),
        pytest.param(chained(("outer", "inner"), ("inner", None)), id="outer first"),
    ],
)
@pytest.mark.parametrize(
    ("answers", "asked", "inner_fixed", "outer_fixed"),
    [
        pytest.param("n\ny\n", 1, False, False, id="declining the needed fix drops the one that needs it"),
        pytest.param("y\nn\n", 2, True, False, id="the needed fix alone"),
        pytest.param("y\ny\n", 2, True, True, id="both"),
    ],
)
def test_a_fix_that_needs_another_sites_fix_is_asked_after_it(
    tmp_path: Path, code: str, answers: str, asked: int, inner_fixed: bool, outer_fixed: bool
) -> None:
    """Answering n to `inner` and y to `outer` wrote `outer` fixed around an `inner` that keeps `w`
    nondiff: jit of `outer` then passed a Tracer there (UnexpectedTracerError)."""
    target = tmp_path / "m.py"
    target.write_text(code, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(target)], input=answers, catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == asked
    assert f"{target}: custom_vjp `inner` (the fix of `outer`, asked after, needs this one)\n" in result.stdout
    assert (f"{target}: {LEFT}" in result.stdout) is not inner_fixed
    if inner_fixed:
        assert f"{target}: custom_vjp `outer` (its fix needs the fix of `inner`, accepted above)\n" in result.stdout
    text = target.read_text(encoding="utf-8")
    assert ("@jax.custom_vjp\ndef inner(" in text) is inner_fixed
    assert ("@jax.custom_vjp\ndef outer(" in text) is outer_fixed
    assert (text == fix_source(code).source) is outer_fixed
    assert result.exit_code == (0 if outer_fixed else 1)


def test_a_declined_fix_drops_every_fix_that_needs_it_in_turn(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    code = chained(("a", "b"), ("b", "c"), ("c", None), ("free", None))
    target.write_text(code, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(target)], input="n\ny\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 2  # c, then free
    assert f"{target}: custom_vjp `b` is left as it is: its fix needs the fix of `c`, which is not applied" in (
        result.stdout
    )
    assert f"{target}: custom_vjp `a` is left as it is: its fix needs the fix of `b`, which is not applied" in (
        result.stdout
    )
    text = target.read_text(encoding="utf-8")
    assert [name for name in ("a", "b", "c", "free") if f"@jax.custom_vjp\ndef {name}(" in text] == ["free"]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_interactive_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("answers", ["n\ny\n", "y\nn\n", "y\ny\n"])
def test_verify_what_the_review_writes_runs_under_jit_unless_its_finding_remains(tmp_path: Path, answers: str) -> None:
    """Real JAX on the written file: a fixed `outer` runs under jit(grad) and gives the gradient the
    old code gives eagerly; an `outer` left as it is still raises, as its remaining finding says."""
    jax = pytest.importorskip("jax")
    import numpy as np

    before, target = tmp_path / "before.py", tmp_path / "m.py"
    before.write_text(NEEDY, encoding="utf-8")
    target.write_text(NEEDY, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "-i", str(target)], input=answers, catch_exceptions=False)
    x, w = jax.numpy.array([1.0, 2.0]), jax.numpy.array([0.5, 3.0])
    old, new = _load(before), _load(target)
    expected = jax.grad(lambda x: old.outer(x, w).sum())(x)  # eagerly, `w` is no Tracer
    jitted = jax.jit(jax.grad(lambda x, w: new.outer(x, w).sum()))
    if "@jax.custom_vjp\ndef outer(" in target.read_text(encoding="utf-8"):
        np.testing.assert_allclose(jitted(x, w), expected, rtol=1e-6)
    else:
        assert "VJP001 `w` (position 1) of custom_vjp `outer`" in result.stdout
        with pytest.raises(jax.errors.UnexpectedTracerError):
            jitted(x, w)
