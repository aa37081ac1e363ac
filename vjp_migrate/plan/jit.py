"""Plan, step 6: a stacked `jax.jit`'s static numbers and names, shifted or dropped with the
moved arguments."""

from __future__ import annotations

from vjp_migrate.model import JitEdit, VjpSite
from vjp_migrate.sites import positional_params


def jit_edits(
    site: VjpSite, moved: tuple[int, ...], moved_bwd: tuple[str, ...], residual: str, new_residual: str
) -> tuple[JitEdit, ...] | str:
    """New static arguments for a jax.jit on fwd (moved arguments are traced now) and on bwd
    (whose parameters move), or why they cannot be rewritten."""
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    edits: list[JitEdit] = []
    fwd_jit, bwd_jit = site.fwd.jit, site.bwd.jit
    if fwd_jit is not None:
        fwd = site.fwd.node
        if fwd_jit.static_argnums is None or fwd_jit.static_argnames is None:
            return f"fwd `{fwd.name.value}`'s jax.jit gives its static arguments by a name or expression"
        params = positional_params(fwd)
        traced = {site.fwd.bound_args + p for p in moved}
        argnums = tuple(i for i in fwd_jit.static_argnums if i not in traced)
        argnames = tuple(n for n in fwd_jit.static_argnames if n not in {params[i] for i in traced if i < len(params)})
        if (argnums, argnames) != (fwd_jit.static_argnums, fwd_jit.static_argnames):
            edits.append(JitEdit(fwd_jit.decorator, argnums, argnames))
    if bwd_jit is not None:
        bwd = site.bwd.node
        if bwd_jit.static_argnums is None or bwd_jit.static_argnames is None:
            return f"bwd `{bwd.name.value}`'s jax.jit gives its static arguments by a name or expression"
        if bwd_jit.positional_options:
            return f"bwd `{bwd.name.value}`'s jax.jit has `{bwd_jit.positional_options[0]}`, tied to its signature"
        params = positional_params(bwd)
        res_index = params.index(residual)
        if res_index in bwd_jit.static_argnums or residual in bwd_jit.static_argnames:
            return f"bwd `{bwd.name.value}`'s jax.jit marks the residuals static"
        new_index = {i: j for j, i in enumerate(i for i, n in enumerate(params) if n not in moved_bwd)}
        argnums = tuple(new_index[i] for i in bwd_jit.static_argnums if i in new_index)
        argnames = tuple(n for n in bwd_jit.static_argnames if n not in moved_bwd)
        if new_residual != residual and new_residual in argnames:
            return f"bwd `{bwd.name.value}`'s jax.jit marks `{new_residual}` static"
        if (argnums, argnames) != (bwd_jit.static_argnums, bwd_jit.static_argnames):
            edits.append(JitEdit(bwd_jit.decorator, argnums, argnames))
    return tuple(edits)
