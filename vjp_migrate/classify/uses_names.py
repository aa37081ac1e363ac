"""Classify, step 7a: ``UseState``, what the ``Uses`` visitor keeps while it walks a body: the
names that carry the argument (the parameter, the locals bound to it), the evidence found so far and
how it is worded, and ``NameFinder``, whether a test reads those names' values."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.call_locals import loop_sequence
from vjp_migrate.classify.context import Context, Via, function_locals
from vjp_migrate.classify.expressions import (
    code_text,
    is_rooted,
    named_in,
    plain_names,
    reads_no_value,
    roots_of,
    shadowing,
    strip_views,
    value_names,
)
from vjp_migrate.classify.grown import grown_items
from vjp_migrate.classify.weights import DOUBT, NOTED, STRONG
from vjp_migrate.derived import Binding, Derivation
from vjp_migrate.imports import ImportTable, target_names
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.vocabulary import METADATA_ATTRIBUTES, TYPE_TESTS, is_metadata_function


class UseState(cst.CSTVisitor):
    """The state of one walk for one name's uses in one function body, and the names carrying it."""

    def __init__(
        self, names: set[str], ctx: Context, where: str, depth: int = 0, derived: dict[str, Derivation] | None = None
    ) -> None:
        self.names = set(names)
        self.ctx = ctx
        self.where = where
        self.depth = depth
        self.derived = derived or {}
        self.closures: list[dict[str, Derivation]] = []  # the derived values around each nested def walked
        self.func: cst.FunctionDef | None = None  # the def whose body is walked, for the defs around it
        self.evidence: list[tuple[Evidence, str]] = []
        self.bindings: dict[str, list[Binding]] = {}  # the function's locals, to spot sizes
        # the targets of loops over the argument itself (`for w in ws`) and of its unpacking (`w, b = ws`)
        self.items: set[str] = set()
        self.packing = ""  # while an argument is judged inside a tuple or list: where, for the reasons
        # `partial(f, k=arg)` calls, judged once the whole body is walked (see judge_kernels), and
        # the functions that cannot capture traced values: the kernels `pallas_call`s are given and
        # the host functions of callbacks, each with what it is for the reasons.
        self.partials: list[tuple[cst.Call, int, str | None, Via | None, str]] = []
        self.kernels: list[tuple[cst.BaseExpression, str]] = []
        # For each if/else being walked: where its evidence starts and the type test that picks
        # its branch (`callable(m)`), or None when its test is no type test of the argument.
        self.branches: list[tuple[int, str] | None] = []
        # For each block being walked: where the code after an `if` on a type test that exits
        # early (`if not callable(m): return ...`, or `continue` or `break` in a loop) starts, that test and
        # how it exits; the rest of the block runs only for the type the test did not pick.
        self.exits: list[list[tuple[int, str, str]]] = [[]]
        self.elifs: set[int] = set()  # the ids of `elif` tests' ifs: their chain is judged at its head
        # Where the evidence of each if's test and of each if's and else's body starts, by id.
        self.tests: dict[int, int] = {}
        self.bodies: dict[int, int] = {}

    def _note(self, text: str, node: cst.CSTNode) -> None:
        """A use seen and discounted: no evidence, a reason to show if nothing decides."""
        self.evidence.append((Evidence(ArgKind.UNKNOWN, f"{text}, in {self.where}", *self.ctx.where(node)), NOTED))

    def _add(self, kind: ArgKind, text: str, node: cst.CSTNode, weight: str = STRONG, via: Via | None = None) -> None:
        self.evidence.extend(self._made(kind, text, node, weight, via))

    def _made(
        self, kind: ArgKind, text: str, node: cst.CSTNode, weight: str = STRONG, via: Via | None = None
    ) -> list[tuple[Evidence, str]]:
        if via is not None:
            if kind is not ArgKind.STATIC:
                return []  # only the need for concrete values flows through derived values
            kind, text, weight = via.needs(text)
        return [(Evidence(kind, f"{text}{self.packing} in {self.where}", *self.ctx.where(node)), weight)]

    def _rooted(self, expr: cst.BaseExpression) -> bool:
        return is_rooted(expr, self.names)

    def _static_use(self, expr: cst.BaseExpression, text: str, node: cst.CSTNode) -> bool:
        """Static evidence for a use of ``expr`` that needs a concrete value, when ``expr`` is the
        argument or carries its values; whether it was either."""
        if self._rooted(expr):
            self._add(ArgKind.STATIC, text, node)
        elif (via := self._via(expr)) is not None:
            self._add(ArgKind.STATIC, text, node, via=via)
        else:
            return False
        return True

    def _doubtful_use(self, expr: cst.BaseExpression, text: str, node: cst.CSTNode) -> None:
        """A doubt for a use of ``expr`` that may need a concrete value, when ``expr`` is the
        argument or carries its values."""
        if self._rooted(expr):
            self._doubt(text, node, None)
        elif (via := self._via(expr)) is not None:
            self._doubt(text, node, via)

    def _doubt(self, use: str, node: cst.CSTNode, via: Via | None) -> None:
        """A use that may need the argument (with ``via``, a value from it) concrete: no safe fix
        then, whatever else says array."""
        self.evidence.append(self._doubted(use, node, via))

    def _doubted(self, use: str, node: cst.CSTNode, via: Via | None) -> tuple[Evidence, str]:
        """The evidence of ``_doubt``, not yet recorded."""
        kind, text, weight = via.needs(use, certain=False) if via is not None else (ArgKind.UNKNOWN, use, DOUBT)
        return Evidence(kind, f"{text}{self.packing} in {self.where}", *self.ctx.where(node)), weight

    def _via(self, expr: cst.BaseExpression) -> Via | None:
        """How ``expr``, not the argument itself, carries the argument's values, if it does."""
        read = [
            (name, sure and (name in self.names or self.derived[name].certain))
            for name, sure in value_names(expr, self.ctx.imports)
            if name in self.names or name in self.derived
        ]
        if not read:
            return None
        certain = any(sure for _, sure in read)
        through = next((name for name, _ in read if name not in self.names), None)
        if isinstance(expr, cst.Name):
            shown = f"`{expr.value}` ({self._chain(expr.value)})"
        else:
            shown = f"`{code_text(expr)}`" + (f" (`{through}` {self._chain(through)})" if through else "")
        return Via(f"through {shown}", certain)

    def _chain(self, name: str) -> str:
        """``from `a`, line 4; `a` from `p`, line 3`` back to the argument."""
        steps: list[str] = []
        seen = {name}
        derivation = self.derived.get(name)
        while derivation is not None:
            line = self.ctx.where(derivation.node)[0]  # in the file of the evidence it explains
            at = f", line {line}" if line else ""
            head = "from" if not steps else f"`{derivation.name}` from"
            steps.append(f"{head} `{derivation.source}`{at}{'' if derivation.certain else ', on some paths'}")
            if derivation.source in seen or derivation.source in self.names:
                break
            seen.add(derivation.source)
            derivation = self.derived.get(derivation.source)
        return "; ".join(steps)

    def _mentions(self, test: cst.BaseExpression) -> bool:
        """Whether the test reads the name's values (``x is None`` and metadata such as ``x.shape``
        and ``len(x)`` are known for a Tracer too)."""
        finder = NameFinder(self.names, self.ctx.imports)
        walk.visit(test, finder)
        return finder.found

    # Nested functions that rebind the name as a parameter shadow it.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.closures.append(self.derived)
        if shadowing(node.params) & roots_of(self.names):
            return False
        # A def nested in the one walked reads the argument from around it: what its own locals
        # take from it (`(_, y_ca), _ = dims`) are derived values while it is walked.
        own = function_locals(node, self.ctx)
        found = own.derived(self.names | set(self.derived))
        self.derived = {**{k: v for k, v in self.derived.items() if k not in own.bindings}, **found}
        return True

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.derived = self.closures.pop()

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        self.closures.append(self.derived)  # only to tell the def walked from those nested in it
        return not (shadowing(node.params) & roots_of(self.names))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.closures.pop()

    def visit_Assign(self, node: cst.Assign) -> None:
        if named_in(node.value, self.names) is not None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.names.add(target.target.value)
                elif isinstance(node.value, cst.Name) and isinstance(target.target, (cst.Tuple, cst.List)):
                    self.items.update(target_names(target.target))  # `src_idx, w = handle`: as a loop's
        elif isinstance(node.value, cst.Name):
            self._unpacked(node)

    def visit_For(self, node: cst.For) -> None:
        """A loop over a literal holding the argument (`for w in (w1, w2)`), or over a local list
        or tuple built with it before the loop (`ws = [w1]`, `ws.append(w2)`): the target is the
        argument on one iteration."""
        if isinstance(node.target, cst.Name) and any(
            named_in(item, self.names) is not None for item in self._loop_items(node.iter, node)
        ):
            self.names.add(node.target.value)
        self._items_of(node.target, node.iter)

    def _visit_comprehension(self, node: cst.GeneratorExp | cst.ListComp | cst.SetComp | cst.DictComp) -> None:
        self._comprehension(node.for_in)

    visit_GeneratorExp = visit_ListComp = visit_SetComp = visit_DictComp = _visit_comprehension

    def _comprehension(self, loop: cst.CompFor | None) -> None:
        """The loops of a comprehension, before its element (`sum(w * x for w in ws)`) is walked."""
        while loop is not None:
            self._items_of(loop.target, loop.iter)
            loop = loop.inner_for_in

    def _items_of(self, target: cst.BaseExpression, sequence: cst.BaseExpression) -> None:
        """A loop over the argument itself (`for w in ws`, `for i, w in enumerate(ws)`, `zip(ws, bs)`):
        the target takes its items, a value derived from it whose arithmetic is the argument's own,
        as `ws[0] * x` is (a list of arrays or a tuple of numbers, both JAX values)."""
        for name in target_names(target):
            looped = loop_sequence(name, target, sequence)
            if isinstance(looped, cst.Name) and looped.value in self.names:
                self.items.add(name)

    def _loop_items(self, sequence: cst.BaseExpression, loop: cst.For) -> tuple[cst.BaseExpression, ...]:
        if isinstance(sequence, (cst.Tuple, cst.List)):
            return tuple(e.value for e in sequence.elements if not isinstance(e, cst.StarredElement))
        if isinstance(sequence, cst.Name) and sequence.value not in self.names and self.func is not None:
            return grown_items(sequence.value, self.func, self.ctx, loop) or ()
        return ()

    def _unpacked(self, node: cst.Assign) -> None:
        """``w, b = args``: the target at an item's index of the ``*args`` unpacked is that item."""
        assert isinstance(node.value, cst.Name)
        star = node.value.value
        for target in node.targets:
            if not isinstance(target.target, (cst.Tuple, cst.List)):
                continue
            for index, element in enumerate(target.target.elements):
                if isinstance(element, cst.StarredElement):
                    break
                if f"{star}[{index}]" in self.names and isinstance(element.value, cst.Name):
                    self.names.add(element.value.value)

    def _module_level(self, name: str) -> bool:
        """Whether ``name`` in the function walked is the module's: no local or enclosing def binds it."""
        enclosing = self.ctx.enclosing.get(id(self.func), {}) if self.func is not None else {}
        return name not in self.bindings and name not in enclosing

    def _seen(self, name: str) -> bool:
        """Whether the function walked sees the scope's ``name`` (`cache`), or the attribute of its
        parameter (`self._table`): no local of its own binds that name, or rebinds the parameter."""
        root = name.split(".")[0]
        bound = self.bindings.get(root, [])
        if "." in name:
            return all(isinstance(b.node, cst.Param) for b in bound)
        return not bound

    def _assigned_once(self, name: str) -> cst.BaseExpression | None:
        """The value a local bound once, by an assignment, is assigned (not a loop's items)."""
        bound = self.bindings.get(name, [])
        if len(bound) == 1 and type(bound[0].node) in (cst.Assign, cst.AnnAssign, cst.NamedExpr):
            return self._value_once(name)
        return None

    def _value_once(self, name: str) -> cst.BaseExpression | None:
        """The one value a local bound once is bound to (``xs = (x, a)``); None otherwise."""
        bound = self.bindings.get(name, [])
        if len(bound) == 1 and bound[0].values is not None and len(bound[0].values) == 1:
            return bound[0].values[0]
        return None


class NameFinder(cst.CSTVisitor):
    """Whether a test reads one of the names' values: `x is None`, `x.shape`, `len(x)`,
    `isinstance(x, list)` do not."""

    def __init__(self, names: set[str], imports: ImportTable) -> None:
        self.names = names
        self.imports = imports
        self.read: set[str] = set()

    @property
    def found(self) -> bool:
        return bool(self.read)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.read.add(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if (item := named_in(node, self.names)) is not None:
            self.read.add(item)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not (node.attr.value in METADATA_ATTRIBUTES and isinstance(strip_views(node.value), cst.Name))

    def visit_Call(self, node: cst.Call) -> bool:
        qname = self.imports.qualify(node.func)
        if qname in TYPE_TESTS:
            return False
        return not (qname is not None and is_metadata_function(qname) and plain_names(node))

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        return not reads_no_value(node)
