"""Verify: the recorded-inputs file format (arrays in .npz, structure in JSON, no pickle).

Written by the recorder bootstrap (``_bootstrap/_vjp_migrate_recorder.py``, format version 1),
merged by ``record.py`` and decoded here into plain Python values for the worker. Loading a
recording never runs code: ``np.load(..., allow_pickle=False)`` and ``json.loads`` only;
callables are stored as ``module:qualname`` references that the caller resolves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

FORMAT = "vjp-migrate-inputs"
VERSION = 1
STRUCTURE_KEY = "__structure__"


class UnsupportedValue(Exception):
    """A recorded value that cannot be rebuilt (an opaque object, a local function)."""


@dataclass(frozen=True)
class RecordedFunction:
    """The calls recorded for one custom_vjp function."""

    module: str
    qualname: str
    file: str
    calls: tuple[list[Any], ...]  # each call: a list of argument specs


@dataclass(frozen=True)
class Recording:
    """A whole recording: the functions and the arrays their specs point to."""

    functions: tuple[RecordedFunction, ...]
    arrays: dict[str, NDArray[Any]]

    def for_function(self, qualname: str, files: Iterable[Path], modules: Iterable[str]) -> RecordedFunction | None:
        """The entry for ``qualname`` recorded from one of ``files`` (or else ``modules``)."""
        wanted_files = {str(Path(f).resolve()) for f in files}
        wanted_modules = set(modules)
        by_module = None
        for entry in self.functions:
            if entry.qualname != qualname:
                continue
            if entry.file and str(Path(entry.file).resolve()) in wanted_files:
                return entry
            if entry.module in wanted_modules:
                by_module = entry
        return by_module


def read_recording(path: Path) -> Recording:
    """Load a recording file (raises ValueError when it is not one)."""
    with np.load(path, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    raw = arrays.pop(STRUCTURE_KEY, None)
    if raw is None:
        raise ValueError(f"{path} is not a vjp-migrate recording (no {STRUCTURE_KEY} entry)")
    structure = json.loads(raw.tobytes().decode("utf-8"))
    if structure.get("format") != FORMAT or structure.get("version") != VERSION:
        raise ValueError(
            f"{path}: unsupported recording format {structure.get('format')!r} v{structure.get('version')}"
        )
    functions = tuple(
        RecordedFunction(f["module"], f["qualname"], f.get("file", ""), tuple(c["args"] for c in f["calls"]))
        for f in structure["functions"]
    )
    return Recording(functions, arrays)


def merge_parts(parts: Iterable[Path], out: Path, max_calls: int) -> int:
    """Merge the per-process part files into ``out``; returns the number of calls kept."""
    merged: dict[tuple[str, str, str], list[list[Any]]] = {}
    seen: dict[tuple[str, str, str], set[str]] = {}
    arrays: dict[str, NDArray[Any]] = {}
    for part in sorted(parts):
        recording = read_recording(part)
        for entry in recording.functions:
            key = (entry.module, entry.qualname, entry.file)
            calls = merged.setdefault(key, [])
            for call in entry.calls:
                renamed = _renumber(call, recording.arrays, arrays)
                fingerprint = _fingerprint(renamed, arrays)
                if len(calls) >= max_calls or fingerprint in seen.setdefault(key, set()):
                    continue
                seen[key].add(fingerprint)
                calls.append(renamed)
    used = _used_keys(merged.values())
    arrays = {k: v for k, v in arrays.items() if k in used}
    functions = [
        {"module": m, "qualname": q, "file": f, "calls": [{"args": c} for c in calls]}
        for (m, q, f), calls in merged.items()
    ]
    structure = json.dumps({"format": FORMAT, "version": VERSION, "functions": functions})
    payload: dict[str, Any] = dict(arrays)
    payload[STRUCTURE_KEY] = np.frombuffer(structure.encode("utf-8"), dtype=np.uint8)
    with open(out, "wb") as handle:  # np.savez on a path would append ".npz"
        np.savez(handle, **payload)
    return sum(len(c) for c in merged.values())


def _renumber(spec: Any, source: dict[str, NDArray[Any]], target: dict[str, NDArray[Any]]) -> Any:
    if isinstance(spec, dict):
        out = {k: _renumber(v, source, target) for k, v in spec.items()}
        if spec.get("t") == "array":
            key = f"a{len(target)}"
            target[key] = source[spec["key"]]
            out["key"] = key
        return out
    if isinstance(spec, list):
        return [_renumber(v, source, target) for v in spec]
    return spec


def _fingerprint(spec: Any, arrays: dict[str, NDArray[Any]]) -> str:
    def strip(s: Any) -> Any:
        if isinstance(s, dict):
            if s.get("t") == "array":
                a = arrays[s["key"]]
                return [s["dtype"], list(a.shape), a.tobytes().hex()[:4096]]
            return {k: strip(v) for k, v in s.items()}
        if isinstance(s, list):
            return [strip(v) for v in s]
        return s

    return json.dumps(strip(spec), sort_keys=True, default=str)


def _used_keys(calls_lists: Iterable[list[list[Any]]]) -> set[str]:
    used: set[str] = set()

    def walk(s: Any) -> None:
        if isinstance(s, dict):
            if s.get("t") == "array":
                used.add(s["key"])
            for v in s.values():
                walk(v)
        elif isinstance(s, list):
            for v in s:
                walk(v)

    for calls in calls_lists:
        walk(calls)
    return used


def decode(
    spec: Any,
    arrays: dict[str, NDArray[Any]],
    resolve: Callable[[str], Any],
    abstract: Callable[[tuple[int, ...], str], Any],
) -> Any:
    """Rebuild a value; ``resolve`` turns ``module:qualname`` into an object and ``abstract``
    makes a concrete value for a traced one recorded by shape and dtype."""
    kind = spec["t"]
    if kind == "none":
        return None
    if kind == "py":
        return spec["v"]
    if kind == "complex":
        return complex(spec["re"], spec["im"])
    if kind == "array":
        array = arrays[spec["key"]]
        if str(array.dtype) != spec["dtype"]:
            import ml_dtypes  # installed with jax; for bfloat16 and friends stored as raw bits

            array = array.view(getattr(ml_dtypes, spec["dtype"]))
        return array
    if kind == "abstract":
        return abstract(tuple(spec["shape"]), spec["dtype"])
    if kind in ("tuple", "list"):
        items = [decode(s, arrays, resolve, abstract) for s in spec["items"]]
        return tuple(items) if kind == "tuple" else items
    if kind == "dict":
        return {decode(k, arrays, resolve, abstract): decode(v, arrays, resolve, abstract) for k, v in spec["items"]}
    if kind == "ref":
        return resolve(spec["ref"])
    if kind == "partial":
        import functools

        func = decode(spec["func"], arrays, resolve, abstract)
        args = [decode(s, arrays, resolve, abstract) for s in spec["args"]]
        kwargs = {k: decode(s, arrays, resolve, abstract) for k, s in spec["kwargs"].items()}
        return functools.partial(func, *args, **kwargs)
    raise UnsupportedValue(spec.get("repr", kind))
