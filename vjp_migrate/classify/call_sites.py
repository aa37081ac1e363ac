"""Classify, step 8d: evidence from the calls of a site: values passed, a jitted caller's traced or
static parameters (call_traced.py), loops and helpers that carry them, `jax.jit(run)` and
`jax.jit(partial(run, ...))` (calls.py)."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from vjp_migrate.classify.annotations import annotated_leafless, annotation_evidence
from vjp_migrate.classify.call_locals import local_values
from vjp_migrate.classify.call_traced import rebound, traced_parameter
from vjp_migrate.classify.caller_annotations import annotated_array
from vjp_migrate.classify.class_fields import static_field_passed
from vjp_migrate.classify.context import Context, Wrapped, function_locals
from vjp_migrate.classify.expressions import code_text, is_int_tuple, is_string_like
from vjp_migrate.classify.uses import Uses
from vjp_migrate.classify.weights import CALL_SITE, CALLED, CONTROL, LEAFLESS, STRONG, TRACED
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.sites import jit_static_names, positional_params
from vjp_migrate.vocabulary import ARRAY_MODULES, makes_jax_array


def call_site_evidence(
    value: cst.BaseExpression,
    ctx: Context,
    callers: tuple[cst.FunctionDef, ...],
    line: int | None,
    passed: frozenset[str] = frozenset(),
    wrapped: Wrapped | None = None,
    lambda_params: frozenset[str] = frozenset(),
    rules: frozenset[int] = frozenset(),
) -> tuple[Evidence, str] | None:
    """What the value passed at one call site of the primal says about the argument (``passed``:
    the functions the module hands to another call, `jax.jit(run)`, whose parameters may be Tracers;
    ``wrapped``: those a `jax.jit(run, ...)` call wraps; ``lambda_params``: the names lambdas
    around the call bind, which are none of the callers' parameters or locals; ``rules``: the ids
    of the site's fwd and bwd, whose annotations are read as the rules' own)."""
    annotated = not (callers and id(callers[-1]) in rules)  # a rule's annotations are read as its own
    at = f"at a call site (`{code_text(value)}`)"
    if isinstance(value, cst.Lambda) or (isinstance(value, cst.Name) and ctx.definitions(value.value)):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if is_string_like(value) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
        return Evidence(ArgKind.STATIC, f"a constant is passed {at}", line), CALL_SITE
    if is_int_tuple(value):
        return Evidence(ArgKind.STATIC, f"a shape is passed {at}", line), CALL_SITE
    if isinstance(value, cst.Attribute) and value.attr.value in ("shape", "dtype"):  # concrete for a Tracer too
        return Evidence(ArgKind.STATIC, f"a {value.attr.value} is passed {at}", line), CALL_SITE
    qname = ctx.imports.qualify(value.func if isinstance(value, cst.Call) else value) or ""
    if isinstance(value, cst.Call) and qname.startswith(ARRAY_MODULES):
        return Evidence(ArgKind.ARRAY, f"an array is passed {at}", line), CALL_SITE
    if (made := _array_local(value, callers, ctx, lambda_params)) is not None:
        return Evidence(ArgKind.ARRAY, f"an array is passed {at}, made by `{code_text(made)}`", line), CALL_SITE
    if not isinstance(value, cst.Call) and qname.startswith(("jax.", "numpy.")):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if (field := static_field_passed(value, callers, ctx.methods, lambda_params)) is not None:
        return Evidence(ArgKind.STATIC, f"{field} is passed {at}", line), CALL_SITE
    if (
        annotated
        and isinstance(value, cst.Attribute)
        and (held := annotated_array(value, callers, ctx, lambda_params)) is not None
    ):
        return Evidence(ArgKind.ARRAY, f"{held} is passed {at}", line), CALL_SITE
    if (traced := traced_parameter(value, ctx, callers, wrapped or {}, lambda_params)) is not None:
        param, jitted, through = traced
        how = f", through `{through}`" if through else ""
        text = f"{TRACED} (from the parameter `{param}` of the jitted `{jitted}`{how}) is passed {at}"
        return Evidence(ArgKind.ARRAY, text, line), CALL_SITE
    if isinstance(value, cst.Name) and value.value not in lambda_params:
        for caller in reversed(callers):  # the def that binds the name: the call's, or one around it
            params = (*positional_params(caller), *(p.name.value for p in caller.params.kwonly_params))
            if value.value in params:
                if rebound(caller, value.value, ctx):
                    break
                if value.value in jit_static_names(caller, ctx.imports):
                    return Evidence(
                        ArgKind.STATIC, f"a jit-static parameter of `{caller.name.value}` is passed {at}", line
                    ), CALL_SITE
                if annotated_leafless(caller, value.value, ctx):  # untraced under a jit of the caller too
                    return _passed_on(caller, value.value, ctx, at, LEAFLESS)
                if (
                    ctx.helpers.get(caller.name.value) is caller
                    and not caller.decorators
                    and caller.name.value not in passed
                    and (found := _passed_on(caller, value.value, ctx, at, CALL_SITE)) is not None
                ):
                    return found
                found = _tested(caller, value.value, ctx, at)
                if (
                    found is None
                    and annotated
                    and (held := annotated_array(value, callers, ctx, lambda_params)) is not None
                ):
                    found = Evidence(ArgKind.ARRAY, f"{held} is passed {at}", line), CALL_SITE
                return found
            if value.value in function_locals(caller, ctx).bindings:
                break
    return None


def _array_local(
    value: cst.BaseExpression, callers: tuple[cst.FunctionDef, ...], ctx: Context, lambda_params: frozenset[str]
) -> cst.Call | None:
    """The JAX call that makes the array a local of the calling def (or of a def around it) holds,
    bound once (`k = jnp.ones(3)`, `key1, key2 = jax.random.split(key)`, `for k in
    jax.random.split(key, 3)`, a parameter converted once: `indices = jnp.asarray(indices)`), or
    a global the module binds once to one (`SIZES = jnp.array([50, 450])`); not host NumPy's
    (concrete, no Tracer), nor a function of metadata (`jnp.shape(x)`)."""
    if not isinstance(value, cst.Name) or value.value in lambda_params:
        return None
    binder = next((c for c in reversed(callers) if value.value in function_locals(c, ctx).bindings), None)
    if binder is None:
        return ctx.arrays.get(value.value)
    made = local_values(value.value, binder, ctx) or _converted_parameter(value.value, binder, ctx)
    call = made[0] if len(made) == 1 and isinstance(made[0], cst.Call) else None
    return call if call is not None and makes_jax_array(ctx.imports.qualify(call.func)) else None


def _converted_parameter(name: str, func: cst.FunctionDef, ctx: Context) -> tuple[cst.BaseExpression, ...]:
    """The value a parameter of ``func`` is rebound to by its one assignment (`indices =
    jnp.asarray(indices)`), which a def nested in ``func`` sees when it runs."""
    bound = function_locals(func, ctx).bindings.get(name, [])
    if len(bound) != 2 or not isinstance(bound[0].node, cst.Param) or not isinstance(bound[1].node, cst.Assign):
        return ()
    return bound[1].values or ()


def _tested(caller: cst.FunctionDef, param: str, ctx: Context, at: str) -> tuple[Evidence, str] | None:
    """A parameter whose value decides the caller's control flow (`if block_size % 8: raise`, also
    in a helper it calls: `_validate(x, block_size)`), or that the caller calls (`sdf(pts)`), passed
    on as it came: concrete (or a function) wherever the caller runs, whoever calls it."""
    where = f"the caller `{caller.name.value}`"
    for evidence, weight in Uses.of(caller, param, ctx, where).evidence:
        told = CONTROL in evidence.text or evidence.text.startswith(CALLED)
        if evidence.kind is ArgKind.STATIC and weight == STRONG and told:
            return replace(evidence, text=f"{evidence.text}, and passed on {at}"), CALL_SITE
    return None


def _passed_on(caller: cst.FunctionDef, param: str, ctx: Context, at: str, weight: str) -> tuple[Evidence, str] | None:
    """A parameter of an undecorated module-level caller (no method, no def inside another, not
    handed to a call such as `jax.jit(run)`), or one annotated with a leafless config, passed on as
    it came: what its own annotation or default says static (`use_tf32: bool = True`) holds for the
    argument too, with ``weight`` (LEAFLESS for such a config, which may still be moved)."""
    where = f"the caller `{caller.name.value}`"
    for evidence, _ in annotation_evidence(caller, param, ctx, where):
        if evidence.kind is ArgKind.STATIC:
            return replace(evidence, text=f"{evidence.text}, passed on {at}"), weight
    return None
