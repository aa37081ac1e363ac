"""Verify stage 3 (in the worker): the example inputs of each function, from (in this order)
an ``--examples`` file, a ``record`` recording, or synthesis (``synth.py``).
"""

from __future__ import annotations

import importlib
import inspect
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vjp_migrate.verify.loading import load_module, locate
from vjp_migrate.verify.model import Example, ExampleCall, Examples
from vjp_migrate.verify.pairing import VjpPair, primal_of
from vjp_migrate.verify.synth import synthesize
from vjp_migrate.verify.values import Recording, UnsupportedValue, decode, read_recording


@dataclass(frozen=True)
class Inputs:
    """The examples found for one function, where they came from, and why not when none."""

    source: str  # "examples", "recorded", "synthesized", "none"
    examples: tuple[tuple[Any, ...], ...]
    note: str = ""
    broken: bool = False  # an example given for it does not fit its signature (``note`` says how)


def load_examples(path: Path) -> Examples:
    """Run an examples file and return its ``EXAMPLES`` dict (raises when malformed)."""
    module = load_module(path, "examples")
    examples = getattr(module, "EXAMPLES", None)
    if not isinstance(examples, dict):
        raise ValueError(f"{path} does not define EXAMPLES = {{'name': [args_tuple, ...]}}")
    return {str(k): [_example(a) for a in _example_list(str(k), v)] for k, v in examples.items()}


def _example_list(key: str, value: Any) -> list[Any]:
    """``EXAMPLES[key]``: a list of examples (a tuple of tuples is accepted too). A tuple of
    plain values is one example's arguments written without the list around it: an error, as
    taking each value for an example of its own would fail with a misleading message."""
    one = ExampleCall.__name__
    if isinstance(value, tuple) and all(isinstance(v, (tuple, list)) or type(v).__name__ == one for v in value):
        return list(value)
    if isinstance(value, list):
        return value
    shape = "a tuple" if isinstance(value, tuple) else f"of type {type(value).__name__}"
    raise ValueError(
        f"EXAMPLES[{key!r}] is {shape}, not a list of examples: write [(arg, ...), ...], one tuple per call"
    )


def _example(value: Any) -> Example:
    # ExampleCall is matched by name too: the examples file may have imported its own copy of
    # vjp_migrate (another install on its sys.path).
    if isinstance(value, ExampleCall) or type(value).__name__ == "ExampleCall":
        return ExampleCall(tuple(value.args), dict(value.kwargs))
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


def load_recording(path: Path) -> Recording:
    """Read a recording made by ``vjp-migrate record``."""
    return read_recording(path)


def abstract_value(rng: np.random.Generator) -> Callable[[tuple[int, ...], str], Any]:
    """Make a small random concrete value for one recorded as shape/dtype only."""

    def make(shape: tuple[int, ...], dtype: str) -> Any:
        kind = np.dtype(dtype).kind if dtype in np.sctypeDict else "f"
        if kind == "b":
            return rng.random(shape) < 0.5
        if kind in "iu":
            return rng.integers(0, 3, shape).astype(dtype)
        values = rng.standard_normal(shape) * 0.5
        if dtype in np.sctypeDict:
            return values.astype(dtype)
        import ml_dtypes

        return values.astype(getattr(ml_dtypes, dtype))

    return make


def resolver(module: types.ModuleType, module_name: str) -> Callable[[str], Any]:
    """Resolve ``module:qualname``: in the loaded BEFORE module for its own names, else by import."""

    def resolve(ref: str) -> Any:
        mod_name, _, qualname = ref.partition(":")
        target: Any = module if mod_name == module_name else importlib.import_module(mod_name)
        for part in qualname.split("."):
            target = getattr(target, part)
        return target

    return resolve


def recorded_examples(
    recording: Recording, pair: VjpPair, before_path: Path, module: types.ModuleType, seed: int
) -> tuple[tuple[Any, ...], ...]:
    """The recorded calls of ``pair`` that can be rebuilt."""
    location = locate(before_path)
    entry = recording.for_function(pair.name, [before_path], [location.module_name])
    if entry is None:
        return ()
    rng = np.random.default_rng(seed)
    resolve = resolver(module, location.module_name)
    out = []
    for call in entry.calls:
        try:
            out.append(tuple(decode(spec, recording.arrays, resolve, abstract_value(rng)) for spec in call))
        except (UnsupportedValue, ImportError, AttributeError):
            continue
    return tuple(out)


def with_defaults(pair: VjpPair, args: tuple[Any, ...]) -> tuple[Any, ...]:
    """``args`` completed with the defaults of the positional parameters it leaves out, so
    every position (a migrated argument with a default, say) has a value to trace."""
    try:
        parameters = list(inspect.signature(primal_of(pair.before)).parameters.values())
    except (TypeError, ValueError):
        return args
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    missing = positional[len(args) :]
    if not missing or any(p.default is inspect.Parameter.empty for p in missing):
        return args  # too few arguments: BEFORE's own error will say so
    return (*args, *(p.default for p in missing))


def positional(pair: VjpPair, example: Example) -> tuple[Any, ...]:
    """The example as positional arguments: keywords bound to their positions through the
    primal's signature, defaults filled in, as ``jax.custom_vjp`` resolves a keyword call
    (TypeError when they do not fit, or name a keyword-only parameter, which it cannot pass)."""
    if not isinstance(example, ExampleCall):
        return with_defaults(pair, example)
    if not example.kwargs:
        return with_defaults(pair, example.args)
    try:
        signature = inspect.signature(primal_of(pair.before))
    except (TypeError, ValueError) as error:
        raise TypeError(f"its signature cannot be read to place keyword arguments ({error})") from None
    bound = signature.bind(*example.args, **example.kwargs)
    bound.apply_defaults()
    if keyword_only := [name for name in bound.kwargs if name in example.kwargs]:
        raise TypeError(f"keyword-only parameters cannot be passed to a custom_vjp: {', '.join(keyword_only)}")
    return tuple(bound.args)


def _given(pair: VjpPair, given: list[Example]) -> Inputs:
    """The examples file's examples of ``pair``; broken when one does not fit its signature."""
    if not given:
        return Inputs("none", (), "the examples file lists no example for it")
    bound = []
    for index, example in enumerate(given):
        try:
            bound.append(positional(pair, example))
        except TypeError as error:
            return Inputs(
                "examples", (), f"example #{index} does not fit the signature of `{pair.name}`: {error}", True
            )
    return Inputs("examples", tuple(bound))


def gather(
    pair: VjpPair,
    module: types.ModuleType,
    before_path: Path,
    source: str,
    examples: Examples | None,
    recording: Recording | None,
    runs: Callable[[tuple[Any, ...]], str | None],
    seed: int,
) -> Inputs:
    """Pick the inputs for one function; ``runs`` says why a candidate fails on BEFORE (or None)."""
    if examples is not None and pair.name in examples:
        return _given(pair, examples[pair.name])
    if recording is not None:
        found = recorded_examples(recording, pair, before_path, module, seed)
        if found:
            return Inputs("recorded", tuple(with_defaults(pair, args) for args in found))
    candidates, note = synthesize(pair, module, source, seed)
    working, failures = [], []
    for candidate in candidates:
        problem = runs(candidate)
        if problem is None:
            working.append(candidate)
        else:
            failures.append(problem)
    if working:
        return Inputs("synthesized", tuple(working))
    if failures:
        note = f"synthesized inputs do not run: {failures[0]}"
    return Inputs("none", (), note)
