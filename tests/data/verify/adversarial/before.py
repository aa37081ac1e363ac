"""BEFORE: custom_vjp functions with array data in nondiff_argnums, one per adversarial case."""

from functools import partial

import jax
import jax.numpy as jnp

SCALE = 2.0


# Two differentiable arguments between two array ones: cotangents must not trade places.
@partial(jax.custom_vjp, nondiff_argnums=(0, 2))
def interleaved(a, x, b, y):
    return x * a + y * b


def interleaved_fwd(a, x, b, y):
    return x * a + y * b, None


def interleaved_bwd(a, b, _, g):
    return (g * a, g * b)


interleaved.defvjp(interleaved_fwd, interleaved_bwd)


# Bounds on both sides of x: their None cotangents and x's must sit in their own slots.
@partial(jax.custom_vjp, nondiff_argnums=(0, 2))
def clip(lo, x, hi):
    return jnp.clip(x, lo, hi)


def clip_fwd(lo, x, hi):
    return jnp.clip(x, lo, hi), x


def clip_bwd(lo, hi, x, g):
    return (jnp.where((x >= lo) & (x <= hi), g, 0.0),)


clip.defvjp(clip_fwd, clip_bwd)


# The residual must be the argument as given, not a value derived from it.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def signed_scale(lo, x):
    return x * lo


def signed_scale_fwd(lo, x):
    return x * lo, None


def signed_scale_bwd(lo, _, g):
    return (g * lo,)


signed_scale.defvjp(signed_scale_fwd, signed_scale_bwd)


# A dict of arrays as nondiff data.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def affine(params, x):
    return x * params["w"] + params["b"]


def affine_fwd(params, x):
    return affine(params, x), None


def affine_bwd(params, _, g):
    return (g * params["w"],)


affine.defvjp(affine_fwd, affine_bwd)


# A tuple of arrays as nondiff data.
@partial(jax.custom_vjp, nondiff_argnums=(1,))
def weighted(x, pair):
    return x * pair[0] - x * x * pair[1]


def weighted_fwd(x, pair):
    return weighted(x, pair), x


def weighted_bwd(pair, x, g):
    return (g * (pair[0] - 2.0 * x * pair[1]),)


weighted.defvjp(weighted_fwd, weighted_bwd)


# Integer indices as nondiff data (repeated indices add up).
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def gather(idx, x):
    return x[idx]


def gather_fwd(idx, x):
    return x[idx], jnp.zeros_like(x)


def gather_bwd(idx, zeros, g):
    return (zeros.at[idx].add(g),)


gather.defvjp(gather_fwd, gather_bwd)


# A module global read by the rule (the migration does not touch it).
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def global_scaled(lo, x):
    return x * lo * SCALE


def global_scaled_fwd(lo, x):
    return global_scaled(lo, x), None


def global_scaled_bwd(lo, _, g):
    return (g * lo * SCALE,)


global_scaled.defvjp(global_scaled_fwd, global_scaled_bwd)


# An unchanged function whose global constant AFTER changes.
@jax.custom_vjp
def untouched(x):
    return x * SCALE


def untouched_fwd(x):
    return x * SCALE, None


def untouched_bwd(_, g):
    return (g * SCALE,)


untouched.defvjp(untouched_fwd, untouched_bwd)


# A pytree output: a tuple holding a dict.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def two_outputs(lo, x):
    return x * lo, {"sq": x * x}


def two_outputs_fwd(lo, x):
    return two_outputs(lo, x), x


def two_outputs_bwd(lo, x, g):
    g_main, g_aux = g
    return (g_main * lo + 2.0 * x * g_aux["sq"],)


two_outputs.defvjp(two_outputs_fwd, two_outputs_bwd)


# A mask output (bool) next to the value: compared exactly.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def above(lo, x):
    return x * lo, x > lo


def above_fwd(lo, x):
    return above(lo, x), None


def above_bwd(lo, _, g):
    return (g[0] * lo,)


above.defvjp(above_fwd, above_bwd)


class Ops:
    """custom_vjp functions on a class."""

    @staticmethod
    @partial(jax.custom_vjp, nondiff_argnums=(0,))
    def shift(lo, x):
        return jnp.sin(x) + lo

    @staticmethod
    def _shift_fwd(lo, x):
        return jnp.sin(x) + lo, jnp.cos(x)

    @staticmethod
    def _shift_bwd(lo, cos_x, g):
        return (g * cos_x,)


Ops.shift.defvjp(Ops._shift_fwd, Ops._shift_bwd)


# A rule right when run eagerly that a careless AFTER gets wrong only under tracing.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def softplus_scaled(lo, x):
    return jnp.logaddexp(0.0, x) * lo


def softplus_scaled_fwd(lo, x):
    return softplus_scaled(lo, x), x


def softplus_scaled_bwd(lo, x, g):
    return (g * jax.nn.sigmoid(x) * lo,)


softplus_scaled.defvjp(softplus_scaled_fwd, softplus_scaled_bwd)


# Renamed in the wrong AFTER.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def offset(lo, x):
    return x + lo


def offset_fwd(lo, x):
    return x + lo, None


def offset_bwd(lo, _, g):
    return (g,)


offset.defvjp(offset_fwd, offset_bwd)


# Synthesized inputs (no example): bounds on both sides of x, and a gate no small input opens.
@partial(jax.custom_vjp, nondiff_argnums=(0, 2))
def clip_synth(lo, x, hi):
    return jnp.clip(x, lo, hi)


def clip_synth_fwd(lo, x, hi):
    return jnp.clip(x, lo, hi), x


def clip_synth_bwd(lo, hi, x, g):
    return (jnp.where((x >= lo) & (x <= hi), g, 0.0),)


clip_synth.defvjp(clip_synth_fwd, clip_synth_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def gate(lo, x):
    return jnp.where(x > 10.0, x * lo, 0.0)


def gate_fwd(lo, x):
    return gate(lo, x), x


def gate_bwd(lo, x, g):
    return (jnp.where(x > 10.0, g * lo, 0.0),)


gate.defvjp(gate_fwd, gate_bwd)


# float64 inputs (the examples file turns jax_enable_x64 on): a rule right for float32 only.
@partial(jax.custom_vjp, nondiff_argnums=(0,))
def expscale(lo, x):
    return jnp.exp(x) * lo


def expscale_fwd(lo, x):
    return expscale(lo, x), x


def expscale_bwd(lo, x, g):
    return (g * jnp.exp(x) * lo,)


expscale.defvjp(expscale_fwd, expscale_bwd)
