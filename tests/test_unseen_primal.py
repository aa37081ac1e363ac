"""Call forms whose primal is no def of the module: found, classified from fwd/bwd (or a lambda's
body), never a safe fix on fwd/bwd alone, and migrated without touching the primal."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest
from click.testing import CliRunner
from helpers import parse, sites_of

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.classify import classify_site
from vjp_migrate.classify.context import Context
from vjp_migrate.cli import main
from vjp_migrate.codes import BY_CODE, DEFAULT_SELECT
from vjp_migrate.model import ArgKind, FixSafety, Settings
from vjp_migrate.sites import find_sites
from vjp_migrate.walk import index_of

ALL = Settings(frozenset(BY_CODE))
UNSAFE = Settings(DEFAULT_SELECT, unsafe_fixes=True)

PRELUDE = """\
import jax
import jax.numpy as jnp
from functools import partial
import other_module

def make_impl(config):
    def impl(x, lo):
        return x * lo * config
    return impl

def _impl(cfg, x, lo):
    return x * lo * cfg

impl = make_impl(2.0)
"""

RULES = """
def f_fwd(x, lo):
    return x * lo, None

def f_bwd(lo, _, g):
    return (g * lo,)

{name}.defvjp(f_fwd, f_bwd)
"""

# (the call's primal expression, whether its body is seen)
SPELLINGS = {
    "factory result": ("impl", False),
    "functools.partial": ("partial(_impl, 2.0)", False),
    "attribute of an imported module": ("other_module.impl", False),
    "factory result wrapped in jax.jit": ("jax.jit(impl)", False),
    "lambda": ("lambda x, lo: jnp.clip(x, lo, 1.0)", True),
}
SPELLING_PARAMS = [pytest.param(expr, seen, id=name) for name, (expr, seen) in SPELLINGS.items()]


def module_with(primal: str, form: str = "f = jax.custom_vjp({primal}, nondiff_argnums=(1,))") -> str:
    return PRELUDE + form.format(primal=primal) + "\n" + RULES.format(name="f")


def in_a_factory(body: str = "return (g * lo,)") -> str:
    return textwrap.dedent(
        f"""\
        import jax

        def f_fwd(x, lo):
            return x * lo, None

        def f_bwd(lo, _, g):
            {body}

        def factory(fun):
            wrapped = jax.custom_vjp(fun, nondiff_argnums=(1,))
            wrapped.defvjp(f_fwd, f_bwd)
            return wrapped
        """
    )


def classified(code: str) -> tuple[ArgKind, tuple[str, ...], bool]:
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    (info,) = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    return info.kind, tuple(e.text for e in info.evidence), info.strong


# --- sites ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "seen"), SPELLING_PARAMS)
def test_a_primal_that_is_no_def_makes_a_site_with_fwd_s_parameters(expr: str, seen: bool) -> None:
    (site,) = sites_of(module_with(expr))
    assert (site.name, site.qualname, site.params, site.nondiff.positions, site.problem) == (
        "f",
        "f",
        ("x", "lo"),
        (1,),
        None,
    )
    assert site.primal_expr is not None and cst.Module([]).code_for_node(site.primal_expr) == expr
    assert (site.primal is not None) == seen  # a lambda is read through a def view
    assert site.fwd is not None and site.fwd.node is not None and site.fwd.node.name.value == "f_fwd"


def test_the_partial_call_form_with_a_primal_that_is_no_def() -> None:
    form = "f = partial(jax.custom_vjp, nondiff_argnums=(1,))({primal})"
    (site,) = sites_of(module_with("impl", form))
    assert site.primal is None and site.params == ("x", "lo") and site.nondiff.positions == (1,)


def test_a_parameter_of_a_factory_is_a_primal_that_is_no_def() -> None:
    (site,) = sites_of(in_a_factory())
    assert (site.name, site.primal, site.params) == ("wrapped", None, ("x", "lo"))


def test_fwd_through_partial_gives_the_parameters_after_the_bound_ones() -> None:
    code = module_with("impl").replace("def f_fwd(x, lo)", "def f_fwd(k, x, lo)")
    code = code.replace("f.defvjp(f_fwd,", "f.defvjp(partial(f_fwd, 3),")
    (site,) = sites_of(code)
    assert site.params == ("x", "lo")


def test_without_a_resolvable_fwd_bwd_names_the_arguments() -> None:
    # bwd takes the nondiff arguments first, in ascending position order: `lo` is position 1.
    code = module_with("impl").replace("f.defvjp(f_fwd, f_bwd)", "f.defvjp(other_module.fwd, f_bwd)")
    (site,) = sites_of(code)
    assert (site.params, site.has_varargs) == (("", "lo"), True)
    (found,) = check_source(code)
    assert (found.code, found.argument, found.index) == ("VJP003", "lo", 1)
    assert found.message.endswith(
        "cannot be rewritten automatically: fwd `other_module.fwd` is imported from `other_module`"
    )


@pytest.mark.parametrize(
    ("defvjp", "codes"),
    [
        pytest.param("f.defvjp(other_module.fwd, other_module.bwd)", [], id="bwd unresolved too"),
        pytest.param("f.defvjp(other_module.fwd, f_bwd_short)", ["VJP004"], id="bwd too short to name them"),
    ],
)
def test_without_resolvable_rules_nothing_names_the_arguments(defvjp: str, codes: list[str]) -> None:
    code = module_with("impl").replace("f.defvjp(f_fwd, f_bwd)", defvjp)
    code += "\ndef f_bwd_short(g):\n    return (g,)\n"
    (site,) = sites_of(code)
    assert (site.params, site.has_varargs) == ((), True)
    assert [d.code for d in check_source(code, settings=ALL)] == codes


def test_without_defvjp_nothing_is_reported() -> None:
    code = PRELUDE + "f = jax.custom_vjp(impl, nondiff_argnums=(1,))\n"
    (site,) = sites_of(code)
    assert site.problem is not None and "defvjp" in site.problem
    assert check_source(code, settings=ALL) == []


def test_nondiff_argnames_of_an_unseen_primal_cannot_be_rewritten() -> None:
    code = module_with("impl", "f = jax.custom_vjp({primal}, nondiff_argnames=('lo',))")
    (site,) = sites_of(code)
    assert site.nondiff.positions == (1,)
    (found,) = check_source(code)
    assert found.code == "VJP003" and "nondiff_argnames names parameters of the primal `impl`" in found.message
    assert not fix_source(code, settings=UNSAFE).changed


def test_a_name_that_is_a_def_stays_a_def_primal() -> None:
    (site,) = sites_of(module_with("_impl"))
    assert site.primal is not None and site.primal.name.value == "_impl" and site.primal_expr is None


# --- classify -------------------------------------------------------------------------------

UNSEEN = "is not a function defined in this module, so its uses were not seen"


@pytest.mark.parametrize(("expr", "seen"), SPELLING_PARAMS)
def test_array_evidence_in_the_rules_is_never_strong_when_the_primal_is_not_seen(expr: str, seen: bool) -> None:
    kind, reasons, strong = classified(module_with(expr))
    assert kind is ArgKind.ARRAY
    assert strong is seen
    assert any(UNSEEN in r for r in reasons) is not seen
    if not seen:
        assert reasons[-1] == f"the primal `{expr}` {UNSEEN}"


def test_a_lambda_primal_s_body_is_evidence() -> None:
    code = module_with("lambda x, lo: jnp.clip(x, lo, 1.0)").replace("x * lo, None", "x, None")
    kind, reasons, strong = classified(code.replace("(g * lo,)", "(g,)"))
    assert (kind, strong) == (ArgKind.ARRAY, True)
    assert reasons == ("used as array data by `jnp.clip` in the primal `lambda`",)


def test_static_evidence_in_the_rules_still_wins() -> None:
    code = module_with("impl").replace("return (g * lo,)", "return (g * sum(range(lo)),)")
    kind, reasons, _ = classified(code)
    assert kind is ArgKind.STATIC and not any(UNSEEN in r for r in reasons)
    assert check_source(code, settings=ALL) == []


def test_no_evidence_is_unknown_with_the_unseen_primal_as_its_reason() -> None:
    code = module_with("impl").replace("x * lo, None", "x, None").replace("(g * lo,)", "(g,)")
    kind, reasons, strong = classified(code)
    assert (kind, reasons, strong) == (ArgKind.UNKNOWN, (f"the primal `impl` {UNSEEN}",), False)
    assert check_source(code) == []  # VJP002 is off by default
    assert [d.code for d in check_source(code, settings=ALL)] == ["VJP002"]


# --- findings, noqa, inconsistency ------------------------------------------------------------


def test_the_finding_points_at_the_position_in_nondiff_argnums_and_is_unsafe() -> None:
    code = module_with("impl", "f = jax.custom_vjp({primal}, nondiff_argnums=(0, 1))")
    code = code.replace("def f_bwd(lo, _, g)", "def f_bwd(x, lo, _, g)").replace("(g * lo,)", "(g * x * lo,)")
    found = check_source(code)
    line = PRELUDE.count("\n") + 1
    column = len("f = jax.custom_vjp(impl, nondiff_argnums=(") + 1
    assert [(d.code, d.argument, d.line, d.column, d.fix_safety) for d in found] == [
        ("VJP001", "x", line, column, FixSafety.UNSAFE),
        ("VJP001", "lo", line, column + 3, FixSafety.UNSAFE),
    ]
    assert all(not d.fixable for d in found)


def test_the_finding_of_a_lambda_primal_points_at_its_parameter() -> None:
    code = module_with("lambda x, lo: jnp.clip(x, lo, 1.0)")
    (found,) = check_source(code)
    assert (found.line, found.column, found.fix_safety) == (
        PRELUDE.count("\n") + 1,
        len("f = jax.custom_vjp(lambda x, ") + 1,
        FixSafety.SAFE,
    )


def test_a_range_of_positions_points_at_the_keyword() -> None:
    code = module_with("impl", "f = jax.custom_vjp({primal}, nondiff_argnums=range(1, 2))")
    (found,) = check_source(code)
    assert found.column == len("f = jax.custom_vjp(impl, ") + 1


def test_noqa_on_the_call_silences_and_protects_from_fix() -> None:
    code = module_with("impl", "f = jax.custom_vjp({primal}, nondiff_argnums=(1,))  # noqa: VJP001")
    assert check_source(code) == []
    assert not fix_source(code, settings=UNSAFE).changed


def test_noqa_on_a_later_line_of_a_multiline_call() -> None:
    code = module_with("impl", "f = jax.custom_vjp(\n    {primal},\n    nondiff_argnums=(1,),  # noqa\n)")
    assert check_source(code) == []


def test_bwd_arity_is_still_judged_and_points_at_the_primal_expression() -> None:
    code = module_with("impl").replace("def f_bwd(lo, _, g)", "def f_bwd(_, g)")
    (found,) = check_source(code)
    assert found.code == "VJP004" and "bwd `f_bwd` takes 2 parameters" in found.message
    assert found.column == len("f = jax.custom_vjp(") + 1


# --- rewrite --------------------------------------------------------------------------------


@pytest.mark.parametrize(("expr", "seen"), SPELLING_PARAMS)
def test_fix_moves_the_argument_and_leaves_the_primal_as_written(expr: str, seen: bool) -> None:
    code = module_with(expr)
    assert fix_source(code).changed is seen  # a safe fix only when the primal's body is seen
    out = fix_source(code, settings=UNSAFE).source
    assert out == (
        code.replace(f"jax.custom_vjp({expr}, nondiff_argnums=(1,))", f"jax.custom_vjp({expr})")
        .replace("return x * lo, None", "return x * lo, lo")
        .replace("def f_bwd(lo, _, g):\n    return (g * lo,)", "def f_bwd(lo, g):\n    return (g * lo, None)")
    )


def test_fix_in_a_factory_taking_the_primal_as_a_parameter() -> None:
    out = fix_source(in_a_factory(), settings=UNSAFE).source
    assert "wrapped = jax.custom_vjp(fun)\n" in out
    assert "return x * lo, lo\n" in out and "def f_bwd(lo, g):\n    return (g * lo, None)\n" in out


def test_fix_of_the_partial_call_form_drops_the_unused_partial_import() -> None:
    code = module_with("impl", "f = partial(jax.custom_vjp, nondiff_argnums=(1,))({primal})")
    code = code.replace("def _impl(cfg, x, lo):\n    return x * lo * cfg\n\n", "")
    out = fix_source(code, settings=UNSAFE).source
    assert "f = jax.custom_vjp(impl)\n" in out and "from functools import partial" not in out


# --- the screen and the edges ---------------------------------------------------------------


@pytest.mark.parametrize(("expr", "seen"), SPELLING_PARAMS)
def test_the_screen_keeps_every_spelling(expr: str, seen: bool) -> None:
    assert screen.may_report(module_with(expr), Settings(DEFAULT_SELECT))


def test_the_screen_keeps_a_name_whose_only_def_sites_cannot_see() -> None:
    code = textwrap.dedent(
        """\
        import jax

        def outer():
            def impl(x, lo):  # a test on `lo` here would prove it static, but this is not the primal
                if lo:
                    return x
                return -x

        def f_fwd(x, lo):
            return x * lo, None

        def f_bwd(lo, _, g):
            return (g * lo,)

        f = jax.custom_vjp(impl, nondiff_argnums=(1,))
        f.defvjp(f_fwd, f_bwd)
        """
    )
    assert [d.code for d in check_source(code)] == ["VJP001"]
    assert screen.may_report(code, Settings(DEFAULT_SELECT))


def test_the_screen_still_drops_a_def_primal_of_the_enclosing_function_without_array_use() -> None:
    code = textwrap.dedent(
        """\
        import jax

        def outer():
            def impl(x, n):
                return x * sum(range(n))

            def f_fwd(x, n):
                return impl(x, n), None

            def f_bwd(n, _, g):
                return (g,)

            f = jax.custom_vjp(impl, nondiff_argnums=(1,))
            f.defvjp(f_fwd, f_bwd)
            return f
        """
    )
    assert check_source(code, settings=ALL) == []
    assert not screen.may_report(code, Settings(DEFAULT_SELECT))


def test_explain_error_points_at_the_primal_expression(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(module_with("impl"), encoding="utf-8")
    error = (
        "Traceback (most recent call last):\n"
        f'  File "{model}", line 30, in loss\n'
        "    return f(x, lo).sum()\n"
        "jax.errors.UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a custom_vjp "
        "function in a position indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed "
        "as non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should only be used "
        "for arguments that can't be or contain JAX tracers, e.g. function-valued arguments. In particular, "
        "array-valued arguments should typically not be indicated as nondiff_argnums.\n"
    )
    result = CliRunner().invoke(main, ["explain-error"], input=error, catch_exceptions=False)
    line = PRELUDE.count("\n") + 1
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0].startswith(f"{model}:{line}:20: custom_vjp `f` received a JAX Tracer")
    assert "+f = jax.custom_vjp(impl)" in result.stdout


@pytest.mark.parametrize(
    ("primal", "defvjp", "codes"),
    [
        pytest.param("*impls", "f.defvjp(f_fwd, f_bwd)", [], id="starred primal: no site"),
        pytest.param("impl", "f.defvjp(lambda x, lo: (x * lo, None), f_bwd)", ["VJP001"], id="lambda fwd"),
        pytest.param("impl", "f.defvjp(fwd_varargs, f_bwd)", ["VJP003"], id="fwd taking *args: position in *args"),
        pytest.param("impl", "f.defvjp(partial(f_fwd, k=1), f_bwd)", ["VJP003"], id="fwd partial with a keyword"),
        pytest.param("lambda *a: a[0]", "f.defvjp(f_fwd, f_bwd)", ["VJP003"], id="lambda primal taking *args"),
        pytest.param("SomeClass", "f.defvjp(f_fwd, f_bwd)", ["VJP001"], id="a class"),
    ],
)
def test_odd_spellings_never_raise(primal: str, defvjp: str, codes: list[str]) -> None:
    code = module_with(primal).replace("f.defvjp(f_fwd, f_bwd)", defvjp)
    code += "\ndef fwd_varargs(*args):\n    return args[0], None\n"
    assert [d.code for d in check_source(code, settings=ALL)] == codes
    fix_source(code, settings=Settings(frozenset(BY_CODE), unsafe_fixes=True))


def test_without_a_resolvable_fwd_bwd_s_shape_is_still_judged() -> None:
    code = module_with("impl").replace("f.defvjp(f_fwd, f_bwd)", "f.defvjp(other_module.fwd, f_bwd)")
    (found,) = check_source(code.replace("def f_bwd(lo, _, g)", "def f_bwd(_, g)"), settings=ALL)
    assert found.code == "VJP004" and "bwd `f_bwd` takes 2 parameters" in found.message


IMPL = """\
import jax.numpy as jnp


def pad_rows(x, n):
    return jnp.concatenate([x, jnp.zeros((n, x.shape[1]), x.dtype)])
"""

OPS = """\
import jax

from .impl import pad_rows


def pad_rows_fwd(x, n):
    return x, x.shape[0]  # not pad_rows(x, n): its body would be read as a helper's


def pad_rows_bwd(n, rows, g):
    return (g[:rows] * (1.0 + 0.0 * n),)


{binding}
"""
AT_MODULE_LEVEL = """\
padded = jax.custom_vjp(pad_rows, nondiff_argnums=(1,))
padded.defvjp(pad_rows_fwd, pad_rows_bwd)"""
IN_A_FACTORY = """\
def make(pad_rows):
    padded = jax.custom_vjp(pad_rows, nondiff_argnums=(1,))
    padded.defvjp(pad_rows_fwd, pad_rows_bwd)
    return padded"""


def _reasons(tmp_path: Path, binding: str, alone: bool = False) -> list[str]:
    from vjp_migrate.api import check_paths

    package = tmp_path / "mypkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "impl.py").write_text(IMPL)
    (package / "ops.py").write_text(OPS.format(binding=binding))
    results = check_paths([package / "ops.py" if alone else package], settings=ALL)
    return [e.text for r in results for d in r.diagnostics for e in d.reasons]


def test_an_imported_primal_is_read_where_its_module_is_checked(tmp_path: Path) -> None:
    """`n` is a shape in the imported primal: read there, no finding."""
    assert _reasons(tmp_path, AT_MODULE_LEVEL) == []


def test_an_imported_primal_outside_the_run_says_where_it_is_and_how_to_have_it_read(tmp_path: Path) -> None:
    assert (
        "the primal `pad_rows` is imported from `mypkg.impl`, which is not among the files checked; "
        "include it to read its uses" in _reasons(tmp_path, AT_MODULE_LEVEL, alone=True)
    )


def test_an_imported_name_a_def_may_rebind_is_not_read_as_the_primal(tmp_path: Path) -> None:
    """Inside `make`, `pad_rows` is its parameter, not the imported def: its body is not read."""
    assert "the primal `pad_rows` is not a function defined in this module, so its uses were not seen" in (
        _reasons(tmp_path, IN_A_FACTORY)
    )
