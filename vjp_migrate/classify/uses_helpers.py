"""Classify, step 7d: ``Helpers``, the evidence from the functions an argument is handed to: the
module's helpers it is passed to (walked by a ``Uses`` of their own), functions a tree map gives
its leaves, values ``partial`` binds, and kernels and host callbacks that cannot capture traced
values; ``Helpers.of`` walks one function."""

from __future__ import annotations

from dataclasses import replace
from typing import TypeVar

import libcst as cst

from vjp_migrate import walk
from vjp_migrate.classify.annotations import annotation_evidence, pytree_owner
from vjp_migrate.classify.context import Context, Via, function_locals, own_body
from vjp_migrate.classify.expressions import (
    all_params,
    bound_parameter,
    call_value,
    code_text,
    param_named,
    place_of,
    strip_views,
)
from vjp_migrate.classify.jit_bound import Runs, assigned_value, local_runs
from vjp_migrate.classify.uses_branches import Branches
from vjp_migrate.classify.uses_fields import attribute_evidence, attributes_read, field_evidence
from vjp_migrate.classify.uses_names import NameFinder
from vjp_migrate.classify.weights import DOUBT, OPAQUE, WEAK
from vjp_migrate.imports import ImportTable, dotted
from vjp_migrate.model import ArgKind, Evidence
from vjp_migrate.screen.tree import GROWING_METHODS
from vjp_migrate.sites import positional_params
from vjp_migrate.vocabulary import CACHING_DECORATORS, HOST_CALLBACKS, PALLAS_CALL, SETTING_KEYWORDS

H = TypeVar("H", bound="Helpers")  # typing.Self is Python 3.11+
# The attributes of an argument of no known class followed (each is one more walk of the body):
# in the rules and the helpers they call, the first few read.
_ATTRIBUTE_DEPTH, _ATTRIBUTES = 2, 8


class Helpers(Branches):
    """What the functions the argument reaches do with it, walked once the body is.

    Each function is walked by a visitor of ``type(self)``: the composed ``Uses`` (uses.py), which
    this step cannot import.
    """

    @classmethod
    def of(
        cls: type[H],
        func: cst.FunctionDef,
        name: str,
        ctx: Context,
        where: str,
        depth: int = 0,
        owner: str | None = None,
        matched: bool = False,
    ) -> H:
        """The uses of parameter ``name`` in ``func``'s body, and of the locals derived from it; and
        of the fields it reads when it holds a pytree class of the module with array fields, the
        class its annotation (or ``owner``, another rule's annotation of the argument, or the class
        whose fields the rules read of it unannotated: ``matched``) names; else of the first
        attributes it reads, for a need of a concrete value."""
        uses = cls._walked(func, {name}, ctx, where, depth)
        param = param_named(func, name)
        owner = owner or (pytree_owner(param, ctx) if param is not None else None)
        fields = ctx.array_fields.get(owner) if owner is not None else None
        if not name.isidentifier() or (fields is None and depth > _ATTRIBUTE_DEPTH):
            return uses
        read = attributes_read(func, name, fields)
        for attribute in read if fields is not None else read[:_ATTRIBUTES]:
            found = cls._walked(func, {f"{name}.{attribute}"}, ctx, where, depth).evidence
            judged = (
                attribute_evidence(found, attribute)
                if fields is None
                else field_evidence(found, attribute, fields, matched)
            )
            uses.evidence.extend(judged)
        return uses

    @classmethod
    def _walked(cls: type[H], func: cst.FunctionDef, names: set[str], ctx: Context, where: str, depth: int) -> H:
        found = function_locals(func, ctx)
        uses = cls(names, ctx, where, depth, found.derived(names))
        uses.bindings = found.bindings
        uses.func = func
        for stmt in own_body(func):
            walk.visit(stmt, uses)
        uses.close_exits()
        uses.judge_kernels()
        return uses

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
        helper = self._one_def(name)
        if helper is None or self.packing or self.depth >= 3:
            return
        target = bound_parameter(helper, position, keyword)
        if target is None:
            return
        where = f"`{name}` (bound by `{func_text}` in {self.where})"
        inner = type(self).of(helper, target, self.ctx, where, self.depth + 1)
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
        finder = NameFinder(outside, self.ctx.imports)
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

    def _mapped_leaves(self, call: cst.Call, func_text: str, index: int) -> None:
        """A tree map hands the argument's leaves to its function: a lambda's or a module
        helper's need for them concrete (`lambda v, lie: f(v) if lie else v`) is the argument's."""
        mapped = strip_views(call.args[0].value) if call.args and call.args[0].keyword is None else None
        where = f"the function mapped by `{func_text}` (in {self.where})"
        if isinstance(mapped, cst.Lambda):
            params = [p.name.value for p in mapped.params.params]
            if index >= len(params) or self.depth >= 3:
                return
            inner = type(self)({params[index]}, self.ctx, where, self.depth + 1)
            walk.visit(mapped.body, inner)
            inner.judge_kernels()
        elif isinstance(mapped, cst.Name) and (helper := self._one_def(mapped.value)) is not None and self.depth < 3:
            params = list(positional_params(helper))
            if index >= len(params):
                return
            inner = type(self).of(helper, params[index], self.ctx, where, self.depth + 1)
        else:
            return
        self.evidence.extend((e, weight) for e, weight in inner.evidence if e.kind is ArgKind.STATIC)

    def _one_def(self, name: str) -> cst.FunctionDef | None:
        """The one def a name the function walked reads reaches (a factory's helper next to the
        site, else a module helper), by name alone; None if a local of the function binds it."""
        defs = self.ctx.definitions(name, self.func)
        return defs[0] if len(defs) == 1 and name not in self.bindings else None

    def _opaque(self, call: cst.Call, func_text: str, keyword: str | None, via: Via | None, deep: bool = False) -> bool:
        """The argument (or with ``via``, a value from it) passed to a function not analysed: a
        doubt at a size or setting keyword (`k=`, `size=`...), else, for the argument itself, an
        unknown that keeps array evidence from a safe fix (OPAQUE; not for a local list it is
        appended to, nor for a def of the module ``deep`` in a chain of calls, recursion
        included: a weak unknown); False when it says nothing (a value from it at another place)."""
        if keyword is not None and keyword in SETTING_KEYWORDS:
            use = f"passed as `{keyword}=` to `{func_text}`, which is not analysed: "
            use += "a size or setting there needs it concrete"
            self._doubt(use, call, via)
            return True
        if via is None and self._grows_local(call.func):
            return True  # `ws.append(w)`: a loop over the list takes it (grown.py)
        elif via is None and deep:
            kind, weight = ArgKind.UNKNOWN, WEAK
            text = f"passed to `{func_text}`{self.packing}, which is not analysed, in {self.where}"
        elif via is None:
            kind, weight = ArgKind.UNKNOWN, OPAQUE
            qname = self.ctx.imports.qualify(call.func) or ""
            origin = qname.rpartition(".")[0] if qname and qname != func_text else ""
            origin = f" (imported from `{origin}`)" if origin else ""
            text = (
                f"passed to `{func_text}`{self.packing}, which is not analysed{origin}, in {self.where}: "
                "it may need a concrete value there"
            )
        else:
            return False
        self.evidence.append((Evidence(kind, text, *self.ctx.where(call)), weight))
        return True

    def _grows_local(self, func: cst.BaseExpression) -> bool:
        """Whether ``func`` is `ws.append` (`.insert`, `.extend`) of a local of the function walked."""
        return (
            type(func) is cst.Attribute
            and func.attr.value in GROWING_METHODS
            and type(func.value) is cst.Name
            and func.value.value in self.bindings
        )

    def _follow(self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None) -> None:
        if self._local_runs(call, func_text, position, keyword, via):
            return
        defs = self.ctx.definitions(func_text, self.func)
        if func_text in self.bindings and self._enclosing(func_text):
            defs = ()  # a local of the function shadows the def around it
        elif not defs and func_text in self.ctx.attributes and func_text not in self.bindings:
            self._imported(call, self.ctx.attributes[func_text], position, keyword, via)  # `window = helpers.window`
            return
        if not defs or self.depth >= 3 or isinstance(call.func, cst.Attribute):
            deep = bool(defs) and not isinstance(call.func, cst.Attribute)
            if not self._opaque(call, func_text, keyword, via, deep):
                assert via is not None
                self._note(
                    f"a value computed from it, {via.text}, is passed to `{func_text}`{self.packing}, "
                    "which is not analysed",
                    call,
                )
            return
        found = [self._in_helper(helper, call, func_text, position, keyword, via) for helper in defs]
        self.evidence.extend(found[0] if len(found) == 1 else _in_every(found, func_text))

    def _local_runs(self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None) -> bool:
        """A call of a local bound once to what a call makes, a jax.jit or a factory's result
        (jit_bound.py): judged by each thing it may run; whether it was."""
        value = assigned_value(self.bindings.get(call.func.value, [])) if isinstance(call.func, cst.Name) else None
        runs = local_runs(value, self.func, self.ctx) if value is not None and self.func is not None else None
        if runs is None or self.depth >= 3:
            return False
        assert isinstance(value, cst.Call)
        if not runs:
            use = f"passed to `{func_text}`, which `{code_text(value.func)}(...)` makes and is not analysed"
            self._doubt(f"{use} (a jax.jit it may be could mark it static)", call, via)
            return True
        found = [self._in_runs(r, call, func_text, position, keyword, via) for r in runs]
        self.evidence.extend(found[0] if len(found) == 1 else _in_every(found, func_text))
        return True

    def _in_runs(
        self, runs: Runs, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None
    ) -> list[tuple[Evidence, str]]:
        marked = runs.marks(position, keyword)
        place = f"`{keyword}`" if keyword else place_of(position, None)
        if marked:
            text = f"passed as {place} to `{func_text}`, whose jax.jit marks it static"
            return self._made(ArgKind.STATIC, text, call, via=via)
        static = runs.static()
        if runs.func is not None and static is not None:
            where = f"`{runs.func.name.value}`, which `{func_text}` runs (called from {self.where})"
            return self._in_helper(runs.func, call, func_text, position, keyword, via, where=where, static=static)
        if marked is None:
            use = f"passed as {place} to `{func_text}`, a jax.jit whose static arguments "
            use += "are not known here (not literals, or of a function not analysed): it may be one"
            return [self._doubted(use, call, via)]
        self._opaque(call, func_text, keyword, via)  # a jit traces it there: judged as before
        return []

    def _imported(self, call: cst.Call, func_text: str, position: int, keyword: str | None, via: Via | None) -> None:
        """A call of a name imported from elsewhere: a def of another module of the run is
        followed as a helper of this module is, read with that module's imports."""
        found = self.ctx.imported(func_text) if self.ctx.imported is not None and self.depth < 3 else None
        if found is not None:
            helper, ctx, module = found
            where = f"helper `{func_text}` from `{module}` (called from {self.where})"
            self.evidence.extend(self._in_helper(helper, call, func_text, position, keyword, via, ctx, where))
        else:
            self._opaque(call, func_text, keyword, via)

    def _enclosing(self, name: str) -> bool:
        """Whether a function around the def walked binds ``name`` to a def."""
        return self.func is not None and self.ctx.enclosing.get(id(self.func), {}).get(name) is not None

    def _in_helper(
        self,
        helper: cst.FunctionDef,
        call: cst.Call,
        func_text: str,
        position: int,
        keyword: str | None,
        via: Via | None,
        ctx: Context | None = None,
        where: str | None = None,
        static: frozenset[str] = frozenset(),
    ) -> list[tuple[Evidence, str]]:
        """The evidence one def of the helper ``call`` calls gives about the argument it is passed
        (``ctx``, ``where``: the context of the module that defines it and how to name the helper,
        when it is not this module's; ``static``: what a jax.jit it runs through marks static)."""
        ctx = ctx or self.ctx
        params = positional_params(helper)
        kwonly = [p.name.value for p in helper.params.kwonly_params]
        named = keyword in params or keyword in kwonly
        target = keyword if named else (params[position] if 0 <= position < len(params) else None)
        if target is None:
            return []
        if target in ctx.jit_static(func_text, helper) | static:
            text = f"passed as `{target}` to `{func_text}`, whose jax.jit marks it static"
            return self._made(ArgKind.STATIC, text, call, via=via)
        if (cache := caching_decorator(helper, ctx.imports)) is not None:
            text = f"passed to `{func_text}`, which `@{cache}` caches by its arguments (a Tracer is unhashable)"
            return self._made(ArgKind.STATIC, text, call, via=via)
        where = where or f"helper `{func_text}` (called from {self.where})"
        walk.cover(helper)  # a def of another module is walked by replays too, not node by node
        inner = type(self).of(helper, target, ctx, where, self.depth + 1)
        if via is None:
            return [*inner.evidence, *annotation_evidence(helper, target, ctx, inner.where)]
        return via.carried(inner.evidence)


def caching_decorator(func: cst.FunctionDef, imports: ImportTable) -> str | None:
    """How ``func``'s decorator that caches it by its arguments is written (`functools.lru_cache`,
    `lru_cache`, also called: `lru_cache(maxsize=4)`), if it has one."""
    for decorator in func.decorators:
        target = decorator.decorator
        target = target.func if isinstance(target, cst.Call) else target
        if imports.qualify(target) in CACHING_DECORATORS:
            return dotted(target) or code_text(target)
    return None


def _in_every(found: list[list[tuple[Evidence, str]]], name: str) -> list[tuple[Evidence, str]]:
    """The evidence of a helper with several defs, one per branch: a need for a concrete value
    proves it static only when every def has one; in some alone, it is a doubt."""
    if all(any(e.kind is ArgKind.STATIC for e, _ in evidence) for evidence in found):
        return [item for evidence in found for item in evidence]
    note = f" (not in every one of the {len(found)} definitions of `{name}`)"
    return [
        (replace(e, kind=ArgKind.UNKNOWN, text=e.text + note), DOUBT) if e.kind is ArgKind.STATIC else (e, weight)
        for evidence in found
        for e, weight in evidence
    ]
