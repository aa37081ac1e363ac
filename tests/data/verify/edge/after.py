"""Migrations that are easy to get wrong in the verifier itself (tests/test_verify_edges.py)."""

import itertools
import typing

import jax
import jax.numpy as jnp

_CALLS = itertools.count()


@jax.custom_vjp
def scale_bf16(s, x):
    return x * s


def scale_bf16_fwd(s, x):
    return x * s, s


def scale_bf16_bwd(s, g):
    return (None, g * s)


scale_bf16.defvjp(scale_bf16_fwd, scale_bf16_bwd)


@jax.custom_vjp
def scale_bf16_wrong(s, x):
    return x * s


def scale_bf16_wrong_fwd(s, x):
    return x * s, s


def scale_bf16_wrong_bwd(s, g):
    return (None, g * s * 1.25)  # wrong: a quarter too much


scale_bf16_wrong.defvjp(scale_bf16_wrong_fwd, scale_bf16_wrong_bwd)


@jax.custom_vjp
def soft_clip(x, limit=2.0):
    return jnp.tanh(x / limit) * limit


def soft_clip_fwd(x, limit=2.0):
    t = jnp.tanh(x / limit)
    return t * limit, (limit, t)


def soft_clip_bwd(res, g):
    limit, t = res
    return (g * (1 - t**2), None)


soft_clip.defvjp(soft_clip_fwd, soft_clip_bwd)


@jax.custom_vjp
def noisy(s, x):
    return x * s + next(_CALLS) * 1e-3  # each call differs: never deterministic, and not by chance


def noisy_fwd(s, x):
    return noisy(s, x), s


def noisy_bwd(s, g):
    return (None, g * s)


noisy.defvjp(noisy_fwd, noisy_bwd)


class Scaled(typing.NamedTuple):  # each version defines its own: another class, of the same name
    value: jax.Array
    scale: jax.Array


@jax.custom_vjp
def scaled_out(x, w):
    return Scaled(x * w, w)


def scaled_out_fwd(x, w):
    return Scaled(x * w, w), w


def scaled_out_bwd(w, g):
    return (g.value * w, None)


scaled_out.defvjp(scaled_out_fwd, scaled_out_bwd)
