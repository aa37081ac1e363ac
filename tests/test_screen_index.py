"""The screen's own walk over the ast equals a walk with ``ast.iter_child_nodes``.

The screen indexes a module in one pass of its own (no generators, the enclosing def tracked
by a marker on the stack, fields that never hold a node skipped). Here that index, and the
nodes of every def's body, are rebuilt the plain way and compared over every fixture, every
file of the installed JAX and edge cases of the grammar.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import jax
from conftest import FIXTURES, read_exact

from vjp_migrate.screen import tree as screen_tree
from vjp_migrate.screen.array_use import ArrayUse

# Nodes the screen's walk leaves out: context and operator singletons, read through their parent.
LEAVES = (ast.expr_context, ast.operator, ast.boolop, ast.unaryop, ast.cmpop)
DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)

EDGE_CASES = textwrap.dedent(
    """
    import a.b.c, d as e
    from . import f
    from ..g import h as i
    from ..j import *
    global_name: int = 1

    @decorate(lambda q=call_in_default(): q)
    class C(Base, metaclass=Meta, key=make()):
        attribute = value()

        @staticmethod
        def method(x, /, y=default(), *args, z: ann() = None, **kwargs) -> ret():
            global global_name
            nonlocal_holder = 1

            def inner():
                nonlocal nonlocal_holder
                return [call(v) for v in range(3) if cond(v)]

            async def coroutine():
                async with ctx() as c, other():
                    async for item in stream():
                        await c.send(item)
                return {**spread(), "k": value()}

            return inner, coroutine

    def matcher(subject):
        match subject:
            case Point(x=0, y=yy) if guard(yy):
                return f"{yy!r:>{width()}}"
            case [first, *rest] | {"key": first, **rest}:
                return first
            case str() as text:
                return text
            case _:
                pass
        try:
            raise Error() from cause()
        except ValueError as error:
            del error
        finally:
            assert check(), message()
        with open(path()) as handle:
            (w := walrus()) + -w < w not in {w} <= w
        x = y = not (a and b or c)
        x += 1
        x[1:2:3], *star = yield (yield from gen())
    """
)
# Grammar newer than the oldest Python the project supports, added where this Python parses it.
EDGE_CASES_311 = textwrap.dedent(
    """
    def grouped():
        try:
            raise Error() from cause()
        except* ValueError as group:
            del group
    """
)
EDGE_CASES_312 = textwrap.dedent(
    """
    type Alias[T: bound(), *Ts, **P] = Callable[P, tuple[T, *Ts]]

    class Generic[T = default_type()](Base[T]):
        def method[U](self, x: T, y: U = make()) -> U:
            return call(x, y)

    def generic[V: (int, float)](value: V) -> V:
        return wrap(value)
    """
)
if sys.version_info >= (3, 11):
    EDGE_CASES += EDGE_CASES_311
if sys.version_info >= (3, 13):  # type parameter defaults (PEP 696) came in 3.13
    EDGE_CASES += EDGE_CASES_312
elif sys.version_info >= (3, 12):
    EDGE_CASES += EDGE_CASES_312.replace(" = default_type()", "")


def _jax_files() -> Iterator[tuple[str, str]]:
    root = Path(jax.__file__).parent
    for path in sorted(root.rglob("*.py")):
        yield f"jax/{path.relative_to(root)}", path.read_text(encoding="utf-8")


def _trees() -> Iterator[tuple[str, ast.Module, str]]:
    texts = [("edge cases", EDGE_CASES)]
    texts += [(f"{p.parent.name}/{p.name}", read_exact(p)) for p in sorted(FIXTURES.glob("*/*.py"))]
    for name, text in [*texts, *_jax_files()]:
        try:
            yield name, ast.parse(text), text
        except SyntaxError:  # a fixture of a syntax error: nothing to walk
            continue


def _plain_nodes(roots: list[ast.AST], stop: tuple[type, ...] = ()) -> Counter[int]:
    found: Counter[int] = Counter()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if not isinstance(node, stop):
            if not isinstance(node, LEAVES):
                found[id(node)] += 1
            stack.extend(ast.iter_child_nodes(node))
    return found


def _plain_index(tree: ast.Module) -> dict[str, object]:
    calls: dict[int, int | None] = {}  # id(call) -> id(innermost def around it)
    defs: dict[str, set[int]] = {}
    decorated: dict[int, int | None] = {}
    assigned: dict[int, list[str]] = {}
    aliases: dict[str, set[str]] = {}
    stack: list[tuple[ast.AST, ast.AST | None]] = [(tree, None)]
    while stack:
        node, owner = stack.pop()
        inner = node if isinstance(node, DEFS) else owner
        stack.extend((child, inner) for child in ast.iter_child_nodes(node))
        if isinstance(node, ast.Call):
            calls[id(node)] = None if owner is None else id(owner)
        elif isinstance(node, DEFS):
            defs.setdefault(node.name, set()).add(id(node))
            decorated.update((id(d), id(node)) for d in node.decorator_list)
        elif isinstance(node, ast.ClassDef):
            decorated.update((id(d), None) for d in node.decorator_list)
        elif isinstance(node, ast.Assign):
            assigned[id(node.value)] = [t for t in map(screen_tree.dotted, node.targets) if t is not None]
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            named = screen_tree.dotted(node.target)
            if named is not None:
                assigned[id(node.value)] = [named]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for local, bound in screen_tree.import_bindings(node):
                aliases.setdefault(local, set()).add(bound)
    return {"calls": calls, "defs": defs, "decorated": decorated, "assigned": assigned, "aliases": aliases}


def _screen_index(tree: ast.Module, text: str) -> dict[str, object]:
    m = screen_tree.index_module(tree, text)
    assert len(m.calls) == len({id(c) for c in m.calls}), "a call indexed twice"
    return {
        "calls": {id(c): None if m.caller[id(c)] is None else id(m.caller[id(c)]) for c in m.calls},
        "defs": {name: {id(d) for d in found} for name, found in m.defs.items()},
        "decorated": {key: None if func is None else id(func) for key, func in m.decorated.items()},
        "assigned": m.assigned,
        "aliases": m.aliases,
    }


def test_the_edge_cases_have_what_they_are_for() -> None:
    tree = ast.parse(EDGE_CASES)
    kinds = {type(node) for node in ast.walk(tree)}
    assert {ast.Match, ast.MatchClass, ast.MatchStar, ast.MatchMapping, ast.Global, ast.Nonlocal} <= kinds
    if sys.version_info >= (3, 11):
        assert ast.TryStar in kinds
    if sys.version_info >= (3, 12):
        assert {ast.TypeAlias, ast.TypeVar, ast.TypeVarTuple, ast.ParamSpec} <= kinds
    assert {ast.AsyncFunctionDef, ast.AsyncWith, ast.AsyncFor, ast.Lambda, ast.NamedExpr, ast.FormattedValue} <= kinds


def test_the_screen_walks_equal_plain_walks() -> None:
    """One parse of each file serves the three comparisons (all of JAX takes seconds to parse)."""
    walked = 0
    for name, tree, text in _trees():
        _check_walk(name, tree)
        _check_index(name, tree, text)
        _check_bodies(name, tree, text)
        walked += 1
    assert walked > 500


def _check_walk(name: str, tree: ast.Module) -> None:
    """Every node but contexts and operators."""
    assert Counter(id(n) for n in screen_tree.walk_nodes([tree])) == _plain_nodes([tree]), name


def _check_index(name: str, tree: ast.Module, text: str) -> None:
    assert _screen_index(tree, text) == _plain_index(tree), name


def _check_bodies(name: str, tree: ast.Module, text: str) -> None:
    m = screen_tree.index_module(tree, text)
    uses = ArrayUse(m)
    for func in (f for found in m.defs.values() for f in found):
        own = Counter(id(n) for n in screen_tree.own_nodes(m, func))
        assert own == _plain_nodes(list(func.body), screen_tree.SCOPES), f"{name}: {func.name}"
        uses.body(func, "x", 0)
        every = Counter(id(n) for n in m.bodies[id(func)])
        assert every == _plain_nodes(list(func.body)), f"{name}: {func.name}"
