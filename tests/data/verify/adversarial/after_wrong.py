"""AFTER: every function subtly wrong (see the comment above each change)."""

import jax
import jax.numpy as jnp

SCALE = 2.5  # changed


@jax.custom_vjp
def interleaved(a, x, b, y):
    return x * a + y * b


def interleaved_fwd(a, x, b, y):
    return x * a + y * b, (a, b)


def interleaved_bwd(res, g):
    a, b = res
    return (None, g * b, None, g * a)  # x and y traded


interleaved.defvjp(interleaved_fwd, interleaved_bwd)


@jax.custom_vjp
def clip(lo, x, hi):
    return jnp.clip(x, lo, hi)


def clip_fwd(lo, x, hi):
    return jnp.clip(x, lo, hi), (lo, hi, x)


def clip_bwd(res, g):
    lo, hi, x = res
    return (jnp.where((x >= lo) & (x <= hi), g, 0.0), None, None)  # one slot early


clip.defvjp(clip_fwd, clip_bwd)


@jax.custom_vjp
def signed_scale(lo, x):
    return x * lo


def signed_scale_fwd(lo, x):
    return x * lo, jnp.abs(lo)  # saved modified


def signed_scale_bwd(lo, g):
    return (None, g * lo)


signed_scale.defvjp(signed_scale_fwd, signed_scale_bwd)


@jax.custom_vjp
def affine(params, x):
    return x * params["w"] + params["b"]


def affine_fwd(params, x):
    return affine(params, x), params


def affine_bwd(params, g):
    return (None, g * params["b"])  # wrong key


affine.defvjp(affine_fwd, affine_bwd)


@jax.custom_vjp
def weighted(x, pair):
    return x * pair[0] - x * x * pair[1]


def weighted_fwd(x, pair):
    return weighted(x, pair), (pair, x)


def weighted_bwd(res, g):
    pair, x = res
    return (g * (pair[1] - 2.0 * x * pair[0]), None)  # items traded


weighted.defvjp(weighted_fwd, weighted_bwd)


@jax.custom_vjp
def gather(idx, x):
    return x[idx]


def gather_fwd(idx, x):
    return x[idx], (idx, jnp.zeros_like(x))


def gather_bwd(res, g):
    idx, zeros = res
    return (None, zeros.at[idx].set(g))  # repeated indices


gather.defvjp(gather_fwd, gather_bwd)


@jax.custom_vjp
def global_scaled(lo, x):
    return x * lo * SCALE


def global_scaled_fwd(lo, x):
    return global_scaled(lo, x), lo


def global_scaled_bwd(lo, g):
    return (None, g * lo * SCALE)


global_scaled.defvjp(global_scaled_fwd, global_scaled_bwd)


@jax.custom_vjp
def untouched(x):
    return x * SCALE


def untouched_fwd(x):
    return x * SCALE, None


def untouched_bwd(_, g):
    return (g * SCALE,)


untouched.defvjp(untouched_fwd, untouched_bwd)


@jax.custom_vjp
def two_outputs(lo, x):
    return x * lo, {"sq": x * x}


def two_outputs_fwd(lo, x):
    return two_outputs(lo, x), (lo, x)


def two_outputs_bwd(res, g):
    lo, x = res
    g_main, g_aux = g
    return (None, g_main * lo)  # aux cotangent dropped


two_outputs.defvjp(two_outputs_fwd, two_outputs_bwd)


@jax.custom_vjp
def above(lo, x):
    return x * lo, x >= lo  # >= for >


def above_fwd(lo, x):
    return above(lo, x), lo


def above_bwd(lo, g):
    return (None, g[0] * lo)


above.defvjp(above_fwd, above_bwd)


class Ops:
    """custom_vjp functions on a class."""

    @staticmethod
    @jax.custom_vjp
    def shift(lo, x):
        return jnp.sin(x) + lo

    @staticmethod
    def _shift_fwd(lo, x):
        return jnp.sin(x) + lo, jnp.cos(x)

    @staticmethod
    def _shift_bwd(cos_x, g):
        return (None, -g * cos_x)  # sign


Ops.shift.defvjp(Ops._shift_fwd, Ops._shift_bwd)


@jax.custom_vjp
def softplus_scaled(lo, x):
    return jnp.logaddexp(0.0, x) * lo


def softplus_scaled_fwd(lo, x):
    return softplus_scaled(lo, x), (lo, x)


def softplus_scaled_bwd(res, g):
    lo, x = res
    scale = 1.0 if isinstance(x, jax.core.Tracer) else 1.001  # wrong eagerly only
    return (None, g * jax.nn.sigmoid(x) * lo * scale)


softplus_scaled.defvjp(softplus_scaled_fwd, softplus_scaled_bwd)


@jax.custom_vjp
def shifted(lo, x):
    return x + lo


def offset_fwd(lo, x):
    return x + lo, None


def offset_bwd(_, g):
    return (None, g)


shifted.defvjp(offset_fwd, offset_bwd)


# x's cotangent one slot early; gate wrong beyond 10 only, which no synthesized input reaches.
@jax.custom_vjp
def clip_synth(lo, x, hi):
    return jnp.clip(x, lo, hi)


def clip_synth_fwd(lo, x, hi):
    return jnp.clip(x, lo, hi), (lo, hi, x)


def clip_synth_bwd(res, g):
    lo, hi, x = res
    return (jnp.where((x >= lo) & (x <= hi), g, 0.0), None, None)


clip_synth.defvjp(clip_synth_fwd, clip_synth_bwd)


@jax.custom_vjp
def gate(lo, x):
    return jnp.where(x > 10.0, x * lo, 0.0)


def gate_fwd(lo, x):
    return gate(lo, x), (lo, x)


def gate_bwd(res, g):
    lo, x = res
    return (None, jnp.where(x > 10.0, 2.0 * g * lo, 0.0))


gate.defvjp(gate_fwd, gate_bwd)


# The cotangent cast down to float32.
@jax.custom_vjp
def expscale(lo, x):
    return jnp.exp(x) * lo


def expscale_fwd(lo, x):
    return expscale(lo, x), (lo, x)


def expscale_bwd(res, g):
    lo, x = res
    return (None, (g * jnp.exp(x) * lo).astype(jnp.float32))


expscale.defvjp(expscale_fwd, expscale_bwd)
