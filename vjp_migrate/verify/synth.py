"""Verify stage 3b (in the worker): synthesize inputs when there are no examples.

From the primal's signature (annotations, defaults), the nondiff positions and the module's
own call sites: static (kept) arguments take a default or a value the module itself passes
at a call site (a literal, a module-level name, a lambda) — never a guessed callable; array
arguments become small float32 values (scalars first, then small vectors), or int32 when
annotated ``int``. The last candidate spreads each float argument over both signs, zero and
magnitudes above 1, so a rule that branches on them (``jnp.where(x < 0, ...)``) is reached.
"""

from __future__ import annotations

import ast
import inspect
import types
from typing import Any

import numpy as np

from vjp_migrate.verify.pairing import VjpPair, primal_of

_MISSING = object()
_SHAPES: tuple[tuple[int, ...], ...] = ((), (3,))
# The last candidate's float values, rotated by position so two arguments differ. Not sorted:
# a rising run and a falling one give three neighbouring arguments both orders somewhere
# (``clip(lo, x, hi)`` gets an x between its bounds; a sorted spread, rotated, never does).
SPREAD = (-2.5, -0.75, 0.5, 3.0, 1.25, 0.0)


def call_site_values(source: str, name: str, module: types.ModuleType) -> dict[int, list[Any]]:
    """Values passed positionally to ``name`` at call sites in ``source``, by position."""
    short = name.rpartition(".")[2]
    found: dict[int, list[Any]] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return found
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
        if called != short:
            continue
        for position, arg in enumerate(node.args):
            if isinstance(arg, ast.Starred):
                break
            value = _static_value(arg, module)
            if value is not _MISSING:
                found.setdefault(position, []).append(value)
    return found


def _static_value(node: ast.expr, module: types.ModuleType) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    if isinstance(node, (ast.Name, ast.Attribute, ast.Lambda)):
        try:
            code = compile(ast.Expression(body=node), "<call site>", "eval")
            return eval(code, vars(module))
        except Exception:
            return _MISSING
    return _MISSING


def synthesize(pair: VjpPair, module: types.ModuleType, source: str, seed: int) -> tuple[list[tuple[Any, ...]], str]:
    """Candidate argument tuples, most likely first; and a note when there can be none."""
    fn = primal_of(pair.before)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return [], "no signature to synthesize from"
    params = list(signature.parameters.values())
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        return [], "variadic or keyword-only parameters"
    sites = call_site_values(source, pair.name, module)
    kept = set(pair.after_nondiff)
    statics: dict[int, Any] = {}
    for position, param in enumerate(params):
        if position not in kept:
            continue
        value = _static_for(param, sites.get(position, []))
        if value is _MISSING:
            return [], f"no value for static argument {param.name!r} (position {position}); pass --examples"
        statics[position] = value
    rng = np.random.default_rng(seed)
    candidates = []
    for shape in _SHAPES:
        args = []
        for position, param in enumerate(params):
            if position in statics:
                args.append(statics[position])
            else:
                args.append(_array_for(param, sites.get(position, []), shape, rng))
        candidates.append(tuple(args))
    spread = []
    for position, param in enumerate(params):
        if position in statics:
            spread.append(statics[position])
        elif _annotation_name(param) == "int":
            spread.append(rng.integers(1, 4, (len(SPREAD),)).astype(np.int32))
        else:
            spread.append(np.roll(np.asarray(SPREAD, dtype=np.float32), position))
    candidates.append(tuple(spread))
    return candidates, ""


def _static_for(param: inspect.Parameter, seen: list[Any]) -> Any:
    if seen:
        return seen[0]
    if param.default is not inspect.Parameter.empty:
        return param.default
    annotation = _annotation_name(param)
    if annotation == "int":
        return 1
    if annotation == "bool":
        return False
    return _MISSING


def _array_for(param: inspect.Parameter, seen: list[Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    numbers = [v for v in seen if isinstance(v, (int, float)) and not isinstance(v, bool)]
    default = param.default if param.default is not inspect.Parameter.empty else None
    if not numbers and isinstance(default, (int, float)) and not isinstance(default, bool):
        numbers = [default]
    dtype = np.int32 if _annotation_name(param) == "int" else np.float32
    if numbers:
        return np.full(shape, numbers[0], dtype=dtype)
    if dtype is np.int32:
        return rng.integers(1, 4, shape).astype(dtype)
    return (rng.standard_normal(shape) * 0.5 + 0.1).astype(dtype)


def _annotation_name(param: inspect.Parameter) -> str:
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return ""
    if isinstance(annotation, str):
        return annotation.strip()
    return getattr(annotation, "__name__", str(annotation))
