"""callees.py: a site that passes a moved argument to a custom_vjp imported from another file.

`outer` (a.py) passes its `w` to `inner` (b.py) at a position `inner` lists in nondiff_argnums.
Moved, `w` can be a Tracer there, which JAX rejects (UnexpectedTracerError): `outer`'s fix is
right only with `inner`'s. Within one module the plan rounds knew (test_plan_closures); across
files `outer` used to be fixed whatever b.py did.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from helpers import write

from vjp_migrate import project as project_module
from vjp_migrate.api import Execution, analyze_found, check_paths, fix_file, fix_paths, found_below
from vjp_migrate.cli import main
from vjp_migrate.codes import expand_selection
from vjp_migrate.model import Diagnostic, FileResult, Settings
from vjp_migrate.workers import Task

INNER = """\
from functools import partial

import jax
{extra}

@partial(jax.custom_vjp, nondiff_argnums=(1,)){noqa}
def inner(x, w):
    return x * {w}


def inner_fwd(x, w):
    return x * {w}, x


def inner_bwd(w, x, g):
    return (g * {w},)


inner.defvjp(inner_fwd, inner_bwd)
{after}"""

OUTER = """\
from functools import partial

import jax
import jax.numpy as jnp

{spelling}


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def outer(x, w):
    return jnp.sin({call}(x, {passed}))


def outer_fwd(x, w):
    y = {call}(x, {passed})
    return jnp.sin(y), y


def outer_bwd(w, y, g):
    return (g * jnp.cos(y) * w,)


outer.defvjp(outer_fwd, outer_bwd)
"""


def inner(noqa: str = "", extra: str = "", w: str = "w", after: str = "") -> str:
    return INNER.format(noqa=noqa, extra=extra, w=w, after=after)


def outer(spelling: str = "from pkg.b import inner", call: str = "inner", passed: str = "w") -> str:
    return OUTER.format(spelling=spelling, call=call, passed=passed)


def package(root: Path, b: str, a: str | None = None, init: str = "", b_name: str = "b") -> Path:
    write(root, {"pkg/__init__.py": init, f"pkg/{b_name}.py": b, "pkg/a.py": a or outer()})
    return root


def by_function(results: list[FileResult]) -> dict[str, Diagnostic]:
    return {d.function: d for r in results for d in r.diagnostics}


def kept_reason(callee: str, b: Path, outside: bool = False) -> str:
    line = b.read_text(encoding="utf-8").splitlines().index("def inner(x, w):") + 1  # the def, not its decorator
    where = f"{b} (line {line}, not among the files checked with this one)" if outside else f"{b} (line {line})"
    return (
        f"the primal `outer` passes `w` to position 1 of `{callee}` in {where}, which stays in nondiff_argnums: "
        "`w` would be a Tracer passed as a static argument"
    )


def unchanged(results: list[FileResult]) -> bool:
    return not any(r.changed for r in results)


ALL = Settings(expand_selection(["ALL"], None))


@pytest.mark.parametrize(
    ("spelling", "call", "init"),
    [
        pytest.param("from pkg.b import inner", "inner", "", id="from pkg.b import inner"),
        pytest.param("from .b import inner", "inner", "", id="relative"),
        pytest.param("from . import b", "b.inner", "", id="from . import b"),
        pytest.param("import pkg.b", "pkg.b.inner", "", id="import pkg.b"),
        pytest.param("import pkg.b as ops", "ops.inner", "", id="import pkg.b as ops"),
        pytest.param("from pkg import inner", "inner", "from .b import inner\n", id="re-exported by the package"),
    ],
)
def test_a_callee_another_file_keeps_nondiff_declines_the_site(
    tmp_path: Path, spelling: str, call: str, init: str
) -> None:
    tree = package(tmp_path, inner(noqa="  # noqa: VJP001"), outer(spelling, call), init)
    b = tree / "pkg" / "b.py"
    found = by_function(check_paths([tree]))
    assert list(found) == ["outer"]
    assert found["outer"].code == "VJP003"
    assert found["outer"].message.endswith(kept_reason(call, b))
    assert unchanged(fix_paths([tree], write=False))
    # the callee's own fix does move `w`: the site migrates with it, in one migration
    b.write_text(inner(), encoding="utf-8")
    found = by_function(check_paths([tree]))
    assert {name: (d.code, d.fixable) for name, d in found.items()} == {
        "inner": ("VJP001", True),
        "outer": ("VJP001", True),
    }
    assert found["outer"].also_touches == (str(b),)
    # ... when b.py is fixed too: a.py alone is found to need it on disk, and is declined
    alone = fix_file(tree / "pkg" / "a.py", write=False)
    assert not alone.changed and alone.diagnostics[0].message.endswith(kept_reason(call, b, outside=True))


def test_a_keyword_argument_is_placed_by_the_callees_parameters(tmp_path: Path) -> None:
    tree = package(tmp_path, inner(noqa="  # noqa: VJP001"), outer(passed="w=w"))
    assert by_function(check_paths([tree]))["outer"].message.endswith(kept_reason("inner", tree / "pkg" / "b.py"))


UNKNOWN_W = "\nfrom mylib import scale\n"


@pytest.mark.parametrize(
    ("b", "settings"),
    [
        pytest.param(inner(noqa="  # noqa: VJP001"), None, id="noqa"),
        pytest.param(inner(after="\n\ny, r = inner_fwd(1.0, 2.0)\n"), None, id="VJP003: its fwd used elsewhere"),
        pytest.param(inner(extra=UNKNOWN_W, w="scale(w)"), ALL, id="VJP002 without --unsafe-fixes"),
        pytest.param(
            inner(),
            Settings(expand_selection(["ALL"], None), static_args=frozenset({"pkg.b.inner:w"})),
            id="static-args names inner's w",
        ),
    ],
)
def test_every_decision_that_keeps_the_position_declines_the_site(
    tmp_path: Path, b: str, settings: Settings | None
) -> None:
    tree = package(tmp_path, b)
    results = check_paths([tree], **({"settings": settings} if settings else {}))
    found = by_function(results)
    assert found["outer"].code == "VJP003"
    assert found["outer"].message.endswith(kept_reason("inner", tree / "pkg" / "b.py"))
    assert found.get("inner") is None or not found["inner"].fixable
    assert unchanged(fix_paths([tree], write=False, **({"settings": settings} if settings else {})))


def test_vjp002_with_unsafe_fixes_moves_both(tmp_path: Path) -> None:
    tree = package(tmp_path, inner(extra=UNKNOWN_W, w="scale(w)"))
    every = Settings(expand_selection(["ALL"], None), unsafe_fixes=True)
    planned = fix_paths([tree], every, write=False)
    assert {r.path.name for r in planned if r.changed} == {"a.py", "b.py"}


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_callee_that_moves_too_is_one_migration_with_the_site(tmp_path: Path, jobs: int) -> None:
    tree = package(tmp_path, inner())
    write(tree, {"pkg/other.py": "def helper(x):\n    return x\n"})
    task = Task("fix", Settings(expand_selection(None, None)))
    outcome = analyze_found(found_below([tree], ()), task, Execution(jobs=jobs), None)
    groups = [sorted(change.path.name for change in group) for group in outcome.groups]
    assert ["a.py", "b.py"] in groups
    assert {r.path.name for r in outcome.results if r.changed} == {"a.py", "b.py"}


def test_a_callee_passing_on_to_a_third_that_keeps_it_declines_the_chain(tmp_path: Path) -> None:
    """a.outer -> b.inner -> c.leaf: leaf keeps `w` (noqa), so inner cannot move it, so outer
    cannot either (the rounds of phase 2 find it whatever order the files are analysed in)."""
    leaf = inner(noqa="  # noqa: VJP001").replace("inner", "leaf")
    middle = inner().replace("return x * w\n\n\ndef inner_fwd", "return leaf(x, w)\n\n\ndef inner_fwd")
    middle = middle.replace("import jax\n", "import jax\n\nfrom pkg.c import leaf\n", 1)
    tree = package(tmp_path, middle)
    write(tree, {"pkg/c.py": leaf})
    found = by_function(check_paths([tree]))
    assert {name: d.code for name, d in found.items()} == {"inner": "VJP003", "outer": "VJP003"}
    assert "passes `w` to position 1 of `leaf` in " in found["inner"].message
    assert "passes `w` to position 1 of `inner` in " in found["outer"].message
    assert unchanged(fix_paths([tree], write=False))
    (tree / "pkg" / "c.py").write_text(leaf.replace("  # noqa: VJP001", ""), encoding="utf-8")
    planned = fix_paths([tree], write=False)
    assert {r.path.name for r in planned if r.changed} == {"a.py", "b.py", "c.py"}


def test_a_callee_outside_the_run_keeps_every_position(tmp_path: Path) -> None:
    # `fix a.py` alone: b.py will not be fixed with it, whatever its own fix would do
    tree = package(tmp_path, inner())
    a, b = tree / "pkg" / "a.py", tree / "pkg" / "b.py"
    result = fix_file(a, write=False)
    assert not result.changed
    (finding,) = result.diagnostics
    assert finding.code == "VJP003" and finding.message.endswith(kept_reason("inner", b, outside=True))
    assert result.imported_callees == ("pkg.b",)
    # excluded from the run: the same
    results = fix_paths([tree], write=False, exclude=["b.py"])
    assert unchanged(results)
    assert by_function(results)["outer"].message.endswith(kept_reason("inner", b, outside=True))


def test_a_callee_under_a_configuration_that_ignores_its_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # b.py is fixed by another configuration's run, or not at all: outer's cannot count on it
    tree = package(tmp_path, inner(), outer("from pkg.sub.b import inner"), b_name="sub/b")
    write(tree, {"pkg/sub/__init__.py": "", "pkg/sub/pyproject.toml": "[tool.vjp-migrate]\nignore = ['VJP001']\n"})
    monkeypatch.chdir(tree)
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    result = CliRunner().invoke(main, ["fix", "--no-cache", "."], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert "VJP003" in result.stdout
    assert "position 1 of `inner` in pkg/sub/b.py (line 7, not among the files checked with this one)" in result.stdout
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before


@pytest.mark.parametrize(
    "spelling",
    [
        pytest.param("from somelib import inner", id="a module nowhere near"),
        pytest.param("from pkg.absent import inner", id="a module of the package that does not exist"),
    ],
)
def test_a_callee_that_cannot_be_resolved_leaves_no_safe_fix(tmp_path: Path, spelling: str) -> None:
    # nothing tells what `inner` is: not taken for a custom_vjp keeping the position (no VJP003),
    # but a function whose body is not read may need `w` concrete, so the fix is not safe
    tree = package(tmp_path, inner(noqa="  # noqa: VJP001"), outer(spelling))
    found = by_function(check_paths([tree]))
    assert (found["outer"].code, found["outer"].fixable) == ("VJP001", False)
    assert any("passed to `inner`, which is not analysed" in e.text for e in found["outer"].reasons)


UNRELATED = """\
from functools import partial

import jax
import jax.numpy as jnp

from pkg.b import inner
from pkg.util import twice


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def outer(x, w):
    return jnp.sin(twice({arg}) * w)


def outer_fwd(x, w):
    y = twice({arg}) * w
    return jnp.sin(y), y


def outer_bwd(w, y, g):
    return (g * jnp.cos(y) * w,)


outer.defvjp(outer_fwd, outer_bwd)


def elsewhere(x, w):
    return inner(x, w)
"""


def test_nothing_is_read_for_a_site_that_passes_no_moved_argument_to_an_imported_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vjp_migrate import files

    tree = package(tmp_path, inner(noqa="  # noqa: VJP001"), UNRELATED.format(arg="x"))
    write(tree, {"pkg/util.py": "def twice(x):\n    return 2 * x\n"})
    read: list[str] = []
    parsed: list[str] = []
    real_read, real_parse = files.read_bytes, project_module.parse
    monkeypatch.setattr(files, "read_bytes", lambda path: read.append(Path(path).name) or real_read(path))
    monkeypatch.setattr(
        project_module, "parse", lambda text, path, **k: parsed.append(Path(path).name) or real_parse(text, path, **k)
    )
    a = tree / "pkg" / "a.py"
    result = fix_file(a, write=False)  # `w` reaches jnp.sin only (and `inner` in a function that is no rule)
    assert result.changed and (read, parsed) == ([], ["a.py"])  # a.py itself is read by api, not through files
    # passed to a plain function of the project: its file is read, but not parsed (it can hold no custom_vjp)
    a.write_text(UNRELATED.format(arg="x * w"), encoding="utf-8")
    read.clear(), parsed.clear()
    result = fix_file(a, write=False)
    assert result.changed and (read, parsed) == (["util.py"], ["a.py"])


def test_a_position_the_callee_does_not_list_needs_nothing_of_it(tmp_path: Path) -> None:
    # `w` goes to position 0 of `inner`, a differentiable one: each fix stands alone
    tree = package(tmp_path, inner(), outer().replace("inner(x, w)", "inner(w, x)"))
    task = Task("fix", Settings(expand_selection(None, None)))
    outcome = analyze_found(found_below([tree], ()), task, Execution(jobs=1), None)
    assert {r.path.name for r in outcome.results if r.changed} == {"a.py", "b.py"}
    assert sorted([change.path.name for change in group] for group in outcome.groups) == [["a.py"], ["b.py"]]


def test_check_does_not_cache_a_finding_that_depends_on_another_file(tmp_path: Path) -> None:
    tree = package(tmp_path, inner())
    a, cache = tree / "pkg" / "a.py", Execution(cache_dir=tmp_path / "cache")
    assert by_function(check_paths([a], how=cache))["outer"].code == "VJP003"
    (tree / "pkg" / "b.py").write_text("def inner(x, w):\n    return x * w\n", encoding="utf-8")
    assert by_function(check_paths([a], how=cache))["outer"].code == "VJP001"


@pytest.mark.parametrize("answer", ["y", "n"])
def test_fix_interactive_asks_about_both_files_in_one_question(tmp_path: Path, answer: str) -> None:
    tree = package(tmp_path, inner())
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input=f"{answer}\n", catch_exceptions=False)
    assert result.stdout.count("Apply this change?") == 1
    a, b = tree / "pkg" / "a.py", tree / "pkg" / "b.py"
    assert f"{a}, {b}: custom_vjp `outer`, `inner` (one migration of these files)" in result.stdout
    changed = {p.name for p in tree.rglob("*.py") if p.read_bytes() != before[p]}
    assert changed == ({"a.py", "b.py"} if answer == "y" else set())


LOCAL = """

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def {name}(x, s):
    return x * s


def {name}_fwd(x, s):
    return x * s, None


def {name}_bwd(s, _, g):
    return (g * s,)


{name}.defvjp({name}_fwd, {name}_bwd)
"""


def test_fix_interactive_asks_site_by_site_beside_a_site_a_callee_declines(tmp_path: Path) -> None:
    # `outer` is VJP003 (b.py keeps `w`); the file's own two sites are asked one by one, as `fix`
    # changes them, not as one question about the whole file
    tree = package(
        tmp_path, inner(noqa="  # noqa: VJP001"), outer() + LOCAL.format(name="up") + LOCAL.format(name="down")
    )
    result = CliRunner().invoke(main, ["fix", "-i", str(tree)], input="y\nn\n", catch_exceptions=False)
    a = tree / "pkg" / "a.py"
    assert result.stdout.count("Apply this change?") == 2
    assert f"{a}: custom_vjp `up`\n" in result.stdout and f"{a}: custom_vjp `down`\n" in result.stdout
    text = a.read_text(encoding="utf-8")
    assert "def up_bwd(s, g):" in text and "def down_bwd(s, _, g):" in text and "def outer_bwd(w, y, g):" in text


RUN = """\
import jax
import jax.numpy as jnp

from pkg.a import outer

x, w = jnp.float32(0.5), jnp.float32(2.0)
print(float(jax.jit(jax.grad(outer))(x, w)), float(jax.grad(outer)(x, w)))
"""


def _run_jax(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN], cwd=tree, capture_output=True, text=True, timeout=300)


def test_verify_the_written_files_run_under_jit_and_the_old_fix_did_not(tmp_path: Path) -> None:
    """Real JAX on the files `fix` writes: with `inner` migrating too, jit(grad(outer)) with `w`
    traced runs and agrees with eager grad; with `inner` kept nondiff nothing is written, and the
    `outer` the tool used to write (the same text, beside that b.py) raises under jit."""
    pytest.importorskip("jax")
    moves = package(tmp_path / "moves", inner())
    assert CliRunner().invoke(main, ["fix", "--no-cache", str(moves)], catch_exceptions=False).exit_code == 0
    ran = _run_jax(moves)
    assert ran.returncode == 0, ran.stderr
    jitted, eager = map(float, ran.stdout.split())
    assert jitted == pytest.approx(eager) and eager != 0.0

    kept = package(tmp_path / "kept", inner(noqa="  # noqa: VJP001"))
    original = (kept / "pkg" / "a.py").read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", "--no-cache", str(kept)], catch_exceptions=False)
    assert result.exit_code == 1 and (kept / "pkg" / "a.py").read_text(encoding="utf-8") == original
    (kept / "pkg" / "a.py").write_text((moves / "pkg" / "a.py").read_text(encoding="utf-8"), encoding="utf-8")
    ran = _run_jax(kept)
    assert ran.returncode != 0 and "UnexpectedTracerError" in ran.stderr
    assert "non-differentiable" in ran.stderr
