"""Inputs reaching every branch of the adversarial cases: both signs, equal bounds, repeated
indices; float64 ones for expscale. clip_synth and gate have none: they get synthesized inputs."""

import jax
import numpy as np

jax.config.update("jax_enable_x64", True)

X = np.array([-2.0, -0.5, 0.0, 0.75, 3.0], np.float32)
LO = np.array([-1.0, 0.5, -0.25, 0.75, 2.0], np.float32)
HI = np.array([1.0, 1.5, 0.25, 2.0, 2.5], np.float32)

EXAMPLES = {
    "interleaved": [(LO, X, HI, X[::-1].copy())],
    "clip": [(LO, X, HI)],
    "signed_scale": [(LO, X)],
    "affine": [({"w": LO, "b": HI}, X)],
    "weighted": [(X, (LO, HI))],
    "gather": [(np.array([0, 2, 2, 4], np.int32), X)],
    "global_scaled": [(LO, X)],
    "untouched": [(X,)],
    "two_outputs": [(LO, X)],
    "above": [(LO, X)],
    "Ops.shift": [(LO, X)],
    "softplus_scaled": [(LO, X)],
    "offset": [(LO, X)],
    "expscale": [(np.array([0.3, -1.7, 2.2]), np.array([0.123456789, -1.5, 2.75]))],
}
