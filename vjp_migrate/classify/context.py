"""Classify, step 5: ``Context``, what classify knows about the module once (imports, helpers,
enums, leafless configs, primitives, line numbers), and the locals of a function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from vjp_migrate.classify.array_fields import ArrayFields, module_array_fields
from vjp_migrate.classify.class_containers import module_attribute_containers, module_kept
from vjp_migrate.classify.class_fields import (
    ClassFields,
    method_classes,
    method_instances,
    plain_classes,
    plain_methods,
)
from vjp_migrate.classify.containers import module_jax_arrays, module_sequences
from vjp_migrate.classify.expressions import all_params, value_names
from vjp_migrate.classify.hashing import module_cached, module_dicts
from vjp_migrate.classify.module_facts import (
    Enclosing,
    enclosing_defs,
    module_arrays,
    module_attribute_aliases,
    module_enums,
    module_helpers,
    module_jit_aliases,
    module_partial_aliases,
    module_primitives,
    module_variants,
)
from vjp_migrate.classify.pytrees import module_static_classes
from vjp_migrate.classify.scoped_hashing import Hashers, scoped_hashers
from vjp_migrate.classify.weights import DOUBT, MAYBE_NEEDED, NEEDED, STRONG
from vjp_migrate.cross_calls import Passed
from vjp_migrate.derived import Locals, locals_of
from vjp_migrate.imports import ImportTable
from vjp_migrate.model import ArgKind, Evidence, VjpSite
from vjp_migrate.sites import body_statements, jit_static_names

LineOf = Callable[[cst.CSTNode], "int | None"]
Where = tuple["int | None", "str | None"]  # a line, and the file it is in when that is another file of the run
Wrapped = dict[str, list[frozenset[str]]]
# A called name (`soft_cap`, `utils.soft_cap`) -> the def it imports from another module of the
# run, the context to read that def in (its module's imports too) and the module's name; None
# when it names none.
ImportedHelper = Callable[[str], "tuple[cst.FunctionDef, Context, str] | None"]


@dataclass(frozen=True)
class Via:
    """A value computed from the argument's values that reaches a use: the text that says how."""

    text: str  # through `n` (from `a`, line 3)
    certain: bool

    def needs(self, use: str, certain: bool = True) -> tuple[ArgKind, str, str]:
        """Kind, text and weight of the evidence a use of the value needing it concrete gives."""
        sure = self.certain and certain
        for lead in (NEEDED, MAYBE_NEEDED):
            if use.startswith(f"{lead} "):  # the value reached a helper's own derived value
                use = f", then {use.removeprefix(lead + ' ')}"
                break
        else:
            use = f": {use}"
        if sure:
            return ArgKind.STATIC, f"{NEEDED} {self.text}{use}", STRONG
        return ArgKind.UNKNOWN, f"{MAYBE_NEEDED} {self.text}{use}", DOUBT

    def carried(self, found: Iterable[tuple[Evidence, str]]) -> list[tuple[Evidence, str]]:
        """What a helper's evidence about the value says about the argument: only its need for
        concrete values (or a doubt) carries back through the value."""
        carried: list[tuple[Evidence, str]] = []
        for evidence, weight in found:
            if evidence.kind is ArgKind.STATIC or weight == DOUBT:
                kind, text, weight = self.needs(evidence.text, evidence.kind is ArgKind.STATIC)
                carried.append((replace(evidence, kind=kind, text=text), weight))
        return carried


@dataclass(frozen=True)
class Context:
    imports: ImportTable
    helpers: dict[str, cst.FunctionDef]  # module-level functions, followed one call deep at a time
    line_of: LineOf
    # Every call of a dotted name in the module, with the functions it is in: one walk per module.
    calls: dict[int, list[tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]]] = field(
        default_factory=dict, compare=False
    )
    # The names the module passes as an argument of some call (`jax.jit(run)`), from that same walk.
    passed: dict[int, frozenset[str]] = field(default_factory=dict, compare=False)
    # The module's defs that a call `jax.jit(run, ...)` wraps, each with what every such call whose
    # static arguments are literals marks static: `run = jax.jit(run)`, `jax.jit(run)(x, w)`.
    wrapped: dict[int, Wrapped] = field(default_factory=dict, compare=False)
    # The parameters of the lambdas around each of those calls (by the call's id), from that walk:
    # `lambda w: f(w, x)` passes the lambda's `w`, not the `w` of the def around it.
    lambda_params: dict[int, frozenset[str]] = field(default_factory=dict, compare=False)
    # The bindings of each function analysed, whichever parameter is followed through it (by the
    # ids of the function and of the imports its values were read with).
    locals: dict[tuple[int, int], Locals] = field(default_factory=dict, compare=False)
    # Module-level names bound once, to a new `Primitive(...)`.
    primitives: frozenset[str] = frozenset()
    # Module-level names bound once, to what a JAX array function makes, with that call.
    arrays: dict[str, cst.Call] = field(default_factory=dict, compare=False)
    # Names bound to several defs, in the branches of a module-level `if` or `try`.
    variants: dict[str, tuple[cst.FunctionDef, ...]] = field(default_factory=dict)
    # Module-level classes that are enums whose members are no numbers (not `IntEnum`/`IntFlag`).
    enums: frozenset[str] = frozenset()
    # Module-level classes registered as pytrees with no leaves (`@jax.tree_util.register_static`,
    # `register_dataclass(..., data_fields=[])`, ...), each with how it is registered.
    static_classes: dict[str, str] = field(default_factory=dict, compare=False)
    # For each def nested in a function, by id: the defs the functions around it bind by name.
    enclosing: dict[int, Enclosing] = field(default_factory=dict, compare=False)
    # Module-level names bound once to a function cached through a call (`f = cache(g)`), each with
    # how the decorator is written, and to a new dict (`_BUFFERS = {}`): both hash what they get.
    cached: dict[str, str] = field(default_factory=dict, compare=False)
    dicts: frozenset[str] = frozenset()
    # Module-level names bound once to a new tuple, list or string, or a host NumPy array, each with
    # which it is: indexed only by a concrete value (containers.py).
    sequences: dict[str, str] = field(default_factory=dict, compare=False)
    # Module-level names bound once, annotated as JAX arrays (`_TABLE: jax.Array = load()`).
    jax_arrays: frozenset[str] = frozenset()
    # The containers module classes keep, reached through the class or a module-level instance
    # (`Levels.SCALES`, `cfg.scales`), each with its kind ("dict", "tuple"...) and how to name it.
    attribute_containers: dict[str, tuple[str, str]] = field(default_factory=dict, compare=False)
    # For each def that sees them, by id: a factory's cached functions and dicts around it, the
    # dicts its class keeps (`self._table`).
    hashers: dict[int, Hashers] = field(default_factory=dict, compare=False)
    # For each method of a module class with static fields (or registered with no leaves), by id:
    # what its class declares, for the `self.<field>` a call site passes.
    methods: dict[int, ClassFields] = field(default_factory=dict, compare=False)
    # The instance methods of the module's classes, by id, with what each calls its instance
    # (`self`) and its class's name.
    instances: dict[int, tuple[str, str]] = field(default_factory=dict, compare=False)
    # The methods of the module's plain classes (no pytree), by id, with the class's name: `self` there is no JAX value.
    plain_methods: dict[int, str] = field(default_factory=dict, compare=False)
    # The module's plain classes and dataclasses (no pytree) with no field annotated as an array:
    # an instance is no JAX value.
    plain_classes: frozenset[str] = frozenset()
    # Module-level names bound once to `partial(f, k=v)` of a module def, keywords only: `f` runs.
    aliases: dict[str, cst.FunctionDef] = field(default_factory=dict, compare=False)
    # Module-level names bound once to `jax.jit(f, ...)` of a module def, with literal static
    # arguments: `f` runs, and the parameters given with them are hashed.
    jitted: dict[str, tuple[cst.FunctionDef, frozenset[str]]] = field(default_factory=dict, compare=False)
    # The module's classes with fields annotated as arrays, by name: what a caller's parameter
    # annotated with one holds.
    array_fields: dict[str, ArrayFields] = field(default_factory=dict, compare=False)
    # Module-level names bound once to an attribute of an imported module (`window = helpers.window`),
    # each with that dotted name: a call of one is a call of it.
    attributes: dict[str, str] = field(default_factory=dict, compare=False)
    # The names the module's custom_vjp sites are called by, each with its primal def: a call runs
    # the def (`scaled_sum = jax.custom_vjp(_scaled_sum, ...)`; a site in a factory called by a rule).
    sites: dict[str, cst.FunctionDef] = field(default_factory=dict, compare=False)
    # Set by a run over several files (project.py): the helpers imported from its other modules,
    # and where a node of another module whose rules are read here is (its line and file).
    imported: ImportedHelper | None = field(default=None, compare=False)
    elsewhere: Callable[[cst.CSTNode], Where] | None = field(default=None, compare=False)
    # And by the name of a custom_vjp of the module: the static values calls of it in the run's
    # other files pass, each with its position or keyword (cross_calls.py).
    outside: dict[str, tuple[Passed, ...]] = field(default_factory=dict, compare=False)

    def where(self, node: cst.CSTNode) -> Where:
        """The line of ``node``, in this module or, for a rule read from another file, in that file."""
        line = self.line_of(node)
        if line is not None or self.elsewhere is None:
            return line, None
        return self.elsewhere(node)

    @classmethod
    def of(cls, module: cst.Module, imports: ImportTable, line_of: LineOf) -> Context:
        """The context of one module: its helpers, primitives and enums read from it."""
        primitives = module_primitives(module, imports)
        static_classes = module_static_classes(module, imports)
        array_fields = module_array_fields(module, imports)
        helpers = module_helpers(module)
        kept = module_kept(module, imports)
        return cls(
            imports,
            helpers,
            line_of,
            primitives=primitives,
            arrays=module_arrays(module, imports),
            variants=module_variants(module),
            enums=module_enums(module, imports),
            static_classes=static_classes,
            enclosing=enclosing_defs(module),
            cached=module_cached(module, imports),
            dicts=module_dicts(module, imports),
            sequences=module_sequences(module, imports),
            jax_arrays=module_jax_arrays(module, imports),
            attribute_containers=module_attribute_containers(module, kept),
            hashers=scoped_hashers(module, imports, kept),
            methods=method_classes(module, imports, static_classes),
            instances=method_instances(module),
            plain_methods=plain_methods(module, imports),
            array_fields=array_fields,
            plain_classes=plain_classes(module, imports) - set(array_fields),
            aliases=module_partial_aliases(module, imports, helpers),
            jitted=module_jit_aliases(module, imports, helpers),
            attributes=module_attribute_aliases(module, imports),
        )

    def with_sites(self, sites: Iterable[VjpSite]) -> Context:
        """This context knowing which def a call of each of ``sites`` runs."""
        return replace(self, sites={site.name: site.primal for site in sites if site.primal and not site.primal_expr})

    def definitions(self, name: str, within: cst.FunctionDef | None = None) -> tuple[cst.FunctionDef, ...]:
        """The defs a call of ``name`` in ``within`` may reach: the def a function around it binds
        the name to (a factory's helper), else its helper, or every variant; none if neither."""
        scope = self.enclosing.get(id(within)) if within is not None else None
        if scope is not None and name in scope:
            bound = scope[name]
            return (bound,) if bound is not None else ()
        helper = (
            self.helpers.get(name)
            or self.aliases.get(name)
            or self.sites.get(name)
            or self.jitted.get(name, (None,))[0]
        )
        return (helper,) if helper is not None else self.variants.get(name, ())

    def jit_static(self, name: str, helper: cst.FunctionDef) -> frozenset[str]:
        """The parameters of ``helper`` that a jit marks static: its decorator, or the
        `name = jax.jit(helper, ...)` a call of ``name`` runs it through."""
        jitted = self.jitted.get(name)
        through = jitted[1] if jitted is not None and jitted[0] is helper else frozenset()
        return jit_static_names(helper, self.imports) | through


def own_body(func: cst.FunctionDef) -> Sequence[cst.BaseStatement | cst.SimpleStatementSuite]:
    """What to read of a function: its block's statements, or the suite of a one-line def
    (`def f_bwd(w, _, g): return (g * w,)`)."""
    return [func.body] if isinstance(func.body, cst.SimpleStatementSuite) else body_statements(func)


def function_locals(func: cst.FunctionDef, ctx: Context) -> Locals:
    found = ctx.locals.get((id(func), id(ctx.imports)))
    if found is None:

        def sources(expr: cst.BaseExpression) -> list[tuple[str, bool]]:
            return list(value_names(expr, ctx.imports))

        statements = own_body(func)
        found = ctx.locals[id(func), id(ctx.imports)] = locals_of(statements, all_params(func.params), sources)
    return found
