"""classify on probe22's gaps (notes/probe22-findings.md), each with JAX's word on it."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from helpers import parse
from test_classify import _unscreened, classified, site_module

from vjp_migrate.classify import classify_site
from vjp_migrate.classify.context import Context
from vjp_migrate.model import ArgInfo, ArgKind
from vjp_migrate.sites import find_sites
from vjp_migrate.walk import index_of

_SHARDED = (
    "import functools\nfrom typing import Optional\nimport jax\nimport jax.numpy as jnp\n"
    "from jax.sharding import Mesh, NamedSharding, PartitionSpec as P\n"
    "from jax.experimental.shard_map import shard_map\n"
    "def _copy(x, mesh):\n    {body}\n"
    "@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
    "def split_copy(x, {param}):\n    return _copy(x, mesh)\n"
    "def _fwd(x, mesh):\n    return split_copy(x, mesh), None\n"
    "def _bwd(mesh, _, ct):\n    return (ct,)\n"
    "split_copy.defvjp(_fwd, _bwd)\n"
)


@pytest.mark.parametrize(
    ("body", "shown"),
    [
        pytest.param(
            "n = x.shape[0] // mesh.shape['data']\n"
            "    return jax.shard_map(lambda v: v * n, mesh=mesh, in_specs=(P('data'),), out_specs=P('data'))(x)",
            "passed as `mesh=` to `jax.shard_map`",
            id="mesh= of jax.shard_map, its .shape read",
        ),
        pytest.param(
            "return shard_map(lambda v: v * 1.0, mesh, (P('data'),), P('data'))(x)",
            "passed as `mesh` to `shard_map`",
            id="the experimental shard_map's place",
        ),
        pytest.param(
            "return jax.device_put(x, NamedSharding(mesh, P('data'))) * mesh.size",
            "passed to `NamedSharding`",
            id="NamedSharding",
        ),
    ],
)
def test_a_device_mesh_given_to_shard_map_or_a_sharding_is_static(body: str, shown: str) -> None:
    # probe22 G7 (r24, TPU split copy): `mesh.shape[a]` made it VJP001 with a safe fix, and the fix
    # breaks the code (a Mesh is not a valid JAX type, test below).
    info = classified(_SHARDED.format(body=body, param="mesh"))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text.startswith(shown), info.evidence


@pytest.mark.parametrize(
    "annotation",
    ["Mesh", "jax.sharding.Mesh", "Optional[Mesh]", "jax.ShapeDtypeStruct", "NamedSharding"],
)
def test_a_jax_description_annotation_wins_over_shape_reads(annotation: str) -> None:
    # probe22 G8: `out_struct: jax.ShapeDtypeStruct` whose `.shape` and `.dtype` are read.
    body = "return x * mesh.shape[0] + jnp.zeros(mesh.shape, mesh.dtype)"
    info = classified(_SHARDED.format(body=body, param=f"mesh: {annotation}"))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text.endswith("a JAX description of a value or its placement, never a JAX value")


def test_a_module_class_named_mesh_is_no_jax_description() -> None:
    code = _SHARDED.format(body="return x * mesh.shape[0]", param="mesh: Mesh").replace(
        "from jax.sharding import Mesh, ", "from jax.sharding import "
    )
    info = classified(code + "class Mesh:\n    points: jax.Array\n")
    assert info.kind is ArgKind.ARRAY, info.evidence


def test_a_mesh_or_a_shape_dtype_struct_moved_out_of_nondiff_argnums_fails() -> None:
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("data",))

    def scale(x: jax.Array, mesh: jax.sharding.Mesh) -> jax.Array:
        return x * mesh.shape["data"]

    moved = jax.custom_vjp(scale)
    moved.defvjp(lambda x, m: (scale(x, m), None), lambda _, g: (g, None))
    with pytest.raises(TypeError, match="not a valid JAX type"):
        jax.grad(lambda x: moved(x, mesh).sum())(jnp.ones(2))
    kept = jax.custom_vjp(scale, nondiff_argnums=(1,))
    kept.defvjp(lambda x, m: (scale(x, m), None), lambda m, _, g: (g,))
    assert jax.jit(jax.grad(lambda x: kept(x, mesh).sum()))(jnp.ones(2)).tolist() == [1.0, 1.0]

    struct = jax.ShapeDtypeStruct((3,), jnp.float32)

    def pad(x: jax.Array, out: jax.ShapeDtypeStruct) -> jax.Array:
        return jnp.zeros(out.shape, out.dtype).at[:1].set(x)

    moved_pad = jax.custom_vjp(pad)
    moved_pad.defvjp(lambda x, o: (moved_pad(x, o), None), lambda _, g: (g[:1], None))
    with pytest.raises(TypeError, match="ShapeDtypeStruct does not have a value"):
        jax.jit(jax.grad(lambda x: jnp.sum(moved_pad(x, struct) ** 2)))(jnp.ones(1))


@pytest.mark.parametrize(
    ("primal", "strong"),
    [
        pytest.param("return jnp.zeros(a.shape, a.dtype).at[: x.shape[0]].set(x)", False, id=".shape and .dtype alone"),
        pytest.param("return x * a.ndim", False, id=".ndim alone"),
        pytest.param("return x.astype(a.dtype)", False, id=".dtype alone (test_classify's old strong case)"),
        pytest.param("return jnp.zeros(a.shape) + x * a", True, id="with arithmetic"),
        pytest.param("return x @ a.T", True, id=".T"),
    ],
)
def test_only_metadata_read_is_array_data_with_no_safe_fix(primal: str, strong: bool) -> None:
    # probe22 G8, unannotated: `jnp.zeros(out_struct.shape, out_struct.dtype)` works as well for a
    # `jax.ShapeDtypeStruct` or a mesh's `.shape`, which moved fail (test above).
    code = _SHARDED.split("def _copy")[0] + (
        "@functools.partial(jax.custom_vjp, nondiff_argnums=(1,))\n"
        f"def pad_to(x, a):\n    {primal}\n"
        "def _fwd(x, a):\n    return pad_to(x, a), None\n"
        "def _bwd(a, _, g):\n    return (g[:1],)\n"
        "pad_to.defvjp(_fwd, _bwd)\n"
    )
    info = classified(code)
    assert (info.kind, info.strong) == (ArgKind.ARRAY, strong), info.evidence


@pytest.mark.parametrize(
    "bwd",
    [
        pytest.param("return (jax.vmap(lambda i, c: c * i)(a, g).sum(0),)", id="in_axes by default"),
        pytest.param("return (jax.vmap(lambda c, i: c * i, in_axes=(None, 0))(g, a).sum(0),)", id="in_axes tuple"),
        pytest.param("return (jax.vmap(lambda i, c: c * i, 0)(a, g).sum(0),)", id="in_axes by place"),
        pytest.param("return (jax.pmap(lambda i, c: c * i)(a, g).sum(0),)", id="pmap"),
    ],
)
def test_an_operand_a_mapping_transform_maps_over_is_array_data(bwd: str) -> None:
    # probe22 G1 (r01, brainstate FixedProb): `jax.vmap(lambda idx, w: ...)(indices, weight)` in bwd.
    # The screen does not keep these yet: a strict xfail in test_prefilter.
    info = _unscreened(site_module("return x", bwd))
    assert (info.kind, info.strong) == (ArgKind.ARRAY, True), info.evidence
    assert info.evidence[0].text.startswith("mapped over by `jax."), info.evidence


@pytest.mark.parametrize(
    "bwd",
    [
        pytest.param("return (jax.vmap(lambda c, i: c * i, in_axes=(0, None))(g, a),)", id="in_axes None there"),
        pytest.param("return (jax.vmap(lambda c, i: c * i, in_axes=axes)(g, a),)", id="in_axes a name"),
        pytest.param("return (jax.vmap(lambda c, i: c * i)(g, i=a),)", id="a keyword operand"),
        pytest.param("return (jax.vmap(lambda c, i: c * i, in_axes={'i': 0})(g, a),)", id="in_axes a dict"),
    ],
)
def test_an_operand_no_mapping_transform_is_known_to_map_says_nothing(bwd: str) -> None:
    info = classified(site_module("return x", bwd, extra="axes = (0, None)\n"))
    assert not any(e.text.startswith("mapped over") for e in info.evidence), info.evidence


def test_a_static_setting_cannot_be_mapped_over_and_a_mapped_index_array_breaks_in_nondiff_argnums() -> None:
    with pytest.raises(ValueError, match="vmap was requested to map its argument"):
        jax.vmap(lambda i, c: c * i)(3, jnp.ones(2))

    def gather_sum(indices: jax.Array, w: jax.Array) -> jax.Array:
        return jnp.sum(w[indices], axis=1)

    def bwd(indices: jax.Array, w: jax.Array, ct: jax.Array) -> tuple[jax.Array]:
        return (jax.vmap(lambda i, c: jnp.zeros_like(w).at[i].add(c))(indices, ct).sum(0),)

    rule = jax.custom_vjp(gather_sum, nondiff_argnums=(0,))
    rule.defvjp(lambda i, w: (rule(i, w), w), bwd)
    indices, w = jnp.array([[0, 1], [2, 0]]), jnp.array([1.0, 2.0, 3.0])
    assert jax.grad(lambda w: rule(indices, w).sum())(w).tolist() == [2.0, 1.0, 1.0]
    with pytest.raises(jax.errors.UnexpectedTracerError):
        jax.jit(jax.grad(lambda w, i: rule(i, w).sum()))(w, indices)


_CLASS_BODY_SITE = (
    "from functools import partial\nimport jax\nimport jax.numpy as jnp\n"
    "class Solver:\n"
    "    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))\n"
    "    def layer(solver, z_init, params):\n        return solver(lambda z: jnp.tanh(params * z), z_init)\n"
    "    def _fwd(solver, z_init, params):\n        return Solver.layer(solver, z_init, params), (params,)\n"
    "    def _bwd(solver, z_init, res, g):\n        return (g,)\n"
    "    layer.defvjp(_fwd, _bwd)\n"
    "    def iterate(self, f, z):\n        return f(z)\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param("    def run(self, p):\n        return self.layer(self.iterate, jnp.zeros(3), p)\n", id="self"),
        pytest.param(
            "class Newton(Solver):\n    def run(this, p):\n        return this.layer(this.iterate, jnp.zeros(3), p)\n",
            id="a subclass's method",
        ),
        pytest.param(
            "    def run(self, p):\n        return jax.jit(lambda q: self.layer(self.iterate, jnp.zeros(3), q))(p)\n",
            id="in a lambda",
        ),
    ],
)
def test_a_class_body_site_called_through_an_instance_is_called_with_those_arguments(caller: str) -> None:
    # probe22 G3 (r07, probit_jax): `self.fixed_point_layer(self.newton_solver, jnp.zeros(self.N), f,
    # params)`; a custom_vjp object is no descriptor, so `self` is not passed.
    module, imports = parse(_CLASS_BODY_SITE + caller)
    (site,) = find_sites(module, imports)
    solver, z_init = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    # Not strong: `z_init` also goes to `solver`, a parameter whose body is not read (probe32 P3).
    assert (z_init.kind, z_init.strong) == (ArgKind.ARRAY, False), z_init.evidence
    assert z_init.evidence[0].text == "an array is passed at a call site (`jnp.zeros(3)`)"
    assert solver.kind is ArgKind.STATIC and not any("the instance of" in e.text for e in solver.evidence)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "    def run(self, p):\n        self = other\n        return self.layer(1, jnp.zeros(3), p)\n",
            id="self rebound",
        ),
        pytest.param("def run(self, p):\n    return self.layer(1, jnp.zeros(3), p)\n", id="no method"),
        pytest.param(
            "class Other:\n    def run(self, p):\n        return self.layer(1, jnp.zeros(3), p)\n", id="another class"
        ),
    ],
)
def test_no_instance_of_the_site_s_class_is_no_call_of_it(caller: str) -> None:
    module, imports = parse(_CLASS_BODY_SITE + caller)
    (site,) = find_sites(module, imports)
    _, z_init = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    assert not any("is passed at a call site" in e.text for e in z_init.evidence), z_init.evidence


def test_a_custom_vjp_is_no_descriptor() -> None:
    class Solver:
        @staticmethod
        def _fwd(w: jax.Array, x: jax.Array) -> tuple[jax.Array, None]:
            return w * x, None

        scale = jax.custom_vjp(lambda w, x: w * x)
        scale.defvjp(_fwd, lambda _, g: (g, g))

    assert not hasattr(jax.custom_vjp, "__get__")
    assert float(Solver().scale(2.0, 3.0)) == 6.0  # `self` is not passed


_SCATTER_SITE = (
    "import jax\nimport jax.numpy as jnp\nimport numpy as np\n"
    "def _mv(indices, w, n):\n    return jnp.zeros((n,), w.dtype).at[indices].add(w)\n"
    "def _mv_fwd(indices, w, n):\n    return _mv(indices, w, n), None\n"
    "def _mv_bwd(indices, n, res, ct):\n    return (ct[indices],)\n"
    "_mv_vjp = jax.custom_vjp(_mv, nondiff_argnums=(0, 2))\n_mv_vjp.defvjp(_mv_fwd, _mv_bwd)\n"
)


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def scatter(indices, w, n):\n    indices = jnp.asarray(indices)\n"
            "    def one(w_row):\n        return _mv_vjp(indices, w_row, n)\n    return jax.vmap(one)(w)\n",
            id="converted, then passed from a nested def",
        ),
        pytest.param(
            "def scatter(indices, w, n):\n    indices = jnp.asarray(indices)\n    return _mv_vjp(indices, w, n)\n",
            id="converted, passed in place",
        ),
        pytest.param(
            "def scatter(w, n):\n    indices = jnp.arange(3)\n"
            "    def one(w_row):\n        return _mv_vjp(indices, w_row, n)\n    return jax.vmap(one)(w)\n",
            id="a local of the def around it",
        ),
    ],
)
def test_an_array_a_def_around_the_call_makes_is_passed_at_a_call_site(caller: str) -> None:
    # probe22 G1's s01c (r01's public caller: `indices = jnp.asarray(indices)`, then a nested def).
    module, imports = parse(_SCATTER_SITE + caller)
    (site,) = find_sites(module, imports)
    indices, _ = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    assert (indices.kind, indices.strong) == (ArgKind.ARRAY, True), indices.evidence
    assert indices.evidence[0].text.startswith("an array is passed at a call site (`indices`), made by `jnp."), (
        indices.evidence
    )


@pytest.mark.parametrize(
    "caller",
    [
        pytest.param(
            "def scatter(indices, w, n):\n    indices = np.asarray(indices)\n    return _mv_vjp(indices, w, n)\n",
            id="host NumPy",
        ),
        pytest.param(
            "def scatter(indices, w, n):\n    indices = jnp.asarray(indices)\n    indices = tuple(indices)\n"
            "    return _mv_vjp(indices, w, n)\n",
            id="rebound twice",
        ),
        pytest.param(
            "def scatter(indices, w, n):\n    indices = jnp.asarray(indices)\n"
            "    def one(w_row, indices):\n        return _mv_vjp(indices, w_row, n)\n    return one(w, 0)\n",
            id="the nested def's own parameter",
        ),
    ],
)
def test_no_array_the_calling_defs_make_is_no_call_site_array(caller: str) -> None:
    module, imports = parse(_SCATTER_SITE + caller)
    (site,) = find_sites(module, imports)
    indices, _ = classify_site(site, module, Context.of(module, imports, index_of(module).line))
    assert not any(e.text.startswith("an array is passed") for e in indices.evidence), indices.evidence


_PARAMS_SITE = (
    "import dataclasses\nfrom dataclasses import dataclass\nfrom functools import partial\nfrom typing import Optional\n"
    "import jax\nimport jax.numpy as jnp\n{cls}"
    "@partial(jax.custom_vjp, nondiff_argnums=(2,))\n"
    "def product(x, y, params: {annotation}):\n    return jnp.outer(x, y)[:, : params.num_out] * params.scale\n"
    "def _fwd(x, y, params):\n    return product(x, y, params), (x, y)\n"
    "def _bwd(params, res, g):\n    x, y = res\n    return g @ y, g.T @ x\n"
    "product.defvjp(_fwd, _bwd)\n"
)


@pytest.mark.parametrize(
    ("cls", "annotation"),
    [
        pytest.param(
            "@dataclass\nclass Params:\n    num_out: int\n    scale: float = 1.0\n", "Params", id="a dataclass"
        ),
        pytest.param(
            "@dataclasses.dataclass(frozen=True)\nclass Params:\n    num_out: int\n", "Optional[Params]", id="frozen"
        ),
        pytest.param(
            "class Params:\n    def __init__(self, num_out):\n        self.num_out = num_out\n",
            "'Params'",
            id="a plain class",
        ),
    ],
)
def test_a_parameter_annotated_with_a_plain_class_is_static(cls: str, annotation: str) -> None:
    # probe22 G6 (r19, e3j tensor product: `params: TensorProductParams`, a plain `@dataclass`).
    info = classified(_PARAMS_SITE.format(cls=cls, annotation=annotation))
    assert info.kind is ArgKind.STATIC, info.evidence
    plain = "is a class the module neither registers as a pytree nor derives from one"
    assert any(plain in e.text for e in info.evidence), info.evidence


@pytest.mark.parametrize(
    "cls",
    [
        pytest.param("@dataclass\nclass Params:\n    num_out: int\n    scale: jax.Array\n", id="an array field"),
        pytest.param(
            "@jax.tree_util.register_dataclass\n@dataclass\nclass Params:\n    num_out: int\n    scale: float\n",
            id="registered",
        ),
        pytest.param(
            "@dataclass\nclass Params:\n    num_out: int\n"
            "jax.tree_util.register_dataclass(Params, data_fields=['num_out'], meta_fields=[])\n",
            id="registered by a call",
        ),
        pytest.param(  # an imported base may be a pytree (a module base that is plain is no doubt: probe23 G1)
            "from base import Base\n@dataclass\nclass Params(Base):\n    num_out: int\n", id="a base"
        ),
    ],
)
def test_a_class_that_may_be_a_pytree_or_hold_arrays_is_no_plain_class(cls: str) -> None:
    info = classified(_PARAMS_SITE.format(cls=cls, annotation="Params"))
    assert not any("neither registers" in e.text for e in info.evidence), info.evidence


def test_a_plain_dataclass_is_no_jit_argument_but_works_in_nondiff_argnums() -> None:
    @dataclasses.dataclass(frozen=True)
    class Params:
        scale: float

    def scaled(x: jax.Array, params: Params) -> jax.Array:
        return x * params.scale

    with pytest.raises(TypeError):
        jax.jit(scaled)(jnp.ones(2), Params(2.0))
    rule = jax.custom_vjp(scaled, nondiff_argnums=(1,))
    rule.defvjp(lambda x, p: (scaled(x, p), None), lambda p, _, g: (g * p.scale,))
    assert jax.jit(jax.grad(lambda x: rule(x, Params(2.0)).sum()))(jnp.ones(2)).tolist() == [2.0, 2.0]


@pytest.mark.parametrize(
    ("use", "static"),
    [
        pytest.param(
            "jax.ffi.ffi_call('recv', y)(x, comm_handle=a.py2f())", True, id="a method's result as an attribute"
        ),
        pytest.param("jax.ffi.ffi_call('recv', y)(x, **a.attributes())", True, id="unpacked"),
        pytest.param("jax.ffi.ffi_call('recv', y)(x, a.handle())", False, id="an operand"),
    ],
)
def test_a_method_result_of_the_argument_given_as_an_ffi_attribute_is_static(use: str, static: bool) -> None:
    # probe22 G5 (r14, jpi MPI recv: `comm_handle=comm.py2f()`): FFI attributes must be hashable.
    primal = f"y = jax.ShapeDtypeStruct(x.shape, x.dtype)\n    return {use}"
    info = _unscreened(site_module(primal))
    assert (info.kind is ArgKind.STATIC) == static, info.evidence
    if static:
        assert info.evidence[0].text.startswith("has its method `."), info.evidence


_ALIAS_SITE = (
    "from functools import partial\nimport jax\nimport jax.numpy as jnp\n"
    "def _run_inner(params, scale, mode, is_vjp=False):\n"
    "    return {body}\n"
    "_run_vjp = {alias}\n"
    "def _fwd(params, scale, mode):\n    return _run_vjp(params, scale, mode), params\n"
    "def _bwd(scale, mode, params, dy):\n    return (dy,)\n"
    "run = jax.custom_vjp(_run_vjp, nondiff_argnums=(1, 2))\nrun.defvjp(_fwd, _bwd)\n"
)


def _two(code: str) -> list[ArgInfo]:
    module, imports = parse(code)
    (site,) = find_sites(module, imports)
    return classify_site(site, module, Context.of(module, imports, index_of(module).line))


def test_a_keyword_partial_of_a_module_def_is_read_as_that_def() -> None:
    # probe22 G2 (r05, PennyLane: `_execute_wrapper_vjp = partial(_execute_wrapper_inner, is_vjp=True)`).
    body = "params * scale if mode == 'fast' else params"
    scale, mode = _two(_ALIAS_SITE.format(body=body, alias="partial(_run_inner, is_vjp=True)"))
    assert (scale.kind, scale.strong) == (ArgKind.ARRAY, True), scale.evidence
    assert scale.evidence[0].text == "used in arithmetic in the primal `_run_inner`"
    assert mode.kind is ArgKind.STATIC, mode.evidence


@pytest.mark.parametrize(
    "alias",
    [
        pytest.param("partial(_run_inner, 1.0)", id="a positional argument bound"),
        pytest.param("partial(_run_inner, scale=2.0)", id="a positional parameter bound by keyword"),
        pytest.param("partial(jnp.tanh)", id="no module def"),
    ],
)
def test_no_keyword_partial_of_a_module_def_is_unseen(alias: str) -> None:
    scale, _ = _two(_ALIAS_SITE.format(body="params * scale", alias=alias))
    assert any("is not a function defined in this module" in e.text for e in scale.evidence), scale.evidence


def _local_site(tail: str) -> str:
    return (
        "from functools import partial\nimport jax\nimport jax.numpy as jnp\nfrom elsewhere import node_to_child\n"
        "def evaluate(pos, mass):\n"
        "    def eval_fwd(pos, mp, pout=1):\n        return node_to_child(pos, mp, pout=pout), (pos, mp)\n"
        "    def eval_bwd(pout, res, g):\n        pos, mp = res\n        return g * mp, g * pos\n"
        "    @partial(jax.custom_vjp, nondiff_argnames=['pout'])\n"
        "    def eval(pos, mp, pout=1):\n        return eval_fwd(pos, mp, pout=pout)[0]\n"
        "    eval.defvjp(eval_fwd, eval_bwd)\n"
        f"{tail}"
    )


def test_an_argument_every_call_of_a_local_site_leaves_at_its_default_is_static() -> None:
    # probe22 G4 (r12, jztree FMM): `eval(partz.pos, ...)`, the local site's only call.
    info = classified(_local_site("    return eval(pos, mass) + eval(pos, mp=mass)\n"))
    assert info.kind is ArgKind.STATIC, info.evidence
    assert info.evidence[0].text == (
        "every call of the local site `eval` (whose name never leaves `evaluate`) leaves it at its default `1`"
    )


@pytest.mark.parametrize(
    "tail",
    [
        pytest.param("    return eval(pos, mass, 2)\n", id="passed by place"),
        pytest.param("    return eval(pos, mass, pout=n)\n", id="passed by keyword"),
        pytest.param("    return eval(pos, mass, *rest)\n", id="unpacked"),
        pytest.param("    return eval\n", id="returned"),
        pytest.param("    run(eval)\n    return eval(pos, mass)\n", id="passed on"),
        pytest.param("    return jax.jit(lambda p: eval(p, mass))(pos)\n", id="called in a lambda: still local"),
    ],
)
def test_a_local_site_whose_argument_may_be_given_says_nothing_of_its_default(tail: str) -> None:
    info = _unscreened(_local_site(tail))
    shown = any(e.text.startswith("every call of the local site") for e in info.evidence)
    assert shown == tail.endswith("jax.jit(lambda p: eval(p, mass))(pos)\n"), info.evidence
