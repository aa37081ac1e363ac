"""Stage 5b: one cheap pass over a parsed module that later stages reuse: node positions and visitor replays.

A LibCST visitor pass rebuilds every node it walks, and ``PositionProvider`` adds a metadata
pass and a code generation with a position object per node; together they cost several times
the parse. Code generation alone is the cheapest walk LibCST has, and it calls
``before_codegen``/``after_codegen`` for every node in source order. ``Index`` hooks those
once per module to record

- every node (whitespace excepted) in visiting order, with where its subtree ends, so that a
  ``CSTVisitor`` can be *replayed* over any part of the module without LibCST rebuilding the
  nodes (same calls, same order: tests/test_walk.py compares both over fixtures and JAX);
- the token range of every node, with the same syntactic overrides ``PositionProvider`` uses,
  turned into lines and columns only for the nodes asked about.

``visit(node, visitor)`` replays when ``node`` belongs to the module indexed last (``index_of``)
and the visitor only uses plain ``visit_X``/``leave_X`` methods; otherwise it is ``node.visit``.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from itertools import accumulate, compress
from operator import attrgetter, is_
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst._nodes.expression import _BaseParenthesizedNode
from libcst._nodes.internal import CodegenState

from vjp_migrate.splice import Splicer, field_names, is_node, render

if TYPE_CHECKING:
    from types import TracebackType

NEWLINE = re.compile(r"\r\n?|\n")  # as LibCST's PositionProvider counts lines
NEWLINE_AT_END = re.compile(r"(\r\n?|\n)\Z")
# Nodes no analysis visits: not recorded, so replays walk fewer nodes.
_UNRECORDED = (
    cst.SimpleWhitespace,
    cst.ParenthesizedWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
)
_UNRECORDED_TYPES = frozenset(_UNRECORDED)
_UNRECORDED_NAMES = frozenset(t.__name__ for t in _UNRECORDED)
_BASE_HOOKS = ("on_visit", "on_leave", "on_visit_attribute", "on_leave_attribute")

Span = tuple[int, int, int, int]  # line, column (1-based), end line, end column (as findings use)


Syntactic = tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, int, int]


class _Closer:
    """What ``record_syntactic_position`` returns: one object for every call (see _Recorder)."""

    __slots__ = ("closed", "pending", "tokens")

    def __init__(self, recorder: _Recorder) -> None:
        self.pending = recorder.pending
        self.closed = recorder.closed
        self.tokens = recorder.tokens

    def __enter__(self) -> None:
        pass

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.closed.append((*self.pending.pop(), len(self.tokens)))


class _Parenthesized:
    """``_parenthesize`` of LibCST's expressions as a plain context manager: the same tokens
    and syntactic positions, without a generator per expression (a fifth of the walk)."""

    __slots__ = ("inner", "node", "state")

    def __init__(self, node: Any, state: CodegenState) -> None:
        self.node = node
        self.state = state

    def __enter__(self) -> None:
        node, state = self.node, self.state
        for lpar in node.lpar:
            lpar._codegen(state)
        self.inner = state.record_syntactic_position(node)
        self.inner.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.inner.__exit__(kind, error, trace)
        if kind is None:  # as the generator: an error leaves the closing parentheses out
            for rpar in self.node.rpar:
                rpar._codegen(self.state)


def _plain_parenthesize(node: Any, state: CodegenState) -> _Parenthesized:
    return _Parenthesized(node, state)


@contextmanager
def plain_parentheses() -> Iterator[None]:
    """Code generation inside uses ``_Parenthesized``. It makes what LibCST's own does, for any
    state, so another thread generating code meanwhile is not affected; the outermost block
    restores LibCST's method."""
    own = _BaseParenthesizedNode.__dict__["_parenthesize"]
    if own is _plain_parenthesize:
        yield
        return
    _BaseParenthesizedNode._parenthesize = _plain_parenthesize  # type: ignore[assignment]
    try:
        yield
    finally:
        _BaseParenthesizedNode._parenthesize = own  # type: ignore[method-assign]


class _Recorder(CodegenState):
    """Records every node but whitespace in visiting order, with where its subtree ends (in
    order) and its token range; and the syntactic positions nodes record, resolved later."""

    def __init__(self, module: cst.Module) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.order: list[cst.CSTNode] = []
        self.ends: list[int] = []
        self.starts: list[int] = []
        self.stops: list[int] = []
        self.stack: list[int] = []
        self.pending: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, int]] = []
        self.closed: list[Syntactic] = []  # (node, start node, end node, start, end), as they closed
        self.closer = _Closer(self)

    def before_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in _UNRECORDED_TYPES:
            return
        order = self.order
        self.stack.append(len(order))
        order.append(node)
        self.ends.append(0)
        self.starts.append(len(self.tokens))
        self.stops.append(0)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in _UNRECORDED_TYPES:
            return
        index = self.stack.pop()
        self.ends[index] = len(self.order)
        self.stops[index] = len(self.tokens)

    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Any:
        # LibCST enters the returned context at once, so the start is known here.
        self.pending.append((node, start_node, end_node, len(self.tokens)))
        return self.closer

    def pop_trailing_newline(self) -> None:
        """Kept: PositionProvider measures the last statement before the newline is dropped."""


_Methods = tuple[Callable[..., Any] | None, Callable[..., Any] | None]  # a node type's visit_X, leave_X
_Table = dict[type, _Methods]
_NO_METHODS: _Methods = (None, None)


def _replayable(visitor_type: type) -> _Table | None:
    """visit/leave methods by node type, or None when the visitor needs LibCST's own walk."""
    cached = _DISPATCH.get(visitor_type)
    if cached is not None or visitor_type in _DISPATCH:
        return cached
    table: _Table | None = {}
    ok = issubclass(visitor_type, cst.CSTVisitor) and all(
        getattr(visitor_type, hook) is getattr(cst.CSTVisitor, hook) for hook in _BASE_HOOKS
    )
    names = {
        name
        for name in dir(visitor_type)
        if name.startswith(("visit_", "leave_"))
        and getattr(visitor_type, name) is not getattr(cst.CSTVisitor, name, None)
    }
    for name in names:
        kind = name.split("_", 1)[1]
        node_type = getattr(cst, kind, None)
        if not (isinstance(node_type, type) and issubclass(node_type, cst.CSTNode)) or kind in _UNRECORDED_NAMES:
            ok = False  # visit_X_attribute hooks, whitespace, or something this module does not know
            break
    if ok:
        assert table is not None
        for name in names:
            kind = name.split("_", 1)[1]
            node_type = getattr(cst, kind)
            visit, leave = table.get(node_type, (None, None))
            method = getattr(visitor_type, name)
            table[node_type] = (method, leave) if name.startswith("visit_") else (visit, method)
    else:
        table = None
    _DISPATCH[visitor_type] = table
    return table


_DISPATCH: dict[type, _Table | None] = {}


class _FieldOrder(cst.CSTVisitor):
    """Learns in which order LibCST visits a node type's fields (one shallow visit per type)."""

    def __init__(self, node: cst.CSTNode) -> None:
        self.node = node
        self.fields: list[str] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        return False

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        if node is self.node and attribute not in self.fields:
            self.fields.append(attribute)


Getter = Callable[[cst.CSTNode], tuple[Any, ...]]


def _getter(names: Sequence[str]) -> Getter:
    """The values of a node's fields ``names``, as a tuple read at C speed."""
    if len(names) == 1:  # attrgetter gives the bare value of a single name
        name = names[0]
        return lambda node: (getattr(node, name),)
    return attrgetter(*names) if names else lambda node: ()


class _Recorded(dict[type, bool]):
    """Whether values of a type are recorded nodes (nodes, whitespace aside); filled as types come."""

    def __missing__(self, kind: type) -> bool:
        recorded = self[kind] = is_node(kind) and kind not in _UNRECORDED_TYPES
        return recorded


_RECORDED = _Recorded()
_IS_NONE = partial(is_, None)
_FIELDS_OF: dict[type, Getter] = {}
_FIELD_ORDER: dict[tuple[type, tuple[bool, ...]], Getter] = {}


def _visited_fields(node: cst.CSTNode) -> tuple[Any, ...]:
    """The values of ``node``'s fields in the order LibCST visits them.

    The order is learnt from LibCST once per type and set of absent fields (some fields are
    only visited when present).
    """
    kind = type(node)
    fields = _FIELDS_OF.get(kind)
    if fields is None:
        fields = _FIELDS_OF[kind] = _getter(field_names(kind))
    key = (kind, tuple(map(_IS_NONE, fields(node))))
    ordered = _FIELD_ORDER.get(key)
    if ordered is None:
        probe = _FieldOrder(node)
        node._visit_and_replace_children(probe)
        ordered = _FIELD_ORDER[key] = _getter(probe.fields)
    return ordered(node)


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """``node.children`` without whitespace, read from the fields (LibCST would rebuild the node)."""
    recorded = _RECORDED
    found: list[cst.CSTNode] = []
    for value in _visited_fields(node):
        if isinstance(value, (list, tuple)):
            found.extend([v for v in value if recorded[type(v)]])
        elif recorded[type(value)]:
            found.append(value)
    return found


def comments(node: cst.CSTNode) -> list[cst.Comment]:
    """The comments inside ``node`` in the order a visit meets them (LibCST's would rebuild every node)."""
    if type(node) is cst.Comment:
        return [node]
    found: list[cst.Comment] = []
    for value in _visited_fields(node):
        for item in value if isinstance(value, (list, tuple)) else (value,):
            if is_node(type(item)):
                found.extend(comments(item))
    return found


class NotLocal(Exception):
    """A transformer did something ``Index.transform`` cannot replay (removal, a non-node)."""


class Index:
    """Positions and replays for one module (see the module docstring)."""

    def __init__(self, module: cst.Module) -> None:
        recorder = _Recorder(module)
        with plain_parentheses():
            module._codegen(recorder)
        self.module = module
        self._order = order = recorder.order
        self._kinds = list(map(type, order))
        self._ends = ends = recorder.ends
        self._where = {id(node): k for k, node in enumerate(order)}
        self._starts = recorder.starts
        self._stops = recorder.stops
        self._tokens = recorder.tokens
        self._closed = recorder.closed
        self._syntactic: dict[int, Syntactic] | None = None
        self._top: list[int] = []  # the module's statements, comments included
        k = 1  # order[0] is the module
        while k < len(order):
            self._top.append(k)
            k = ends[k]
        self._offsets: list[int] | None = None
        self._line_starts: list[int] = []
        self._text = ""
        # What transform built: new node -> (itself, the node it copies), old node -> new node.
        self._rebuilt: dict[int, tuple[cst.CSTNode, cst.CSTNode]] = {}
        self._replaced: dict[int, cst.CSTNode] = {}

    def covers(self, node: cst.CSTNode) -> bool:
        return id(node) in self._where

    def children(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        """``node.children`` without whitespace, also for a node ``transform`` rebuilt."""
        rebuilt = self._rebuilt.get(id(node))
        if rebuilt is None or rebuilt[0] is not node:
            return _children(node)
        old = self._where[id(rebuilt[1])]
        found, child, ends = [], old + 1, self._ends
        while child < ends[old]:
            current = self._order[child]
            found.append(self._replaced.get(id(current), current))
            child = ends[child]
        return found

    def descendants(self, node: cst.CSTNode, kinds: Container[type]) -> list[cst.CSTNode]:
        """The nodes of ``node``'s subtree (itself included) whose type is in ``kinds``, in
        visiting order; ``node`` must be in the module."""
        start = self._where[id(node)]
        stop = self._ends[start]
        wanted = map(kinds.__contains__, self._kinds[start:stop])
        return [self._order[k] for k in compress(range(start, stop), wanted)]

    def nodes(self, ids: Iterable[object]) -> list[cst.CSTNode]:
        """The module's nodes whose ``id()`` is in ``ids`` (other keys are ignored)."""
        where = self._where
        return [self._order[where[key]] for key in ids if isinstance(key, int) and key in where]

    # --- positions -------------------------------------------------------------------------

    def _measure(self) -> list[int]:
        if self._offsets is None:
            self._offsets = list(accumulate(map(len, self._tokens), initial=0))
            self._text = "".join(self._tokens)  # the source, with its last newline even if it had none
            self._line_starts = [0, *(m.end() for m in NEWLINE.finditer(self._text))]
        return self._offsets

    def _range_of(self, node: cst.CSTNode) -> tuple[int, int]:
        """The token range PositionProvider gives ``node``: the last syntactic position it
        recorded (hoisted from the nodes it names), else its whole code."""
        if self._syntactic is None:
            self._syntactic = {id(record[0]): record for record in self._closed}
        record = self._syntactic.get(id(node))
        if record is None:
            index = self._where[id(node)]
            return self._starts[index], self._stops[index]
        _, start_node, end_node, start, end = record
        if start_node is not None:
            start = self._range_of(start_node)[0]
        if end_node is not None:
            end = self._range_of(end_node)[1]
        return start, end

    def _point(self, token: int) -> tuple[int, int]:
        offset = self._measure()[token]
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1]

    def text(self, node: cst.CSTNode) -> str | None:
        """The source text of ``node`` (its whole code); None for a node not in the module."""
        at = self._where.get(id(node))
        if at is None:
            return None
        offsets = self._measure()
        return self._text[offsets[self._starts[at]] : offsets[self._stops[at]]]

    def line(self, node: cst.CSTNode) -> int | None:
        """The first line of ``node`` as PositionProvider gives it; None for a node not in the module."""
        if id(node) not in self._where:
            return None
        return self._point(self._range_of(node)[0])[0]

    def span(self, node: cst.CSTNode) -> Span:
        """Start and end of ``node``: lines 1-based, columns 1-based (PositionProvider's + 1)."""
        start, end = self._range_of(node)
        line, column = self._point(start)
        end_line, end_column = self._point(end)
        return line, column + 1, end_line, end_column + 1

    def code(self, module: cst.Module) -> tuple[str, list[str]]:
        """``module.code`` for a module made from the indexed one, and the new code of every
        statement of its body that changed.

        The source text is copied, with only the changed nodes' code spliced in (splice.py).
        """
        old = self.module
        same_frame = (
            module.header is old.header
            and module.footer is old.footer
            and (module.default_indent, module.default_newline, module.has_trailing_newline)
            == (old.default_indent, old.default_newline, old.has_trailing_newline)
        )
        if not (same_frame and old.body and module.body and len(self._top) == len(old.body)):
            code = module.code
            return code, [code]
        offsets = self._measure()
        text, top, starts, stops = self._text, self._top, self._starts, self._stops
        splicer = Splicer(old, self._where, starts, stops)
        splicer.origins = {id(new): key for key, new in self._replaced.items()}
        deep = len(self._where) == len(self._order)  # no node object twice in the tree
        pieces = [text[: offsets[starts[top[0]]]]]  # the header
        new: list[str] = []
        for k, stmt in splicer.align(old.body, module.body):
            if stmt is None:  # a statement that went
                continue
            piece = None
            if k is not None and (deep or stmt is old.body[k]):
                first, end = starts[top[k]], stops[top[k]]
                splicer.edits = []
                splicer.replace(cst.Module, "body", old.body[k], stmt, ())  # always can: a statement of a body
                piece = render(text, offsets, first, end, splicer.edits)
                if piece is not None and not splicer.edits:  # unchanged
                    pieces.append(piece)
                    continue
            if piece is None:
                piece = splicer.generate(stmt, ())
            pieces.append(piece)
            new.append(piece)
        pieces.append(text[offsets[stops[top[-1]]] :])  # the footer
        code = "".join(pieces)
        last = NEWLINE_AT_END.search(code)
        if not module.has_trailing_newline and last is not None:  # LibCST drops its last token, a newline
            code = code[: last.start()]
        return code, new

    # --- replays ---------------------------------------------------------------------------

    def visit(self, node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
        """Exactly ``node.visit(visitor)`` for a plain visitor, without rebuilding any node."""
        table = _replayable(type(visitor))
        index = self._where.get(id(node))
        if table is None or index is None:
            node.visit(visitor)
            return
        self._replay(index, table, visitor)

    def _replay(self, index: int, table: _Table, visitor: cst.CSTVisitor) -> None:
        """``visit`` of the node at ``index`` with the visitor's ``table`` (see _replayable)."""
        order, ends, kinds = self._order, self._ends, self._kinds
        stop = ends[index]
        if stop == index + 1:  # a leaf, as many nested visits are (a Name)
            enter, leave = table.get(kinds[index], _NO_METHODS)
            if enter is not None:
                enter(visitor, order[index])
            if leave is not None:
                leave(visitor, order[index])
            return
        pending: list[tuple[int, cst.CSTNode, Callable[..., Any]]] = []
        skipped = index  # the end of the subtree the visitor declined last
        # Only the nodes the visitor has a method for call anything: find them at C speed.
        for at in compress(range(index, stop), map(table.__contains__, kinds[index:stop])):
            if at < skipped:
                continue
            while pending and pending[-1][0] <= at:
                _, done, finish = pending.pop()
                finish(visitor, done)
            current = order[at]
            enter, leave = table[kinds[at]]
            if enter is None or enter(visitor, current) is not False:
                if leave is not None:
                    pending.append((ends[at], current, leave))
            else:
                if leave is not None:
                    leave(visitor, current)
                skipped = ends[at]
        while pending:
            _, done, finish = pending.pop()
            finish(visitor, done)

    # --- targeted transforms ---------------------------------------------------------------

    def statement_line(self, node: cst.CSTNode) -> cst.SimpleStatementLine | None:
        """The statement line around ``node``; None for a node not in the module, or in a body
        written on its ``def`` line (`def f(x): return x`), which has no line of its own."""
        index = self._where.get(id(node))
        if index is None:
            return None
        order, ends = self._order, self._ends
        for above in range(index - 1, -1, -1):
            statement = order[above]
            if ends[above] > index and isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
                return statement if isinstance(statement, cst.SimpleStatementLine) else None
        return None

    def transform(
        self, root: cst.CSTNode, transformer: cst.CSTTransformer, targets: Iterable[cst.CSTNode], again: bool = False
    ) -> Any:
        """``root.visit(transformer)`` for a transformer that changes only ``targets``.

        Only the targets' ancestors are rebuilt (``with_changes``); the transformer's
        ``leave_X(original, updated)`` is called on each target, children first, in visiting
        order. A target in a sequence may leave a ``FlattenSentinel`` or a ``RemovalSentinel``,
        with LibCST's rules (a statement line left empty goes from a body). The caller promises
        every other node would come back unchanged. Raises NotLocal when a target is not in this
        module or a leave returns something its place cannot hold. ``again``: a further
        transform of what the last one left (of nodes it did not rebuild), whose rebuilds add to
        that one's in ``children`` and ``code``.
        """
        where = self._where
        if not again:
            self._rebuilt.clear()  # children() describes the latest transform only
            self._replaced.clear()
        marks: list[int] = []
        for target in targets:
            index = where.get(id(target))
            if index is None:
                raise NotLocal(f"{type(target).__name__} is not in the indexed module")
            marks.append(index)
        marks.sort()
        rebuilding = _Rebuild(self, transformer, marks)
        start = where.get(id(root))
        if start is None:
            raise NotLocal("the root is not in the indexed module")
        if not rebuilding.inside(start):
            return root
        new_root = rebuilding.rebuild(root, start)
        if not is_node(type(new_root)):
            raise NotLocal(f"the root became a {type(new_root).__name__}")
        return new_root


class _Rebuild:
    """The rebuild of ``Index.transform``, in methods: closures that call each other would
    form a reference cycle, which keeps the whole module alive until a collection."""

    __slots__ = ("chosen", "ends", "index", "marks", "transformer", "where")

    def __init__(self, index: Index, transformer: cst.CSTTransformer, marks: list[int]) -> None:
        self.index = index
        self.transformer = transformer
        self.marks = marks
        self.chosen = set(marks)
        self.where = index._where
        self.ends = index._ends

    def inside(self, index: int) -> bool:
        marks = self.marks
        k = bisect_left(marks, index)
        return k < len(marks) and marks[k] < self.ends[index]

    def sequence(self, node: cst.CSTNode, name: str, value: Sequence[Any]) -> tuple[list[Any], bool, bool]:
        """The new items of a list field, whether any changed, and whether their number did."""
        where, inside = self.where, self.inside
        body = name == "body" and (type(node) is cst.Module or type(node) is cst.IndentedBlock)
        items: list[Any] = []
        touched = reshaped = False
        for item in value:
            child = where.get(id(item))  # None for whitespace, which holds no target
            if child is None or not inside(child):
                items.append(item)
                continue
            touched = True
            new = self.rebuild(item, child)
            if is_node(type(new)):
                news = [new]
            elif isinstance(new, cst.FlattenSentinel):
                news = list(new)
            elif isinstance(new, cst.RemovalSentinel):
                news = []
            else:
                raise NotLocal(f"a leave returned {type(new).__name__}")
            # LibCST drops from a body a statement line that its leaves emptied.
            kept = [n for n in news if not (body and n._is_removable() and not item._is_removable())]
            reshaped = reshaped or not (is_node(type(new)) and kept)
            items.extend(kept)
        return items, touched, reshaped

    def rebuild(self, node: cst.CSTNode, index: int) -> Any:
        where, inside = self.where, self.inside
        changes: dict[str, Any] = {}
        reshaped = False
        for name in field_names(type(node)):
            value = getattr(node, name)
            if isinstance(value, (list, tuple)):
                items, touched, spliced = self.sequence(node, name, value)
                if touched:
                    changes[name] = type(value)(items)
                    reshaped = reshaped or spliced
                continue
            child = where.get(id(value))  # None for whitespace and values that are not nodes
            if child is not None and inside(child):
                new = self.rebuild(value, child)
                if not is_node(type(new)):
                    raise NotLocal(f"a {type(new).__name__} where one {type(value).__name__} must stay")
                changes[name] = new
        updated = node.with_changes(**changes) if changes else node
        if index in self.chosen:
            leave = getattr(self.transformer, f"leave_{type(node).__name__}", None)
            result = leave(node, updated) if leave is not None else updated
        else:
            result = updated
            if not reshaped:  # otherwise children() reads its fields
                self.index._rebuilt[id(updated)] = (updated, node)  # the same children but the replaced ones
        if is_node(type(result)):
            self.index._replaced[id(node)] = result
        return result


_LAST: list[Index] = []  # the index of the module analysed last (one module at a time)


def index_of(module: cst.Module) -> Index:
    """The Index of ``module``, built once (kept for the module analysed last)."""
    if _LAST and _LAST[0].module is module:
        return _LAST[0]
    index = Index(module)
    _LAST[:] = [index]
    return index


def forget() -> None:
    """Drop the index of the module analysed last, and the module with it."""
    _LAST.clear()


def source_text(node: cst.CSTNode) -> str | None:
    """The source text of ``node``, read through the last Index; None for a node it does not
    cover. It is ``cst.Module([]).code_for_node(node)`` but for whitespace: a line break inside
    ``node`` is the module's newline followed by the indent of the block around it."""
    return _LAST[0].text(node) if _LAST else None


def visit(node: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """``node.visit(visitor)``, replayed over every part of ``node`` the last Index covers.

    Parts it does not cover (nodes a rewrite built or rebuilt) are walked one level at a time
    with ``children``, in the same order LibCST visits them.
    """
    table = _replayable(type(visitor))
    if not _LAST or table is None:
        node.visit(visitor)
        return
    index = _LAST[0]
    where = index._where
    start = where.get(id(node))
    if start is not None:
        index._replay(start, table, visitor)
        return

    _mixed(index, table, visitor, node)


def _mixed(index: Index, table: _Table, visitor: cst.CSTVisitor, current: cst.CSTNode) -> None:
    """``visit`` of a node the index may not cover (a function of its own, not a closure: a
    closure that calls itself is a reference cycle, which keeps the module until a collection)."""
    at = index._where.get(id(current))
    if at is not None:
        index._replay(at, table, visitor)
        return
    enter, leave = table.get(type(current), _NO_METHODS)
    if enter is None or enter(visitor, current) is not False:
        for child in index.children(current):  # whitespace only holds whitespace: never visited
            _mixed(index, table, visitor, child)
    if leave is not None:
        leave(visitor, current)
