"""walk.Index stands in for LibCST's PositionProvider and for CSTVisitor passes: prove it agrees.

Over every fixture, some hand-written edge cases and a slice of the installed JAX: every node's
position equals PositionProvider's, and a replayed visitor sees exactly the calls (node, order,
skipped subtrees, leaves) that ``node.visit`` makes.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import jax
import libcst as cst
import pytest
from conftest import FIXTURES, read_exact
from libcst._nodes.expression import _BaseParenthesizedNode as PARENTHESIZED
from libcst.metadata import MetadataWrapper, PositionProvider

from vjp_migrate import walk
from vjp_migrate.model import RewritePlan

EDGE_CASES = [
    "x = 1",  # no trailing newline
    "x = 1\r\ny = (2,\r\n     3)\r\n",
    "if a:\n    pass\nelif b:\n    pass\nelse:\n    pass\n",
    "try:\n    pass\nexcept E as e:\n    pass\nelse:\n    pass\nfinally:\n    pass\n",
    "from a import (b,\n    c as d,\n)\nimport e.f as g\n",
    "@dec\n# comment\n@other(1,\n  2)\nasync def f(x: int = 'é', *, y) -> None:\n    '''doc'''\n    return x\n",
    "class C(B, metaclass=M):\n    def m(self, a, /, b):\n        return [a for a in b if a]\n",
    "def f(x): return x; y = 2\n",
    "s = '''a\nb''' + f'{x!r:>{w}}'\n",
    "match p:\n    case [1, *rest] if rest:\n        pass\n    case {'k': v, **kw}:\n        pass\n",
    "with open(a) as b, c:\n    del b[0], c\nlambda x, *a, **k: (yield)\n",
    "\n\n# header\n\ndef g():\n    global q\n    q = [*a, *b]\n\n# footer\n",
    "x = a if b else c\nwhile x:\n    x -= 1\nelse:\n    raise E from F\n",
    "def f(\n    a,\n    b,\n):\n    return a \\\n        + b\n",
    "# top\n@partial(  # why\n    # what\n    jax.custom_vjp, nondiff_argnums=(1,),  # which\n)\ndef f(x): ...  # end\n",
]


def _corpus() -> list[tuple[str, str]]:
    texts = [(f"edge{i}", text) for i, text in enumerate(EDGE_CASES)]
    texts += [(str(p), read_exact(p)) for p in sorted(FIXTURES.glob("*/*.py"))]
    root = Path(jax.__file__).parent
    texts += [(str(p), p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.py"))[::25]]
    return texts


CORPUS = _corpus()


class _Recording(cst.CSTVisitor):
    """Logs what it is called with; skips some subtrees like the analysis visitors do."""

    def __init__(self) -> None:
        self.log: list[tuple[str, int]] = []

    def visit_Name(self, node: cst.Name) -> None:
        self.log.append(("Name", id(node)))

    def visit_Call(self, node: cst.Call) -> None:
        self.log.append(("Call", id(node)))

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.log.append(("FunctionDef", id(node)))
        return len(node.params.params) != 1  # skip one-parameter functions

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.log.append(("/FunctionDef", id(original_node)))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.log.append(("Lambda", id(node)))
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.log.append(("Attribute", id(node)))

    def leave_Attribute(self, original_node: cst.Attribute) -> None:
        self.log.append(("/Attribute", id(original_node)))

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        self.log.append(("Comparison", id(node)))
        return not all(isinstance(c.operator, cst.Is) for c in node.comparisons)


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.comments: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.comments.append(node)


@pytest.mark.parametrize(("name", "text"), CORPUS, ids=[name for name, _ in CORPUS])
def test_positions_and_replays_match_libcst(name: str, text: str) -> None:
    module = cst.parse_module(text)
    index = walk.Index(module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    checked = 0
    for node, where in positions.items():
        if isinstance(node, walk.record.UNRECORDED):
            continue
        start, end = where.start, where.end
        assert index.line(node) == start.line, (name, node)
        assert index.span(node) == (start.line, start.column + 1, end.line, end.column + 1), (name, node)
        checked += 1
    assert checked > 0
    for node in positions:
        expected = [c for c in node.children if not isinstance(c, walk.record.UNRECORDED)]
        assert walk.fields.children(node) == expected, (name, node)
    for root in [module, *module.body]:
        found = _Comments()
        root.visit(found)
        assert walk.comments(root) == found.comments, name
    assert index.code(module)[0] == text
    if module.body:  # statements generated again where they are not the indexed ones
        copies = [
            cst.parse_statement(module.code_for_node(stmt)) if k % 2 else stmt for k, stmt in enumerate(module.body)
        ]
        changed = module.with_changes(body=copies)
        assert index.code(changed)[0] == changed.code, name
        fewer = module.with_changes(body=module.body[1:])
        assert index.code(fewer)[0] == fewer.code, name
    roots: list[cst.CSTNode] = [module, *module.body]
    for root in roots:
        direct, replayed = _Recording(), _Recording()
        root.visit(direct)
        index.visit(root, replayed)
        assert replayed.log == direct.log, name


@pytest.mark.parametrize(("name", "text"), CORPUS, ids=[name for name, _ in CORPUS])
def test_plain_parentheses_generate_what_libcst_does(name: str, text: str) -> None:
    module = cst.parse_module(text)
    own = PARENTHESIZED.__dict__["_parenthesize"]
    with walk.plain_parentheses():
        with walk.plain_parentheses():  # nested: the outer block restores
            inner = module.code
        assert PARENTHESIZED.__dict__["_parenthesize"] is not own
        outer = [module.code_for_node(stmt) for stmt in module.body]
    assert PARENTHESIZED.__dict__["_parenthesize"] is own
    assert inner == text == module.code, name
    assert outer == [module.code_for_node(stmt) for stmt in module.body], name


def test_plain_parentheses_restore_libcst_after_an_error() -> None:
    own = PARENTHESIZED.__dict__["_parenthesize"]
    with pytest.raises(RecursionError), walk.plain_parentheses():
        raise RecursionError
    assert PARENTHESIZED.__dict__["_parenthesize"] is own


def test_visit_falls_back_outside_the_index_and_for_special_visitors() -> None:
    module = cst.parse_module("def f(a, b):\n    return a + b\n")
    other = cst.parse_module("g(x)\n")
    index = walk.Index(module)

    class Attributes(cst.CSTVisitor):
        def __init__(self) -> None:
            self.seen = 0

        def visit_Call_func(self, node: cst.Call) -> None:
            self.seen += 1

    visitor = Attributes()
    index.visit(other, visitor)  # not in this module: LibCST walks it
    assert walk.index_of(module) is walk.index_of(module)
    walk.visit(other.body[0], visitor)
    assert visitor.seen == 2
    assert walk.replay.replayable(Attributes) is None
    assert walk.replay.replayable(_Recording) is not None
    assert index.line(other.body[0]) is None


def _slow_walks(monkeypatch: pytest.MonkeyPatch) -> list[cst.CSTNode]:
    """The nodes ``walk.visit`` walks node by node (not covered by any index), as they come."""
    walks: list[cst.CSTNode] = []
    slow = walk.current._mixed
    monkeypatch.setattr(
        walk.current,
        "_mixed",
        lambda index, table, visitor, node: walks.append(node) or slow(index, table, visitor, node),
    )
    return walks


def test_visit_replays_over_a_covered_module_until_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    # Phase 2 walks helpers of other modules: `cover` lets those walks be replays too.
    current = cst.parse_module("def f(a, b):\n    return a + b\n")
    other = cst.parse_module("def helper(x, y):\n    return g(x.shape, lambda z: z)(y)\n")
    walk.forget()
    walk.index_of(current)
    helper = other.body[0]
    direct = _Recording()
    helper.visit(direct)
    walks = _slow_walks(monkeypatch)
    walk.cover(other)
    replayed = _Recording()
    walk.visit(helper, replayed)
    assert replayed.log == direct.log and not walks
    assert walk.index_of(other).covers(helper)  # its index is the one cover built
    walk.forget()
    walk.index_of(current)
    again = _Recording()
    walk.visit(helper, again)
    assert again.log == direct.log and walks[0] is helper  # forgotten: walked node by node
    walk.forget()


def test_visit_replays_over_one_covered_def_of_another_module(monkeypatch: pytest.MonkeyPatch) -> None:
    """A helper imported from another module is covered alone: its walks are replays, the rest
    of its module is not indexed, and a def inside a module covered whole is not indexed again."""
    current = cst.parse_module("def f(a, b):\n    return a + b\n")
    other = cst.parse_module(
        "def helper(x, y):\n    return g(x.shape, lambda z: z)(y)\n\n\ndef unused(q):\n    return [q for _ in q]\n"
    )
    helper, unused = other.body[0], other.body[1]
    walks = _slow_walks(monkeypatch)
    walk.forget()
    walk.index_of(current)
    walk.cover(current.body[0])  # a def of the module analysed: nothing to do
    assert walk.current._OTHERS == {}
    walk.cover(helper)
    (index,) = walk.current._OTHERS.values()
    assert index.covers(helper) and not index.covers(unused) and not index.covers(other)
    for node in (helper, helper.body):
        direct, replayed = _Recording(), _Recording()
        node.visit(direct)
        walk.visit(node, replayed)
        assert replayed.log == direct.log and direct.log
    assert not walks
    walk.cover(other)
    walk.cover(unused)  # in a module covered whole
    assert [i.module for i in walk.current._OTHERS.values()] == [index.module, other]
    walk.forget()


def test_covered_modules_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(walk.current, "_MAX_OTHERS", 2)
    walk.forget()
    modules = [cst.parse_module(f"def h{k}(x):\n    return x\n") for k in range(3)]
    for module in modules:
        walk.cover(module)
    walk.cover(modules[1])  # used again: the most recent
    walk.cover(modules[2])
    assert [index.module for index in walk.current._OTHERS.values()] == [modules[1], modules[2]]
    walk.forget()


def test_replayed_visitor_state_changes_apply_in_order() -> None:
    code = textwrap.dedent(
        """\
        def f(x):
            y = x
            return y * 2
        """
    )
    module = cst.parse_module(code)
    index = walk.Index(module)

    class Aliases(cst.CSTVisitor):
        def __init__(self) -> None:
            self.names = {"x"}
            self.used: list[str] = []

        def visit_Assign(self, node: cst.Assign) -> None:
            if isinstance(node.value, cst.Name) and node.value.value in self.names:
                self.names.update(t.target.value for t in node.targets if isinstance(t.target, cst.Name))

        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            if isinstance(node.left, cst.Name) and node.left.value in self.names:
                self.used.append(node.left.value)

    visitor = Aliases()
    index.visit(module, visitor)
    assert visitor.used == ["y"]
    assert index.span(module.body[0].body.body[1].body[0].value) == (3, 12, 3, 17)  # type: ignore[union-attr]


FIXTURE_INPUTS = sorted(FIXTURES.glob("*/before.py"))


def _fixture_plans(path: Path) -> Iterator[tuple[cst.Module, list[RewritePlan]]]:
    """The parsed module and its plans, with the default settings and with unsafe fixes (if any plan)."""
    from vjp_migrate.api import DEFAULT_SETTINGS, Settings, analyze

    text = read_exact(path)
    for settings in (DEFAULT_SETTINGS, Settings(select=DEFAULT_SETTINGS.select, unsafe_fixes=True)):
        analysis = analyze(text, str(path), settings)
        plans = [d.plan for d in analysis.decisions if d.plan is not None]
        if plans:
            assert isinstance(analysis.module, cst.Module)
            yield analysis.module, plans


@pytest.mark.parametrize("path", FIXTURE_INPUTS, ids=[p.parent.name for p in FIXTURE_INPUTS])
def test_local_rewrite_equals_the_whole_module_transform(path: Path) -> None:
    from vjp_migrate.rewrite import apply_plans

    for module, plans in _fixture_plans(path):
        assert apply_plans(module, plans).code == apply_plans(module, plans, local=False).code
        for plan in plans:  # one plan at a time on the same module, as interactive fixing does
            assert apply_plans(module, [plan]).code == apply_plans(module, [plan], local=False).code


STATEMENT_LEVEL = {
    # `del` of a moved parameter alone on its line, and sharing a line with another statement
    "dels": """
        from functools import partial
        import jax


        @partial(jax.custom_vjp, nondiff_argnums=(1, 2))
        def f(x, scale, bias):
            return x * scale + bias


        def f_fwd(x, scale, bias):
            return f(x, scale, bias), None


        def f_bwd(scale, bias, _, g):
            del scale
            del bias; h = g
            return (h,)


        f.defvjp(f_fwd, f_bwd)
    """,
    # a lambda bwd that becomes a def inside a function body (one blank line, not two)
    "nested_lambda_def": """
        from functools import partial
        import jax
        import jax.numpy as jnp


        def build():
            @partial(jax.custom_vjp, nondiff_argnums=(1,))
            def g(x, floor):
                return jnp.maximum(x, floor)

            g.defvjp(
                lambda x, floor: (g(x, floor), x),
                lambda floor, x, ct: (jnp.where(x > floor, ct, 0.0),),
            )
            return g
    """,
    # fwd returns that saved nothing, in a body on the def line and in a lambda: no statement
    # line of their own to rebuild
    "one_line_and_lambda_fwd": """
        from functools import partial
        import jax


        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def scale(x, w): return x * w


        def scale_fwd(x, w): return scale(x, w), None


        def scale_bwd(w, _, g): return (g * w,)


        scale.defvjp(scale_fwd, scale_bwd)


        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def shift(x, b):
            return x + b


        shift.defvjp(lambda x, b: (shift(x, b), None), lambda b, _, g: (g * b,))
    """,
    # a returned call that needs a None in the middle goes through a temporary
    "temp_return": """
        from functools import partial
        import jax
        import jax.numpy as jnp


        def pre_bwd(x, w, g):
            return g * w, g * x


        @partial(jax.custom_vjp, nondiff_argnums=(1,))
        def h(x, mask, w):
            return jnp.where(mask, x * w, 0.0)


        def h_fwd(x, mask, w):
            return h(x, mask, w), (x, w)


        def h_bwd(mask, res, g):
            x, w = res
            return pre_bwd(x, w, jnp.where(mask, g, 0.0))


        h.defvjp(h_fwd, h_bwd)
    """,
}


@pytest.mark.parametrize("name", sorted(STATEMENT_LEVEL))
def test_statement_level_rewrites_stay_local(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rewrites that add, split or drop statements rebuild only their statement lines."""
    from vjp_migrate.api import DEFAULT_SETTINGS, analyze
    from vjp_migrate.rewrite import apply_plans

    text = textwrap.dedent(STATEMENT_LEVEL[name]).lstrip()
    analysis = analyze(text, f"{name}.py", DEFAULT_SETTINGS)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    module = analysis.module
    assert plans and isinstance(module, cst.Module)
    whole = apply_plans(module, plans, local=False).code
    assert whole != text
    walks: list[str] = []
    visit = cst.Module.visit

    def counted(self: cst.Module, visitor: cst.CSTVisitorT) -> cst.Module:
        walks.append(type(visitor).__name__)
        return visit(self, visitor)

    monkeypatch.setattr(cst.Module, "visit", counted)
    assert apply_plans(module, plans).code == whole
    assert walks == []  # no whole-module transform, not even as a fallback


def test_fix_refuses_a_rewrite_that_would_not_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    from vjp_migrate.api import SourceError, fix_source

    text = read_exact(FIXTURES / "moved_in_middle" / "before.py")
    monkeypatch.setattr(walk.Index, "code", lambda self, module: ("def broken(:\n", ["def broken(:\n"]))
    with pytest.raises(SourceError, match=r"internal error: the rewrite would not parse .*line 1.*left untouched"):
        fix_source(text, path="m.py")


def test_regenerated_statements_are_checked_together_then_in_the_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Changed statements parse as one text; when that fails only because of where a statement
    stands (a late `from __future__`), the whole file decides."""
    from vjp_migrate.api import fix_source

    text = read_exact(FIXTURES / "moved_in_middle" / "before.py")
    whole = "from __future__ import annotations\nx = 1\n"
    monkeypatch.setattr(
        walk.Index, "code", lambda self, module: (whole, ["x = 1\n", "from __future__ import annotations\n"])
    )
    assert fix_source(text, path="m.py").source == whole


# --- splicing: Index.code copies the source and generates only the changed nodes --------------

SPLICE_CASES = [
    "class C:\n\tdef f(self, a):\n\t\tif a:\n\t\t\treturn (a,\n\t\t\t\tb)\n\t\t# tail\n",  # tabs, nested
    "def f(a):\n  x = g(a,\n    1)\n  return x, a\n",  # a default indent of two spaces
    "y = f(a,\n      b)  # c\nz = [\n    a,\n]\n",  # nodes spanning lines inside parentheses
    "def f(a, b): return a, b",  # a one-line suite, no trailing newline
    "@d(1)\n# between\n@e\ndef f(x, *, k=1):\n    '''doc'''\n    return x\n",
    "g = lambda: 0\nh = lambda a, b: (a, b)\n",
    "def f():\n    if x:\n        y = [\n            a,\n        ]\n    elif z:\n        pass\n    else:\n        f(a)\n",
    "match p:\n    case [a, b]:\n        f(a,\n          b)\n    case _:\n        pass\n",
    "try:\n    f(a)\nexcept E as e:\n    pass\nfinally:\n    g(a); h(b)\n",
    "x = 1\r\nif a:\r\n    # c\r\n    f(a,\r\n      b)\r\n",
]


class _Renames(cst.CSTTransformer):
    """Changes of one node: a name, a decorator, a string."""

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name) -> cst.Name:
        if updated_node.value in ("True", "False", "None"):  # match singletons must stay
            return updated_node
        return updated_node.with_changes(value=updated_node.value + "_")

    def leave_Decorator(self, original_node: cst.Decorator, updated_node: cst.Decorator) -> cst.Decorator:
        return updated_node.with_changes(decorator=cst.Name("renamed"))

    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        return updated_node.with_changes(value='"s"')


class _Grows(cst.CSTTransformer):
    """Changes that their parents' code depends on: lists that grow, parameters, lambdas."""

    def leave_Tuple(self, original_node: cst.Tuple, updated_node: cst.Tuple) -> cst.Tuple:
        return updated_node.with_changes(elements=[*updated_node.elements, cst.Element(cst.Name("more"))])

    def leave_Arg(self, original_node: cst.Arg, updated_node: cst.Arg) -> cst.Arg:
        return updated_node.with_changes(value=cst.Integer("7"), comma=cst.MaybeSentinel.DEFAULT)

    def leave_Parameters(self, original_node: cst.Parameters, updated_node: cst.Parameters) -> cst.Parameters:
        extra = cst.Param(cst.Name("extra"), default=cst.Integer("0"))
        return updated_node.with_changes(params=[*updated_node.params, extra])

    def leave_Return(self, original_node: cst.Return, updated_node: cst.Return) -> cst.Return:
        return updated_node.with_changes(semicolon=cst.MaybeSentinel.DEFAULT)


class _Statements(cst.CSTTransformer):
    """Statements that come, go and change kind in bodies."""

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement] | cst.RemovalSentinel:
        first = updated_node.body[0]
        if isinstance(first, cst.Pass):
            return cst.RemoveFromParent()
        if isinstance(first, cst.Expr):
            return cst.FlattenSentinel([cst.parse_statement("before = 1\n"), updated_node])
        if isinstance(first, cst.Return):
            return cst.If(cst.Name("cond"), cst.IndentedBlock([updated_node]))
        return updated_node

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.If:
        return updated_node.with_changes(test=cst.Name("t"))


SPLICE_TRANSFORMERS: list[type[cst.CSTTransformer]] = [_Renames, _Grows, _Statements]


def _leaves_of(transformer: type[cst.CSTTransformer]) -> tuple[type, ...]:
    return tuple(getattr(cst, name[len("leave_") :]) for name in vars(transformer) if name.startswith("leave_"))


def _spliced_equals_generated(text: str, transformer: type[cst.CSTTransformer]) -> None:
    module = cst.parse_module(text)
    index = walk.Index(module)
    expected = module.visit(transformer())
    assert isinstance(expected, cst.Module)
    kinds = _leaves_of(transformer)
    targets = [node for node in index._order if isinstance(node, kinds)]
    local = index.transform(module, transformer(), targets)
    assert local.code == expected.code
    code, changed = index.code(local)
    assert code == expected.code
    assert all(piece.rstrip("\r\n") in code for piece in changed)
    assert index.code(expected)[0] == expected.code  # every node rebuilt: compared all the way down


@pytest.mark.parametrize("transformer", SPLICE_TRANSFORMERS, ids=lambda t: t.__name__)
@pytest.mark.parametrize("text", SPLICE_CASES + EDGE_CASES)
def test_spliced_code_equals_libcst_on_edge_cases(text: str, transformer: type[cst.CSTTransformer]) -> None:
    _spliced_equals_generated(text, transformer)


@pytest.mark.parametrize("transformer", SPLICE_TRANSFORMERS, ids=lambda t: t.__name__)
@pytest.mark.parametrize(("name", "text"), CORPUS, ids=[name for name, _ in CORPUS])
def test_spliced_code_equals_libcst_over_the_corpus(
    name: str, text: str, transformer: type[cst.CSTTransformer]
) -> None:
    _spliced_equals_generated(text, transformer)


@pytest.mark.parametrize("path", FIXTURE_INPUTS, ids=[p.parent.name for p in FIXTURE_INPUTS])
def test_spliced_fix_equals_the_transformed_module_code(path: Path) -> None:
    from vjp_migrate.rewrite import apply_plans

    for module, plans in _fixture_plans(path):
        index = walk.index_of(module)
        for chosen in [plans, *([plan] for plan in plans)]:
            new = apply_plans(module, chosen)
            code, changed = index.code(new)
            assert code == new.code == apply_plans(module, chosen, local=False).code
            assert changed and all(piece in code for piece in changed)


def _generated(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The types of the nodes Index.code generates from now on."""
    from vjp_migrate import splice

    kinds: list[str] = []
    generate = splice.Splicer.generate

    def logged(self: splice.Splicer, node: cst.CSTNode, indents: tuple[str, ...]) -> str:
        kinds.append(type(node).__name__)
        return generate(self, node, indents)

    monkeypatch.setattr(splice.Splicer, "generate", logged)
    return kinds


@pytest.mark.parametrize(
    ("text", "transformer", "kinds"),
    [
        pytest.param("def f(a, b):\n    return a\n", _Renames, ["Name"] * 4, id="names alone"),
        pytest.param("@d\ndef f():\n    pass\n", _Renames, ["Name", "Name"], id="a decorator's expression"),
        pytest.param("x = (a, b)\n", _Grows, ["Tuple"], id="a tuple that grows"),
        pytest.param("f(a, b)\n", _Grows, ["Call"], id="arguments: their parent passes commas"),
        pytest.param("def f(a):\n    pass\n", _Grows, ["Parameters"], id="parameters of a def"),
        pytest.param("g = lambda a: a\n", _Grows, ["Lambda"], id="parameters of a lambda: the lambda"),
        pytest.param(
            "def f():\n    return 1; x = 2\n", _Grows, ["Parameters", "SimpleStatementLine"], id="a semicolon"
        ),
        pytest.param("def f():\n    f(a)\n    x = 1\n", _Statements, ["SimpleStatementLine"], id="an insertion"),
        pytest.param("def f():\n    pass\n    x = 1\n", _Statements, [], id="a removal"),
        pytest.param(
            "def f():\n    pass\n    x = 1\n    f(a)\n", _Statements, ["SimpleStatementLine"], id="one gone, one come"
        ),
        pytest.param("def f():\n    pass\n", _Statements, ["IndentedBlock"], id="a body left empty"),
        pytest.param("if a:\n    x = 1\nelse:\n    y = 2\n", _Statements, ["Name"], id="an if's test"),
    ],
)
def test_splice_generates_only_what_it_must(
    text: str, transformer: type[cst.CSTTransformer], kinds: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = _generated(monkeypatch)
    module = cst.parse_module(text)
    index = walk.Index(module)
    targets = [node for node in index._order if isinstance(node, _leaves_of(transformer))]
    new = index.transform(module, transformer(), targets)
    assert index.code(new)[0] == new.code
    assert generated == kinds


def test_splice_falls_back_to_whole_statements_and_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "import a\n\n\ndef f(x):\n    return (x, 1)\n"
    module = cst.parse_module(text)
    index = walk.Index(module)
    generated = _generated(monkeypatch)
    # a node object twice in the tree: its place is ambiguous, so each changed statement is generated
    name = cst.Name("y")
    shared = cst.parse_module("x = 1\n").with_changes(
        body=[cst.SimpleStatementLine([cst.Expr(name)]), cst.SimpleStatementLine([cst.Expr(name)])]
    )
    shared_index = walk.Index(shared)
    new = shared.with_changes(body=[shared.body[0], cst.SimpleStatementLine([cst.Expr(cst.Name("z"))])])
    assert shared_index.code(new) == (new.code, ["z\n"])
    assert generated == ["SimpleStatementLine"]
    # the module's header or frame changed: LibCST generates the module
    header = module.with_changes(header=[cst.EmptyLine(comment=cst.Comment("# new"))])
    assert index.code(header) == (header.code, [header.code])
    indented = module.with_changes(default_indent="  ")
    assert index.code(indented)[0] == indented.code
    assert generated == ["SimpleStatementLine"]  # LibCST's own module.code, not the splicer


def _all_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from _all_nodes(child)


@pytest.mark.parametrize(("name", "text"), CORPUS, ids=[name for name, _ in CORPUS])
def test_source_text_is_the_generated_code_but_for_whitespace(name: str, text: str) -> None:
    # classify.expressions.code_text reads an expression's code so, and collapses its whitespace anyway
    from vjp_migrate.classify.expressions import code_text as _code

    module = cst.parse_module(text)
    walk.index_of(module)
    try:
        for node in _all_nodes(module):
            if isinstance(node, cst.BaseExpression):
                source = walk.source_text(node)
                generated = cst.Module([]).code_for_node(node)
                assert source is not None and source.split() == generated.split(), (source, generated)
                assert _code(node, 10**9) == " ".join(generated.split())
        assert walk.source_text(cst.Name("outside")) is None
    finally:
        walk.forget()


def test_code_of_an_indexed_expression_generates_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    from vjp_migrate.classify.expressions import code_text as _code

    module = cst.parse_module("y = f(\n    a,  # why\n    b[1:2],\n)\n")
    walk.index_of(module)
    call = module.body[0].body[0].value  # type: ignore[attr-defined]

    def no_codegen(self: object, node: object) -> str:
        raise AssertionError("generated")

    monkeypatch.setattr(cst.Module, "code_for_node", no_codegen)
    try:
        assert _code(call) == "f( a, # why b[1:2], )"
    finally:
        walk.forget()


@pytest.mark.parametrize(
    "func",
    [
        "f.defvjp",
        "mod.f.defvjp",
        "( f ).defvjp",
        "f . defvjp",
        "(mod\n  .f).defvjp",
        "fs[0].defvjp",
        'getattr(f, "defvjp")',
        "\uff46.defvjp",  # fullwidth f: ast reads it as `f`
        "f.defvjp2",
        "f().defvjp",
    ],
)
def test_defvjp_owner_read_off_the_node_equals_the_ast_one(func: str) -> None:
    import ast

    from vjp_migrate.plan.shared import _defvjp_owner, _owner

    module = cst.parse_module(f"{func}(f_fwd, f_bwd)\n")
    call = module.body[0].body[0].value  # type: ignore[attr-defined]
    expected = _defvjp_owner(ast.parse(f"(\n{func}\n)", mode="eval").body)
    assert _owner(call.func, module) == expected
