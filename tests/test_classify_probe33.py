"""classify on what probe33 found in real code (H1, AMD AITER's RMSNorm): an argument passed at a
static place of a `jax.jit` bound to a local, in place (`fn = jax.jit(_invoke, static_argnames=...)`)
or by a module factory returning one (`fn = _rmsnorm_fwd_call(...)`), is static; a factory not
analysed leaves no safe fix."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest
from helpers import executed
from test_classify import classified

from vjp_migrate import screen
from vjp_migrate.api import check_source, fix_source
from vjp_migrate.codes import DEFAULT_SELECT
from vjp_migrate.model import ArgKind, Settings

# probe33's c2 and c3: `norm_bwd`'s arithmetic on `epsilon` was the only evidence read, and the
# "safe" fix made `jax.jit(norm)(x)` raise "Non-hashable static arguments are not supported".
NORM = """from functools import partial
import jax
import jax.numpy as jnp
{imports}
{helpers}

@partial(jax.custom_vjp, nondiff_argnums=(1,))
def norm(x, epsilon=1e-6):
{body}


def norm_fwd(x, epsilon):
    return norm(x, epsilon), x


def norm_bwd(epsilon, x, g):
    return (g / (jnp.sum(x * x) + epsilon),)


norm.defvjp(norm_fwd, norm_bwd)
"""
INVOKE = "def _invoke(x, *, epsilon):\n    return x / (jnp.sum(x * x) + float(epsilon))\n"
POSITIONAL = "def _invoke(x, epsilon):\n    return x / (jnp.sum(x * x) + float(epsilon))\n"
FACTORY = (
    "def _make(shape):\n"
    "    def _invoke(x, *, epsilon):\n"
    "        return x / (jnp.sum(x * x) + float(epsilon))\n"
    "    return jax.jit(_invoke, static_argnames=('epsilon',))\n"
)
CALL = "    return fn(x, epsilon=epsilon)"


def norm(body: str, helpers: str = INVOKE, imports: str = "") -> str:
    return NORM.format(body=body, helpers=helpers, imports=imports)


LOCAL_JIT = norm(f"    fn = jax.jit(_invoke, static_argnames=('epsilon',))\n{CALL}")
MADE_BY_FACTORY = norm(f"    fn = _make(x.shape)\n{CALL}", FACTORY)


@pytest.mark.parametrize(
    "code",
    [
        pytest.param(LOCAL_JIT, id="jit bound in the primal, static_argnames"),
        pytest.param(
            norm("    fn = jax.jit(_invoke, static_argnums=1)\n    return fn(x, epsilon)", POSITIONAL),
            id="jit bound in the primal, static_argnums",
        ),
        pytest.param(
            norm(
                "    fn: Callable = jax.jit(_invoke, static_argnames='epsilon')\n" + CALL,
                imports="from typing import Callable",
            ),
            id="an annotated assignment",
        ),
        pytest.param(
            norm(
                "    def _inner(x, *, epsilon):\n"
                "        return x * float(epsilon)\n"
                "    fn = jax.jit(_inner, static_argnames=('epsilon',))\n" + CALL,
                helpers="",
            ),
            id="jit of a def nested in the primal",
        ),
        pytest.param(
            norm(
                "    fn = jax.jit(_invoke, static_argnames=('epsilon',))\n" + CALL,
                "def _invoke(x, **options):\n    return x * float(options['epsilon'])\n",
            ),
            id="a jit of a def taking **options, static by name",
        ),
        pytest.param(MADE_BY_FACTORY, id="a factory returning the jit"),
        pytest.param(
            norm("    " + FACTORY.replace("\n", "\n    ").rstrip() + f"\n    fn = _make(x.shape)\n{CALL}", helpers=""),
            id="a factory defined in the primal",
        ),
        pytest.param(
            norm(
                f"    fn = _make(x.shape)\n{CALL}",
                INVOKE
                + "\n\ndef _make(shape):\n    made = jax.jit(_invoke, static_argnames=('epsilon',))\n    return made\n",
            ),
            id="a factory returning a local bound to the jit",
        ),
        pytest.param(
            norm(
                f"    fn = _make(x.shape)\n{CALL}",
                "from ops import kernel\n\n" + FACTORY.replace("_invoke, ", "kernel, "),
            ),
            id="a factory's jit of a function not analysed, by name",
        ),
    ],
)
def test_an_argument_at_a_static_place_of_a_jit_bound_to_a_local_is_static(code: str) -> None:
    info = classified(code)
    reasons = [e.text for e in info.evidence]
    assert info.kind is ArgKind.STATIC, reasons
    assert any("to `fn`, whose jax.jit marks it static" in text for text in reasons), reasons


# The shape of AITER's code: an FFI kernel built per shape, whose settings are FFI attributes.
FFI_FACTORY = """from functools import partial
import jax
import jax.numpy as jnp
import numpy as np


def _kernel_call(out_shape, dtype):
    call = jax.ffi.ffi_call("RmsKernel", jax.ShapeDtypeStruct(out_shape, dtype))

    def _run(x, scale, *, eps, fused):
        return call(x, scale, eps=np.float32(eps), fused=np.int32(fused))

    return jax.jit(_run, static_argnames=("eps", "fused"))


@partial(jax.custom_vjp, nondiff_argnums=(2,))
def rms(x, scale, eps=1e-6):
    fn = _kernel_call(x.shape, x.dtype)
    return fn(x, scale, eps=eps, fused=0)


def rms_fwd(x, scale, eps):
    fn = _kernel_call(x.shape, x.dtype)
    return fn(x, scale, eps=eps, fused=0), (x, scale)


def rms_bwd(eps, res, g):
    x, scale = res
    inv = jax.lax.rsqrt(jnp.mean(x**2, axis=-1, keepdims=True) + eps)
    return g * scale * inv, jnp.sum(g * x * inv, axis=0)


rms.defvjp(rms_fwd, rms_bwd)
"""


def test_an_ffi_kernel_factorys_static_setting_is_left_alone() -> None:
    # probe33's c4 (AMD AITER's RMSNorm with its `epsilon: float` annotation dropped, which alone
    # kept it from a safe fix): `fn = _kernel_call(...)` returns a jit marking eps static.
    info = classified(FFI_FACTORY)
    reasons = [e.text for e in info.evidence]
    assert info.kind is ArgKind.STATIC, reasons
    assert "passed as `eps` to `fn`, whose jax.jit marks it static in the primal `rms`" in reasons
    assert check_source(FFI_FACTORY, path="rms.py", settings=Settings(frozenset({"VJP001", "VJP002"}))) == []
    assert not fix_source(FFI_FACTORY, path="rms.py").changed


@pytest.mark.parametrize("code", [pytest.param(LOCAL_JIT, id="local jit"), pytest.param(MADE_BY_FACTORY, id="factory")])
def test_the_jit_static_argument_is_left_where_jit_needs_it(code: str) -> None:
    # The original runs under a jit of the caller with epsilon at its default; moved out of
    # nondiff_argnums, epsilon would be a Tracer in `fn`'s static slot.
    assert not fix_source(code).changed
    before = executed(code, "before.py")["norm"]
    x = jnp.array([1.0, 2.0])
    assert jax.jit(before)(x).shape == (2,)
    moved = code.replace("nondiff_argnums=(1,)", "nondiff_argnums=()").replace(
        "return norm(x, epsilon), x", "return norm(x, epsilon), (epsilon, x)"
    )
    moved = moved.replace("def norm_bwd(epsilon, x, g):", "def norm_bwd(res, g):\n    epsilon, x = res")
    moved = moved.replace("+ epsilon),)", "+ epsilon), None)")
    after = executed(moved, "after.py")["norm"]
    with pytest.raises(ValueError, match="Non-hashable static arguments"):
        jax.jit(after)(x)


@pytest.mark.parametrize(
    ("code", "shown"),
    [
        pytest.param(
            norm(f"    fn = make(x.shape)\n{CALL}", "", "from ops import make"),
            "passed to `fn`, which `make(...)` makes and is not analysed",
            id="a factory of another module",
        ),
        pytest.param(
            norm(
                f"    fn = _make(x.shape)\n{CALL}",
                "from ops import wrap\n\ndef _make(shape):\n    return wrap(_invoke)\n" + INVOKE,
            ),
            "passed to `fn`, which `_make(...)` makes and is not analysed",
            id="a factory returning what is not analysed",
        ),
        pytest.param(
            norm(f"    fn = jax.jit(_invoke, static_argnames=STATIC)\n{CALL}", "STATIC = ('epsilon',)\n" + INVOKE),
            "a jax.jit whose static arguments are not known here",
            id="static arguments not literals",
        ),
        pytest.param(
            norm(
                "    fn = jax.jit(kernel, static_argnames=('epsilon',))\n    return fn(x, epsilon)",
                "from ops import kernel",
            ),
            "a jax.jit whose static arguments are not known here",
            id="static by name, passed by position to a function not analysed",
        ),
    ],
)
def test_an_argument_handed_to_what_is_not_analysed_is_no_safe_fix(code: str, shown: str) -> None:
    # Before, "passed to `fn`, which is not analysed" weighed nothing against bwd's arithmetic:
    # VJP001 with a safe fix, which breaks when the factory's function is a jit marking it static.
    info = classified(code)
    reasons = [e.text for e in info.evidence]
    assert info.kind is ArgKind.UNKNOWN, reasons
    assert any(shown in text for text in reasons), reasons
    assert not fix_source(code).changed


@pytest.mark.parametrize(
    ("binding", "shown"),
    [
        pytest.param("fn = jax.jit(_invoke)", "used in arithmetic in `_invoke`, which `fn` runs", id="jit, no static"),
        pytest.param("fn = _make(x.shape)", "used in arithmetic in `_inner`, which `fn` runs", id="factory of a def"),
        pytest.param(
            "fn = jax.vmap(_invoke)", "used in arithmetic in `_invoke`, which `fn` runs", id="a JAX transform of a def"
        ),
    ],
)
def test_a_def_a_local_runs_traces_the_argument(binding: str, shown: str) -> None:
    factory = "\n\ndef _make(shape):\n    def _inner(x, epsilon):\n        return x * epsilon\n    return _inner\n"
    code = norm(
        f"    {binding}\n    return fn(x, epsilon)", "def _invoke(x, epsilon):\n    return x * epsilon\n" + factory
    )
    info = classified(code)
    reasons = [e.text for e in info.evidence]
    assert info.kind is ArgKind.ARRAY and info.strong, reasons
    assert any(shown in text for text in reasons), reasons
    assert not any("makes and is not analysed" in text for text in reasons), reasons


def test_the_screen_keeps_arithmetic_in_a_def_a_local_runs() -> None:
    # bwd never reads epsilon: the arithmetic in the def `fn` runs is the only array evidence.
    code = norm(
        "    fn = _make()\n    return fn(x, epsilon)",
        "def _make():\n    def _inner(x, epsilon):\n        return x * epsilon\n    return jax.jit(_inner)\n",
    ).replace("return (g / (jnp.sum(x * x) + epsilon),)", "return (g,)")
    assert [d.code for d in check_source(code, path="norm.py")] == ["VJP001"]
    assert screen.may_report(code, Settings(DEFAULT_SELECT))
