"""Deliberately WRONG migrations of before.py (plus one correct one), for the verify tests."""

import jax
import jax.numpy as jnp


@jax.custom_vjp
def clip_swapped(lo, hi, x):
    return x


def clip_swapped_fwd(lo, hi, x):
    return x, (hi, lo)  # WRONG: residuals saved in the wrong order


def clip_swapped_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_swapped.defvjp(clip_swapped_fwd, clip_swapped_bwd)


@jax.custom_vjp
def clip_none_misplaced(lo, hi, x):
    return x


def clip_none_misplaced_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_none_misplaced_bwd(res, g):
    lo, hi = res
    return (None, jnp.clip(g, lo, hi), None)  # WRONG: None at x's position


clip_none_misplaced.defvjp(clip_none_misplaced_fwd, clip_none_misplaced_bwd)


@jax.custom_vjp
def scaled_mul_dropped(scale, x, y):
    return scale * x * y


def scaled_mul_dropped_fwd(scale, x, y):
    return scale * x * y, (scale, (x, y))


def scaled_mul_dropped_bwd(res, g):
    scale, (x, y) = res
    return (None, g * y * scale, None)  # WRONG: y's cotangent dropped


scaled_mul_dropped.defvjp(scaled_mul_dropped_fwd, scaled_mul_dropped_bwd)


@jax.custom_vjp
def soft_clip_sign(x, limit):
    return limit * jnp.tanh(x / limit)


def soft_clip_sign_fwd(x, limit):
    t = jnp.tanh(x / limit)
    return limit * t, (limit, t)


def soft_clip_sign_bwd(res, g):
    limit, t = res
    return (-g * (1 - t**2), None)  # WRONG: sign flipped


soft_clip_sign.defvjp(soft_clip_sign_fwd, soft_clip_sign_bwd)


@jax.custom_vjp
def clip_correct(lo, hi, x):
    return x


def clip_correct_fwd(lo, hi, x):
    return x, (lo, hi)


def clip_correct_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))


clip_correct.defvjp(clip_correct_fwd, clip_correct_bwd)
