"""Classify, step 7e: ``CallUses``, the evidence from the calls an argument is passed to: as the
function called, an operand of a primitive or FFI call, a library function's place (data, shape,
setting, function), a method arrays lack, a PRNG key read from it, inside a tuple or list."""

from __future__ import annotations

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.context import Via
from vjp_migrate.classify.expressions import all_params, code_text, named_in, place_of, strip_views
from vjp_migrate.classify.mapped import mapped_by
from vjp_migrate.classify.random_keys import key_parameter
from vjp_migrate.classify.uses_containers import Containers
from vjp_migrate.classify.uses_helpers import Helpers
from vjp_migrate.classify.weights import CALLED, NEEDED, OBJECT, WEAK
from vjp_migrate.imports import dotted
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.sites.scopes import AllNames
from vjp_migrate.vocabulary import (
    ARRAY_METHODS,
    ARRAY_MODULES,
    ARRAY_OPERANDS_FROM,
    AXIS_METHODS,
    CALLABLE,
    CONCRETE_METHODS,
    CONTAINER_METHODS,
    DATA,
    DTYPE_FUNCTIONS,
    FFI_CALLS,
    HOST_CONVERSIONS,
    INDEXED_UPDATES,
    JAX_TRANSFORMS,
    METADATA_ATTRIBUTES,
    NUMPY_TRACER_METHODS,
    PRIMITIVE_CLASSES,
    PYTHON_NUMBER_CHECKS,
    SHAPE_METHODS,
    SIZE_OR_DATA,
    STATIC,
    STATIC_CALLS,
    STATIC_KEYWORDS,
    STATIC_PLACES_OF,
    at_place,
    is_jax_primitive,
    library_use,
    needs_python_number,
    static_parameter,
    takes_random_key,
)


class CallUses(Helpers, Containers):
    """What each call the argument (or a value from it) is passed to says about it."""

    def visit_Call(self, node: cst.Call) -> None:
        if named_in(node.func, self.names) is not None:
            self._add(ArgKind.STATIC, CALLED, node)
        elif isinstance(node.func, cst.Name) and node.func.value in self.derived:
            self._add(ArgKind.STATIC, CALLED, node, via=self._via(node.func))
        method = node.func.attr.value if isinstance(node.func, cst.Attribute) else None
        self._kernel_of(node, method)
        if method is not None and method not in ARRAY_METHODS and method not in CONTAINER_METHODS:
            assert isinstance(node.func, cst.Attribute)
            if named_in(node.func.value, self.names) is not None:
                text = f"has its method `.{method}()` called, which arrays do not have (maybe not a pytree of arrays)"
                self._add(ArgKind.UNKNOWN, text, node, weight=OBJECT)
        elif method in CONCRETE_METHODS:
            assert isinstance(node.func, cst.Attribute)
            self._static_use(
                node.func.value, f"has its method `.{method}()` called, which needs a concrete value", node
            )
        ffi = self._ffi_function(node.func)
        positional = 0
        for arg in node.args:
            spread = self._spread(arg.value) if arg.star == "*" and positional >= 0 and ffi is None else None
            if spread is not None:  # `*geo` with `geo = (a, b)`: each item at its own position
                for item in spread:
                    if self._rooted(item):
                        self._call_arg(node, positional, None)
                    elif (via := self._via(item)) is not None:
                        self._call_arg(node, positional, None, via)
                    positional += 1
                continue
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
            if arg.star == "**" and self._all_locals(arg.value):
                for name in sorted(n for n in self.names if n.isidentifier()):
                    self._call_arg(node, -1, name)  # each local is passed by its name
            if self._rooted(arg.value) and not arg.star:
                self._call_arg(node, positional if keyword is None else -1, keyword)
            elif not arg.star and (holder := self._packed(arg.value)) is not None:
                self._call_packed(node, positional if keyword is None else -1, keyword, holder)
            elif not arg.star and (via := self._via(arg.value)) is not None:
                self._call_arg(node, positional if keyword is None else -1, keyword, via)
            elif not arg.star and (attribute := self._attribute_read(arg.value)) is not None:
                self._attribute_passed(node, positional if keyword is None else -1, keyword, attribute)
            if arg.keyword is None:
                positional += 1

    def _all_locals(self, expr: cst.BaseExpression) -> bool:
        """Whether ``expr`` is ``locals()`` of the def walked (axlearn's ``_impl(**locals())``), not of
        a def nested in it, whose locals are others."""
        return (
            not self.closures
            and type(expr) is cst.Call
            and not expr.args
            and self.ctx.imports.qualify(expr.func) == "builtins.locals"
        )

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

    def _attribute_passed(self, call: cst.Call, position: int, keyword: str | None, attribute: str) -> None:
        """An attribute of the argument converted by host NumPy (``np.array(forcings.recharge)``): a
        Tracer cannot become a NumPy value, so that part, and the argument, is concrete. A PRNG key
        read from it (``jax.random.uniform(p.batch_key, ...)``): the argument holds key arrays, made
        and split as the program runs; whether it is a pytree JAX takes as a regular argument (a
        plain object is not) is not seen: never a safe fix."""
        qname = self.ctx.imports.qualify(call.func)
        func_text = dotted(call.func) or code_text(call.func)
        if qname in HOST_CONVERSIONS:
            text = f"has its attribute `{attribute}` converted to a concrete NumPy value by `{func_text}`"
            self._add(ArgKind.STATIC, text, call)
            return
        helper = self._one_def(call.func.value) if qname is None and isinstance(call.func, cst.Name) else None
        if helper is not None and (keyed := key_parameter(helper, position, keyword, self.ctx.imports)) is not None:
            text = (
                f"has its attribute `{attribute}` passed to `{func_text}`, which gives it to `{keyed}` as the PRNG key"
            )
            self._add(ArgKind.ARRAY, text, call, weight=WEAK)
            return
        if qname is None or not takes_random_key(qname, position, keyword):
            return
        text = f"has its attribute `{attribute}` passed as the PRNG key to `{func_text}`"
        self._add(ArgKind.ARRAY, text, call, weight=WEAK)

    def _unpacked_operands(self, call: cst.Call, ffi: str | None) -> None:
        """``prim.bind(a, *xs)`` or an FFI call's ``*xs``: every item of the argument is an operand."""
        if ffi is None and not self._binds_primitive(call.func, self.ctx.imports.qualify(call.func)):
            return
        target = ffi or f"`{dotted(call.func) or code_text(call.func)}`"
        self._add(ArgKind.ARRAY, f"unpacked by `*` as operands to {target}, which takes them as array data", call)

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
        if not self._static_use(arg.value, text, call) and (method := self._method_result(arg.value)) is not None:
            # `comm_handle=comm.py2f()`
            self._add(ArgKind.STATIC, f"has its method `.{method}()`'s result {text}", call)

    def _method_result(self, expr: cst.BaseExpression) -> str | None:
        """``py2f`` when ``expr`` calls a method of the argument itself (`comm.py2f()`)."""
        if not isinstance(expr, cst.Call) or not isinstance(expr.func, cst.Attribute):
            return None
        return expr.func.attr.value if self._rooted(expr.func.value) else None

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

    def _spread(self, expr: cst.BaseExpression) -> list[cst.BaseExpression] | None:
        """The items ``*expr`` spreads: a tuple or list literal in place or that a local is bound to
        once, with no starred item of its own; None otherwise."""
        once = self._value_once(expr.value) if type(expr) is cst.Name and expr.value not in self.names else None
        literal = once or expr
        if not (type(literal) is cst.Tuple or type(literal) is cst.List) or any(
            isinstance(e, cst.StarredElement) for e in literal.elements
        ):
            return None
        return [e.value for e in literal.elements]

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
        if qname in ARRAY_OPERANDS_FROM and keyword is None and position >= ARRAY_OPERANDS_FROM[qname]:
            self._add(
                ArgKind.ARRAY, f"passed as an operand to `{func_text}`, which takes it as array data", call, via=via
            )
            return
        if qname is None and isinstance(call.func, cst.Attribute) and _indexed_update(call.func) is None:
            method = call.func.attr.value
            if method in SHAPE_METHODS or (method in AXIS_METHODS and (position == 0 or keyword == "axis")):
                self._add(ArgKind.STATIC, f"passed as a shape/axis to the array method `.{method}`", call, via=via)
                return
            if _static_method_place(method, position, keyword):
                place = place_of(position, keyword)
                text = f"passed as a static setting ({place}) to the array method `.{method}` (as to `jnp.{method}`)"
                self._add(ArgKind.STATIC, text, call, via=via)
                return
        if qname is None and position == 0 and (update := _indexed_update(call.func)) is not None:
            if update == "apply":
                self._add(ArgKind.STATIC, f"passed as the function to `{func_text}`", call, via=via)
            else:
                self._add(ArgKind.ARRAY, f"used as array data by `{func_text}`", call, via=via)
            return
        if qname is None and (mapping := mapped_by(call, position, keyword, self.ctx.imports)) is not None:
            self._add(ArgKind.ARRAY, f"mapped over by `{mapping}`", call, via=via)
            return
        if qname is None and (hashed := self._hashing(call, position, keyword)) is not None:
            self._add(ArgKind.STATIC, hashed, call, via=via)
            return
        if qname is None and (held := self._container_method(call, position, keyword)) is not None:
            sure, text = held
            if sure:
                self._add(ArgKind.STATIC, text, call, via=via)
            else:
                self._doubt(text, call, via)
            return
        if qname is None:
            self._follow(call, func_text, position, keyword, via)
            return
        if needs_python_number(qname):
            self._add(ArgKind.STATIC, f"passed to `{func_text}`", call, via=via)
        elif qname in PYTHON_NUMBER_CHECKS and position == 0:
            text = f"passed to `{func_text}`, which checks it is a Python number (a Tracer never is)"
            self._add(ArgKind.STATIC, text, call, via=via)
        elif qname in STATIC_CALLS:
            text = f"passed to `{func_text}`, which takes only static shapes, dtypes and settings"
            self._add(ArgKind.STATIC, text, call, via=via)
        elif (parameter := static_parameter(qname, position, keyword)) is not None:
            shown = f"`{keyword}=`" if keyword else f"`{parameter}`"
            text = f"passed as {shown} to `{func_text}`, which needs a static value there (a Tracer fails)"
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
            elif "tree" in qname and via is None and keyword is None and position >= 1 and _ignores_leaves(call):
                self._note(f"mapped over by `{func_text}` with a function that reads no leaf", call)
            elif "tree" in qname:
                self._add(ArgKind.ARRAY, f"mapped over as a pytree by `{func_text}`", call, weight=WEAK, via=via)
                if via is None and keyword is None and position >= 1:
                    self._mapped_leaves(call, func_text, position - 1)
        elif qname.startswith(ARRAY_MODULES):
            use = library_use(qname, position, keyword)
            if qname.rsplit(".", 1)[-1] in DTYPE_FUNCTIONS:
                if via is None:
                    self._note(f"passed to `{func_text}`, which reads only a dtype (given, or an array's)", call)
            elif use == CALLABLE:
                self._add(ArgKind.STATIC, f"passed as a function to `{func_text}`", call, via=via)
            elif use == STATIC:
                place = place_of(position, keyword)
                self._add(ArgKind.STATIC, f"passed as a static setting ({place}) to `{func_text}`", call, via=via)
            elif qname in NUMPY_TRACER_METHODS:
                if via is None:
                    self._note(f"passed to host NumPy's `{func_text}`, which hands a Tracer to its own method", call)
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
                self.evidence.append((Evidence(ArgKind.UNKNOWN, text, *self.ctx.where(call)), WEAK))
        elif not qname.startswith("builtins."):
            self._imported(call, func_text, position, keyword, via)

    def _size_or_data(
        self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None
    ) -> None:
        """A place taking an int it needs concretely or an array as data (``permutation(key, n)``):
        whichever the argument is, no array evidence elsewhere makes its migration safe."""
        use = f"passed as {place_of(position, keyword)} to `{func_text}`, which takes a concrete int or an array there"
        self._doubt(use, call, via)

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


def _static_method_place(method: str, position: int, keyword: str | None) -> bool:
    """Whether the array method takes the argument where the `jnp` function of its name takes a
    static setting after the array: `x.round(decimals)` as `jnp.round(x, decimals)`, `x.take(i, axis)`."""
    at = position + 1 if keyword is None else -1
    return method in ARRAY_METHODS and library_use(f"jax.numpy.{method}", at, keyword) == STATIC


def _ignores_leaves(call: cst.Call) -> bool:
    """A tree map whose function is a lambda that reads none of its parameters (``jtu.tree_map(lambda
    _: False, static_part)``, equinox): it makes a tree of its own values, whatever the leaves are."""
    first = call.args[0] if call.args else None
    mapped = strip_views(first.value) if first is not None and first.keyword is None else None
    if not isinstance(mapped, cst.Lambda):
        return False
    names = AllNames()
    walk.visit(mapped.body, names)
    return not names.names & {p.name.value for p in all_params(mapped.params)}


def _indexed_update(func: cst.BaseExpression) -> str | None:
    """``set`` for ``x.at[i].set``: the method of an indexed update, whose first argument is the
    values it writes (array data, or a number), or the function ``.apply`` maps."""
    if (
        isinstance(func, cst.Attribute)
        and func.attr.value in INDEXED_UPDATES
        and isinstance(func.value, cst.Subscript)
        and isinstance(func.value.value, cst.Attribute)
        and func.value.value.attr.value == "at"
    ):
        return func.attr.value
    return None
