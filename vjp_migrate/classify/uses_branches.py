"""Classify, step 7c: ``Branches``, the evidence from control flow: a test that decides it
(`if`, `while`, `match`, `assert`, `... if ... else ...`), and the type tests (`callable(m)`) whose
branches, and the code after their early exits, weigh a static use as guarded."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from vjp_migrate.classify.expressions import code_text, named_in
from vjp_migrate.classify.uses_names import UseState
from vjp_migrate.classify.weights import BRANCH_ARRAY, CONTROL, GUARDED, STRONG
from vjp_migrate.imports import ImportTable
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.vocabulary import PYTHON_VALUE_TYPES, TYPE_TESTS
from vjp_migrate.walk.fields import children


class Branches(UseState):
    """What the argument decides in control flow, and which of its uses a type test guards."""

    def _control(self, test: cst.BaseExpression, node: cst.CSTNode, what: str) -> None:
        if self._mentions(test):
            self._add(ArgKind.STATIC, f"{CONTROL} (`{what}`)", node)
        elif (via := self._via(test)) is not None:
            self._add(ArgKind.STATIC, f"{CONTROL} (`{what}`)", node, via=via)

    def _enter_branches(self, test: cst.BaseExpression) -> None:
        tested = _type_test_of(test, self.names, self.ctx.imports)
        self.branches.append(None if tested is None else (len(self.evidence), tested))

    def _leave_branches(self) -> None:
        entered = self.branches.pop()
        if entered is None:
            return
        start, tested = entered
        self.evidence[start:] = [_on_branch(e, weight, tested) for e, weight in self.evidence[start:]]

    def visit_If(self, node: cst.If) -> None:
        self.tests[id(node)] = len(self.evidence)
        self._control(node.test, node, "if")
        self._raises_unless(node)
        self._enter_branches(node.test)
        self.bodies[id(node)] = len(self.evidence)
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))

    def visit_Else(self, node: cst.Else) -> None:
        self.bodies[id(node)] = len(self.evidence)

    def leave_If(self, original_node: cst.If) -> None:
        self._leave_branches()
        if id(original_node) not in self.elifs and (exit_ := self._type_exit(original_node)) is not None:
            self.exits[-1].append((len(self.evidence), *exit_))

    def _type_exit(self, head: cst.If) -> tuple[str, str] | None:
        """The type test that an if/elif/else chain exits early on, and how it exits, when the
        code after the chain runs only for the other type: `if <test>: ... return`, each link
        before it exiting too, or `if <test>: ... else: ... return`. The branch exited from must
        use the argument (another kind of it); a `raise` guards nothing."""
        links = [head]
        while isinstance(links[-1].orelse, cst.If):
            links.append(links[-1].orelse)
        last = links[-1].orelse
        ends = [self.tests[id(link)] for link in links[1:]]
        ends.append(self.bodies[id(last)] if last is not None else len(self.evidence))
        if isinstance(head.orelse, cst.Else) and _exit(head.body) is None:
            how = _exit(head.orelse.body)
            tested = _type_test_of(head.test, self.names, self.ctx.imports)
            used = len(self.evidence) > self.bodies[id(head.orelse)]
            return (tested, how) if how is not None and tested is not None and used else None
        for link, end in zip(links, ends, strict=True):
            how = _exit(link.body)
            if how is None:
                return None  # the code after is reached from this branch too, whatever the type
            tested = _type_test_of(link.test, self.names, self.ctx.imports)
            if tested is not None and end > self.bodies[id(link)]:
                return tested, how
        return None

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.exits.append([])

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.close_exits()
        self.exits.pop()

    def close_exits(self) -> None:
        """Weigh the static uses after each early return of the block being left as guarded. A
        `raise` guards nothing: whatever else the test let through fails, so every call that
        returns (`if not isinstance(n, int): raise TypeError`, then `range(n)`) needs the value
        concrete. Nor does a `return` that ignores the argument (`return x`)."""
        for start, tested, how in self.exits[-1]:
            self.evidence[start:] = [_after_exit(e, weight, tested, how) for e, weight in self.evidence[start:]]
        self.exits[-1] = []

    def visit_While(self, node: cst.While) -> None:
        self._control(node.test, node, "while")

    def visit_Match(self, node: cst.Match) -> None:
        self._control(node.subject, node, "match")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._control(node.test, node, "... if ... else ...")
        self._enter_branches(node.test)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self._leave_branches()

    def visit_Assert(self, node: cst.Assert) -> None:
        self._control(node.test, node, "assert")
        self._python_value(_required(node.test, cst.And, self._is_value_test), node)

    def _raises_unless(self, node: cst.If) -> None:
        """`if not isinstance(a, float): raise ...` (an `or` with other tests too)."""
        if node.orelse is None and _raises(node.body):
            self._python_value(_required(node.test, cst.Or, self._is_not_value_test), node)

    def _python_value(self, test: cst.Call | None, node: cst.CSTNode) -> None:
        if test is not None:
            text = f"must be a Python value (`{code_text(test)}`), which a Tracer never is"
            self._add(ArgKind.STATIC, text, node)

    def _is_not_value_test(self, expr: cst.BaseExpression) -> cst.Call | None:
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self._is_value_test(expr.expression)
        return None

    def _is_value_test(self, expr: cst.BaseExpression) -> cst.Call | None:
        """``expr`` when it is `isinstance(<the argument>, <Python value types only>)`."""
        if not (
            isinstance(expr, cst.Call)
            and len(expr.args) == 2
            and not any(arg.keyword or arg.star for arg in expr.args)
            and self.ctx.imports.qualify(expr.func) == "builtins.isinstance"
            and named_in(expr.args[0].value, self.names) is not None
        ):
            return None
        kinds = expr.args[1].value
        listed = [e.value for e in kinds.elements] if isinstance(kinds, cst.Tuple) else [kinds]
        qualified = [self.ctx.imports.qualify(kind) for kind in listed]
        return expr if listed and all(q in PYTHON_VALUE_TYPES for q in qualified) else None


def _on_branch(evidence: Evidence, weight: str, tested: str) -> tuple[Evidence, str]:
    """Evidence found on a branch the type test ``tested`` picks, weighed as such."""
    if evidence.kind is ArgKind.STATIC and weight != GUARDED:
        return replace(evidence, text=f"{evidence.text}, on a branch its type picks (`{tested}`)"), GUARDED
    if evidence.kind is ArgKind.ARRAY and weight == STRONG:
        return evidence, BRANCH_ARRAY
    return evidence, weight


def _after_exit(evidence: Evidence, weight: str, tested: str, how: str) -> tuple[Evidence, str]:
    """Evidence found after an early exit (``how``) that the type test ``tested`` picks: a static
    use there is guarded. An array use stays as strong as it was: the argument may be array data
    on this side of the test (`if callable(m): return m(x)`, then `jnp.where(m, x, 0.0)`)."""
    if evidence.kind is ArgKind.STATIC and weight != GUARDED:
        return replace(evidence, text=f"{evidence.text}, after {how} its type picks (`{tested}`)"), GUARDED
    return evidence, weight


def _exit(body: cst.BaseSuite) -> str | None:
    """How a block whose last statement leaves the rest of the block unrun does so: an early
    ``return``, or a ``continue`` or ``break`` of the loop it is in."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Return):
        return "an early return"
    if isinstance(last, cst.Break):
        return "a `break`"
    return "a `continue`" if isinstance(last, cst.Continue) else None


def _required(
    test: cst.BaseExpression,
    joined: type[cst.And] | type[cst.Or],
    found: Callable[[cst.BaseExpression], cst.Call | None],
) -> cst.Call | None:
    """The first test ``found`` accepts in ``test`` or, through the ``joined`` operator, in its
    operands: the tests that must all hold (`and` in an assert) or that raise alone (`or`)."""
    stack = [test]  # LibCST keeps a test's parentheses on its node
    while stack:
        expr = stack.pop()
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, joined):
            stack.extend((expr.right, expr.left))
        elif (call := found(expr)) is not None:
            return call
    return None


def _raises(body: cst.BaseSuite) -> bool:
    """Whether the block ends with a `raise`."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    return isinstance(last, cst.Raise)


def _type_test_of(test: cst.BaseExpression, names: set[str], imports: ImportTable) -> str | None:
    """The code of a type test of one of ``names`` in ``test`` (`callable(m)`), if there is one."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Call)
            and node.args
            and named_in(node.args[0].value, names) is not None
            and imports.qualify(node.func) in TYPE_TESTS
        ):
            return code_text(node)
        stack.extend(children(node))  # LibCST's node.children would rebuild the node
    return None
