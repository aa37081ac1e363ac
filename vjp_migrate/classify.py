"""Stage 6: site -> an ArgInfo per nondiff argument: STATIC, ARRAY or UNKNOWN, with the evidence.

Static evidence wins over numeric use: a legitimate callable or setting must never be migrated.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.derived import Binding, Derivation, Locals, locals_of
from vjp_migrate.imports import JIT, PARTIAL, ImportTable, dotted, node_types, small_statements, target_names
from vjp_migrate.model import ArgInfo, ArgKind, Evidence, JitSpec, Settings, VjpSite
from vjp_migrate.sites import (
    body_statements,
    jit_call_static_names,
    jit_static_names,
    positional_params,
    rule_jit,
    varargs_item,
)
from vjp_migrate.vocabulary import (
    ARRAY_ANNOTATION_NAMES,
    ARRAY_ANNOTATIONS,
    ARRAY_ATTRIBUTES,
    ARRAY_METHODS,
    ARRAY_MODULES,
    AXIS_METHODS,
    CALLABLE,
    CONTAINER_ANNOTATION_NAMES,
    CONTAINER_METHODS,
    DATA,
    DATACLASS_FIELDS,
    DATACLASS_REGISTRARS,
    ENUM_CLASSES,
    FFI_CALLS,
    FLAX_DATACLASSES,
    FLAX_FIELDS,
    FLAX_PYTREE_NODES,
    HOST_ARRAY_ANNOTATIONS,
    HOST_CALLBACKS,
    HOST_CONVERSIONS,
    JAX_TRANSFORMS,
    METADATA_ATTRIBUTES,
    METADATA_FUNCTIONS,
    PALLAS_CALL,
    PRIMITIVE_CLASSES,
    PYTREE_NODE_CLASS_REGISTRARS,
    SCALAR_ANNOTATION_NAMES,
    SHAPE_METHODS,
    SIZE_NAMES,
    SIZE_OR_DATA,
    STATIC,
    STATIC_ANNOTATION_NAMES,
    STATIC_BUILTINS,
    STATIC_CALLS,
    STATIC_KEYWORDS,
    STATIC_KEYWORDS_OF,
    STATIC_PLACES_OF,
    STATIC_PYTREE_DECORATORS,
    TYPE_TESTS,
    VALUE_BUILTINS,
    VALUE_METHODS,
    at_place,
    is_jax_primitive,
    is_metadata_function,
    is_size_function,
    library_use,
    takes_random_key,
)

LineOf = Callable[[cst.CSTNode], "int | None"]
Wrapped = dict[str, list[frozenset[str]]]
# How much a piece of evidence weighs. DOUBT: a local that only possibly holds the argument's
# values is needed concretely; the argument is then UNKNOWN whatever else says array.
STRONG, WEAK, CALL_SITE, SCALAR, OBJECT, DOUBT = "strong", "weak", "call site", "scalar", "object", "doubt"
# A static use on a branch a type test of the argument picks (`if callable(m): m = m(x)`): the
# argument may be something else on the other branch, array data too. An array use on such a
# branch (`if isinstance(lr, float): return x * lr`) may be of a Python number: it weighs as
# strong everywhere but against a GUARDED static use.
GUARDED, BRANCH_ARRAY = "guarded", "array on a type-picked branch"
NEEDED, MAYBE_NEEDED = "its values are needed concretely", "its values may be needed concretely"


_SUBSCRIPTS = node_types(cst.Subscript)
_ATTRIBUTES = node_types(cst.Attribute)
_VIEWS = ("T", "mT", "real", "imag")  # attributes that read the same values as their array


def _inner(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """What a subscript or a view attribute reads into (``p`` of ``p["w"]`` and ``p.T``); None
    for anything else."""
    kind = type(expr)  # type() first: isinstance on a LibCST class of another type is slow (imports.node_types)
    if (kind in _SUBSCRIPTS and isinstance(expr, cst.Subscript)) or (
        kind in _ATTRIBUTES and isinstance(expr, cst.Attribute) and expr.attr.value in _VIEWS
    ):
        return expr.value
    return None


def _strip(expr: cst.BaseExpression) -> cst.BaseExpression:
    """The name an expression is rooted at: ``p``, ``p["w"]``, ``p[0][1]``, ``p.T``."""
    while (inner := _inner(expr)) is not None:
        expr = inner
    return expr


def _item(expr: cst.BaseExpression) -> str | None:
    """``args[0]`` for a name subscripted by one int literal: how an argument in a function's
    ``*args`` is named and read."""
    if (
        isinstance(expr, cst.Subscript)
        and isinstance(expr.value, cst.Name)
        and len(expr.slice) == 1
        and isinstance(expr.slice[0].slice, cst.Index)
        and isinstance(expr.slice[0].slice.value, cst.Integer)
    ):
        return f"{expr.value.value}[{expr.slice[0].slice.value.value}]"
    return None


def _named(expr: cst.BaseExpression, names: set[str]) -> str | None:
    """Which of ``names`` ``expr`` is: a name, or an item of a ``*args`` (``args[0]``)."""
    found = expr.value if isinstance(expr, cst.Name) else _item(expr)
    return found if found in names else None


def _is_rooted(expr: cst.BaseExpression, names: set[str]) -> bool:
    """Whether ``expr`` is one of ``names``, or reads into one (``p["w"]``, ``args[0].T``)."""
    while _named(expr, names) is None:
        inner = _inner(expr)
        if inner is None:
            return False
        expr = inner
    return True


def _shadowing(params: cst.Parameters) -> set[str]:
    """The names a nested def or lambda binds that hide an argument: its positional parameters
    and its ``*args``."""
    star = [params.star_arg] if isinstance(params.star_arg, cst.Param) else []
    return {p.name.value for p in (*params.posonly_params, *params.params, *star)}


def _roots(names: Iterable[str]) -> set[str]:
    """The names bound in the function: ``args`` for ``args[0]``."""
    return {name.partition("[")[0] for name in names}


_IDENTITY = node_types(cst.Is, cst.IsNot)


def value_names(expr: cst.BaseExpression, imports: ImportTable, sure: bool = True) -> Iterator[tuple[str, bool]]:
    """The names whose values the value of ``expr`` is computed from, each with whether every
    path uses it (not only one branch of ``... if ... else ...``)."""
    if type(expr) is cst.Name:  # `type() is`: see imports.node_types
        yield expr.value, sure
    elif type(expr) is cst.Subscript:
        if (indexed := _item(expr)) is not None:
            yield indexed, sure
        yield from value_names(expr.value, imports, sure)
        for element in expr.slice:
            part = element.slice
            bounds: list[cst.BaseExpression | None] = []
            if type(part) is cst.Index:
                bounds = [part.value]
            elif type(part) is cst.Slice:
                bounds = [part.lower, part.upper, part.step]
            for bound in bounds:
                if bound is not None:
                    yield from value_names(bound, imports, sure)
    elif type(expr) is cst.Attribute:
        if expr.attr.value in _VIEWS:
            yield from value_names(expr.value, imports, sure)
    elif type(expr) is cst.BinaryOperation or type(expr) is cst.BooleanOperation:
        yield from value_names(expr.left, imports, sure)
        yield from value_names(expr.right, imports, sure)
    elif type(expr) is cst.UnaryOperation:
        yield from value_names(expr.expression, imports, sure)
    elif type(expr) is cst.Comparison:
        if not _reads_no_value(expr):
            for operand in (expr.left, *(t.comparator for t in expr.comparisons)):
                yield from value_names(operand, imports, sure)
    elif type(expr) is cst.Tuple or type(expr) is cst.List or type(expr) is cst.Set:
        for item in expr.elements:
            yield from value_names(item.value, imports, sure)
    elif type(expr) is cst.IfExp:
        yield from value_names(expr.body, imports, False)
        yield from value_names(expr.orelse, imports, False)
    elif type(expr) is cst.Call:
        yield from _call_value_names(expr, imports, sure)


def _call_value_names(call: cst.Call, imports: ImportTable, sure: bool) -> Iterator[tuple[str, bool]]:
    qname = imports.qualify(call.func)
    if qname in VALUE_BUILTINS:
        for arg in call.args:
            if arg.keyword is None:
                yield from value_names(arg.value, imports, sure)
    elif qname == "builtins.dict":  # `dict(num_warps=n)`: the values it holds
        for arg in call.args:
            yield from value_names(arg.value, imports, sure)
    elif qname is not None and qname.startswith(ARRAY_MODULES):
        last = qname.rsplit(".", 1)[-1]
        if last in METADATA_FUNCTIONS:
            return
        position = 0
        for arg in call.args:
            keyword = arg.keyword.value if arg.keyword else None
            if arg.star or library_use(qname, position, keyword) not in (STATIC, CALLABLE):
                yield from value_names(arg.value, imports, sure)
            if keyword is None:
                position = -1_000 if arg.star else position + 1
    elif qname is None and isinstance(call.func, cst.Attribute) and call.func.attr.value in VALUE_METHODS:
        yield from value_names(call.func.value, imports, sure)


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
                carried.append((Evidence(kind, text, evidence.line), weight))
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
    # Names bound to several defs, in the branches of a module-level `if` or `try`.
    variants: dict[str, tuple[cst.FunctionDef, ...]] = field(default_factory=dict)
    # Module-level classes that are enums whose members are no numbers (not `IntEnum`/`IntFlag`).
    enums: frozenset[str] = frozenset()
    # Module-level classes registered as pytrees with no leaves (`@jax.tree_util.register_static`,
    # `register_dataclass(..., data_fields=[])`, ...), each with how it is registered.
    static_classes: dict[str, str] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, module: cst.Module, imports: ImportTable, line_of: LineOf) -> Context:
        """The context of one module: its helpers, primitives and enums read from it."""
        primitives = module_primitives(module, imports)
        return cls(
            imports,
            module_helpers(module),
            line_of,
            primitives=primitives,
            variants=module_variants(module),
            enums=module_enums(module, imports),
            static_classes=module_static_classes(module, imports),
        )

    def definitions(self, name: str) -> tuple[cst.FunctionDef, ...]:
        """The defs a call of ``name`` may reach: its helper, or every variant; none if neither."""
        helper = self.helpers.get(name)
        return (helper,) if helper is not None else self.variants.get(name, ())


def _own_body(func: cst.FunctionDef) -> Sequence[cst.BaseStatement | cst.SimpleStatementSuite]:
    """What to read of a function: its block's statements, or the suite of a one-line def
    (`def f_bwd(w, _, g): return (g * w,)`)."""
    return [func.body] if isinstance(func.body, cst.SimpleStatementSuite) else body_statements(func)


def _locals(func: cst.FunctionDef, ctx: Context) -> Locals:
    found = ctx.locals.get((id(func), id(ctx.imports)))
    if found is None:

        def sources(expr: cst.BaseExpression) -> list[tuple[str, bool]]:
            return list(value_names(expr, ctx.imports))

        statements = _own_body(func)
        found = ctx.locals[id(func), id(ctx.imports)] = locals_of(statements, _all_params(func.params), sources)
    return found


class Uses(cst.CSTVisitor):
    """Collects evidence about how one name is used inside one function body."""

    def __init__(
        self, names: set[str], ctx: Context, where: str, depth: int = 0, derived: dict[str, Derivation] | None = None
    ) -> None:
        self.names = set(names)
        self.ctx = ctx
        self.where = where
        self.depth = depth
        self.derived = derived or {}
        self.evidence: list[tuple[Evidence, str]] = []
        self.bindings: dict[str, list[Binding]] = {}  # the function's locals, to spot sizes
        self.packing = ""  # while an argument is judged inside a tuple or list: where, for the reasons
        # `partial(f, k=arg)` calls, judged once the whole body is walked (see judge_kernels), and
        # the functions that cannot capture traced values: the kernels `pallas_call`s are given and
        # the host functions of callbacks, each with what it is for the reasons.
        self.partials: list[tuple[cst.Call, int, str | None, Via | None, str]] = []
        self.kernels: list[tuple[cst.BaseExpression, str]] = []
        # For each if/else being walked: where its evidence starts and the type test that picks
        # its branch (`callable(m)`), or None when its test is no type test of the argument.
        self.branches: list[tuple[int, str] | None] = []
        # For each block being walked: where the code after an `if` on a type test that exits
        # early (`if not callable(m): return ...`, or `continue` in a loop) starts, that test and
        # how it exits; the rest of the block runs only for the type the test did not pick.
        self.exits: list[list[tuple[int, str, str]]] = [[]]
        self.elifs: set[int] = set()  # the ids of `elif` tests' ifs: their chain is judged at its head
        # Where the evidence of each if's test and of each if's and else's body starts, by id.
        self.tests: dict[int, int] = {}
        self.bodies: dict[int, int] = {}

    @classmethod
    def of(cls, func: cst.FunctionDef, name: str, ctx: Context, where: str, depth: int = 0) -> Uses:
        """The uses of parameter ``name`` in ``func``'s body, and of the locals derived from it."""
        found = _locals(func, ctx)
        uses = cls({name}, ctx, where, depth, found.derived({name}))
        uses.bindings = found.bindings
        for stmt in _own_body(func):
            walk.visit(stmt, uses)
        uses.close_exits()
        uses.judge_kernels()
        return uses

    def _add(self, kind: ArgKind, text: str, node: cst.CSTNode, weight: str = STRONG, via: Via | None = None) -> None:
        self.evidence.extend(self._made(kind, text, node, weight, via))

    def _made(
        self, kind: ArgKind, text: str, node: cst.CSTNode, weight: str = STRONG, via: Via | None = None
    ) -> list[tuple[Evidence, str]]:
        if via is not None:
            if kind is not ArgKind.STATIC:
                return []  # only the need for concrete values flows through derived values
            kind, text, weight = via.needs(text)
        return [(Evidence(kind, f"{text}{self.packing} in {self.where}", self.ctx.line_of(node)), weight)]

    def _rooted(self, expr: cst.BaseExpression) -> bool:
        return _is_rooted(expr, self.names)

    def _via(self, expr: cst.BaseExpression) -> Via | None:
        """How ``expr``, not the argument itself, carries the argument's values, if it does."""
        read = [
            (name, sure and (name in self.names or self.derived[name].certain))
            for name, sure in value_names(expr, self.ctx.imports)
            if name in self.names or name in self.derived
        ]
        if not read:
            return None
        certain = any(sure for _, sure in read)
        through = next((name for name, _ in read if name not in self.names), None)
        if isinstance(expr, cst.Name):
            shown = f"`{expr.value}` ({self._chain(expr.value)})"
        else:
            shown = f"`{_code(expr)}`" + (f" (`{through}` {self._chain(through)})" if through else "")
        return Via(f"through {shown}", certain)

    def _chain(self, name: str) -> str:
        """``from `a`, line 4; `a` from `p`, line 3`` back to the argument."""
        steps: list[str] = []
        seen = {name}
        derivation = self.derived.get(name)
        while derivation is not None:
            line = self.ctx.line_of(derivation.node)
            at = f", line {line}" if line else ""
            head = "from" if not steps else f"`{derivation.name}` from"
            steps.append(f"{head} `{derivation.source}`{at}{'' if derivation.certain else ', on some paths'}")
            if derivation.source in seen or derivation.source in self.names:
                break
            seen.add(derivation.source)
            derivation = self.derived.get(derivation.source)
        return "; ".join(steps)

    def _mentions(self, test: cst.BaseExpression) -> bool:
        """Whether the test reads the name's values (``x is None`` and metadata such as ``x.shape``
        and ``len(x)`` are known for a Tracer too)."""
        finder = _NameFinder(self.names, self.ctx.imports)
        walk.visit(test, finder)
        return finder.found

    # Nested functions that rebind the name as a parameter shadow it.
    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return not (_shadowing(node.params) & _roots(self.names))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return not (_shadowing(node.params) & _roots(self.names))

    def visit_Assign(self, node: cst.Assign) -> None:
        if _named(node.value, self.names) is not None:
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    self.names.add(target.target.value)
        elif isinstance(node.value, cst.Name):
            self._unpacked(node)

    def _unpacked(self, node: cst.Assign) -> None:
        """``w, b = args``: the target at an item's index of the ``*args`` unpacked is that item."""
        assert isinstance(node.value, cst.Name)
        star = node.value.value
        for target in node.targets:
            if not isinstance(target.target, (cst.Tuple, cst.List)):
                continue
            for index, element in enumerate(target.target.elements):
                if isinstance(element, cst.StarredElement):
                    break
                if f"{star}[{index}]" in self.names and isinstance(element.value, cst.Name):
                    self.names.add(element.value.value)

    def visit_Call(self, node: cst.Call) -> None:
        if _named(node.func, self.names) is not None:
            self._add(ArgKind.STATIC, "called as a function", node)
        elif isinstance(node.func, cst.Name) and node.func.value in self.derived:
            self._add(ArgKind.STATIC, "called as a function", node, via=self._via(node.func))
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        self._kernel_of(node, method)
        if method is not None and method not in ARRAY_METHODS and method not in CONTAINER_METHODS:
            assert isinstance(node.func, cst.Attribute)
            if _named(node.func.value, self.names) is not None:
                text = f"has its method `.{method}()` called, which arrays do not have (maybe not a pytree of arrays)"
                self._add(ArgKind.UNKNOWN, text, node, weight=OBJECT)
        ffi = self._ffi_function(node.func)
        positional = 0
        for arg in node.args:
            if arg.keyword is None and arg.star:
                positional = -1_000  # positions after *args are unknown
            keyword = arg.keyword.value if arg.keyword else None
            if ffi is not None and (keyword is not None or arg.star == "**"):
                self._ffi_attributes(node, ffi, arg)
                continue
            if ffi is not None and not arg.star and self._rooted(arg.value):
                self._add(ArgKind.ARRAY, f"passed as an operand to {ffi}, which takes it as array data", node)
                positional += 1
                continue
            if arg.star == "*" and self._rooted(arg.value):
                self._unpacked_operands(node, ffi)
            if self._rooted(arg.value) and not arg.star:
                self._call_arg(node, positional if keyword is None else -1, keyword)
            elif not arg.star and (holder := self._packed(arg.value)) is not None:
                self._call_packed(node, positional if keyword is None else -1, keyword, holder)
            elif not arg.star and (via := self._via(arg.value)) is not None:
                self._call_arg(node, positional if keyword is None else -1, keyword, via)
            elif not arg.star and (attribute := self._attribute_read(arg.value)) is not None:
                self._key_attribute(node, positional if keyword is None else -1, keyword, attribute)
            if arg.keyword is None:
                positional += 1

    def _attribute_read(self, expr: cst.BaseExpression) -> str | None:
        """``.batch_key`` when ``expr`` reads an attribute of the argument itself (``p.batch_key``,
        ``p.keys.dropout``) that is not metadata; None otherwise."""
        attributes: list[str] = []
        while isinstance(expr, cst.Attribute):
            attributes.append(expr.attr.value)
            expr = expr.value
        if not attributes or _named(expr, self.names) is None:
            return None
        if METADATA_ATTRIBUTES & set(attributes):
            return None
        return "." + ".".join(reversed(attributes))

    def _key_attribute(self, call: cst.Call, position: int, keyword: str | None, attribute: str) -> None:
        """A PRNG key read from the argument (``jax.random.uniform(p.batch_key, ...)``): the argument
        holds key arrays, which are made and split as the program runs. Whether it is a pytree JAX
        takes as a regular argument (a plain object is not) is not seen: never a safe fix."""
        qname = self.ctx.imports.qualify(call.func)
        if qname is None or not takes_random_key(qname, position, keyword):
            return
        func_text = dotted(call.func) or _code(call.func)
        text = f"has its attribute `{attribute}` passed as the PRNG key to `{func_text}`"
        self._add(ArgKind.ARRAY, text, call, weight=WEAK)

    def _unpacked_operands(self, call: cst.Call, ffi: str | None) -> None:
        """``prim.bind(a, *xs)`` or an FFI call's ``*xs``: every item of the argument is an operand."""
        if ffi is None and not self._binds_primitive(call.func, self.ctx.imports.qualify(call.func)):
            return
        target = ffi or f"`{dotted(call.func) or _code(call.func)}`"
        self._add(ArgKind.ARRAY, f"unpacked by `*` as operands to {target}, which takes them as array data", call)

    def _kernel_of(self, call: cst.Call, method: str | None) -> None:
        """Keep the kernel a ``pallas_call`` is given, or the host function of a callback."""
        last = method or dotted(call.func)
        if last not in ("pallas_call", "pure_callback", "io_callback", "callback", "call"):
            return
        qname = self.ctx.imports.qualify(call.func)
        if qname == PALLAS_CALL:
            kernel, what = _call_value(call, 0, "kernel"), "a Pallas kernel"
        elif qname in HOST_CALLBACKS:
            func_text = dotted(call.func)
            kernel, what = _call_value(call, 0, HOST_CALLBACKS[qname]), f"the host function of `{func_text}`"
        else:
            return
        if kernel is not None:
            self.kernels.append((kernel, what))

    def _ffi_function(self, func: cst.BaseExpression) -> str | None:
        """How to name ``func`` if it is a function ``jax.ffi.ffi_call(...)`` returns, called in place
        or through a local bound to it once; None if it is not one."""
        made, local = func, None
        if isinstance(func, cst.Name) and func.value not in self.names:
            once = self._value_once(func.value)
            if once is not None:
                made, local = once, func.value
        if not isinstance(made, cst.Call) or self.ctx.imports.qualify(made.func) not in FFI_CALLS:
            return None
        ffi_call = dotted(made.func)
        return f"`{local}`, the function `{ffi_call}` returns" if local else f"`{ffi_call}(...)`"

    def _ffi_attributes(self, call: cst.Call, ffi: str, arg: cst.Arg) -> None:
        """An FFI call's keyword arguments (or a dict unpacked by ``**``) are its static attributes."""
        if arg.keyword is None:
            text = f"unpacked by `**` as the attributes of {ffi}, which needs them static"
        else:
            text = f"passed as the attribute `{arg.keyword.value}=` of {ffi}, which needs it static"
        if self._rooted(arg.value):
            self._add(ArgKind.STATIC, text, call)
        elif (via := self._via(arg.value)) is not None:
            self._add(ArgKind.STATIC, text, call, via=via)

    def _packed(self, expr: cst.BaseExpression) -> str | None:
        """Where the argument sits inside a tuple or list literal passed whole (`jnp.stack([x, a])`,
        `jnp.zeros((a, 3))`), or one a local is bound to once (`xs = (x, a)`, then `scan(f, c, xs)`):
        the local's name, "" for a literal in place, None when it is in neither."""
        if self._holds(expr):
            return ""
        if isinstance(expr, cst.Name) and expr.value not in self.names:
            once = self._value_once(expr.value)
            return expr.value if once is not None and self._holds(once) else None
        return None

    def _value_once(self, name: str) -> cst.BaseExpression | None:
        """The one value a local bound once is bound to (``xs = (x, a)``); None otherwise."""
        bound = self.bindings.get(name, [])
        if len(bound) == 1 and bound[0].values is not None and len(bound[0].values) == 1:
            return bound[0].values[0]
        return None

    def _holds(self, expr: cst.BaseExpression) -> bool:
        if not (type(expr) is cst.Tuple or type(expr) is cst.List):
            return False
        return any(self._rooted(e.value) or self._holds(e.value) for e in expr.elements)

    def _call_packed(self, call: cst.Call, position: int, keyword: str | None, holder: str) -> None:
        """Judge the call's place for the argument as if it were passed there itself; only for
        library functions and array methods, whose places say what each element is."""
        method = call.func.attr.value if isinstance(call.func, cst.Attribute) else None
        if self.ctx.imports.qualify(call.func) is None and method not in SHAPE_METHODS | AXIS_METHODS:
            return
        self.packing = f" (inside `{holder}`)" if holder else " (inside a tuple or list)"
        try:
            self._call_arg(call, position, keyword)
        finally:
            self.packing = ""

    def _call_arg(self, call: cst.Call, position: int, keyword: str | None, via: Via | None = None) -> None:
        func_text = dotted(call.func) or _code(call.func)  # `flash_fwd[grid]`
        if keyword in STATIC_KEYWORDS:
            self._add(ArgKind.STATIC, f"passed as `{keyword}=` to `{func_text}`", call, via=via)
            return
        qname = self.ctx.imports.qualify(call.func)
        if self._binds_primitive(call.func, qname):
            if keyword is not None:
                text = f"passed as the parameter `{keyword}=` to `{func_text}`, which needs it hashable"
                self._add(ArgKind.STATIC, text, call, via=via)
            elif position >= 0:
                self._add(ArgKind.ARRAY, f"passed as an operand to `{func_text}`", call, via=via)
            return
        if qname is None and isinstance(call.func, cst.Attribute):
            method = call.func.attr.value
            if method in SHAPE_METHODS or (method in AXIS_METHODS and (position == 0 or keyword == "axis")):
                self._add(ArgKind.STATIC, f"passed as a shape/axis to the array method `.{method}`", call, via=via)
                return
        if qname is None:
            self._follow(call, func_text, position, keyword, via)
            return
        if qname in STATIC_BUILTINS:
            self._add(ArgKind.STATIC, f"passed to `{func_text}`", call, via=via)
        elif qname in STATIC_CALLS:
            text = f"passed to `{func_text}`, which takes only static shapes, dtypes and settings"
            self._add(ArgKind.STATIC, text, call, via=via)
        elif keyword is not None and keyword in STATIC_KEYWORDS_OF.get(qname, ()):
            text = f"passed as `{keyword}=` to `{func_text}`, which needs it hashable"
            self._add(ArgKind.STATIC, text, call, via=via)
        elif qname in STATIC_PLACES_OF and at_place(STATIC_PLACES_OF[qname], position, keyword):
            text = f"passed as the tree structure to `{func_text}` (a PyTreeDef, never a Tracer)"
            self._add(ArgKind.STATIC, text, call, via=via)
        elif qname in HOST_CONVERSIONS:
            self._add(ArgKind.STATIC, f"converted to a concrete NumPy value by `{func_text}`", call, via=via)
        elif qname in JAX_TRANSFORMS:
            if position == 0:
                self._add(ArgKind.STATIC, f"passed as the function to `{func_text}`", call, via=via)
            elif qname == "functools.partial":
                self.partials.append((call, position, keyword, via, self.packing))
            elif qname in ("jax.vjp", "jax.jvp", "jax.linearize"):
                self._add(ArgKind.ARRAY, f"differentiated through `{func_text}`", call, via=via)
            elif "tree" in qname:
                self._add(ArgKind.ARRAY, f"mapped over as a pytree by `{func_text}`", call, weight=WEAK, via=via)
                if via is None and keyword is None and position >= 1:
                    self._mapped_leaves(call, func_text, position - 1)
        elif qname.startswith(ARRAY_MODULES):
            use = library_use(qname, position, keyword)
            if use == CALLABLE:
                self._add(ArgKind.STATIC, f"passed as a function to `{func_text}`", call, via=via)
            elif use == STATIC:
                place = _place(position, keyword)
                self._add(ArgKind.STATIC, f"passed as a static setting ({place}) to `{func_text}`", call, via=via)
            elif qname.startswith("numpy."):  # host NumPy: a Tracer cannot become a NumPy array
                self._add(ArgKind.STATIC, f"{NEEDED} by host NumPy's `{func_text}`", call, via=via)
            elif use == DATA:
                self._add(ArgKind.ARRAY, f"used as array data by `{func_text}`", call, via=via)
            elif use == SIZE_OR_DATA:
                self._size_or_data(call, func_text, position, keyword, via)
            elif via is None:
                place = _place(position, keyword)
                text = (
                    f"passed as {place} to `{func_text}`{self.packing}, which may need a concrete value there, "
                    f"in {self.where}"
                )
                self.evidence.append((Evidence(ArgKind.UNKNOWN, text, self.ctx.line_of(call)), WEAK))
        elif not qname.startswith("builtins.") and via is None:
            self._opaque(call, func_text)

    def _size_or_data(
        self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None
    ) -> None:
        """A place taking an int it needs concretely or an array as data (``permutation(key, n)``):
        whichever the argument is, no array evidence elsewhere makes its migration safe."""
        use = f"passed as {_place(position, keyword)} to `{func_text}`, which takes a concrete int or an array there"
        if via is not None:
            kind, text, weight = via.needs(use, certain=False)
        else:
            kind, text, weight = ArgKind.UNKNOWN, use, DOUBT
        self.evidence.append((Evidence(kind, f"{text}{self.packing} in {self.where}", self.ctx.line_of(call)), weight))

    def judge_kernels(self) -> None:
        """Once the body is walked: judge each value bound by ``partial`` where the function it is
        bound to gets it (a Pallas kernel or a callback's host function, never a traced value, or a
        def of the module: its static uses only, as what the partial is called with later is not
        seen), and each value a local def or lambda given to ``pallas_call`` as its kernel, or to a
        callback as its host function, reads from around it."""
        for kernel, what in self.kernels:
            self._captured(kernel, what)
        for call, position, keyword, via, packing in self.partials:
            self.packing = packing
            try:
                self._bound(call, position, keyword, via)
            finally:
                self.packing = ""
        self.partials.clear()

    def _bound(self, call: cst.Call, position: int, keyword: str | None, via: Via | None) -> None:
        func_text = dotted(call.func) or "partial"
        function = _call_value(call, 0, "func")
        name = dotted(function) if function is not None else None
        if function is None or name is None:
            return
        what = self._kernel_bound(call)
        if what is not None:
            place = _place(position - 1, keyword)
            text = f"bound by `{func_text}` as {place} of `{name}`, {what}, which cannot capture traced values"
            self._add(ArgKind.STATIC, text, call, via=via)
            return
        helper = self.ctx.helpers.get(name)
        if helper is None or self.packing or self.depth >= 3 or name in self.bindings:
            return
        target = _bound_parameter(helper, position, keyword)
        if target is None:
            return
        where = f"`{name}` (bound by `{func_text}` in {self.where})"
        inner = Uses.of(helper, target, self.ctx, where, self.depth + 1)
        found = [*inner.evidence, *annotation_evidence(helper, target, self.ctx, where)]
        if via is not None:
            self.evidence.extend(via.carried(found))
        else:  # array use waits for what the partial is called with
            self.evidence.extend((e, weight) for e, weight in found if e.kind is not ArgKind.ARRAY)

    def _captured(self, kernel: cst.BaseExpression, what: str) -> None:
        """The argument (or a value from it) read inside a kernel (or host function) defined here,
        which captures it."""
        function: cst.FunctionDef | cst.Lambda | None = kernel if isinstance(kernel, cst.Lambda) else None
        if isinstance(kernel, cst.Name) and kernel.value not in self.names:
            bound = self.bindings.get(kernel.value, [])
            if len(bound) == 1 and isinstance(bound[0].node, cst.FunctionDef):
                function = bound[0].node
        if function is None:
            return
        params = {p.name.value for p in _all_params(function.params)}
        outside = {name for name in self.names | set(self.derived) if name.partition("[")[0] not in params}
        finder = _NameFinder(outside, self.ctx.imports)
        walk.visit(function.body, finder)
        name = function.name.value if isinstance(function, cst.FunctionDef) else "a lambda"
        text = f"read inside `{name}`, {what}, which cannot capture traced values"
        for read in sorted(finder.read):
            self._add(ArgKind.STATIC, text, function, via=None if read in self.names else self._via(cst.Name(read)))

    def _kernel_bound(self, call: cst.Call) -> str | None:
        """What the ``partial(...)`` call is given to a ``pallas_call`` or a callback as (its kernel,
        its host function), itself or through a local bound to it once; None when neither."""
        for kernel, what in self.kernels:
            if kernel is call:
                return what
            if isinstance(kernel, cst.Name) and self._value_once(kernel.value) is call:
                return what
        return None

    def _binds_primitive(self, func: cst.BaseExpression, qname: str | None) -> bool:
        """Whether ``func`` is ``<primitive>.bind``: JAX's own, or one the module makes once."""
        if not isinstance(func, cst.Attribute) or func.attr.value != "bind":
            return False
        if qname is not None:
            return is_jax_primitive(qname.removesuffix(".bind"))
        receiver = func.value
        if isinstance(receiver, cst.Call):
            return self.ctx.imports.qualify(receiver.func) in PRIMITIVE_CLASSES
        return (
            isinstance(receiver, cst.Name)
            and receiver.value in self.ctx.primitives
            and receiver.value not in self.bindings
        )

    def _mapped_leaves(self, call: cst.Call, func_text: str, index: int) -> None:
        """A tree map hands the argument's leaves to its function: a lambda's or a module
        helper's need for them concrete (`lambda v, lie: f(v) if lie else v`) is the argument's."""
        mapped = _strip(call.args[0].value) if call.args and call.args[0].keyword is None else None
        where = f"the function mapped by `{func_text}` (in {self.where})"
        if isinstance(mapped, cst.Lambda):
            params = [p.name.value for p in mapped.params.params]
            if index >= len(params) or self.depth >= 3:
                return
            inner = Uses({params[index]}, self.ctx, where, self.depth + 1)
            walk.visit(mapped.body, inner)
            inner.judge_kernels()
        elif isinstance(mapped, cst.Name) and mapped.value in self.ctx.helpers and self.depth < 3:
            helper = self.ctx.helpers[mapped.value]
            params = list(positional_params(helper))
            if index >= len(params):
                return
            inner = Uses.of(helper, params[index], self.ctx, where, self.depth + 1)
        else:
            return
        self.evidence.extend((e, weight) for e, weight in inner.evidence if e.kind is ArgKind.STATIC)

    def _opaque(self, call: cst.Call, func_text: str) -> None:
        text = f"passed to `{func_text}`{self.packing}, which is not analysed, in {self.where}"
        self.evidence.append((Evidence(ArgKind.UNKNOWN, text, self.ctx.line_of(call)), WEAK))

    def _follow(self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None) -> None:
        defs = self.ctx.definitions(func_text)
        if not defs or self.depth >= 3 or isinstance(call.func, cst.Attribute):
            if via is None:
                self._opaque(call, func_text)
            return
        found = [self._in_helper(helper, call, func_text, position, keyword, via) for helper in defs]
        self.evidence.extend(found[0] if len(found) == 1 else _in_every(found, func_text))

    def _in_helper(
        self,
        helper: cst.FunctionDef,
        call: cst.Call,
        func_text: str,
        position: int,
        keyword: str | None,
        via: Via | None,
    ) -> list[tuple[Evidence, str]]:
        """The evidence one def of the helper ``call`` calls gives about the argument it is passed."""
        params = positional_params(helper)
        kwonly = [p.name.value for p in helper.params.kwonly_params]
        named = keyword in params or keyword in kwonly
        target = keyword if named else (params[position] if 0 <= position < len(params) else None)
        if target is None:
            return []
        if target in jit_static_names(helper, self.ctx.imports):
            text = f"passed as `{target}` to `{func_text}`, whose jax.jit marks it static"
            return self._made(ArgKind.STATIC, text, call, via=via)
        inner = Uses.of(helper, target, self.ctx, f"helper `{func_text}` (called from {self.where})", self.depth + 1)
        if via is None:
            return [*inner.evidence, *annotation_evidence(helper, target, self.ctx, inner.where)]
        return via.carried(inner.evidence)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if self._rooted(side):
                if isinstance(other, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
                    self._add(ArgKind.STATIC, "combined with a string", node)
                elif isinstance(other, (cst.List, cst.Tuple)):  # `[0] * n` repeats: n must be an int
                    self._add(ArgKind.STATIC, "combined with a list or tuple", node)
                elif self._size(other):  # `tokens // block` with `tokens = x.shape[0]`: sizes, likely
                    continue
                else:
                    self._add(ArgKind.ARRAY, "used in arithmetic", node)
            elif isinstance(side, cst.Name) and side.value in self.derived and _is_string_like(other):
                self._add(ArgKind.STATIC, "combined with a string", node, via=self._via(side))

    def _size(self, expr: cst.BaseExpression, depth: int = 0) -> bool:
        """``x.shape[0]``, ``len(x)``, ``int(x.shape[0])``, or a local only ever bound to such a value."""
        while isinstance(expr, cst.Subscript):
            expr = expr.value
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in SIZE_NAMES
        if isinstance(expr, cst.Call):
            qname = self.ctx.imports.qualify(expr.func) or ""
            if qname == "builtins.int" and len(expr.args) == 1 and not expr.args[0].star:
                return self._size(expr.args[0].value, depth + 1)  # `int(x.shape[0])`
            return is_size_function(qname)
        if isinstance(expr, cst.Name) and depth < 3 and expr.value not in self.names:
            found = self.bindings.get(expr.value)
            return bool(found) and all(
                b.values is not None and all(self._size(v, depth + 1) for v in b.values) for b in found or ()
            )
        return False

    def visit_UnaryOperation(self, node: cst.UnaryOperation) -> None:
        if self._rooted(node.expression):
            if isinstance(node.operator, cst.Not):
                self._add(ArgKind.STATIC, "used as a truth value", node)
            else:
                self._add(ArgKind.ARRAY, "used in arithmetic", node)
        elif isinstance(node.operator, cst.Not) and (via := self._via(node.expression)) is not None:
            self._add(ArgKind.STATIC, "used as a truth value", node, via=via)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        if _key_lookup(node):
            return
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        if not any(self._rooted(o) for o in operands):
            if any(_is_string_like(o) for o in operands) and (via := self._via(node)) is not None:
                self._add(ArgKind.STATIC, "compared with a string", node, via=via)
            return
        if (enum := next(filter(None, map(self._enum_of_member, operands)), None)) is not None:
            self._add(ArgKind.STATIC, f"compared with a member of the enum `{enum}`", node)
            return
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in node.comparisons):
            return  # `x is None` says nothing: optional arrays are common
        if any(_is_string_like(o) for o in operands):
            self._add(ArgKind.STATIC, "compared with a string", node)
        else:
            self._add(ArgKind.ARRAY, "compared element-wise", node, weight=WEAK)

    def _enum_of_member(self, expr: cst.BaseExpression) -> str | None:
        """``Mode`` for ``Mode.FAST``, a member of an enum of the module (a Tracer is never one,
        and JAX cannot compare one with it)."""
        if isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name) and expr.value.value in self.ctx.enums:
            return expr.value.value
        return None

    def _control(self, test: cst.BaseExpression, node: cst.CSTNode, what: str) -> None:
        if self._mentions(test):
            self._add(ArgKind.STATIC, f"decides Python control flow (`{what}`)", node)
        elif (via := self._via(test)) is not None:
            self._add(ArgKind.STATIC, f"decides Python control flow (`{what}`)", node, via=via)

    def _enter_branches(self, test: cst.BaseExpression) -> None:
        tested = _type_test_of(test, self.names, self.ctx.imports)
        self.branches.append(None if tested is None else (len(self.evidence), tested))

    def _leave_branches(self) -> None:
        entered = self.branches.pop()
        if entered is None:
            return
        start, tested = entered
        self.evidence[start:] = [_on_branch(e, weight, tested) for e, weight in self.evidence[start:]]

    def visit_If(self, node: cst.If) -> None:
        self.tests[id(node)] = len(self.evidence)
        self._control(node.test, node, "if")
        self._enter_branches(node.test)
        self.bodies[id(node)] = len(self.evidence)
        if isinstance(node.orelse, cst.If):
            self.elifs.add(id(node.orelse))

    def visit_Else(self, node: cst.Else) -> None:
        self.bodies[id(node)] = len(self.evidence)

    def leave_If(self, original_node: cst.If) -> None:
        self._leave_branches()
        if id(original_node) not in self.elifs and (exit_ := self._type_exit(original_node)) is not None:
            self.exits[-1].append((len(self.evidence), *exit_))

    def _type_exit(self, head: cst.If) -> tuple[str, str] | None:
        """The type test that an if/elif/else chain exits early on, and how it exits, when the
        code after the chain runs only for the other type: `if <test>: ... return`, each link
        before it exiting too, or `if <test>: ... else: ... return`. The branch exited from must
        use the argument (another kind of it); a `raise` guards nothing."""
        links = [head]
        while isinstance(links[-1].orelse, cst.If):
            links.append(links[-1].orelse)
        last = links[-1].orelse
        ends = [self.tests[id(link)] for link in links[1:]]
        ends.append(self.bodies[id(last)] if last is not None else len(self.evidence))
        if isinstance(head.orelse, cst.Else) and _exit(head.body) is None:
            how = _exit(head.orelse.body)
            tested = _type_test_of(head.test, self.names, self.ctx.imports)
            used = len(self.evidence) > self.bodies[id(head.orelse)]
            return (tested, how) if how is not None and tested is not None and used else None
        for link, end in zip(links, ends, strict=True):
            how = _exit(link.body)
            if how is None:
                return None  # the code after is reached from this branch too, whatever the type
            tested = _type_test_of(link.test, self.names, self.ctx.imports)
            if tested is not None and end > self.bodies[id(link)]:
                return tested, how
        return None

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self.exits.append([])

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock) -> None:
        self.close_exits()
        self.exits.pop()

    def close_exits(self) -> None:
        """Weigh the static uses after each early return of the block being left as guarded. A
        `raise` guards nothing: whatever else the test let through fails, so every call that
        returns (`if not isinstance(n, int): raise TypeError`, then `range(n)`) needs the value
        concrete. Nor does a `return` that ignores the argument (`return x`)."""
        for start, tested, how in self.exits[-1]:
            self.evidence[start:] = [_after_exit(e, weight, tested, how) for e, weight in self.evidence[start:]]
        self.exits[-1] = []

    def visit_While(self, node: cst.While) -> None:
        self._control(node.test, node, "while")

    def visit_Match(self, node: cst.Match) -> None:
        self._control(node.subject, node, "match")

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._control(node.test, node, "... if ... else ...")
        self._enter_branches(node.test)

    def leave_IfExp(self, original_node: cst.IfExp) -> None:
        self._leave_branches()

    def visit_Assert(self, node: cst.Assert) -> None:
        self._control(node.test, node, "assert")

    def visit_Slice(self, node: cst.Slice) -> None:
        for bound in (node.lower, node.upper, node.step):
            if bound is None:
                continue
            if self._rooted(bound):  # `x[i:n]` with a Tracer `n` raises: slice bounds are concrete
                self._add(ArgKind.STATIC, "used as a slice bound", node)
            elif (via := self._via(bound)) is not None:
                self._add(ArgKind.STATIC, "used as a slice bound", node, via=via)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value in ARRAY_ATTRIBUTES and self._rooted(node.value):
            self._add(ArgKind.ARRAY, f"has its `.{node.attr.value}` read", node)


def _on_branch(evidence: Evidence, weight: str, tested: str) -> tuple[Evidence, str]:
    """Evidence found on a branch the type test ``tested`` picks, weighed as such."""
    if evidence.kind is ArgKind.STATIC and weight != GUARDED:
        return replace(evidence, text=f"{evidence.text}, on a branch its type picks (`{tested}`)"), GUARDED
    if evidence.kind is ArgKind.ARRAY and weight == STRONG:
        return evidence, BRANCH_ARRAY
    return evidence, weight


def _after_exit(evidence: Evidence, weight: str, tested: str, how: str) -> tuple[Evidence, str]:
    """Evidence found after an early exit (``how``) that the type test ``tested`` picks: a static
    use there is guarded. An array use stays as strong as it was: the argument may be array data
    on this side of the test (`if callable(m): return m(x)`, then `jnp.where(m, x, 0.0)`)."""
    if evidence.kind is ArgKind.STATIC and weight != GUARDED:
        return replace(evidence, text=f"{evidence.text}, after {how} its type picks (`{tested}`)"), GUARDED
    return evidence, weight


def _exit(body: cst.BaseSuite) -> str | None:
    """How a block whose last statement leaves the rest of the block unrun does so: an early
    ``return``, or a ``continue`` of the loop it is in."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Return):
        return "an early return"
    return "a `continue`" if isinstance(last, cst.Continue) else None


def _type_test_of(test: cst.BaseExpression, names: set[str], imports: ImportTable) -> str | None:
    """The code of a type test of one of ``names`` in ``test`` (`callable(m)`), if there is one."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Call)
            and node.args
            and _named(node.args[0].value, names) is not None
            and imports.qualify(node.func) in TYPE_TESTS
        ):
            return _code(node)
        stack.extend(node.children)
    return None


class _NameFinder(cst.CSTVisitor):
    """Whether a test reads one of the names' values: `x is None`, `x.shape`, `len(x)`,
    `isinstance(x, list)` do not."""

    def __init__(self, names: set[str], imports: ImportTable) -> None:
        self.names = names
        self.imports = imports
        self.read: set[str] = set()

    @property
    def found(self) -> bool:
        return bool(self.read)

    def visit_Name(self, node: cst.Name) -> None:
        if node.value in self.names:
            self.read.add(node.value)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if (item := _named(node, self.names)) is not None:
            self.read.add(item)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not (node.attr.value in METADATA_ATTRIBUTES and isinstance(_strip(node.value), cst.Name))

    def visit_Call(self, node: cst.Call) -> bool:
        qname = self.imports.qualify(node.func)
        if qname in TYPE_TESTS:
            return False
        return not (qname is not None and is_metadata_function(qname) and _plain_names(node))

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        return not _reads_no_value(node)


def _reads_no_value(node: cst.Comparison) -> bool:
    """A comparison whose result says nothing of its operands' values: a string key looked up
    (``_key_lookup``), or identity only (`x is None`)."""
    return _key_lookup(node) or all(type(t.operator) in _IDENTITY for t in node.comparisons)


def _key_lookup(node: cst.Comparison) -> bool:
    """``"b" in params``: a string key looked up in a container reads its keys only, which a dict
    of Tracers answers under jit as well as a tuple of settings does."""
    return (
        isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString))
        and len(node.comparisons) == 1
        and isinstance(node.comparisons[0].operator, (cst.In, cst.NotIn))
    )


def _in_every(found: list[list[tuple[Evidence, str]]], name: str) -> list[tuple[Evidence, str]]:
    """The evidence of a helper with several defs, one per branch: a need for a concrete value
    proves it static only when every def has one; in some alone, it is a doubt."""
    if all(any(e.kind is ArgKind.STATIC for e, _ in evidence) for evidence in found):
        return [item for evidence in found for item in evidence]
    note = f" (not in every one of the {len(found)} definitions of `{name}`)"
    return [
        (Evidence(ArgKind.UNKNOWN, e.text + note, e.line), DOUBT) if e.kind is ArgKind.STATIC else (e, weight)
        for evidence in found
        for e, weight in evidence
    ]


def _bound_parameter(func: cst.FunctionDef, position: int, keyword: str | None) -> str | None:
    """The parameter of ``func`` that ``partial(func, ...)`` binds at its ``position`` or ``keyword``."""
    if keyword is not None:
        named = {*positional_params(func), *(p.name.value for p in func.params.kwonly_params)}
        return keyword if keyword in named else None
    params = positional_params(func)
    return params[position - 1] if 0 < position <= len(params) else None


def _code(expr: cst.BaseExpression, limit: int = 60) -> str:
    """An expression's code on one line, cut short when long."""
    text = walk.source_text(expr)  # differs from the generated code in whitespace only
    code = " ".join((cst.Module([]).code_for_node(expr) if text is None else text).split())
    return code if len(code) <= limit else code[: limit - 3] + "..."


def _place(position: int, keyword: str | None) -> str:
    return f"`{keyword}=`" if keyword else "an argument" if position < 0 else f"argument {position + 1}"


def _plain_names(call: cst.Call) -> bool:
    return bool(call.args) and all(
        arg.keyword is None and not arg.star and isinstance(arg.value, cst.Name) for arg in call.args
    )


def _all_params(params: cst.Parameters) -> list[cst.Param]:
    star = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
    return [*params.posonly_params, *params.params, *params.kwonly_params, *star]


def _is_string_like(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.SimpleString, cst.FormattedString, cst.ConcatenatedString)):
        return True
    if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
        return bool(expr.elements) and all(_is_string_like(e.value) for e in expr.elements)
    return False


def _is_int_tuple(expr: cst.BaseExpression) -> bool:
    """A tuple or list of int literals, ``(1, 16)``: a shape, which the guide names a static setting."""
    return (
        isinstance(expr, (cst.Tuple, cst.List))
        and bool(expr.elements)
        and all(isinstance(e.value, cst.Integer) for e in expr.elements)
    )


def _annotation_names(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The names inside an annotation, outermost first: ``Optional[X]`` gives Optional, X."""
    if isinstance(expr, cst.Subscript):
        yield expr.value
        for element in expr.slice:
            if isinstance(element.slice, cst.Index):
                yield from _annotation_names(element.slice.value)
    elif isinstance(expr, cst.BinaryOperation):  # X | None
        yield from _annotation_names(expr.left)
        yield from _annotation_names(expr.right)
    else:
        yield expr


def _array_annotation(part: cst.BaseExpression, ctx: Context) -> bool:
    last = (dotted(part) or "").rsplit(".", 1)[-1]
    return last in ARRAY_ANNOTATION_NAMES or (ctx.imports.qualify(part) or "") in ARRAY_ANNOTATIONS


def annotation_evidence(func: cst.FunctionDef, name: str, ctx: Context, where: str) -> list[tuple[Evidence, str]]:
    """Evidence from the annotation and default of the parameter ``name``."""
    param = next((p for p in _all_params(func.params) if p.name.value == name), None)
    if param is None:
        return []
    found: list[tuple[Evidence, str]] = []
    line = ctx.line_of(param)
    if (static_class := _static_class(param, ctx)) is not None:
        annotation = param.annotation.annotation if param.annotation else None
        text = cst.Module([]).code_for_node(annotation) if annotation else ""
        note = f"{ctx.static_classes[static_class]}, which jit passes on untraced"
        found.append((Evidence(ArgKind.STATIC, f"annotated `{text}` in {where}: {note}", line), STRONG))
    elif param.annotation is not None:
        annotation = param.annotation.annotation
        text = cst.Module([]).code_for_node(annotation)
        parts = list(_annotation_names(annotation))
        for at, part in enumerate(parts):
            qname = ctx.imports.qualify(part) or ""
            last = (dotted(part) or "").rsplit(".", 1)[-1]
            if last in CONTAINER_ANNOTATION_NAMES and any(_array_annotation(p, ctx) for p in parts[at + 1 :]):
                continue  # `Sequence[jax.Array]`, `tuple[jax.Array, int]`: the arrays inside decide
            if qname in HOST_ARRAY_ANNOTATIONS:
                note = "a host NumPy array, which may be concrete data such as indices"
                found.append((Evidence(ArgKind.UNKNOWN, f"annotated `{text}` in {where}: {note}", line), SCALAR))
                break
            if _array_annotation(part, ctx):
                found.append((Evidence(ArgKind.ARRAY, f"annotated `{text}` in {where}", line), STRONG))
                break
            if last in SCALAR_ANNOTATION_NAMES and all(
                (dotted(p) or "") in (*SCALAR_ANNOTATION_NAMES, "None", "Optional", "typing.Optional")
                for p in _annotation_names(annotation)
            ):
                note = "a Python number, which may be a static setting"
                found.append((Evidence(ArgKind.UNKNOWN, f"annotated `{text}` in {where}: {note}", line), SCALAR))
                break
            if last in STATIC_ANNOTATION_NAMES or (last in ("tuple", "Tuple") and "int" in text):
                found.append((Evidence(ArgKind.STATIC, f"annotated `{text}` in {where}", line), STRONG))
                break
    default = param.default
    if (
        isinstance(default, (cst.SimpleString, cst.ConcatenatedString, cst.Lambda))
        or (isinstance(default, cst.Name) and default.value in ("True", "False"))
        or (default is not None and _is_int_tuple(default))
    ):
        text = cst.Module([]).code_for_node(default)
        found.append((Evidence(ArgKind.STATIC, f"defaults to `{text}` in {where}", line), STRONG))
    return found


def _static_class(param: cst.Param, ctx: Context) -> str | None:
    """The class of the module registered as a pytree with no leaves that ``param`` is annotated
    with, alone or with None (`Config`, `Optional[Config]`, `Config | None`): None has no leaves either."""
    if param.annotation is None:
        return None
    alternatives = list(_alternatives(param.annotation.annotation))
    classes = [a.value for a in alternatives if isinstance(a, cst.Name) and a.value in ctx.static_classes]
    others = [a for a in alternatives if not (isinstance(a, cst.Name) and a.value in ctx.static_classes)]
    if classes and all(isinstance(a, cst.Name) and a.value == "None" for a in others):
        return classes[0]
    return None


def _annotated_leafless(func: cst.FunctionDef, name: str, ctx: Context) -> bool:
    return any(_static_class(p, ctx) is not None for p in _all_params(func.params) if p.name.value == name)


def _alternatives(annotation: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    """The types a union annotation allows (`Optional[A]`: A and None; `A | B`, `Union[A, B]`: A and B)."""
    if isinstance(annotation, cst.BinaryOperation) and isinstance(annotation.operator, cst.BitOr):
        yield from _alternatives(annotation.left)
        yield from _alternatives(annotation.right)
        return
    kind = (dotted(annotation.value) or "").rsplit(".", 1)[-1] if isinstance(annotation, cst.Subscript) else ""
    if isinstance(annotation, cst.Subscript) and kind in ("Optional", "Union"):
        items = [e.slice.value for e in annotation.slice if isinstance(e.slice, cst.Index)]
        if len(items) != len(annotation.slice) or (kind == "Optional" and len(items) != 1):
            yield annotation  # not a union this reads
            return
        for item in items:
            yield from _alternatives(item)
        if kind == "Optional":
            yield cst.Name("None")
        return
    yield annotation


def call_site_evidence(
    value: cst.BaseExpression,
    ctx: Context,
    callers: tuple[cst.FunctionDef, ...],
    line: int | None,
    passed: frozenset[str] = frozenset(),
    wrapped: Wrapped | None = None,
    lambda_params: frozenset[str] = frozenset(),
) -> tuple[Evidence, str] | None:
    """What the value passed at one call site of the primal says about the argument (``passed``:
    the functions the module hands to another call, `jax.jit(run)`, whose parameters may be Tracers;
    ``wrapped``: those a `jax.jit(run, ...)` call wraps; ``lambda_params``: the names lambdas
    around the call bind, which are none of the callers' parameters or locals)."""
    text = cst.Module([]).code_for_node(value)
    at = f"at a call site (`{text}`)"
    if isinstance(value, cst.Lambda) or (isinstance(value, cst.Name) and ctx.definitions(value.value)):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if _is_string_like(value) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
        return Evidence(ArgKind.STATIC, f"a constant is passed {at}", line), CALL_SITE
    if _is_int_tuple(value):
        return Evidence(ArgKind.STATIC, f"a shape is passed {at}", line), CALL_SITE
    qname = ctx.imports.qualify(value.func if isinstance(value, cst.Call) else value) or ""
    if isinstance(value, cst.Call) and qname.startswith(ARRAY_MODULES):
        return Evidence(ArgKind.ARRAY, f"an array is passed {at}", line), CALL_SITE
    if not isinstance(value, cst.Call) and qname.startswith(("jax.", "numpy.")):
        return Evidence(ArgKind.STATIC, f"a function is passed {at}", line), CALL_SITE
    if (traced := _traced_parameter(value, ctx, callers, wrapped or {}, lambda_params)) is not None:
        param, jitted, through = traced
        how = f", through `{through}`" if through else ""
        text = f"a traced value (from the parameter `{param}` of the jitted `{jitted}`{how}) is passed {at}"
        return Evidence(ArgKind.ARRAY, text, line), CALL_SITE
    if isinstance(value, cst.Name) and value.value not in lambda_params:
        for caller in reversed(callers):  # the def that binds the name: the call's, or one around it
            params = (*positional_params(caller), *(p.name.value for p in caller.params.kwonly_params))
            if value.value in params:
                if _rebound(caller, value.value, ctx):
                    break
                if value.value in jit_static_names(caller, ctx.imports):
                    return Evidence(
                        ArgKind.STATIC, f"a jit-static parameter of `{caller.name.value}` is passed {at}", line
                    ), CALL_SITE
                if (
                    ctx.helpers.get(caller.name.value) is caller
                    and not caller.decorators
                    and caller.name.value not in passed
                ):
                    return _passed_on(caller, value.value, ctx, at)
                break
            if value.value in _locals(caller, ctx).bindings:
                break
    return None


def _traced_parameter(
    value: cst.BaseExpression,
    ctx: Context,
    callers: tuple[cst.FunctionDef, ...],
    wrapped: Wrapped,
    lambda_params: frozenset[str] = frozenset(),
    through: str = "",
    depth: int = 0,
) -> tuple[str, str, str] | None:
    """A parameter that the ``jax.jit`` of its def traces, passed as it came or in arithmetic
    (`w`, `w * 2.0`, `-w`; not `w.shape[0]`), itself, through a local of the calling def bound
    once to such a value (`s = w * 2.0`) or to an item of one (`for w in ws`), or through a module
    helper returning such a value of its own parameter (`doubled(w)`): the parameter, the def and
    the first such local or helper call."""
    for leaf in _arithmetic_leaves(value):
        if isinstance(leaf, cst.Call) and depth < 3:
            for passed in _helper_passes(leaf, ctx):
                shown = through or f"{_code(leaf.func)}(...)"
                found = _traced_parameter(passed, ctx, callers, wrapped, lambda_params, shown, depth + 1)
                if found is not None:
                    return found
        if not isinstance(leaf, cst.Name) or leaf.value in lambda_params:
            continue
        caller = _binder(leaf.value, callers, ctx)
        if (
            caller is not None
            and _traces(caller, leaf.value, ctx, wrapped)
            and not _rebound(caller, leaf.value, ctx)
            and not _annotated_leafless(caller, leaf.value, ctx)
        ):
            return leaf.value, caller.name.value, through
        bound = _local_value(leaf.value, callers[-1], ctx) if callers and caller is None and depth < 3 else None
        if bound is not None:
            found = _traced_parameter(bound, ctx, callers, wrapped, frozenset(), through or leaf.value, depth + 1)
            if found is not None:
                return found
    return None


def _traces(func: cst.FunctionDef, param: str, ctx: Context, wrapped: Wrapped) -> bool:
    """Whether a ``jax.jit`` around ``func`` (its decorator, or a `jax.jit(func)` call of a module
    def) traces its parameter ``param``."""
    if _jitted(func, ctx.imports) and param not in jit_static_names(func, ctx.imports):
        return True
    name = func.name.value
    return ctx.helpers.get(name) is func and any(param not in static for static in wrapped.get(name, ()))


def _local_value(name: str, func: cst.FunctionDef, ctx: Context) -> cst.BaseExpression | None:
    """The value a local of ``func`` that one plain assignment binds is bound to (`s = w * 2.0`),
    or the sequence a local that one loop binds takes its items from (`for w in ws`)."""
    bound = _locals(func, ctx).bindings.get(name, [])
    if len(bound) != 1 or bound[0].values is None:
        return None
    node = bound[0].node
    if isinstance(node, (cst.For, cst.CompFor)):
        sequence = _loop_sequence(name, node.target, node.iter)
        return None if sequence is None or _keyed(sequence, func) or _looks_up(func, sequence, name) else sequence
    if not isinstance(node, (cst.Assign, cst.AnnAssign)):
        return None
    (value,) = bound[0].values
    return value


def _loop_sequence(name: str, target: cst.BaseExpression, iterable: cst.BaseExpression) -> cst.BaseExpression | None:
    """The sequence whose items the loop target ``name`` takes: `ws` in `for w in ws`,
    `for i, w in enumerate(ws)` and `for w, b in zip(ws, bs)` (not `i`: a Python int)."""
    if isinstance(target, cst.Name):
        return iterable if target.value == name else None
    if not isinstance(target, (cst.Tuple, cst.List)) or not isinstance(iterable, cst.Call):
        return None
    names = [e.value.value if isinstance(e.value, cst.Name) else None for e in target.elements]
    sequences = [a.value for a in iterable.args if not a.keyword and not a.star]
    if len(sequences) != len(iterable.args) or name not in names or not isinstance(iterable.func, cst.Name):
        return None
    if iterable.func.value == "enumerate" and len(names) == 2 and len(sequences) == 1:
        return sequences[0] if names[1] == name else None
    if iterable.func.value == "zip" and len(names) == len(sequences):
        return sequences[names.index(name)]
    return None


def _keyed(sequence: cst.BaseExpression, func: cst.FunctionDef) -> bool:
    """Whether ``sequence`` is a parameter of ``func`` annotated as a mapping: a loop over it
    takes its keys, Python values."""
    param = next(
        (p for p in _all_params(func.params) if isinstance(sequence, cst.Name) and p.name.value == sequence.value), None
    )
    annotation = param.annotation.annotation if param is not None and param.annotation is not None else None
    if annotation is None:
        return False
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    return (dotted(head) or "").rsplit(".", 1)[-1] in ("dict", "Dict", "Mapping", "MutableMapping", "FrozenDict")


class _Lookups(cst.CSTVisitor):
    """The key names subscripting one name: `k` in `params[k]`."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.keys: set[str] = set()

    def visit_Subscript(self, node: cst.Subscript) -> None:
        if isinstance(node.value, cst.Name) and node.value.value == self.name and len(node.slice) == 1:
            key = node.slice[0].slice
            if isinstance(key, cst.Index) and isinstance(key.value, cst.Name):
                self.keys.add(key.value.value)


def _looks_up(func: cst.FunctionDef, sequence: cst.BaseExpression, name: str) -> bool:
    """Whether ``func`` subscripts the looped-over ``sequence`` with the loop target ``name``
    (`for k in params: ... params[k]`): a mapping's keys, Python values."""
    if not isinstance(sequence, cst.Name):
        return False
    lookups = _Lookups(sequence.value)
    for stmt in _own_body(func):
        walk.visit(stmt, lookups)
    return name in lookups.keys


def _helper_passes(call: cst.Call, ctx: Context) -> Iterator[cst.BaseExpression]:
    """The values ``call`` passes to the parameters that an undecorated module helper with one
    return, no other binding of them, returns as they came or in arithmetic (`return w * 2.0`)."""
    helper = ctx.helpers.get(call.func.value) if isinstance(call.func, cst.Name) else None
    if helper is None or helper.decorators or any(arg.star for arg in call.args):
        return
    returns = _ReturnCollector()
    for stmt in _own_body(helper):
        walk.visit(stmt, returns)
    if len(returns.returns) != 1 or returns.returns[0].value is None:
        return
    params = positional_params(helper)
    for leaf in _arithmetic_leaves(returns.returns[0].value):
        if isinstance(leaf, cst.Name) and leaf.value in params and not _rebound(helper, leaf.value, ctx):
            passed = _call_value(call, params.index(leaf.value), leaf.value)
            if passed is not None:
                yield passed


def _arithmetic_leaves(expr: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(expr, cst.BinaryOperation):
        yield from _arithmetic_leaves(expr.left)
        yield from _arithmetic_leaves(expr.right)
    elif isinstance(expr, cst.UnaryOperation) and not isinstance(expr.operator, cst.Not):
        yield from _arithmetic_leaves(expr.expression)
    else:
        yield expr


def _binder(name: str, callers: tuple[cst.FunctionDef, ...], ctx: Context) -> cst.FunctionDef | None:
    """The def among ``callers`` (innermost first) whose parameter ``name`` is, if a local binds it
    nowhere nearer."""
    for caller in reversed(callers):
        if name in (*positional_params(caller), *(p.name.value for p in caller.params.kwonly_params)):
            return caller
        if name in _locals(caller, ctx).bindings:
            return None
    return None


def _jitted(func: cst.FunctionDef, imports: ImportTable) -> bool:
    """Whether a ``jax.jit`` decorator traces ``func``, with static arguments (if any) that
    ``jit_static_names`` can read: literal ``static_argnums``/``static_argnames``."""
    for decorator in func.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call):
            if imports.is_one_of(call, JIT):
                return True
            continue
        args = list(call.args)
        if imports.is_one_of(call.func, PARTIAL) and args and imports.is_one_of(args[0].value, JIT):
            args = args[1:]
        elif not imports.is_one_of(call.func, JIT):
            continue
        return all(not arg.star and _literal_argspec(arg) for arg in args)
    return False


def _literal_argspec(arg: cst.Arg) -> bool:
    if arg.keyword is None or arg.keyword.value not in ("static_argnums", "static_argnames"):
        return arg.keyword is not None
    value = arg.value
    items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
    return all(isinstance(item, (cst.Integer, cst.SimpleString)) for item in items)


def _passed_on(caller: cst.FunctionDef, param: str, ctx: Context, at: str) -> tuple[Evidence, str] | None:
    """A parameter of an undecorated module-level caller (no method, no def inside another, not
    handed to a call such as `jax.jit(run)`) passed on as it came: what its own annotation or
    default says static (`use_tf32: bool = True`) holds for the argument too."""
    where = f"the caller `{caller.name.value}`"
    for evidence, _ in annotation_evidence(caller, param, ctx, where):
        if evidence.kind is ArgKind.STATIC:
            return replace(evidence, text=f"{evidence.text}, passed on {at}"), CALL_SITE
    return None


def _rebound(func: cst.FunctionDef, param: str, ctx: Context) -> bool:
    """Whether the body of ``func`` assigns its parameter ``param`` (`scale = scale / x.std()`)."""
    return any(not isinstance(b.node, cst.Param) for b in _locals(func, ctx).bindings.get(param, ()))


class CallSites(cst.CSTVisitor):
    """Every call of a dotted name in the module, with that name and the functions the call is in."""

    def __init__(self) -> None:
        self.stack: list[cst.FunctionDef] = []
        self.calls: list[tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]] = []
        self.passed: set[str] = set()
        self.lambdas: list[frozenset[str]] = []
        self.lambda_params: dict[int, frozenset[str]] = {}

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.stack.append(node)

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.stack.pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self.lambdas.append(frozenset(p.name.value for p in _all_params(node.params) if not _captures_itself(p)))

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self.lambdas.pop()

    def visit_Call(self, node: cst.Call) -> None:
        name = dotted(node.func)
        if name is not None:
            self.calls.append((name, node, tuple(self.stack)))
            if self.lambdas:
                self.lambda_params[id(node)] = frozenset().union(*self.lambdas)
        self.passed.update(arg.value.value for arg in node.args if isinstance(arg.value, cst.Name))


def _calls_of(site: VjpSite, module: cst.Module, ctx: Context) -> list[tuple[cst.Call, tuple[cst.FunctionDef, ...]]]:
    """The calls of the site's custom_vjp, in module order (one walk per module, not per site)."""
    calls = ctx.calls.get(id(module))
    if calls is None:
        finder = CallSites()
        walk.visit(module, finder)
        calls = ctx.calls[id(module)] = finder.calls
        ctx.passed[id(module)] = frozenset(finder.passed)
        ctx.lambda_params.update(finder.lambda_params)
        ctx.wrapped[id(module)] = _jit_wrapped(calls, ctx)
    names = {site.name, site.qualname}
    return [(call, caller) for name, call, caller in calls if name in names]


def _jit_wrapped(calls: list[tuple[str, cst.Call, tuple[cst.FunctionDef, ...]]], ctx: Context) -> Wrapped:
    """The module's defs that a call ``jax.jit(run, ...)`` or ``jax.jit(partial(run, ...), ...)``
    wraps (where no def around it binds ``run`` otherwise), each with the parameters every such
    call with literal static arguments marks static or binds with its partial."""
    wrapped: Wrapped = {}
    for _, call, callers in calls:
        if not call.args or call.args[0].keyword or call.args[0].star or not ctx.imports.is_one_of(call.func, JIT):
            continue
        target: cst.BaseExpression | None = call.args[0].value
        partial = target if isinstance(target, cst.Call) and ctx.imports.is_one_of(target.func, PARTIAL) else None
        if partial is not None:
            target = _first_positional(partial)
        func = ctx.helpers.get(target.value) if isinstance(target, cst.Name) else None
        if func is None or any(func.name.value in _locals(caller, ctx).bindings for caller in callers):
            continue
        bound = _partial_bound(partial, func) if partial is not None else (0, frozenset[str]())
        if bound is None:
            continue
        count, names = bound
        if names & set(positional_params(func)[count:]) and any(
            a.keyword and a.keyword.value == "static_argnums" for a in call.args
        ):
            continue  # a positional parameter bound by keyword makes those after it keyword-only
        static = jit_call_static_names(call, func, count)
        if static is not None:
            wrapped.setdefault(func.name.value, []).append(static | names | set(positional_params(func)[:count]))
    return wrapped


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    first = call.args[0] if call.args else None
    return first.value if first is not None and first.keyword is None and not first.star else None


def _partial_bound(partial: cst.Call, func: cst.FunctionDef) -> tuple[int, frozenset[str]] | None:
    """How many leading positions of ``func`` the call ``partial(func, ...)`` fills, and the
    parameters it binds by keyword (jit passes both on as the Python values they are); None
    when it passes ``*``/``**``."""
    rest = partial.args[1:]
    if any(arg.star for arg in rest):
        return None
    names = frozenset(arg.keyword.value for arg in rest if arg.keyword is not None)
    return sum(arg.keyword is None for arg in rest), names


def _captures_itself(param: cst.Param) -> bool:
    """`w=w`: a lambda's parameter whose default is the value of that name around it."""
    return isinstance(param.default, cst.Name) and param.default.value == param.name.value


def _call_value(call: cst.Call, index: int, name: str) -> cst.BaseExpression | None:
    position = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
        elif arg.star:
            return None
        else:
            if position == index:
                return arg.value
            position += 1
    return None


def classify_site(site: VjpSite, module: cst.Module, ctx: Context) -> list[ArgInfo]:
    """One ArgInfo per nondiff position of the site that names a positional parameter or an item of its ``*args``."""
    calls = _calls_of(site, module, ctx)
    passed = ctx.passed.get(id(module), frozenset())  # filled by _calls_of
    wrapped = ctx.wrapped.get(id(module), {})
    infos: list[ArgInfo] = []
    for order, index in enumerate(site.nondiff.positions):
        name = site.params[index] if 0 <= index < len(site.params) else varargs_item(site, index)
        if name is None:
            continue
        evidence: list[tuple[Evidence, str]] = []
        if index in site.jit_static and site.primal is not None:
            evidence.append((Evidence(ArgKind.STATIC, "static in a stacked jax.jit", ctx.line_of(site.primal)), STRONG))
        primal_jit = rule_jit(site.primal, ctx.imports) if site.primal_expr is None and site.primal else None
        roles: list[tuple[str, cst.FunctionDef | None, int, JitSpec | None]] = [
            ("the primal", site.primal, index, primal_jit)
        ]
        if site.fwd is not None and site.fwd.node is not None:
            roles.append(("fwd", site.fwd.node, index + site.fwd.bound_args, site.fwd.jit))
        if site.bwd is not None and site.bwd.node is not None:
            roles.append(("bwd", site.bwd.node, order + site.bwd.bound_args, site.bwd.jit))
        for role, func, position, jit in roles:
            if func is None or (param := _param_at(func, position)) is None:
                continue
            params = positional_params(func)
            where = f"{role} `{func.name.value}`"
            if jit is not None and _jit_marks(jit, position, params):
                if func is not site.primal:  # the primal's is "static in a stacked jax.jit" above
                    text = f"static in the jax.jit of {where}, which needs it hashable (an array is not)"
                    evidence.append((Evidence(ArgKind.STATIC, text, ctx.line_of(jit.decorator)), STRONG))
            elif jit is not None and (jit.static_argnums is None or jit.static_argnames is None):
                text = f"the jax.jit of {where} names its static arguments by other than literals: it may be one"
                evidence.append((Evidence(ArgKind.UNKNOWN, text, ctx.line_of(jit.decorator)), DOUBT))
            elif jit is not None:
                # A string, callable or object there is no valid jit argument, and a concrete use
                # inside fails on the Tracer: it is a JAX value, used as one (None and a tuple of
                # ints pass too: weak).
                text = f"traced by the jax.jit of {where}, which does not mark it static"
                evidence.append((Evidence(ArgKind.ARRAY, text, ctx.line_of(jit.decorator)), WEAK))
            evidence.extend(Uses.of(func, param, ctx, where).evidence)
            evidence.extend(annotation_evidence(func, param.partition("[")[0], ctx, where))
        for call, callers in calls:
            value = _call_value(call, index, name)
            found = (
                call_site_evidence(
                    value,
                    ctx,
                    callers,
                    ctx.line_of(call),
                    passed,
                    wrapped,
                    ctx.lambda_params.get(id(call), frozenset()),
                )
                if value is not None
                else None
            )
            if found is not None:
                evidence.append(found)
        infos.append(_unseen_primal(site, module, ctx, _decide(index, name, evidence)))
    return infos


def _param_at(func: cst.FunctionDef, position: int) -> str | None:
    """How ``func`` names the argument at ``position``: its positional parameter there, or the item
    of its ``*args`` (``args[0]``); None when it takes no argument there."""
    params = positional_params(func)
    if position < len(params):
        return params[position]
    star = func.params.star_arg
    return f"{star.name.value}[{position - len(params)}]" if isinstance(star, cst.Param) else None


def _jit_marks(jit: JitSpec, position: int, params: tuple[str, ...]) -> bool:
    """Whether a function's jax.jit marks its parameter at ``position`` static (a negative
    ``static_argnums`` counts from the end; an item of ``*args`` is marked by its position only)."""
    numbers = jit.static_argnums or ()
    if position >= len(params):
        return position in numbers
    return position in numbers or position - len(params) in numbers or params[position] in (jit.static_argnames or ())


def _unseen_primal(site: VjpSite, module: cst.Module, ctx: Context, info: ArgInfo) -> ArgInfo:
    """A primal whose body is not seen may need the argument concretely: never a safe fix."""
    if site.primal is not None or site.primal_expr is None or info.kind is ArgKind.STATIC:
        return info
    text = (
        f"the primal `{module.code_for_node(site.primal_expr)}` is not a function defined in this module, "
        "so its uses were not seen"
    )
    unseen = Evidence(ArgKind.UNKNOWN, text, ctx.line_of(site.primal_expr))
    return replace(info, evidence=(*info.evidence, unseen), strong=False)


def _decide(index: int, name: str, evidence: list[tuple[Evidence, str]]) -> ArgInfo:
    static = [(e, weight) for e, weight in evidence if e.kind is ArgKind.STATIC and weight != GUARDED]
    array = [(e, weight) for e, weight in evidence if e.kind is ArgKind.ARRAY]
    if static:
        if all(weight == CALL_SITE for _, weight in static) and any(weight == CALL_SITE for _, weight in array):
            # One call passes a static value and another an array: the array's call breaks, and
            # moving the argument may break the other (a string or function is no JAX value).
            found = _once([*(e for e, _ in static), *(e for e, _ in array)])
            return ArgInfo(index, name, ArgKind.ARRAY, found, False, False)
        return ArgInfo(index, name, ArgKind.STATIC, _once(e for e, _ in static), False)
    guarded = [e for e, weight in evidence if weight == GUARDED]
    if guarded:  # static on one branch: array data elsewhere is then never a safe fix
        if any(weight not in (WEAK, BRANCH_ARRAY) for _, weight in array):  # a function is no residual: no fix
            return ArgInfo(index, name, ArgKind.ARRAY, _once([*guarded, *(e for e, _ in array)]), False, False)
        return ArgInfo(index, name, ArgKind.STATIC, _once(guarded), False)
    doubt = [e for e, weight in evidence if weight == DOUBT]
    if doubt:  # a value from it may be needed concretely: never a safe fix
        return ArgInfo(index, name, ArgKind.UNKNOWN, _once(doubt + [e for e, _ in array]), False)
    scalar = [e for e, weight in evidence if weight in (SCALAR, OBJECT)]
    # A Python-number or host NumPy annotation, or a method arrays lack, means numeric use (or
    # `.dot`) proves nothing; an array passed at a call site or an array annotation still does,
    # unless another function annotates the argument as a Python number or NumPy array (the two
    # annotations disagree).
    numbers = any(weight == SCALAR for _, weight in evidence)
    decisive = [e for e, weight in array if weight == CALL_SITE or ("annotated" in e.text and not numbers)]
    if array and (decisive or not scalar):
        strong = any(weight != WEAK for _, weight in array)
        return ArgInfo(index, name, ArgKind.ARRAY, _once(e for e, _ in array), strong)
    unknown = [e for e, _ in evidence if e.kind is ArgKind.UNKNOWN]
    return ArgInfo(index, name, ArgKind.UNKNOWN, _once(unknown + [e for e, _ in array]), False)


def _once(evidence: Iterable[Evidence]) -> tuple[Evidence, ...]:
    """Each reason once (two uses on one line read the same)."""
    return tuple(dict.fromkeys(evidence))


def module_helpers(module: cst.Module) -> dict[str, cst.FunctionDef]:
    """The functions the module defines in its own scope, by name: each def at its top level (the
    last of a name), and a def inside a module-level ``if``, ``try`` or ``with`` (``if HAS_JAX:``)
    whose name nothing else in the module's scope binds."""
    return {name: defs[0] for name, defs in _module_defs(module).items() if len(defs) == 1}


def module_variants(module: cst.Module) -> dict[str, tuple[cst.FunctionDef, ...]]:
    """The names bound to more than one def in the module's scope, one of them at least inside a
    block (``if HAS_JAX: def f ... else: def f ...``): which one a call reaches is not known."""
    return {name: defs for name, defs in _module_defs(module).items() if len(defs) > 1}


def _module_defs(module: cst.Module) -> dict[str, tuple[cst.FunctionDef, ...]]:
    top: dict[str, cst.FunctionDef] = {}
    nested: dict[str, list[cst.FunctionDef]] = {}
    others: set[str] = set()
    for stmt, in_block in _scope_statements(module.body):
        if isinstance(stmt, cst.FunctionDef):
            if in_block:
                nested.setdefault(stmt.name.value, []).append(stmt)
            else:
                top[stmt.name.value] = stmt
        else:
            others.update(_names_bound_by(stmt))
    found: dict[str, tuple[cst.FunctionDef, ...]] = {name: (func,) for name, func in top.items()}
    for name, defs in nested.items():
        if name in others:  # `try: from fast import f` / `except ImportError: def f ...`
            found.pop(name, None)
        else:
            found[name] = (*((top[name],) if name in top else ()), *defs)
    return found


_BLOCKS = node_types(cst.If, cst.Try, cst.TryStar, cst.With, cst.For, cst.While)


def _scope_statements(
    statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement], in_block: bool = False
) -> Iterator[tuple[cst.BaseStatement | cst.BaseSmallStatement, bool]]:
    """The statements run in the module's own scope (not in a def's or a class's), each with
    whether it is inside a block."""
    for stmt in statements:
        yield stmt, in_block
        if type(stmt) in _BLOCKS:
            yield from _scope_statements(list(_block_statements(stmt)), True)


def _block_statements(node: cst.CSTNode) -> Iterator[cst.BaseStatement | cst.BaseSmallStatement]:
    for name in ("body", "handlers", "orelse", "finalbody"):
        value = getattr(node, name, None)
        for part in value if isinstance(value, (list, tuple)) else (value,):
            if isinstance(part, cst.BaseSuite):
                yield from part.body
            elif isinstance(part, cst.If):  # elif
                yield part
            elif isinstance(part, (cst.Else, cst.ExceptHandler, cst.ExceptStarHandler, cst.Finally)):
                yield from _block_statements(part)


_SMALL_STATEMENTS = node_types(cst.BaseSmallStatement)


def _names_bound_by(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> Iterator[str]:
    """The names a statement other than a def binds in the scope it runs in (not inside it)."""
    if type(stmt) is cst.SimpleStatementLine:  # `type() is`: see imports.node_types
        for small in stmt.body:
            yield from _small_bound_names(small)
    elif type(stmt) is cst.ClassDef:
        yield stmt.name.value
    elif type(stmt) is cst.For:
        yield from target_names(stmt.target)
    elif type(stmt) is cst.With:
        for item in stmt.items:
            if item.asname is not None:
                yield from target_names(item.asname.name)
    elif type(stmt) in _SMALL_STATEMENTS and isinstance(stmt, cst.BaseSmallStatement):
        yield from _small_bound_names(stmt)


def module_enums(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """The classes the module defines at its top level that derive (through each other too) from
    ``enum.Enum``, ``StrEnum`` or ``Flag``: not ``IntEnum``/``IntFlag``, whose members are ints that
    a comparison with an array would broadcast against."""
    classes = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)}
    enums: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, node in classes.items():
            if name not in enums and any(
                imports.qualify(base.value) in ENUM_CLASSES
                or (isinstance(base.value, cst.Name) and base.value.value in enums)
                for base in node.bases
            ):
                enums.add(name)
                changed = True
    return _bound_once(module, enums)


def module_static_classes(module: cst.Module, imports: ImportTable) -> dict[str, str]:
    """The classes the module defines at its top level and registers as pytrees with no leaves,
    each with how: ``@jax.tree_util.register_static``, ``register_dataclass`` with no data
    fields, ``register_pytree_node_class`` with a ``tree_flatten`` returning no children, a flax
    struct class whose every field is ``pytree_node=False``. jit passes such an object on as it is."""
    classes = {stmt.name.value: stmt for stmt in module.body if isinstance(stmt, cst.ClassDef)}
    found: dict[str, str] = {}
    for name, cls in classes.items():
        how = _flax_leafless(cls, imports)
        for registrar, args in _decorator_registrations(cls, imports):
            how = how or _leafless_registration(registrar, args, cls, imports)
        if how:
            found[name] = how
    for name, registrar, args in _call_registrations(module, imports):
        how = _leafless_registration(registrar, args, classes[name], imports) if name in classes else None
        if how and name not in found:
            found[name] = how
    once = _bound_once(module, set(found))
    return {name: how for name, how in found.items() if name in once}


def _decorator_registrations(cls: cst.ClassDef, imports: ImportTable) -> Iterator[tuple[str, Sequence[cst.Arg]]]:
    """The class's decorators as (registrar, arguments past the class): `@register_static`,
    `@partial(register_dataclass, data_fields=[], meta_fields=[...])` (a positional argument
    bound by `partial` would be the class's own place: no registration read)."""
    for decorator in cls.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and imports.qualify(expr.func) in PARTIAL and expr.args:
            bound = expr.args[1:]
            yield ("" if any(_plain(arg) for arg in bound) else imports.qualify(expr.args[0].value) or ""), bound
        else:
            yield imports.qualify(expr) or "", ()


def _call_registrations(module: cst.Module, imports: ImportTable) -> Iterator[tuple[str, str, Sequence[cst.Arg]]]:
    """Module-level statements `register_dataclass(Config, data_fields=[], meta_fields=[...])`:
    the class's name, the registrar and the arguments past the class."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            call = small.value if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call) else None
            first = call.args[0] if call is not None and call.args else None
            if call is not None and first is not None and isinstance(first.value, cst.Name) and _plain(first):
                yield first.value.value, imports.qualify(call.func) or "", call.args[1:]


def _plain(arg: cst.Arg) -> bool:
    return arg.keyword is None and not arg.star


def _leafless_registration(
    registrar: str, args: Sequence[cst.Arg], cls: cst.ClassDef, imports: ImportTable
) -> str | None:
    """How ``registrar`` called with ``args`` (past the class) registers ``cls`` with no leaves, if it does."""
    if registrar in STATIC_PYTREE_DECORATORS and not args:
        return "a class registered with `jax.tree_util.register_static`"
    if registrar in DATACLASS_REGISTRARS:
        data, meta = _argument(args, 0, "data_fields"), _argument(args, 1, "meta_fields")
        if isinstance(data, (cst.List, cst.Tuple)) and not data.elements and meta is not None:
            return "a class registered with `jax.tree_util.register_dataclass` with no data fields"
        if not args and not cls.bases and _every_field(cls, imports, _static_dataclass_field):
            return "a class registered with `jax.tree_util.register_dataclass` whose every field is static"
    if registrar in PYTREE_NODE_CLASS_REGISTRARS and not args and _flattens_to_no_children(cls):
        registered = "a class registered with `jax.tree_util.register_pytree_node_class`"
        return f"{registered} whose `tree_flatten` returns no children"
    return None


def _argument(args: Sequence[cst.Arg], position: int, keyword: str) -> cst.BaseExpression | None:
    """The argument passed at ``position`` or as ``keyword``; None if absent or behind a star."""
    if any(arg.star for arg in args):
        return None
    for at, arg in enumerate(args):
        if (arg.keyword is None and at == position) or (arg.keyword is not None and arg.keyword.value == keyword):
            return arg.value
    return None


def _flattens_to_no_children(cls: cst.ClassDef) -> bool:
    """Whether the class's own ``tree_flatten`` returns `((), aux)` at every return."""
    flatten = [
        stmt for stmt in body_statements(cls) if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "tree_flatten"
    ]
    if len(flatten) != 1 or flatten[0].decorators:
        return False
    collector = _ReturnCollector()
    flatten[0].body.visit(collector)
    return bool(collector.returns) and all(_no_children(ret.value) for ret in collector.returns)


def _no_children(value: cst.BaseExpression | None) -> bool:
    """`((), aux)` or `[], aux`: a pair whose first item is an empty tuple or list literal."""
    if not isinstance(value, cst.Tuple) or len(value.elements) != 2:
        return False
    first = value.elements[0]
    return (
        isinstance(first, cst.Element) and isinstance(first.value, (cst.Tuple, cst.List)) and not first.value.elements
    )


class _ReturnCollector(cst.CSTVisitor):
    """The returns of one def, not of the defs, lambdas or classes inside it."""

    def __init__(self) -> None:
        self.returns: list[cst.Return] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.returns.append(node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False


def _flax_leafless(cls: cst.ClassDef, imports: ImportTable) -> str | None:
    """A flax struct class (`@struct.dataclass`, or a `struct.PyTreeNode` with no other base)
    whose every field is `struct.field(pytree_node=False)`: how it is declared, if it is one."""
    bases = [imports.qualify(base.value) for base in cls.bases]
    decorated = any(
        imports.qualify(d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator) in FLAX_DATACLASSES
        for d in cls.decorators
    )
    node = len(bases) == 1 and bases[0] in FLAX_PYTREE_NODES and not cls.keywords
    if not ((decorated and not bases) or node):
        return None
    if not _every_field(cls, imports, _static_flax_field):
        return None
    kind = "`flax.struct.PyTreeNode`" if node else "`flax.struct.dataclass`"
    return f"a {kind} class whose every field is `pytree_node=False`"


def _every_field(
    cls: cst.ClassDef, imports: ImportTable, static: Callable[[cst.BaseExpression | None, ImportTable], bool]
) -> bool:
    """Whether every field the class body declares (`x: int = ...`; not a `ClassVar`) has a
    value that ``static`` accepts."""
    for stmt in body_statements(cls):
        for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
            if isinstance(small, cst.AnnAssign) and not _class_var(small) and not static(small.value, imports):
                return False
    return True


def _class_var(declared: cst.AnnAssign) -> bool:
    annotation = declared.annotation.annotation
    head = annotation.value if isinstance(annotation, cst.Subscript) else annotation
    return (dotted(head) or "").rsplit(".", 1)[-1] == "ClassVar"


def _static_flax_field(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """`struct.field(pytree_node=False, ...)`."""
    if not isinstance(value, cst.Call) or imports.qualify(value.func) not in FLAX_FIELDS:
        return False
    flag = _argument(value.args, 0, "pytree_node")
    return isinstance(flag, cst.Name) and flag.value == "False"


def _static_dataclass_field(value: cst.BaseExpression | None, imports: ImportTable) -> bool:
    """`dataclasses.field(..., metadata={"static": True})` or `metadata=dict(static=True)`."""
    if not isinstance(value, cst.Call) or imports.qualify(value.func) not in DATACLASS_FIELDS:
        return False
    metadata = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "metadata"), None)
    if isinstance(metadata, cst.Call) and imports.qualify(metadata.func) == "builtins.dict":
        flag = next((a.value for a in metadata.args if a.keyword is not None and a.keyword.value == "static"), None)
    elif isinstance(metadata, cst.Dict):
        flag = next(
            (
                e.value
                for e in metadata.elements
                if isinstance(e, cst.DictElement)
                and isinstance(e.key, cst.SimpleString)
                and e.key.evaluated_value == "static"
            ),
            None,
        )
    else:
        flag = None
    return isinstance(flag, cst.Name) and flag.value == "True"


def module_primitives(module: cst.Module, imports: ImportTable) -> frozenset[str]:
    """Names the module binds once, at its top level, to a new ``Primitive(...)``; a name bound by
    any other assignment, import, def or class anywhere in the module is not one."""
    made: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if (
                    isinstance(small, cst.Assign)
                    and len(small.targets) == 1
                    and isinstance(small.targets[0].target, cst.Name)
                    and isinstance(small.value, cst.Call)
                    and imports.qualify(small.value.func) in PRIMITIVE_CLASSES
                ):
                    made.add(small.targets[0].target.value)
    return _bound_once(module, made)


def _bound_once(module: cst.Module, names: set[str]) -> frozenset[str]:
    """Those of ``names`` that the module binds exactly once, counting every binding anywhere."""
    if not names:
        return frozenset()
    counts: dict[str, int] = {}
    for name in _bound_names(module):
        counts[name] = counts.get(name, 0) + 1
    return frozenset(name for name in names if counts.get(name) == 1)


def _bound_names(module: cst.Module) -> Iterator[str]:
    for stmt in module.body:
        if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
            yield stmt.name.value
    for small in small_statements(module):
        yield from _small_bound_names(small)


def _small_bound_names(small: cst.BaseSmallStatement) -> Iterator[str]:
    if type(small) is cst.Assign:  # `type() is`: see imports.node_types
        for target in small.targets:
            yield from target_names(target.target)
    elif type(small) is cst.AnnAssign or type(small) is cst.AugAssign:
        yield from target_names(small.target)
    elif (type(small) is cst.Import or type(small) is cst.ImportFrom) and not isinstance(small.names, cst.ImportStar):
        for alias in small.names:
            bound = alias.asname.name if alias.asname is not None else alias.name
            text = dotted(bound)  # None for anything but a Name or an Attribute
            if text is not None:
                yield text.split(".")[0]


def _override_matches(entry: str, full_name: str, info: ArgInfo) -> bool:
    function, _, argument = entry.partition(":")
    named = full_name == function or full_name.endswith("." + function)
    return named and argument.strip() in (info.name, str(info.index))


def apply_overrides(infos: list[ArgInfo], site: VjpSite, path: str, settings: Settings) -> list[ArgInfo]:
    """The configuration's `static-args` / `array-args` win over the evidence in the code.

    An entry names ``module.function:argument``; any dotted suffix of the file's module path
    works (``fn:x``, ``mod.fn:x``, ``pkg.mod.Class.fn:0``), the path made absolute so that every
    spelling of the file matches alike.
    """
    if not settings.static_args and not settings.array_args:
        return infos
    where = os.path.abspath(path).replace("\\", "/")
    parts = [p for p in where.removesuffix(".py").removesuffix(".ipynb").split("/") if p]
    full_name = ".".join([*(parts[:-1] if parts[-1:] == ["__init__"] else parts), site.qualname])
    result = []
    for info in infos:
        if any(_override_matches(e, full_name, info) for e in settings.static_args):
            said = Evidence(ArgKind.STATIC, "listed in static-args in the configuration")
            info = ArgInfo(info.index, info.name, ArgKind.STATIC, (said,), False)
        elif any(_override_matches(e, full_name, info) for e in settings.array_args):
            said = Evidence(ArgKind.ARRAY, "listed in array-args in the configuration")
            info = ArgInfo(info.index, info.name, ArgKind.ARRAY, (said,), True)
        result.append(info)
    return result
