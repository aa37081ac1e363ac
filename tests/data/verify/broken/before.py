from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(s, x):
    return s * x


scale.defvjp(lambda s, x: (s * x, None), lambda s, _, g: (s * g,))
