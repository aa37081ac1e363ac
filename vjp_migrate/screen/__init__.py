"""Stage 3: a cheap structural screen with CPython's `ast`, before any LibCST parse.

It answers one question, soundly: *could* the full pipeline report anything in this text with
these settings? ``may_report`` returns False only when it can prove the answer is no; every
doubt keeps the file. It over-approximates the later stages instead of copying them:

- a *site* is any call with a ``nondiff_argnums``/``nondiff_argnames`` keyword, or given by
  position (`custom_vjp(f, (1,))`), whose function, or first positional argument, may name
  ``custom_vjp`` (through any import alias); a module name bound to `partial(custom_vjp, ...)`
  and a bare-int ``nondiff_argnums`` keep the file unproved; a call form
  whose primal is surely no def of the module (an attribute, an imported name) is judged by its
  fwd's signature, as the sites stage does, and one whose primal may or may not be a def, or whose
  fwd is no def (a call may build it: classify then judges each position from the calls alone),
  keeps the file;
- an argument *may be an array* when, in the primal, fwd or bwd (or a helper they call, any
  function of that name, or any def a name bound to a call may run: `fn = jax.jit(_g)`, `fn =
  make()` returning one, followed deeper than classify does), it takes part in arithmetic, an
  element-wise comparison, an array attribute, is passed to a function that may live in an array
  module, positionally to any ``.bind`` (a primitive's operand) or to a name imported relatively
  (a helper a run over the package follows), is mapped over by ``jax.vmap``,
  has an attribute passed to a ``jax.random`` function (a holder of PRNG keys), has an array-like
  annotation or one naming a class of the module (a pytree with array fields, whose fields'
  uses, `params.G @ x`, are then the argument's), reads an attribute some class of the module
  declares as a field (unannotated, it may be that class's pytree), is unpacked into items one of
  which is in arithmetic (`w, b = handle`; `x * w`), or a call of the site (by name, or through a
  def that returns it) passes an array-module result (in place, or through a local or a global
  bound to one) or, at the argument's place, a parameter
  of the caller annotated as an array or with a class of the module;
- a rule *may be inconsistent* when a position is past the primal's parameters, any fwd/bwd of
  the right name has the wrong arity or takes the primal's parameter names in another order, a
  bwd returns a tuple literal with another number of cotangents than the primal has
  differentiable arguments, the bwd of a one-argument primal returns something that may be a
  bare value (or a local bound to one, or the call of a def of the module that may return one),
  or nondiff_argnames names the primal's `*args` (JAX ignores such a name, and a positional-only
  one: neither gives a position). A rule read off a method's first parameter
  (`self.apply.defvjp(self.apply_fwd, ...)`) is a bound method, whose parameters after `self`
  JAX fills: such a file is kept.

One kind of static evidence is decisive in classify and cheap to prove exactly: a position in a
stacked ``jax.jit``'s ``static_argnums``/``static_argnames``. A Python-number annotation
classify surely sees (in the primal, fwd or bwd) leaves only an array passed at a call site able
to make the argument ARRAY there, so the screen then looks at the calls alone. Codes the screen
does not know keep every file, so new codes stay sound until they are taught here. The word
sets (vocabulary.py's and the steps' own) are supersets of classify's (tests/test_prefilter.py
checks that, and runs both over every fixture and every file of the installed JAX).

The steps, in data-flow order: ``tree`` indexes the ast, ``names`` resolves names through the
imports, ``sites`` finds the sites and their rules, ``jit`` what a jax.jit traces, ``array_use``
what may be array data, ``static_proof`` what classify surely takes as static.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from vjp_migrate.screen.array_use import ArrayUse, call_site_may_pass_annotated
from vjp_migrate.screen.jit import call_site_may_pass_traced, may_be_jitted
from vjp_migrate.screen.names import positional_params
from vjp_migrate.screen.sites import (
    Site,
    find_sites,
    imports_a_rule,
    may_be_inconsistent,
    names_star_args,
    nondiff_positions,
    registers_through_import,
    rule_defs,
)
from vjp_migrate.screen.static_proof import StaticProof
from vjp_migrate.screen.tree import Doubt, Module, index_module

if TYPE_CHECKING:  # model imports libcst; the screen runs where LibCST is not loaded yet
    from vjp_migrate.model import Settings


NEEDS_ARRAY = frozenset({"VJP001", "VJP003"})  # reported only for an argument classified ARRAY
NEEDS_UNKNOWN = frozenset({"VJP002"})  # any non-static argument
NEEDS_INCONSISTENCY = frozenset({"VJP004"})
NEEDS_ARRAY_OR_UNKNOWN = NEEDS_ARRAY | NEEDS_UNKNOWN
UNDERSTOOD = NEEDS_ARRAY | NEEDS_UNKNOWN | NEEDS_INCONSISTENCY


def _site_may_report(m: Module, site: Site, settings: Settings, uses: ArrayUse) -> bool:
    fwds, bwds = rule_defs(m, site)
    if settings.select & NEEDS_ARRAY and imports_a_rule(m, site):
        return True
    proof = StaticProof(m, site)
    for primal in proof.signatures():
        positions = nondiff_positions(m, site, primal)
        n_params = len(positional_params(primal))
        kept = [(order, i) for order, i in enumerate(positions) if i < n_params]
        if primal.args.vararg is not None and len(kept) < len(positions) and settings.select & NEEDS_ARRAY_OR_UNKNOWN:
            return True  # a position in `*args`: classify names it `args[0]` and judges it from bwd and call sites
        for order, index in kept:
            if proof.static(primal, index, order):
                continue
            if settings.select & NEEDS_UNKNOWN:
                return True
            if not settings.select & NEEDS_ARRAY:
                continue
            name = positional_params(primal)[index].arg
            if (
                proof.passes_array(index, name)
                or call_site_may_pass_traced(m, site, index, name)
                or call_site_may_pass_annotated(m, site, index, name)
            ):
                return True
            roles = [(primal, index), *((f, index) for f in fwds if f), *((b, order) for b in bwds if b)]
            if any(may_be_jitted(m, func) for func, _ in roles):
                return True  # classify: an argument a jax.jit traces is a JAX value (unless it marks it static)
            if proof.scalar(primal, index, order):
                continue  # then only an array passed at a call site makes it ARRAY (classify._decide)
            if any(uses.param(func, at) for func, at in roles):
                return True
        if settings.select & NEEDS_INCONSISTENCY and (
            names_star_args(m, site, primal)
            or any(may_be_inconsistent(m, primal, positions, f, b) for f in fwds for b in bwds)
        ):
            return True
    return False


@dataclass(frozen=True)
class Verdict:
    may_report: bool
    parses: bool  # CPython's parser accepted the text: later stages need not check it again


def screen(text: str, settings: Settings, tree: ast.AST | None = None) -> Verdict:
    """``may_report``, and whether the text parsed on the way (one ast parse serves both).

    ``tree``: the text's ast when the caller has it already (flake8 hands plugins one).
    """
    if settings.select - UNDERSTOOD or (settings.array_args and settings.select & NEEDS_ARRAY):
        return Verdict(True, False)
    if not isinstance(tree, ast.Module):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return Verdict(True, False)  # the full pipeline decides, and reports a syntax error as one
    try:
        m = index_module(tree, text)
        uses = ArrayUse(m)
        if registers_through_import(m):
            return Verdict(True, True)
        return Verdict(any(_site_may_report(m, site, settings, uses) for site in find_sites(m)), True)
    except (Doubt, ValueError, RecursionError, MemoryError):
        return Verdict(True, True)


def may_report(text: str, settings: Settings, tree: ast.AST | None = None) -> bool:
    """False only when no selected code can report anything in ``text`` (which must parse)."""
    return screen(text, settings, tree).may_report
