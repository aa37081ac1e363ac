"""Screen, step 1: the module's `ast`, indexed in one walk (defs, calls, imports, decorators,
assignments), and the walks the later screen steps make over it."""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from vjp_migrate.vocabulary import imported_name

Func = ast.FunctionDef | ast.AsyncFunctionDef


class Doubt(Exception):
    """Something the screen cannot judge cheaply: keep the file."""


@dataclass
class Module:
    tree: ast.Module
    text: str
    aliases: dict[str, set[str]] = field(default_factory=dict)  # every import binding, any scope
    shadowed: set[str] = field(default_factory=set)  # module-level names bound otherwise (a superset)
    surely_shadowed: set[str] = field(default_factory=set)  # exactly imports._module_bindings
    defs: dict[str, list[Func]] = field(default_factory=dict)  # every def, any depth, by name
    calls: list[ast.Call] = field(default_factory=list)
    decorated: dict[int, Func | None] = field(default_factory=dict)  # id(decorator) -> def
    assigned: dict[int, list[str]] = field(default_factory=dict)  # id(value) -> (dotted) targets, `:=` too
    renamed: list[tuple[str, list[str]]] = field(default_factory=list)  # `a = b`, any scope: ("b", ["a"])
    known_as: dict[int, set[str]] = field(default_factory=dict)  # id(site.call) -> known_as
    site_calls: dict[int, list[ast.Call]] = field(default_factory=dict)  # id(site.call) -> array_use._site_calls
    jit_static: dict[int, set[int]] = field(default_factory=dict)  # id(def) -> jit_static
    caller: dict[int, Func | None] = field(default_factory=dict)  # id(call) -> innermost def
    encoded_lines: list[bytes] | None = None
    bodies: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> every node inside
    own: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> own_nodes
    nested: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> scopes left out of own
    top: list[ast.stmt] = field(default_factory=list)  # toplevel_statements
    top_defs: set[Func] = field(default_factory=set)
    defvjps: list[tuple[ast.Call, ast.expr]] | None = None  # every defvjp call and its owner
    ffi_names: set[str] | None = None  # names bound anywhere to what an `ffi_call(...)` returns
    arrays: set[str] | None = None  # names the module scope binds to what may be an array function's call
    traced: list[tuple[Func, set[str]]] | None = None  # _may_be_traced_parameters
    runs: dict[str, list[Func]] = field(default_factory=dict)  # array_use.may_run, by name
    bound_calls: dict[str, list[ast.Call]] | None = None  # calls_bound_to, by name


# Fields that never hold a node the screen looks at: identifiers, numbers and strings, and the
# context and operator singletons (read through their parent's field, never walked to). Not
# "name": it is an expression in 3.12's `type X = ...`.
_LEAF_FIELDS = frozenset(
    {"ctx", "op", "ops", "id", "attr", "arg", "asname", "module", "level", "kind", "conversion"}
    | {"is_async", "simple", "tag", "rest", "kwd_attrs", "type_comment", "lineno"}
)


class _ChildFields(dict[type, tuple[str, ...]]):
    def __missing__(self, cls: type) -> tuple[str, ...]:
        found = self[cls] = tuple(f for f in getattr(cls, "_fields", ()) if f not in _LEAF_FIELDS)
        return found


_CHILD_FIELDS = _ChildFields()


class _Leave:
    """Marks, on the walk's stack, where a def's subtree ends (its owner is restored there)."""

    __slots__ = ("owner",)

    def __init__(self, owner: Func | None) -> None:
        self.owner = owner


def walk_nodes(
    roots: Iterable[ast.AST], stop: tuple[type, ...] = (), stopped: list[ast.AST] | None = None
) -> list[ast.AST]:
    """Every node below and including ``roots`` (any order), without leaf-field nodes and
    without ``stop`` nodes and their subtrees, which go to ``stopped`` (``ast.walk`` is about
    twice as slow)."""
    found: list[ast.AST] = []
    stack = list(roots)
    pop, push, keep, fields, node_type = stack.pop, stack.append, found.append, _CHILD_FIELDS, ast.AST
    while stack:
        node = pop()
        if isinstance(node, stop):
            if stopped is not None:
                stopped.append(node)
            continue
        keep(node)
        for name in fields[type(node)]:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        push(item)
            elif isinstance(value, node_type):
                push(value)
    return found


def import_bindings(node: ast.Import | ast.ImportFrom) -> Iterator[tuple[str, str]]:
    """(local name, what it names) for each name an import binds (``import a.b`` binds ``a``)."""
    if isinstance(node, ast.Import):
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            yield local, alias.name if alias.asname else local
        return
    base = "." * node.level + (node.module or "")
    for alias in node.names:
        if alias.name != "*":
            yield alias.asname or alias.name, imported_name(base, alias.name)


_INDEXED = frozenset(
    {ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.NamedExpr}
    | {ast.Import, ast.ImportFrom}
)


def index_module(tree: ast.Module, text: str) -> Module:
    m = Module(tree, text)
    calls, caller, defs, decorated, assigned, aliases = m.calls, m.caller, m.defs, m.decorated, m.assigned, m.aliases
    owner: Func | None = None  # the innermost def around the node being visited
    stack: list[ast.AST | _Leave] = [tree]
    pop, push, fields, node_type, call_type = stack.pop, stack.append, _CHILD_FIELDS, ast.AST, ast.Call
    while stack:
        node = pop()
        kind = type(node)
        if kind is call_type:
            calls.append(node)  # type: ignore[arg-type]
            caller[id(node)] = owner
        elif kind in _INDEXED:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                defs.setdefault(node.name, []).append(node)
                for decorator in node.decorator_list:
                    decorated[id(decorator)] = node
                push(_Leave(owner))  # popped after every node of the def (the stack is last in, first out)
                owner = node
            elif isinstance(node, ast.ClassDef):
                for decorator in node.decorator_list:
                    decorated[id(decorator)] = None
            elif isinstance(node, ast.Assign):
                assigned[id(node.value)] = [t for t in map(dotted, node.targets) if t is not None]
                if isinstance(node.value, ast.Name):
                    m.renamed.append((node.value.id, assigned[id(node.value)]))
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)):  # `fn: Callable = make()`, `(fn := make())`
                named = dotted(node.target)
                if node.value is not None and named is not None:
                    assigned[id(node.value)] = [named]
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for local, bound in import_bindings(node):
                    aliases.setdefault(local, set()).add(bound)
        elif isinstance(node, _Leave):
            owner = node.owner
            continue
        for name in fields[kind]:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_type):
                        push(item)
            elif isinstance(value, node_type):
                push(value)
    m.top = toplevel_statements(tree.body)
    m.top_defs = {s for s in m.top if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for stmt in tree.body:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                m.surely_shadowed.update(_target_names(target))
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            m.surely_shadowed.add(stmt.name)
            m.shadowed.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            for target in stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]:
                m.shadowed.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return m


def _target_names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _target_names(element.value if isinstance(element, ast.Starred) else element)


def calls_bound_to(m: Module, name: str) -> list[ast.Call]:
    """The calls whose value an assignment anywhere binds to ``name`` (`fn = make()`)."""
    if m.bound_calls is None:
        m.bound_calls = {}
        for call in m.calls:
            for target in m.assigned.get(id(call), ()):
                m.bound_calls.setdefault(target, []).append(call)
    return m.bound_calls.get(name, [])


def dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = dotted(expr.value)
        return None if head is None else f"{head}.{expr.attr}"
    return None


GROWING_METHODS = frozenset({"append", "insert", "extend"})  # what classify reads as growing a local list


def grown_list(node: ast.AST) -> tuple[ast.Name, list[ast.expr]] | None:
    """For `ws.append(w)`, `ws.insert(0, w)`, `ws.extend([w])` on a plain name: the name and
    the values given."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in GROWING_METHODS
        and isinstance(node.func.value, ast.Name)
    ):
        return node.func.value, [*node.args, *(k.value for k in node.keywords)]
    return None


SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(m: Module, func: Func) -> list[ast.AST]:
    """The nodes of a function's body outside nested functions, classes and lambdas (cached)."""
    found = m.own.get(id(func))
    if found is None:
        nested = m.nested[id(func)] = []
        found = m.own[id(func)] = walk_nodes(func.body, SCOPES, nested)
    return found


def body_nodes(m: Module, func: Func) -> list[ast.AST]:
    """Every node inside a function, nested defs, classes and lambdas too (cached)."""
    found = m.bodies.get(id(func))
    if found is None:
        found = m.bodies[id(func)] = own_nodes(m, func) + walk_nodes(m.nested[id(func)])
    return found


def own_returns(m: Module, func: Func) -> Iterator[ast.Return]:
    return (node for node in own_nodes(m, func) if isinstance(node, ast.Return))


def toplevel_statements(body: list[ast.stmt], found: list[ast.stmt] | None = None) -> list[ast.stmt]:
    """Statements of the module scope, through if/for/while/with/try (like sites.scope_statements)."""
    found = [] if found is None else found
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
                toplevel_statements(block, found)
            for handler in getattr(stmt, "handlers", []):
                toplevel_statements(handler.body, found)
    return found
