"""Rewrite, step 4: imports the rewrite made unused (`functools.partial` above all), removed with
the blank lines and comments around them."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import dotted, small_statements
from vjp_migrate.noqa import silences
from vjp_migrate.plan.type_comments import names_read
from vjp_migrate.rewrite.lists import names_one_of, without


class NameUses(cst.CSTVisitor):
    """Which of ``names`` (None: any name) a node reads, attributes' own names aside; and the
    imported names an unused-import fix leaves (``kept``), as ruff's F401 does: listed in
    `__all__` (the module exports them), or bound on a line whose `# noqa` covers F401."""

    def __init__(self, names: set[str] | None) -> None:
        self.names = names
        self.used: set[str] = set()
        self.kept: set[str] = set()

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> None:
        if self.names is None or node.value in self.names:
            self.used.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk.visit(node.value, self)
        return False

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        comment = node.trailing_whitespace.comment
        if comment is not None and silences(comment.value, "F401"):
            for small in node.body:
                if isinstance(small, (cst.Import, cst.ImportFrom)) and not isinstance(small.names, cst.ImportStar):
                    self.kept.update(_bound_name(alias).split(".")[0] for alias in small.names)
        return True

    def visit_Assign(self, node: cst.Assign) -> None:
        if any(isinstance(t.target, cst.Name) and t.target.value == "__all__" for t in node.targets):
            self._exported(node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == "__all__":
            self._exported(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if isinstance(node.target, cst.Name) and node.target.value == "__all__" and node.value is not None:
            self._exported(node.value)

    def _exported(self, value: cst.BaseExpression) -> None:
        if isinstance(value, (cst.List, cst.Tuple)):
            for element in value.elements:
                if isinstance(element.value, cst.SimpleString) and isinstance(
                    name := element.value.evaluated_value, str
                ):
                    self.kept.add(name)


def type_comment_uses(module: cst.Module, names: set[str], before: cst.Module) -> set[str]:
    """Which of ``names`` the PEP 484 type comments of ``module`` read (mypy and pyflakes take
    them as uses of the imports). ``before``: the module the change started from, whose text
    tells cheaply when it has no type comment at all (none the change left could read a name)."""
    text = walk.source_text(before)
    if text is not None and "type:" not in text:
        return set()
    found: set[str] = set()
    for comment in walk.comments(module):
        found |= names_read(comment) & names
    return found


class DropImports(cst.CSTTransformer):
    """Remove import aliases binding the given names (the change made them unused).

    A statement line that goes leaves its blank lines above it to the next statement, unless
    that one is set apart already: the gap after a docstring or between groups stays. A block
    (`try:`, `if TYPE_CHECKING:`...) whose every line would go keeps its imports unchanged.
    """

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.emptied: set[int] = set()  # id() of the statement lines this visit removed
        self.dropped: set[str] = set()  # the names whose imports it took out (a block left whole keeps them)

    def leave_SimpleStatementLine(
        self, original_node: cst.SimpleStatementLine, updated_node: cst.SimpleStatementLine
    ) -> cst.SimpleStatementLine | cst.RemovalSentinel:
        if not updated_node.body and original_node.body:
            self.emptied.add(id(original_node))
            return cst.RemoveFromParent()
        return updated_node

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        if not updated_node.body:  # a person keeps `try: import x` rather than write `try: pass`
            return original_node
        return updated_node.with_changes(body=self.close_gaps(original_node.body, updated_node.body))

    def leave_SimpleStatementSuite(
        self, original_node: cst.SimpleStatementSuite, updated_node: cst.SimpleStatementSuite
    ) -> cst.SimpleStatementSuite:
        return updated_node if updated_node.body else original_node

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        return updated_node.with_changes(body=self.module_body(original_node, updated_node.body))

    def module_body(self, module: cst.Module, new: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``close_gaps`` for a module: a file no longer starts with the lines that went, and
        no longer starts with a blank line either (after its header comments one stays)."""
        body = self.close_gaps(module.body, new)
        header = module.header
        if body and module.body and id(module.body[0]) in self.emptied and (not header or header[-1].comment is None):
            lines = list(_leading_lines(body[0]))
            body[0] = body[0].with_changes(leading_lines=lines[len(blank_lead(body[0])) :])
        return body

    def close_gaps(self, old: Sequence[cst.BaseStatement], new: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
        """``new``: ``old`` without the lines this visit emptied (the others in order, maybe
        changed); each removed line's leading blank lines moved to the statement after it."""
        body: list[cst.BaseStatement] = []
        kept = iter(new)
        gap: list[cst.EmptyLine] = []
        heading: list[cst.EmptyLine] = []  # comment lines above the removed lines, since the last gap
        for stmt in old:
            if id(stmt) in self.emptied:
                blank = blank_lead(stmt)
                gap = gap or blank
                heading = [*([] if blank else heading), *_leading_lines(stmt)[len(blank) :]]
                continue
            following = next(kept)
            if heading and not blank_lead(following) and _is_import(following) and not self._about_removed(heading):
                following = following.with_changes(leading_lines=[*heading, *_leading_lines(following)])
            if gap and not blank_lead(following):
                following = following.with_changes(leading_lines=[*gap, *_leading_lines(following)])
            body.append(following)
            gap, heading = [], []
        return body

    def _about_removed(self, lines: Sequence[cst.EmptyLine]) -> bool:
        """Whether comment lines above removed imports name one of them (else they head a group)."""
        return any(line.comment and names_one_of(line.comment.value, self.names) for line in lines)

    def _keep(self, alias: cst.ImportAlias) -> bool:
        return _bound_name(alias).split(".")[0] not in self.names

    def drops(self, node: cst.BaseSmallStatement) -> bool:
        """Whether the import ``node`` loses a name."""
        if type(node) is cst.Import or type(node) is cst.ImportFrom:  # `type() is`: see imports.node_types
            names = node.names
            return type(names) is not cst.ImportStar and not all(self._keep(a) for a in names)  # type: ignore[union-attr]
        return False

    def _trim(
        self, node: cst.Import | cst.ImportFrom, names: Sequence[cst.ImportAlias]
    ) -> cst.Import | cst.ImportFrom | cst.RemovalSentinel:
        if all(self._keep(a) for a in names):
            return node
        lpar = node.lpar if isinstance(node, cst.ImportFrom) else None
        lead = lpar.whitespace_after if lpar is not None else None
        kept, lead = without(names, lambda a: not self._keep(a), lead)
        self.dropped.update(_bound_name(a).split(".")[0] for a in names if not self._keep(a))
        if not kept:
            return cst.RemoveFromParent()
        if lpar is None:  # `import a, b` / `from m import a, b` take no trailing comma
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        elif lead is not None:
            node = node.with_changes(lpar=lpar.with_changes(whitespace_after=lead))
        return node.with_changes(names=kept)

    def leave_ImportFrom(
        self, original_node: cst.ImportFrom, updated_node: cst.ImportFrom
    ) -> cst.ImportFrom | cst.RemovalSentinel:
        if isinstance(updated_node.names, cst.ImportStar):
            return updated_node
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]

    def leave_Import(self, original_node: cst.Import, updated_node: cst.Import) -> cst.Import | cst.RemovalSentinel:
        return self._trim(updated_node, updated_node.names)  # type: ignore[return-value]


def _is_import(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in stmt.body
    )


def _bound_name(alias: cst.ImportAlias) -> str:
    bound = alias.asname.name if alias.asname else alias.name
    return (dotted(bound) if isinstance(bound, (cst.Name, cst.Attribute)) else None) or ""


def _leading_lines(stmt: cst.BaseStatement) -> Sequence[cst.EmptyLine]:
    lines: Sequence[cst.EmptyLine] = getattr(stmt, "leading_lines", ())  # every statement kind has them
    return lines


def blank_lead(stmt: cst.BaseStatement) -> list[cst.EmptyLine]:
    """The blank lines (no comment) that start ``stmt``'s leading lines."""
    lines: list[cst.EmptyLine] = []
    for line in _leading_lines(stmt):
        if line.comment is not None:
            break
        lines.append(line)
    return lines


# The nodes DropImports has a leave method for, but the module.
_DROPPER_KINDS = frozenset(
    {cst.SimpleStatementLine, cst.IndentedBlock, cst.SimpleStatementSuite, cst.Import, cst.ImportFrom}
)


def drop_imports(module: cst.Module, dropper: DropImports, index: walk.Index) -> cst.Module:
    """``module.visit(dropper)``, run only on the top-level statements that hold an import
    (as ``index.transform`` of their lines, blocks and imports, where ``index`` covers them)."""
    body: list[cst.BaseStatement] = []
    for stmt in module.body:
        if not any(dropper.drops(s) for s in small_statements(stmt)):  # unchanged by the visit
            body.append(stmt)
            continue
        new = _drop_from(stmt, dropper, index) if index.covers(stmt) else stmt.visit(dropper)
        if isinstance(new, cst.BaseStatement):
            body.append(new)
    return module.with_changes(body=dropper.module_body(module, body))


def _drop_from(stmt: cst.BaseStatement, dropper: DropImports, index: walk.Index) -> object:
    """``stmt.visit(dropper)`` for a statement of the indexed module. The transform's root must
    stay a node, so a statement line's own leave (which may remove it) is called here."""
    targets = index.descendants(stmt, _DROPPER_KINDS)
    if type(stmt) is not cst.SimpleStatementLine:
        return index.transform(stmt, dropper, targets, again=True)
    updated = index.transform(stmt, dropper, targets[1:], again=True)
    return dropper.leave_SimpleStatementLine(stmt, updated)
