import jax.numpy as jnp
import numpy as np

EXAMPLES = {
    "scale_bf16": [(jnp.asarray(3.0, jnp.bfloat16), jnp.asarray([1.0, 2.5, -0.7], jnp.bfloat16))],
    "scale_bf16_wrong": [(jnp.asarray(3.0, jnp.bfloat16), jnp.asarray([1.0, 2.5, -0.7], jnp.bfloat16))],
    "soft_clip": [(np.float32([0.5, -3.0]),)],  # `limit` left to its default
    "scaled_out": [(np.float32([1.0, -2.0]), np.float32(3.0))],
    "noisy": [(np.float32(2.0), np.float32([1.0, 2.0]))],
}
