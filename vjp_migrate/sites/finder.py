"""Sites, step 6: ``SiteFinder``, which walks a module's scopes and collects its custom_vjp sites
(every spelling of the decorator and call forms, through a module alias of the partial too:
`@vjp_w`, `f = vjp_w(_f)`); the nondiff positions are read by its base
``NondiffReader`` (nondiff.py), the rules linked by ``RuleLinker`` (defvjp.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import PRIMAL_ROLE, FunctionRef, PartialAlias, VjpSite
from vjp_migrate.sites.defvjp import ImportedRule, RuleLinker
from vjp_migrate.sites.imported import ImportedAlias, custom_vjp_spelling, defvjp_owners
from vjp_migrate.sites.jit import jit_static_positions
from vjp_migrate.sites.nondiff import ImportedValue, NondiffReader
from vjp_migrate.sites.rules import lambda_rule
from vjp_migrate.sites.scopes import (
    Scope,
    body_statements,
    constant_assigns,
    find_def,
    positional_params,
    scope_statements,
)
from vjp_migrate.vocabulary import PRIMAL_WRAPPERS, may_be_project_alias

__all__ = ["ImportedAlias", "ImportedRule", "ImportedValue", "SiteFinder"]


class SiteFinder(RuleLinker):
    """Walks one module's scopes and collects its custom_vjp sites."""

    def __init__(
        self,
        module: cst.Module,
        imports: ImportTable,
        imported_rule: ImportedRule | None = None,
        imported_value: ImportedValue | None = None,
        imported_alias: ImportedAlias | None = None,
    ) -> None:
        self.module = module
        self.imports = imports
        self.imported_rule = imported_rule
        self.imported_value = imported_value
        self.imported_alias = imported_alias
        self.registered: frozenset[str] | None = None  # defvjp_owners, once needed
        self.constants = constant_assigns(module)
        self.mentions = None
        self.names = None
        self.bindings = None
        self.registrations = {}
        self.aliases = self.partial_aliases()

    # --- walking scopes -----------------------------------------------------------------------

    def find(self) -> list[VjpSite]:
        sites: list[tuple[VjpSite, Scope]] = []
        self._walk(Scope(list(self.module.body), None, False, ""), sites)
        return [self._attach_rules(site, scope) for site, scope in sites]

    def _walk(self, scope: Scope, out: list[tuple[VjpSite, Scope]]) -> None:
        for stmt in scope_statements(scope.statements):  # type() is: see imports.node_types
            if type(stmt) is cst.FunctionDef:
                site = self._decorated_site(stmt, scope)
                if site is not None:
                    out.append((site, scope))
                # Functions nested in functions (methods too) are reported by their own name, like flake8 does.
                inner = Scope(body_statements(stmt), scope, False, "", stmt)
                self._walk(inner, out)
            elif type(stmt) is cst.ClassDef:
                inner = Scope(body_statements(stmt), scope, True, f"{scope.qualprefix}{stmt.name.value}.")
                self._walk(inner, out)
            elif type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and type(small.value) is cst.Call:
                        site = self._call_site(small, scope, stmt)
                        if site is not None:
                            out.append((site, scope))

    def _make_site(
        self,
        name: str,
        qualname: str,
        primal: cst.FunctionDef | None,
        carrier: cst.Decorator | cst.Call,
        args: Sequence[cst.Arg],
        vjp: tuple[cst.BaseExpression, cst.BaseExpression | None],
        primal_expr: cst.BaseExpression | None = None,
        primal_from: FunctionRef | None = None,
        alias: PartialAlias | None = None,
        reader: NondiffReader | None = None,
    ) -> VjpSite | None:
        """``primal_expr``: a call form's primal that is no def of the module (``primal`` is then
        a lambda's def view, or None until fwd gives the parameters, see _signature_from_fwd);
        ``reader``: the module ``args`` are read in, when another (an imported alias's)."""
        params = positional_params(primal) if primal is not None else ()
        positional_only = len(primal.params.posonly_params) if primal is not None else 0
        direct = vjp[1] is None  # `jax.custom_vjp(f, (1,))`: the options may be positional
        spec = (reader or self).nondiff_spec(
            args, params, primal is not None, positional_only, direct, alias is not None
        )
        if spec is None or (reader is not None and not spec.complete):
            return None  # an imported alias's positions not all read there: not followed
        return VjpSite(
            name=name,
            qualname=qualname,
            primal=primal,
            params=params,
            # Until fwd tells: a primal of unknown arity takes any position.
            has_varargs=primal is None or isinstance(primal.params.star_arg, cst.Param),
            carrier=carrier,
            custom_vjp_expr=vjp[0],
            partial_expr=vjp[1],
            nondiff=spec,
            fwd=None,
            bwd=None,
            defvjp=None,
            jit_static=(
                jit_static_positions(primal, params, self.imports)
                if primal is not None and primal_expr is None
                else frozenset()
            ),
            primal_expr=primal_expr,
            primal_from=primal_from,
            alias=alias,
        )

    def _decorated_site(self, func: cst.FunctionDef, scope: Scope) -> VjpSite | None:
        qualname = f"{scope.qualprefix}{func.name.value}"
        for decorator in func.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call):
                vjp = self._vjp_call(call)
                if vjp is not None and vjp[1] is not None:
                    return self._make_site(func.name.value, qualname, func, decorator, call.args[1:], vjp)
            alias = self.aliases.get(call.value) if isinstance(call, cst.Name) else None
            through = self._imported_alias(call, func.name.value, scope) if alias is None else None
            alias, reader = through or (alias, None)
            if alias is not None:  # `@vjp_w`
                options, vjp = _through(alias)
                return self._make_site(
                    func.name.value, qualname, func, decorator, options, vjp, alias=alias, reader=reader
                )
        return None

    def _imported_alias(
        self, expr: cst.BaseExpression, owner: str, scope: Scope
    ) -> tuple[PartialAlias, NondiffReader] | None:
        """The alias another module defines that ``expr`` names (`@vjp_w` after `from mylib.vjp
        import vjp_w`, the only binding of the name in the module), for a site at the module's
        top level whose name ``owner`` the module's own statements call `defvjp` on."""
        if self.imported_alias is None or scope.parent is not None or type(expr) is not cst.Name:
            return None
        local = expr.value
        target = self.imports.aliases.get(local)
        if target is None or local in self.imports.shadowed or not may_be_project_alias(target):
            return None
        if self.registered is None:
            self.registered = defvjp_owners(self.module, self._defvjp_owner)
        if owner not in self.registered or (bindings := self._name_facts()[0]).get(local, 0) != 1:
            return None
        found = self.imported_alias(local)
        if found is None:
            return None
        alias, reader = found
        return replace(alias, name=local, custom_vjp=custom_vjp_spelling(self.module, self.imports, bindings)), reader

    def _call_site(self, assign: cst.Assign, scope: Scope, line: cst.SimpleStatementLine) -> VjpSite | None:
        """``f = jax.custom_vjp(...)``, also to an attribute: ``simulate.vjp = jax.custom_vjp(...)``;
        ``line``, the statement holding it, sees the def last bound before it."""
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Name, cst.Attribute)):
            return None
        name = dotted(assign.targets[0].target)
        if name is None:
            return None
        call = assign.value
        assert isinstance(call, cst.Call)
        alias = self.aliases.get(call.func.value) if isinstance(call.func, cst.Name) else None
        through = self._imported_alias(call.func, name, scope) if alias is None else None
        alias, reader = through or (alias, None)
        vjp: tuple[cst.BaseExpression, cst.BaseExpression | None] | None
        if alias is not None:  # `vjp_w(f)`, one function and nothing else
            if len(call.args) != 1 or call.args[0].keyword is not None:
                return None
            (options, vjp), target = _through(alias), call.args[0]
        elif isinstance(call.func, cst.Call):  # partial(jax.custom_vjp, nondiff_argnums=...)(f)
            vjp = self._vjp_call(call.func)
            if vjp is None or vjp[1] is None or not call.args:
                return None
            options, target = call.func.args[1:], call.args[0]
        else:
            vjp = self._vjp_call(call)
            if vjp is None or vjp[1] is not None or not call.args:
                return None
            options, target = call.args[1:], call.args[0]
        written, unwrapped = target.value, self._unwrapped(target.value)
        primal = find_def(scope, unwrapped.value, line) if isinstance(unwrapped, cst.Name) else None
        if primal is not None:
            qualname = f"{scope.qualprefix}{primal.name.value}"
            return self._make_site(name, qualname, primal, call, options, vjp, alias=alias, reader=reader)
        if target.star:  # custom_vjp(*fs, ...): which function it is cannot be told
            return None
        if reader is not None:  # an imported alias of a primal that is no def here: not followed
            return None
        # A lambda is read through a def view, like a lambda rule; an imported def where its module
        # is checked; anything else is not seen.
        imported = self._imported_primal(unwrapped, scope)
        seen = lambda_rule(unwrapped).node if isinstance(unwrapped, cst.Lambda) else imported.node if imported else None
        qualname = f"{scope.qualprefix}{name}"
        return self._make_site(name, qualname, seen, call, options, vjp, written, imported, alias)

    def _imported_primal(self, target: cst.BaseExpression, scope: Scope) -> FunctionRef | None:
        """The def of a primal the module imports from another file of the run, like an imported
        rule; only where no enclosing def could bind the name to something else (a parameter)."""
        name = dotted(target)
        if name is None or self.imported_rule is None:
            return None
        outer: Scope | None = scope
        while outer is not None and outer.parent is not None:
            if not outer.is_class:
                return None
            outer = outer.parent
        return self.imported_rule(PRIMAL_ROLE, name)

    def _unwrapped(self, target: cst.BaseExpression) -> cst.BaseExpression:
        """``f`` for ``jax.jit(f)`` and the like: the primal is still ``f``'s def."""
        if (
            isinstance(target, cst.Call)
            and len(target.args) == 1
            and target.args[0].keyword is None
            and not target.args[0].star
            and self.imports.qualify(target.func) in PRIMAL_WRAPPERS
        ):
            return target.args[0].value
        return target


def _through(alias: PartialAlias) -> tuple[Sequence[cst.Arg], tuple[cst.BaseExpression, cst.BaseExpression | None]]:
    """A site's options and (custom_vjp, partial) when it goes through ``alias``: the alias's."""
    return alias.call.args[1:], (alias.call.args[0].value, alias.call.func)
