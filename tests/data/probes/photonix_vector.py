from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from photonix.core.backend import HAS_JAX, xp


def _coeffs(eps, dx, dy, k0, pol, mod):
    epsp = mod.pad(eps, 1, mode="edge")
    eps_c = epsp[1:-1, 1:-1]
    eps_xp = epsp[1:-1, 2:]
    eps_xm = epsp[1:-1, :-2]
    eps_yp = epsp[2:, 1:-1]
    eps_ym = epsp[:-2, 1:-1]

    def weighted(eps_plus, eps_minus, h):
        half_p = 0.5 * (eps_c + eps_plus)
        half_m = 0.5 * (eps_c + eps_minus)
        cp = eps_plus / (h ** 2 * half_p)
        cm = eps_minus / (h ** 2 * half_m)
        cc = -eps_c / h ** 2 * (1.0 / half_p + 1.0 / half_m)
        return cp, cm, cc

    def plain(h, shape):
        cp = mod.ones(shape) / h ** 2
        cm = mod.ones(shape) / h ** 2
        cc = -2.0 / h ** 2
        return cp, cm, cc

    if pol == "te":
        cxp, cxm, cxc = weighted(eps_xp, eps_xm, dx)
        cyp, cym, cyc = plain(dy, eps_c.shape)
    elif pol == "tm":
        cxp, cxm, cxc = plain(dx, eps_c.shape)
        cyp, cym, cyc = weighted(eps_yp, eps_ym, dy)
    else:
        raise ValueError(f"pol must be 'te' or 'tm', got {pol!r}")

    center = cxc + cyc + k0 ** 2 * eps_c
    return center, cxp, cxm, cyp, cym


def _assemble(eps, dx, dy, k0, pol):
    """Sparse semivectorial operator ``A`` (CSC) for the eigensolve."""
    ny, nx = eps.shape
    center, cxp, cxm, cyp, cym = _coeffs(np.asarray(eps, float), dx, dy, k0, pol, np)
    n = ny * nx
    iy, ix = np.divmod(np.arange(n), nx)

    rows = [np.arange(n)]
    cols = [np.arange(n)]
    vals = [center.reshape(-1)]

    def add(mask, col, val):
        rows.append(np.arange(n)[mask])
        cols.append(col[mask])
        vals.append(val.reshape(-1)[mask])

    add(ix < nx - 1, np.arange(n) + 1, cxp)
    add(ix > 0, np.arange(n) - 1, cxm)
    add(iy < ny - 1, np.arange(n) + nx, cyp)
    add(iy > 0, np.arange(n) - nx, cym)

    A = sp.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(n, n),
    )
    return A.tocsc()


def _apply(eps_flat, field_flat, shape, dx, dy, k0, pol):
    """Differentiable matvec ``A(eps) @ field`` (semivectorial)."""
    ny, nx = shape
    eps = eps_flat.reshape(ny, nx)
    field = field_flat.reshape(ny, nx)
    center, cxp, cxm, cyp, cym = _coeffs(eps, dx, dy, k0, pol, xp)
    fp = xp.pad(field, 1, mode="constant")
    f_xp = fp[1:-1, 2:]
    f_xm = fp[1:-1, :-2]
    f_yp = fp[2:, 1:-1]
    f_ym = fp[:-2, 1:-1]
    out = center * field + cxp * f_xp + cxm * f_xm + cyp * f_yp + cym * f_ym
    return out.reshape(-1)


def _solve(eps, dx, dy, k0, pol, num_modes, want_left=False):
    """Right (and optionally left) fundamental eigenpair(s) (semivectorial)."""
    A = _assemble(eps, dx, dy, k0, pol)
    n_max = float(np.sqrt(np.asarray(eps).max()))
    sigma = (n_max * k0) ** 2 * 1.0001
    k = int(min(max(num_modes, 1), A.shape[0] - 2))
    vals, vecs = spla.eigs(A, k=k, sigma=sigma, which="LM")
    order = np.argsort(np.real(vals))[::-1]
    vals, vecs = vals[order], vecs[:, order]

    betas = np.sqrt(vals.astype(complex))
    neff = betas / k0
    ny, nx = eps.shape
    fields = np.array([np.real(vecs[:, i]).reshape(ny, nx) for i in range(vecs.shape[1])])
    v0 = np.real(vecs[:, 0])
    v0 = v0 / np.sqrt(np.sum(v0 ** 2))

    if not want_left:
        return neff[:num_modes], fields[:num_modes], v0

    lam0 = complex(vals[0])
    lvals, lvecs = spla.eigs(A.T.tocsc(), k=1, sigma=lam0, which="LM")
    u0 = np.real(lvecs[:, 0])
    return neff[:num_modes], fields[:num_modes], v0, u0, float(np.real(lam0))


if HAS_JAX:
    import jax
    import jax.numpy as jnp

    def _solve_callback(eps_flat, shape, dx, dy, k0, pol):
        ny, nx = shape

        def host(e):
            eps = np.asarray(e, float).reshape(ny, nx)
            neff, _f, v0, u0, _lam = _solve(eps, dx, dy, k0, pol, 1, want_left=True)
            return (
                np.asarray(np.real(neff[0]), np.float64),
                np.asarray(v0, np.float64),
                np.asarray(u0, np.float64),
            )

        n = ny * nx
        return jax.pure_callback(
            host,
            (
                jax.ShapeDtypeStruct((), jnp.float64),
                jax.ShapeDtypeStruct((n,), jnp.float64),
                jax.ShapeDtypeStruct((n,), jnp.float64),
            ),
            eps_flat,
        )

    @partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))
    def n_eff_eps_vector(eps_flat, shape, dx, dy, k0, pol):
        """Differentiable fundamental ``n_eff`` from a flattened permittivity grid."""
        neff, _v, _u = _solve_callback(eps_flat, shape, dx, dy, k0, pol)
        return neff

    def _fwd(eps_flat, shape, dx, dy, k0, pol):
        neff, v, u = _solve_callback(eps_flat, shape, dx, dy, k0, pol)
        return neff, (eps_flat, v, u, neff)

    def _bwd(shape, dx, dy, k0, pol, res, g):
        eps_flat, v, u, neff = res
        denom = jnp.sum(u * v)

        def bilinear(e):
            return jnp.sum(u * _apply(e, v, shape, dx, dy, k0, pol))

        dlam_deps = jax.grad(bilinear)(eps_flat) / denom
        dneff_deps = dlam_deps / (2.0 * k0 ** 2 * neff)
        return (g * dneff_deps,)

    n_eff_eps_vector.defvjp(_fwd, _bwd)

else:  # pragma: no cover - NumPy fallback has no autodiff
    def n_eff_eps_vector(eps_flat, shape, dx, dy, k0, pol):
        raise RuntimeError("n_eff_eps_vector requires JAX. Install photonix[jax].")
