"""Sites, step 5: linking a site to its ``defvjp(fwd, bwd)`` call and resolving the two rules
(defs of the module, lambdas, partials, aliases, rules imported through the project)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import PARTIAL, dotted, small_statements
from vjp_migrate.model import PRIMAL_ROLE, FunctionRef, VjpSite
from vjp_migrate.sites.built import building_call, built_problem
from vjp_migrate.sites.jit import rule_decorations
from vjp_migrate.sites.methods import DefvjpCalls, class_bound, method_defvjps, method_rule
from vjp_migrate.sites.nondiff import NondiffReader
from vjp_migrate.sites.overrides import overriding
from vjp_migrate.sites.rules import lambda_rule, partial_problem, positions_from_bwd, rule_arg, signature_from_bwd
from vjp_migrate.sites.scopes import (
    AllNames,
    AnyBindings,
    ModuleBindings,
    Scope,
    find_def,
    positional_params,
    scope_statements,
)
from vjp_migrate.sites.stretch import defines, numbered, stretch

# Project-wide analysis (project.py) resolves a rule name that no def in the module binds:
# (role, dotted name) -> the FunctionRef, or None to keep this module's own verdict.
ImportedRule = Callable[[str, str], FunctionRef | None]
# A scope's defvjp calls by owner, each with the defs, classes and lambdas around it and the index
# of the scope's own statement holding it (_Registrations).
Registrations = dict[str, list[tuple[cst.Call, tuple[cst.FunctionDef | cst.ClassDef | cst.Lambda, ...], int]]]


class RuleLinker(NondiffReader):
    """Attaches the fwd and bwd rules to one module's sites (the base of SiteFinder)."""

    imported_rule: ImportedRule | None
    names: set[str] | None  # every name the module uses, once needed
    bindings: dict[str, int] | None  # module-level binding counts, once needed
    # by id(Scope), once needed; the Scope is kept with them, so that no other takes its id (a
    # method's Scope is made for one lookup and freed)
    registrations: dict[int, tuple[Scope, Registrations]]

    def _attach_rules(self, site: VjpSite, scope: Scope) -> VjpSite:
        holds = stretch(site, scope)
        found: tuple[cst.Call, Scope] | str | None = self._find_defvjp(site, scope, holds)
        if found is None and scope.parent is None:
            found = self._defvjp_through_alias(site, scope)
        if found is None and scope.is_class:
            found = self._defvjp_in_methods(site, scope)
        if found is None:
            return replace(site, problem=self._unlinked(site, scope, holds))
        if isinstance(found, str):
            return replace(site, problem=found)
        call, call_scope = found
        fwd_expr, bwd_expr = _rule_args(call)
        registering = _statement_of(call, call_scope)  # the rules are the defs bound when it runs
        fwd = self._resolve_rule(fwd_expr, call_scope, "fwd", registering)
        bwd = self._resolve_rule(bwd_expr, call_scope, "bwd", registering)
        if bwd.lambda_node is not None:
            bwd = replace(bwd, def_name=self._free_name(f"{site.name.split('.')[-1]}_bwd"))
        site = replace(site, fwd=fwd, bwd=bwd, defvjp=call)
        site = self._built_by_calls(site, scope, call_scope, fwd_expr, bwd_expr)
        if site.problem is None:
            own = call_scope is scope and self._defvjp_owner(call.func) == site.name  # not through an alias
            site = replace(
                site,
                problem=self._registered_again(call, call_scope, holds if own else None)
                or self._overridden(site, call_scope),
            )
        site = self._signature_from_fwd(site) if site.primal is None else site
        return positions_from_bwd(site)

    def _built_by_calls(
        self,
        site: VjpSite,
        scope: Scope,
        call_scope: Scope,
        fwd: cst.BaseExpression | None,
        bwd: cst.BaseExpression | None,
    ) -> VjpSite:
        """A fwd or bwd not found because a call builds it (`f_fwd = make_fwd(k)`): the site's
        problem names that call, and the primal's when a call builds it too."""
        built = [
            (role, made)
            for role, expr, ref in (("fwd", fwd, site.fwd), ("bwd", bwd, site.bwd))
            if (ref is None or ref.node is None)
            and (made := building_call(expr, call_scope, self.imports, self.binds_site))
        ]
        if not built or site.problem is not None:
            return site
        primal = building_call(site.primal_expr, scope, self.imports, self.binds_site) if site.primal is None else None
        if primal is not None:
            built.insert(0, (PRIMAL_ROLE, primal))
        return replace(site, problem=built_problem(built, self.module), built_by=tuple(built))

    def _signature_from_fwd(self, site: VjpSite) -> VjpSite:
        """An unseen primal has fwd's signature: the parameter names and nondiff_argnames read there."""
        fwd = site.fwd
        if fwd is None or fwd.node is None:
            return signature_from_bwd(site)
        params = positional_params(fwd.node)[fwd.bound_args :]
        assert isinstance(site.carrier, cst.Call)
        call = site.carrier
        direct = site.alias is None and not isinstance(call.func, cst.Call)  # `jax.custom_vjp(f, (1,))`
        if site.alias is not None:  # `vjp_w(f)`
            options = site.alias.call.args[1:]
        elif isinstance(call.func, cst.Call):
            options = call.func.args[1:]
        else:
            options = call.args[1:]
        spec = self.nondiff_spec(options, params, False, 0, direct, site.alias is not None) or site.nondiff
        problem = site.problem
        if spec.argnames_arg is not None and problem is None:
            text = self.module.code_for_node(site.primal_expr) if site.primal_expr is not None else site.name
            problem = (
                f"nondiff_argnames names parameters of the primal `{text}`, which is not a function defined "
                "in this module, so their positions cannot be read"
            )
        varargs = isinstance(fwd.node.params.star_arg, cst.Param)
        return replace(site, params=params, has_varargs=varargs, nondiff=spec, problem=problem)

    def _find_defvjp(self, site: VjpSite, scope: Scope, holds: range | None) -> tuple[cst.Call, Scope] | None:
        """The first defvjp call on the site where its definition holds (``holds``, its ``stretch``
        of ``scope``); for a site under an `if`, the first after it, else the first in its scope."""
        candidates = [(site.name, scope)]
        if scope.is_class and scope.parent is not None:
            class_name = scope.qualprefix.rstrip(".").split(".")[-1]
            candidates.append((f"{class_name}.{site.name}", scope.parent))
        for owner, where in candidates:
            within = holds if where is scope else None
            first: cst.Call | None = None
            defined = False
            for k, stmt in numbered(where.statements):
                defined = defined or defines(stmt, site)
                for small in stmt.body if type(stmt) is cst.SimpleStatementLine else ():
                    call = small.value if type(small) is cst.Expr else None
                    if type(call) is not cst.Call or self._defvjp_owner(call.func) != owner:
                        continue
                    if (k in within) if within is not None else defined:
                        return call, where
                    first = first or call
            if first is not None and within is None:
                return first, where
        return None

    def _defvjp_in_methods(self, site: VjpSite, scope: Scope) -> tuple[cst.Call, Scope] | str | None:
        """``self.<site>.defvjp(self.fwd, self.bwd)`` in the methods of the site's class (each
        instance registers them again): the rules, when every such call gives the same ones."""
        found = method_defvjps(site.name, scope, self._defvjp_owner)
        given = {tuple(self.module.code_for_node(e) if e else "" for e in _rule_args(call)) for call, _ in found}
        if len(given) > 1:
            return (
                f"`{site.name}.defvjp(fwd, bwd)` is called on the instance in several methods with different "
                "rules, so which rules it gets cannot be told"
            )
        return found[0] if found else None

    def _unlinked(self, site: VjpSite, scope: Scope, holds: range | None) -> str:
        """Why no defvjp call gives the site its rules (``holds``: its ``stretch`` of ``scope``)."""
        inside = self._defvjp_inside(site, scope)
        if inside is not None:
            return (
                f"`{site.name}.defvjp(fwd, bwd)` is called inside `{inside}`, not in the scope of `{site.name}`, "
                "so which rules it gets, and when, cannot be told"
            )
        finder = DefvjpCalls(self._defvjp_owner, f".{site.name}", suffix=True)
        if scope.is_class:  # `obj.<site>.defvjp(...)` somewhere else: a subclass's method, a caller
            walk.visit(self.module, finder)
        if finder.found:
            owner = self._defvjp_owner(finder.found[0].func)
            return (
                f"`{owner}.defvjp(fwd, bwd)` is called outside the methods of "
                f"`{scope.qualprefix.rstrip('.')}`, so which rules `{site.name}` gets, and when, cannot be told"
            )
        if holds is not None and holds.stop < len(scope.statements):  # calls after it are another's
            line = walk.index_of(self.module).line(scope.statements[holds.stop])
            again = site.name.split(".")[0]
            return f"no `{site.name}.defvjp(fwd, bwd)` call follows it before `{again}` is bound again (line {line})"
        return f"no `{site.name}.defvjp(fwd, bwd)` call was found in its scope"

    def _defvjp_inside(self, site: VjpSite, scope: Scope) -> str | None:
        """The name of a def in the site's scope whose body calls ``<site>.defvjp(...)`` (a
        registration function: `def _register(): f.defvjp(f_fwd, f_bwd)`), for the message."""
        defs = [s for s in scope_statements(scope.statements) if isinstance(s, cst.FunctionDef)]
        finder = DefvjpCalls(self._defvjp_owner, site.name)
        for func in defs:
            walk.visit(func, finder)
            if finder.found:
                return func.name.value
        return None

    def _registered_again(self, call: cst.Call, scope: Scope, holds: range | None) -> str | None:
        """Why a site whose rules ``call`` registers cannot be rewritten when its scope (or a def
        in it, `def use_fast(): f.defvjp(f_fwd, f_bwd_fast)`) registers rules again: the rewrite
        changes one fwd/bwd pair, and a bwd registered by the other call would keep its old signature.
        ``holds``: the site's ``stretch`` of the scope, when ``call`` is in it: a call of the scope's
        own code outside it registers on another definition of the name."""
        kept = self.registrations.get(id(scope))
        if kept is not None and kept[0] is scope:
            found = kept[1]
        else:
            walk.index_of(self.module)  # the analysis needs it next: a replay, not a LibCST visit
            collector = _Registrations(self._defvjp_owner)
            for top, statement in enumerate(scope.statements):
                collector.top = top
                walk.visit(statement, collector)
            found = collector.found
            self.registrations[id(scope)] = (scope, found)
        owner = self._defvjp_owner(call.func)
        assert owner is not None
        root = owner.split(".")[0]
        calls = [
            c
            for c, around, top in found.get(owner, [])
            if not any(root in _bound_in(node) for node in around) and (holds is None or around or top in holds)
        ]
        if len(calls) < 2:
            return None
        index = walk.index_of(self.module)
        lines = [str(index.line(c)) for c in calls]
        times = "twice" if len(calls) == 2 else f"{len(calls)} times"
        return (
            f"`{owner}` is registered {times} (lines {', '.join(lines[:-1])} and {lines[-1]}): the rewrite "
            "would change the rules of one `defvjp` call only, and a bwd registered by another would keep "
            "its old signature"
        )

    def _overridden(self, site: VjpSite, scope: Scope) -> str | None:
        """Why rules a method reads through its instance (`self.apply_bwd`) cannot be rewritten: a
        subclass of its class may register other ones (overrides.py)."""
        if scope.parent is None:
            return None
        owner = scope.parent.qualprefix.rstrip(".").rsplit(".", 1)[-1]
        for role, ref in (("fwd", site.fwd), ("bwd", site.bwd)):
            if ref is None or ref.node is None or method_rule(scope, ref.name) is None:
                continue
            method = ref.node.name.value
            found = overriding(self.module, self.imports, owner, method)
            if found is not None:
                cls, why = found
                line = walk.index_of(self.module).line(cls)
                return (
                    f"{role} `{ref.name}` may be another method for an instance of a subclass: `{cls.name.value}` "
                    f"(line {line}) {why}, and the rewrite would change `{owner}.{method}` only"
                )
        return None

    def _defvjp_through_alias(self, site: VjpSite, scope: Scope) -> tuple[cst.Call, Scope] | str | None:
        """``clip.defvjp(...)`` after ``clip = f`` at module level: the rules of ``f``, when
        both names are bound once there (else which function gets them cannot be told)."""
        aliases = {
            target.value
            for stmt in scope_statements(scope.statements)
            if isinstance(stmt, cst.SimpleStatementLine)
            for small in stmt.body
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Name) and small.value.value == site.name
            for target in (t.target for t in small.targets)
            if isinstance(target, cst.Name)
        }
        for stmt in scope_statements(scope.statements):
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                call = small.value if isinstance(small, cst.Expr) else None
                alias = self._defvjp_owner(call.func) if isinstance(call, cst.Call) else None
                if alias not in aliases:
                    continue
                assert isinstance(call, cst.Call) and alias is not None
                twice = [n for n in (alias, site.name) if self._module_bindings().get(n, 0) != 1]
                if twice:
                    return (
                        f"`{alias}.defvjp(fwd, bwd)` is called on `{alias}`, bound to `{site.name}`, but "
                        f"`{twice[0]}` is bound more than once, so which function gets these rules cannot be told"
                    )
                return call, scope
        return None

    def _module_bindings(self) -> dict[str, int]:
        """How many times each name is bound at module level (a `global` statement counts twice)."""
        if self.bindings is None:
            counter = ModuleBindings()
            walk.index_of(self.module)  # the analysis needs it next: a replay, not a LibCST visit
            walk.visit(self.module, counter)
            for small in small_statements(self.module):
                if isinstance(small, cst.Global):
                    for item in small.names:
                        counter.add(item.name.value, 2)
            self.bindings = counter.counts
        return self.bindings

    def _defvjp_owner(self, func: cst.BaseExpression) -> str | None:
        """``f`` for ``f.defvjp`` and for ``getattr(f, "defvjp")``."""
        if isinstance(func, cst.Attribute):
            return dotted(func.value) if func.attr.value == "defvjp" else None
        if (
            isinstance(func, cst.Call)
            and self.imports.qualify(func.func) == "builtins.getattr"
            and len(func.args) == 2
            and not any(a.keyword or a.star for a in func.args)
            and isinstance(func.args[1].value, cst.SimpleString)
            and func.args[1].value.evaluated_value == "defvjp"
        ):
            return dotted(func.args[0].value)
        return None

    def _resolve_rule(
        self, expr: cst.BaseExpression | None, scope: Scope, role: str, before: cst.BaseStatement | None
    ) -> FunctionRef:
        if expr is None:
            return FunctionRef("?", None, f"defvjp is not given a {role} rule")
        text = self.module.code_for_node(expr)
        if isinstance(expr, cst.Lambda):
            return lambda_rule(expr)
        bound = 0
        if isinstance(expr, cst.Call) and self.imports.is_one_of(expr.func, PARTIAL) and expr.args:
            problem = partial_problem(expr, role, text)
            if problem is not None:
                return FunctionRef(text, None, problem)
            bound, expr = len(expr.args) - 1, expr.args[0].value
        name = dotted(expr)
        if name is None:
            return FunctionRef(text, None, f"{role} `{text}` is not a function defined in this module")
        method = method_rule(scope, name)
        if method is not None:  # `self.apply_bwd`: the instance fills its first parameter
            jit, problem = rule_decorations(role, name, method[0], self.imports, method=True)
            return FunctionRef(name, method[0], bound_args=bound + method[1], jit=jit, decorator_problem=problem)
        node = find_def(scope, name, before)
        if node is None and self.imported_rule is not None:
            resolved = self.imported_rule(role, name)
            if resolved is not None:
                return replace(resolved, bound_args=bound) if resolved.node is not None else resolved
        if node is None:
            origin = self.imports.aliases.get(name.split(".")[0])
            where = f"imported from `{origin.rsplit('.', 1)[0]}`" if origin else "not defined in this module"
            return FunctionRef(name, None, f"{role} `{name}` is {where}")
        through_class = class_bound(node) if "." in name else 0  # `Layer.apply_bwd`, a classmethod: `cls`
        jit, problem = rule_decorations(role, name, node, self.imports, method=bool(through_class))
        return FunctionRef(name, node, bound_args=bound + through_class, jit=jit, decorator_problem=problem)

    def _free_name(self, wanted: str) -> str:
        """A name nothing in the module uses yet: ``wanted``, then ``wanted_2``..."""
        if self.names is None:
            collector = AllNames()
            walk.index_of(self.module)  # the analysis needs it next: a replay, not a LibCST visit
            walk.visit(self.module, collector)
            self.names = collector.names
        name, index = wanted, 2
        while name in self.names:
            name, index = f"{wanted}_{index}", index + 1
        self.names.add(name)
        return name


def _statement_of(call: cst.Call, scope: Scope) -> cst.BaseStatement | None:
    """The statement of ``scope`` that makes ``call``, when it is one (`f.defvjp(...)` on its line)."""
    for stmt in scope_statements(scope.statements):
        if type(stmt) is cst.SimpleStatementLine and any(
            type(small) is cst.Expr and small.value is call for small in stmt.body
        ):
            return stmt
    return None


def _rule_args(call: cst.Call) -> tuple[cst.BaseExpression | None, cst.BaseExpression | None]:
    return rule_arg(call, 0, "fwd"), rule_arg(call, 1, "bwd")


def _bound_in(node: cst.FunctionDef | cst.ClassDef | cst.Lambda) -> dict[str, int]:
    """The names a def, class or lambda binds inside (its parameters too, not its own name)."""
    bindings = AnyBindings()
    for part in (node.body, *([] if isinstance(node, cst.ClassDef) else [node.params])):
        walk.visit(part, bindings)
    return bindings.counts


class _Registrations(cst.CSTVisitor):
    """The walked code's defvjp calls, by owner, each with the defs, classes and lambdas around it
    (one binding the owner's first name again names another object there: each factory's `f`)."""

    def __init__(self, owner: Callable[[cst.BaseExpression], str | None]) -> None:
        super().__init__()
        self.owner, self.around = owner, list[cst.FunctionDef | cst.ClassDef | cst.Lambda]()
        self.found: Registrations = {}
        self.top = 0  # the index of the statement walked

    def visit_Call(self, node: cst.Call) -> None:
        owner = self.owner(node.func)
        if owner is not None:
            self.found.setdefault(owner, []).append((node, tuple(self.around), self.top))

    def _enter(self, node: cst.FunctionDef | cst.ClassDef | cst.Lambda) -> None:
        self.around.append(node)

    def _leave(self, original_node: cst.FunctionDef | cst.ClassDef | cst.Lambda) -> None:
        self.around.pop()

    visit_FunctionDef = visit_ClassDef = visit_Lambda = _enter
    leave_FunctionDef = leave_ClassDef = leave_Lambda = _leave
