"""Walk, step 1: the one code generation of a module, with hooks that record what later steps read.

Code generation is the cheapest walk LibCST has, and it calls ``before_codegen`` and
``after_codegen`` for every node in source order. ``Recorder`` records there every node but
whitespace in visiting order, where its subtree ends and its token range; and the syntactic
positions nodes record (``PositionProvider``'s overrides), resolved later (positions.py).
``plain_parentheses`` makes the walk cheaper without changing what it generates.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import libcst as cst
from libcst._nodes.expression import _BaseParenthesizedNode
from libcst._nodes.internal import CodegenState

if TYPE_CHECKING:
    from types import TracebackType

# Nodes no analysis visits: not recorded, so replays walk fewer nodes.
UNRECORDED = (
    cst.SimpleWhitespace,
    cst.ParenthesizedWhitespace,
    cst.TrailingWhitespace,
    cst.EmptyLine,
    cst.Newline,
    cst.Comment,
)
UNRECORDED_TYPES = frozenset(UNRECORDED)
UNRECORDED_NAMES = frozenset(t.__name__ for t in UNRECORDED)

Syntactic = tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None, int, int]


class _Closer:
    """What ``record_syntactic_position`` returns: one object for every call (see Recorder)."""

    __slots__ = ("closed", "pending", "tokens")

    def __init__(self, recorder: Recorder) -> None:
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


class Recorder(CodegenState):
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
        if type(node) in UNRECORDED_TYPES:
            return
        order = self.order
        self.stack.append(len(order))
        order.append(node)
        self.ends.append(0)
        self.starts.append(len(self.tokens))
        self.stops.append(0)

    def after_codegen(self, node: cst.CSTNode) -> None:
        if type(node) in UNRECORDED_TYPES:
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


class Recorded:
    """What an Index keeps of the recording (index.py fills it), which the other steps read."""

    module: cst.Module
    _order: list[cst.CSTNode]  # every recorded node, in visiting order
    _kinds: list[type]  # their types
    _ends: list[int]  # where each node's subtree ends in _order
    _where: dict[int, int]  # id(node) -> its place in _order
    _starts: list[int]  # each node's first token
    _stops: list[int]  # and the token after its last
    _tokens: list[str]
    _closed: list[Syntactic]
    _top: list[int]  # the module's statements, comments included
    # What transform built: new node -> (itself, the node it copies), old node -> new node.
    _rebuilt: dict[int, tuple[cst.CSTNode, cst.CSTNode]]
    _replaced: dict[int, cst.CSTNode]
