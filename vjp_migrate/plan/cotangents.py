"""Plan, step 3: bwd's cotangent tuple: which slots get a None, and how each return gets them
(into a literal, a name bound once to one, or by unpacking)."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.imports import ImportTable
from vjp_migrate.model import VjpSite
from vjp_migrate.plan.bodies import Returns, code_of, literal_binding, returns_of
from vjp_migrate.plan.endings import falls_off


def cotangent_slots(site: VjpSite, kept: tuple[int, ...], moved: tuple[int, ...]) -> tuple[int, ...]:
    slots, slot = [], 0
    for index in range(len(site.params)):
        if index in kept:
            continue
        if index in moved:
            slots.append(slot)
        slot += 1
    return tuple(slots)


def _starred_gap(
    value: cst.Tuple | cst.List, slots: tuple[int, ...], bindings: dict[str, list[cst.CSTNode]]
) -> tuple[str | None, dict[str, int]]:
    """The first `*x` whose unknown length hides where a None goes, and the known lengths used."""
    known: dict[str, int] = {}
    slot = 0
    for element in value.elements:
        while slot in slots:
            slot += 1
        if not isinstance(element, cst.StarredElement):
            slot += 1
            continue
        binding = literal_binding(element.value.value, bindings) if isinstance(element.value, cst.Name) else None
        length = len(binding.value.elements) if binding is not None else None  # type: ignore[attr-defined]
        if length is None or any(slot < s < slot + length for s in slots):
            return (f"*{code_of(element.value)}" if any(s > slot for s in slots) else None), known
        assert isinstance(element.value, cst.Name)
        known[element.value.value] = length
        slot += length
    return None, known


def literal_branches(value: cst.BaseExpression) -> list[cst.Tuple | cst.List] | None:
    """The tuple/list literals a conditional expression returns (`(a,) if c else (b,)`, nested too),
    each of which gains its Nones; None when ``value`` is no such conditional."""
    if not isinstance(value, cst.IfExp):
        return None
    branches: list[cst.Tuple | cst.List] = []
    for branch in (value.body, value.orelse):
        inner = literal_branches(branch)
        if inner is not None:
            branches.extend(inner)
        elif isinstance(branch, (cst.Tuple, cst.List)):
            branches.append(branch)
        else:
            return None
    return branches


def cotangent_count(site: VjpSite, kept: tuple[int, ...]) -> int | None:
    """How many cotangents bwd returns after the migration; None when the primal's `*args` leave it open."""
    return None if site.has_varargs else len(site.params) - len(kept)


def trailing_slots(slots: tuple[int, ...], total: int | None) -> bool:
    """Whether every None goes after all the old cotangents: `(*grads, None)` needs no slicing.
    Never when the count is open: the cotangents of `*args` come after every named position."""
    return total is not None and slots == tuple(range(total - len(slots), total))


_ReturnPlan = tuple[list[cst.Return], dict[str, int], dict[int, cst.Assign]]


def bwd_return_plan(
    bwd: cst.FunctionDef,
    slots: tuple[int, ...],
    total: int | None,
    bindings: dict[str, list[cst.CSTNode]],
    counts: dict[str, int],
    imports: ImportTable,
) -> _ReturnPlan | str:
    """The returns that need their value stored first, the starred lengths read, and the returns
    of a name whose literal gains the Nones instead (id of the return -> `grads = (a, b)`); or a
    problem."""
    returns = returns_of(bwd)
    name = bwd.name.value
    if any(ret.value is None for ret in returns.returns):
        return f"bwd `{name}` has a bare `return`"
    ending = falls_off(bwd, imports)
    if ending is not None:
        return ending
    leading = list(slots) == list(range(len(slots)))
    literals = {
        id(ret): literal
        for ret in returns.returns
        if isinstance(ret.value, cst.Name)
        and (literal := _cotangent_literal(ret.value.value, returns, bindings, counts)) is not None
    }
    if trailing_slots(slots, total):
        return [], {}, literals
    temp: list[cst.Return] = []
    known: dict[str, int] = {}
    for ret in returns.returns:
        value = ret.value
        assert value is not None
        branches = literal_branches(value)
        gaps = [_starred_gap(branch, slots, bindings) for branch in branches or ()]
        if branches is not None and all(starred is None for starred, _ in gaps):
            for _, lengths in gaps:
                known.update(lengths)
            continue
        if isinstance(value, (cst.Tuple, cst.List)):
            starred, lengths = _starred_gap(value, slots, bindings)
            known.update(lengths)
            if starred is None:
                continue
            if id(ret) not in returns.standalone:
                return (
                    f"in bwd `{name}`, the starred cotangent `{starred}` stands before a position that needs None, "
                    "and the return shares its line with other code, so its value cannot be stored first"
                )
        elif leading or isinstance(value, cst.Name):
            continue
        elif id(ret) not in returns.standalone:
            # (*f(g)[:k], None, *f(g)[k:]) would evaluate the call twice; no line for a temporary.
            return (
                f"bwd `{name}` returns `{code_of(value)}` on a line shared with other code, "
                "and None is needed between its cotangents"
            )
        temp.append(ret)
    return temp, known, literals


def _cotangent_literal(
    name: str, returns: Returns, bindings: dict[str, list[cst.CSTNode]], counts: dict[str, int]
) -> cst.Assign | None:
    """bwd's `grads = (a, b)` for `return grads`: the one binding of ``name``, in bwd's own
    scope, which nothing but bwd's own `return grads` statements reads. A person puts the Nones
    in that literal rather than slicing the name."""
    assign = literal_binding(name, bindings)
    if assign is None or id(assign) not in returns.assigns:
        return None
    returned = sum(isinstance(r.value, cst.Name) and r.value.value == name for r in returns.returns)
    return assign if counts.get(name, 0) == 1 + returned else None


def symbolic_zeros(defvjp: cst.Call | None) -> str | None:
    """The code of defvjp's `symbolic_zeros` argument unless it is absent or `False`."""
    for index, arg in enumerate(defvjp.args if defvjp is not None else ()):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "symbolic_zeros" or (keyword is None and not arg.star and index == 2):
            if isinstance(arg.value, cst.Name) and arg.value.value == "False":
                return None
            return code_of(arg.value)
    return None
