"""Screen, step 5: whether a parameter may be used as array data, an over-approximation of
classify's array evidence (arithmetic, array attributes and functions, helpers followed, arrays
passed at call sites)."""

from __future__ import annotations

import ast

from vjp_migrate.screen.names import (
    annotation_nodes,
    may_be_array_function,
    may_be_ffi_function,
    positional_params,
    qualified,
)
from vjp_migrate.screen.sites import Site, call_value, called_defs, known_as
from vjp_migrate.screen.tree import Func, Module, body_nodes, calls_bound_to, dotted, grown_list, own_nodes
from vjp_migrate.vocabulary import (
    ARRAY_ANNOTATION_NAMES,
    ARRAY_ANNOTATIONS,
    ARRAY_ATTRIBUTES,
    ARRAY_OPERANDS_FROM,
    HOST_ARRAY_ANNOTATIONS,
    INDEXED_UPDATES,
    MAPPING_TRANSFORMS,
)

ROOT_ATTRIBUTES = frozenset({"T", "mT", "real", "imag"})  # x.T is still x
# Keywords whose value classify always takes as static (a subset of vocabulary.STATIC_KEYWORDS).
STATIC_KEYWORDS = frozenset({"shape", "axis", "axes", "dtype", "precision", "preferred_element_type"})
PAIRING_BUILTINS = frozenset({"builtins.enumerate", "builtins.zip"})
FOLLOW_DEPTH = 4  # classify follows helpers three calls deep; following further only keeps more


def root_of(expr: ast.expr) -> ast.expr:
    while isinstance(expr, ast.Subscript) or (isinstance(expr, ast.Attribute) and expr.attr in ROOT_ATTRIBUTES):
        expr = expr.value
    if isinstance(expr, ast.Starred):
        return root_of(expr.value)
    return expr


class ArrayUse:
    """Whether a parameter may be used as array data in a function or the helpers it calls."""

    def __init__(self, m: Module) -> None:
        self.m = m
        self.memo: dict[tuple[int, str, int], bool] = {}
        self.classes = module_classes(m)
        # The fields the module's classes declare (`pi: jax.Array`): an unannotated argument that
        # reads one may be such a class's pytree (classify's uses_fields.matching_class).
        self.fields = frozenset(
            s.target.id
            for c in m.top
            if isinstance(c, ast.ClassDef)
            for s in c.body
            if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)
        )

    def annotated(self, param: ast.arg) -> bool:
        """An array annotation, or a class of the module, which may be a pytree with array fields
        (classify.annotations; its fields' uses, `params.G @ x`, are then the argument's too)."""
        return annotated_with(self.m, param, self.classes)

    def param(self, func: Func, index: int, depth: int = 0) -> bool:
        params = positional_params(func)
        return 0 <= index < len(params) and self._arg(func, params[index], depth)

    def keyword_only(self, func: Func, name: str, depth: int) -> bool:
        return any(self._arg(func, p, depth) for p in func.args.kwonlyargs if p.arg == name)

    def _arg(self, func: Func, param: ast.arg, depth: int) -> bool:
        key = (id(func), param.arg, depth)  # the depth bounds recursion, so it is in the key
        if key not in self.memo:
            self.memo[key] = self.annotated(param) or self.body(func, param.arg, depth)
        return self.memo[key]

    def body(self, func: Func, name: str, depth: int) -> bool:
        nodes = body_nodes(self.m, func)
        names = {name}
        grown = True
        while grown:  # `y = x` makes y stand for x (classify adds such names as it goes), and so
            before = len(names)  # does `xs = (y, x)`, which classify reads as x passed where xs goes
            for node in nodes:
                names.update(self._standing_for(node, names))
            grown = len(names) > before
        return (
            any(self._node(node, names, depth) for node in nodes)
            or self._item_arithmetic(nodes, names)
            or self._reads_a_field(nodes, name)
        )

    def _reads_a_field(self, nodes: list[ast.AST], name: str) -> bool:
        """`model.pi`, `pi` a field some class of the module declares."""
        return bool(self.fields) and any(
            isinstance(n, ast.Attribute) and n.attr in self.fields and self._is(n.value, {name}) for n in nodes
        )

    def _item_arithmetic(self, nodes: list[ast.AST], names: set[str]) -> bool:
        """An item of the argument unpacked (`src_idx, w = handle`) in arithmetic (`x * w[:, None]`):
        classify reads it as the argument's own (uses_operators.py), as a loop's item."""
        items = {
            n.id
            for node in nodes
            if isinstance(node, ast.Assign) and self._is(node.value, names)
            for target in node.targets
            if isinstance(target, (ast.Tuple, ast.List))
            for n in ast.walk(target)
            if isinstance(n, ast.Name)
        }
        if not items:
            return False
        for node in nodes:
            if isinstance(node, ast.BinOp):
                for side in (node.left, node.right):
                    while isinstance(side, ast.Subscript):
                        side = side.value
                    if isinstance(side, ast.Name) and side.id in items:
                        return True
        return False

    def _standing_for(self, node: ast.AST, names: set[str]) -> list[str]:
        """The names ``node`` makes stand for one of ``names``: `y = x`, `xs = (y, x)`, a list
        grown with it (`xs += [x]`, `xs.append(x)`), a loop's target over such values."""
        if isinstance(node, ast.Assign) and (self._is(node.value, names) or self._holds(node.value, names)):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and self._holds(node.value, names):
            return [node.target.id]
        if isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and (
            self._is(node.iter, names) or self._holds(node.iter, names) or self._pairs(node.iter, names)
        ):
            return [n.id for n in ast.walk(node.target) if isinstance(n, ast.Name)]
        if (method := grown_list(node)) is not None:  # `xs.append(x)`, `xs.extend([x])`
            owner, given = method
            if any(self._is(g, names) or self._holds(g, names) for g in given):
                return [owner.id]
        return []

    def _pairs(self, expr: ast.expr, names: set[str]) -> bool:
        """`enumerate(ws)`, `zip(ws, bs)`: a loop over it takes the argument's items too."""
        return (
            isinstance(expr, ast.Call)
            and bool(qualified(self.m, expr.func) & PAIRING_BUILTINS)
            and any(self._is(a, names) or self._holds(a, names) for a in expr.args)
        )

    @staticmethod
    def _is(expr: ast.expr, names: set[str]) -> bool:
        return isinstance(expr, ast.Name) and expr.id in names

    def _rooted(self, expr: ast.expr | None, names: set[str]) -> bool:
        root = root_of(expr) if expr is not None else None
        return isinstance(root, ast.Name) and root.id in names

    def _passes_a_field(self, call: ast.Call, names: set[str]) -> bool:
        """An argument of the call reads an attribute of the name (``p.key``, ``p.keys.dropout``)."""
        for value in [*call.args, *(k.value for k in call.keywords)]:
            if isinstance(value, ast.Attribute):
                while isinstance(value, ast.Attribute):
                    value = value.value
                if isinstance(value, ast.Name) and value.id in names:
                    return True
        return False

    def _draws(self, call: ast.Call) -> bool:
        return any(q.startswith("jax.random.") for q in qualified(self.m, call.func))

    def _helper_draws(self, call: ast.Call) -> bool:
        """``call`` calls a def of the module that calls a `jax.random` function."""
        helpers = self.m.defs.get(call.func.id, []) if isinstance(call.func, ast.Name) else []
        return any(isinstance(n, ast.Call) and self._draws(n) for h in helpers for n in body_nodes(self.m, h))

    def _holds(self, expr: ast.expr, names: set[str]) -> bool:
        """A tuple or list literal with the name (or one holding it) among its elements."""
        return isinstance(expr, (ast.Tuple, ast.List)) and any(
            self._rooted(e, names) or self._holds(e, names) for e in expr.elts
        )

    def _node(self, node: ast.AST, names: set[str], depth: int) -> bool:
        rooted = self._rooted
        if isinstance(node, ast.BinOp):
            return rooted(node.left, names) or rooted(node.right, names)
        if isinstance(node, ast.AugAssign):
            return rooted(node.target, names) or rooted(node.value, names)
        if isinstance(node, ast.UnaryOp):
            return not isinstance(node.op, ast.Not) and rooted(node.operand, names)
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            all_is = all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops)
            return not all_is and any(rooted(o, names) for o in operands)
        if isinstance(node, ast.Attribute):
            return node.attr in ARRAY_ATTRIBUTES and rooted(node.value, names)
        if isinstance(node, ast.Call):
            return self._call(node, names, depth)
        return False

    def _call(self, call: ast.Call, names: set[str], depth: int) -> bool:
        if (
            isinstance(call.func, ast.Call)
            and qualified(self.m, call.func.func) & MAPPING_TRANSFORMS.keys()
            and any(self._rooted(a, names) for a in call.args)
        ):
            return True  # an operand `jax.vmap(f)(x, ...)` maps over: an array with a leading axis
        if self._passes_a_field(call, names) and (self._draws(call) or self._helper_draws(call)):
            return True  # `jax.random.uniform(p.key, ...)`, `noise(x.shape, p.key)`: p holds PRNG keys
        if any(q in ARRAY_OPERANDS_FROM for q in qualified(self.m, call.func)) and any(
            self._rooted(v, names) for v in [*call.args[1:], *(k.value for k in call.keywords)]
        ):
            return True  # an operand of `jax.pure_callback(host, shapes, x, ...)`: converted to an array
        passed: list[tuple[int | None, str | None]] = []  # (position, keyword) of each use
        position: int | None = 0
        for arg in call.args:
            if isinstance(arg, ast.Starred):
                position = None
            value = arg.value if isinstance(arg, ast.Starred) else arg  # `*geo` spreads what geo holds
            if self._rooted(value, names) or self._holds(value, names):
                passed.append((position, None))
            if position is not None:
                position += 1
        for keyword in call.keywords:
            held = self._rooted(keyword.value, names) or self._holds(keyword.value, names)
            if held and keyword.arg not in STATIC_KEYWORDS:
                passed.append((None, keyword.arg))
            if keyword.arg is None and _all_locals(self.m, keyword.value):  # `**locals()`: each by its name
                passed.extend((None, name) for name in names if name.isidentifier())
        if not passed:
            return False
        if may_be_array_function(self.m, call.func) or (_indexed_update(call.func) and (0, None) in passed):
            return True  # an array function's argument; the values `x.at[i].set(v)` writes
        bind = isinstance(call.func, ast.Attribute) and call.func.attr == "bind"
        if (bind or may_be_ffi_function(self.m, call.func)) and any(given is None for _, given in passed):
            return True  # a positional argument of any `.bind` or FFI function may be an operand
        if any(q.startswith(".") for q in qualified(self.m, call.func)):
            return True  # a helper of a sibling module, which a run over the package follows (project.py)
        if not isinstance(call.func, ast.Name) or depth >= FOLLOW_DEPTH:
            return False
        for helper in may_run(self.m, call.func.id):
            params = [p.arg for p in positional_params(helper)]
            for at, given in passed:
                if given is not None and self.keyword_only(helper, given, depth + 1):
                    return True
                if given is not None:
                    targets = [params.index(given)] if given in params else []
                elif at is None:
                    targets = list(range(len(params)))  # after *args: any position
                else:
                    targets = [at] if at < len(params) else []
                if any(self.param(helper, t, depth + 1) for t in targets):
                    return True
        return False


def may_run(m: Module, name: str) -> list[Func]:
    """The defs a call of ``name`` may run: sites.called_defs (a def of that name, the defs a call
    bound to it is given: `jax.jit(_g, ...)`, `partial(_g, k=v)`) and, when that call is of a def of
    the module (a factory, classify.jit_bound), those the def returns by name or hands to a call
    (`return jax.jit(_h, ...)`)."""
    found = m.runs.get(name)
    if found is None:
        made = [d for call in calls_bound_to(m, name) for d in _returned_defs(m, call)]
        found = m.runs[name] = called_defs(m, name) + made
    return found


def _returned_defs(m: Module, call: ast.Call) -> list[Func]:
    """The defs a def the call calls returns by name, or hands to a call as its first argument."""
    factories = called_defs(m, call.func.id) if isinstance(call.func, ast.Name) else []
    found: list[Func] = []
    for factory in factories:
        for node in body_nodes(m, factory):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Name):
                found.extend(called_defs(m, node.value.id))
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name):
                found.extend(called_defs(m, node.args[0].id))
    return found


def _all_locals(m: Module, expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and not expr.args and "builtins.locals" in qualified(m, expr.func)


def call_site_may_pass_array(m: Module, site: Site, index: int, name: str) -> bool:
    """A call of the primal passes, for the argument, what a JAX array function makes: in place
    (`f(jnp.ones(3), x)`) or through a local of the calling def bound to it, or a loop's target
    over it, or a global bound to it (classify's `_array_local`; any binding counts here). Through
    an attribute, the value one place earlier counts too (a method's call passes no instance); of
    a call with `*args` or `**kwargs`, every value it passes counts."""
    for call in _site_calls(m, site):
        values = _values_for(call, index, name)
        if any(_makes_array(m, v) for v in values):
            return True
        given = {v.id for v in values if isinstance(v, ast.Name)}
        caller = m.caller.get(id(call))
        if given and caller is not None and given & _array_locals(m, caller):
            return True
        if given & _module_arrays(m):
            return True
    return False


def _module_arrays(m: Module) -> set[str]:
    if m.arrays is None:
        m.arrays = {
            n.id
            for node in m.top
            if isinstance(node, ast.Assign) and _makes_array(m, node.value)
            for t in node.targets
            for n in ast.walk(t)
            if isinstance(n, ast.Name)
        }
    return m.arrays


def _values_for(call: ast.Call, index: int, name: str) -> list[ast.expr]:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return [*call.args, *(k.value for k in call.keywords)]
    method = isinstance(call.func, ast.Attribute) and index > 0
    values = [call_value(call, index, name), call_value(call, index - 1, name) if method else None]
    return [v for v in values if v is not None]


def call_site_may_pass_annotated(m: Module, site: Site, index: int, name: str) -> bool:
    """A call of the site passes, for the argument, a parameter of the calling def or a field of
    one (`noise`, `context.noise`) annotated as an array or with a class of the module, which may
    hold array fields (classify.caller_annotations). Through an attribute, the value one place
    earlier counts too: a method's call passes no instance (`self.layer(a, b)`)."""
    classes = module_classes(m)
    for call in _site_calls(m, site):
        caller = m.caller.get(id(call))
        if caller is None:
            continue
        if _passes_annotated(m, caller, _values_for(call, index, name), classes):
            return True
    return False


def module_classes(m: Module) -> frozenset[str]:
    return frozenset(s.name for s in m.top if isinstance(s, ast.ClassDef))


def _site_calls(m: Module, site: Site) -> list[ast.Call]:
    """The calls that may call the site: by one of its names, or through a def that returns it."""
    found = m.site_calls.get(id(site.call))
    if found is None:
        names, factories = _call_names(m, site)
        found = m.site_calls[id(site.call)] = []
        for call in m.calls:
            called = call.func.func if isinstance(call.func, ast.Call) else call.func
            name = dotted(called)
            if name is not None and name.rsplit(".", 1)[-1] in (factories if called is not call.func else names):
                found.append(call)
    return found


def _call_names(m: Module, site: Site) -> tuple[set[str], set[str]]:
    """The names a call of the site may go through, and the defs that return the site (a factory:
    `make(cfg)(x, key)`, `f = make(cfg); f(x, key)`)."""
    names = set(known_as(m, site))
    factories = {
        name
        for name, defs in m.defs.items()
        for func in defs
        if any(
            isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in names
            for n in own_nodes(m, func)
        )
    }
    for call in m.calls:
        name = dotted(call.func)
        if name is not None and name.rsplit(".", 1)[-1] in factories:
            names.update(target.rsplit(".", 1)[-1] for target in m.assigned.get(id(call), ()))
    return names, factories


def _passes_annotated(m: Module, caller: Func, values: list[ast.expr], classes: frozenset[str]) -> bool:
    """A parameter of the calling def, or a field of one, passed on (`noise`, `context.noise`),
    annotated as an array or with a class of the module, which may hold array fields."""
    arguments = caller.args
    params = {p.arg: p for p in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    for value in values:
        while isinstance(value, (ast.Attribute, ast.Subscript, ast.Starred)):
            value = value.value
        param = params.get(value.id) if isinstance(value, ast.Name) else None
        if param is not None and annotated_with(m, param, classes):
            return True
    return False


def annotated_with(m: Module, param: ast.arg, classes: frozenset[str]) -> bool:
    """The parameter's annotation names an array type anywhere in it, or one of ``classes``."""
    if param.annotation is None:
        return False
    for node in annotation_nodes(param.annotation):
        if not isinstance(node, (ast.Name, ast.Attribute)) or (name := dotted(node)) is None:
            continue
        if name.rsplit(".", 1)[-1] in ARRAY_ANNOTATION_NAMES | classes:
            return True
        if qualified(m, node) & (ARRAY_ANNOTATIONS | HOST_ARRAY_ANNOTATIONS):
            return True  # `from jax import Array as JaxArray`
    return False


def _makes_array(m: Module, expr: ast.expr) -> bool:
    return isinstance(expr, ast.Call) and may_be_array_function(m, expr.func)


def _array_locals(m: Module, func: Func) -> set[str]:
    found: set[str] = set()
    for node in own_nodes(m, func):
        if isinstance(node, ast.Assign) and _makes_array(m, node.value):
            found.update(n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)) and _makes_array(m, node.iter):
            found.update(n.id for n in ast.walk(node.target) if isinstance(n, ast.Name))
    return found


def _indexed_update(func: ast.expr) -> bool:
    """``x.at[i].set``, ``.add``...: not ``.apply``, whose argument is a function."""
    return (
        isinstance(func, ast.Attribute)
        and func.attr in INDEXED_UPDATES
        and func.attr != "apply"
        and isinstance(func.value, ast.Subscript)
        and isinstance(func.value.value, ast.Attribute)
        and func.value.value.attr == "at"
    )
