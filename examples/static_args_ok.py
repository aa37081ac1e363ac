"""A legitimate use of nondiff_argnums (a callable): vjp-migrate leaves it alone."""

from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def app(f, x):
    return f(x)


def app_fwd(f, x):
    return app(f, x), x


def app_bwd(f, x, g):
    return (jax.vjp(f, x)[1](g)[0],)


app.defvjp(app_fwd, app_bwd)
