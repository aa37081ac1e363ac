"""Verify stage 2 (in the worker): find the custom_vjp functions of BEFORE and AFTER and pair
the ones that differ.

A custom_vjp object is recognised by its public class (``jax.custom_vjp``) or, when JAX's
``jax_custom_vjp3`` configuration built a different class, by its shape: a callable with
``defvjp`` and ``nondiff_argnums`` (or ``static_argnums``).
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import types
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class VjpPair:
    """One function in both versions, with the argument positions that matter."""

    name: str  # "fn" or "Class.method"
    before: Any
    after: Any
    params: tuple[str, ...]  # the primal's positional parameter names
    before_nondiff: tuple[int, ...]
    after_nondiff: tuple[int, ...]

    @property
    def moved(self) -> tuple[int, ...]:
        """Positions that left nondiff_argnums: the migrated array arguments."""
        return tuple(p for p in self.before_nondiff if p not in self.after_nondiff)

    def differentiable(self, nargs: int) -> tuple[int, ...]:
        """Positions differentiable in BEFORE (the ones whose cotangents must match)."""
        return tuple(i for i in range(nargs) if i not in self.before_nondiff)

    def arg_label(self, position: int) -> str:
        """'argument x (position 2)'."""
        if position < len(self.params):
            return f"argument {self.params[position]} (position {position})"
        return f"argument at position {position}"


def is_custom_vjp(obj: Any, custom_vjp_class: type) -> bool:
    """True for jax.custom_vjp objects (and custom_vjp3 ones under jax_custom_vjp3)."""
    if isinstance(obj, custom_vjp_class):
        return True
    return callable(obj) and hasattr(obj, "defvjp") and (hasattr(obj, "static_argnums") and hasattr(obj, "f"))


def nondiff_of(obj: Any) -> tuple[int, ...]:
    """The sorted nondiff positions of a custom_vjp object."""
    positions: Iterable[int] | None = getattr(obj, "nondiff_argnums", None)
    if positions is None:
        positions = getattr(obj, "static_argnums", ())
    return tuple(sorted(positions or ()))


def primal_of(obj: Any) -> Callable[..., Any]:
    """The decorated Python function."""
    primal: Callable[..., Any] = getattr(obj, "fun", None) or getattr(obj, "f", None) or obj
    return primal


def find_custom_vjps(module: types.ModuleType, custom_vjp_class: type, factories: Iterable[str] = ()) -> dict[str, Any]:
    """Module-level custom_vjp objects by name, ``Class.method`` ones in the module's classes,
    ``function.attr`` ones stored on the module's functions, and those returned by the
    zero-argument factories named ``"make_op()"`` (raises what they raise)."""
    found: dict[str, Any] = {}
    for factory in factories:
        target: Any = module
        for part in factory[: -len("()")].split("."):
            target = getattr(target, part, None)
        if callable(target):
            made = target()
            if is_custom_vjp(made, custom_vjp_class):
                found[factory] = made
    for name, value in vars(module).items():
        if is_custom_vjp(value, custom_vjp_class):
            found[name] = value
        elif inspect.isfunction(value) and value.__module__ == module.__name__:
            for attr, member in vars(value).items():  # `simulate.vjp = jax.custom_vjp(simulate, ...)`
                if is_custom_vjp(member, custom_vjp_class):
                    found[f"{name}.{attr}"] = member
        elif inspect.isclass(value) and value.__module__ == module.__name__:
            for attr, member in _class_members(value):
                if is_custom_vjp(member, custom_vjp_class):
                    found[f"{name}.{attr}"] = member
    return found


def _class_members(cls: type) -> Iterator[tuple[str, Any]]:
    for attr, member in vars(cls).items():
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        yield attr, member


def _code_key(fn: Any, seen: set[int] | None = None) -> Any:
    """What ``fn`` computes as far as pairing can tell: its code, and the values of the module
    globals, defaults and closure cells it reads (a constant or helper AFTER changed makes an
    untouched rule compute something else)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        return repr(fn)
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return "<recursion>"
    seen.add(id(fn))
    namespace: dict[str, Any] = getattr(fn, "__globals__", {})
    read = {name: _value_key(namespace[name], seen) for name in sorted(_names(code)) if name in namespace}
    cells = tuple(_value_key(_cell(c), seen) for c in getattr(fn, "__closure__", None) or ())
    defaults = tuple(_value_key(d, seen) for d in getattr(fn, "__defaults__", None) or ())
    return (*_code_shape(code), read, cells, defaults)


def _code_shape(code: types.CodeType) -> tuple[Any, ...]:
    """``code`` as it computes, the functions nested in it too (a nested code object's repr
    holds its address, which differs between any two loads)."""
    consts = tuple(_code_shape(c) if isinstance(c, types.CodeType) else repr(c) for c in code.co_consts)
    return (code.co_code, code.co_names, code.co_varnames, consts)


def _names(code: types.CodeType) -> set[str]:
    """The global names ``code`` and the functions nested in it may read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names(const)
    return names


def _cell(cell: Any) -> Any:
    try:
        return cell.cell_contents
    except ValueError:  # an empty cell
        return None


def _value_key(value: Any, seen: set[int]) -> Any:
    """A comparable stand-in for a value a rule reads: code for the module's own functions (and
    custom_vjp objects), contents for arrays, names for modules and classes, repr otherwise."""
    if isinstance(value, types.ModuleType):
        return ("module", value.__name__)
    if inspect.isclass(value):
        return ("class", value.__module__, value.__qualname__)
    if inspect.isfunction(value):
        return _code_key(value, seen)
    if hasattr(value, "defvjp") and callable(value):
        return _rules_key(value, seen)
    if isinstance(value, functools.partial):
        return ("partial", _value_key(value.func, seen), _value_key(value.args, seen), _value_key(value.keywords, seen))
    if callable(value) and inspect.isfunction(getattr(value, "__wrapped__", None)):  # jax.jit(f), wraps
        return ("wrapped", type(value).__qualname__, _code_key(value.__wrapped__, seen))
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "tobytes"):
        try:
            return ("array", str(value.dtype), tuple(value.shape), hashlib.sha256(value.tobytes()).hexdigest())
        except Exception:  # a traced or deleted array: judged by its repr below
            pass
    if isinstance(value, (list, tuple)) and id(value) not in seen:
        seen.add(id(value))
        return (type(value).__name__, tuple(_value_key(v, seen) for v in value))
    if isinstance(value, dict) and id(value) not in seen:
        seen.add(id(value))
        return ("dict", tuple((repr(k), _value_key(v, seen)) for k, v in value.items()))
    return repr(value)


def _rules_key(obj: Any, seen: set[int] | None = None) -> tuple[Any, ...]:
    seen = set() if seen is None else seen
    return (
        nondiff_of(obj),
        _code_key(primal_of(obj), seen),
        _code_key(getattr(obj, "fwd", None), seen),
        _code_key(getattr(obj, "bwd", None), seen),
    )


def pair_functions(
    before: dict[str, Any], after: dict[str, Any], every: bool = False
) -> tuple[list[VjpPair], list[str], list[str]]:
    """The pairs that differ (``every``: all pairs, for a module whose imports changed),
    warnings for functions present in AFTER only, and the names of those in BEFORE only."""
    pairs: list[VjpPair] = []
    warnings: list[str] = []
    missing: list[str] = []
    for name in sorted(set(before) | set(after)):
        if name not in after:
            missing.append(name)
            continue
        if name not in before:
            warnings.append(f"{name}: a custom_vjp in AFTER only; not verified")
            continue
        b, a = before[name], after[name]
        if not every and _rules_key(b) == _rules_key(a):
            continue
        pairs.append(VjpPair(name, b, a, _params(primal_of(b)), nondiff_of(b), nondiff_of(a)))
    return pairs, warnings, missing


def _params(fn: Callable[..., Any]) -> tuple[str, ...]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return ()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return tuple(p.name for p in signature.parameters.values() if p.kind in kinds)
