"""Stage 3: a cheap structural screen with CPython's `ast`, before any LibCST parse.

It answers one question, soundly: *could* the full pipeline report anything in this text with
these settings? ``may_report`` returns False only when it can prove the answer is no; every
doubt keeps the file. It over-approximates the later stages instead of copying them:

- a *site* is any call with a ``nondiff_argnums``/``nondiff_argnames`` keyword whose function,
  or first positional argument, may name ``custom_vjp`` (through any import alias); a call form
  whose primal is surely no def of the module (an attribute, an imported name) is judged by its
  fwd's signature, as sites.py does, and one whose primal may or may not be a def keeps the file;
- an argument *may be an array* when, in the primal, fwd or bwd (or a helper they call, any
  function of that name, followed deeper than classify does), it takes part in arithmetic, an
  element-wise comparison, an array attribute, is passed to a function that may live in an array
  module or positionally to any ``.bind`` (a primitive's operand), has an attribute passed to a
  ``jax.random`` function (a holder of PRNG keys), has an array-like annotation, or a call of
  the site passes an array-module result;
- a rule *may be inconsistent* when a position is past the primal's parameters, any fwd/bwd of
  the right name has the wrong arity, or the bwd of a one-argument primal returns something that
  may be a bare value.

One kind of static evidence is decisive in classify and cheap to prove exactly: a position in a
stacked ``jax.jit``'s ``static_argnums``/``static_argnames``. A Python-number annotation
classify surely sees (in the primal, fwd or bwd) leaves only an array passed at a call site able
to make the argument ARRAY there, so the screen then looks at the calls alone. Codes the screen
does not know keep every file, so new codes stay sound until they are taught here. The word sets below are
supersets of classify's (tests/test_prefilter.py checks that, and runs both over every fixture
and every file of the installed JAX).
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from vjp_migrate.vocabulary import (
    ARRAY_ANNOTATION_NAMES,
    ARRAY_ANNOTATIONS,
    ARRAY_ATTRIBUTES,
    ARRAY_MODULES,
    HOST_ARRAY_ANNOTATIONS,
    JAX_TRANSFORMS,
    METADATA_ATTRIBUTES,
    METADATA_FUNCTIONS,
    PRIMAL_WRAPPERS,
    STATIC_ANNOTATION_NAMES,
    TYPE_TESTS,
    is_metadata_function,
)

if TYPE_CHECKING:  # model imports libcst; the screen runs where LibCST is not loaded yet
    from vjp_migrate.model import Settings

NEEDS_ARRAY = frozenset({"VJP001", "VJP003"})  # reported only for an argument classified ARRAY
NEEDS_UNKNOWN = frozenset({"VJP002"})  # any non-static argument
NEEDS_INCONSISTENCY = frozenset({"VJP004"})
NEEDS_ARRAY_OR_UNKNOWN = NEEDS_ARRAY | NEEDS_UNKNOWN
UNDERSTOOD = NEEDS_ARRAY | NEEDS_UNKNOWN | NEEDS_INCONSISTENCY

NONDIFF_KEYWORDS = frozenset({"nondiff_argnums", "nondiff_argnames"})
ARRAY_TRANSFORMS = frozenset({"jax.vjp", "jax.jvp", "jax.linearize"})  # and any "tree" function
JIT = frozenset({"jax.jit", "jax.api.jit"})
PARTIAL = frozenset({"functools.partial", "jax.partial"})  # jax.partial: old JAX re-exported it
ROOT_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})  # x.T is still x
# Keywords whose value classify always takes as static (a subset of vocabulary.STATIC_KEYWORDS).
STATIC_KEYWORDS = frozenset({"shape", "axis", "axes", "dtype", "precision", "preferred_element_type"})
WRAPPER_NAMES = frozenset(w.rsplit(".", 1)[-1] for w in PRIMAL_WRAPPERS)
FOLLOW_DEPTH = 4  # classify follows helpers three calls deep; following further only keeps more
_BUILTINS = frozenset(dir(builtins))

Func = ast.FunctionDef | ast.AsyncFunctionDef


class _Doubt(Exception):
    """Something the screen cannot judge cheaply: keep the file."""


@dataclass
class _Module:
    tree: ast.Module
    text: str
    aliases: dict[str, set[str]] = field(default_factory=dict)  # every import binding, any scope
    shadowed: set[str] = field(default_factory=set)  # module-level names bound otherwise (a superset)
    surely_shadowed: set[str] = field(default_factory=set)  # exactly imports._module_bindings
    defs: dict[str, list[Func]] = field(default_factory=dict)  # every def, any depth, by name
    calls: list[ast.Call] = field(default_factory=list)
    decorated: dict[int, Func | None] = field(default_factory=dict)  # id(decorator) -> def
    assigned: dict[int, list[str]] = field(default_factory=dict)  # id(value) -> (dotted) name targets
    renamed: list[tuple[str, list[str]]] = field(default_factory=list)  # `a = b`, any scope: ("b", ["a"])
    known_as: dict[int, set[str]] = field(default_factory=dict)  # id(site.call) -> _known_as
    jit_static: dict[int, set[int]] = field(default_factory=dict)  # id(def) -> _jit_static
    caller: dict[int, Func | None] = field(default_factory=dict)  # id(call) -> innermost def
    encoded_lines: list[bytes] | None = None
    bodies: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> every node inside
    own: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> _own_nodes
    nested: dict[int, list[ast.AST]] = field(default_factory=dict)  # id(def) -> scopes left out of own
    top: list[ast.stmt] = field(default_factory=list)  # _toplevel_statements
    top_defs: set[Func] = field(default_factory=set)
    defvjps: list[tuple[ast.Call, ast.expr]] | None = None  # every defvjp call and its owner
    ffi_names: set[str] | None = None  # names bound anywhere to what an `ffi_call(...)` returns
    traced: list[tuple[Func, set[str]]] | None = None  # _may_be_traced_parameters


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


def _nodes(
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
            yield alias.asname or alias.name, f"{base}.{alias.name}" if base else alias.name


_INDEXED = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.Import, ast.ImportFrom})


def _index(tree: ast.Module, text: str) -> _Module:
    m = _Module(tree, text)
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
                assigned[id(node.value)] = [t for t in map(_dotted, node.targets) if t is not None]
                if isinstance(node.value, ast.Name):
                    m.renamed.append((node.value.id, assigned[id(node.value)]))
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
    m.top = _toplevel_statements(tree.body)
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


def _dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        head = _dotted(expr.value)
        return None if head is None else f"{head}.{expr.attr}"
    return None


def _qualified(m: _Module, expr: ast.expr) -> set[str]:
    """Every qualified name the expression may have (any import of its head; shadowing ignored)."""
    text = _dotted(expr)
    if text is None:
        return set()
    head, _, rest = text.partition(".")
    bases = set(m.aliases.get(head, ()))
    if not bases and head in _BUILTINS:
        bases = {f"builtins.{head}"}
    return {f"{base}.{rest}" if rest else base for base in bases}


def _exactly(m: _Module, expr: ast.expr, names: frozenset[str]) -> bool:
    """True only when the expression surely is one of ``names`` the way imports.py resolves it."""
    text = _dotted(expr)
    head = (text or "").partition(".")[0]
    if text is None or head in m.shadowed or len(m.aliases.get(head, ())) != 1:
        return False
    found = _qualified(m, expr)
    return len(found) == 1 and found <= names


def _may_be_custom_vjp(m: _Module, expr: ast.expr) -> bool:
    names = _qualified(m, expr) | {_dotted(expr) or ""}
    return any(n == "custom_vjp" or n.endswith(".custom_vjp") for n in names)


def _may_be_array_function(m: _Module, func: ast.expr) -> bool:
    return any(q.startswith(ARRAY_MODULES) or q in ARRAY_TRANSFORMS or "tree" in q for q in _qualified(m, func))


def _may_make_ffi_function(m: _Module, func: ast.expr) -> bool:
    return any(q.rsplit(".", 1)[-1] == "ffi_call" for q in _qualified(m, func) | {_dotted(func) or ""})


def _may_be_ffi_function(m: _Module, func: ast.expr) -> bool:
    """``func`` may be a function ``jax.ffi.ffi_call(...)`` returns: called in place, or a name
    bound anywhere to such a result (classify: a local bound to it once)."""
    if isinstance(func, ast.Call):
        return _may_make_ffi_function(m, func.func)
    if not isinstance(func, ast.Name):
        return False
    if m.ffi_names is None:
        made = (c for c in m.calls if _may_make_ffi_function(m, c.func))
        m.ffi_names = {name for c in made for name in m.assigned.get(id(c), [])}
    return func.id in m.ffi_names


def _params(func: Func) -> list[ast.arg]:
    return [*func.args.posonlyargs, *func.args.args]


def _int_positions(m: _Module, expr: ast.expr, allow_range: bool = True) -> list[int]:
    """The literal positions, as sites.py reads them; _Doubt for anything else."""
    if isinstance(expr, (ast.Tuple, ast.List)):
        values = [_int_positions(m, e, False) for e in expr.elts]
        return [v for value in values for v in value] if all(len(v) == 1 for v in values) else _doubt()
    if isinstance(expr, ast.Constant) and type(expr.value) is int:
        return [expr.value]
    if (
        allow_range
        and isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "range"
        and "range" not in m.shadowed
        and "range" not in m.aliases
        and not expr.keywords
        and expr.args
    ):
        return list(range(*[_int_positions(m, a, False)[0] for a in expr.args]))
    return _doubt()


def _str_names(m: _Module, expr: ast.expr, nested: bool = False) -> list[str]:
    """The literal names; _Doubt for anything but plain one-piece string literals."""
    if isinstance(expr, (ast.Tuple, ast.List)) and not nested:
        return [name for e in expr.elts for name in _str_names(m, e, True)]
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        source = _segment(m, expr)
        if len(source) >= 2 and source[0] == source[-1] and source[0] in "'\"" and source[1:-1] == expr.value:
            return [expr.value]
    return _doubt()


def _segment(m: _Module, node: ast.expr) -> str:
    """The source of a one-line node (ast columns count UTF-8 bytes)."""
    if node.lineno != node.end_lineno or node.end_col_offset is None:
        return ""
    if m.encoded_lines is None:
        m.encoded_lines = [line.encode("utf-8", "surrogatepass") for line in re.split(r"\r\n|\r|\n", m.text)]
    line = m.encoded_lines[node.lineno - 1] if node.lineno <= len(m.encoded_lines) else b""
    return line[node.col_offset : node.end_col_offset].decode("utf-8", "replace")


def _doubt() -> list:  # type: ignore[type-arg]
    raise _Doubt


@dataclass(frozen=True)
class _Site:
    call: ast.Call
    names: frozenset[str]  # what users call it: the primal's name and any assignment target
    primals: tuple[Func, ...]
    unseen: bool = False  # a call form whose primal is surely no def (sites.py reads fwd's signature)


def _sites(m: _Module) -> Iterator[_Site]:
    for call in m.calls:
        if not call.keywords or not any(k.arg in NONDIFF_KEYWORDS for k in call.keywords):
            continue
        first = call.args[0] if call.args else None
        if not (_may_be_custom_vjp(m, call.func) or (first is not None and _may_be_custom_vjp(m, first))):
            continue
        head = (_dotted(call.func) or "").partition(".")[0]
        if not _may_be_custom_vjp(m, call.func) and head in m.surely_shadowed:
            continue  # `partial = functools.partial`: imports.py does not resolve a shadowed name
        if id(call) in m.decorated:
            func = m.decorated[id(call)]
            if func is not None:
                yield _Site(call, frozenset({func.name}), (func,))
            continue
        # Call forms: custom_vjp(f, nondiff_argnums=...) or partial(custom_vjp, ...)(f).
        outer = next((c for c in m.calls if c.func is call and c.args), None)
        bound = m.assigned.get(id(outer if outer is not None else call), [])
        if not bound or (outer is None and not _may_be_custom_vjp(m, call.func)):
            continue  # sites.py finds call forms only as `name = custom_vjp(...)` or `partial(...)(f)`
        if any("." in name for name in bound):
            raise _Doubt  # `simulate.vjp = custom_vjp(...)`: users call it by the attribute
        target = outer.args[0] if outer is not None else (call.args[0] if call.args else None)
        if isinstance(target, ast.Call) and len(target.args) == 1 and not target.keywords:
            wrapper = _dotted(target.func) or ""  # any spelling sites.py may resolve to PRIMAL_WRAPPERS
            if wrapper.rsplit(".", 1)[-1] in WRAPPER_NAMES:
                target = target.args[0]
        if isinstance(target, ast.Name) and _surely_a_def(m, call, target.id):
            yield _Site(call, frozenset({target.id, *bound}), tuple(m.defs[target.id]))
        elif isinstance(target, ast.Attribute) or (isinstance(target, ast.Name) and target.id not in m.defs):
            yield _Site(call, frozenset(bound), (), unseen=True)  # find_def looks up plain names only
        else:
            raise _Doubt  # sites.py may or may not find a def (a lambda, a call, a def in another scope)


def _surely_a_def(m: _Module, call: ast.Call, name: str) -> bool:
    """sites.find_def surely finds a def of ``name`` from the call's scope: one in the module
    scope, or in the scope of the def around the call (the scopes between are classes)."""
    if any(d in m.top_defs for d in m.defs.get(name, ())):
        return True
    owner = m.caller.get(id(call))
    return owner is not None and any(
        isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == name
        for s in _toplevel_statements(owner.body)
    )


def _positions(m: _Module, site: _Site, primal: Func) -> list[int]:
    params = [p.arg for p in _params(primal)]
    found: set[int] = set()
    for keyword in site.call.keywords:
        if keyword.arg == "nondiff_argnums":
            found.update(_int_positions(m, keyword.value))
        elif keyword.arg == "nondiff_argnames":
            found.update(params.index(n) for n in _str_names(m, keyword.value) if n in params)
    return sorted(found)


def _defvjp_calls(m: _Module, site: _Site) -> Iterator[ast.Call]:
    """The module's ``<site>.defvjp(...)`` and ``getattr(<site>, "defvjp")(...)`` calls (by the
    last part of the owner's name)."""
    if m.defvjps is None:
        m.defvjps = [(c, owner) for c in m.calls if (owner := _defvjp_owner(c.func)) is not None]
    names = _known_as(m, site)
    for call, owner in m.defvjps:
        name = _dotted(owner)
        if name is not None and name.rsplit(".", 1)[-1] in names:
            yield call


def _known_as(m: _Module, site: _Site) -> set[str]:
    """The site's names and every name bound to one of them (``clip = _clip``: sites.py follows a
    module-level alias to its defvjp), in any scope."""
    names = m.known_as.get(id(site.call))
    if names is None:
        names = m.known_as[id(site.call)] = set(site.names)
        grown = True
        while grown:
            before = len(names)
            for value, targets in m.renamed:
                if value in names:
                    names.update(t.rsplit(".", 1)[-1] for t in targets)
            grown = len(names) > before
    return names


def _defvjp_owner(func: ast.expr) -> ast.expr | None:
    if isinstance(func, ast.Attribute):
        return func.value if func.attr == "defvjp" else None
    if (
        isinstance(func, ast.Call)
        and (_dotted(func.func) or "").rsplit(".", 1)[-1] == "getattr"
        and len(func.args) == 2
        and isinstance(func.args[1], ast.Constant)
        and func.args[1].value == "defvjp"
    ):
        return func.args[0]
    return None


def _rules(m: _Module, site: _Site) -> tuple[list[Func | None], list[Func | None]]:
    """Every def that may be the site's fwd and bwd (None when a rule may be unresolved)."""
    fwds: list[Func | None] = []
    bwds: list[Func | None] = []
    for call in _defvjp_calls(m, site):
        for slot, role, out in ((0, "fwd", fwds), (1, "bwd", bwds)):
            given = [k.value for k in call.keywords if k.arg == role]
            expr = given[0] if given else (call.args[slot] if len(call.args) > slot else None)
            if isinstance(expr, ast.Starred):
                expr = expr.value
            if isinstance(expr, (ast.Lambda, ast.Call)):
                raise _Doubt  # a lambda or partial rule: classify reads its body, the screen does not
            name = _dotted(expr) if expr is not None else None
            out.extend(m.defs.get(name.rsplit(".", 1)[-1], []) if name else [])
            out.append(None)
    return fwds or [None], bwds or [None]


def _imports_a_rule(m: _Module, site: _Site) -> bool:
    """A rule bound by an import, not a def: project-wide analysis may find it in another file."""
    for call in _defvjp_calls(m, site):
        for expr in [*call.args, *(k.value for k in call.keywords)]:
            name = _dotted(expr)
            if name is not None and name.split(".")[0] in m.aliases and not m.defs.get(name.rsplit(".", 1)[-1]):
                return True
    return False


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def _own_nodes(m: _Module, func: Func) -> list[ast.AST]:
    """The nodes of a function's body outside nested functions, classes and lambdas (cached)."""
    found = m.own.get(id(func))
    if found is None:
        nested = m.nested[id(func)] = []
        found = m.own[id(func)] = _nodes(func.body, _SCOPES, nested)
    return found


def _own_returns(m: _Module, func: Func) -> Iterator[ast.Return]:
    return (node for node in _own_nodes(m, func) if isinstance(node, ast.Return))


def _may_be_inconsistent(m: _Module, primal: Func, positions: list[int], fwd: Func | None, bwd: Func | None) -> bool:
    varargs = primal.args.vararg is not None
    n_params = len(_params(primal))
    n = len(positions)
    if not varargs and any(i >= n_params for i in positions):
        return True  # "nondiff_argnums lists position 5, but `f` takes 2 positional parameters"
    if bwd is not None and bwd.args.vararg is None and len(_params(bwd)) != n + 2:
        return True
    if fwd is not None and not varargs and fwd.args.vararg is None and len(_params(fwd)) != n_params:
        return True
    if bwd is not None and not varargs and n_params - n == 1:
        cotangent = _params(bwd)[-1].arg if _params(bwd) else ""
        for ret in _own_returns(m, bwd):
            value = ret.value
            number = isinstance(value, ast.Constant) and type(value.value) in (int, float, complex)
            if (
                number
                or isinstance(value, (ast.BinOp, ast.UnaryOp))
                or (isinstance(value, ast.Name) and value.id == cotangent)
            ):
                return True
            if isinstance(value, ast.Call) and _may_be_array_function(m, value.func):
                return True
    return False


def _jit_static(m: _Module, primal: Func) -> set[int]:
    """Positions a stacked jax.jit surely marks static (the evidence classify always finds)."""
    if id(primal) not in m.jit_static:
        m.jit_static[id(primal)] = _find_jit_static(m, primal)
    return m.jit_static[id(primal)]


def _find_jit_static(m: _Module, primal: Func) -> set[int]:
    params = [p.arg for p in _params(primal)]
    static: set[int] = set()
    for keyword in _jit_keywords(m, primal):
        try:
            if keyword.arg == "static_argnums":
                static.update(_int_positions(m, keyword.value, allow_range=False))
            elif keyword.arg == "static_argnames":
                static.update(params.index(n) for n in _str_names(m, keyword.value) if n in params)
        except (_Doubt, IndexError):
            continue
    return static


def _jit_keywords(m: _Module, func: Func) -> Iterator[ast.keyword]:
    """The keywords of ``func``'s stacked ``jax.jit(...)``/``partial(jax.jit, ...)`` decorators."""
    for decorator in func.decorator_list:
        if not isinstance(decorator, ast.Call):
            continue
        first = decorator.args[0] if decorator.args else None
        via_partial = first is not None and _exactly(m, decorator.func, PARTIAL) and _exactly(m, first, JIT)
        if via_partial or _exactly(m, decorator.func, JIT):
            yield from decorator.keywords


def _root(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Subscript) or (isinstance(expr, ast.Attribute) and expr.attr in ROOT_ATTRIBUTES):
        expr = expr.value
    if isinstance(expr, ast.Starred):
        return _root(expr.value)
    return expr


class _ArrayUse:
    """Whether a parameter may be used as array data in a function or the helpers it calls."""

    def __init__(self, m: _Module) -> None:
        self.m = m
        self.memo: dict[tuple[int, str, int], bool] = {}

    def annotated(self, param: ast.arg) -> bool:
        if param.annotation is None:
            return False
        for node in ast.walk(param.annotation):
            if not isinstance(node, (ast.Name, ast.Attribute)) or (name := _dotted(node)) is None:
                continue
            if name.rsplit(".", 1)[-1] in ARRAY_ANNOTATION_NAMES:
                return True
            if _qualified(self.m, node) & (ARRAY_ANNOTATIONS | HOST_ARRAY_ANNOTATIONS):
                return True  # `from jax import Array as JaxArray`
        return False

    def param(self, func: Func, index: int, depth: int = 0) -> bool:
        params = _params(func)
        return 0 <= index < len(params) and self._arg(func, params[index], depth)

    def keyword_only(self, func: Func, name: str, depth: int) -> bool:
        return any(self._arg(func, p, depth) for p in func.args.kwonlyargs if p.arg == name)

    def _arg(self, func: Func, param: ast.arg, depth: int) -> bool:
        key = (id(func), param.arg, depth)  # the depth bounds recursion, so it is in the key
        if key not in self.memo:
            self.memo[key] = self.annotated(param) or self.body(func, param.arg, depth)
        return self.memo[key]

    def body(self, func: Func, name: str, depth: int) -> bool:
        if id(func) not in self.m.bodies:
            self.m.bodies[id(func)] = _own_nodes(self.m, func) + _nodes(self.m.nested[id(func)])
        nodes = self.m.bodies[id(func)]
        names = {name}
        grown = True
        while grown:  # `y = x` makes y stand for x (classify adds such names as it goes), and so
            before = len(names)  # does `xs = (y, x)`, which classify reads as x passed where xs goes
            for node in nodes:
                if isinstance(node, ast.Assign) and (
                    (isinstance(node.value, ast.Name) and node.value.id in names) or self._holds(node.value, names)
                ):
                    names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            grown = len(names) > before
        return any(self._node(node, names, depth) for node in nodes)

    def _rooted(self, expr: ast.expr | None, names: set[str]) -> bool:
        root = _root(expr) if expr is not None else None
        return isinstance(root, ast.Name) and root.id in names

    def _passes_a_field(self, call: ast.Call, names: set[str]) -> bool:
        """An argument of the call reads an attribute of the name (``p.key``, ``p.keys.dropout``)."""
        for value in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(value, ast.Attribute):
                while isinstance(value, ast.Attribute):
                    value = value.value
                if isinstance(value, ast.Name) and value.id in names:
                    return True
        return False

    def _holds(self, expr: ast.expr, names: set[str]) -> bool:
        """A tuple or list literal with the name (or one holding it) among its elements."""
        return isinstance(expr, (ast.Tuple, ast.List)) and any(
            self._rooted(e, names) or self._holds(e, names) for e in expr.elts
        )

    def _node(self, node: ast.AST, names: set[str], depth: int) -> bool:
        rooted = self._rooted
        if isinstance(node, ast.BinOp):
            return rooted(node.left, names) or rooted(node.right, names)
        if isinstance(node, ast.AugAssign):
            return rooted(node.target, names) or rooted(node.value, names)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and rooted(node.operand, names)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            all_is = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
            return not all_is and any(rooted(o, names) for o in operands)
        if isinstance(node, ast.Attribute):
            return node.attr in ARRAY_ATTRIBUTES and rooted(node.value, names)
        if isinstance(node, ast.Call):
            return self._call(node, names, depth)
        return False

    def _call(self, call: ast.Call, names: set[str], depth: int) -> bool:
        if self._passes_a_field(call, names) and any(
            q.startswith("jax.random.") for q in _qualified(self.m, call.func)
        ):
            return True  # `jax.random.uniform(p.key, ...)`: the argument holds PRNG keys (classify)
        passed: list[tuple[int | None, str | None]] = []  # (position, keyword) of each use
        position: int | None = 0
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                position = None
            if self._rooted(arg, names) or self._holds(arg, names):
                passed.append((position, None))
            if position is not None:
                position += 1
        for keyword in call.keywords:
            held = self._rooted(keyword.value, names) or self._holds(keyword.value, names)
            if held and keyword.arg not in STATIC_KEYWORDS:
                passed.append((None, keyword.arg))
        if not passed:
            return False
        if _may_be_array_function(self.m, call.func):
            return True
        bind = isinstance(call.func, ast.Attribute) and call.func.attr == "bind"
        if (bind or _may_be_ffi_function(self.m, call.func)) and any(given is None for _, given in passed):
            return True  # a positional argument of any `.bind` or FFI function may be an operand
        if not isinstance(call.func, ast.Name) or depth >= FOLLOW_DEPTH:
            return False
        for helper in self.m.defs.get(call.func.id, []):
            params = [p.arg for p in _params(helper)]
            for at, given in passed:
                if given is not None and self.keyword_only(helper, given, depth + 1):
                    return True
                if given is not None:
                    targets = [params.index(given)] if given in params else []
                elif at is None:
                    targets = list(range(len(params)))  # after *args: any position
                else:
                    targets = [at] if at < len(params) else []
                if any(self.param(helper, t, depth + 1) for t in targets):
                    return True
        return False


def _call_site_may_pass_array(m: _Module, site: _Site) -> bool:
    names = _known_as(m, site)
    for call in m.calls:
        name = _dotted(call.func)
        if name is None or name.rsplit(".", 1)[-1] not in names:
            continue
        values: Iterable[ast.expr] = [*call.args, *(k.value for k in call.keywords)]
        if any(isinstance(v, ast.Call) and _may_be_array_function(m, v.func) for v in values):
            return True
    return False


def _call_site_may_pass_traced(m: _Module, site: _Site, index: int, name: str) -> bool:
    """classify._traced_parameter: a call passes, for the argument, a parameter a jax.jit of a def
    around it may trace, as it came or in arithmetic (`f(w * 2.0)`)."""
    names = _known_as(m, site)
    for call in m.calls:
        called = _dotted(call.func)
        if called is None or called.rsplit(".", 1)[-1] not in names:
            continue
        value = _call_value(call, index, name)
        if value is None:
            continue
        if m.traced is None:
            m.traced = _may_be_traced_parameters(m)
        traced = {n for func, params in m.traced if _encloses(func, call) for n in params}
        if any(isinstance(leaf, ast.Name) and leaf.id in traced for leaf in _arithmetic_leaves(value)):
            return True
    return False


def _may_be_traced_parameters(m: _Module) -> list[tuple[Func, set[str]]]:
    """Every def a jax.jit may trace (decorated, or passed to a `jax.jit(run, ...)` call), with
    its parameters but those the jit surely marks static, and the locals computed from them."""
    wrapped = _jit_wrapped(m)
    found = []
    for funcs in m.defs.values():
        for func in funcs:
            traced: set[str] = set()
            if func.decorator_list and _may_be_jitted(m, func):
                static = _jit_static(m, func)
                traced |= {p.arg for i, p in enumerate(_params(func)) if i not in static}
                traced |= {p.arg for p in func.args.kwonlyargs} - _static_names(m, func)
            for call in wrapped.get(func.name, ()):
                traced |= _traced_by_call(m, call, func)
            if traced:
                found.append((func, _computed_from(m, func, traced)))
    return found


def _jit_wrapped(m: _Module) -> dict[str, list[ast.Call]]:
    """The `jax.jit(name, ...)` calls of the module, by the name they are given."""
    found: dict[str, list[ast.Call]] = {}
    for call in m.calls:
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and _may_be_jit(m, call.func):
            found.setdefault(first.id, []).append(call)
    return found


def _traced_by_call(m: _Module, call: ast.Call, func: Func) -> set[str]:
    params = [p.arg for p in _params(func)]
    static: set[str] = set()
    for keyword in call.keywords:
        with contextlib.suppress(_Doubt, IndexError):
            if keyword.arg == "static_argnums":
                static.update(params[i] for i in _int_positions(m, keyword.value, allow_range=False))
            elif keyword.arg == "static_argnames":
                static.update(_str_names(m, keyword.value))
    return {*params, *(p.arg for p in func.args.kwonlyargs)} - static


def _computed_from(m: _Module, func: Func, names: set[str]) -> set[str]:
    """``names`` and the names ``func`` binds to arithmetic on them (`s = w * 2.0`), to a fixpoint."""
    if id(func) not in m.bodies:  # nested defs too: a local of one may come from this def's parameter
        m.bodies[id(func)] = _own_nodes(m, func) + _nodes(m.nested[id(func)])
    assigns = [node for node in m.bodies[id(func)] if isinstance(node, ast.Assign)]
    grown = True
    while grown:
        before = len(names)
        for node in assigns:
            if any(isinstance(leaf, ast.Name) and leaf.id in names for leaf in _arithmetic_leaves(node.value)):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        grown = len(names) > before
    return names


def _static_names(m: _Module, func: Func) -> set[str]:
    """The names a stacked jax.jit's literal ``static_argnames`` surely marks static."""
    names: set[str] = set()
    for keyword in _jit_keywords(m, func):
        if keyword.arg == "static_argnames":
            with contextlib.suppress(_Doubt):
                names.update(_str_names(m, keyword.value))
    return names


def _encloses(func: Func, node: ast.expr) -> bool:
    return func.lineno <= node.lineno <= (func.end_lineno or func.lineno)


def _arithmetic_leaves(expr: ast.expr) -> Iterator[ast.expr]:
    if isinstance(expr, ast.BinOp):
        yield from _arithmetic_leaves(expr.left)
        yield from _arithmetic_leaves(expr.right)
    elif isinstance(expr, ast.UnaryOp) and not isinstance(expr.op, ast.Not):
        yield from _arithmetic_leaves(expr.operand)
    else:
        yield expr


def _site_may_report(m: _Module, site: _Site, settings: Settings, uses: _ArrayUse) -> bool:
    fwds, bwds = _rules(m, site)
    if settings.select & NEEDS_ARRAY and _imports_a_rule(m, site):
        return True
    proof = _StaticProof(m, site)
    passes_array: bool | None = None
    for primal in proof.signatures():
        positions = _positions(m, site, primal)
        n_params = len(_params(primal))
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
            if passes_array is None:
                passes_array = _call_site_may_pass_array(m, site)
            if passes_array or _call_site_may_pass_traced(m, site, index, _params(primal)[index].arg):
                return True
            roles = [(primal, index), *((f, index) for f in fwds if f), *((b, order) for b in bwds if b)]
            if any(_may_be_jitted(m, func) for func, _ in roles):
                return True  # classify: an argument a jax.jit traces is a JAX value (unless it marks it static)
            if proof.scalar(primal, index, order):
                continue  # then only an array passed at a call site makes it ARRAY (classify._decide)
            if any(uses.param(func, at) for func, at in roles):
                return True
        if settings.select & NEEDS_INCONSISTENCY and any(
            _may_be_inconsistent(m, primal, positions, f, b) for f in fwds for b in bwds
        ):
            return True
    return False


def _may_be_jitted(m: _Module, func: Func) -> bool:
    """A decorator of ``func`` may be a ``jax.jit`` (``@jax.jit``, ``@partial(jax.jit, ...)``,
    ``@jax.jit(...)``, under any alias)."""
    for decorator in func.decorator_list:
        parts = [decorator]
        if isinstance(decorator, ast.Call):
            parts += [decorator.func, *decorator.args[:1]]
        if any(_may_be_jit(m, part) for part in parts):
            return True
    return False


def _may_be_jit(m: _Module, expr: ast.expr) -> bool:
    return isinstance(expr, (ast.Name, ast.Attribute)) and any(
        q == "jit" or q.endswith(".jit") for q in _qualified(m, expr) | {_dotted(expr) or ""}
    )


class _StaticProof:
    """Static evidence that classify surely finds too (static evidence wins there).

    Every rule here is an under-approximation of classify: only exact, unambiguous cases.
    """

    def __init__(self, m: _Module, site: _Site) -> None:
        self.m = m
        self.site = site
        self.top = m.top_defs
        self.helpers: dict[str, Func] = {}  # classify.module_helpers: direct module-level defs
        counts: dict[str, int] = {}
        for stmt in m.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.helpers[stmt.name] = stmt
                counts[stmt.name] = counts.get(stmt.name, 0) + 1
        self.helpers = {name: f for name, f in self.helpers.items() if counts[name] == 1}
        self.primal = self._exact_primal()
        self.rules = self._rules()
        self.calls: list[tuple[Func, ast.Call]] | None = None
        self.passes_array: bool | None = None  # _call_site_may_pass_array, once asked

    def _single_top_def(self, name: str) -> Func | None:
        found = self.m.defs.get(name, [])
        return found[0] if len(found) == 1 and found[0] in self.top else None

    def _exact_primal(self) -> Func | None:
        """The primal sites.py surely picks: the site is in the module scope and so are all its defs."""
        if id(self.site.call) in self.m.decorated:
            (primal,) = self.site.primals
            return primal if primal in self.top else None
        if not self._assigned_at_top() or not all(p in self.top for p in self.site.primals):
            return None
        ordered = [s for s in self.m.top if s in self.site.primals]
        return ordered[-1] if ordered else None

    def _assigned_at_top(self) -> bool:
        """The call form is the value of one assignment in the module scope."""
        owner = [
            s
            for s in self.m.top
            if isinstance(s, ast.Assign)
            and id(s.value) in self.m.assigned
            and self.site.call in (s.value, getattr(s.value, "func", None))
        ]
        return len(owner) == 1

    def _rules(self) -> tuple[Func | None, Func | None]:
        """fwd and bwd when sites.py surely resolves them to these defs."""
        primal = self.primal
        if self.site.unseen:
            if not self._assigned_at_top():
                return None, None
            owners: frozenset[str] = self.site.names
        elif primal is None:
            return None, None
        else:
            owners = (
                frozenset({primal.name}) if id(self.site.call) in self.m.decorated else self.site.names - {primal.name}
            )
        calls = [
            s.value
            for s in self.m.top
            if isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute)
            and s.value.func.attr == "defvjp"
            and isinstance(s.value.func.value, ast.Name)
            and s.value.func.value.id in owners
        ]
        every = list(_defvjp_calls(self.m, self.site))
        if len(owners) != 1 or len(calls) != 1 or len(every) != 1:
            return None, None
        fwd, bwd = _rule_arg(calls[0], 0, "fwd"), _rule_arg(calls[0], 1, "bwd")
        return (
            self._single_top_def(fwd.id) if isinstance(fwd, ast.Name) else None,
            self._single_top_def(bwd.id) if isinstance(bwd, ast.Name) else None,
        )

    def signatures(self) -> tuple[Func, ...]:
        """The defs whose parameters the site's positions index: the primal, or fwd for an unseen
        primal (sites._signature_from_fwd), which must then be exactly the one sites.py reads."""
        if not self.site.unseen:
            return (self.primal,) if self.primal else self.site.primals
        fwd, bwd = self.rules
        names = any(k.arg == "nondiff_argnames" for k in self.site.call.keywords)
        if fwd is None or bwd is None or fwd.args.vararg is not None or names:
            raise _Doubt  # an unresolved rule, or names the pipeline reports as unreadable
        return (fwd,)

    def scalar(self, primal: Func, index: int, order: int) -> bool:
        """classify surely sees a Python-number annotation (then only an array passed at a call site
        makes the argument ARRAY)."""
        if primal is not self.primal or "annotated" in self.m.text:  # see classify._decide
            return False
        fwd, bwd = self.rules
        for func, at in ((primal, index), (fwd, index), (bwd, order)):
            params = _params(func) if func is not None else []
            if 0 <= at < len(params) and self._scalar_annotation(params[at].annotation):
                return True
        return False

    def _scalar_annotation(self, annotation: ast.expr | None) -> bool:
        parts = [annotation]
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            parts = [annotation.left, annotation.right]
        numbers = [p for p in parts if isinstance(p, ast.Name) and p.id in ("float", "int", "complex")]
        nones = [p for p in parts if isinstance(p, ast.Constant) and p.value is None]
        if not numbers or len(numbers) + len(nones) != len(parts):
            return False
        return not any(p.id in self.m.aliases or p.id in self.m.shadowed for p in numbers)

    def static(self, primal: Func, index: int, order: int) -> bool:
        if not self.site.unseen and (index in _jit_static(self.m, primal) or self._call_site(primal, index)):
            return True  # (fwd stands in for an unseen primal: its jit and calls say nothing)
        fwd, bwd = self.rules if primal is self.primal or self.site.unseen else (None, None)
        roles = [(primal, index), (fwd, index), (bwd, order)]
        return any(func is not None and self._param(func, at, 0) for func, at in roles)

    def _param(self, func: Func, index: int, depth: int) -> bool:
        params = _params(func)
        if not 0 <= index < len(params):
            return False
        param = params[index]
        defaults = [None] * (len(params) - len(func.args.defaults)) + list(func.args.defaults)
        default = defaults[index]
        if isinstance(default, ast.Lambda) or (
            isinstance(default, ast.Constant)
            and type(default.value) in (str, bool)
            and not isinstance(default, ast.JoinedStr)
        ):
            return True
        if param.annotation is not None and self._static_annotation(param.annotation):
            return True
        return self._body(func, param.arg, depth)

    def _static_annotation(self, annotation: ast.expr) -> bool:
        """classify.annotation_evidence surely finds the outermost name static (`bool`, `jnp.dtype`,
        `Callable[...]`, `tuple[int, ...]`), and surely not an array annotation first."""
        outer = annotation.value if isinstance(annotation, ast.Subscript) else annotation
        name = _dotted(outer) if isinstance(outer, (ast.Name, ast.Attribute)) else None
        if name is None:
            return False
        for node in ast.walk(annotation):  # `Sequence[jax.Array]`: no proof, whatever classify reads first
            if not isinstance(node, (ast.Name, ast.Attribute)):
                continue
            inner = _dotted(node)
            if inner is not None and (
                inner.rsplit(".", 1)[-1] in ARRAY_ANNOTATION_NAMES
                or _qualified(self.m, node) & (ARRAY_ANNOTATIONS | HOST_ARRAY_ANNOTATIONS)
            ):
                return False
        last = name.rsplit(".", 1)[-1]
        if last in STATIC_ANNOTATION_NAMES:
            return True
        return last in ("tuple", "Tuple") and "int" in _segment(self.m, annotation)  # classify reads its text

    def _body(self, func: Func, name: str, depth: int) -> bool:
        # Nested functions, classes and lambdas are left out: classify may skip them (when
        # they rebind the name), so the screen does too.
        nodes = _own_nodes(self.m, func)
        if any(isinstance(node, (ast.If, ast.IfExp)) and _type_test_in(self.m, node.test) for node in nodes):
            return False  # classify: a static use on a branch a type test picks proves nothing alone
        for node in nodes:
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and _mentions(self.m, node.test, name):
                return True
            if isinstance(node, ast.Call) and self._call(node, name, depth):
                return True
        return False

    def _call(self, call: ast.Call, name: str, depth: int) -> bool:
        if isinstance(call.func, ast.Name) and call.func.id == name:
            return True  # called as a function
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and first.id == name and _exactly(self.m, call.func, JAX_TRANSFORMS):
            return True  # the function of `jax.vjp(f, ...)`, `jax.vmap(f)`...
        for keyword in call.keywords:
            root = _root(keyword.value)
            if keyword.arg in STATIC_KEYWORDS and isinstance(root, ast.Name) and root.id == name:
                return True
        helper = self.helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if helper is None or depth >= 2:  # classify follows three deep; stay inside that
            return False
        params = [p.arg for p in _params(helper)]
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Name) and arg.id == name and self._param(helper, position, depth + 1):
                return True
        for keyword in call.keywords:
            value = keyword.value
            if isinstance(value, ast.Name) and value.id == name and keyword.arg in params:  # noqa: SIM102
                if self._param(helper, params.index(keyword.arg), depth + 1):
                    return True
        return False

    def _call_site(self, primal: Func, index: int) -> bool:
        """A call of the site passes a parameter its caller's stacked jax.jit marks static, and
        no call may pass an array (classify: one caller's static value proves nothing then)."""
        if self.passes_array is None:
            self.passes_array = _call_site_may_pass_array(self.m, self.site)
        if self.passes_array or _call_site_may_pass_traced(self.m, self.site, index, _params(primal)[index].arg):
            return False
        if self.calls is None:
            names = {primal.name} if id(self.site.call) in self.m.decorated else self.site.names - {primal.name}
            self.calls = []
            for call in self.m.calls:
                caller = self.m.caller[id(call)]
                if caller is not None and isinstance(call.func, ast.Name) and call.func.id in names:
                    self.calls.append((caller, call))
        name = _params(primal)[index].arg
        for caller, call in self.calls:
            caller_params = [p.arg for p in _params(caller)]
            value = _call_value(call, index, name)
            if (
                isinstance(value, ast.Name)
                and value.id in caller_params
                and caller_params.index(value.id) in _jit_static(self.m, caller)
                and not _may_rebind(self.m, caller, value.id)
            ):
                return True
        return False


def _may_rebind(m: _Module, func: Func, name: str) -> bool:
    """Anything in ``func`` (nested scopes too) may bind ``name`` again: then the value passed on
    may be a Tracer made from the jit-static parameter (`scale = scale / jnp.std(x)`)."""
    if id(func) not in m.bodies:
        m.bodies[id(func)] = _own_nodes(m, func) + _nodes(m.nested[id(func)])
    own = {id(p) for p in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    return any(_bound_name(node) == name for node in m.bodies[id(func)] if id(node) not in own)


def _bound_name(node: ast.AST) -> str | None:
    """The name ``node`` binds, if any (a store or del, a def or class, a parameter, an import,
    an ``except ... as``, a match capture)."""
    if isinstance(node, ast.Name):
        return None if isinstance(node.ctx, ast.Load) else node.id
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name
    if isinstance(node, ast.MatchMapping):
        return node.rest
    return None


def _rule_arg(call: ast.Call, index: int, keyword: str) -> ast.expr | None:
    """The rule sites._rule_arg reads (its keyword, else its position); None on any doubt."""
    if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return None
    named = [k.value for k in call.keywords if k.arg == keyword]
    if named:
        return named[0]
    return call.args[index] if index < len(call.args) else None


def _call_value(call: ast.Call, index: int, name: str) -> ast.expr | None:
    for position, arg in enumerate(call.args):
        if isinstance(arg, ast.Starred):
            return None
        if position == index:
            return arg
    if any(k.arg is None for k in call.keywords):
        return None
    return next((k.value for k in call.keywords if k.arg == name), None)


def _mentions(m: _Module, test: ast.expr, name: str) -> bool:
    stack: list[ast.AST] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            continue  # `x is None` is blanked out by classify
        if isinstance(node, ast.Compare) and _key_lookup(node):
            continue  # `"b" in params` reads keys only (classify._key_lookup)
        if isinstance(node, ast.Attribute) and node.attr in METADATA_ATTRIBUTES:
            continue  # `x.shape`: classify skips it when rooted at a name; skipping more only loses proofs
        if isinstance(node, ast.Call) and _may_be_metadata_function(m, node.func):
            continue  # `len(x)`, `jnp.shape(x)`: likewise
        if isinstance(node, ast.Call) and _may_be_type_test(m, node.func):
            continue  # `isinstance(x, list)`: a Tracer answers it too, classify reads no value there
        if isinstance(node, ast.Name) and node.id == name:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _key_lookup(node: ast.Compare) -> bool:
    left = node.left
    string = isinstance(left, ast.JoinedStr) or (isinstance(left, ast.Constant) and isinstance(left.value, str))
    return string and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))


_TYPE_TEST_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in TYPE_TESTS)


def _may_be_type_test(m: _Module, func: ast.expr) -> bool:
    """Whether classify may resolve ``func`` to one of ``vocabulary.TYPE_TESTS``."""
    return (_dotted(func) or "").rsplit(".", 1)[-1] in _TYPE_TEST_NAMES or bool(_qualified(m, func) & TYPE_TESTS)


def _type_test_in(m: _Module, test: ast.expr) -> bool:
    """Whether ``test`` may hold a type test of anything (an alias of the argument too)."""
    return any(isinstance(node, ast.Call) and _may_be_type_test(m, node.func) for node in ast.walk(test))


def _may_be_metadata_function(m: _Module, func: ast.expr) -> bool:
    """Whether classify may resolve ``func`` to ``len`` or a ``jnp``/``np`` metadata function."""
    last = (_dotted(func) or "").rsplit(".", 1)[-1]
    return last == "len" or last in METADATA_FUNCTIONS or any(is_metadata_function(q) for q in _qualified(m, func))


def _toplevel_statements(body: list[ast.stmt], found: list[ast.stmt] | None = None) -> list[ast.stmt]:
    """Statements of the module scope, through if/for/while/with/try (like sites.scope_statements)."""
    found = [] if found is None else found
    for stmt in body:
        found.append(stmt)
        if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try, ast.AsyncFor, ast.AsyncWith)):
            for block in (stmt.body, getattr(stmt, "orelse", []), getattr(stmt, "finalbody", [])):
                _toplevel_statements(block, found)
            for handler in getattr(stmt, "handlers", []):
                _toplevel_statements(handler.body, found)
    return found


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
        m = _index(tree, text)
        uses = _ArrayUse(m)
        return Verdict(any(_site_may_report(m, site, settings, uses) for site in _sites(m)), True)
    except (_Doubt, ValueError, RecursionError, MemoryError):
        return Verdict(True, True)


def may_report(text: str, settings: Settings, tree: ast.AST | None = None) -> bool:
    """False only when no selected code can report anything in ``text`` (which must parse)."""
    return screen(text, settings, tree).may_report
