"""Old-style custom_vjp functions (array arguments in nondiff_argnums)."""

from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_swapped(lo, hi, x):
    return x


def clip_swapped_fwd(lo, hi, x):
    return x, None


def clip_swapped_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_swapped.defvjp(clip_swapped_fwd, clip_swapped_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_none_misplaced(lo, hi, x):
    return x


def clip_none_misplaced_fwd(lo, hi, x):
    return x, None


def clip_none_misplaced_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_none_misplaced.defvjp(clip_none_misplaced_fwd, clip_none_misplaced_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scaled_mul_dropped(scale, x, y):
    return scale * x * y


def scaled_mul_dropped_fwd(scale, x, y):
    return scale * x * y, (x, y)


def scaled_mul_dropped_bwd(scale, res, g):
    x, y = res
    return (g * y * scale, g * x * scale)


scaled_mul_dropped.defvjp(scaled_mul_dropped_fwd, scaled_mul_dropped_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def soft_clip_sign(x, limit):
    return limit * jnp.tanh(x / limit)


def soft_clip_sign_fwd(x, limit):
    t = jnp.tanh(x / limit)
    return limit * t, t


def soft_clip_sign_bwd(limit, t, g):
    return (g * (1 - t**2),)


soft_clip_sign.defvjp(soft_clip_sign_fwd, soft_clip_sign_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_correct(lo, hi, x):
    return x


def clip_correct_fwd(lo, hi, x):
    return x, None


def clip_correct_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)


clip_correct.defvjp(clip_correct_fwd, clip_correct_bwd)
