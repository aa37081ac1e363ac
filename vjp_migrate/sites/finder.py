"""Sites, step 4: ``SiteFinder``, which walks a module's scopes and collects its custom_vjp sites
(every spelling of the decorator and call forms, defvjp, rules imported through the project)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import CUSTOM_VJP, PARTIAL, ImportTable, dotted, small_statements
from vjp_migrate.model import FunctionRef, NondiffSpec, VjpSite
from vjp_migrate.sites.jit import jit_static_positions, other_decorator, rule_jit
from vjp_migrate.sites.rules import lambda_rule, partial_problem, positions_from_bwd, rule_arg, signature_from_bwd
from vjp_migrate.sites.scopes import (
    AllNames,
    ModuleBindings,
    Scope,
    body_statements,
    find_def,
    int_literals,
    module_constants,
    positional_params,
    scope_statements,
    str_literals,
)
from vjp_migrate.vocabulary import PRIMAL_WRAPPERS

# Project-wide analysis (project.py) resolves a rule name that no def in the module binds:
# (role, dotted name) -> the FunctionRef, or None to keep this module's own verdict.
ImportedRule = Callable[[str, str], FunctionRef | None]
# ... and the value of a constant imported from another module (`nondiff_argnums=NONDIFF`): its
# expression there, why it cannot be read (`imported from `pkg.consts`, which is ...`), or None
# when the name is not imported.
ImportedValue = Callable[[str], cst.BaseExpression | str | None]


class SiteFinder:
    """Walks one module's scopes and collects its custom_vjp sites."""

    def __init__(
        self,
        module: cst.Module,
        imports: ImportTable,
        imported_rule: ImportedRule | None = None,
        imported_value: ImportedValue | None = None,
    ) -> None:
        self.module = module
        self.imports = imports
        self.imported_rule = imported_rule
        self.imported_value = imported_value
        self.constants = module_constants(module)
        self.unread_imports: set[int] = set()  # id(nondiff_argnums Arg) of imported names not read
        self.names: set[str] | None = None  # every name the module uses, once needed
        self.bindings: dict[str, int] | None = None  # module-level binding counts, once needed

    # --- nondiff_argnums / nondiff_argnames --------------------------------------------------

    def _positions(self, expr: cst.BaseExpression) -> tuple[int, ...] | None:
        literal = int_literals(expr, signed=True)  # a negative one is read, to be reported (VJP004)
        if literal is not None:
            return literal
        if not isinstance(expr, cst.Call) or not expr.args or any(a.keyword or a.star for a in expr.args):
            return None
        called = self.imports.qualify(expr.func)
        if called == "builtins.range":
            bounds = [int_literals(a.value) for a in expr.args]
            if len(bounds) <= 3 and all(b is not None and len(b) == 1 for b in bounds):
                return tuple(range(*[b[0] for b in bounds if b is not None]))
        if called in ("builtins.tuple", "builtins.list") and len(expr.args) == 1:
            return self._positions(expr.args[0].value)  # tuple(range(2, 5)), list((1, 2))
        return None

    def nondiff_spec(
        self, args: Sequence[cst.Arg], params: tuple[str, ...], seen: bool = True, positional_only: int = 0
    ) -> NondiffSpec | None:
        """``seen``: ``params`` are the primal's own (not fwd's, or none known); ``positional_only``:
        how many of them are, whose names JAX ignores in nondiff_argnames, as it does keyword-only ones."""
        argnums = next((a for a in args if a.keyword and a.keyword.value == "nondiff_argnums"), None)
        argnames = next((a for a in args if a.keyword and a.keyword.value == "nondiff_argnames"), None)
        if argnums is None and argnames is None:
            return None
        positions: set[int] = set()
        literal, complete, problem = True, True, None
        if argnums is not None:
            found = self._positions(argnums.value)
            if found is None:
                literal = False
                name = dotted(argnums.value)
                problem = f"nondiff_argnums is given by `{self.module.code_for_node(argnums.value)}`"
                if name in self.constants:
                    found = self._positions(self.constants[name])
                elif name is not None and (origin := self._origin(name)) is not None:
                    value = self.imported_value(name) if self.imported_value is not None else None
                    if isinstance(value, cst.BaseExpression):
                        found = self._positions(value)
                    where = value if isinstance(value, str) else f"imported from `{origin}`"
                    if found is None and not isinstance(value, str):
                        where += (
                            ", which is not among the files checked"
                            if value is None
                            else ", where its value is no literal"
                        )
                    problem += f", {where}"
                    if found is None:
                        self.unread_imports.add(id(argnums))
            complete = found is not None
            positions.update(found or ())
        if argnames is not None:
            names = str_literals(argnames.value)
            if names is None:
                literal = complete = False
                problem = f"nondiff_argnames is given by `{self.module.code_for_node(argnames.value)}`"
            else:
                positions.update(params.index(n) for n in names if n in params[positional_only:])
                # JAX skips a name the primal lacks; a name fwd lacks may still be the primal's.
                complete = complete and (seen or all(n in params for n in names))
        listed = argnums is not None and self._written_as_list(argnums.value)
        return NondiffSpec(tuple(sorted(positions)), argnums, argnames, literal, problem, complete, listed)

    def _origin(self, name: str) -> str | None:
        """The module an imported ``name`` comes from, as the import spells it."""
        target = self.imports.aliases.get(name.split(".")[0])
        if target is None:
            return None
        return target if "." in name else target.rpartition(".")[0] or target

    def _written_as_list(self, expr: cst.BaseExpression) -> bool:
        """``[0, 1]`` or ``list(...)`` of the builtins: the rewrite keeps a list."""
        return isinstance(expr, cst.List) or (
            isinstance(expr, cst.Call) and self.imports.qualify(expr.func) == "builtins.list"
        )

    # --- recognising the decorator and call forms --------------------------------------------

    def _vjp_call(self, call: cst.Call) -> tuple[cst.BaseExpression, cst.BaseExpression | None] | None:
        """For ``partial(jax.custom_vjp, ...)`` or ``jax.custom_vjp(f, ...)``: (custom_vjp, partial)."""
        if self.imports.is_one_of(call.func, PARTIAL) and call.args:
            first = call.args[0]
            if first.keyword is None and self.imports.is_one_of(first.value, CUSTOM_VJP):
                return first.value, call.func
        if self.imports.is_one_of(call.func, CUSTOM_VJP):
            return call.func, None
        return None

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
                # Functions nested in functions are reported by their own name, like flake8 does.
                inner = Scope(body_statements(stmt), scope, False, scope.qualprefix)
                self._walk(inner, out)
            elif type(stmt) is cst.ClassDef:
                inner = Scope(body_statements(stmt), scope, True, f"{scope.qualprefix}{stmt.name.value}.")
                self._walk(inner, out)
            elif type(stmt) is cst.SimpleStatementLine:
                for small in stmt.body:
                    if type(small) is cst.Assign and type(small.value) is cst.Call:
                        site = self._call_site(small, scope)
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
    ) -> VjpSite | None:
        """``primal_expr``: a call form's primal that is no def of the module (``primal`` is then
        a lambda's def view, or None until fwd gives the parameters, see _signature_from_fwd)."""
        params = positional_params(primal) if primal is not None else ()
        positional_only = len(primal.params.posonly_params) if primal is not None else 0
        spec = self.nondiff_spec(args, params, seen=primal is not None, positional_only=positional_only)
        if spec is None:
            return None
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
        )

    def _decorated_site(self, func: cst.FunctionDef, scope: Scope) -> VjpSite | None:
        for decorator in func.decorators:
            call = decorator.decorator
            if isinstance(call, cst.Call):
                vjp = self._vjp_call(call)
                if vjp is not None and vjp[1] is not None:
                    qualname = f"{scope.qualprefix}{func.name.value}"
                    return self._make_site(func.name.value, qualname, func, decorator, call.args[1:], vjp)
        return None

    def _call_site(self, assign: cst.Assign, scope: Scope) -> VjpSite | None:
        """``f = jax.custom_vjp(...)``, also to an attribute: ``simulate.vjp = jax.custom_vjp(...)``."""
        if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Name, cst.Attribute)):
            return None
        name = dotted(assign.targets[0].target)
        if name is None:
            return None
        call = assign.value
        assert isinstance(call, cst.Call)
        if isinstance(call.func, cst.Call):  # partial(jax.custom_vjp, nondiff_argnums=...)(f)
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
        primal = find_def(scope, unwrapped.value) if isinstance(unwrapped, cst.Name) else None
        if primal is not None:
            return self._make_site(name, f"{scope.qualprefix}{primal.name.value}", primal, call, options, vjp)
        if target.star:  # custom_vjp(*fs, ...): which function it is cannot be told
            return None
        # A lambda is read through a def view, like a lambda rule; anything else is not seen.
        view = lambda_rule(unwrapped).node if isinstance(unwrapped, cst.Lambda) else None
        return self._make_site(name, f"{scope.qualprefix}{name}", view, call, options, vjp, primal_expr=written)

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

    # --- linking defvjp ----------------------------------------------------------------------

    def _attach_rules(self, site: VjpSite, scope: Scope) -> VjpSite:
        found: tuple[cst.Call, Scope] | str | None = self._find_defvjp(site, scope)
        if found is None and scope.parent is None:
            found = self._defvjp_through_alias(site, scope)
        if found is None:
            return replace(site, problem=f"no `{site.name}.defvjp(fwd, bwd)` call was found in its scope")
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
        options = call.func.args[1:] if isinstance(call.func, cst.Call) else call.args[1:]
        spec = self.nondiff_spec(options, params, seen=False) or site.nondiff
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
                return resolved
        if node is None:
            origin = self.imports.aliases.get(name.split(".")[0])
            where = f"imported from `{origin.rsplit('.', 1)[0]}`" if origin else "not defined in this module"
            return FunctionRef(name, None, f"{role} `{name}` is {where}")
        jit = rule_jit(node, self.imports)
        problem = None
        if role == "bwd" and (other := other_decorator(node, self.imports)) is not None:
            problem = f"bwd `{name}` is decorated with `@{other}`, which may depend on its signature"
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
