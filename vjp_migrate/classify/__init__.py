"""Stage 6: site -> an ArgInfo per nondiff argument: STATIC, ARRAY or UNKNOWN, with the evidence.

Static evidence wins over numeric use: a legitimate callable or setting must never be migrated.

The steps, in data-flow order: ``weights`` (how much evidence weighs), ``expressions`` (what an
expression reads), ``module_facts``, ``hashing`` and ``scoped_hashing`` (the cached functions and
dicts of the module, of a factory, of a class, which hash what they get), ``containers`` (the
Python sequences an index into needs a concrete int), ``class_containers`` (the dicts, sequences
and arrays a class keeps in an attribute), ``pytrees``,
``class_fields`` and ``array_fields`` (what the module defines: leafless classes, the static fields
of a method's class, the array fields of a class), ``context`` (all of it, once per module),
``grown`` (the items of a local list grown before a loop), then the evidence: ``annotations``;
``uses`` (what the primal, fwd and bwd do with the argument: the ``Uses`` visitor, composed of
``uses_names`` (the names carrying it and the evidence so far), ``uses_operators``,
``uses_branches`` (control flow, type tests), ``uses_fields`` (the fields of a pytree-annotated
parameter), ``uses_helpers`` (helpers, kernels, ``partial``; with ``jit_bound``, what a local bound
to a ``jax.jit`` or to a factory's result runs, and what that jit marks static) and
``uses_calls`` (with ``mapped``: the operands a ``jax.vmap`` maps over)); the calls of the site:
``calls`` (found once per module; ``factory_calls``, ``method_calls``: through a factory returning
the site, an instance of its class), ``call_locals`` (the values locals carry), ``call_traced`` (a
jitted caller's traced parameters), ``caller_annotations`` (what a caller's annotation says of what
it passes), ``call_sites`` (what callers pass), ``local_calls`` (a local site's calls leaving an
argument at its default) and ``int_literals`` (the int literals a call-site tag gets);
``classify_site`` here decides.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import replace

import libcst as cst

from vjp_migrate.classify.annotations import annotation_evidence, pytree_owner
from vjp_migrate.classify.call_sites import call_site_evidence
from vjp_migrate.classify.calls import calls_of
from vjp_migrate.classify.context import Context
from vjp_migrate.classify.expressions import call_value, code_text, number_literal, param_at, param_named
from vjp_migrate.classify.int_literals import int_literals_passed
from vjp_migrate.classify.local_calls import left_at_default
from vjp_migrate.classify.module_facts import jit_rebinding
from vjp_migrate.classify.uses import Uses
from vjp_migrate.classify.uses_fields import attributes_read, matching_class
from vjp_migrate.classify.weights import (
    ARITHMETIC,
    BRANCH_ARRAY,
    CALL_SITE,
    DOUBT,
    GUARDED,
    LEAFLESS,
    NOTED,
    OBJECT,
    OPAQUE,
    SCALAR,
    STRONG,
    TRACED,
    WEAK,
)
from vjp_migrate.model import ArgInfo, ArgKind, Evidence, JitSpec, Settings, VjpSite
from vjp_migrate.sites import jit_call_static_names, positional_params, rule_jit, unnamed_position, varargs_item


def classify_site(site: VjpSite, module: cst.Module, ctx: Context) -> list[ArgInfo]:
    """One ArgInfo per nondiff position of the site that names a positional parameter or an item of its ``*args``."""
    rebound = _rebinding_jit(site, module, ctx)
    calls = calls_of(site, module, ctx, rebound[1] if rebound is not None else None)
    passed = ctx.passed.get(id(module), frozenset())  # filled by calls_of
    wrapped = ctx.wrapped.get(id(module), {})
    infos: list[ArgInfo] = []
    aliased = _aliased_primal(site, ctx)
    for order, index in enumerate(site.nondiff.positions):
        name = site.params[index] if 0 <= index < len(site.params) else varargs_item(site, index)
        name = name or unnamed_position(site, index)
        if name is None:
            continue
        evidence: list[tuple[Evidence, str]] = []
        if index in site.jit_static and site.primal is not None:
            evidence.append((Evidence(ArgKind.STATIC, "static in a stacked jax.jit", *ctx.where(site.primal)), STRONG))
        if rebound is not None and name in rebound[2]:
            jit_call, target = rebound[0], rebound[1]
            bound = f"that `{site.name}` is rebound to" if target is None else f"bound to `{target}`"
            text = f"static in the `{code_text(jit_call.func)}` {bound}"
            # Bound to another name, the site may still be called without it, traced: static
            # unless array uses say otherwise, and then no safe fix.
            evidence.append(
                (Evidence(ArgKind.STATIC, text, *ctx.where(jit_call)), STRONG if target is None else GUARDED)
            )
        primal_jit = rule_jit(site.primal, ctx.imports) if site.primal_expr is None and site.primal else None
        roles: list[tuple[str, cst.FunctionDef | None, int, JitSpec | None]] = [
            ("the primal", site.primal or aliased, index, primal_jit)
        ]
        if site.fwd is not None and site.fwd.node is not None:
            roles.append(("fwd", site.fwd.node, index + site.fwd.bound_args, site.fwd.jit))
        if site.bwd is not None and site.bwd.node is not None:
            roles.append(("bwd", site.bwd.node, order + site.bwd.bound_args, site.bwd.jit))
        owner, matched = _pytree_owner(roles, ctx)
        for role, func, position, jit in roles:
            if func is None or (param := param_at(func, position)) is None:
                continue
            params = positional_params(func)
            where = f"{role} `{func.name.value}`"
            if jit is not None and _jit_marks(jit, position, params):
                if func is not site.primal:  # the primal's is "static in a stacked jax.jit" above
                    text = f"static in the jax.jit of {where}, which needs it hashable (an array is not)"
                    evidence.append((Evidence(ArgKind.STATIC, text, *ctx.where(jit.decorator)), STRONG))
            elif jit is not None and (jit.static_argnums is None or jit.static_argnames is None):
                text = f"the jax.jit of {where} names its static arguments by other than literals: it may be one"
                evidence.append((Evidence(ArgKind.UNKNOWN, text, *ctx.where(jit.decorator)), DOUBT))
            elif jit is not None:
                # A string, callable or object there is no valid jit argument, and a concrete use
                # inside fails on the Tracer: it is a JAX value, used as one (None and a tuple of
                # ints pass too: weak).
                text = f"traced by the jax.jit of {where}, which does not mark it static"
                evidence.append((Evidence(ArgKind.ARRAY, text, *ctx.where(jit.decorator)), WEAK))
            evidence.extend(Uses.of(func, param, ctx, where, owner=owner, matched=matched).evidence)
            evidence.extend(annotation_evidence(func, param.partition("[")[0], ctx, where))
        if (
            index == 0
            and name == "self"
            and site.primal is not None
            and (owner := ctx.plain_methods.get(id(site.primal)))
        ):
            # `self` by name: a custom_vjp in a class body is no descriptor, so its first parameter
            # is the instance only when the code passes one (`type(self).forward(self, x)`)
            text = f"the instance of `{owner}`, a class the module neither registers as a pytree nor derives from one"
            evidence.append((Evidence(ArgKind.STATIC, text, *ctx.where(site.primal)), STRONG))
        rules = frozenset(id(f.node) for f in (site.fwd, site.bwd) if f is not None and f.node is not None)
        for call, callers in calls:
            value = call_value(call, index, name)
            found = (
                call_site_evidence(
                    value,
                    ctx,
                    callers,
                    ctx.line_of(call),
                    passed,
                    wrapped,
                    ctx.lambda_params.get(id(call), frozenset()),
                    rules,
                )
                if value is not None
                else None
            )
            if found is not None:
                evidence.append(found)
            elif value is not None and number_literal(value) is not None:
                text = f"a number is passed at a call site (`{code_text(value)}`), which says nothing either way"
                evidence.append((Evidence(ArgKind.UNKNOWN, text, *ctx.where(call)), NOTED))
        evidence.extend(
            (said, CALL_SITE) for at, keyword, said in ctx.outside.get(site.name, ()) if at == index or keyword == name
        )
        if (default := left_at_default(site, module, ctx, calls, index, name)) is not None:
            evidence.append((default, STRONG))
        info = _decide(index, name, evidence)
        if info.kind is ArgKind.ARRAY and info.strong and _arithmetic_only(evidence):
            outside = [(call, callers) for call, callers in calls if not (callers and id(callers[-1]) in rules)]
            literals = int_literals_passed(outside, index, name, module, ctx, passed)
            info = _int_tag(info, site.name, literals, ctx.line_of(outside[0][0]) if outside else None)
        info = _unseen_primal(site, module, ctx, info) if aliased is None else info
        info = _opaque_uses(info, evidence)
        if info.kind is ArgKind.UNKNOWN and not info.evidence:
            info = replace(info, evidence=(_nothing_seen(site, roles, ctx),))
        infos.append(info)
    return infos


def _pytree_owner(
    roles: list[tuple[str, cst.FunctionDef | None, int, JitSpec | None]], ctx: Context
) -> tuple[str | None, bool]:
    """The pytree class of the module with array fields that one rule annotates the argument with
    (`params: Params` in the primal): the rules that leave it unannotated read the same value's
    fields. Else, when no rule annotates it, the one such class whose fields hold every attribute
    the rules read of it (`model.pi`), and True: matched by names only."""
    if not ctx.array_fields:  # no class to be annotated with or matched: no walk for the reads
        return None, False
    read: list[str] = []
    annotated = False
    for _, func, position, _ in roles:
        name = param_at(func, position) if func is not None else None
        param = param_named(func, name) if func and name else None
        if param is None or func is None or not name:
            continue
        if param.annotation is not None and (owner := pytree_owner(param, ctx)) is not None:
            return owner, False
        annotated = annotated or param.annotation is not None
        read.extend(attributes_read(func, name) if name.isidentifier() else ())
    matched = matching_class(read, ctx.array_fields) if read and not annotated else None
    return (matched.name, True) if matched is not None else (None, False)


def _nothing_seen(
    site: VjpSite, roles: list[tuple[str, cst.FunctionDef | None, int, JitSpec | None]], ctx: Context
) -> Evidence:
    """The reason of an argument nothing says anything about: where it was looked for."""
    read = [f"{role} `{func.name.value}`" for role, func, _, _ in roles if func is not None]
    where = ", ".join(read[:-1]) + f" and {read[-1]}" if len(read) > 1 else (read[0] if read else "no rule")
    text = (
        f"none of its uses in {where} (or in the helpers they call), nor any value a call of `{site.name}` "
        "in the module passes, tells array data from a static setting"
    )
    return Evidence(ArgKind.UNKNOWN, text, *(ctx.where(site.primal) if site.primal is not None else (None, None)))


def _arithmetic_only(evidence: list[tuple[Evidence, str]]) -> bool:
    """Whether the array evidence is arithmetic alone (and weak uses), no library call's data."""
    return all(e.text.startswith(ARITHMETIC) or weight == WEAK for e, weight in evidence if e.kind is ArgKind.ARRAY)


def _int_tag(info: ArgInfo, function: str, literals: tuple[str, ...], line: int | None) -> ArgInfo:
    """An argument every call in the module gives an int literal, and used only in arithmetic:
    that is Python-int arithmetic as the code runs (a call-site tag, `8 + 4 * site`), which later
    code may need as an int (a hashed key); the fix would trace it, so it is no safe fix."""
    if not literals:
        return info
    shown = ", ".join(f"`{text}`" for text in literals)
    text = (
        f"every call of `{function}` in the module passes it an int literal ({shown}): its arithmetic may be "
        "Python-int arithmetic that later code relies on (a hashed key), and moving it would make it a Tracer"
    )
    return replace(info, evidence=(*info.evidence, Evidence(ArgKind.UNKNOWN, text, line)), strong=False)


def _opaque_uses(info: ArgInfo, evidence: list[tuple[Evidence, str]]) -> ArgInfo:
    """Array data, but also passed to a function whose body is not seen, which may need it
    concrete (an `lru_cache` helper, a Python `if`): the fix is safe only when every use is known
    to take a Tracer, so this one is not; unless a call of the site passes a traced value (from a
    jitted caller's parameter): the code means that function to take one."""
    opaque = [e for e, weight in evidence if weight == OPAQUE]
    if info.kind is not ArgKind.ARRAY or not info.strong or not opaque:
        return info
    if any(weight == CALL_SITE and e.text.startswith(TRACED) for e, weight in evidence):
        return info
    return replace(info, evidence=_once((*info.evidence, *opaque)), strong=False)


def _jit_marks(jit: JitSpec, position: int, params: tuple[str, ...]) -> bool:
    """Whether a function's jax.jit marks its parameter at ``position`` static (a negative
    ``static_argnums`` counts from the end; an item of ``*args`` is marked by its position only)."""
    numbers = jit.static_argnums or ()
    if position >= len(params):
        return position in numbers
    return position in numbers or position - len(params) in numbers or params[position] in (jit.static_argnames or ())


def _rebinding_jit(
    site: VjpSite, module: cst.Module, ctx: Context
) -> tuple[cst.Call, str | None, frozenset[str]] | None:
    """A top-level primal def's name rebound to ``jax.jit(name, static_argnums=...)`` (or another
    wrapper given those keywords), or such a jit bound to another name or an attribute (that
    target's code; None for the name itself), and the parameters it marks static (hashed like a
    stacked jit's: never Tracers)."""
    if site.primal is None or not any(stmt is site.primal for stmt in module.body):
        return None
    found = jit_rebinding(module, site.primal.name.value, ctx.imports)
    if found is None:
        return None
    call, target = found
    names = jit_call_static_names(call, site.primal)
    return (call, target, names) if names else None


def _aliased_primal(site: VjpSite, ctx: Context) -> cst.FunctionDef | None:
    """The module def a primal `partial(f, k=v)` bound to a module-level name runs (`_run_vjp`)."""
    if site.primal is not None or not isinstance(site.primal_expr, cst.Name):
        return None
    return ctx.aliases.get(site.primal_expr.value)


def _unseen_primal(site: VjpSite, module: cst.Module, ctx: Context, info: ArgInfo) -> ArgInfo:
    """A primal whose body is not seen may need the argument concretely: never a safe fix."""
    if site.primal is not None or site.primal_expr is None or info.kind is ArgKind.STATIC:
        return info
    rules = "" if unnamed_position(site, info.index) is None else ", nor are its fwd and bwd"
    text = (
        site.primal_from.problem
        if site.primal_from is not None and site.primal_from.problem
        else f"the primal `{module.code_for_node(site.primal_expr)}` is not a function defined in this module"
        f"{rules}, so its uses were not seen"
    )
    unseen = Evidence(ArgKind.UNKNOWN, text, *ctx.where(site.primal_expr))
    return replace(info, evidence=(*info.evidence, unseen), strong=False)


def _decide(index: int, name: str, evidence: list[tuple[Evidence, str]]) -> ArgInfo:
    static = [(e, weight) for e, weight in evidence if e.kind is ArgKind.STATIC and weight != GUARDED]
    array = [(e, weight) for e, weight in evidence if e.kind is ArgKind.ARRAY]
    if static:
        if all(weight in (CALL_SITE, LEAFLESS) for _, weight in static) and any(
            weight == CALL_SITE for _, weight in array
        ):
            # One call passes a static value and another an array: the array's call breaks, and
            # moving the argument may break the other (a string or function is no JAX value), unless
            # every static value passed is a pytree with no leaves (moved, it stays untraced).
            found = _once([*(e for e, _ in static), *(e for e, _ in array)])
            movable = all(weight == LEAFLESS for _, weight in static)
            return ArgInfo(index, name, ArgKind.ARRAY, found, movable, movable)
        return ArgInfo(index, name, ArgKind.STATIC, _once(e for e, _ in static), False)
    guarded = [e for e, weight in evidence if weight == GUARDED]
    if guarded:  # static on one branch: array data elsewhere is then never a safe fix
        if any(weight not in (WEAK, BRANCH_ARRAY) for _, weight in array):  # a function is no residual: no fix
            return ArgInfo(index, name, ArgKind.ARRAY, _once([*guarded, *(e for e, _ in array)]), False, False)
        return ArgInfo(index, name, ArgKind.STATIC, _once(guarded), False)
    doubt = [e for e, weight in evidence if weight == DOUBT]
    if doubt:  # a value from it may be needed concretely: never a safe fix
        return ArgInfo(index, name, ArgKind.UNKNOWN, _once(doubt + [e for e, _ in array]), False)
    scalar = [e for e, weight in evidence if weight in (SCALAR, OBJECT)]
    # A Python-number or host NumPy annotation, or a method arrays lack, means numeric use (or
    # `.dot`) proves nothing; an array passed at a call site or an array annotation still does,
    # unless another function annotates the argument as a Python number or NumPy array (the two
    # annotations disagree).
    numbers = any(weight == SCALAR for _, weight in evidence)
    decisive = [e for e, weight in array if weight == CALL_SITE or ("annotated" in e.text and not numbers)]
    if array and (decisive or not scalar):
        strong = any(weight != WEAK for _, weight in array)
        return ArgInfo(index, name, ArgKind.ARRAY, _once(e for e, _ in array), strong)
    unknown = [e for e, _ in evidence if e.kind is ArgKind.UNKNOWN]
    return ArgInfo(index, name, ArgKind.UNKNOWN, _once(unknown + [e for e, _ in array]), False)


def _once(evidence: Iterable[Evidence]) -> tuple[Evidence, ...]:
    """Each reason once (two uses on one line read the same)."""
    return tuple(dict.fromkeys(evidence))


def _override_matches(entry: str, full_name: str, info: ArgInfo) -> bool:
    function, _, argument = entry.partition(":")
    named = full_name == function or full_name.endswith("." + function)
    return named and argument.strip() in (info.name, str(info.index))


def apply_overrides(infos: list[ArgInfo], site: VjpSite, path: str, settings: Settings) -> list[ArgInfo]:
    """The configuration's `static-args` / `array-args` win over the evidence in the code.

    An entry names ``module.function:argument``; any dotted suffix of the file's module path
    works (``fn:x``, ``mod.fn:x``, ``pkg.mod.Class.fn:0``), the path made absolute so that every
    spelling of the file matches alike.
    """
    if not settings.static_args and not settings.array_args:
        return infos
    where = os.path.abspath(path).replace("\\", "/")
    parts = [p for p in where.removesuffix(".py").removesuffix(".ipynb").split("/") if p]
    full_name = ".".join([*(parts[:-1] if parts[-1:] == ["__init__"] else parts), site.qualname])
    result = []
    for info in infos:
        if any(_override_matches(e, full_name, info) for e in settings.static_args):
            said = Evidence(ArgKind.STATIC, "listed in static-args in the configuration")
            info = ArgInfo(info.index, info.name, ArgKind.STATIC, (said,), False)
        elif any(_override_matches(e, full_name, info) for e in settings.array_args):
            said = Evidence(ArgKind.ARRAY, "listed in array-args in the configuration")
            info = ArgInfo(info.index, info.name, ArgKind.ARRAY, (said,), True)
        result.append(info)
    return result
