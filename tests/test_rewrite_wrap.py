"""rewrite.wrap: a line the rewrite makes longer than the project's limit is split as black and
ruff split it, under the file's own hanging indent; config.line_length finds that limit."""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

import libcst as cst
import pytest

from vjp_migrate.api import DEFAULT_SETTINGS, fix_source
from vjp_migrate.config import CliOptions, groups, line_length
from vjp_migrate.rewrite.wrap import split_end, split_params

HEAD = "import jax\nimport jax.numpy as jnp\nfrom functools import partial\n\n\n"


def site(fwd_return: str, unpack: str = "a, b = res", bwd_return: str = "return (g * w * a * b,)") -> str:
    return HEAD + textwrap.dedent(
        f"""\
        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, w):
            return x * w


        def f_fwd(x, w):
            {fwd_return}


        def f_bwd(w, res, g):
            {unpack}
            {bwd_return}


        f.defvjp(f_fwd, f_bwd)
        """
    )


def fix(code: str, limit: int | None = None) -> str:
    settings = dataclasses.replace(DEFAULT_SETTINGS, line_length=limit)
    out = fix_source(code, settings=settings).source
    ast.parse(out)
    return out


LONG_RETURN = (
    "return f(x, w), (jnp.cos(x_longer_name), jnp.sin(another_long_name_for_x))  # saved"  # 87 wide with its indent
)


def test_a_residual_grown_past_the_limit_is_split_one_item_per_line() -> None:
    out = fix(site(LONG_RETURN))
    assert (
        "    return f(x, w), (\n"
        "        w,\n"
        "        jnp.cos(x_longer_name),\n"
        "        jnp.sin(another_long_name_for_x),\n"
        "    )  # saved\n"
    ) in out
    assert "    w, a, b = res\n" in out  # short enough: untouched


def test_lines_are_measured_where_python_counts_them() -> None:
    # A page-break line (`\x0c`) is one line for Python and LibCST, two for str.splitlines: the
    # long return was measured on the line above it and left on one line.
    out = fix(site(LONG_RETURN).replace("\n\ndef f_fwd", "\n\x0c\n\x0c\ndef f_fwd"))
    assert "    return f(x, w), (\n        w,\n        jnp.cos(x_longer_name),\n" in out, out


def test_the_limit_is_the_projects() -> None:
    assert "(w, jnp.cos(x_longer_name), jnp.sin(another_long_name_for_x))  # saved" in fix(site(LONG_RETURN), 120)
    assert "    return (\n        g * w * a * b,\n        None,\n    )\n" in fix(site(LONG_RETURN), 30)


def test_a_line_already_too_long_or_still_short_enough_stays_on_one_line() -> None:
    already = LONG_RETURN.replace("x_longer_name", "x_longer_name_too_long_already")
    assert "(w, jnp.cos(x_longer_name_too_long_already), jnp.sin(" in fix(site(already))
    assert "return f(x, w), (w, jnp.cos(x), jnp.sin(x))\n" in fix(site("return f(x, w), (jnp.cos(x), jnp.sin(x))"))


def test_without_a_configured_limit_a_file_with_longer_lines_keeps_to_its_longest() -> None:
    code = site(LONG_RETURN) + "\n\nTABLE = " + repr("x" * 90) + "\n"  # 101 wide
    assert "(w, jnp.cos(x_longer_name), jnp.sin(another_long_name_for_x))  # saved" in fix(code)
    assert "    return f(x, w), (\n        w,\n" in fix(code, 88)
    longer = code.replace("another_long_name_for_x", "another_long_name_for_x_" + "y" * 12)  # 99 wide, 102 after
    assert "    return f(x, w), (\n        w,\n" not in fix(longer)  # it was already longer than 88


def test_a_bare_unpack_target_and_return_get_parentheses() -> None:
    out = fix(
        site(
            "return f(x, w), (x, x)",
            unpack="first_residual_of_the_forward_pass, second_residual_of_the_forward_pass_wxyz = res",
            bwd_return="return g * w * first_residual_of_the_forward_pass * second_residual_of_the_forward,",
        )
    )
    assert (
        "    (\n"
        "        w,\n"
        "        first_residual_of_the_forward_pass,\n"
        "        second_residual_of_the_forward_pass_wxyz,\n"
        "    ) = res\n"
    ) in out
    assert (
        "    return (\n        g * w * first_residual_of_the_forward_pass * second_residual_of_the_forward,\n        None,\n    )\n"
        in out
    )


def test_the_hanging_indent_is_the_files() -> None:
    code = site(LONG_RETURN).replace("\n    ", "\n  ") + "\n\ndef helper(x):\n  return jnp.sum(\n      x,\n  )\n"
    assert "  return f(x, w), (\n      w,\n      jnp.cos(x_longer_name),\n" in fix(code, 86)


def test_a_grown_def_line_splits_its_parameters() -> None:
    code = HEAD + textwrap.dedent(
        """\
        @partial(jax.custom_vjp, nondiff_argnums=(0,))
        def scaled(scale, queries, k):
            return queries * scale * k


        def scaled_fwd(scale: Arr, queries: Arr, k: Arr) -> tuple[Arr, tuple[Arr, Arr]]:
            return scaled(scale, queries, k), (queries, k)


        def scaled_bwd(scale, res, g):
            queries, k = res
            return g * scale * k, g * scale * queries


        scaled.defvjp(scaled_fwd, scaled_bwd)
        """
    )
    out = fix(code, 84)
    assert "def scaled_fwd(\n    scale: Arr, queries: Arr, k: Arr\n) -> tuple[Arr, tuple[Arr, Arr, Arr]]:\n" in out


def _params(header: str) -> cst.Parameters:
    node = cst.parse_statement(f"{header}\n    pass\n")
    assert isinstance(node, cst.FunctionDef)
    return node.params


def test_parameters_that_do_not_fit_on_a_line_go_one_per_line() -> None:
    params = _params("def f(alpha, beta, gamma):")
    split = split_params(params, "", "    ", 30)
    assert split is not None
    node = cst.parse_statement("def f(alpha, beta, gamma):\n    pass\n")
    assert isinstance(node, cst.FunctionDef)
    code = cst.Module([]).code_for_node(node.with_changes(params=split[0], whitespace_before_params=split[1]))
    assert code.startswith("def f(\n    alpha, beta, gamma\n):")
    narrow = split_params(params, "", "    ", 12)
    assert narrow is not None
    code = cst.Module([]).code_for_node(node.with_changes(params=narrow[0], whitespace_before_params=narrow[1]))
    assert code.startswith("def f(\n    alpha,\n    beta,\n    gamma,\n):")
    assert split_params(_params("def f(a, *args):"), "", "    ", 80) is None


def test_only_a_literal_ending_the_value_is_split() -> None:
    assert split_end(cst.parse_expression("f(x) + g(y)"), "", "    ") is None
    pair = split_end(cst.parse_expression("out, [a, b]"), "", "    ")
    assert pair is not None and cst.Module([]).code_for_node(pair) == "out, [\n    a,\n    b,\n]"


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param({}, None, id="nothing"),
        pytest.param({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, 100, id="ruff"),
        pytest.param({"pyproject.toml": "[tool.black]\nline-length = 79\n"}, 79, id="black"),
        pytest.param(
            {"ruff.toml": "line-length = 99\n", "pyproject.toml": "[tool.black]\nline-length = 79\n"},
            99,
            id="ruff.toml first",
        ),
        pytest.param({"setup.cfg": "[flake8]\nmax-line-length = 110\n"}, 110, id="flake8 in setup.cfg"),
        pytest.param({"tox.ini": "[flake8]\nmax_line_length = 101\n"}, 101, id="tox.ini"),
        pytest.param({"pyproject.toml": "[tool.ruff\n"}, None, id="broken file passed over"),
    ],
)
def test_line_length_is_found_in_the_projects_configuration(
    tmp_path: Path, files: dict[str, str], expected: int | None
) -> None:
    project = tmp_path / f"p{abs(hash(tuple(files.items())))}"
    (project / "pkg").mkdir(parents=True)
    for name, text in files.items():
        (project / name).write_text(text, encoding="utf-8")
    (project / "pkg" / ".flake8").write_text("[flake8]\nselect = E\n", encoding="utf-8")  # no length: passed over
    assert line_length(project / "pkg" / "mod.py") == expected


def test_each_group_carries_its_projects_line_length(tmp_path: Path) -> None:
    for name, length in (("a", 100), ("b", 79)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "pyproject.toml").write_text(f"[tool.ruff]\nline-length = {length}\n", encoding="utf-8")
        (tmp_path / name / "m.py").write_text("x = 1\n", encoding="utf-8")
    found = groups([tmp_path / "a" / "m.py", tmp_path / "b" / "m.py"], CliOptions())
    assert [(g.settings.line_length, g.paths) for g in found] == [
        (100, [tmp_path / "a" / "m.py"]),
        (79, [tmp_path / "b" / "m.py"]),
    ]
    (isolated,) = groups([tmp_path / "a" / "m.py"], CliOptions(isolated=True))
    assert isolated.settings.line_length is None


def test_an_annotation_on_a_line_of_its_own_splits_its_brackets() -> None:
    code = HEAD + textwrap.dedent(
        """\
        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def f(x, offset_array):
            return x + offset_array


        def f_fwd(x, offset_array):
            return f(x, offset_array), (x, x * 2)


        def f_bwd(
            offset_array: jax.Array | None,
            residuals: tuple[qarray.MaybeQArray, qarray.MaybeQArray],
            g: jax.Array,
        ):
            a, b = residuals
            return (g * a * b * offset_array,)


        f.defvjp(f_fwd, f_bwd)
        """
    )
    out = fix(code, 70)
    assert "    residuals: tuple[\n        jax.Array | None, qarray.MaybeQArray, qarray.MaybeQArray\n    ],\n" in out
    assert "residuals: tuple[jax.Array | None, qarray.MaybeQArray, qarray.MaybeQArray],\n" in fix(code)


VARIADIC = HEAD + textwrap.dedent(
    """\
    @partial(jax.custom_vjp, nondiff_argnums=(1, 2))
    def f(x, offsets, counts):
        return x + offsets + counts


    def f_fwd(
        x, offsets: OffsetArray | None, counts: CountArray | int
    ) -> tuple[
        jax.Array,
        tuple[jax.Array, ...],
    ]:
        residual = (x,)
        return f(x, offsets, counts), residual


    def f_bwd(
        offsets: OffsetArray | None,
        counts: CountArray | int,
        residual: tuple[jax.Array, ...],
        g: jax.Array,
    ):
        (x,) = residual
        return (g * x * offsets * counts,)


    f.defvjp(f_fwd, f_bwd)
    """
)


def test_a_union_too_long_for_its_own_line_breaks_before_each_bar() -> None:
    # As ruff formats it, in bwd's residual parameter and in the item of fwd's split return type.
    joined = ["jax.Array", "| OffsetArray", "| CountArray", "| int", "| None,", "...,"]
    out = fix(VARIADIC, 40)
    assert "    residual: tuple[\n" + "".join(f"        {item}\n" for item in joined) + "    ],\n" in out, out
    assert "    tuple[\n" + "".join(f"        {item}\n" for item in joined) + "    ],\n]:\n" in out, out
    one_line = "tuple[jax.Array | OffsetArray | CountArray | int | None, ...],\n"
    assert f"    residual: {one_line}" in fix(VARIADIC) and f"\n    {one_line}]:\n" in fix(VARIADIC)


# --- measuring after the splice: the plans are applied once unless a line grew too long ------


def _applied(code: str, monkeypatch: pytest.MonkeyPatch, limit: int | None = None) -> tuple[str, list[bool]]:
    """The fixed code, and for each time Apply ran whether it measured the lines as they changed."""
    import vjp_migrate.rewrite as rewrite

    runs: list[bool] = []
    original = rewrite.Apply

    def counted(plans: object, module: cst.Module, measure: bool = True, **options: object) -> object:
        runs.append(measure)
        return original(plans, module, measure, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(rewrite, "Apply", counted)
    return fix(code, limit), runs


def test_lines_short_enough_are_not_measured_and_the_plans_applied_once(monkeypatch: pytest.MonkeyPatch) -> None:
    out, runs = _applied(site("return f(x, w), (jnp.cos(x), jnp.sin(x))"), monkeypatch)
    assert runs == [False]
    assert "return f(x, w), (w, jnp.cos(x), jnp.sin(x))\n" in out


def test_a_line_found_too_long_in_the_spliced_code_is_wrapped_by_a_measuring_pass(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, runs = _applied(site(LONG_RETURN), monkeypatch)
    assert runs == [False, True]
    assert out == fix(site(LONG_RETURN))
    assert "    return f(x, w), (\n        w,\n" in out


def test_a_growth_the_edits_do_not_tell_is_measured_from_the_new_code(monkeypatch: pytest.MonkeyPatch) -> None:
    # A return stored in a temporary first: the splicer rewrites its whole statement, so the
    # edits say nothing of the value's own growth; the new value's code tells.
    code = site("return f(x, w), (a, b)", bwd_return="return pre_bwd(x, g)").replace("def f(x, w):", "def f(x, w, z):")
    code = code.replace("return x * w\n", "return x * w * z\n").replace("def f_fwd(x, w):", "def f_fwd(x, w, z):")
    short, runs = _applied(code, monkeypatch)
    assert runs == [False]
    assert "grads = pre_bwd(x, g)\n" in short
    monkeypatch.undo()
    long, runs = _applied(code, monkeypatch, limit=40)
    assert runs == [False, True]
    assert long == fix(code, 40)


def test_index_growth_reads_the_spliced_edits() -> None:
    from vjp_migrate.walk import index_of

    module = cst.parse_module("x = (a, b)  # note\ny = [c]\n")
    index = index_of(module)
    first = module.body[0]
    assert isinstance(first, cst.SimpleStatementLine) and isinstance(first.body[0], cst.Assign)
    old = first.body[0].value
    assert isinstance(old, cst.Tuple)
    new_value = old.with_changes(
        elements=[
            *old.elements[:-1],
            old.elements[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
            cst.Element(cst.Name("longer")),
        ]
    )
    new = module.with_changes(
        body=[first.with_changes(body=[first.body[0].with_changes(value=new_value)]), *module.body[1:]]
    )
    assert index.code(new)[0] == "x = (a, b, longer)  # note\ny = [c]\n"
    assert index.growth(old) == len(", longer")
    assert index.growth(module.body[1]) == 0  # unchanged


# --- sums of tuples and lambdas -------------------------------------------------------------


def _bwd_sum(primal: str, nondiff: str, returned: str) -> str:
    return HEAD + textwrap.dedent(
        f"""\
        @partial(jax.custom_vjp, nondiff_argnums={nondiff})
        def f({primal}):
            return x * w + y


        def f_fwd({primal}):
            return f({primal}), None


        def f_bwd(w, _, g):
            rest = (g,)
            {returned}


        f.defvjp(f_fwd, f_bwd)
        """
    )


@pytest.mark.parametrize(
    ("primal", "nondiff", "returned", "expected"),
    [
        pytest.param(
            "x, y, w",
            "(2,)",
            "return tuple(g * w * other for other in (jnp.ones(3),)) + (g * jnp.conj(w) * 2.0,)",
            "    return tuple(g * w * other for other in (jnp.ones(3),)) + (\n"
            "        g * jnp.conj(w) * 2.0,\n"
            "        None,\n"
            "    )\n",
            id="two terms: the end literal",
        ),
        pytest.param(
            "w, x, y",
            "(0,)",
            "return (g * w * jnp.ones_like(g) + jnp.zeros_like(g) * w * 2.0 * w * w * w,) + rest",
            "    return (\n        None,\n        g * w * jnp.ones_like(g) + jnp.zeros_like(g) * w * 2.0 * w * w * w,\n"
            "    ) + rest\n",
            id="two terms: the first literal before a name",
        ),
        pytest.param(
            "x, y, w",
            "(2,)",
            "return (-g * w * jnp.ones(3),) + (g * jnp.ones_like(w),) + (g * jnp.sinh(w * w),)",
            "    return (\n        (-g * w * jnp.ones(3),) + (g * jnp.ones_like(w),) + (g * jnp.sinh(w * w), None)\n    )\n",
            id="three terms fitting on a line of their own",
        ),
        pytest.param(
            "x, y, w",
            "(2,)",
            "return (g * w * jnp.ones(3),) + (g * jnp.ones_like(w) * w * w,) + (g * jnp.sin(w),)",
            "    return (\n        (g * w * jnp.ones(3),)\n        + (g * jnp.ones_like(w) * w * w,)\n"
            "        + (g * jnp.sin(w), None)\n    )\n",
            id="three terms, one per line",
        ),
        pytest.param(
            "x, y, w",
            "(2,)",
            "return tuple(g * w * other_name for other_name in (jnp.ones(3), jnp.ones(3))) + (g * w,)",
            "    return tuple(g * w * other_name for other_name in (jnp.ones(3), jnp.ones(3))) + (g * w, None)\n",
            id="what comes before the end literal does not fit: stays",  # black splits `tuple(`
        ),
    ],
)
def test_a_sum_of_tuples_is_split_as_black_splits_it(primal: str, nondiff: str, returned: str, expected: str) -> None:
    # A bwd return `rest + (a,)` gaining its None past the limit stayed on one line.
    out = fix(_bwd_sum(primal, nondiff, returned), 88)
    assert expected in out, out


LAMBDAS = HEAD + textwrap.dedent(
    """\
    @partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4))
    def band(x, lo, hi, s, t):
        return jnp.clip(x, lo, hi) * s + t


    band.defvjp(
        lambda x, lo, hi, s, t: (band(x, lo, hi, s, t), (jnp.sin(x), jnp.cos(x))),
        lambda lo, hi, s, t, r, g: (jnp.where((r[0] > lo) & (r[0] < hi), g * s, 0.0),),
    )
    """
)


def test_a_lambda_alone_on_its_line_splits_its_body_and_a_def_made_from_one_its_return() -> None:
    # fwd's lambda keeps being a lambda: its `(out, residuals)` body splits; bwd's becomes a def
    # whose return line is longer than the lambda's was.
    out = fix(LAMBDAS, 84)
    assert (
        "    lambda x, lo, hi, s, t: (\n"
        "        band(x, lo, hi, s, t),\n"
        "        (lo, hi, s, (jnp.sin(x), jnp.cos(x))),\n"
        "    ),\n"
    ) in out, out
    assert "    return (\n        jnp.where((r[0] > lo) & (r[0] < hi), g * s, 0.0),\n        None,\n" in out, out
    assert "(band(x, lo, hi, s, t), (lo, hi, s, (jnp.sin(x), jnp.cos(x)))),\n" in fix(LAMBDAS, 100)  # short enough


def test_a_lambda_sharing_its_line_stays_on_it() -> None:
    # black would split the defvjp call's brackets first.
    code = LAMBDAS.replace("band.defvjp(\n    lambda", "band.defvjp(lambda").replace(
        "(jnp.sin(x), jnp.cos(x))),\n    lambda", "x),\n    lambda"
    )
    out = fix(code, 60)
    assert "band.defvjp(lambda x, lo, hi, s, t: (band(x, lo, hi, s, t), (lo, hi, s, x)),\n" in out, out
