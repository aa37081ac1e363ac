"""Plan, step 4: the annotations a rewrite retypes: fwd's residual type, bwd's parameters and
its cotangent tuple (`X | None` where a None goes)."""

from __future__ import annotations

import libcst as cst

from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import Layout, OrNone, TupleType, VjpSite
from vjp_migrate.plan.bodies import param_nodes


def _holds_anything(expr: cst.BaseExpression, tuple_value: bool) -> bool:
    """Whether an annotation stays right whatever the new value (a tuple, when ``tuple_value``)."""
    last = (dotted(expr) or "").rsplit(".", 1)[-1]
    return last in ("Any", "object") or (tuple_value and last in ("tuple", "Tuple"))


def _fwd_type_holds(expr: cst.BaseExpression, tuple_residual: bool) -> bool:
    """fwd's return annotation stays right: it allows anything, or any residual (`tuple[Array, Any]`),
    or any tuple when the new residual is one (`tuple[Array, tuple]`, as bwd's `res: tuple` stays)."""
    if _holds_anything(expr, True):
        return True
    if not (isinstance(expr, cst.Subscript) and _holds_anything(expr.value, True) and len(expr.slice) == 2):
        return False
    residual = expr.slice[1].slice
    return isinstance(residual, cst.Index) and _holds_anything(residual.value, tuple_residual)


def retyped(
    site: VjpSite,
    layout: Layout,
    saved_fwd: tuple[str, ...],
    saved_bwd: tuple[str, ...],
    unpack: cst.Assign | None,
    slots: tuple[int, ...],
    returns_lists: bool,
    imports: ImportTable,
) -> tuple[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None], ...]:
    """The annotations the change makes wrong, and what replaces them: the updated type when it
    is known exactly, else nothing (section 3h). ``unpack``: bwd's `a, b = res` (tuple layouts);
    ``returns_lists``: every return of bwd gives a list literal, which stays a list; ``imports``
    tell two spellings of one type apart from two types."""
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    target = unpack.targets[0].target if unpack is not None else None
    width = len(target.elements) if isinstance(target, (cst.Tuple, cst.List)) else None
    fwd, bwd = site.fwd.node, site.bwd.node
    spelling = _tuple_spelling(fwd, bwd)
    edits: list[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None]] = []
    fwd_changes = site.fwd.lambda_node is None and layout is not Layout.UNCHANGED
    tuple_residual = not (layout is Layout.NONE and len(saved_fwd) == 1)  # else the saved argument itself
    if fwd_changes and fwd.returns is not None and not _fwd_type_holds(fwd.returns.annotation, tuple_residual):
        saved = _annotations(fwd, saved_fwd)
        edits.append((fwd, _fwd_type(fwd.returns.annotation, layout, saved, width, spelling, imports)))
    if site.bwd.lambda_node is not None:
        return tuple(edits)
    if (  # it gains None items
        bwd.returns is not None
        and not _holds_anything(bwd.returns.annotation, False)
        and not _admits_none(_variadic_item(bwd.returns.annotation))
        and not _admits_none(_sequence_item(bwd.returns.annotation, returns_lists))
    ):
        edits.append((bwd, _cotangents_type(site, bwd.returns.annotation, slots, returns_lists)))
    params = param_nodes(bwd)
    residual = params[site.bwd.bound_args + len(site.nondiff.positions)]
    if layout is Layout.NONE and len(saved_bwd) == 1:  # the residual is that argument now
        moved = next(p for p in params if p.name.value == saved_bwd[0])
        if moved.annotation is not None or residual.annotation is not None:
            edits.append((residual, moved.annotation))
    elif (
        layout is not Layout.UNCHANGED
        and residual.annotation is not None
        and not _holds_anything(residual.annotation.annotation, True)
    ):
        old = residual.annotation.annotation
        new = _residual_type(old, layout, _annotations(bwd, saved_bwd), width, spelling, imports)
        if new is not old:
            edits.append((residual, new if isinstance(new, TupleType) else None))
    return tuple(edits)


def _tuple_items(expr: cst.BaseExpression) -> tuple[str, list[cst.BaseExpression]] | None:
    """`tuple[A, B]` (`Tuple`, `typing.Tuple`): its spelling and items, when each is one type."""
    if not isinstance(expr, cst.Subscript) or (dotted(expr.value) or "").rsplit(".", 1)[-1] not in ("tuple", "Tuple"):
        return None
    items: list[cst.BaseExpression] = []
    for element in expr.slice:
        index = element.slice
        if not isinstance(index, cst.Index) or index.star is not None or isinstance(index.value, cst.Ellipsis):
            return None
        items.append(index.value)
    return dotted(expr.value) or "tuple", items


def _tuple_spelling(fwd: cst.FunctionDef, bwd: cst.FunctionDef) -> str:
    """How the rules spell a tuple type (`Tuple`, `typing.Tuple`), `tuple` when they do not."""
    for func in (bwd, fwd):
        for node in (func.returns, *(p.annotation for p in param_nodes(func))):
            found = _tuple_items(node.annotation) if node is not None else None
            if found is not None:
                return found[0]
    return "tuple"


def _annotations(func: cst.FunctionDef, names: tuple[str, ...]) -> list[cst.BaseExpression] | None:
    """The annotations of the parameters ``names`` of ``func`` (None: one has none)."""
    found = {p.name.value: p.annotation for p in param_nodes(func)}
    annotations = [found.get(n) for n in names]
    return [a.annotation for a in annotations if a is not None] if all(annotations) else None


def _residual_type(
    old: cst.BaseExpression,
    layout: Layout,
    saved: list[cst.BaseExpression] | None,
    width: int | None,
    spelling: str,
    imports: ImportTable,
) -> cst.BaseExpression | TupleType | None:
    """The residual's new type, from its old type ``old`` and the saved arguments' ``saved``;
    None when it is not known exactly."""
    if saved is None or isinstance(old, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    if layout is Layout.NONE:
        return saved[0] if len(saved) == 1 else TupleType(spelling, tuple(saved))
    if layout in (Layout.TUPLE, Layout.VARIABLE):
        item = _variadic_item(old)
        if item is not None:  # `tuple[A, ...]`: the saved arguments are more items of it
            return _joined_variadic(old, item, saved, imports)
        found = _tuple_items(old)
        if found is None or len(found[1]) != width:
            return None
        assert isinstance(old, cst.Subscript)
        return TupleType(found[0], (*saved, *found[1]), old)
    return TupleType(spelling, (*saved, old))


def _joined_variadic(
    old: cst.BaseExpression, item: cst.BaseExpression, saved: list[cst.BaseExpression], imports: ImportTable
) -> cst.BaseExpression | TupleType | None:
    """`tuple[A, ...]` holding the saved arguments too: `tuple[A | <their types>, ...]`, each
    type once (`Array` and `jax.Array` are one type when the imports say so, spelled as first
    met) and `None` last; ``old`` itself when `A` holds them already (None: a string type, which
    `|` cannot join)."""
    if _holds_anything(item, False):
        return old
    members = [m for t in (item, *saved) for m in _union_members(t)]
    if any(isinstance(m, (cst.SimpleString, cst.ConcatenatedString)) for m in members):
        return None
    distinct: dict[str, cst.BaseExpression] = {}
    for member in members:
        distinct.setdefault(_type_key(member, imports), member)
    if len(distinct) == len({_type_key(m, imports) for m in _union_members(item)}):
        return old
    ordered = sorted(distinct.values(), key=lambda m: isinstance(m, cst.Name) and m.value == "None")
    assert isinstance(old, cst.Subscript)
    ellipsis = old.slice[1].slice
    assert isinstance(ellipsis, cst.Index)
    return TupleType(dotted(old.value) or "tuple", (_union(ordered), ellipsis.value), old)


def _type_key(expr: cst.BaseExpression, imports: ImportTable) -> str:
    """What a type is: its qualified name through the imports, else as written."""
    return imports.qualify(expr) or cst.Module([]).code_for_node(expr)


def _union_members(expr: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The types of `A | B | C` (a type alone: itself)."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr) and not expr.lpar:
        return [*_union_members(expr.left), *_union_members(expr.right)]
    return [expr]


def _union(members: list[cst.BaseExpression]) -> cst.BaseExpression:
    """`A | B | C`, each member as the module writes it."""
    union = members[0]
    for member in members[1:]:
        union = cst.BinaryOperation(union, cst.BitOr(_SPACE, _SPACE), member)
    return union


_SPACE = cst.SimpleWhitespace(" ")


def _fwd_type(
    old: cst.BaseExpression,
    layout: Layout,
    saved: list[cst.BaseExpression] | None,
    width: int | None,
    spelling: str,
    imports: ImportTable,
) -> TupleType | None:
    """fwd's `tuple[Out, R]` with the residual type ``R`` updated (None: not known exactly)."""
    found = _tuple_items(old)
    if found is None or len(found[1]) != 2:
        return None
    out, residual = found[1]
    new = _residual_type(residual, layout, saved, width, spelling, imports)
    assert isinstance(old, cst.Subscript)
    return TupleType(found[0], (out, new), old) if new is not None else None


def _variadic_item(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``X`` of `tuple[X, ...]` (`Tuple`, `typing.Tuple`)."""
    if not isinstance(expr, cst.Subscript) or (dotted(expr.value) or "").rsplit(".", 1)[-1] not in ("tuple", "Tuple"):
        return None
    items = [e.slice for e in expr.slice]
    if len(items) != 2 or not all(isinstance(i, cst.Index) and i.star is None for i in items):
        return None
    first, second = (i.value for i in items if isinstance(i, cst.Index))
    return first if isinstance(second, cst.Ellipsis) and not isinstance(first, cst.Ellipsis) else None


def _admits_none(expr: cst.BaseExpression | None) -> bool:
    """Whether the type ``expr`` holds None already: `None`, `Any`, `object`, `Optional[X]`,
    `X | None`, `Union[X, None]`."""
    if expr is None:
        return False
    if isinstance(expr, cst.Name) and expr.value == "None":
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _admits_none(expr.left) or _admits_none(expr.right)
    if isinstance(expr, cst.Subscript):
        last = (dotted(expr.value) or "").rsplit(".", 1)[-1]
        items = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        return last == "Optional" or (last == "Union" and any(_admits_none(i) for i in items))
    return _holds_anything(expr, False)


def _sequence_item(expr: cst.BaseExpression, returns_lists: bool) -> cst.BaseExpression | None:
    """``X`` of `Sequence[X]` (`Iterable`, `Collection`; `typing.` or `collections.abc.`), which
    any tuple or list of X is, or of `list[X]` (`List`) when bwd returns list literals only."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    last = (dotted(expr.value) or "").rsplit(".", 1)[-1]
    if not isinstance(index, cst.Index) or index.star is not None:
        return None
    if last in _SEQUENCE_TYPES or (returns_lists and last in ("list", "List")):
        return index.value
    return None


_SEQUENCE_TYPES = ("Sequence", "Iterable", "Collection")


def returns_only_lists(returns: list[cst.Return], literals: dict[int, cst.Assign]) -> bool:
    """Every return gives a list literal (`[a, b]`, or a name bound once to one, `grads = [a, b]`)."""
    values = [literals[id(r)].value if id(r) in literals else r.value for r in returns]
    return bool(values) and all(isinstance(v, cst.List) for v in values)


def _cotangents_type(
    site: VjpSite, old: cst.BaseExpression, slots: tuple[int, ...], returns_lists: bool
) -> TupleType | None:
    """bwd's `tuple[X, Y]` with `None` at the new slots, when it lists every old cotangent;
    `tuple[X, ...]` becomes `tuple[X | None, ...]`, `Sequence[X]` `Sequence[X | None]`, and so
    does `list[X]` of a bwd that returns list literals."""
    item = _variadic_item(old)
    if isinstance(item, (cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation)):
        assert isinstance(old, cst.Subscript)
        ellipsis = old.slice[1].slice
        assert isinstance(ellipsis, cst.Index)
        return TupleType(dotted(old.value) or "tuple", (OrNone(item), ellipsis.value), old)
    item = _sequence_item(old, returns_lists)
    if isinstance(item, (cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation)):
        assert isinstance(old, cst.Subscript)
        return TupleType(dotted(old.value) or "Sequence", (OrNone(item),), old)
    found = _tuple_items(old)
    if found is None or not site.nondiff.complete or len(found[1]) != len(site.params) - len(site.nondiff.positions):
        return None
    assert isinstance(old, cst.Subscript)
    items = iter(found[1])
    new = tuple(None if k in slots else next(items) for k in range(len(found[1]) + len(slots)))
    return TupleType(found[0], new, old)
