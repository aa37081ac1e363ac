"""A module alias of `partial(jax.custom_vjp, ...)` imported from another module (sites.imported):
`from mylib.vjp import vjp_w`, then `@vjp_w` or `f = vjp_w(_f)`. Its uses are sites when the
alias's module is a file of the run or found on disk from the importing file; the positions are
read from the alias's definition; the fix writes `jax.custom_vjp` (with `import jax` when the
module has no name for JAX) and leaves the alias in its module."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers import executed, write

from vjp_migrate.api import check_paths, check_source, fix_paths
from vjp_migrate.cache import Cache
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT, may_trigger
from vjp_migrate.model import Settings
from vjp_migrate.screen import may_report

ALIAS = """\
from functools import partial

import jax

vjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))
"""
USER = """\
import jax.numpy as jnp

from mylib.vjp import vjp_w


@vjp_w
def weighted(x, w):
    return jnp.sum(x * w, axis=-1)


def weighted_fwd(x, w):
    return weighted(x, w), x.shape


def weighted_bwd(w, shape, g):
    return (jnp.broadcast_to(g[..., None], shape) * w,)


weighted.defvjp(weighted_fwd, weighted_bwd)
"""
FIXED = """\
import jax
import jax.numpy as jnp


@jax.custom_vjp
def weighted(x, w):
    return jnp.sum(x * w, axis=-1)


def weighted_fwd(x, w):
    return weighted(x, w), (w, x.shape)


def weighted_bwd(res, g):
    w, shape = res
    return (jnp.broadcast_to(g[..., None], shape) * w, None)


weighted.defvjp(weighted_fwd, weighted_bwd)
"""


def _tree(tmp_path: Path, user: str = USER, alias: str = ALIAS, **others: str) -> Path:
    return write(tmp_path, {"mylib/__init__.py": "", "mylib/vjp.py": alias, "mylib/ops.py": user, **others})


def _found(paths: list[Path], settings: Settings | None = None) -> list[tuple[str, str, int, bool]]:
    results = check_paths(paths, settings or Settings(DEFAULT_SELECT))
    return [(d.code, d.argument, d.line, d.fixable) for r in results for d in r.diagnostics]


@pytest.mark.parametrize(
    "whole", [pytest.param(True, id="the package checked"), pytest.param(False, id="ops.py alone")]
)
def test_a_use_of_an_imported_alias_is_a_site_read_through_the_alias(tmp_path: Path, whole: bool) -> None:
    root = _tree(tmp_path)
    paths = [root] if whole else [root / "mylib" / "ops.py"]
    assert _found(paths) == [("VJP001", "w", 7, True)]
    fix_paths(paths)
    assert (root / "mylib" / "ops.py").read_text() == FIXED
    assert (root / "mylib" / "vjp.py").read_text() == ALIAS  # public: other modules may import it


def test_the_fixed_use_gives_the_old_gradients_under_jit_as_jax_computes_them() -> None:
    jax = pytest.importorskip("jax")
    namespace = {"vjp_w": executed(ALIAS, "vjp.py")["vjp_w"]}  # what `from mylib.vjp import vjp_w` binds
    exec(compile(USER.replace("from mylib.vjp import vjp_w\n", ""), "before.py", "exec"), namespace)
    old, new = namespace["weighted"], executed(FIXED, "after.py")["weighted"]
    x, w = jax.numpy.ones((2, 3)), jax.numpy.arange(3.0)
    expected = jax.grad(lambda x: old(x, w).sum())(x)
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda x, w: old(x, w).sum()))(x, w)
    assert (jax.jit(jax.grad(lambda x, w: new(x, w).sum()))(x, w) == expected).all()


@pytest.mark.parametrize(
    ("imports", "decorator", "added"),
    [
        pytest.param("import jax\nimport jax.numpy as jnp\n", "@jax.custom_vjp", "", id="import jax"),
        pytest.param("import jax as J\nimport jax.numpy as jnp\n", "@J.custom_vjp", "", id="import jax as J"),
        pytest.param(
            "import jax.numpy as jnp\nfrom jax import custom_vjp\n", "@custom_vjp", "", id="from jax import custom_vjp"
        ),
        pytest.param("import jax.numpy as jnp\n", "@jax.custom_vjp", "import jax\n", id="no name for jax"),
    ],
)
def test_the_decorator_is_jax_custom_vjp_as_the_module_spells_it(
    tmp_path: Path, imports: str, decorator: str, added: str
) -> None:
    root = _tree(tmp_path, USER.replace("import jax.numpy as jnp\n", imports))
    fix_paths([root / "mylib" / "ops.py"])
    text = (root / "mylib" / "ops.py").read_text()
    assert f"\n\n{decorator}\ndef weighted(x, w):\n" in text
    assert text.startswith(added + imports + "\n\n" + decorator)
    assert "vjp_w" not in text


@pytest.mark.parametrize(
    ("imports", "expected"),
    [
        pytest.param("import os\n", "import os\n\nimport jax\n\n\n@jax", id="after the standard library"),
        pytest.param("import numpy as np\n", "import jax\nimport numpy as np\n\n\n@jax", id="before a later name"),
        pytest.param("import flax\n", "import flax\nimport jax\n\n\n@jax", id="after an earlier name"),
        pytest.param(
            "import flax\nfrom numpy import ones\n",
            "import flax\nimport jax\nfrom numpy import ones\n",
            id="before from",
        ),
        pytest.param("", '"""Ops."""\n\nimport jax\n\n\n@jax', id="no import left"),
        pytest.param(
            "import os\n\nfrom mylib import other\n",
            "import os\n\nimport jax\n\nfrom mylib import other\n",
            id="before the project's own imports",
        ),
    ],
)
def test_an_added_import_goes_where_isort_puts_it(tmp_path: Path, imports: str, expected: str) -> None:
    user = USER.replace("import jax.numpy as jnp\n\n", (imports + "\n") if imports else "").replace("jnp.", "np.")
    user = user.replace("np.sum(x * w, axis=-1)", "(x * w).sum(-1)").replace(
        "(np.broadcast_to(g[..., None], shape) * w,)", "(g[..., None] * w,)"
    )
    user = ('"""Ops."""\n\n' + user) if not imports else user
    root = _tree(tmp_path, user, **{"mylib/other.py": "other = 1\n"})
    assert _found([root / "mylib" / "ops.py"]) == [("VJP001", "w", user.splitlines().index("@vjp_w") + 2, True)]
    fix_paths([root / "mylib" / "ops.py"])
    assert expected in (root / "mylib" / "ops.py").read_text()


def test_the_call_form_and_an_import_as_another_name(tmp_path: Path) -> None:
    user = textwrap.dedent(
        """\
        import jax
        from mylib.vjp import vjp_w as nondiff_scale


        def _scale(x, s):
            return x * s


        scale = nondiff_scale(_scale)


        def scale_fwd(x, s):
            return x * s, None


        def scale_bwd(s, _, g):
            return (g * s,)


        scale.defvjp(scale_fwd, scale_bwd)
        """
    )
    root = _tree(tmp_path, user)
    assert _found([root / "mylib" / "ops.py"]) == [("VJP001", "s", 5, True)]
    fix_paths([root / "mylib" / "ops.py"])
    text = (root / "mylib" / "ops.py").read_text()
    assert text.startswith("import jax\n\n\ndef _scale") and "scale = jax.custom_vjp(_scale)\n" in text


@pytest.mark.parametrize(
    ("files", "spelling"),
    [
        pytest.param({}, "from .vjp import vjp_w", id="relative import"),
        pytest.param({"mylib/__init__.py": "from .vjp import vjp_w\n"}, "from mylib import vjp_w", id="re-exported"),
        pytest.param(
            {"mylib/vjp.py": ALIAS.replace("(1,)", "_W"), "mylib/consts.py": ""},
            "from mylib.vjp import vjp_w",
            id="a constant of the alias's module",
        ),
    ],
)
def test_other_spellings_of_the_import_and_the_alias(tmp_path: Path, files: dict[str, str], spelling: str) -> None:
    alias = files.pop("mylib/vjp.py", ALIAS)
    if "_W" in alias:
        alias = alias.replace("vjp_w =", "_W = (1,)\nvjp_w =")
    root = _tree(tmp_path, USER.replace("from mylib.vjp import vjp_w", spelling), alias, **files)
    assert _found([root / "mylib" / "ops.py"]) == [("VJP001", "w", 7, True)]


def test_nondiff_argnames_name_the_parameters_of_the_use(tmp_path: Path) -> None:
    alias = ALIAS.replace("nondiff_argnums=(1,)", 'nondiff_argnames=("w",)')
    root = _tree(tmp_path, alias=alias)
    assert _found([root / "mylib" / "ops.py"]) == [("VJP001", "w", 7, True)]


def test_a_position_that_stays_blocks_the_fix(tmp_path: Path) -> None:
    # `axis` stays static: the use would need a partial of its own, which the fix does not write.
    alias = ALIAS.replace("(1,)", "(1, 2)")
    user = (
        USER.replace("(x, w)", "(x, w, axis)")
        .replace("axis=-1", "axis=axis")
        .replace("(w, shape, g)", "(w, axis, shape, g)")
    )
    root = _tree(tmp_path, user, alias)
    settings = Settings(frozenset(BY_CODE))
    results = check_paths([root / "mylib" / "ops.py"], settings)
    (found,) = [d for r in results for d in r.diagnostics]
    assert (found.code, found.argument, found.fixable) == ("VJP003", "w", False)
    assert found.message.endswith(
        "nondiff_argnums is given by `vjp_w`, imported from `mylib.vjp`, and position 2 would stay nondiff: the fix "
        "only replaces such an alias with `jax.custom_vjp`; write the partial here by hand"
    )
    fix_paths([root / "mylib" / "ops.py"], settings)
    assert (root / "mylib" / "ops.py").read_text() == user


@pytest.mark.parametrize(
    ("user", "alias"),
    [
        pytest.param(USER.replace("mylib.vjp", "mylib.missing"), ALIAS, id="no such module"),
        pytest.param(USER.replace("mylib.vjp", "elsewhere.vjp"), ALIAS, id="a module not on disk"),
        pytest.param(USER, ALIAS + "vjp_w = jax.custom_vjp\n", id="bound twice in its module"),
        pytest.param(USER, ALIAS.replace("vjp_w", "other_w"), id="no such alias"),
        pytest.param(USER, "vjp_w = (\n", id="its module does not parse"),
        pytest.param(USER.replace("weighted.defvjp", "# weighted.defvjp"), ALIAS, id="no defvjp on it"),
        pytest.param(USER + "\nvjp_w = None\n", ALIAS, id="bound twice here"),
        pytest.param(
            USER.replace("from mylib.vjp import vjp_w", "from jax import custom_vjp as vjp_w"), ALIAS, id="jax"
        ),
    ],
)
def test_an_alias_that_cannot_be_read_leaves_the_use_alone(tmp_path: Path, user: str, alias: str) -> None:
    root = _tree(tmp_path, user, alias)
    assert _found([root / "mylib" / "ops.py"], Settings(frozenset(BY_CODE))) == []
    fix_paths([root / "mylib" / "ops.py"])
    assert (root / "mylib" / "ops.py").read_text() == user


def test_the_cheap_stages_keep_a_file_that_may_use_an_imported_alias() -> None:
    # Nothing in the file names custom_vjp or nondiff_argnums: the byte filter and the screen keep
    # it for the defvjp on a def decorated by an imported name, which they cannot resolve.
    assert b"custom_vjp" not in USER.encode() and b"nondiff" not in USER.encode()
    assert may_trigger(USER.encode(), DEFAULT_SELECT) and may_report(USER, Settings(DEFAULT_SELECT))
    assert check_source(USER) == []  # without the project, the import is not resolved
    for text in (
        USER.replace("weighted.defvjp(weighted_fwd, weighted_bwd)\n", ""),
        USER.replace("from mylib.vjp import vjp_w", "from jax import custom_vjp as vjp_w"),
    ):
        assert not may_report(text, Settings(DEFAULT_SELECT))


def test_a_result_read_through_another_file_is_not_cached(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    settings = Settings(DEFAULT_SELECT)
    cache = Cache.open(tmp_path / "cache", settings)
    from vjp_migrate.api import check_file

    ops = root / "mylib" / "ops.py"
    assert [d.code for d in check_file(ops, settings, cache=cache).diagnostics] == ["VJP001"]
    (root / "mylib" / "vjp.py").write_text(ALIAS.replace("(1,)", "(0,)"))  # now x is the nondiff one
    assert [(d.argument) for d in check_file(ops, settings, cache=cache).diagnostics] == ["x"]


def test_no_other_file_is_read_for_an_imported_decorator_without_defvjp(tmp_path: Path) -> None:
    from vjp_migrate.project import Project

    user = USER.replace("weighted.defvjp(weighted_fwd, weighted_bwd)\n", "") + (
        "\n\n@partial(jax.custom_vjp, nondiff_argnums=(1,))\ndef f(x, w):\n    return x * w\n"
    )
    user = "from functools import partial\nimport jax\n" + user
    root = _tree(tmp_path, user)
    project = Project.for_file(root / "mylib" / "ops.py")
    from vjp_migrate.api import analyze

    analyze(user, str(root / "mylib" / "ops.py"), Settings(DEFAULT_SELECT), project=project)
    assert not project.read_elsewhere and not project.loaded


def test_an_imported_decorator_no_file_on_disk_holds_leaves_the_result_cached(tmp_path: Path) -> None:
    # `traced` comes from a package this project does not hold: no other file is read, so the
    # result depends on the file's own bytes and may be cached (before, any lookup turned it off).
    from vjp_migrate.api import analyze
    from vjp_migrate.project import Project

    user = USER.replace("from mylib.vjp import vjp_w", "from tracing_lib import vjp_w")
    root = _tree(tmp_path, user)
    project = Project.for_file(root / "mylib" / "ops.py")
    analyze(user, str(root / "mylib" / "ops.py"), Settings(DEFAULT_SELECT), project=project)
    assert not project.read_elsewhere and not project.loaded


def test_a_module_binding_jax_otherwise_is_vjp003(tmp_path: Path) -> None:
    user = USER.replace("import jax.numpy as jnp\n", "import jax.numpy as jnp\n\njax = None  # set by the launcher\n")
    root = _tree(tmp_path, user)
    results = check_paths([root / "mylib" / "ops.py"])
    (found,) = [d for r in results for d in r.diagnostics]
    assert (found.code, found.fixable) == ("VJP003", False)
    assert found.message.endswith(
        "this module binds `jax` otherwise than by an import at its top, so the fix can neither write "
        "`jax.custom_vjp` nor import it"
    )


def test_a_call_form_whose_primal_is_no_def_here_is_not_followed(tmp_path: Path) -> None:
    user = USER.replace("@vjp_w\ndef weighted(", "def _weighted(").replace(
        "\n\ndef weighted_fwd", "\n\nweighted = vjp_w(lambda x, w: _weighted(x, w))\n\n\ndef weighted_fwd"
    )
    assert "weighted = vjp_w(lambda" in user
    root = _tree(tmp_path, user)
    assert _found([root / "mylib" / "ops.py"], Settings(frozenset(BY_CODE))) == []
