"""Screen, step 6: static evidence classify surely finds too (static evidence wins there). Every
rule here is an under-approximation of classify: only exact, unambiguous cases."""

from __future__ import annotations

import ast

from vjp_migrate.screen.array_use import (
    STATIC_KEYWORDS,
    call_site_may_pass_annotated,
    call_site_may_pass_array,
    root_of,
)
from vjp_migrate.screen.jit import call_site_may_pass_traced, jit_static
from vjp_migrate.screen.names import annotation_parts, exactly, positional_params, qualified, segment
from vjp_migrate.screen.sites import Site, call_value, defvjp_calls, nondiff_options, rule_arg
from vjp_migrate.screen.tree import Doubt, Func, Module, body_nodes, dotted, own_nodes
from vjp_migrate.vocabulary import (
    ARRAY_ANNOTATION_NAMES,
    ARRAY_ANNOTATIONS,
    CONTAINER_ANNOTATION_NAMES,
    HOST_ARRAY_ANNOTATIONS,
    JAX_TRANSFORMS,
    METADATA_ATTRIBUTES,
    METADATA_FUNCTIONS,
    SCALAR_ANNOTATION_NAMES,
    STATIC_ANNOTATION_NAMES,
    TYPE_TESTS,
    is_metadata_function,
)


class StaticProof:
    """Static evidence that classify surely finds too (static evidence wins there).

    Every rule here is an under-approximation of classify: only exact, unambiguous cases.
    """

    def __init__(self, m: Module, site: Site) -> None:
        self.m = m
        self.site = site
        self.top = m.top_defs
        self.helpers: dict[str, Func] = {}  # classify.module_facts.module_helpers: direct module-level defs
        counts: dict[str, int] = {}
        for stmt in m.tree.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.helpers[stmt.name] = stmt
                counts[stmt.name] = counts.get(stmt.name, 0) + 1
        self.helpers = {name: f for name, f in self.helpers.items() if counts[name] == 1}
        self.primal = self._exact_primal()
        self.rules = self._resolved_rules()
        self.calls: list[tuple[Func, ast.Call]] | None = None
        self.passing: dict[tuple[int, str], bool] = {}  # call_site_may_pass_array, once asked

    def _single_top_def(self, name: str) -> Func | None:
        found = self.m.defs.get(name, [])
        return found[0] if len(found) == 1 and found[0] in self.top else None

    def _exact_primal(self) -> Func | None:
        """The primal the sites stage surely picks: the site is in the module scope and so are all its defs."""
        if id(self.site.call) in self.m.decorated:
            (primal,) = self.site.primals
            return primal if primal in self.top else None
        if not self._assigned_at_top() or not all(p in self.top for p in self.site.primals):
            return None
        ordered = [s for s in self.m.top if s in self.site.primals]
        return ordered[-1] if ordered else None

    def _assigned_at_top(self) -> bool:
        """The call form is the value of one assignment in the module scope."""
        owner = [
            s
            for s in self.m.top
            if isinstance(s, ast.Assign)
            and id(s.value) in self.m.assigned
            and self.site.call in (s.value, getattr(s.value, "func", None))
        ]
        return len(owner) == 1

    def _resolved_rules(self) -> tuple[Func | None, Func | None]:
        """fwd and bwd when the sites stage surely resolves them to these defs."""
        primal = self.primal
        if self.site.unseen:
            if not self._assigned_at_top():
                return None, None
            owners: frozenset[str] = self.site.names
        elif primal is None:
            return None, None
        else:
            owners = (
                frozenset({primal.name}) if id(self.site.call) in self.m.decorated else self.site.names - {primal.name}
            )
        calls = [
            s.value
            for s in self.m.top
            if isinstance(s, ast.Expr)
            and isinstance(s.value, ast.Call)
            and isinstance(s.value.func, ast.Attribute)
            and s.value.func.attr == "defvjp"
            and isinstance(s.value.func.value, ast.Name)
            and s.value.func.value.id in owners
        ]
        every = list(defvjp_calls(self.m, self.site))
        if len(owners) != 1 or len(calls) != 1 or len(every) != 1:
            return None, None
        fwd, bwd = rule_arg(calls[0], 0, "fwd"), rule_arg(calls[0], 1, "bwd")
        return (
            self._single_top_def(fwd.id) if isinstance(fwd, ast.Name) else None,
            self._single_top_def(bwd.id) if isinstance(bwd, ast.Name) else None,
        )

    def signatures(self) -> tuple[Func, ...]:
        """The defs whose parameters the site's positions index: the primal, or fwd for an unseen
        primal (sites.finder), which must then be exactly the one the sites stage reads."""
        if not self.site.unseen:
            return (self.primal,) if self.primal else self.site.primals
        fwd, bwd = self.rules
        names = any(keyword == "nondiff_argnames" for keyword, _ in nondiff_options(self.m, self.site.call))
        if fwd is None or bwd is None or fwd.args.vararg is not None or names:
            raise Doubt  # an unresolved rule, or names the pipeline reports as unreadable
        return (fwd,)

    def scalar(self, primal: Func, index: int, order: int) -> bool:
        """classify surely sees a Python-number annotation (then only an array passed at a call site
        makes the argument ARRAY)."""
        if primal is not self.primal or "annotated" in self.m.text:  # see classify._decide
            return False
        fwd, bwd = self.rules
        for func, at in ((primal, index), (fwd, index), (bwd, order)):
            params = positional_params(func) if func is not None else []
            if 0 <= at < len(params) and self._scalar_annotation(params[at].annotation):
                return True
        return False

    def _scalar_annotation(self, annotation: ast.expr | None) -> bool:
        parts = [annotation]
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            parts = [annotation.left, annotation.right]
        numbers = [p for p in parts if isinstance(p, ast.Name) and p.id in ("float", "int", "complex")]
        nones = [p for p in parts if isinstance(p, ast.Constant) and p.value is None]
        if not numbers or len(numbers) + len(nones) != len(parts):
            return False
        return not any(p.id in self.m.aliases or p.id in self.m.shadowed for p in numbers)

    def static(self, primal: Func, index: int, order: int) -> bool:
        if not self.site.unseen and (index in jit_static(self.m, primal) or self._call_site(primal, index)):
            return True  # (fwd stands in for an unseen primal: its jit and calls say nothing)
        fwd, bwd = self.rules if primal is self.primal or self.site.unseen else (None, None)
        roles = [(primal, index), (fwd, index), (bwd, order)]
        return any(func is not None and self._param(func, at, 0) for func, at in roles)

    def _param(self, func: Func, index: int, depth: int) -> bool:
        params = positional_params(func)
        if not 0 <= index < len(params):
            return False
        param = params[index]
        defaults = [None] * (len(params) - len(func.args.defaults)) + list(func.args.defaults)
        default = defaults[index]
        if isinstance(default, ast.Lambda) or (
            isinstance(default, ast.Constant)
            and type(default.value) in (str, bool)
            and not isinstance(default, ast.JoinedStr)
        ):
            return True
        if param.annotation is not None and self._static_annotation(param.annotation):
            return True
        return self._body(func, param.arg, depth)

    def _static_annotation(self, annotation: ast.expr) -> bool:
        """classify.annotations.annotation_evidence surely finds a static name (`bool`, `jnp.dtype`,
        `Callable[...]`, `tuple[int, ...]`) before anything else it decides on, reading the parts
        in its order: `Callable[[Array], Array] | None` is static, `Sequence[jax.Array]` is not."""
        parts: list[ast.expr] = []
        complete = annotation_parts(self.m, annotation, parts)  # else only the parts before a doubt
        for at, part in enumerate(parts):
            name = dotted(part) if isinstance(part, (ast.Name, ast.Attribute)) else None
            if name is None:
                continue  # `[Array]`, `...`, `None`: classify reads no name there and goes on
            last = name.rsplit(".", 1)[-1]
            if last in CONTAINER_ANNOTATION_NAMES and (
                not complete or any(self._may_be_array(p) for p in parts[at + 1 :])
            ):
                return False  # classify skips the container when an array follows
            if self._may_be_array(part) or qualified(self.m, part) & HOST_ARRAY_ANNOTATIONS:
                return False
            if last in SCALAR_ANNOTATION_NAMES:
                return False  # a Python number (or more, which classify reads on): no proof here
            if last in STATIC_ANNOTATION_NAMES:
                return True
            if last in ("tuple", "Tuple") and "int" in segment(self.m, annotation):  # classify reads its text
                return True
        return False

    def _may_be_array(self, part: ast.expr) -> bool:
        name = dotted(part) if isinstance(part, (ast.Name, ast.Attribute)) else None
        return name is not None and (
            name.rsplit(".", 1)[-1] in ARRAY_ANNOTATION_NAMES or bool(qualified(self.m, part) & ARRAY_ANNOTATIONS)
        )

    def _body(self, func: Func, name: str, depth: int) -> bool:
        # Nested functions, classes and lambdas are left out: classify may skip them (when
        # they rebind the name), so the screen does too.
        nodes = own_nodes(self.m, func)
        if any(isinstance(node, (ast.If, ast.IfExp)) and _type_test_in(self.m, node.test) for node in nodes):
            return False  # classify: a static use on a branch a type test picks proves nothing alone
        for node in nodes:
            if isinstance(node, (ast.If, ast.While, ast.IfExp)) and _mentions(self.m, node.test, name):
                return True
            if isinstance(node, ast.Call) and self._call(func, node, name, depth):
                return True
            if isinstance(node, ast.Subscript) and _literal_index(node, name):
                return True
        return False

    def _call(self, func: Func, call: ast.Call, name: str, depth: int) -> bool:
        if isinstance(call.func, ast.Name) and call.func.id == name:
            return True  # called as a function
        first = call.args[0] if call.args else None
        if isinstance(first, ast.Name) and first.id == name and exactly(self.m, call.func, JAX_TRANSFORMS):
            return True  # the function of `jax.vjp(f, ...)`, `jax.vmap(f)`...
        for keyword in call.keywords:
            root = root_of(keyword.value)
            if keyword.arg in STATIC_KEYWORDS and isinstance(root, ast.Name) and root.id == name:
                return True
        helper = self.helpers.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if helper is None or depth >= 2 or _may_rebind(self.m, func, helper.name):
            return False  # classify follows three deep; a local of the name is another function
        params = [p.arg for p in positional_params(helper)]
        for position, arg in enumerate(call.args):
            if isinstance(arg, ast.Starred):
                break
            if isinstance(arg, ast.Name) and arg.id == name and self._param(helper, position, depth + 1):
                return True
        for keyword in call.keywords:
            value = keyword.value
            if isinstance(value, ast.Name) and value.id == name and keyword.arg in params:  # noqa: SIM102
                if self._param(helper, params.index(keyword.arg), depth + 1):
                    return True
        return False

    def passes_array(self, index: int, name: str) -> bool:
        if (index, name) not in self.passing:
            self.passing[index, name] = call_site_may_pass_array(self.m, self.site, index, name)
        return self.passing[index, name]

    def _call_site(self, primal: Func, index: int) -> bool:
        """A call of the site passes a parameter its caller's stacked jax.jit marks static, and
        no call may pass an array (classify: one caller's static value proves nothing then)."""
        name = positional_params(primal)[index].arg
        if (
            self.passes_array(index, name)
            or call_site_may_pass_traced(self.m, self.site, index, name)
            or call_site_may_pass_annotated(self.m, self.site, index, name)
        ):
            return False
        if self.calls is None:
            names = {primal.name} if id(self.site.call) in self.m.decorated else self.site.names - {primal.name}
            self.calls = []
            for call in self.m.calls:
                caller = self.m.caller[id(call)]
                if caller is not None and isinstance(call.func, ast.Name) and call.func.id in names:
                    self.calls.append((caller, call))
        for caller, call in self.calls:
            caller_params = [p.arg for p in positional_params(caller)]
            value = call_value(call, index, name)
            if (
                isinstance(value, ast.Name)
                and value.id in caller_params
                and caller_params.index(value.id) in jit_static(self.m, caller)
                and not _may_rebind(self.m, caller, value.id)
            ):
                return True
        return False


def _literal_index(node: ast.Subscript, name: str) -> bool:
    """``{1: a, 2: b}[name]``, ``(a, b)[name]``: the key of a dict literal, the index of a tuple or
    list literal (classify: hashing.hashing_subscript, containers.py), a concrete value."""
    index = node.slice
    return isinstance(node.value, (ast.Dict, ast.Tuple, ast.List)) and isinstance(index, ast.Name) and index.id == name


def _may_rebind(m: Module, func: Func, name: str) -> bool:
    """Anything in ``func`` (nested scopes too) may bind ``name`` again: then the value passed on
    may be a Tracer made from the jit-static parameter (`scale = scale / jnp.std(x)`)."""
    own = {id(p) for p in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    return any(_bound_name(node) == name for node in body_nodes(m, func) if id(node) not in own)


def _bound_name(node: ast.AST) -> str | None:
    """The name ``node`` binds, if any (a store or del, a def or class, a parameter, an import,
    an ``except ... as``, a match capture)."""
    if isinstance(node, ast.Name):
        return None if isinstance(node.ctx, ast.Load) else node.id
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)):
        return node.name
    if isinstance(node, ast.arg):
        return node.arg
    if isinstance(node, ast.alias):
        return node.asname or node.name.split(".")[0]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name
    if isinstance(node, ast.MatchMapping):
        return node.rest
    return None


def _mentions(m: Module, test: ast.expr, name: str) -> bool:
    stack: list[ast.AST] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            continue  # `x is None` is blanked out by classify
        if isinstance(node, ast.Compare) and _key_lookup(node):
            continue  # `"b" in params` reads keys only (classify.expressions.key_lookup)
        if isinstance(node, ast.Attribute) and node.attr in METADATA_ATTRIBUTES:
            continue  # `x.shape`: classify skips it when rooted at a name; skipping more only loses proofs
        if isinstance(node, ast.Call) and _may_be_metadata_function(m, node.func):
            continue  # `len(x)`, `jnp.shape(x)`: likewise
        if isinstance(node, ast.Call) and _may_be_type_test(m, node.func):
            continue  # `isinstance(x, list)`: a Tracer answers it too, classify reads no value there
        if isinstance(node, ast.Name) and node.id == name:
            return True
        stack.extend(ast.iter_child_nodes(node))
    return False


def _key_lookup(node: ast.Compare) -> bool:
    left = node.left
    string = isinstance(left, ast.JoinedStr) or (isinstance(left, ast.Constant) and isinstance(left.value, str))
    return string and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn))


_TYPE_TEST_NAMES = frozenset(q.rsplit(".", 1)[-1] for q in TYPE_TESTS)


def _may_be_type_test(m: Module, func: ast.expr) -> bool:
    """Whether classify may resolve ``func`` to one of ``vocabulary.TYPE_TESTS``."""
    return (dotted(func) or "").rsplit(".", 1)[-1] in _TYPE_TEST_NAMES or bool(qualified(m, func) & TYPE_TESTS)


def _type_test_in(m: Module, test: ast.expr) -> bool:
    """Whether ``test`` may hold a type test of anything (an alias of the argument too)."""
    return any(isinstance(node, ast.Call) and _may_be_type_test(m, node.func) for node in ast.walk(test))


def _may_be_metadata_function(m: Module, func: ast.expr) -> bool:
    """Whether classify may resolve ``func`` to ``len`` or a ``jnp``/``np`` metadata function."""
    last = (dotted(func) or "").rsplit(".", 1)[-1]
    return last == "len" or last in METADATA_FUNCTIONS or any(is_metadata_function(q) for q in qualified(m, func))
