import jax
import numpy as np

EXAMPLES = {
    "dropout": [(np.float32(0.5), jax.random.key(0), np.float32([1.0, 2.0, 3.0, 4.0]))],
    "cscale": [(np.complex64(1.0 + 2.0j), np.complex64([1.0 + 1.0j, 2.0, 3.0j]))],
    "shift": [(np.float32(0.5), np.ones((200, 200), np.float32)), (np.float32(0.5), np.float32([1.0, 2.0]))],
}
