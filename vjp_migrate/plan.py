"""Stage 7: site + ArgInfo -> a RewritePlan, or the reason it cannot be rewritten (pure: no CST building)."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import ImportTable, dotted, target_names
from vjp_migrate.model import (
    ArgInfo,
    ArgKind,
    JitEdit,
    Layout,
    OrNone,
    RewritePlan,
    Settings,
    SiteDecision,
    TupleType,
    VjpSite,
)
from vjp_migrate.sites import body_statements, ignored_argnames, positional_params, varargs_owner
from vjp_migrate.vocabulary import ARRAY_MODULES
from vjp_migrate.wording import count

RESIDUAL_NAMES = ("res", "residuals", "res_")
TEMP_NAMES = ("grads", "cotangents", "grads_")


class _Returns(cst.CSTVisitor):
    """The function's own return statements (not those of nested functions or lambdas)."""

    def __init__(self) -> None:
        self.returns: list[cst.Return] = []
        self.standalone: set[int] = set()  # returns alone on their line: a statement fits before them
        self.dels: list[cst.Del] = []
        self.assigns: set[int] = set()  # id() of the function's own `=` statements

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        if len(node.body) == 1 and type(node.body[0]) is cst.Return:
            self.standalone.add(id(node.body[0]))

    def visit_Del(self, node: cst.Del) -> None:
        self.dels.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        self.assigns.add(id(node))


class _Names(cst.CSTVisitor):
    """Every name loaded or bound in a function, and which ones its own body rebinds."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {}
        self.bound: set[str] = set()
        self.deleted: set[str] = set()  # names in `del` targets: not counted as reads
        self.stores: dict[str, int] = {}  # of the counts, the plain bindings (`a = ...`, not `a += ...`)

    def _store(self, target: cst.CSTNode) -> None:
        for name in target_names(target):
            self.bound.add(name)
            self.stores[name] = self.stores.get(name, 0) + 1

    def loads(self, name: str) -> int:
        return self.counts.get(name, 0) - self.stores.get(name, 0)

    def visit_Name(self, node: cst.Name) -> None:
        self.counts[node.value] = self.counts.get(node.value, 0) + 1

    def visit_Del(self, node: cst.Del) -> bool:
        for target in del_targets(node):
            if isinstance(target, cst.Name):
                self.deleted.add(target.value)
            else:
                target.visit(self)
        return False

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._store(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self.bound.update(target_names(node.target))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._store(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._store(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._store(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._store(node.name)


class _Bindings(cst.CSTVisitor):
    """Every construct that binds each name in a function, nested scopes included."""

    def __init__(self) -> None:
        self.sites: dict[str, list[cst.CSTNode]] = {}

    def _add(self, target: cst.CSTNode, node: cst.CSTNode) -> None:
        for name in target_names(target):
            self.sites.setdefault(name, []).append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._add(target.target, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._add(node.target, node)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._add(node.target, node)

    def visit_For(self, node: cst.For) -> None:
        self._add(node.target, node)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._add(node.target, node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._add(node.target, node)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._add(node.name, node)

    def visit_Del(self, node: cst.Del) -> None:
        self._add(node.target, node)

    def visit_Param(self, node: cst.Param) -> None:
        self._add(node.name, node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._add(node.name, node)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._add(node.name, node)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self._add(item.name, node)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self._add(item.name, node)

    def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
        if node.asname is None:
            name: cst.BaseExpression = node.name
            while isinstance(name, cst.Attribute):
                name = name.value
            self._add(name, node)


def _body(func: cst.FunctionDef) -> Sequence[cst.CSTNode]:
    """The statements of a function; a one-line body (`def f(x): return x`) gives its small statements."""
    return list(func.body.body)


def _visit(func: cst.FunctionDef, visitor: cst.CSTVisitor) -> None:
    for node in _body(func):
        walk.visit(node, visitor)


def _returns(func: cst.FunctionDef) -> _Returns:
    visitor = _Returns()
    _visit(func, visitor)
    return visitor


def del_targets(node: cst.Del) -> list[cst.BaseExpression]:
    """What one `del` statement deletes: `del a, b[0]` gives a and b[0]."""
    target = node.target
    if isinstance(target, (cst.Tuple, cst.List)):
        return [element.value for element in target.elements]
    return [target]


def own_returns(func: cst.FunctionDef) -> list[cst.Return]:
    return _returns(func).returns


def _dropped_dels(bwd: cst.FunctionDef, unbound: set[str]) -> tuple[tuple[cst.Del, tuple[str, ...]], ...]:
    """bwd's `del` statements naming parameters that leave its signature, with those names."""
    found = []
    for node in _returns(bwd).dels:
        names = tuple(t.value for t in del_targets(node) if isinstance(t, cst.Name) and t.value in unbound)
        if names:
            found.append((node, names))
    return tuple(found)


def names_in(func: cst.FunctionDef) -> _Names:
    visitor = _Names()
    _visit(func, visitor)
    return visitor


def _bindings(func: cst.FunctionDef) -> dict[str, list[cst.CSTNode]]:
    visitor = _Bindings()
    walk.visit(func.params, visitor)
    _visit(func, visitor)
    return visitor.sites


def _literal_binding(name: str, bindings: dict[str, list[cst.CSTNode]]) -> cst.Assign | None:
    """`name = a, b` when that is the only thing binding `name` (no starred items)."""
    sites = bindings.get(name, [])
    if len(sites) != 1 or not isinstance(sites[0], cst.Assign):
        return None
    assign = sites[0]
    target, value = assign.targets[0].target, assign.value
    if (
        len(assign.targets) == 1
        and isinstance(target, cst.Name)
        and isinstance(value, (cst.Tuple, cst.List))
        and not any(isinstance(e, cst.StarredElement) for e in value.elements)
    ):
        return assign
    return None


def _is_bare_value(value: cst.BaseExpression | None, cotangent: str, imports: ImportTable) -> bool:
    if isinstance(value, cst.Call):  # jnp.multiply(g, s) is one array; f_vjp(g) may be a tuple
        return (imports.qualify(value.func) or "").startswith(ARRAY_MODULES)
    return isinstance(value, (cst.BinaryOperation, cst.UnaryOperation, cst.Integer, cst.Float)) or (
        isinstance(value, cst.Name) and value.value == cotangent
    )


def inconsistency(site: VjpSite, imports: ImportTable) -> str | None:
    """The VJP004 detail for a rule whose shape does not fit its primal, if any."""
    fwd = site.fwd.node if site.fwd else None
    # bwd's shape is judged only when every nondiff position is known (how many arguments it gets)
    bwd = site.bwd.node if site.bwd and site.nondiff.complete else None
    n_nondiff = len(site.nondiff.positions)
    ignored = ignored_argnames(site)
    if not n_nondiff and not ignored:
        # positions unreadable (a variable, names of an unseen primal...): nothing can be judged
        return _unread_import(site, imports)
    if n_nondiff and site.nondiff.positions[0] < 0:  # sorted: the first is the most negative
        return (
            f"nondiff_argnums lists position {site.nondiff.positions[0]}, but custom_vjp does not count "
            "positions from the end: JAX passes that argument to bwd and still expects a cotangent for it"
        )
    beyond = [p for p in site.nondiff.positions if p >= len(site.params)]
    if beyond and not site.has_varargs:
        return (
            f"nondiff_argnums lists position {beyond[0]}, but `{_primal_name(site)}` takes "
            f"{count(len(site.params), 'positional parameter')}"
        )
    bwd_bound = site.bwd.bound_args if site.bwd else 0
    fwd_bound = site.fwd.bound_args if site.fwd else 0
    if bwd is not None and not isinstance(bwd.params.star_arg, cst.Param):
        least, most = _arity(bwd, bwd_bound)
        if not least <= n_nondiff + 2 <= most:
            because = (
                f"; JAX ignores `{ignored[0][0]}` in nondiff_argnames: it is {ignored[0][1]}, and only "
                "positional-or-keyword parameters count there"
                if ignored
                else ""
            )
            return (
                f"bwd `{bwd.name.value}` takes {_count_range(least, most)}, but JAX calls it with "
                f"{count(n_nondiff, 'nondiff argument')} + residuals + "
                f"cotangent = {n_nondiff + 2}{because}"
            )
    fwd_varargs = fwd is not None and isinstance(fwd.params.star_arg, cst.Param)
    least, most = _arity(fwd, fwd_bound) if fwd is not None else (0, 0)
    if fwd is not None and not site.has_varargs and not fwd_varargs and not least <= len(site.params) <= most:
        return (
            f"fwd `{fwd.name.value}` takes {_count_range(least, most)} but the primal `{site.name}` "
            f"takes {len(site.params)}"
        )
    if bwd is not None and not site.has_varargs and len(site.params) - n_nondiff == 1:
        params = positional_params(bwd)[bwd_bound:]
        cotangent = params[n_nondiff + 1] if len(params) > n_nondiff + 1 else ""
        if any(_is_bare_value(r.value, cotangent, imports) for r in own_returns(bwd)):
            return f"bwd `{bwd.name.value}` returns a bare value; JAX needs a tuple with one cotangent per argument"
    return None


def _unread_import(site: VjpSite, imports: ImportTable) -> str | None:
    """nondiff_argnums given by an imported name whose value is not read, of a bwd that takes
    nondiff arguments whose names are not the primal's (sites reads the positions from them when
    they are): which arguments it lists cannot be told, and silence would hide a broken rule."""
    arg, bwd = site.nondiff.argnums_arg, site.bwd
    name = dotted(arg.value) if arg is not None else None
    if name is None or name.split(".")[0] not in imports.aliases or bwd is None or bwd.node is None:
        return None
    if site.nondiff.complete or site.nondiff.argnames_arg is not None:
        return None
    leading = positional_params(bwd.node)[bwd.bound_args :][:-2]
    if not leading or isinstance(bwd.node.params.star_arg, cst.Param):
        return None
    listed = ", ".join(f"`{n}`" for n in leading)
    return (
        f"{site.nondiff.problem}, and bwd `{bwd.node.name.value}`'s nondiff parameters ({listed}) "
        f"are not named like parameters of `{_primal_name(site)}` in order, so which arguments it lists "
        "cannot be told"
    )


def _arity(func: cst.FunctionDef, bound: int) -> tuple[int, int]:
    """How few and how many positional arguments ``func`` accepts after ``bound`` ones (defaults)."""
    params = (*func.params.posonly_params, *func.params.params)[bound:]
    return sum(1 for p in params if p.default is None), len(params)


def _count_range(least: int, most: int) -> str:
    return count(most, "parameter") if least == most else f"{least} to {most} parameters"


def _primal_name(site: VjpSite) -> str:
    if site.primal is None or site.primal_expr is not None:
        return site.name  # a lambda, or an expression whose def is not seen: the name users call
    return site.primal.name.value


def moved_positions(infos: tuple[ArgInfo, ...], settings: Settings) -> tuple[int, ...]:
    """The arguments fix moves: selected codes only, unsafe ones only with --unsafe-fixes."""
    moved = []
    for info in infos:
        if not info.fixable:
            continue
        if (info.kind is ArgKind.ARRAY and "VJP001" in settings.select and (info.strong or settings.unsafe_fixes)) or (
            info.kind is ArgKind.UNKNOWN and "VJP002" in settings.select and settings.unsafe_fixes
        ):
            moved.append(info.index)
    return tuple(moved)


def _fresh(taken: set[str], candidates: tuple[str, ...] = RESIDUAL_NAMES) -> str:
    for name in candidates:
        if name not in taken:
            return name
    index = 2
    while f"{candidates[0]}{index}" in taken:
        index += 1
    return f"{candidates[0]}{index}"


def _cotangent_slots(site: VjpSite, kept: tuple[int, ...], moved: tuple[int, ...]) -> tuple[int, ...]:
    slots, slot = [], 0
    for index in range(len(site.params)):
        if index in kept:
            continue
        if index in moved:
            slots.append(slot)
        slot += 1
    return tuple(slots)


def _code(node: cst.CSTNode | None) -> str:
    """The code of `node` for a one-line message: a call spread over lines is named by its function."""
    if node is None:
        return "nothing"
    text = cst.Module([]).code_for_node(node)
    if "\n" not in text:
        return text
    if isinstance(node, cst.Call):
        return f"{_code(node.func)}(...)"
    return re.sub(r"([([{]) | ([)\]}])", r"\1\2", " ".join(text.split()))


def _starred_gap(
    value: cst.Tuple | cst.List, slots: tuple[int, ...], bindings: dict[str, list[cst.CSTNode]]
) -> tuple[str | None, dict[str, int]]:
    """The first `*x` whose unknown length hides where a None goes, and the known lengths used."""
    known: dict[str, int] = {}
    slot = 0
    for element in value.elements:
        while slot in slots:
            slot += 1
        if not isinstance(element, cst.StarredElement):
            slot += 1
            continue
        binding = _literal_binding(element.value.value, bindings) if isinstance(element.value, cst.Name) else None
        length = len(binding.value.elements) if binding is not None else None  # type: ignore[attr-defined]
        if length is None or any(slot < s < slot + length for s in slots):
            return (f"*{_code(element.value)}" if any(s > slot for s in slots) else None), known
        assert isinstance(element.value, cst.Name)
        known[element.value.value] = length
        slot += length
    return None, known


def literal_branches(value: cst.BaseExpression) -> list[cst.Tuple | cst.List] | None:
    """The tuple/list literals a conditional expression returns (`(a,) if c else (b,)`, nested too),
    each of which gains its Nones; None when ``value`` is no such conditional."""
    if not isinstance(value, cst.IfExp):
        return None
    branches: list[cst.Tuple | cst.List] = []
    for branch in (value.body, value.orelse):
        inner = literal_branches(branch)
        if inner is not None:
            branches.extend(inner)
        elif isinstance(branch, (cst.Tuple, cst.List)):
            branches.append(branch)
        else:
            return None
    return branches


def cotangent_count(site: VjpSite, kept: tuple[int, ...]) -> int | None:
    """How many cotangents bwd returns after the migration; None when the primal's `*args` leave it open."""
    return None if site.has_varargs else len(site.params) - len(kept)


def trailing_slots(slots: tuple[int, ...], total: int | None) -> bool:
    """Whether every None goes after all the old cotangents: `(*grads, None)` needs no slicing.
    Never when the count is open: the cotangents of `*args` come after every named position."""
    return total is not None and slots == tuple(range(total - len(slots), total))


_ReturnPlan = tuple[list[cst.Return], dict[str, int], dict[int, cst.Assign]]


def _bwd_return_plan(
    bwd: cst.FunctionDef,
    slots: tuple[int, ...],
    total: int | None,
    bindings: dict[str, list[cst.CSTNode]],
    counts: dict[str, int],
) -> _ReturnPlan | str:
    """The returns that need their value stored first, the starred lengths read, and the returns
    of a name whose literal gains the Nones instead (id of the return -> `grads = (a, b)`); or a
    problem."""
    returns = _returns(bwd)
    leading = list(slots) == list(range(len(slots)))
    literals = {
        id(ret): literal
        for ret in returns.returns
        if isinstance(ret.value, cst.Name)
        and (literal := _cotangent_literal(ret.value.value, returns, bindings, counts)) is not None
    }
    if trailing_slots(slots, total):
        if any(ret.value is None for ret in returns.returns):
            return f"bwd `{bwd.name.value}` has a bare `return`"
        return [], {}, literals
    temp: list[cst.Return] = []
    known: dict[str, int] = {}
    name = bwd.name.value
    for ret in returns.returns:
        value = ret.value
        if value is None:
            return f"bwd `{name}` has a bare `return`"
        branches = literal_branches(value)
        gaps = [_starred_gap(branch, slots, bindings) for branch in branches or ()]
        if branches is not None and all(starred is None for starred, _ in gaps):
            for _, lengths in gaps:
                known.update(lengths)
            continue
        if isinstance(value, (cst.Tuple, cst.List)):
            starred, lengths = _starred_gap(value, slots, bindings)
            known.update(lengths)
            if starred is None:
                continue
            if id(ret) not in returns.standalone:
                return (
                    f"in bwd `{name}`, the starred cotangent `{starred}` stands before a position that needs None, "
                    "and the return shares its line with other code, so its value cannot be stored first"
                )
        elif leading or isinstance(value, cst.Name):
            continue
        elif id(ret) not in returns.standalone:
            # (*f(g)[:k], None, *f(g)[k:]) would evaluate the call twice; no line for a temporary.
            return (
                f"bwd `{name}` returns `{_code(value)}` on a line shared with other code, "
                "and None is needed between its cotangents"
            )
        temp.append(ret)
    return temp, known, literals


def _cotangent_literal(
    name: str, returns: _Returns, bindings: dict[str, list[cst.CSTNode]], counts: dict[str, int]
) -> cst.Assign | None:
    """bwd's `grads = (a, b)` for `return grads`: the one binding of ``name``, in bwd's own
    scope, which nothing but bwd's own `return grads` statements reads. A person puts the Nones
    in that literal rather than slicing the name."""
    assign = _literal_binding(name, bindings)
    if assign is None or id(assign) not in returns.assigns:
        return None
    returned = sum(isinstance(r.value, cst.Name) and r.value.value == name for r in returns.returns)
    return assign if counts.get(name, 0) == 1 + returned else None


def _symbolic_zeros(defvjp: cst.Call | None) -> str | None:
    """The code of defvjp's `symbolic_zeros` argument unless it is absent or `False`."""
    for index, arg in enumerate(defvjp.args if defvjp is not None else ()):
        keyword = arg.keyword.value if arg.keyword is not None else None
        if keyword == "symbolic_zeros" or (keyword is None and not arg.star and index == 2):
            if isinstance(arg.value, cst.Name) and arg.value.value == "False":
                return None
            return _code(arg.value)
    return None


def _repeated_param(func: cst.FunctionDef) -> str | None:
    params = func.params
    seen: set[str] = set()
    for param in (*params.posonly_params, *params.params, params.star_arg, *params.kwonly_params, params.star_kwarg):
        if type(param) is cst.Param:  # not a MaybeSentinel or ParamStar (`type() is`: see imports.node_types)
            if param.name.value in seen:
                return param.name.value
            seen.add(param.name.value)
    return None


def plan_site(site: VjpSite, moved: tuple[int, ...]) -> RewritePlan | str:
    """The rewrite for moving ``moved`` out of nondiff_argnums, or why it cannot be done."""
    if site.problem:
        return site.problem
    if not site.nondiff.literal:
        return site.nondiff.problem or "nondiff_argnums is not a literal"
    starred = [p for p in moved if p >= len(site.params)]
    star = varargs_owner(site)
    if starred and star is not None:
        return f"position {starred[0]} falls in `*{star[0]}` of {star[1]}, which the rewrite does not handle"
    for ref in (site.fwd, site.bwd):
        if ref is None or ref.node is None:
            return ref.problem if ref and ref.problem else "the rules were not found"
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    fwd, bwd = site.fwd.node, site.bwd.node
    for func in (f for f in (site.primal, fwd, bwd) if f is not None):
        if (twice := _repeated_param(func)) is not None:
            return f"`{func.name.value}` has two parameters named `{twice}`, which Python rejects"
    if site.bwd.decorator_problem:
        return site.bwd.decorator_problem
    if (symbolic := _symbolic_zeros(site.defvjp)) is not None:
        return (
            f"defvjp is called with `symbolic_zeros={symbolic}`: fwd would get the moved arguments "
            "wrapped in CustomVJPPrimal (`.value`, `.perturbed`), not as arrays"
        )
    # A functools.partial binds the leading parameters; JAX's arguments fill the rest.
    fwd_params = positional_params(fwd)[site.fwd.bound_args :]
    bwd_params = positional_params(bwd)[site.bwd.bound_args :]
    if isinstance(bwd.params.star_arg, cst.Param):
        return f"bwd `{bwd.name.value}` takes *{bwd.params.star_arg.name.value}"
    required = [p.name.value for p in bwd.params.kwonly_params if p.default is None]
    if required:  # JAX passes bwd's arguments by position: a call would raise TypeError
        return (
            f"bwd `{bwd.name.value}` has a keyword-only parameter `{required[0]}` without a default, "
            "which JAX never passes"
        )
    order = site.nondiff.positions
    kept = tuple(p for p in order if p not in moved)
    moved_bwd = tuple(bwd_params[order.index(p)] for p in moved)
    bwd_names = names_in(bwd)
    read = tuple(p for p in moved if bwd_names.loads(bwd_params[order.index(p)]) > 0)
    if any(p >= len(fwd_params) for p in read):
        return f"fwd `{fwd.name.value}` takes the argument through *args"
    fwd_bound = names_in(fwd).bound
    fwd_returns = own_returns(fwd)
    reused = _already_saved(read, order, fwd_params, bwd_params, bwd, bwd_names.counts, fwd, fwd_returns, fwd_bound)
    saved = tuple(p for p in read if p not in reused)
    saved_fwd = tuple(fwd_params[p] for p in saved)
    saved_bwd = tuple(bwd_params[order.index(p)] for p in saved)
    rebound = sorted(set(saved_fwd) & fwd_bound)
    if rebound:
        return f"fwd `{fwd.name.value}` assigns to `{rebound[0]}` before saving it"
    for ret in fwd_returns:
        value = ret.value
        if not (isinstance(value, cst.Tuple) and len(value.elements) == 2) or any(
            isinstance(e, cst.StarredElement) for e in value.elements
        ):
            return f"fwd `{fwd.name.value}` returns `{_code(value)}`, not an `(output, residuals)` pair"
    if not fwd_returns:
        return f"fwd `{fwd.name.value}` has no return statement"
    slots = _cotangent_slots(site, kept, moved)
    bwd_bindings = _bindings(bwd)
    returned = _bwd_return_plan(bwd, slots, cotangent_count(site, kept), bwd_bindings, bwd_names.counts)
    if isinstance(returned, str):
        return returned
    temp_returns, starred_lengths, literals = returned
    residual = bwd_params[len(order)]
    taken = set(bwd_names.counts) | (_param_names(bwd) - {residual})
    layout, new_param, old_name, unpack = _layout(saved_bwd, residual, bwd, bwd_names.counts, fwd_returns, taken)
    needs_unpack = layout in (Layout.NONE, Layout.GENERAL) and new_param != saved_bwd[0]
    def_name = site.bwd.def_name if needs_unpack and site.bwd.lambda_node is not None else None
    if needs_unpack and def_name is None and not isinstance(bwd.body, cst.IndentedBlock):
        return f"bwd `{bwd.name.value}` is written on one line"
    fwd_assign = _fwd_residual_assign(fwd, fwd_returns, unpack) if layout is Layout.BOUND else None
    if fwd_assign is not None:
        layout = Layout.VARIABLE
    temp_name = _fresh(taken | {new_param, residual}, TEMP_NAMES) if temp_returns else ""
    edits = _jit_edits(site, moved, moved_bwd, residual, new_param)
    if isinstance(edits, str):
        return edits
    unread = {bwd_params[order.index(p)] for p in moved if p not in read}
    if layout is Layout.NONE:  # the old residual (always None, never read) leaves the signature
        unread.add(residual)
    return RewritePlan(
        site=site,
        moved=moved,
        kept=kept,
        saved_fwd_names=saved_fwd,
        saved_bwd_names=saved_bwd,
        moved_bwd_params=moved_bwd,
        layout=layout,
        residual_param=new_param,
        old_residual_name=old_name,
        tuple_unpack=unpack,
        fwd_returns=tuple(fwd_returns),
        bwd_returns=tuple(r for r in own_returns(bwd) if id(r) not in literals),
        cotangent_literals=tuple({id(a): a for a in literals.values()}.values()),
        none_slots=slots,
        fwd_assign=fwd_assign,
        temp_name=temp_name,
        temp_returns=tuple(temp_returns),
        starred_lengths=tuple(sorted(starred_lengths.items())),
        dels=_dropped_dels(bwd, unread),
        reused=tuple(rename for renames in reused.values() for rename in renames),
        jit_edits=edits,
        bwd_def_name=def_name,
        retyped=_retyped(site, layout, saved_fwd, saved_bwd, unpack, slots, _returns_lists(own_returns(bwd), literals)),
    )


def _holds_anything(expr: cst.BaseExpression, tuple_value: bool) -> bool:
    """Whether an annotation stays right whatever the new value (a tuple, when ``tuple_value``)."""
    last = (dotted(expr) or "").rsplit(".", 1)[-1]
    return last in ("Any", "object") or (tuple_value and last in ("tuple", "Tuple"))


def _fwd_type_holds(expr: cst.BaseExpression) -> bool:
    """fwd's return annotation stays right: it allows anything, or any residual (`tuple[Array, Any]`)."""
    if _holds_anything(expr, True):
        return True
    if not (isinstance(expr, cst.Subscript) and _holds_anything(expr.value, True) and len(expr.slice) == 2):
        return False
    residual = expr.slice[1].slice
    return isinstance(residual, cst.Index) and _holds_anything(residual.value, False)


def _retyped(
    site: VjpSite,
    layout: Layout,
    saved_fwd: tuple[str, ...],
    saved_bwd: tuple[str, ...],
    unpack: cst.Assign | None,
    slots: tuple[int, ...],
    returns_lists: bool,
) -> tuple[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None], ...]:
    """The annotations the change makes wrong, and what replaces them: the updated type when it
    is known exactly, else nothing (section 3h). ``unpack``: bwd's `a, b = res` (tuple layouts);
    ``returns_lists``: every return of bwd gives a list literal, which stays a list."""
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    target = unpack.targets[0].target if unpack is not None else None
    width = len(target.elements) if isinstance(target, (cst.Tuple, cst.List)) else None
    fwd, bwd = site.fwd.node, site.bwd.node
    spelling = _tuple_spelling(fwd, bwd)
    edits: list[tuple[cst.Param | cst.FunctionDef, cst.Annotation | TupleType | None]] = []
    fwd_changes = site.fwd.lambda_node is None and layout is not Layout.UNCHANGED
    if fwd_changes and fwd.returns is not None and not _fwd_type_holds(fwd.returns.annotation):
        saved = _annotations(fwd, saved_fwd)
        edits.append((fwd, _fwd_type(fwd.returns.annotation, layout, saved, width, spelling)))
    if site.bwd.lambda_node is not None:
        return tuple(edits)
    if (  # it gains None items
        bwd.returns is not None
        and not _holds_anything(bwd.returns.annotation, False)
        and not _admits_none(_variadic_item(bwd.returns.annotation))
        and not _admits_none(_sequence_item(bwd.returns.annotation, returns_lists))
    ):
        edits.append((bwd, _cotangents_type(site, bwd.returns.annotation, slots, returns_lists)))
    params = _param_nodes(bwd)
    residual = params[site.bwd.bound_args + len(site.nondiff.positions)]
    if layout is Layout.NONE and len(saved_bwd) == 1:  # the residual is that argument now
        moved = next(p for p in params if p.name.value == saved_bwd[0])
        if moved.annotation is not None or residual.annotation is not None:
            edits.append((residual, moved.annotation))
    elif (
        layout is not Layout.UNCHANGED
        and residual.annotation is not None
        and not _holds_anything(residual.annotation.annotation, True)
    ):
        new = _residual_type(residual.annotation.annotation, layout, _annotations(bwd, saved_bwd), width, spelling)
        edits.append((residual, new if isinstance(new, TupleType) else None))
    return tuple(edits)


def _tuple_items(expr: cst.BaseExpression) -> tuple[str, list[cst.BaseExpression]] | None:
    """`tuple[A, B]` (`Tuple`, `typing.Tuple`): its spelling and items, when each is one type."""
    if not isinstance(expr, cst.Subscript) or (dotted(expr.value) or "").rsplit(".", 1)[-1] not in ("tuple", "Tuple"):
        return None
    items: list[cst.BaseExpression] = []
    for element in expr.slice:
        index = element.slice
        if not isinstance(index, cst.Index) or index.star is not None or isinstance(index.value, cst.Ellipsis):
            return None
        items.append(index.value)
    return dotted(expr.value) or "tuple", items


def _tuple_spelling(fwd: cst.FunctionDef, bwd: cst.FunctionDef) -> str:
    """How the rules spell a tuple type (`Tuple`, `typing.Tuple`), `tuple` when they do not."""
    for func in (bwd, fwd):
        for node in (func.returns, *(p.annotation for p in _param_nodes(func))):
            found = _tuple_items(node.annotation) if node is not None else None
            if found is not None:
                return found[0]
    return "tuple"


def _param_names(func: cst.FunctionDef) -> set[str]:
    """Every parameter name of ``func``: positional, keyword-only, `*args` and `**kwargs`."""
    params = func.params
    every = (*params.posonly_params, *params.params, params.star_arg, *params.kwonly_params, params.star_kwarg)
    return {p.name.value for p in every if isinstance(p, cst.Param)}


def _param_nodes(func: cst.FunctionDef) -> list[cst.Param]:
    return [*func.params.posonly_params, *func.params.params]


def _annotations(func: cst.FunctionDef, names: tuple[str, ...]) -> list[cst.BaseExpression] | None:
    """The annotations of the parameters ``names`` of ``func`` (None: one has none)."""
    found = {p.name.value: p.annotation for p in _param_nodes(func)}
    annotations = [found.get(n) for n in names]
    return [a.annotation for a in annotations if a is not None] if all(annotations) else None


def _residual_type(
    old: cst.BaseExpression,
    layout: Layout,
    saved: list[cst.BaseExpression] | None,
    width: int | None,
    spelling: str,
) -> cst.BaseExpression | TupleType | None:
    """The residual's new type, from its old type ``old`` and the saved arguments' ``saved``;
    None when it is not known exactly."""
    if saved is None or isinstance(old, (cst.SimpleString, cst.ConcatenatedString)):
        return None
    if layout is Layout.NONE:
        return saved[0] if len(saved) == 1 else TupleType(spelling, tuple(saved))
    if layout in (Layout.TUPLE, Layout.VARIABLE):
        found = _tuple_items(old)
        if found is None or len(found[1]) != width:
            return None
        assert isinstance(old, cst.Subscript)
        return TupleType(found[0], (*saved, *found[1]), old)
    return TupleType(spelling, (*saved, old))


def _fwd_type(
    old: cst.BaseExpression,
    layout: Layout,
    saved: list[cst.BaseExpression] | None,
    width: int | None,
    spelling: str,
) -> TupleType | None:
    """fwd's `tuple[Out, R]` with the residual type ``R`` updated (None: not known exactly)."""
    found = _tuple_items(old)
    if found is None or len(found[1]) != 2:
        return None
    out, residual = found[1]
    new = _residual_type(residual, layout, saved, width, spelling)
    assert isinstance(old, cst.Subscript)
    return TupleType(found[0], (out, new), old) if new is not None else None


def _variadic_item(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """``X`` of `tuple[X, ...]` (`Tuple`, `typing.Tuple`)."""
    if not isinstance(expr, cst.Subscript) or (dotted(expr.value) or "").rsplit(".", 1)[-1] not in ("tuple", "Tuple"):
        return None
    items = [e.slice for e in expr.slice]
    if len(items) != 2 or not all(isinstance(i, cst.Index) and i.star is None for i in items):
        return None
    first, second = (i.value for i in items if isinstance(i, cst.Index))
    return first if isinstance(second, cst.Ellipsis) and not isinstance(first, cst.Ellipsis) else None


def _admits_none(expr: cst.BaseExpression | None) -> bool:
    """Whether the type ``expr`` holds None already: `None`, `Any`, `object`, `Optional[X]`,
    `X | None`, `Union[X, None]`."""
    if expr is None:
        return False
    if isinstance(expr, cst.Name) and expr.value == "None":
        return True
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.BitOr):
        return _admits_none(expr.left) or _admits_none(expr.right)
    if isinstance(expr, cst.Subscript):
        last = (dotted(expr.value) or "").rsplit(".", 1)[-1]
        items = [e.slice.value for e in expr.slice if isinstance(e.slice, cst.Index)]
        return last == "Optional" or (last == "Union" and any(_admits_none(i) for i in items))
    return _holds_anything(expr, False)


def _sequence_item(expr: cst.BaseExpression, returns_lists: bool) -> cst.BaseExpression | None:
    """``X`` of `Sequence[X]` (`Iterable`, `Collection`; `typing.` or `collections.abc.`), which
    any tuple or list of X is, or of `list[X]` (`List`) when bwd returns list literals only."""
    if not isinstance(expr, cst.Subscript) or len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    last = (dotted(expr.value) or "").rsplit(".", 1)[-1]
    if not isinstance(index, cst.Index) or index.star is not None:
        return None
    if last in _SEQUENCE_TYPES or (returns_lists and last in ("list", "List")):
        return index.value
    return None


_SEQUENCE_TYPES = ("Sequence", "Iterable", "Collection")


def _returns_lists(returns: list[cst.Return], literals: dict[int, cst.Assign]) -> bool:
    """Every return gives a list literal (`[a, b]`, or a name bound once to one, `grads = [a, b]`)."""
    values = [literals[id(r)].value if id(r) in literals else r.value for r in returns]
    return bool(values) and all(isinstance(v, cst.List) for v in values)


def _cotangents_type(
    site: VjpSite, old: cst.BaseExpression, slots: tuple[int, ...], returns_lists: bool
) -> TupleType | None:
    """bwd's `tuple[X, Y]` with `None` at the new slots, when it lists every old cotangent;
    `tuple[X, ...]` becomes `tuple[X | None, ...]`, `Sequence[X]` `Sequence[X | None]`, and so
    does `list[X]` of a bwd that returns list literals."""
    item = _variadic_item(old)
    if isinstance(item, (cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation)):
        assert isinstance(old, cst.Subscript)
        ellipsis = old.slice[1].slice
        assert isinstance(ellipsis, cst.Index)
        return TupleType(dotted(old.value) or "tuple", (OrNone(item), ellipsis.value), old)
    item = _sequence_item(old, returns_lists)
    if isinstance(item, (cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation)):
        assert isinstance(old, cst.Subscript)
        return TupleType(dotted(old.value) or "Sequence", (OrNone(item),), old)
    found = _tuple_items(old)
    if found is None or not site.nondiff.complete or len(found[1]) != len(site.params) - len(site.nondiff.positions):
        return None
    assert isinstance(old, cst.Subscript)
    items = iter(found[1])
    new = tuple(None if k in slots else next(items) for k in range(len(found[1]) + len(slots)))
    return TupleType(found[0], new, old)


def _already_saved(
    read: tuple[int, ...],
    order: tuple[int, ...],
    fwd_params: tuple[str, ...],
    bwd_params: tuple[str, ...],
    bwd: cst.FunctionDef,
    counts: dict[str, int],
    fwd: cst.FunctionDef,
    fwd_returns: list[cst.Return],
    fwd_bound: set[str],
) -> dict[int, list[tuple[cst.Name, str]]]:
    """Moved arguments that fwd already saves by hand (half-migrated code), with the names bwd
    renames for each: every residual is a tuple (or a name fwd binds once to one) holding the fwd
    parameter, or an alias of it (`w_ = w`), at one place, in nested tuples too, and bwd unpacks
    it in one plain assignment whose target there can take bwd's name for it, or whose target
    bwd's reads of its parameter can read instead."""
    residual = bwd_params[len(order)]
    unpack = _single_unpack(bwd, residual, counts, ())
    if unpack is None:
        return {}
    fwd_bindings = _bindings(fwd)
    tuples = [
        _residual_literal(r.value.elements[1].value, fwd_bindings)
        for r in fwd_returns
        if isinstance(r.value, cst.Tuple)
    ]
    if len(tuples) != len(fwd_returns) or not all(isinstance(t, cst.Tuple) for t in tuples):
        return {}
    found: dict[int, list[tuple[cst.Name, str]]] = {}
    bindings = _bindings(bwd)
    for p in read:
        name, wanted = fwd_params[p], bwd_params[order.index(p)]
        if name in fwd_bound:
            continue
        saved_as = _aliases(name, fwd, fwd_bindings)
        places = {tuple(_paths_to(t, saved_as)) for t in tuples}  # each return's, once
        if len(places) != 1 or len(paths := next(iter(places))) != 1:
            continue
        found_slot = _unpacked_at(bwd, unpack, tuples, paths[0], counts, bindings)
        if found_slot is None:
            continue
        slot, slot_unpack = found_slot
        if slot.value in ("_", wanted) or (counts.get(slot.value, 0) == 1 and slot.value not in bwd_params):
            found[p] = [(slot, wanted)] if slot.value != wanted else []
        elif (loads := _reads_after(bwd, slot_unpack, wanted, slot.value, bindings)) is not None:
            found[p] = [(load, slot.value) for load in loads]
    return found


def _aliases(name: str, fwd: cst.FunctionDef, bindings: dict[str, list[cst.CSTNode]]) -> set[str]:
    """``name`` and the names fwd's own statements bind to it once and never again (`w_ = w`)."""
    found = {name}
    for stmt in body_statements(fwd):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(alias := small.targets[0].target, cst.Name)
                and isinstance(small.value, cst.Name)
                and small.value.value == name
                and [id(b) for b in bindings.get(alias.value, [])] == [id(small)]
            ):
                found.add(alias.value)
    return found


def _paths_to(literal: cst.BaseExpression, names: set[str], path: tuple[int, ...] = ()) -> Iterator[tuple[int, ...]]:
    """Where a tuple literal holds one of ``names``, as indices into it and its nested tuple literals."""
    if not isinstance(literal, (cst.Tuple, cst.List)) or any(
        isinstance(e, cst.StarredElement)
        for e in literal.elements  # positions unknown
    ):
        return
    for index, element in enumerate(literal.elements):
        if isinstance(element.value, cst.Name) and element.value.value in names:
            yield (*path, index)
        yield from _paths_to(element.value, names, (*path, index))


def _unpacked_at(
    bwd: cst.FunctionDef,
    unpack: cst.Assign,
    literals: list[cst.BaseExpression],
    path: tuple[int, ...],
    counts: dict[str, int],
    bindings: dict[str, list[cst.CSTNode]],
) -> tuple[cst.Name, cst.Assign] | None:
    """The name bwd's unpack binds at ``path`` of fwd's residual ``literals``, and the statement
    binding it, when the targets have their shape down to there: `(c, w), x = res` for
    `((c, w), x)`, or `cw, x = res` and then `c, w = cw`, `cw` read nowhere else."""
    target: cst.BaseExpression = unpack.targets[0].target
    for index in path:
        if isinstance(target, cst.Name) and (inner := _inner_unpack(bwd, target.value, counts, bindings)) is not None:
            unpack, target = inner, inner.targets[0].target
        if not all(_same_width(target, literal) for literal in literals):
            return None
        assert isinstance(target, (cst.Tuple, cst.List))
        target = target.elements[index].value
        literals = [literal.elements[index].value for literal in literals if isinstance(literal, (cst.Tuple, cst.List))]
    return (target, unpack) if isinstance(target, cst.Name) else None


def _inner_unpack(
    bwd: cst.FunctionDef, name: str, counts: dict[str, int], bindings: dict[str, list[cst.CSTNode]]
) -> cst.Assign | None:
    """bwd's one plain `a, b = name` statement, when that is all that reads ``name``, bound once."""
    if counts.get(name, 0) != 2 or len(bindings.get(name, [])) != 1:
        return None
    for stmt in body_statements(bwd):
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, (cst.Tuple, cst.List))
            and _plain_target(small.targets[0].target)
            and isinstance(small.value, cst.Name)
            and small.value.value == name
        ):
            return small
    return None


def _same_width(target: cst.BaseExpression, literal: cst.BaseExpression) -> bool:
    """Both are tuples (or lists) without starred items, of as many items."""
    return all(
        isinstance(node, (cst.Tuple, cst.List)) and not any(isinstance(e, cst.StarredElement) for e in node.elements)
        for node in (target, literal)
    ) and len(target.elements) == len(literal.elements)  # type: ignore[attr-defined]


def _reads_after(
    bwd: cst.FunctionDef, unpack: cst.Assign, param: str, target: str, bindings: dict[str, list[cst.CSTNode]]
) -> list[cst.Name] | None:
    """bwd's reads of its parameter ``param``, when they can all read the unpack's ``target``
    instead (the same value, saved by fwd): ``param`` is bound only as the parameter and
    ``target`` only by ``unpack``, and no statement before the unpack reads ``param``."""
    if len(bindings.get(param, [])) != 1 or [id(b) for b in bindings.get(target, [])] != [id(unpack)]:
        return None
    loads = _Loads(param)
    after = False
    for stmt in body_statements(bwd):
        if not after and isinstance(stmt, cst.SimpleStatementLine) and any(s is unpack for s in stmt.body):
            after = True
            continue
        before = len(loads.found)
        walk.visit(stmt, loads)
        if not after and len(loads.found) > before:
            return None
    return loads.found if after else None


class _Loads(cst.CSTVisitor):
    """The Name nodes reading ``name`` (not an attribute's or a keyword argument's name)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.found: list[cst.Name] = []

    def visit_Name(self, node: cst.Name) -> None:
        if node.value == self.name:
            self.found.append(node)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        walk.visit(node.value, self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        walk.visit(node.value, self)
        return False


def _residual_literal(value: cst.BaseExpression, bindings: dict[str, list[cst.CSTNode]]) -> cst.BaseExpression:
    """The tuple literal a returned residual name is bound to once (`residual = (a, b)`), else the value."""
    if isinstance(value, cst.Name):
        assign = _literal_binding(value.value, bindings)
        if assign is not None:
            return assign.value
    return value


def _jit_edits(
    site: VjpSite, moved: tuple[int, ...], moved_bwd: tuple[str, ...], residual: str, new_residual: str
) -> tuple[JitEdit, ...] | str:
    """New static arguments for a jax.jit on fwd (moved arguments are traced now) and on bwd
    (whose parameters move), or why they cannot be rewritten."""
    assert site.fwd and site.fwd.node and site.bwd and site.bwd.node
    edits: list[JitEdit] = []
    fwd_jit, bwd_jit = site.fwd.jit, site.bwd.jit
    if fwd_jit is not None:
        fwd = site.fwd.node
        if fwd_jit.static_argnums is None or fwd_jit.static_argnames is None:
            return f"fwd `{fwd.name.value}`'s jax.jit gives its static arguments by a name or expression"
        params = positional_params(fwd)
        traced = {site.fwd.bound_args + p for p in moved}
        argnums = tuple(i for i in fwd_jit.static_argnums if i not in traced)
        argnames = tuple(n for n in fwd_jit.static_argnames if n not in {params[i] for i in traced if i < len(params)})
        if (argnums, argnames) != (fwd_jit.static_argnums, fwd_jit.static_argnames):
            edits.append(JitEdit(fwd_jit.decorator, argnums, argnames))
    if bwd_jit is not None:
        bwd = site.bwd.node
        if bwd_jit.static_argnums is None or bwd_jit.static_argnames is None:
            return f"bwd `{bwd.name.value}`'s jax.jit gives its static arguments by a name or expression"
        if bwd_jit.positional_options:
            return f"bwd `{bwd.name.value}`'s jax.jit has `{bwd_jit.positional_options[0]}`, tied to its signature"
        params = positional_params(bwd)
        res_index = params.index(residual)
        if res_index in bwd_jit.static_argnums or residual in bwd_jit.static_argnames:
            return f"bwd `{bwd.name.value}`'s jax.jit marks the residuals static"
        new_index = {i: j for j, i in enumerate(i for i, n in enumerate(params) if n not in moved_bwd)}
        argnums = tuple(new_index[i] for i in bwd_jit.static_argnums if i in new_index)
        argnames = tuple(n for n in bwd_jit.static_argnames if n not in moved_bwd)
        if new_residual != residual and new_residual in argnames:
            return f"bwd `{bwd.name.value}`'s jax.jit marks `{new_residual}` static"
        if (argnums, argnames) != (bwd_jit.static_argnums, bwd_jit.static_argnames):
            edits.append(JitEdit(bwd_jit.decorator, argnums, argnames))
    return tuple(edits)


def _layout(
    saved_bwd: tuple[str, ...],
    residual: str,
    bwd: cst.FunctionDef,
    counts: dict[str, int],
    fwd_returns: list[cst.Return],
    taken: set[str],
) -> tuple[Layout, str, str, cst.Assign | None]:
    if not saved_bwd:
        return Layout.UNCHANGED, residual, residual, None
    residual_used = counts.get(residual, 0) > 0
    values = [r.value.elements[1].value for r in fwd_returns if isinstance(r.value, cst.Tuple)]
    if not residual_used and all(isinstance(v, cst.Name) and v.value == "None" for v in values):
        if len(saved_bwd) == 1:
            return Layout.NONE, saved_bwd[0], residual, None
        return Layout.NONE, _fresh(taken), residual, None
    unpack = _single_unpack(bwd, residual, counts, saved_bwd)
    if unpack is None:
        return Layout.GENERAL, _fresh(taken), residual if residual_used else "_", None
    target = unpack.targets[0].target
    if isinstance(target, (cst.Tuple, cst.List)) and all(_fills(v, len(target.elements)) for v in values):
        return Layout.TUPLE, residual, residual, unpack
    return Layout.BOUND, residual, residual, unpack


def _fills(value: cst.BaseExpression, width: int) -> bool:
    """Whether ``value`` is a tuple literal that an unpack target of ``width`` names takes apart:
    as many items, or starred items (`(*parts, x)`) that may make up the difference. Saved items
    put first in both stay exact whatever the starred items hold."""
    if not isinstance(value, cst.Tuple) or not value.lpar:
        return False
    starred = sum(isinstance(e, cst.StarredElement) for e in value.elements)
    return len(value.elements) - starred <= width if starred else len(value.elements) == width


def _plain_target(target: cst.BaseExpression) -> bool:
    """A name, or a (nested) tuple/list of names without starred items."""
    if isinstance(target, cst.Name):
        return True
    return isinstance(target, (cst.Tuple, cst.List)) and all(
        not isinstance(e, cst.StarredElement) and _plain_target(e.value) for e in target.elements
    )


def _single_unpack(
    bwd: cst.FunctionDef, residual: str, counts: dict[str, int], saved: tuple[str, ...]
) -> cst.Assign | None:
    """The one plain `a, b = res` (or `params = res`) statement, when res is used nowhere else.

    The saved names will be bound there, so no statement before it may mention them.
    """
    if counts.get(residual, 0) != 1:
        return None
    earlier = _Names()
    for stmt in body_statements(bwd):
        if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
            small = stmt.body[0]
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and _plain_target(small.targets[0].target)
                and isinstance(small.value, cst.Name)
                and small.value.value == residual
            ):
                bound = set(target_names(small.targets[0].target))
                if bound & set(saved) or residual in bound or any(earlier.counts.get(n) for n in saved):
                    return None
                return small
        walk.visit(stmt, earlier)
    return None


def _fwd_residual_assign(
    fwd: cst.FunctionDef, fwd_returns: list[cst.Return], unpack: cst.Assign | None
) -> cst.Assign | None:
    """fwd's `res = a, b` when every return gives `res` as is, bwd unpacks it in as many names,
    and `res` is bound and used nowhere else."""
    target = unpack.targets[0].target if unpack is not None else None
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    values = [r.value.elements[1].value for r in fwd_returns if isinstance(r.value, cst.Tuple)]
    names = {v.value for v in values if isinstance(v, cst.Name)}
    if len(names) != 1 or len(values) != len(fwd_returns):
        return None
    name = names.pop()
    assign = _literal_binding(name, _bindings(fwd))
    if (
        assign is None
        or len(assign.value.elements) != len(target.elements)  # type: ignore[attr-defined]
        or names_in(fwd).counts.get(name, 0) != 1 + len(values)
    ):
        return None
    return assign


def decide(site: VjpSite, infos: tuple[ArgInfo, ...], settings: Settings, imports: ImportTable) -> SiteDecision:
    """Combine classification, settings and rewritability into what check and fix do."""
    broken = inconsistency(site, imports)
    moved = moved_positions(infos, settings)
    if broken is not None:
        return SiteDecision(site, infos, moved, None, None, broken)
    candidates = tuple(i.index for i in infos if i.kind is not ArgKind.STATIC)
    if not candidates:
        return SiteDecision(site, infos, moved, None, None, None)
    # Rewritability is judged for every non-static argument, so check's verdict does not
    # depend on --unsafe-fixes; the plan itself moves only what the settings allow.
    probe = plan_site(site, candidates)
    if isinstance(probe, str):
        return SiteDecision(site, infos, moved, None, probe, None)
    if not moved:
        plan: RewritePlan | str | None = None
    else:  # usually every candidate moves: the probe is the plan
        plan = probe if moved == candidates else plan_site(site, moved)
    if isinstance(plan, str):
        return SiteDecision(site, infos, moved, None, plan, None)
    return SiteDecision(site, infos, moved, plan, None, None)


def rule_change(decision: SiteDecision, role: str) -> tuple[object, ...]:
    """What one site's plan does to its fwd or bwd: equal for users that change it the same way."""
    plan = decision.plan
    if decision.inconsistency is not None or decision.problem is not None:
        return ("cannot be rewritten",)
    if plan is None:
        return ("unchanged",)
    jit = tuple((id(e.decorator), e.static_argnums, e.static_argnames) for e in plan.jit_edits)
    if role == "fwd":
        return (plan.moved, plan.saved_fwd_names, plan.layout, jit)
    return (
        plan.moved_bwd_params,
        plan.saved_bwd_names,
        tuple((id(t), name) for t, name in plan.reused),
        plan.layout,
        plan.residual_param,
        plan.old_residual_name,
        plan.none_slots,
        id(plan.tuple_unpack),
        jit,
    )


def _describe(decision: SiteDecision, role: str, details: bool) -> str:
    plan, site = decision.plan, decision.site
    name = f"`{site.qualname}`"
    if decision.inconsistency is not None or decision.problem is not None:
        return f"{name} cannot be rewritten ({decision.inconsistency or decision.problem})"
    ref = site.fwd if role == "fwd" else site.bwd
    assert ref is not None and ref.node is not None
    params = positional_params(ref.node)[ref.bound_args :]
    order = site.nondiff.positions
    if role == "fwd":
        moved = [params[p] for p in plan.moved if p < len(params)] if plan else []
        kept = [params[p] for p in order if p < len(params) and params[p] not in moved]
    else:
        moved = list(plan.moved_bwd_params) if plan else []
        kept = [p for p in params[: len(order)] if p not in moved]
    parts = [f"moves {_names(moved)}"] if moved else []
    parts += [f"keeps {_names(kept)}"] if kept else []
    text = f"{name} {' and '.join(parts) or 'moves nothing'}"
    if details and plan is not None:
        slots = ", ".join(map(str, plan.none_slots))
        text += f" (None at cotangent position {slots}, {plan.layout.value} residual)"
    return text


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def reconcile_shared(decisions: tuple[SiteDecision, ...]) -> tuple[SiteDecision, ...]:
    """A fwd or bwd used by several custom_vjp functions is rewritten once, and only when every
    user's plan changes it the same way; otherwise each user with a plan gets VJP003."""
    users: dict[int, tuple[str, str, list[int]]] = {}
    for index, decision in enumerate(decisions):
        for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd)):
            if ref is not None and ref.node is not None and ref.lambda_node is None:
                entry = users.setdefault(id(ref.node), (role, ref.node.name.value, []))
                if index not in entry[2]:
                    entry[2].append(index)
    result = list(decisions)
    for role, rule, group in users.values():
        if len(group) < 2 or len({rule_change(decisions[i], role) for i in group}) == 1:
            continue
        names = ", ".join(f"`{decisions[i].site.qualname}`" for i in group)
        plain = [_describe(decisions[i], role, False) for i in group]
        details = len({p.split(" ", 1)[1] for p in plain}) == 1
        why = "; ".join(_describe(decisions[i], role, details) for i in group)
        detail = f"{role} `{rule}` is shared by {names}, which would change it differently: {why}"
        for i in group:
            decision = result[i]
            if _plannable(decision):
                result[i] = replace(decision, plan=None, problem=detail)
    return tuple(result)


def plan_groups(plans: list[RewritePlan]) -> list[list[RewritePlan]]:
    """Plans that must be applied together: those sharing a fwd or bwd, in first-seen order."""
    groups: list[tuple[set[int], list[RewritePlan]]] = []
    for plan in plans:
        keys = {id(r.node) for r in (plan.site.fwd, plan.site.bwd) if r is not None and r.node is not None}
        joined = [g for g in groups if g[0] & keys]
        merged: tuple[set[int], list[RewritePlan]] = (keys, [])
        for group in joined:
            merged[0].update(group[0])
            merged[1].extend(group[1])
        merged[1].append(plan)
        at = groups.index(joined[0]) if joined else len(groups)
        groups = [g for g in groups if g not in joined]
        groups.insert(min(at, len(groups)), merged)
    return [plans_ for _, plans_ in groups]


class _OtherLoads(ast.NodeVisitor):
    """Lines where ``names`` are read at module level or in functions that do not bind them,
    outside the `<owner>.defvjp(...)` calls of ``owners``: called by name, or used otherwise."""

    def __init__(self, names: set[str], owners: set[str | None]) -> None:
        self.names, self.owners = names, owners
        self.shadowed: list[set[str]] = []
        self.lines: dict[str, list[int]] = {}  # read as a value
        self.called: dict[str, list[int]] = {}  # called by name

    def visit_Call(self, node: ast.Call) -> None:
        owner = _defvjp_owner(node.func)
        if owner is not None and owner in self.owners:
            return
        if isinstance(node.func, ast.Name) and self._seen(node.func):
            self.called.setdefault(node.func.id, []).append(node.lineno)
            for child in (*node.args, *node.keywords):
                self.visit(child)
            return
        self.generic_visit(node)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        args = node.args
        bound = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
        bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        body = node.body if isinstance(node.body, list) else [node.body]
        for statement in body:
            for inner in ast.walk(statement):
                if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
                    bound.add(inner.id)
                elif isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    bound.add(inner.name)
        for default in (*args.defaults, *(d for d in args.kw_defaults if d is not None)):
            self.visit(default)
        if not isinstance(node, ast.Lambda):
            for decorator in node.decorator_list:
                self.visit(decorator)
        self.shadowed.append(bound & self.names)
        for statement in body:
            self.visit(statement)
        self.shadowed.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_Lambda = _function

    def _seen(self, node: ast.Name) -> bool:
        return isinstance(node.ctx, ast.Load) and node.id in self.names and not any(node.id in s for s in self.shadowed)

    def visit_Name(self, node: ast.Name) -> None:
        if self._seen(node):
            self.lines.setdefault(node.id, []).append(node.lineno)


def _defvjp_owner(func: ast.expr) -> str | None:
    """``f`` for ``f.defvjp`` and ``getattr(f, "defvjp")``."""
    if isinstance(func, ast.Attribute) and func.attr == "defvjp":
        return ast.unparse(func.value)
    if (
        isinstance(func, ast.Call)
        and isinstance(func.func, ast.Name)
        and func.func.id == "getattr"
        and len(func.args) == 2
        and isinstance(func.args[1], ast.Constant)
        and func.args[1].value == "defvjp"
    ):
        return ast.unparse(func.args[0])
    return None


def rules_used_elsewhere(
    decisions: tuple[SiteDecision, ...], module: cst.Module, text: str
) -> tuple[SiteDecision, ...]:
    """A module-level fwd or bwd that something other than the sites' defvjp calls reads (a direct
    call, another custom_vjp's defvjp) would be broken by the rewrite: its users get VJP003.
    ``text`` is ``module``'s source (its ``.code`` would generate it all again)."""
    top = {id(statement) for statement in module.body}
    rules = [  # (index of the decision, role, name): module-level rules of sites that would be rewritten
        (index, role, ref.node.name.value)
        for index, decision in enumerate(decisions)
        if _plannable(decision)
        for role, ref in (("fwd", decision.site.fwd), ("bwd", decision.site.bwd))
        if ref is not None and ref.node is not None and ref.lambda_node is None and id(ref.node) in top
    ]
    if not rules:
        return decisions
    calls = {id(d.site.defvjp): d.site.defvjp for d in decisions if d.site.defvjp is not None}
    owned = {key: _owner(call.func, module) for key, call in calls.items()}
    names = {name for _, _, name in rules}
    if _named_only_by_defs_and(names, [calls[key] for key, owner in owned.items() if owner is not None], module, text):
        return decisions
    visitor = _OtherLoads(names, set(owned.values()))
    try:
        visitor.visit(ast.parse(text))
    except SyntaxError:  # newer syntax than this Python's ast reads: nothing is judged
        return decisions
    result = list(decisions)
    for index, role, name in rules:
        if result[index] is not decisions[index]:
            continue  # its fwd is used elsewhere already: that is the problem named
        # fwd keeps its signature and output: only a use of the function itself (not of a call's
        # result, as in a primal written `return f_fwd(x)[0]`) sees the residual change.
        lines = sorted(visitor.lines.get(name, []) + (visitor.called.get(name, []) if role == "bwd" else []))
        if lines:
            problem = (
                f"{role} `{name}` is also used on line {lines[0]}, not only by defvjp, "
                "and the rewrite would change what that use gets"
            )
            result[index] = replace(result[index], plan=None, problem=problem)
    return tuple(result)


def _owner(func: cst.BaseExpression, module: cst.Module) -> str | None:
    """``_defvjp_owner`` of the ast of ``func``: read off the node for ``f.defvjp`` (what
    ast.unparse gives a dotted name; an identifier that is not ASCII may be NFKC-normalized)."""
    if type(func) is cst.Attribute and func.attr.value == "defvjp":  # `type() is`: see imports.node_types
        owner = dotted(func.value)
        if owner is not None and owner.isascii():
            return owner
    return _defvjp_owner(_expression(module.code_for_node(func)))


def _named_only_by_defs_and(names: set[str], calls: list[cst.Call], module: cst.Module, text: str) -> bool:
    """Whether every occurrence of ``names`` in ``text`` is a module-level def's name or a name
    inside ``calls`` (defvjp calls _OtherLoads skips): then no other use exists, and the ast walk
    is not needed. Occurrences are counted in the raw text, which holds one for every name token
    (and maybe more: comments, longer names), so equal counts prove it; an identifier that is
    not ASCII may be an NFKC spelling of a name, so such a text is never judged here."""
    if not text.isascii():
        return False
    known = dict.fromkeys(names, 0)
    for statement in module.body:
        if type(statement) is cst.FunctionDef and statement.name.value in known:  # see imports.node_types
            known[statement.name.value] += 1
        elif type(statement) is cst.SimpleStatementLine:
            for small in statement.body:  # disjoint and not nested: each token is counted once
                if type(small) is cst.Expr and any(small.value is call for call in calls):
                    walk.visit(small.value, _NameCount(known))
    return all(text.count(name) == seen for name, seen in known.items())


class _NameCount(cst.CSTVisitor):
    """Counts the Name tokens whose value is a key of ``counts``."""

    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.counts:
            self.counts[node.value] += 1


def _plannable(decision: SiteDecision) -> bool:
    """A plan, or none only because the settings move nothing (as reconcile_shared counts them)."""
    return decision.plan is not None or (decision.problem is None and decision.inconsistency is None)


def _expression(code: str) -> ast.expr:
    """``code`` (an expression, maybe spread over lines) as an ast node."""
    return ast.parse(f"(\n{code}\n)", mode="eval").body
