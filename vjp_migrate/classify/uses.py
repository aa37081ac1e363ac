"""Classify, step 7: ``Uses``, the evidence from what a function does with an argument (arithmetic,
array methods, calls, control flow, keys, type tests and the branches they pick)."""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.annotations import annotation_evidence
from vjp_migrate.classify.context import Context, Via, function_locals, own_body
from vjp_migrate.classify.expressions import (
    all_params,
    bound_parameter,
    call_value,
    code_text,
    is_rooted,
    is_string_like,
    key_lookup,
    named_in,
    place_of,
    plain_names,
    reads_no_value,
    roots_of,
    shadowing,
    strip_views,
    value_names,
)
from vjp_migrate.classify.weights import BRANCH_ARRAY, DOUBT, GUARDED, NEEDED, OBJECT, STRONG, WEAK
from vjp_migrate.derived import Binding, Derivation
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.sites import jit_static_names, positional_params
from vjp_migrate.vocabulary import (
    ARRAY_ATTRIBUTES,
    ARRAY_METHODS,
    ARRAY_MODULES,
    AXIS_METHODS,
    CALLABLE,
    CONTAINER_METHODS,
    DATA,
    FFI_CALLS,
    HOST_CALLBACKS,
    HOST_CONVERSIONS,
    JAX_TRANSFORMS,
    METADATA_ATTRIBUTES,
    PALLAS_CALL,
    PRIMITIVE_CLASSES,
    SHAPE_METHODS,
    SIZE_NAMES,
    SIZE_OR_DATA,
    STATIC,
    STATIC_BUILTINS,
    STATIC_CALLS,
    STATIC_KEYWORDS,
    STATIC_KEYWORDS_OF,
    STATIC_PLACES_OF,
    TYPE_TESTS,
    at_place,
    is_jax_primitive,
    is_metadata_function,
    is_size_function,
    library_use,
    takes_random_key,
)


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
        # early (`if not callable(m): return ...`, or `continue` or `break` in a loop) starts, that test and
        # how it exits; the rest of the block runs only for the type the test did not pick.
        self.exits: list[list[tuple[int, str, str]]] = [[]]
        self.elifs: set[int] = set()  # the ids of `elif` tests' ifs: their chain is judged at its head
        # Where the evidence of each if's test and of each if's and else's body starts, by id.
        self.tests: dict[int, int] = {}
        self.bodies: dict[int, int] = {}

    @classmethod
    def of(cls, func: cst.FunctionDef, name: str, ctx: Context, where: str, depth: int = 0) -> Uses:
        """The uses of parameter ``name`` in ``func``'s body, and of the locals derived from it."""
        found = function_locals(func, ctx)
        uses = cls({name}, ctx, where, depth, found.derived({name}))
        uses.bindings = found.bindings
        for stmt in own_body(func):
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
        return is_rooted(expr, self.names)

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
            shown = f"`{code_text(expr)}`" + (f" (`{through}` {self._chain(through)})" if through else "")
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
        return not (shadowing(node.params) & roots_of(self.names))

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return not (shadowing(node.params) & roots_of(self.names))

    def visit_Assign(self, node: cst.Assign) -> None:
        if named_in(node.value, self.names) is not None:
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
        if named_in(node.func, self.names) is not None:
            self._add(ArgKind.STATIC, "called as a function", node)
        elif isinstance(node.func, cst.Name) and node.func.value in self.derived:
            self._add(ArgKind.STATIC, "called as a function", node, via=self._via(node.func))
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        self._kernel_of(node, method)
        if method is not None and method not in ARRAY_METHODS and method not in CONTAINER_METHODS:
            assert isinstance(node.func, cst.Attribute)
            if named_in(node.func.value, self.names) is not None:
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
        if not attributes or named_in(expr, self.names) is None:
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
        func_text = dotted(call.func) or code_text(call.func)
        text = f"has its attribute `{attribute}` passed as the PRNG key to `{func_text}`"
        self._add(ArgKind.ARRAY, text, call, weight=WEAK)

    def _unpacked_operands(self, call: cst.Call, ffi: str | None) -> None:
        """``prim.bind(a, *xs)`` or an FFI call's ``*xs``: every item of the argument is an operand."""
        if ffi is None and not self._binds_primitive(call.func, self.ctx.imports.qualify(call.func)):
            return
        target = ffi or f"`{dotted(call.func) or code_text(call.func)}`"
        self._add(ArgKind.ARRAY, f"unpacked by `*` as operands to {target}, which takes them as array data", call)

    def _kernel_of(self, call: cst.Call, method: str | None) -> None:
        """Keep the kernel a ``pallas_call`` is given, or the host function of a callback."""
        last = method or dotted(call.func)
        if last not in ("pallas_call", "pure_callback", "io_callback", "callback", "call"):
            return
        qname = self.ctx.imports.qualify(call.func)
        if qname == PALLAS_CALL:
            kernel, what = call_value(call, 0, "kernel"), "a Pallas kernel"
        elif qname in HOST_CALLBACKS:
            func_text = dotted(call.func)
            kernel, what = call_value(call, 0, HOST_CALLBACKS[qname]), f"the host function of `{func_text}`"
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
        func_text = dotted(call.func) or code_text(call.func)  # `flash_fwd[grid]`
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
                place = place_of(position, keyword)
                self._add(ArgKind.STATIC, f"passed as a static setting ({place}) to `{func_text}`", call, via=via)
            elif qname.startswith("numpy."):  # host NumPy: a Tracer cannot become a NumPy array
                self._add(ArgKind.STATIC, f"{NEEDED} by host NumPy's `{func_text}`", call, via=via)
            elif use == DATA:
                self._add(ArgKind.ARRAY, f"used as array data by `{func_text}`", call, via=via)
            elif use == SIZE_OR_DATA:
                self._size_or_data(call, func_text, position, keyword, via)
            elif via is None:
                place = place_of(position, keyword)
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
        use = f"passed as {place_of(position, keyword)} to `{func_text}`, which takes a concrete int or an array there"
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
        function = call_value(call, 0, "func")
        name = dotted(function) if function is not None else None
        if function is None or name is None:
            return
        what = self._kernel_bound(call)
        if what is not None:
            place = place_of(position - 1, keyword)
            text = f"bound by `{func_text}` as {place} of `{name}`, {what}, which cannot capture traced values"
            self._add(ArgKind.STATIC, text, call, via=via)
            return
        helper = self.ctx.helpers.get(name)
        if helper is None or self.packing or self.depth >= 3 or name in self.bindings:
            return
        target = bound_parameter(helper, position, keyword)
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
        params = {p.name.value for p in all_params(function.params)}
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
        mapped = strip_views(call.args[0].value) if call.args and call.args[0].keyword is None else None
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
            elif isinstance(side, cst.Name) and side.value in self.derived and is_string_like(other):
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
        if key_lookup(node):
            return
        operands = [node.left, *(t.comparator for t in node.comparisons)]
        if not any(self._rooted(o) for o in operands):
            if any(is_string_like(o) for o in operands) and (via := self._via(node)) is not None:
                self._add(ArgKind.STATIC, "compared with a string", node, via=via)
            return
        if (enum := next(filter(None, map(self._enum_of_member, operands)), None)) is not None:
            self._add(ArgKind.STATIC, f"compared with a member of the enum `{enum}`", node)
            return
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in node.comparisons):
            return  # `x is None` says nothing: optional arrays are common
        if any(is_string_like(o) for o in operands):
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
    ``return``, or a ``continue`` or ``break`` of the loop it is in."""
    last = body.body[-1] if body.body else None
    if isinstance(last, cst.SimpleStatementLine):
        last = last.body[-1] if last.body else None
    if isinstance(last, cst.Return):
        return "an early return"
    if isinstance(last, cst.Break):
        return "a `break`"
    return "a `continue`" if isinstance(last, cst.Continue) else None


def _type_test_of(test: cst.BaseExpression, names: set[str], imports: ImportTable) -> str | None:
    """The code of a type test of one of ``names`` in ``test`` (`callable(m)`), if there is one."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if (
            isinstance(node, cst.Call)
            and node.args
            and named_in(node.args[0].value, names) is not None
            and imports.qualify(node.func) in TYPE_TESTS
        ):
            return code_text(node)
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
        if (item := named_in(node, self.names)) is not None:
            self.read.add(item)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        return not (node.attr.value in METADATA_ATTRIBUTES and isinstance(strip_views(node.value), cst.Name))

    def visit_Call(self, node: cst.Call) -> bool:
        qname = self.imports.qualify(node.func)
        if qname in TYPE_TESTS:
            return False
        return not (qname is not None and is_metadata_function(qname) and plain_names(node))

    def visit_Comparison(self, node: cst.Comparison) -> bool:
        return not reads_no_value(node)


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
