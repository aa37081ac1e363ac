"""Migrations that are easy to get wrong in the verifier itself (tests/test_verify_edges.py)."""

import itertools
import typing
from functools import partial

import jax
import jax.numpy as jnp

_CALLS = itertools.count()


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale_bf16(s, x):
    return x * s


def scale_bf16_fwd(s, x):
    return x * s, None


def scale_bf16_bwd(s, _, g):
    return (g * s,)


scale_bf16.defvjp(scale_bf16_fwd, scale_bf16_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale_bf16_wrong(s, x):
    return x * s


def scale_bf16_wrong_fwd(s, x):
    return x * s, None


def scale_bf16_wrong_bwd(s, _, g):
    return (g * s,)


scale_bf16_wrong.defvjp(scale_bf16_wrong_fwd, scale_bf16_wrong_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def soft_clip(x, limit=2.0):
    return jnp.tanh(x / limit) * limit


def soft_clip_fwd(x, limit=2.0):
    t = jnp.tanh(x / limit)
    return t * limit, t


def soft_clip_bwd(limit, t, g):
    return (g * (1 - t**2),)


soft_clip.defvjp(soft_clip_fwd, soft_clip_bwd)


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def noisy(s, x):
    return x * s + next(_CALLS) * 1e-3  # each call differs: never deterministic, and not by chance


def noisy_fwd(s, x):
    return noisy(s, x), None


def noisy_bwd(s, _, g):
    return (g * s,)


noisy.defvjp(noisy_fwd, noisy_bwd)


class Scaled(typing.NamedTuple):  # each version defines its own: another class, of the same name
    value: jax.Array
    scale: jax.Array


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def scaled_out(x, w):
    return Scaled(x * w, w)


def scaled_out_fwd(x, w):
    return Scaled(x * w, w), None


def scaled_out_bwd(w, _, g):
    return (g.value * w,)


scaled_out.defvjp(scaled_out_fwd, scaled_out_bwd)
