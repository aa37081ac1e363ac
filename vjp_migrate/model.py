"""Stage 0: the plain data passed between the pipeline stages."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # libcst loads only when a file needs parsing (start-up time)
    import libcst as cst


class ArgKind(enum.Enum):
    STATIC = "static"
    ARRAY = "array"
    UNKNOWN = "unknown"


class FixSafety(enum.Enum):
    SAFE = "safe"
    UNSAFE = "unsafe"
    NONE = "none"


class Status(enum.Enum):
    OK = "ok"
    SKIPPED = "skipped"
    FAILED = "failed"


@dataclass(frozen=True)
class Position:
    line: int
    column: int  # 1-based, like flake8 and ruff


@dataclass(frozen=True)
class Evidence:
    """One reason for a classification: what was seen and where."""

    kind: ArgKind
    text: str
    line: int | None = None
    path: str | None = None  # the file the line is in, when it is another file of the run (a rule there)
    cell: int | None = None  # notebooks: the 1-based cell the line is counted in


@dataclass(frozen=True)
class JitSpec:
    """A ``@jax.jit`` / ``@partial(jax.jit, ...)`` decorating a fwd or bwd rule."""

    decorator: cst.Decorator
    static_argnums: tuple[int, ...] | None  # None: given by something other than int literals
    static_argnames: tuple[str, ...] | None
    positional_options: tuple[str, ...] = ()  # other keywords naming positions (donate_argnums...)


PRIMAL_ROLE = "the primal"  # the role a primal is looked up in, like a rule's "fwd" or "bwd"


@dataclass(frozen=True)
class FunctionRef:
    """A fwd or bwd rule found (or not) for a custom_vjp."""

    name: str
    # For a lambda rule, an analysis view: ``def lambda(<its params>): return <its body>``
    # around the lambda's own nodes (only lambda_node is in the module).
    node: cst.FunctionDef | None
    problem: str | None = None  # why it cannot be rewritten, when node is None or unusable
    # Imported rules (project.py): the module it is imported from, and the file holding
    # ``node`` when that is not the primal's file.
    module: str | None = None
    path: str | None = None
    lambda_node: cst.Lambda | None = None
    def_name: str | None = None  # a free name, for a lambda bwd that must become a def
    bound_args: int = 0  # leading parameters bound by ``functools.partial(rule, ...)``
    jit: JitSpec | None = None
    decorator_problem: str | None = None  # a decorator that ties the rule's signature


@dataclass(frozen=True)
class NondiffConstant:
    """The module constant nondiff_argnums names (`_NONDIFF = (0, 2)`), when the site can only be
    reading that one binding of the name."""

    assign: cst.Assign  # its `NAME = value` statement, at module level
    # Something else may read it (another reference in the module, a public name another module
    # may import): fix writes the new positions at the site and leaves the constant as it is.
    shared: bool


@dataclass(frozen=True)
class NondiffSpec:
    """What nondiff_argnums / nondiff_argnames say, and where they are written."""

    positions: tuple[int, ...]  # sorted, merged, as JAX hands them to bwd
    argnums_arg: cst.Arg | None
    argnames_arg: cst.Arg | None
    literal: bool  # False when given by a variable or an expression we cannot read
    problem: str | None = None
    # False when some listed argument's position is not known (an unread expression, or
    # nondiff_argnames of a primal whose signature is not seen): positions lacks it.
    complete: bool = True
    as_list: bool = False  # nondiff_argnums is written as a list: `[0, 1]`, `list(range(2))`
    constant: NondiffConstant | None = None  # nondiff_argnums names it (literal is False)
    # nondiff_argnums is one int, not a sequence: JAX ignores 0 (it is falsy; `positions` then
    # lacks it) and raises TypeError for any other (VJP004).
    bare_int: int | None = None


@dataclass(frozen=True)
class PartialAlias:
    """`vjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))`, the only binding of its name in
    the module, at its top level: `@vjp_w` and `f = vjp_w(_f)` are sites with its nondiff arguments."""

    name: str
    assign: cst.Assign
    call: cst.Call  # the `partial(...)` call
    uses: int  # how often the module writes the name, its binding aside
    exported: bool  # a string of the module holds the name (`__all__`): it stays when unused (plan.aliases)
    # An alias another module defines, imported here (`from mylib.vjp import vjp_w`; ``name`` is
    # the local name, ``assign`` and ``call`` are nodes of that module): the module it is imported
    # from, and how this module spells `jax.custom_vjp` at its top level ("": the fix adds
    # `import jax`; None: it cannot, `jax` names something else).
    module: str | None = None
    custom_vjp: str | None = None


@dataclass(frozen=True)
class VjpSite:
    """One ``jax.custom_vjp`` with its primal, nondiff spec and rules."""

    name: str  # the name users call (the primal's, or the assignment target)
    qualname: str  # Class.method for functions inside classes
    # The primal's def; for a lambda primal an analysis view ``def lambda(<its params>): return
    # <its body>`` like a lambda rule's; None when the primal is no function of the module
    # (``make_impl(cfg)``, ``partial(_impl, cfg)``, ``mod.impl``, a parameter): its body is not seen.
    primal: cst.FunctionDef | None
    params: tuple[str, ...]  # the primal's positional parameter names (fwd's, when primal is None)
    has_varargs: bool
    # The node that carries nondiff_argnums: a Decorator, or the Call of the call form (through
    # an alias: the `@vjp_w` decorator or the `vjp_w(_f)` call).
    carrier: cst.Decorator | cst.Call
    custom_vjp_expr: cst.BaseExpression  # how the module spells jax.custom_vjp
    partial_expr: cst.BaseExpression | None  # the partial(...) function, when used
    nondiff: NondiffSpec
    fwd: FunctionRef | None
    bwd: FunctionRef | None
    defvjp: cst.Call | None
    jit_static: frozenset[int]  # positions a stacked jax.jit treats as static
    problem: str | None = None  # a reason the rules cannot be rewritten (VJP003)
    # Call forms whose primal is no def of the module (lambda included): the expression passed
    # to custom_vjp. Findings and noqa comments then anchor on the call, not on a def.
    primal_expr: cst.BaseExpression | None = None
    # A call form's primal the module imports: where it was looked up. When that module is
    # checked, ``primal`` is its def there, read for evidence and never rewritten.
    primal_from: FunctionRef | None = None
    # The roles ("the primal", "fwd", "bwd") a call builds (`f, f_fwd, f_bwd = make("cpu")`), when
    # fwd or bwd is one: no function is read, only the calls of the site (``problem`` names them).
    built_by: tuple[tuple[str, cst.Call], ...] = ()
    # `@vjp_w` or `vjp_w(_f)` through a module alias of `partial(jax.custom_vjp, ...)`: the
    # carrier is that decorator or call, nondiff_argnums is the alias's.
    alias: PartialAlias | None = None

    @property
    def anchor(self) -> cst.CSTNode:
        """Where a finding about the whole site points: the primal's name, or its expression."""
        if self.primal_expr is not None:
            return self.primal_expr
        assert self.primal is not None
        return self.primal.name


@dataclass(frozen=True)
class ArgInfo:
    index: int
    name: str
    kind: ArgKind
    evidence: tuple[Evidence, ...]
    strong: bool  # clear array evidence: fixing it is safe
    fixable: bool = True  # False: no fix suits it, not even an unsafe one


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    function: str
    argument: str | None
    index: int | None
    fixable: bool
    fix_safety: FixSafety
    reasons: tuple[Evidence, ...] = ()
    cell: int | None = None  # notebooks: the 1-based cell; line and column are then within it
    also_touches: tuple[str, ...] = ()  # the other files the fix of this finding changes
    notes: tuple[str, ...] = ()  # what else to know of its fix (an alias it leaves: findings.with_alias_notes)


class Layout(enum.Enum):
    """How the saved arguments travel in the residual (docs/rewrite-rules.md, sections 2-3)."""

    UNCHANGED = "unchanged"  # nothing to save: bwd never reads the moved arguments
    NONE = "none"  # the old residual is None: the saved arguments become the residual
    TUPLE = "tuple"  # the old residual is a tuple literal that bwd unpacks once: extend both
    GENERAL = "general"  # anything else: residual becomes (saved..., old residual)
    # fwd returns a name it binds once to a tuple literal, bwd unpacks once: extend both statements
    VARIABLE = "variable"
    # fwd as GENERAL, and bwd binds the residual in one `target = res`: that becomes `saved..., target = res`
    BOUND = "bound"


@dataclass(frozen=True)
class JitEdit:
    """New static arguments of a rule's jax.jit (an emptied keyword goes away)."""

    decorator: cst.Decorator
    static_argnums: tuple[int, ...]
    static_argnames: tuple[str, ...]


@dataclass(frozen=True)
class OrNone:
    """The type `X | None` for the module's annotation ``item`` (`tuple[X, ...]` of a bwd that
    now returns None items too; docs/rewrite-rules.md, section 3h)."""

    item: cst.BaseExpression


@dataclass(frozen=True)
class TupleType:
    """A tuple annotation the rewrite writes (docs/rewrite-rules.md, section 3h): ``items`` in
    order, each an annotation of the module (written as it is), a nested TupleType or None (the
    type `None`). ``old``: the subscript it changes, whose spelling, items and layout stay; else a
    new ``spelling[...]`` (`tuple`, `Tuple`, `typing.Tuple`: the code of the subscripted name)."""

    spelling: str
    items: tuple[cst.BaseExpression | TupleType | OrNone | None, ...]
    old: cst.Subscript | None = None


@dataclass(frozen=True)
class TypedParam:
    """A parameter of a def with type comments, and its own PEP 484 type comment (`x,  # type: A`,
    that is ``head`` + the type's code + ``tail``, `  # noqa`; ``head`` None: it has none)."""

    param: cst.Param  # the def's parameter
    view: cst.Param  # the same parameter annotated with its type, if any (TypeComments.view)
    head: str | None
    tail: str


@dataclass(frozen=True)
class TypeComments:
    """A rule's PEP 484 type comments (docs/rewrite-rules.md, section 3h), read as annotations of
    ``view``, the def annotated with their types, which plan.annotations retypes as it retypes
    any def; rewrite.type_comments writes the new types back into the comments."""

    func: cst.FunctionDef  # the rule's def in the module
    view: cst.FunctionDef
    # The function's `# type: (A, B) -> R` (``head`` + signature + ``tail``): on the def line
    # (``line`` None) or on the line'th of the lines above its first statement. None: only its
    # parameters have comments of their own.
    comment: cst.Comment | None
    line: int | None
    head: str
    tail: str
    listed: bool  # the comment lists the parameters' types, not `(...) -> R`
    self_omitted: bool  # it leaves out a method's first parameter, as PEP 484 allows
    params: tuple[TypedParam, ...]  # every parameter, in order
    any_type: str | None  # how the module spells typing.Any, for a type no longer known
    # What plan.annotations retypes: the view's parameters and the view itself (its return type).
    retyped: tuple[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None], ...] = ()


@dataclass(frozen=True)
class RewritePlan:
    """What to change for one site; rewrite/ applies it, nothing else decides."""

    site: VjpSite
    moved: tuple[int, ...]  # positions leaving nondiff_argnums
    kept: tuple[int, ...]  # positions staying in nondiff_argnums
    saved_fwd_names: tuple[str, ...]  # fwd's names for the saved arguments, in position order
    saved_bwd_names: tuple[str, ...]  # bwd's names for the same arguments
    moved_bwd_params: tuple[str, ...]  # bwd parameters that leave its signature
    layout: Layout
    residual_param: str  # bwd's residual parameter name after the change
    old_residual_name: str  # the unpack target standing for the old residual (GENERAL)
    tuple_unpack: cst.Assign | None  # the `a, b = res` statement extended (TUPLE)
    fwd_returns: tuple[cst.Return, ...]
    bwd_returns: tuple[cst.Return, ...]
    none_slots: tuple[int, ...]  # cotangent positions that get None
    fwd_assign: cst.Assign | None = None  # fwd's `res = a, b` statement extended (VARIABLE)
    temp_name: str = ""  # bwd's name for a returned value that is sliced around a None
    temp_returns: tuple[cst.Return, ...] = ()  # bwd returns rewritten through `temp_name`
    starred_lengths: tuple[tuple[str, int], ...] = ()  # `*name` in a bwd return, name bound to a literal
    # bwd's `grads = (a, b)` whose name only `return grads` reads: the literal gains the Nones
    cotangent_literals: tuple[cst.Assign, ...] = ()
    dels: tuple[tuple[cst.Del, tuple[str, ...]], ...] = ()  # bwd `del`s of parameters that leave
    reused: tuple[tuple[cst.Name, str], ...] = ()  # unpack targets renamed (half-migrated code)
    # bwd's names for arguments fwd's residual holds already, and the items to read them from:
    # `w = res[1]` at the top of bwd (half-migrated code whose bwd indexes the residual)
    read_at: tuple[tuple[str, str], ...] = ()
    jit_edits: tuple[JitEdit, ...] = ()
    bwd_def_name: str | None = None  # a bwd lambda becomes a def of this name before defvjp
    # Annotations the change would make wrong (docs/rewrite-rules.md, section 3h): a Param gets
    # the new annotation, a FunctionDef the new return annotation (None: removed; a TupleType:
    # its old annotation updated).
    retyped: tuple[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None], ...] = ()
    type_comments: tuple[TypeComments, ...] = ()  # fwd's and bwd's PEP 484 type comments to rewrite
    line_length: int | None = None  # Settings.line_length, for rewrite.wrap


@dataclass(frozen=True)
class NondiffAfter:
    """A custom_vjp function as the module's calls see it after the fix (plan.closures): one of
    the module's, or one it imports (project.Project.imported_callees)."""

    params: tuple[str, ...]  # the primal's positional parameters, for arguments passed by keyword
    kept: frozenset[int] | None  # the positions that stay in nondiff_argnums; None: not all are known
    # For one of another file, where it is as the reason says it (" in pkg/b.py (line 6)"); else "".
    where: str = ""


@dataclass(frozen=True)
class SiteDecision:
    """Everything check reports and fix applies for one site."""

    site: VjpSite
    infos: tuple[ArgInfo, ...]
    moved: tuple[int, ...]  # what fix would move with the current settings
    plan: RewritePlan | None
    problem: str | None  # VJP003 detail
    inconsistency: str | None  # VJP004 detail
    blocked: str | None = None  # VJP002 detail: what blocks moving the unknown arguments with the arrays


@dataclass(frozen=True)
class Settings:
    select: frozenset[str]
    unsafe_fixes: bool = False
    # Per-function classification overrides from the configuration: "module.function:argument"
    # (a dotted suffix of the module path is enough; the argument by name or position).
    static_args: frozenset[str] = frozenset()
    array_args: frozenset[str] = frozenset()
    # The project's line length (config.line_length), which a line the rewrite makes longer
    # keeps to; None: not configured (rewrite.wrap: 88, or the file's longest line).
    line_length: int | None = None


@dataclass(frozen=True)
class FixResult:
    source: str  # the new source (the old one when nothing changed)
    changed: bool
    diagnostics: tuple[Diagnostic, ...]  # every finding in the original source
    fixed: tuple[Diagnostic, ...]  # the findings the change fixed

    @property
    def remaining(self) -> tuple[Diagnostic, ...]:
        fixed = set(self.fixed)
        return tuple(d for d in self.diagnostics if d not in fixed)


@dataclass(frozen=True)
class FileResult:
    path: Path
    status: Status
    reason: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    fixed: tuple[Diagnostic, ...] = ()
    old_text: str | None = None
    new_text: str | None = None
    written: bool = False
    encoding: str = "utf-8"  # the file's, as tokenize names it ("utf-8-sig" with a BOM): its diff's bytes
    # Modules this file imports custom_vjp rules (or nondiff_argnums constants) from, and those
    # it imports helpers from that it passes nondiff arguments to: the run analyses the file again
    # with them when they are among its files (project.py; a file with only helpers to follow is
    # analysed on its own, in a worker).
    imported_rules: tuple[str, ...] = ()
    imported_helpers: tuple[str, ...] = ()
    # Modules whose custom_vjp functions it passes moved arguments to (callees.py): analysed again
    # with them, together, when they are among the run's files.
    imported_callees: tuple[str, ...] = ()
    # (role, name): the module-level names whose meaning the file's fix changes, its fwd and bwd
    # ("fwd", "bwd") and the imports and aliases of the partial it removes ("import", known to fix
    # only): the run looks for their uses in its other files (cross_uses.py).
    changed_names: tuple[tuple[str, str], ...] = ()

    @property
    def changed(self) -> bool:
        return self.new_text is not None and self.new_text != self.old_text

    @property
    def imports_from_others(self) -> bool:
        """Whether phase 2 may have more to say: the file was analysed and imports rules, helpers or callees."""
        return self.status is Status.OK and bool(self.imported_rules or self.imported_helpers or self.imported_callees)

    @property
    def remaining(self) -> tuple[Diagnostic, ...]:
        fixed = set(self.fixed)
        return tuple(d for d in self.diagnostics if d not in fixed)
