"""Plan, step 6b: whether a moved argument would end up captured by a function that the primal,
fwd or bwd passes at a position of a custom_vjp call that stays in nondiff_argnums.

Such a position is a static argument (under `jax_custom_vjp3`, the re-implementation where
nondiff arguments are static, jit and vmap raise UnexpectedTracerError for the Tracer the
function closes over). Once moved, the argument can be a Tracer, and no residual or None placement
changes that: the site cannot be rewritten. A function is a lambda, a nested def, or a
``functools.partial(...)`` call, written at the call or bound to a name first; what it captures is
the moved argument itself or a local computed from it. The value itself passed there (`inner(x,
w)` where `inner` keeps `w` nondiff, say because its own rewrite is refused) is refused alike:
every JAX raises UnexpectedTracerError for a Tracer in a nondiff position. A custom_vjp the
module imports counts too (``imported``, project.Project.imported_callees): it is looked up only
for a call that gets such a value, so no other file is read for a site that passes none.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import PARTIAL, ImportTable, dotted, target_names
from vjp_migrate.model import NondiffAfter, RewritePlan, SiteDecision, VjpSite
from vjp_migrate.plan.bodies import names_in, param_names
from vjp_migrate.sites import positional_params
from vjp_migrate.vocabulary import METADATA_ATTRIBUTES

# A called name the module imports (`inner`, `ops.inner`) -> the custom_vjp it is, as the fix
# leaves it; None when it is none, or cannot be told.
ImportedCallees = Callable[[str], NondiffAfter | None]


def nondiff_after(decisions: tuple[SiteDecision, ...]) -> dict[str, NondiffAfter]:
    """The module's custom_vjp functions by the names calls use, with the positions their plans
    leave in nondiff_argnums (all of them for a site without a plan)."""
    return nondiff_applied(decisions, [d.plan for d in decisions if d.plan is not None])


def nondiff_applied(decisions: Sequence[SiteDecision], applied: Sequence[RewritePlan]) -> dict[str, NondiffAfter]:
    """``nondiff_after`` when only the plans ``applied`` are (every other site keeps all its positions)."""
    chosen = {id(plan) for plan in applied}
    return _by_name((d.site, d.plan.moved if d.plan is not None and id(d.plan) in chosen else ()) for d in decisions)


def nondiff_hoped(sites: Sequence[VjpSite], moved: Sequence[tuple[int, ...]]) -> dict[str, NondiffAfter]:
    """``nondiff_after`` when every site's plan moves ``moved`` (what the settings would move): the
    start of ``api``'s rounds, which only ever keep more positions."""
    return _by_name(zip(sites, moved, strict=True))


def kept_more(old: Mapping[str, NondiffAfter], new: Mapping[str, NondiffAfter]) -> dict[str, NondiffAfter]:
    """Both together: a position either keeps stays (so the rounds end)."""
    merged = dict(old)
    for name, after in new.items():
        merged[name] = _union(merged[name], after) if name in merged else after
    return merged


def _by_name(pairs: Iterable[tuple[VjpSite, tuple[int, ...]]]) -> dict[str, NondiffAfter]:
    found: dict[str, NondiffAfter] = {}
    for site, moved in pairs:
        kept = frozenset(p for p in site.nondiff.positions if p not in moved) if site.nondiff.complete else None
        after = NondiffAfter(site.params, kept)
        for name in {site.name, site.qualname}:  # two sites of one name: either may be the one called
            found[name] = _union(found[name], after) if name in found else after
    return found


def _union(a: NondiffAfter, b: NondiffAfter) -> NondiffAfter:
    kept = None if a.kept is None or b.kept is None else a.kept | b.kept
    return NondiffAfter(a.params, kept, a.where)


def static_capture(
    site: VjpSite,
    moved: tuple[int, ...],
    moved_bwd: tuple[str, ...],
    callees: Mapping[str, NondiffAfter],
    imports: ImportTable,
    imported: ImportedCallees | None = None,
) -> str | None:
    """Why moving ``moved`` would leave one of them captured in a static argument, or None.
    ``callees``: the other custom_vjp functions of the module (``nondiff_after``); the site's own
    positions are those ``moved`` leaves. ``imported``: those of other files, asked about a
    called name the module imports."""
    own = _by_name([(site, moved)])[site.name]
    targets = {**callees, site.name: own, site.qualname: own}
    for role, func, names in _roles(site, moved, moved_bwd):
        found = _first_capture(func, names, _Reachable(targets, imports, imported))
        if found is None:
            continue
        (passed, read), tainted, position, (callee, where) = found
        origin = _origin(tainted, read)
        computed = f", computed from `{origin}`" if origin != read else ""
        if passed == read:  # the value itself
            what, how = f"`{read}`{computed}", "passed as a static argument"
        else:
            what = f"a function closing over `{read}`{computed}"
            what, how = f"`{passed}` ({what})" if passed is not None else what, "captured in a static argument"
        return (
            f"{role}`{func.name.value}` passes {what} to position {position} of `{callee}`{where}, which stays in "
            f"nondiff_argnums: `{origin}` would be a Tracer {how}"
        )
    return None


def _origin(tainted: Mapping[str, str], name: str) -> str:
    """The moved argument ``name`` is computed from (``tainted`` holds each name's one step back)."""
    while tainted[name] != name:
        name = tainted[name]
    return name


def _roles(
    site: VjpSite, moved: tuple[int, ...], moved_bwd: tuple[str, ...]
) -> Iterator[tuple[str, cst.FunctionDef, frozenset[str]]]:
    """Each function of the site with the names the moved arguments have in it."""
    if site.primal is not None and site.primal_from is None:
        params = positional_params(site.primal)
        yield "the primal ", site.primal, frozenset(params[p] for p in moved if p < len(params))
    if site.fwd is not None and site.fwd.node is not None:
        params = positional_params(site.fwd.node)[site.fwd.bound_args :]
        yield "fwd ", site.fwd.node, frozenset(params[p] for p in moved if p < len(params))
    if site.bwd is not None and site.bwd.node is not None:
        yield "bwd ", site.bwd.node, frozenset(moved_bwd)


class _Reachable:
    """The custom_vjp functions a site's calls may reach: ``targets`` (the module's, by the names
    calls use), and through ``imported`` those of the names the module imports."""

    def __init__(
        self, targets: Mapping[str, NondiffAfter], imports: ImportTable, imported: ImportedCallees | None
    ) -> None:
        self.targets, self.imports, self.imported = targets, imports, imported

    def may_be(self, name: str) -> bool:
        """Whether a call of ``name`` may be one of them (nothing is read to tell)."""
        if name in self.targets:
            return True
        head = name.partition(".")[0]
        return self.imported is not None and head in self.imports.aliases and head not in self.imports.shadowed

    def after(self, name: str) -> NondiffAfter | None:
        """What a call of ``name`` (``may_be``) reaches."""
        if name in self.targets:
            return self.targets[name]
        assert self.imported is not None
        return self.imported(name)


def _first_capture(
    func: cst.FunctionDef, moved: frozenset[str], callees: _Reachable
) -> tuple[tuple[str | None, str], dict[str, str], int, tuple[str, str]] | None:
    """The first function passed at a static position of a call in ``func`` that captures a name
    computed from ``moved``: (``_captured``'s pair, the names computed from ``moved``
    (``_tainted``), the position, the callee and where it is)."""
    if not moved:
        return None
    body = _Body(callees)
    for statement in func.body.body:
        walk.visit(statement, body)
    if not body.calls:
        return None
    tainted = _tainted(body, {name: name for name in moved})
    for call, callee in body.calls:
        after: NondiffAfter | None = None
        for slot, value in _arguments(call):
            captured = _captured(value, tainted, body.functions, callees.imports)
            if captured is None:
                continue
            if after is None:
                after = callees.after(callee)  # an imported one is looked up only now
                if after is None:
                    break
            position = slot if isinstance(slot, int) else after.params.index(slot) if slot in after.params else None
            if position is not None and (after.kept is None or position in after.kept):
                return captured, tainted, position, (callee, after.where)
    return None


class _Body(cst.CSTVisitor):
    """A function's bindings (targets and value), nested defs, names bound to functions, and its
    calls that may reach ``callees``; nested scopes included."""

    def __init__(self, callees: _Reachable) -> None:
        self.callees, self.imports = callees, callees.imports
        self.bindings: list[tuple[tuple[str, ...], cst.CSTNode]] = []
        self.defs: list[cst.FunctionDef] = []
        self.functions: set[str] = set()
        self.calls: list[tuple[cst.Call, str]] = []

    def _bind(self, target: cst.CSTNode, value: cst.CSTNode | None) -> None:
        if value is not None:
            self.bindings.append((tuple(target_names(target)), value))

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind(target.target, node.value)
            if isinstance(node.value, cst.Lambda) or _is_partial(node.value, self.imports):
                self.functions.update(target_names(target.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind(node.target, node.value)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self._bind(node.target, node.iter)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.defs.append(node)
        self.functions.add(node.name.value)

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func)
        if name is not None and self.callees.may_be(name):
            self.calls.append((node, name))


def _is_partial(value: cst.BaseExpression, imports: ImportTable) -> bool:
    return isinstance(value, cst.Call) and imports.is_one_of(value.func, PARTIAL)


def _tainted(body: _Body, tainted: dict[str, str]) -> dict[str, str]:
    """``tainted`` (name -> the name it is computed from; a moved argument's is itself) with every
    local computed from one of them, and every nested def reading one it does not bind itself."""
    changed = True
    while changed:
        changed = False
        for targets, value in body.bindings:
            origin = _reads(value, tainted)
            for target in targets:
                if origin is not None and target not in tainted:
                    tainted[target], changed = origin, True
        for func in body.defs:
            if func.name.value not in tainted and (read := _closes_over(func, tainted)) is not None:
                tainted[func.name.value], changed = read, True
    return tainted


def _captured(
    value: cst.BaseExpression, tainted: Mapping[str, str], functions: set[str], imports: ImportTable
) -> tuple[str | None, str] | None:
    """When ``value`` is a function capturing a tainted name: the name it is passed by (None for
    a lambda or partial written at the call) and the tainted name it captures; when it reads a
    tainted name itself (not only its shape or dtype): that name, twice."""
    read: str | None = None
    if isinstance(value, cst.Lambda):
        read = _closes_over(value, tainted)
    elif _is_partial(value, imports):
        read = _reads(value, tainted)
    elif isinstance(value, cst.Name) and value.value in functions and value.value in tainted:
        return value.value, tainted[value.value]
    elif (read := _reads(value, tainted)) is not None:  # the value itself, or one computed from it
        return read, read
    return None if read is None else (None, read)


def _closes_over(func: cst.FunctionDef | cst.Lambda, tainted: Mapping[str, str]) -> str | None:
    """The tainted name ``func`` reads without binding it itself, or takes as a default."""
    own = param_names(func) | (names_in(func).bound if isinstance(func, cst.FunctionDef) else set())
    return _reads(func.body, {n: o for n, o in tainted.items() if n not in own}) or _reads(func.params, tainted)


def _arguments(call: cst.Call) -> Iterator[tuple[int | str, cst.BaseExpression]]:
    """The call's arguments with the position or keyword each fills (those after a `*args` are unknown)."""
    index = 0
    for arg in call.args:
        if arg.star == "*":
            return
        if arg.star:
            continue
        if arg.keyword is None:
            yield index, arg.value
            index += 1
        else:
            yield arg.keyword.value, arg.value


def _reads(node: cst.CSTNode, names: Mapping[str, str]) -> str | None:
    """The first of ``names`` that ``node`` reads (not as an attribute's or a keyword's name, nor
    for its shape, dtype, ndim or size)."""
    reads = _Reads(names)
    walk.visit(node, reads)
    return reads.found


class _Reads(cst.CSTVisitor):
    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = names
        self.found: str | None = None

    def visit_Name(self, node: cst.Name) -> None:
        if self.found is None and node.value in self.names:
            self.found = node.value

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if node.attr.value not in METADATA_ATTRIBUTES:  # `c.shape` is concrete for a Tracer too
            walk.visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk.visit(node.value, self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:  # its default only: the name is bound, not read
        if node.default is not None:
            walk.visit(node.default, self)
        return False
