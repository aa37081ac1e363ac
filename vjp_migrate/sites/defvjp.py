"""Sites, step 5: linking a site to its ``defvjp(fwd, bwd)`` call and resolving the two rules
(defs of the module, lambdas, partials, aliases, rules imported through the project)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import PARTIAL, dotted, small_statements
from vjp_migrate.model import FunctionRef, VjpSite
from vjp_migrate.sites.jit import rule_decorations
from vjp_migrate.sites.nondiff import NondiffReader
from vjp_migrate.sites.rules import lambda_rule, partial_problem, positions_from_bwd, rule_arg, signature_from_bwd
from vjp_migrate.sites.scopes import AllNames, ModuleBindings, Scope, find_def, positional_params, scope_statements

# Project-wide analysis (project.py) resolves a rule name that no def in the module binds:
# (role, dotted name) -> the FunctionRef, or None to keep this module's own verdict.
ImportedRule = Callable[[str, str], FunctionRef | None]


class RuleLinker(NondiffReader):
    """Attaches the fwd and bwd rules to one module's sites (the base of SiteFinder)."""

    imported_rule: ImportedRule | None
    names: set[str] | None  # every name the module uses, once needed
    bindings: dict[str, int] | None  # module-level binding counts, once needed

    def _attach_rules(self, site: VjpSite, scope: Scope) -> VjpSite:
        found: tuple[cst.Call, Scope] | str | None = self._find_defvjp(site, scope)
        if found is None and scope.parent is None:
            found = self._defvjp_through_alias(site, scope)
        if found is None:
            inside = self._defvjp_inside(site, scope)
            problem = (
                f"`{site.name}.defvjp(fwd, bwd)` is called inside `{inside}`, not in the scope of `{site.name}`, "
                "so which rules it gets, and when, cannot be told"
                if inside is not None
                else f"no `{site.name}.defvjp(fwd, bwd)` call was found in its scope"
            )
            return replace(site, problem=problem)
        if isinstance(found, str):
            return replace(site, problem=found)
        call, call_scope = found
        fwd_expr = rule_arg(call, 0, "fwd")
        bwd_expr = rule_arg(call, 1, "bwd")
        fwd = self._resolve_rule(fwd_expr, call_scope, "fwd")
        bwd = self._resolve_rule(bwd_expr, call_scope, "bwd")
        if bwd.lambda_node is not None:
            bwd = replace(bwd, def_name=self._free_name(f"{site.name.split('.')[-1]}_bwd"))
        site = replace(site, fwd=fwd, bwd=bwd, defvjp=call)
        site = self._signature_from_fwd(site) if site.primal is None else site
        return positions_from_bwd(site) if id(site.nondiff.argnums_arg) in self.unread_imports else site

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

    def _find_defvjp(self, site: VjpSite, scope: Scope) -> tuple[cst.Call, Scope] | None:
        candidates = [(site.name, scope)]
        if scope.is_class and scope.parent is not None:
            class_name = scope.qualprefix.rstrip(".").split(".")[-1]
            candidates.append((f"{class_name}.{site.name}", scope.parent))
        for owner, where in candidates:
            for stmt in scope_statements(where.statements):
                if not isinstance(stmt, cst.SimpleStatementLine):
                    continue
                for small in stmt.body:
                    call = small.value if isinstance(small, cst.Expr) else None
                    if isinstance(call, cst.Call) and self._defvjp_owner(call.func) == owner:
                        return call, where
        return None

    def _defvjp_inside(self, site: VjpSite, scope: Scope) -> str | None:
        """The name of a def in the site's scope whose body calls ``<site>.defvjp(...)`` (a
        registration function: `def _register(): f.defvjp(f_fwd, f_bwd)`), for the message."""
        defs = [s for s in scope_statements(scope.statements) if isinstance(s, cst.FunctionDef)]
        finder = _DefvjpCalls(self._defvjp_owner, site.name)
        for func in defs:
            walk.visit(func, finder)
            if finder.found:
                return func.name.value
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

    def _resolve_rule(self, expr: cst.BaseExpression | None, scope: Scope, role: str) -> FunctionRef:
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
        node = find_def(scope, name)
        if node is None and self.imported_rule is not None:
            resolved = self.imported_rule(role, name)
            if resolved is not None:
                return replace(resolved, bound_args=bound) if resolved.node is not None else resolved
        if node is None:
            origin = self.imports.aliases.get(name.split(".")[0])
            where = f"imported from `{origin.rsplit('.', 1)[0]}`" if origin else "not defined in this module"
            return FunctionRef(name, None, f"{role} `{name}` is {where}")
        jit, problem = rule_decorations(role, name, node, self.imports)
        return FunctionRef(name, node, bound_args=bound, jit=jit, decorator_problem=problem)

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


class _DefvjpCalls(cst.CSTVisitor):
    """Whether a walked def calls ``<name>.defvjp(...)``."""

    def __init__(self, owner: Callable[[cst.BaseExpression], str | None], name: str) -> None:
        super().__init__()
        self.owner, self.name, self.found = owner, name, False

    def visit_Call(self, node: cst.Call) -> None:
        self.found = self.found or self.owner(node.func) == self.name
