"""Sites, step 4: reading a site's ``nondiff_argnums`` and ``nondiff_argnames`` into a NondiffSpec
(literals, ``range``/``tuple``/``list`` of them, module constants and constants imported through the project,
by keyword or by position), and the module's aliases of ``partial(jax.custom_vjp, ...)`` that give them."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.imports import CUSTOM_VJP, PARTIAL, ImportTable, dotted
from vjp_migrate.model import NondiffConstant, NondiffSpec, PartialAlias
from vjp_migrate.sites.scopes import AnyBindings, NameMentions, int_literals, str_literals

# Project-wide analysis (project.py) gives the value of a constant imported from another module
# (`nondiff_argnums=NONDIFF`): its expression there, why it cannot be read (`imported from
# `pkg.consts`, which is ...`), or None when the name is not imported.
ImportedValue = Callable[[str], cst.BaseExpression | str | None]


class NondiffReader:
    """Reads the nondiff positions of one module's sites (the base of SiteFinder)."""

    module: cst.Module
    imports: ImportTable
    imported_value: ImportedValue | None
    constants: dict[str, cst.Assign]  # the module's constant statements, by name
    mentions: tuple[dict[str, int], NameMentions] | None  # (AnyBindings counts, NameMentions), once needed
    aliases: dict[str, PartialAlias]  # ``partial_aliases``, once read
    current = True  # the module analysed (walk.index_of); False: another one it imports from (walk.cover)

    def _vjp_call(self, call: cst.Call) -> tuple[cst.BaseExpression, cst.BaseExpression | None] | None:
        """For ``partial(jax.custom_vjp, ...)`` or ``jax.custom_vjp(f, ...)``: (custom_vjp, partial)."""
        if self.imports.is_one_of(call.func, PARTIAL) and call.args:
            first = call.args[0]
            if first.keyword is None and self.imports.is_one_of(first.value, CUSTOM_VJP):
                return first.value, call.func
        if self.imports.is_one_of(call.func, CUSTOM_VJP):
            return call.func, None
        return None

    def binds_site(self, value: cst.BaseExpression) -> bool:
        """Whether ``value`` makes a custom_vjp of a function: ``jax.custom_vjp(f, ...)``,
        ``partial(jax.custom_vjp, ...)(f)`` or, through a module alias of that partial, ``vjp_w(f)``."""
        if not isinstance(value, cst.Call):
            return False
        if isinstance(value.func, cst.Call):
            vjp = self._vjp_call(value.func)
            return vjp is not None and vjp[1] is not None
        if isinstance(value.func, cst.Name) and value.func.value in self.aliases:
            return True
        vjp = self._vjp_call(value)
        return vjp is not None and vjp[1] is None

    def partial_aliases(self) -> dict[str, PartialAlias]:
        """The names bound to ``partial(jax.custom_vjp, nondiff_argnums=...)`` (keywords only) by a
        `NAME = ...` statement at the module's top level that is the only binding of the name in the
        module; a name bound otherwise too may be read with another value, and is not followed."""
        found: dict[str, tuple[cst.Assign, cst.Call]] = {}
        for name, assign in self.constants.items():
            call = assign.value
            if not isinstance(call, cst.Call) or (vjp := self._vjp_call(call)) is None or vjp[1] is None:
                continue
            options = call.args[1:]
            if all(a.keyword is not None for a in options) and _nondiff_keywords(options) != (None, None):
                found[name] = (assign, call)
        if not found:
            return {}
        bindings, mentions = self._name_facts()
        return {
            name: PartialAlias(name, assign, call, mentions.counts.get(name, 0) - 1, name in mentions.strings)
            for name, (assign, call) in found.items()
            if bindings.get(name, 0) == 1
        }

    def _positions(self, expr: cst.BaseExpression) -> tuple[int, ...] | None:
        if isinstance(expr, cst.Set):  # JAX updates a set with what it is given: any iterable
            expr = cst.List(expr.elements)
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
        self,
        args: Sequence[cst.Arg],
        params: tuple[str, ...],
        seen: bool = True,
        positional_only: int = 0,
        by_position: bool = False,
        aliased: bool = False,
    ) -> NondiffSpec | None:
        """``seen``: ``params`` are the primal's own (not fwd's, or none known); ``positional_only``:
        how many of them are, whose names JAX ignores in nondiff_argnames, as it does keyword-only ones;
        ``by_position``: ``args`` follow the function in `jax.custom_vjp(f, (1,))`, whose signature
        takes nondiff_argnums and then nondiff_argnames by position too; ``aliased``: they are a
        module alias's (`vjp_w = partial(...)`), which other sites may read: so may a constant they name."""
        argnums, argnames = _nondiff_keywords(args)
        if by_position:
            leading = list(itertools.takewhile(lambda a: a.keyword is None and not a.star, args))
            argnums = argnums or (leading[0] if leading else None)
            argnames = argnames or (leading[1] if len(leading) > 1 else None)
        if argnums is None and argnames is None:
            return None
        positions: set[int] = set()
        literal, complete, problem = True, True, None
        constant: NondiffConstant | None = None
        bare_int: int | None = None
        listed = argnums is not None and self._written_as_list(argnums.value)
        if argnums is not None:
            given = argnums.value  # the expression the positions are read from
            found = self._positions(given)
            if found is None:
                literal = False
                name = dotted(argnums.value)
                problem = f"nondiff_argnums is given by `{self.module.code_for_node(argnums.value)}`"
                if name in self.constants:
                    found = self._positions(self.constants[name].value)
                    constant = self._constant(name, aliased) if found is not None else None
                    if constant is not None:
                        given = constant.assign.value
                        problem, listed = None, self._written_as_list(given)
                elif name is not None and (origin := self._origin(name)) is not None:
                    value = self.imported_value(name) if self.imported_value is not None else None
                    if isinstance(value, cst.BaseExpression):
                        given, found = value, self._positions(value)
                    where = value if isinstance(value, str) else f"imported from `{origin}`"
                    if found is None and not isinstance(value, str):
                        where += (
                            ", which is not among the files checked"
                            if value is None
                            else ", where its value is no literal"
                        )
                    problem += f", {where}"
            complete = found is not None
            if found is not None and _one_int(given):
                bare_int = found[0]
            positions.update(found if found is not None and bare_int != 0 else ())  # JAX ignores a falsy one
        if argnames is not None:
            names = str_literals(argnames.value)
            if names is None:
                literal = complete = False
                problem = f"nondiff_argnames is given by `{self.module.code_for_node(argnames.value)}`"
            else:
                positions.update(params.index(n) for n in names if n in params[positional_only:])
                # JAX skips a name the primal lacks; a name fwd lacks may still be the primal's.
                complete = complete and (seen or all(n in params for n in names))
        return NondiffSpec(
            tuple(sorted(positions)), argnums, argnames, literal, problem, complete, listed, constant, bare_int
        )

    def _name_facts(self) -> tuple[dict[str, int], NameMentions]:
        """How many constructs bind each name anywhere in the module, and how often it is written."""
        if self.mentions is None:
            bindings, mentions = AnyBindings(), NameMentions()
            if self.current:
                walk.index_of(self.module)  # the analysis needs it next: a replay, not a LibCST visit
            else:
                walk.cover(self.module)
            walk.visit(self.module, bindings)
            walk.visit(self.module, mentions)
            self.mentions = bindings.counts, mentions
        return self.mentions

    def _constant(self, name: str, aliased: bool = False) -> NondiffConstant | None:
        """The module constant ``name`` when it is the only binding of that name in the module
        (else a parameter, a later or conditional assignment may be what the site reads)."""
        bindings_count, mentions = self._name_facts()
        assign = self.constants.get(name)
        if assign is None or bindings_count.get(name, 0) != 1:
            return None
        # Its binding and the site's keyword are its only mentions, and no other module should
        # import a private name.
        shared = aliased or not name.startswith("_") or mentions.counts.get(name, 0) != 2 or name in mentions.strings
        return NondiffConstant(assign, shared)

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


def _nondiff_keywords(args: Sequence[cst.Arg]) -> tuple[cst.Arg | None, cst.Arg | None]:
    """The `nondiff_argnums=` and `nondiff_argnames=` arguments among ``args``."""
    argnums = next((a for a in args if a.keyword and a.keyword.value == "nondiff_argnums"), None)
    argnames = next((a for a in args if a.keyword and a.keyword.value == "nondiff_argnames"), None)
    return argnums, argnames


def _one_int(expr: cst.BaseExpression) -> bool:
    """`1` or `-1`, not a sequence of them."""
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, cst.Integer)
