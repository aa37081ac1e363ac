"""Spellings probe22 met in real code (notes/probe22-findings.md): custom_vjp look-alikes of other
libraries are no sites, and the class-body and call-form sites it found stay found with their rules."""

from __future__ import annotations

from helpers import sites_of

from vjp_migrate.api import check_source
from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import Settings

_ALL = Settings(frozenset(BY_CODE))

_NNX_DIFF_STATE = """
from flax import nnx

@nnx.custom_vjp(nondiff_argnums=(nnx.DiffState(3, False),))
def step(cell, x, state, elig):
    return cell(x), state, elig

def step_fwd(cell, x, state, elig):
    return step(cell, x, state, elig), (cell, x)

def step_bwd(residual, g):
    (g_cell, _, _, g_elig), out_g = g
    return g_cell, out_g[0], None, g_elig

step.defvjp(step_fwd, step_bwd)
"""

_TJAX_SHIM_METHOD = """
from functools import partial
from tjax import custom_vjp, dataclass

def _ffp_fwd(iterated, theta, initial_state):
    return iterated.find_fixed_point(theta, initial_state), theta

def _ffp_bwd(residuals, augmented_bar):
    return (augmented_bar,)

@dataclass
class IteratedFunctionWithCombinator:
    z_iteration_limit: int = 1000

    @partial(custom_vjp[object], nondiff_argnums=(0, 2))
    def find_fixed_point(self, theta, initial_state):
        return theta * initial_state

    find_fixed_point.defvjp(_ffp_fwd, _ffp_bwd)
"""

_CLASS_BODY_SELF = """
import functools
import jax

class Renderer(object):
    @functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
    def _rasterize(self, pose, pos):
        return pose * pos

    def _rasterize_fwd(self, pose, pos):
        return pose * pos, (pose, pos)

    def _rasterize_bwd(self, saved, d):
        pose, pos = saved
        return d * pos, d * pose

    _rasterize.defvjp(_rasterize_fwd, _rasterize_bwd)
"""

_CALL_FORM_OPTIMIZE_REMAT = """
import jax

def _f(lhs, rhs, config):
    return lhs @ rhs

def _f_fwd(lhs, rhs, config):
    return _f(lhs, rhs, config), (lhs, rhs)

def _f_bwd(config, ctx, grad):
    lhs, rhs = ctx
    if config.fused:
        grad = grad * 2
    return grad @ rhs.T, lhs.T @ grad

_op = jax.custom_vjp(_f, nondiff_argnames=("config",))
_op.defvjp(_f_fwd, _f_bwd, optimize_remat=True)
"""


def test_flax_nnx_custom_vjp_with_diff_state_is_no_site() -> None:
    assert sites_of(_NNX_DIFF_STATE) == []
    assert check_source(_NNX_DIFF_STATE, path="hypr.py", settings=_ALL) == []


def test_tjax_subscripted_shim_in_a_class_body_is_no_site() -> None:
    assert sites_of(_TJAX_SHIM_METHOD) == []
    assert check_source(_TJAX_SHIM_METHOD, path="combinator.py", settings=_ALL) == []


def test_class_body_site_with_rules_registered_in_the_body_is_found_with_its_rules() -> None:
    (site,) = sites_of(_CLASS_BODY_SELF)
    assert (site.qualname, site.nondiff.positions, site.problem) == ("Renderer._rasterize", (0,), None)
    assert site.fwd is not None and site.fwd.node is not None and site.fwd.node.name.value == "_rasterize_fwd"
    assert site.bwd is not None and site.bwd.node is not None and site.bwd.node.name.value == "_rasterize_bwd"


def test_call_form_with_nondiff_argnames_and_optimize_remat_is_found_with_its_rules() -> None:
    (site,) = sites_of(_CALL_FORM_OPTIMIZE_REMAT)
    assert site.primal is not None
    assert (site.name, site.primal.name.value, site.nondiff.positions, site.problem) == ("_op", "_f", (2,), None)
    assert check_source(_CALL_FORM_OPTIMIZE_REMAT, path="gemm.py", settings=_ALL) == []
