import jax
import jax.numpy as jnp
import numpy as np

from mathops._util import square
from mathops.clipping import apply_scaled, clip_gradient


def test_clip_gradient_grad():
    g = jax.grad(lambda x: clip_gradient(-0.5, 0.5, x) * 3.0)(2.0)
    assert g == 0.5


def test_clip_gradient_under_jit_of_x():
    x = jnp.arange(3.0)
    y = jax.jit(lambda x: clip_gradient(np.float32(-1.0), np.float32(1.0), x))(x)
    np.testing.assert_allclose(y, x)


def test_apply_scaled():
    x = np.array([1.0, -2.0], np.float32)
    grads = jax.grad(lambda x: apply_scaled(square, 2.0, x).sum())(x)
    np.testing.assert_allclose(grads, 4.0 * x)
