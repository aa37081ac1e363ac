"""Plan, step 5: fwd's residuals: what it saves already (the argument, an alias, an item of a
nested tuple), where the moved arguments go, and how bwd unpacks them."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import target_names
from vjp_migrate.model import Layout
from vjp_migrate.plan.bodies import FunctionNames, Loads, bindings_of, literal_binding, names_in
from vjp_migrate.sites import body_statements

RESIDUAL_NAMES = ("res", "residuals", "res_")
TEMP_NAMES = ("grads", "cotangents", "grads_")


def fresh_name(taken: set[str], candidates: tuple[str, ...] = RESIDUAL_NAMES) -> str:
    for name in candidates:
        if name not in taken:
            return name
    index = 2
    while f"{candidates[0]}{index}" in taken:
        index += 1
    return f"{candidates[0]}{index}"


def already_saved(
    read: tuple[int, ...],
    order: tuple[int, ...],
    fwd_params: tuple[str, ...],
    bwd_params: tuple[str, ...],
    bwd: cst.FunctionDef,
    counts: dict[str, int],
    fwd: cst.FunctionDef,
    fwd_returns: list[cst.Return],
    fwd_bound: set[str],
    fwd_assigns: set[int],
) -> dict[int, list[tuple[cst.Name, str]]]:
    """Moved arguments that fwd already saves by hand (half-migrated code), with the names bwd
    renames for each: every residual is a tuple (or a name fwd binds once to one) holding the fwd
    parameter, or an alias of it (`w_ = w`), at one place, in nested tuples too, and bwd unpacks
    it in one plain assignment whose target there can take bwd's name for it, or whose target
    bwd's reads of its parameter can read instead."""
    residual = bwd_params[len(order)]
    unpack = _single_unpack(bwd, residual, counts, ())
    if unpack is None:
        return {}
    fwd_bindings = bindings_of(fwd)
    tuples = _residual_tuples(fwd_returns, fwd_bindings)
    if tuples is None:
        return {}
    found: dict[int, list[tuple[cst.Name, str]]] = {}
    bindings = bindings_of(bwd)
    for p in read:
        name, wanted = fwd_params[p], bwd_params[order.index(p)]
        path = None if name in fwd_bound else _saved_at(name, tuples, fwd_bindings, fwd_assigns)
        if path is None:
            continue
        found_slot = _unpacked_at(bwd, unpack, tuples, path, counts, bindings)
        if found_slot is None:
            continue
        slot, slot_unpack = found_slot
        if slot.value in ("_", wanted) or (counts.get(slot.value, 0) == 1 and slot.value not in bwd_params):
            found[p] = [(slot, wanted)] if slot.value != wanted else []
        elif (loads := _reads_after(bwd, slot_unpack, wanted, slot.value, bindings)) is not None:
            found[p] = [(load, slot.value) for load in loads]
    return found


def indexed_reads(
    saved: tuple[int, ...],
    fwd_params: tuple[str, ...],
    residual: str,
    bwd: cst.FunctionDef,
    fwd: cst.FunctionDef,
    fwd_returns: list[cst.Return],
    fwd_bound: set[str],
    fwd_assigns: set[int],
) -> tuple[str, ...] | None:
    """Where fwd's residual already holds each of the ``saved`` arguments, as an item of its
    tuple (`res[1]`, `res[1][0]`), for bwd to read at its top (`w = res[1]`) instead of fwd
    saving it again: None unless every one of them is at one place in every return, so that the
    residual stays as it is. bwd must have a block to put the statements in."""
    if residual == "_" or not isinstance(bwd.body, cst.IndentedBlock):
        return None
    fwd_bindings = bindings_of(fwd)
    tuples = _residual_tuples(fwd_returns, fwd_bindings)
    if tuples is None:
        return None
    items: list[str] = []
    for p in saved:
        name = fwd_params[p]
        path = None if name in fwd_bound else _saved_at(name, tuples, fwd_bindings, fwd_assigns)
        if path is None:
            return None
        items.append(residual + "".join(f"[{index}]" for index in path))
    return tuple(items)


def _residual_tuples(
    fwd_returns: list[cst.Return], fwd_bindings: dict[str, list[cst.CSTNode]]
) -> list[cst.BaseExpression] | None:
    """The tuple literal each fwd return saves (through a name bound once to it, too), or None."""
    tuples = [
        _residual_literal(r.value.elements[1].value, fwd_bindings)
        for r in fwd_returns
        if isinstance(r.value, cst.Tuple) and len(r.value.elements) == 2
    ]
    if len(tuples) != len(fwd_returns) or not all(isinstance(t, cst.Tuple) for t in tuples):
        return None
    return tuples


def _saved_at(
    name: str, tuples: list[cst.BaseExpression], fwd_bindings: dict[str, list[cst.CSTNode]], fwd_assigns: set[int]
) -> tuple[int, ...] | None:
    """The one place of fwd's parameter ``name`` (or an alias of it) in every residual tuple."""
    saved_as = _aliases(name, fwd_bindings, fwd_assigns)
    places = {tuple(_paths_to(t, saved_as)) for t in tuples}  # each return's, once
    if len(places) != 1 or len(paths := next(iter(places))) != 1:
        return None
    return paths[0]


def _aliases(name: str, bindings: dict[str, list[cst.CSTNode]], own: set[int]) -> set[str]:
    """``name`` and the names that hold its value wherever fwd reads them: every binding of such a
    name is one of fwd's own `alias = other` statements (in an `if` or a loop too), `other` being
    ``name`` or another of them (`a = w; b = a`). A path that skips them all leaves the name
    unbound, and reading it raises before and after the rewrite alike."""
    found = {name}
    grown = True
    while grown:
        grown = False
        for alias, sites in bindings.items():
            if alias not in found and sites and all(_copies(site, alias, found, own) for site in sites):
                found.add(alias)
                grown = True
    return found


def _copies(site: cst.CSTNode, alias: str, names: set[str], own: set[int]) -> bool:
    """Whether ``site`` is one of fwd's own statements binding ``alias`` to one of ``names`` as is."""
    return (
        isinstance(site, cst.Assign)
        and id(site) in own
        and isinstance(site.value, cst.Name)
        and site.value.value in names
        and any(isinstance(t.target, cst.Name) and t.target.value == alias for t in site.targets)
    )


def _paths_to(literal: cst.BaseExpression, names: set[str], path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """Where a tuple literal holds one of ``names``, as indices into it and its nested tuple literals."""
    if not isinstance(literal, (cst.Tuple, cst.List)) or any(
        isinstance(e, cst.StarredElement)
        for e in literal.elements  # positions unknown
    ):
        return
    for index, element in enumerate(literal.elements):
        if isinstance(element.value, cst.Name) and element.value.value in names:
            yield (*path, index)
        yield from _paths_to(element.value, names, (*path, index))


def _unpacked_at(
    bwd: cst.FunctionDef,
    unpack: cst.Assign,
    literals: list[cst.BaseExpression],
    path: tuple[int, ...],
    counts: dict[str, int],
    bindings: dict[str, list[cst.CSTNode]],
) -> tuple[cst.Name, cst.Assign] | None:
    """The name bwd's unpack binds at ``path`` of fwd's residual ``literals``, and the statement
    binding it, when the targets have their shape down to there: `(c, w), x = res` for
    `((c, w), x)`, or `cw, x = res` and then `c, w = cw`, `cw` read nowhere else."""
    target: cst.BaseExpression = unpack.targets[0].target
    for index in path:
        if isinstance(target, cst.Name) and (inner := _inner_unpack(bwd, target.value, counts, bindings)) is not None:
            unpack, target = inner, inner.targets[0].target
        if not all(_same_width(target, literal) for literal in literals):
            return None
        assert isinstance(target, (cst.Tuple, cst.List))
        target = target.elements[index].value
        literals = [literal.elements[index].value for literal in literals if isinstance(literal, (cst.Tuple, cst.List))]
    return (target, unpack) if isinstance(target, cst.Name) else None


def _inner_unpack(
    bwd: cst.FunctionDef, name: str, counts: dict[str, int], bindings: dict[str, list[cst.CSTNode]]
) -> cst.Assign | None:
    """bwd's one plain `a, b = name` statement, when that is all that reads ``name``, bound once."""
    if counts.get(name, 0) != 2 or len(bindings.get(name, [])) != 1:
        return None
    for stmt in body_statements(bwd):
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, (cst.Tuple, cst.List))
            and _plain_target(small.targets[0].target)
            and isinstance(small.value, cst.Name)
            and small.value.value == name
        ):
            return small
    return None


def _same_width(target: cst.BaseExpression, literal: cst.BaseExpression) -> bool:
    """Both are tuples (or lists) without starred items, of as many items."""
    return all(
        isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in node.elements)
        for node in (target, literal)
    ) and len(target.elements) == len(literal.elements)  # type: ignore[attr-defined]


def _reads_after(
    bwd: cst.FunctionDef, unpack: cst.Assign, param: str, target: str, bindings: dict[str, list[cst.CSTNode]]
) -> list[cst.Name] | None:
    """bwd's reads of its parameter ``param``, when they can all read the unpack's ``target``
    instead (the same value, saved by fwd): ``param`` is bound only as the parameter and
    ``target`` only by ``unpack``, and no statement before the unpack reads ``param``."""
    if len(bindings.get(param, [])) != 1 or [id(b) for b in bindings.get(target, [])] != [id(unpack)]:
        return None
    loads = Loads(param)
    after = False
    for stmt in body_statements(bwd):
        if not after and isinstance(stmt, cst.SimpleStatementLine) and any(s is unpack for s in stmt.body):
            after = True
            continue
        before = len(loads.found)
        walk.visit(stmt, loads)
        if not after and len(loads.found) > before:
            return None
    return loads.found if after else None


def _residual_literal(value: cst.BaseExpression, bindings: dict[str, list[cst.CSTNode]]) -> cst.BaseExpression:
    """The tuple literal a returned residual name is bound to once (`residual = (a, b)`), else the value."""
    if isinstance(value, cst.Name):
        assign = literal_binding(value.value, bindings)
        if assign is not None:
            return assign.value
    return value


def layout_of(
    saved_bwd: tuple[str, ...],
    residual: str,
    bwd: cst.FunctionDef,
    counts: dict[str, int],
    fwd_returns: list[cst.Return],
    taken: set[str],
) -> tuple[Layout, str, str, cst.Assign | None]:
    if not saved_bwd:
        return Layout.UNCHANGED, residual, residual, None
    residual_used = counts.get(residual, 0) > 0
    values = [r.value.elements[1].value for r in fwd_returns if isinstance(r.value, cst.Tuple)]
    if not residual_used and all(saves_nothing(v) for v in values):
        if len(saved_bwd) == 1:
            return Layout.NONE, saved_bwd[0], residual, None
        return Layout.NONE, fresh_name(taken), residual, None
    unpack = _single_unpack(bwd, residual, counts, saved_bwd)
    if unpack is None:
        return Layout.GENERAL, fresh_name(taken), residual if residual_used else "_", None
    target = unpack.targets[0].target
    if isinstance(target, (cst.Tuple, cst.List)) and all(_fills(v, target) for v in values):
        return Layout.TUPLE, residual, residual, unpack
    return Layout.BOUND, residual, residual, unpack


def saves_nothing(value: cst.BaseExpression) -> bool:
    """`None`, `()`, `[]` or `{}`: a residual that holds nothing (JAX hands bwd the same empty value)."""
    return (isinstance(value, cst.Name) and value.value == "None") or (
        isinstance(value, (cst.Tuple, cst.List, cst.Dict)) and not value.elements
    )


def _fills(value: cst.BaseExpression, target: cst.Tuple | cst.List) -> bool:
    """Whether ``value`` is a tuple literal that the unpack ``target`` takes apart: as many items,
    or starred items on either side (`(*parts, x)`, `(x, *args) = res`) that may make up the
    difference. Saved items put first in both stay exact whatever the starred items hold."""
    if not isinstance(value, cst.Tuple) or not value.lpar:
        return False
    width = len(target.elements)
    if any(isinstance(e, cst.StarredElement) for e in target.elements):
        return True  # the code ran: the items fit the starred target, and the saved ones go first
    starred = sum(isinstance(e, cst.StarredElement) for e in value.elements)
    return len(value.elements) - starred <= width if starred else len(value.elements) == width


def _plain_target(target: cst.BaseExpression, star: bool = False) -> bool:
    """A name, or a (nested) tuple/list of names without starred items; with ``star``, the
    outermost one may have one starred name (`x, *args = res`)."""
    if isinstance(target, cst.Name):
        return True
    if not isinstance(target, (cst.Tuple, cst.List)):
        return False
    starred = [e for e in target.elements if isinstance(e, cst.StarredElement)]
    if starred and not (star and len(starred) == 1 and isinstance(starred[0].value, cst.Name)):
        return False
    return all(isinstance(e, cst.StarredElement) or _plain_target(e.value) for e in target.elements)


def _single_unpack(
    bwd: cst.FunctionDef, residual: str, counts: dict[str, int], saved: tuple[str, ...]
) -> cst.Assign | None:
    """The one plain `a, b = res` (or `params = res`) statement, when res is used nowhere else.

    The saved names will be bound there, so no statement before it may mention them.
    """
    if counts.get(residual, 0) != 1:
        return None
    earlier = FunctionNames()
    for stmt in body_statements(bwd):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and _plain_target(small.targets[0].target, star=True)
                and isinstance(small.value, cst.Name)
                and small.value.value == residual
            ):
                bound = set(target_names(small.targets[0].target))
                if bound & set(saved) or residual in bound or any(earlier.counts.get(n) for n in saved):
                    return None
                return small
        walk.visit(stmt, earlier)
    return None


def fwd_residual_assign(
    fwd: cst.FunctionDef, fwd_returns: list[cst.Return], unpack: cst.Assign | None
) -> cst.Assign | None:
    """fwd's `res = a, b` when every return gives `res` as is, bwd unpacks it in as many names,
    and `res` is bound and used nowhere else."""
    target = unpack.targets[0].target if unpack is not None else None
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    values = [r.value.elements[1].value for r in fwd_returns if isinstance(r.value, cst.Tuple)]
    names = {v.value for v in values if isinstance(v, cst.Name)}
    if len(names) != 1 or len(values) != len(fwd_returns):
        return None
    name = names.pop()
    assign = literal_binding(name, bindings_of(fwd))
    if (
        assign is None
        or len(assign.value.elements) != len(target.elements)  # type: ignore[attr-defined]
        or names_in(fwd).counts.get(name, 0) != 1 + len(values)
    ):
        return None
    return assign
