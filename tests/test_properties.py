"""Property-based tests (issue #6, item 4): generated old-style custom_vjp modules.

A hypothesis strategy writes modules with random numbers of arguments of random kinds (array,
Python scalar, pytree dict, callable, static int, string), random nondiff positions listed in
random orders and spellings, None / tuple / single / variable residuals, several returns in
fwd and bwd, tuple / bare / list / variable cotangent returns, bwd renaming its parameters,
trailing comments and CRLF line endings. Each module is fixed with `fix_source`; both versions
are executed with real JAX and their gradients compared, eagerly and under `jax.jit` with the
migrated arguments traced (which the old version cannot do). Also: fix is idempotent, its
output parses, comments survive, and a module without findings comes out byte-identical.

`pytest --hypothesis-profile=long tests/test_properties.py` runs many more examples.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vjp_migrate.api import check_source, fix_source

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

DATA_KINDS = ("array", "scalar", "pytree")  # may be differentiable or nondiff
STATIC_KINDS = ("callable", "int", "string")  # only ever nondiff: JAX cannot differentiate them
PREFIX = {"array": "a", "scalar": "s", "pytree": "p", "callable": "fn", "int": "n", "string": "mode"}


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str
    nondiff: bool
    read_in_bwd: bool  # a nondiff argument bwd never reads is not saved by the fix

    @property
    def data(self) -> bool:
        return self.kind in DATA_KINDS


@dataclass(frozen=True)
class ModuleSpec:
    args: tuple[Arg, ...]
    argnums_order: tuple[int, ...]  # the nondiff positions as the decorator lists them
    argnums_spelling: str  # tuple / list / int
    residual: str  # none / tuple / single / variable
    fwd_returns: int
    bwd_return: str  # tuple / bare / list / variable
    bwd_returns: int
    bwd_suffix: str  # bwd's own names for the nondiff parameters: "" or "_b"
    comments: tuple[bool, ...]  # a trailing comment on line i
    crlf: bool

    @property
    def nondiff(self) -> list[Arg]:
        return [a for a in self.args if a.nondiff]

    @property
    def diff(self) -> list[Arg]:
        return [a for a in self.args if not a.nondiff]

    def render(self) -> str:
        lines = self._lines()
        # Not on the partial import: the fix removes that line (with its comment) when unused.
        lines = [
            f"{line}  # note {i}"
            if self.comments[i] and line.strip() and not line.startswith("from functools")
            else line
            for i, line in enumerate(lines)
        ]
        return ("\r\n" if self.crlf else "\n").join(lines) + ("\r\n" if self.crlf else "\n")

    def _argnums(self) -> str:
        if self.argnums_spelling == "int":
            return str(self.argnums_order[0])
        items = ", ".join(map(str, self.argnums_order))
        if self.argnums_spelling == "list":
            return f"[{items}]"
        return f"({items},)" if len(self.argnums_order) == 1 else f"({items})"

    def _body(self) -> list[str]:
        """The primal's computation (fwd repeats it): every argument takes part."""
        data = [a for a in self.args if a.data]
        lines = ["out = jnp.zeros(3)"]
        for i, a in enumerate(data):
            term = {"array": f"jnp.cos({a.name})", "scalar": a.name, "pytree": f'{a.name}["w"] * {a.name}["b"]'}[a.kind]
            lines.append(f"out = out * {1.0 + 0.25 * i} + {term}")
        for a in self.args:
            if a.kind == "callable":
                lines.append(f"out = {a.name}(out)")
            elif a.kind == "int":
                lines += [f"for _ in range({a.name}):", "    out = out * 0.9"]
            elif a.kind == "string":
                lines += [f'if {a.name} == "double":', "    out = out * 2.0"]
        return lines

    def _residual(self) -> tuple[list[str], str]:
        """Statements before fwd's return and the residual expression."""
        first = next(a for a in self.diff if a.data)
        saved = f"{first.name}" if first.kind != "pytree" else f'{first.name}["w"]'
        if self.residual == "none":
            return [], "None"
        if self.residual == "single":
            return [], "out"
        if self.residual == "tuple":
            return [], f"(out, {saved})"
        return [f"res = (out, {saved})"], "res"

    def _lines(self) -> list[str]:
        params = ", ".join(a.name for a in self.args)
        lines = ["import jax", "import jax.numpy as jnp", "from functools import partial", "", "FLAG = True", ""]
        lines.append(f"@partial(jax.custom_vjp, nondiff_argnums={self._argnums()})")
        lines.append(f"def f({params}):")
        lines += ["    " + line for line in self._body()] + ["    return out", "", ""]

        before, residual = self._residual()
        lines.append(f"def f_fwd({params}):")
        lines += ["    " + line for line in self._body() + before]
        for _ in range(self.fwd_returns - 1):
            lines += ["    if FLAG:", f"        return out, {residual}"]
        lines += [f"    return out, {residual}", "", ""]

        bwd_name = {a.name: a.name + self.bwd_suffix for a in self.nondiff}
        residual_param = "_" if self.residual == "none" else "res"
        bwd_params = [bwd_name[a.name] for a in self.nondiff] + [residual_param, "g"]
        lines.append(f"def f_bwd({', '.join(bwd_params)}):")
        body = []
        if self.residual == "tuple":
            body.append("r_out, r_saved = res")
            scale = "jnp.tanh(r_out) * r_saved"
        elif self.residual == "variable":
            scale = "jnp.tanh(res[0]) * res[1]"
        elif self.residual == "single":
            scale = "jnp.tanh(res)"
        else:
            scale = "1.0"
        body.append(f"scale = {scale}")
        for a in self.nondiff:
            name = bwd_name[a.name]
            if not a.read_in_bwd:
                continue
            body += {
                "array": [f"scale = scale * (1.0 + jnp.tanh({name}))"],
                "scalar": [f"scale = scale * {name}"],
                "pytree": [f'scale = scale + {name}["w"]'],
                "callable": [f"g = {name}(g)"],
                "int": [f"for _ in range({name}):", "    scale = scale * 1.1"],
                "string": [f'if {name} == "double":', "    scale = scale * 2.0"],
            }[a.kind]
        cotangents = []
        for i, a in enumerate(self.diff):
            cotangents.append(
                {
                    "array": f"g * scale * {i + 1.0}",
                    "scalar": f"jnp.sum(g * scale) * {i + 1.0}",
                    "pytree": f'{{"w": g * scale, "b": g * {i + 1.0}}}',
                }[a.kind]
            )
        items = ", ".join(cotangents)
        returned = {
            "tuple": f"({items},)" if len(cotangents) == 1 else f"({items})",
            "bare": f"{items}," if len(cotangents) == 1 else items,
            "list": f"[{items}]",
            "variable": "grads",
        }[self.bwd_return]
        if self.bwd_return == "variable":
            body.append(f"grads = ({items},)" if len(cotangents) == 1 else f"grads = ({items})")
        for _ in range(self.bwd_returns - 1):
            body += ["if FLAG:", f"    return {returned}"]
        body.append(f"return {returned}")
        lines += ["    " + line for line in body] + ["", ""]
        lines.append("f.defvjp(f_fwd, f_bwd)")
        return lines


@st.composite
def modules(draw: st.DrawFn, nondiff_kinds: tuple[str, ...] = DATA_KINDS + STATIC_KINDS) -> ModuleSpec:
    diff_kinds = draw(st.lists(st.sampled_from(DATA_KINDS), min_size=1, max_size=3))
    if "array" not in diff_kinds and "pytree" not in diff_kinds:
        diff_kinds[0] = "array"  # a differentiable array argument for the residual
    kinds_nd = draw(st.lists(st.sampled_from(nondiff_kinds), min_size=1, max_size=4))
    order = draw(st.permutations([False] * len(diff_kinds) + [True] * len(kinds_nd)))
    diff_iter, nondiff_iter = iter(diff_kinds), iter(kinds_nd)
    args = []
    for i, nondiff in enumerate(order):
        kind = next(nondiff_iter) if nondiff else next(diff_iter)
        read = True if kind not in DATA_KINDS or not nondiff else draw(st.booleans())
        args.append(Arg(f"{PREFIX[kind]}{i}", kind, nondiff, read))
    positions = [i for i, a in enumerate(args) if a.nondiff]
    spelling = draw(st.sampled_from(["tuple", "list"]))  # JAX 0.10 rejects a bare int
    n_lines = 80  # more than any module has
    return ModuleSpec(
        args=tuple(args),
        argnums_order=tuple(draw(st.permutations(positions))),
        argnums_spelling=spelling,
        residual=draw(st.sampled_from(["none", "tuple", "single", "variable"])),
        fwd_returns=draw(st.integers(1, 2)),
        bwd_return=draw(st.sampled_from(["tuple", "bare", "list", "variable"])),
        bwd_returns=draw(st.integers(1, 2)),
        bwd_suffix=draw(st.sampled_from(["", "_b"])),
        comments=tuple(draw(st.lists(st.booleans(), min_size=n_lines, max_size=n_lines))),
        crlf=draw(st.booleans()),
    )


def value_of(arg: Arg, index: int) -> Any:
    base = jnp.array([0.3, -0.7, 1.1]) + 0.1 * index
    return {
        "array": base,
        "scalar": 0.5 + 0.25 * index,
        "pytree": {"w": base, "b": base * 2.0},
        "callable": jnp.tanh,
        "int": 2,
        "string": "double" if index % 2 else "single",
    }[arg.kind]


def load(code: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "generated_module"}
    exec(compile(code, "<generated>", "exec"), namespace)
    return namespace["f"]


WEIGHTS = (1.0, -2.0, 3.0)


def gradients(f: Any, spec: ModuleSpec, traced: set[int] | None = None) -> Any:
    """d(weighted sum of f)/d(differentiable args); under jit with ``traced`` args as jit arguments."""
    values = [value_of(a, i) for i, a in enumerate(spec.args)]
    diff_positions = [i for i, a in enumerate(spec.args) if not a.nondiff]

    def loss(*args: Any) -> Any:
        return jnp.sum(f(*args) * jnp.array(WEIGHTS))

    if traced is None:
        return jax.grad(loss, argnums=diff_positions)(*values)
    dynamic = sorted(set(diff_positions) | traced)

    def loss_of_dynamic(*dynamic_values: Any) -> Any:
        full = list(values)
        for position, value in zip(dynamic, dynamic_values, strict=True):
            full[position] = value
        return loss(*full)

    grad = jax.jit(jax.grad(loss_of_dynamic, argnums=[dynamic.index(i) for i in diff_positions]))
    return grad(*[values[i] for i in dynamic])


def assert_same_gradients(before: Any, after: Any) -> None:
    flat_before, tree_before = jax.tree_util.tree_flatten(before)
    flat_after, tree_after = jax.tree_util.tree_flatten(after)
    assert tree_before == tree_after
    for x, y in zip(flat_before, flat_after, strict=True):
        assert jnp.allclose(x, y, rtol=1e-5, atol=1e-6), (x, y)


def comments_of(code: str) -> list[str]:
    return re.findall(r"# note \d+", code)


@given(modules())
def test_fix_keeps_gradients_eager_and_under_jit(spec: ModuleSpec) -> None:
    code = spec.render()
    result = fix_source(code)
    moved = {d.index for d in result.fixed}
    for i, a in enumerate(spec.args):
        if a.nondiff and a.kind == "array":
            assert i in moved, f"array argument {a.name} was not migrated:\n{code}"
        if a.kind in STATIC_KINDS:
            assert i not in moved, f"static argument {a.name} was migrated:\n{code}"
    old, new = load(code), load(result.source)
    expected = gradients(old, spec)
    assert_same_gradients(expected, gradients(new, spec))
    if moved:
        assert_same_gradients(expected, gradients(new, spec, traced=moved))


@given(modules())
def test_fix_is_idempotent_parses_and_keeps_comments(spec: ModuleSpec) -> None:
    code = spec.render()
    once = fix_source(code)
    ast.parse(once.source)
    twice = fix_source(once.source)
    assert twice.source == once.source and not twice.changed
    assert comments_of(once.source) == comments_of(code)
    if spec.crlf:
        assert "\n" not in once.source.replace("\r\n", "")


@given(modules(nondiff_kinds=STATIC_KINDS))
def test_module_without_findings_is_byte_identical(spec: ModuleSpec) -> None:
    code = spec.render()
    assert check_source(code) == []
    result = fix_source(code)
    assert result.source == code and not result.changed
