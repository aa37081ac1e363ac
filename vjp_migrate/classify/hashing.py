"""Classify, step 3b: the module-level values that hash what they are given, and the uses of them
that hash an argument: a function cached through a call (`window = functools.lru_cache(maxsize=None)(_window)`,
`table = cache(_table)`), called with it, and a dict the module binds once (`_BUFFERS = {}`), looked
up with it as the key (`.get(key)`, `.setdefault(key, ...)`, `.pop(key)`, `key in d`, `d[key]`).
A Tracer is unhashable (so is a concrete JAX array): the argument is a static value."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import libcst as cst

from vjp_migrate.classify.module_facts import bound_once
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.vocabulary import CACHING_DECORATORS

_DICT_CALLS = frozenset({"builtins.dict", "collections.defaultdict", "collections.OrderedDict"})
KEYED_METHODS = frozenset({"get", "setdefault", "pop"})  # no array has them
_DICT_LITERALS: dict[type[cst.BaseExpression], str] = {cst.Dict: "a dict literal", cst.DictComp: "a dict comprehension"}


def module_cached(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The names the module binds once, at its top level, to a function a caching decorator wraps
    by a call, each with how that decorator is written: `f = functools.lru_cache(maxsize=None)(g)`,
    `f = lru_cache(g)`, `f = cache(g)` (not `f = lru_cache(maxsize=4)`, a decorator still)."""
    found = {name: how for name, value in top_level_values(module) if (how := cached_by(value, imports))}
    once = bound_once(module, set(found))
    return {name: how for name, how in found.items() if name in once}


def module_dicts(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The names the module binds once, at its top level, to a new dict: a literal or comprehension,
    `dict(...)`, `collections.defaultdict(...)`, `collections.OrderedDict(...)`."""
    return bound_once(module, {name for name, value in top_level_values(module) if new_dict(value, imports)})


def cached_by(value: cst.BaseExpression | None, imports: ImportTable) -> str | None:
    """How the caching decorator is written that ``value`` applies by a call to one function, if it does."""
    if not isinstance(value, cst.Call) or not _wraps(value):
        return None
    decorator = value.func.func if isinstance(value.func, cst.Call) else value.func
    if imports.qualify(decorator) in CACHING_DECORATORS:
        return dotted(decorator) or "functools.lru_cache"
    return None


def new_dict(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """Whether ``value`` makes a new dict (`{}`, a comprehension, `dict()`, `defaultdict(list)`)."""
    return isinstance(value, (cst.Dict, cst.DictComp)) or (
        isinstance(value, cst.Call) and imports.qualify(value.func) in _DICT_CALLS
    )


def _wraps(call: cst.Call) -> bool:
    """Whether ``call`` applies a decorator to one function: `deco(g)` or `deco(...)(g)`."""
    positional = [arg for arg in call.args if arg.keyword is None and not arg.star]
    return len(positional) == 1 and len(call.args) == 1


def top_level_values(module: cst.Module) -> list[tuple[str, cst.BaseExpression]]:
    """Each plain name a module-level assignment binds, with the value: `x = v`, `x: T = v`."""
    return [pair for stmt in module.body for pair in plain_assignments(stmt)]


def plain_assignments(stmt: cst.BaseStatement) -> Iterator[tuple[str, cst.BaseExpression]]:
    """Each plain name a simple statement line binds by an assignment, with the value: `x = v`
    (one target), `x: T = v`."""
    for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
        if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
            yield small.targets[0].target.value, small.value
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
            yield small.target.value, small.value


def hashing_call(
    call: cst.Call, position: int, keyword: str | None, cached: Mapping[str, str], dicts: Mapping[str, str]
) -> str | None:
    """What a call that hashes the value passed at ``position`` (or ``keyword``) does with it: a
    cached function's call, or a dict method's key; None for any other call. ``cached``: the
    cached functions the call sees, each with how its decorator is written; ``dicts``: the dicts it
    sees (`_BUFFERS`, `self._table`), each with how to name it."""
    func = call.func
    if isinstance(func, cst.Name) and func.value in cached:
        how = cached[func.value]
        return f"passed to `{func.value}`, which `{how}` caches by its arguments (a Tracer is unhashable)"
    if (
        isinstance(func, cst.Attribute)
        and (owner := dotted(func.value) or "") in dicts
        and func.attr.value in KEYED_METHODS
        and position == 0
        and keyword is None
    ):
        return _keyed(dicts[owner], f"`.{func.attr.value}`")
    return None


def hashing_membership(node: cst.Comparison, dicts: Mapping[str, str]) -> tuple[cst.BaseExpression, str] | None:
    """The key ``node`` looks up in a dict (`key in _BUFFERS`, `key not in self._table`), with how to say so."""
    if len(node.comparisons) != 1 or not isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn)):
        return None
    owner = dotted(node.comparisons[0].comparator) or ""
    return (node.left, _keyed(dicts[owner], "`in`")) if owner in dicts else None


def hashing_subscript(node: cst.Subscript, dicts: Mapping[str, str]) -> tuple[cst.BaseExpression, str] | None:
    """The key ``node`` reads a dict with (`_BUFFERS[key]`, `{1: a, 2: b}[order]`), with how to say so."""
    literal = _DICT_LITERALS.get(type(node.value))
    described = literal or dicts.get(dotted(node.value) or "")
    if described is None or len(node.slice) != 1:
        return None
    index = node.slice[0].slice
    return (index.value, _keyed(described, "a subscript")) if isinstance(index, cst.Index) else None


def module_dict_text(name: str) -> str:
    return f"the module-level dict `{name}`"


def _keyed(described: str, how: str) -> str:
    return f"used as a key of {described} ({how}), which hashes it (a Tracer is unhashable)"
