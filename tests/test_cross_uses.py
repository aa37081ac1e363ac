"""Uses, by the other files of a run, of the names a file's fix changes (cross_uses.py): a fwd or
bwd another file calls or reads makes the site VJP003 (as such a use in its own module does),
and an import the fix made unused stays when another file imports it from the module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write

from vjp_migrate import cross_uses
from vjp_migrate.api import Execution, check_paths, fix_paths
from vjp_migrate.model import FileResult
from vjp_migrate.modules import ModuleIndex

SITE = """\
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x


def clip_gradient_fwd(lo, hi, x):
    return x, None


def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
"""
# b.py: a site of its own, that no other file uses
OTHER_SITE = SITE.replace("clip_gradient", "scale_gradient")


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    return write(tmp_path / "t", {"pkg/__init__.py": "", "pkg/a.py": SITE, "pkg/b.py": OTHER_SITE, **files})


def _messages(results: list[FileResult], name: str) -> list[str]:
    return [f"{d.code} {d.message}" for r in results if r.path.name == name for d in r.diagnostics]


def _refused(tree: Path, user: str, line: int, role: str = "bwd") -> None:
    """fix leaves a.py alone with a VJP003 that names the other file's use (check says the same)
    and still migrates b.py, whose rules no other file uses."""
    before = {p: p.read_bytes() for p in tree.rglob("*.py") if p.name != "b.py"}
    checked = check_paths([tree])
    results = fix_paths([tree])
    assert {p: p.read_bytes() for p in before} == before
    where = tree / user
    wanted = f"{role} `clip_gradient_{role}` is also used in {where} on line {line}, not only by defvjp"
    found = _messages(results, "a.py")
    assert len(found) == 2 and all(m.startswith("VJP003") and wanted in m for m in found), found
    assert _messages(checked, "a.py") == found
    assert "def scale_gradient_bwd(res, g):" in (tree / "pkg" / "b.py").read_text(encoding="utf-8")


CALL = "\n\ndef test_rules():\n    out, _ = {fwd}(0.0, 1.0, 2.0)  # its output only: fwd's rewrite does not change it\n    assert {bwd}(0.0, 1.0, None, 1.0)[0] == 1.0\n"


@pytest.mark.parametrize(
    ("user", "imports", "prefix"),
    [
        pytest.param("tests/test_a.py", "from pkg.a import clip_gradient_bwd, clip_gradient_fwd", "", id="absolute"),
        pytest.param("pkg/test_a.py", "from .a import clip_gradient_bwd, clip_gradient_fwd", "", id="relative"),
        pytest.param("pkg/test_a.py", "from .a import clip_gradient_bwd as b, clip_gradient_fwd", "", id="alias"),
        pytest.param("tests/test_a.py", "from pkg import a", "a.", id="from package import module"),
        pytest.param("pkg/test_a.py", "from . import a", "a.", id="relative module"),
        pytest.param("tests/test_a.py", "import pkg.a as m", "m.", id="module alias"),
        pytest.param("tests/test_a.py", "import pkg.a", "pkg.a.", id="dotted module"),
        pytest.param("tests/test_a.py", "from pkg.a import *", "", id="star import"),
    ],
)
def test_a_bwd_another_file_calls_is_not_rewritten(tmp_path: Path, user: str, imports: str, prefix: str) -> None:
    bwd = "b" if " as b" in imports else f"{prefix}clip_gradient_bwd"
    tree = _tree(tmp_path, {user: imports + CALL.format(fwd=f"{prefix}clip_gradient_fwd", bwd=bwd)})
    _refused(tree, user, 5)


@pytest.mark.parametrize("newline", [pytest.param("\r", id="CR"), pytest.param("\r\n", id="CRLF")])
def test_a_bwd_another_file_calls_is_found_whatever_its_line_endings(tmp_path: Path, newline: str) -> None:
    # cli30: a lone CR ends a line for Python, but the import lines were cut at \n only, so a
    # CR-only file whose import is not its first line was never read, and fix broke its call
    user = '"""Tests."""\nfrom pkg.a import clip_gradient_bwd, clip_gradient_fwd'
    user += CALL.format(fwd="clip_gradient_fwd", bwd="clip_gradient_bwd")
    _refused(_tree(tmp_path, {"tests/test_a.py": user.replace("\n", newline)}), "tests/test_a.py", 6)


def test_a_bwd_imported_and_called_inside_a_test_function_is_not_rewritten(tmp_path: Path) -> None:
    body = "def test_rules():\n    from pkg.a import clip_gradient_bwd\n\n    clip_gradient_bwd(0.0, 1.0, None, 1.0)\n"
    _refused(_tree(tmp_path, {"tests/test_a.py": body}), "tests/test_a.py", 4)


def test_a_bwd_reexported_by_the_package_is_followed(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from .a import clip_gradient_bwd\n",
            "tests/test_a.py": "from pkg import clip_gradient_bwd\n\nGRAD = clip_gradient_bwd(0.0, 1.0, None, 1.0)\n",
        },
    )
    _refused(tree, "tests/test_a.py", 3)


def test_a_fwd_read_as_a_value_elsewhere_is_not_rewritten(tmp_path: Path) -> None:
    user = 'from pkg import a\n\nRULES = {\n    "fwd": a.clip_gradient_fwd,\n}\n'
    _refused(_tree(tmp_path, {"pkg/table.py": user}), "pkg/table.py", 4, role="fwd")


@pytest.mark.parametrize(
    "user",
    [
        # fwd's output is what the primal's callers see: a call of it is no use of the rule
        pytest.param(
            "from pkg.a import clip_gradient_fwd\n\nOUT = clip_gradient_fwd(0.0, 1.0, 2.0)[0]\n", id="fwd called"
        ),
        pytest.param("from pkg.a import clip_gradient_bwd, clip_gradient_fwd  # noqa: F401\n", id="imported only"),
        pytest.param("from pkg.a import clip_gradient\n\nY = clip_gradient(0.0, 1.0, 2.0)\n", id="primal called"),
        pytest.param(  # its own function of that name
            "def clip_gradient_bwd(g):\n    return g\n\n\nclip_gradient_bwd(1.0)\n", id="a namesake"
        ),
        pytest.param(  # another module's function of that name
            "from pkg.b import scale_gradient\nfrom other import clip_gradient_bwd\n\nclip_gradient_bwd(1.0)\n",
            id="a namesake imported from elsewhere",
        ),
    ],
)
def test_other_uses_of_the_module_leave_the_fix_alone(tmp_path: Path, user: str) -> None:
    tree = _tree(tmp_path, {"tests/test_a.py": user, "other.py": "def clip_gradient_bwd(g):\n    return g\n"})
    results = fix_paths([tree])
    assert not any(d.code == "VJP003" for r in results for d in r.diagnostics)
    assert "def clip_gradient_bwd(res, g):" in (tree / "pkg" / "a.py").read_text(encoding="utf-8")


def test_a_namesake_of_a_rule_in_another_module_leaves_its_fix_alone(tmp_path: Path) -> None:
    # the rules live in rules.py, the custom_vjp in ops.py; local.py has a scale_bwd of its own
    ops = "from functools import partial\n\nimport jax\n\nfrom .rules import scale_bwd, scale_fwd\n\n\n"
    ops += "@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef scale(x, s):\n    return x * s\n\n\n"
    ops += "scale.defvjp(scale_fwd, scale_bwd)\n"
    rules = "def scale_fwd(x, s):\n    return x * s, None\n\n\ndef scale_bwd(s, _, g):\n    return (g * s,)\n"
    local = "import pkg.ops\n\n\ndef scale_bwd(g):\n    return g\n\n\nY = scale_bwd(pkg.ops.scale)\n"
    tree = write(
        tmp_path / "t", {"pkg/__init__.py": "", "pkg/ops.py": ops, "pkg/rules.py": rules, "pkg/local.py": local}
    )
    results = fix_paths([tree])
    assert not any(d.code == "VJP003" for r in results for d in r.diagnostics)
    assert "def scale_bwd(s, g):" in (tree / "pkg" / "rules.py").read_text(encoding="utf-8")


def test_workers_and_the_cache_see_the_other_file_too(tmp_path: Path) -> None:
    tree = _tree(
        tmp_path, {"tests/test_a.py": "from pkg.a import clip_gradient_bwd\n\nclip_gradient_bwd(0.0, 1.0, None, 1.0)\n"}
    )
    how = Execution(jobs=2, cache_dir=tmp_path / "cache")
    plain = _messages(check_paths([tree]), "a.py")
    first = _messages(check_paths([tree], how=how), "a.py")
    cached = _messages(check_paths([tree], how=how), "a.py")  # phase 1 of a.py from the cache
    assert plain == first == cached and len(plain) == 2 and "test_a.py on line 3" in plain[0]


# --- imports the fix made unused ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "text"),
    [
        pytest.param("pkg/user.py", "from pkg.a import partial\n", id="absolute"),
        pytest.param("pkg/user.py", "from .a import partial as p\n", id="relative"),
        pytest.param("pkg/user.py", "from . import a\n\nP = a.partial(print)\n", id="module attribute"),
        pytest.param("pkg/user.py", "def f():\n    from pkg.a import partial\n", id="inside a function"),
        pytest.param("pkg/__init__.py", "from .a import partial\n", id="package init"),
    ],
)
def test_an_import_another_file_takes_from_the_module_stays(tmp_path: Path, user: str, text: str) -> None:
    tree = _tree(tmp_path, {user: text})
    results = fix_paths([tree])
    assert all(r.status.value == "ok" for r in results), [(r.path, r.reason) for r in results]
    fixed = (tree / "pkg" / "a.py").read_text(encoding="utf-8")
    assert fixed.startswith("from functools import partial\n") and "@jax.custom_vjp\ndef clip_gradient" in fixed
    # b.py's partial is imported by nobody: it goes
    assert "partial" not in (tree / "pkg" / "b.py").read_text(encoding="utf-8")


# a.py, b.py through a private module alias of the partial, which their fixes leave unused
ALIASED = SITE.replace(
    "@partial(jax.custom_vjp, nondiff_argnums=(0, 1))",
    "_vjp_lohi = partial(jax.custom_vjp, nondiff_argnums=(0, 1))\n\n\n@_vjp_lohi",
)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("from pkg.a import _vjp_lohi\n", id="imported by name"),
        pytest.param("from . import a\n\nV = a._vjp_lohi\n", id="module attribute"),
    ],
)
def test_a_private_alias_another_file_takes_from_the_module_stays(tmp_path: Path, text: str) -> None:
    # review: removing it broke the other file's import (ImportError)
    files = {"pkg/a.py": ALIASED, "pkg/b.py": ALIASED.replace("clip_gradient", "scale_gradient"), "pkg/user.py": text}
    tree = _tree(tmp_path, files)
    results = fix_paths([tree])
    assert all(r.status.value == "ok" for r in results), [(r.path, r.reason) for r in results]
    fixed = (tree / "pkg" / "a.py").read_text(encoding="utf-8")
    assert fixed.startswith("from functools import partial\n") and "@jax.custom_vjp\ndef clip_gradient" in fixed
    assert "\n_vjp_lohi = partial(jax.custom_vjp, nondiff_argnums=(0, 1))\n" in fixed
    # b.py's alias is imported by nobody: it goes, with the import only it used
    other = (tree / "pkg" / "b.py").read_text(encoding="utf-8")
    assert "_vjp_lohi" not in other and "partial" not in other and "@jax.custom_vjp\ndef scale_gradient" in other


def test_an_import_of_the_same_name_from_another_module_lets_it_go(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {"pkg/user.py": "from functools import partial\nfrom pkg import a\n\nX = a.clip_gradient\n"})
    fix_paths([tree])
    assert "partial" not in (tree / "pkg" / "a.py").read_text(encoding="utf-8")


# --- what is read -------------------------------------------------------------------------------


def test_a_run_whose_other_files_hold_no_changed_name_reads_little(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    filler = {f"pkg/m{i}.py": "from functools import partial\nimport pkg\n\nX = partial(print)\n" for i in range(20)}
    tree = _tree(tmp_path, filler)
    parsed: list[str] = []
    built: list[int] = []
    real_parse, real_build = ast.parse, ModuleIndex.build.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(ast, "parse", lambda text, *a, **k: parsed.append(text) or real_parse(text, *a, **k))
    monkeypatch.setattr(
        ModuleIndex, "build", classmethod(lambda cls, files, *a: built.append(len(files)) or real_build(cls, files, *a))
    )
    check_paths([tree])
    assert all(n == 1 for n in built)  # the rule names are in no other file: the run is not indexed
    assert not [t for t in parsed if t.startswith("from functools import partial\nimport pkg")]
    parsed.clear()
    fix_paths([tree])  # fix also asks for `partial`: the fillers hold it, but none imports it from pkg.a
    assert not [t for t in parsed if t.startswith("from functools import partial\nimport pkg")]


def test_import_lines_are_every_import_statement() -> None:
    text = 'from . import (\n    a,\n    b,\n)\nx = 1; import c\n"""we import d here"""\n    import e as f\nimportant = 2\n'
    lines = cross_uses.import_lines(text)
    assert all(name in lines for name in ("a", "b", "import c", "import e as f"))
    assert "import d" not in lines and "important" not in lines


def test_a_user_too_deep_to_walk_is_taken_for_a_use_not_a_traceback(tmp_path: Path) -> None:
    # ast parses a 700-term sum; walking it raised RecursionError out of the run (no file's guard)
    deep = "y = " + "+".join(["1"] * 700) + "\n"
    user = "from pkg.a import clip_gradient_bwd\n" + deep + "clip_gradient_bwd(0.0, 1.0, None, 1.0)\n"
    _refused(_tree(tmp_path, {"tests/test_deep.py": user}), "tests/test_deep.py", 1)


# --- a subclass in another file defining a method the site reads through the instance -----------

LAYER = """\
from functools import partial

import jax
import jax.numpy as jnp


class Layer:
    def __init__(self, scale):
        self.scale = scale
        self.apply.defvjp(self.apply_fwd, self.apply_bwd)

    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def apply(w, x):
        return jnp.sin(x) * w

    def apply_fwd(self, w, x):
        return jnp.sin(x) * w, x

    def apply_bwd(self, w, x, g):
        return (self.scale * w * g,)
"""
SUBCLASS = "\n\n\nclass Damped({base}):\n    def apply_bwd(self, w, x, g):\n        return (0.5 * w * g,)\n"


@pytest.mark.parametrize(
    ("imports", "base", "line"),
    [
        pytest.param("from pkg.layers import Layer", "Layer", 4, id="imported by name"),
        pytest.param("from pkg import layers", "layers.Layer", 4, id="through its module"),
        pytest.param(
            "from pkg.layers import Layer\n\n\nclass Mid(Layer):\n    pass", "Mid", 8, id="through a class of that file"
        ),
    ],
)
def test_a_subclass_in_another_file_defining_the_bwd_again_blocks_the_fix(
    tmp_path: Path, imports: str, base: str, line: int
) -> None:
    # Before, the fix rewrote `Layer.apply_bwd` alone: a `Damped` instance registered its own
    # bwd, still old-style, and every gradient through it failed.
    user = "pkg/variants.py"
    tree = write(
        tmp_path / "t", {"pkg/__init__.py": "", "pkg/layers.py": LAYER, user: imports + SUBCLASS.format(base=base)}
    )
    before = (tree / "pkg" / "layers.py").read_bytes()
    checked, results = check_paths([tree]), fix_paths([tree])
    assert (tree / "pkg" / "layers.py").read_bytes() == before
    wanted = (
        f"bwd `apply_bwd` of `Layer` may be another method for an instance of a subclass: one in {tree / user} "
        f"on line {line} defines its own `apply_bwd`, and the rewrite would change `Layer.apply_bwd` only"
    )
    found = _messages(results, "layers.py")
    assert len(found) == 1 and found[0].startswith("VJP003") and found[0].endswith(wanted), found
    assert _messages(checked, "layers.py") == found


@pytest.mark.parametrize(
    "user",
    [
        pytest.param("from pkg.layers import Layer\n\n\nclass Plain(Layer):\n    pass\n", id="keeps the rules"),
        pytest.param(SUBCLASS.format(base="Layer"), id="its own class named Layer"),
        pytest.param("from other import Layer" + SUBCLASS.format(base="Layer"), id="another module's Layer"),
    ],
)
def test_other_subclasses_leave_the_fix_alone(tmp_path: Path, user: str) -> None:
    own = "class Layer:\n    pass\n" if user.startswith("\n") else ""
    tree = write(
        tmp_path / "t",
        {
            "pkg/__init__.py": "",
            "pkg/layers.py": LAYER,
            "pkg/variants.py": own + user,
            "other.py": "class Layer:\n    pass\n",
        },
    )
    results = fix_paths([tree])
    assert not any(d.code == "VJP003" for r in results for d in r.diagnostics)
    assert "def apply_bwd(self, res, g):" in (tree / "pkg" / "layers.py").read_text(encoding="utf-8")


# --- a star re-export by the package (probe32 P4) -----------------------------------------------


@pytest.mark.parametrize(
    ("imports", "prefix"),
    [
        pytest.param("from pkg import clip_gradient_bwd, clip_gradient_fwd", "", id="from the package"),
        pytest.param("import pkg", "pkg.", id="the package"),
        pytest.param("import pkg as P", "P.", id="the package aliased"),
        pytest.param("from pkg import *", "", id="a star import of the package"),
    ],
)
def test_a_bwd_star_reexported_by_the_package_is_followed(tmp_path: Path, imports: str, prefix: str) -> None:
    user = imports + CALL.format(fwd=f"{prefix}clip_gradient_fwd", bwd=f"{prefix}clip_gradient_bwd")
    tree = _tree(tmp_path, {"pkg/__init__.py": "from .b import *\nfrom .a import *\n", "tests/test_a.py": user})
    _refused(tree, "tests/test_a.py", 5)


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param('__all__ = ["clip_gradient"]\n', id="__all__ leaves it out"),
        pytest.param('__all__: list[str] = ["clip_gradient"]\n__all__ += ["clip_gradient_fwd"]\n', id="added to"),
    ],
)
def test_a_star_reexport_respects_all(tmp_path: Path, listed: str) -> None:
    tree = _tree(tmp_path, {"pkg/__init__.py": "from .a import *\n", "tests/test_a.py": USES_BWD})
    (tree / "pkg" / "a.py").write_text(listed + SITE, encoding="utf-8")
    fix_paths([tree])
    assert "def clip_gradient_bwd(res, g):" in (tree / "pkg" / "a.py").read_text(encoding="utf-8")


USES_BWD = "from pkg import clip_gradient_bwd\n\nGRAD = clip_gradient_bwd(0.0, 1.0, None, 1.0)\n"


@pytest.mark.parametrize(
    "listed",
    [
        pytest.param('__all__ = ["clip_gradient", "clip_gradient_bwd"]\n', id="listed"),
        pytest.param("__all__ = list(NAMES)\n", id="not literal"),
        pytest.param('__all__ = ["clip_gradient"]\n__all__.extend(MORE)\n', id="extended"),
    ],
)
def test_a_star_reexport_of_a_name_all_may_list_is_followed(tmp_path: Path, listed: str) -> None:
    tree = _tree(tmp_path, {"pkg/__init__.py": "from .a import *\n", "tests/test_a.py": USES_BWD})
    (tree / "pkg" / "a.py").write_text(listed + SITE, encoding="utf-8")
    found = _messages(check_paths([tree]), "a.py")
    assert len(found) == 2 and all("bwd `clip_gradient_bwd` is also used in" in m for m in found), found


def test_verify_a_test_of_a_star_reexported_bwd_still_runs_after_fix(tmp_path: Path) -> None:
    # probe32 case 14: `fix .` rewrote clip_bwd, and the test then raised
    # `TypeError: clip_bwd() takes 2 positional arguments but 4 were given`.
    ops = (
        "import functools\nimport jax\nimport jax.numpy as jnp\nfrom . import rules as R\n\n\n"
        "@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2))\ndef soft_clip(x, lo, hi):\n"
        "    return jnp.clip(x, lo, hi)\n\n\nsoft_clip.defvjp(R.clip_fwd, R.clip_bwd)\n"
    )
    rules = (
        "import jax.numpy as jnp\n\n\ndef clip_fwd(x, lo, hi):\n    from .ops import soft_clip\n\n"
        "    return soft_clip(x, lo, hi), (x,)\n\n\ndef clip_bwd(lo, hi, res, g):\n    (x,) = res\n"
        "    inside = (x >= lo) & (x <= hi)\n    return (jnp.where(inside, g, 0.1 * g),)\n"
    )
    test = (
        "import jax.numpy as jnp\nfrom pk import clip_bwd\n\n(gx,) = clip_bwd(0.0, 2.0, (jnp.array([1.0, 3.0]),), "
        "jnp.ones(2))\nassert jnp.allclose(gx, jnp.array([1.0, 0.1]))\nprint('test ok')\n"
    )
    tree = write(
        tmp_path / "t",
        {
            "pk/__init__.py": "from .ops import soft_clip\nfrom .rules import *\n",
            "pk/ops.py": ops,
            "pk/rules.py": rules,
            "tests/test_rules.py": test,
        },
    )
    fix_paths([tree])
    done = subprocess.run(
        [sys.executable, "tests/test_rules.py"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(tree)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "test ok"
