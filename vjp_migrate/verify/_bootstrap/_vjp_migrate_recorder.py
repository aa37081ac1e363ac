"""vjp-migrate recorder: captures the arguments every ``jax.custom_vjp`` function receives.

Self-contained on purpose (numpy and the standard library only): it runs inside the user's
own command, whose interpreter may not have vjp-migrate's dependencies. The format it writes
is read by ``vjp_migrate.verify.values``; keep the two in step (format version 1).

Each process writes ``part-<pid>.npz`` into ``$VJP_MIGRATE_RECORD_DIR`` at exit: arrays as
``a<N>`` entries and the structure as UTF-8 JSON in the ``__structure__`` entry. No pickle.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import importlib.abc
import importlib.machinery
import inspect
import json
import os
import signal
import sys
import threading
from typing import Any

FORMAT = "vjp-migrate-inputs"
VERSION = 1
_LOCK = threading.Lock()
_CALLS: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
_SEEN: dict[tuple[str, str, str], set[str]] = {}
_ARRAYS: dict[str, Any] = {}
_RECURSION = threading.local()


def _max_calls() -> int:
    try:
        return int(os.environ.get("VJP_MIGRATE_RECORD_MAX", "5"))
    except ValueError:
        return 5


class _Encoder:
    def __init__(self, np: Any, jax: Any) -> None:
        self.np = np
        self.jax = jax
        self.arrays: dict[str, Any] = {}
        self.digest = hashlib.sha256()

    def encode(self, value: Any, depth: int = 0) -> dict[str, Any]:
        np, jax = self.np, self.jax
        if depth > 20:
            return {"t": "opaque", "repr": "too deeply nested"}
        if value is None:
            return {"t": "none"}
        if isinstance(value, (bool, int, float, str)):
            return {"t": "py", "v": value}
        if isinstance(value, complex):
            return {"t": "complex", "re": value.real, "im": value.imag}
        if isinstance(value, jax.core.Tracer):
            return {"t": "abstract", "shape": list(value.shape), "dtype": str(value.dtype)}
        if isinstance(value, (np.ndarray, np.generic, jax.Array)):
            try:
                array = np.asarray(value)
            except Exception:  # a traced value that is not a Tracer subclass we know
                return {"t": "abstract", "shape": list(value.shape), "dtype": str(value.dtype)}
            return self._array(array)
        if isinstance(value, tuple) and not hasattr(value, "_fields"):
            return {"t": "tuple", "items": [self.encode(v, depth + 1) for v in value]}
        if isinstance(value, list):
            return {"t": "list", "items": [self.encode(v, depth + 1) for v in value]}
        if isinstance(value, dict):
            return {
                "t": "dict",
                "items": [[self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in value.items()],
            }
        if isinstance(value, functools.partial):
            return {
                "t": "partial",
                "func": self.encode(value.func, depth + 1),
                "args": [self.encode(v, depth + 1) for v in value.args],
                "kwargs": {k: self.encode(v, depth + 1) for k, v in value.keywords.items()},
            }
        ref = _reference(value)
        if ref is not None:
            return {"t": "ref", "ref": ref}
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            return {"t": "abstract", "shape": list(value.shape), "dtype": str(value.dtype)}
        return {"t": "opaque", "repr": repr(value)[:200]}

    def _array(self, array: Any) -> dict[str, Any]:
        np = self.np
        dtype = str(array.dtype)
        stored = array
        if array.dtype.kind == "V" or dtype not in np.sctypeDict:
            # ml_dtypes (bfloat16, float8_*): keep the bits, remember the dtype by name.
            stored = array.view(f"uint{array.dtype.itemsize * 8}")
        self.digest.update(dtype.encode())
        self.digest.update(str(array.shape).encode())
        self.digest.update(np.ascontiguousarray(stored).tobytes())
        key = f"a{len(_ARRAYS) + len(self.arrays)}"
        self.arrays[key] = stored
        return {"t": "array", "key": key, "dtype": dtype}


def _reference(value: Any) -> str | None:
    """``module:qualname`` for a module-level object that resolves back to itself."""
    module_name = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not isinstance(module_name, str) or not isinstance(qualname, str) or "<" in qualname:
        return None
    target: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        target = getattr(target, part, None)
    if target is value or (target is not None and getattr(target, "__wrapped__", None) is value):
        return f"{module_name}:{qualname}"
    return None


def _positional(fun: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...] | None:
    if not kwargs:
        return args
    try:
        bound = inspect.signature(fun).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    bound.apply_defaults()
    if bound.kwargs:
        return None
    return tuple(bound.args)


def _record(obj: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    import jax
    import numpy as np

    fun = getattr(obj, "fun", None)
    if fun is None:
        return
    code = getattr(fun, "__code__", None)
    key = (
        str(getattr(fun, "__module__", "")),
        str(getattr(fun, "__qualname__", getattr(fun, "__name__", ""))),
        os.path.abspath(code.co_filename) if code is not None else "",
    )
    with _LOCK:
        if len(_CALLS.get(key, ())) >= _max_calls():
            return
    positional = _positional(fun, args, kwargs)
    if positional is None:
        return
    encoder = _Encoder(np, jax)
    call = {"args": [encoder.encode(a) for a in positional]}
    digest = encoder.digest.hexdigest() + json.dumps(call, sort_keys=True, default=str)
    with _LOCK:
        seen = _SEEN.setdefault(key, set())
        calls = _CALLS.setdefault(key, [])
        if digest in seen or len(calls) >= _max_calls():
            return
        seen.add(digest)
        # Renumber the arrays now that we hold the lock, so keys never collide.
        renamed: dict[str, str] = {}
        for old, array in encoder.arrays.items():
            new = f"a{len(_ARRAYS)}"
            _ARRAYS[new] = array
            renamed[old] = new
        calls.append(_rename(call, renamed))


def _rename(spec: Any, renamed: dict[str, str]) -> Any:
    if isinstance(spec, dict):
        out = {k: _rename(v, renamed) for k, v in spec.items()}
        if spec.get("t") == "array":
            out["key"] = renamed[spec["key"]]
        return out
    if isinstance(spec, list):
        return [_rename(v, renamed) for v in spec]
    return spec


def _write() -> None:
    directory = os.environ.get("VJP_MIGRATE_RECORD_DIR")
    if not directory or not _CALLS:
        return
    import numpy as np

    functions = [{"module": m, "qualname": q, "file": f, "calls": calls} for (m, q, f), calls in _CALLS.items()]
    structure = json.dumps({"format": FORMAT, "version": VERSION, "functions": functions})
    payload = dict(_ARRAYS)
    payload["__structure__"] = np.frombuffer(structure.encode("utf-8"), dtype=np.uint8)
    np.savez(os.path.join(directory, f"part-{os.getpid()}.npz"), **payload)


def _patch(jax: Any) -> None:
    cls = jax.custom_vjp
    if getattr(cls.__call__, "_vjp_migrate_recorder", False):
        return
    original = cls.__call__

    @functools.wraps(original)
    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(_RECURSION, "active", False):
            _RECURSION.active = True
            try:
                _record(self, args, kwargs)
            except Exception:  # the recorder must never break the user's command
                pass
            finally:
                _RECURSION.active = False
        return original(self, *args, **kwargs)

    __call__._vjp_migrate_recorder = True  # type: ignore[attr-defined]
    cls.__call__ = __call__


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self.inner.exec_module(module)
        _patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != "jax":
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader)
        return spec


def _on_terminate(signum: int, frame: Any) -> None:
    """`record --timeout` ends the command with SIGTERM: keep what was recorded, then die of it."""
    try:
        _write()
    finally:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def install() -> None:
    """Patch ``jax.custom_vjp.__call__`` now or as soon as jax is imported."""
    atexit.register(_write)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # never over the command's own handler
        signal.signal(signal.SIGTERM, _on_terminate)
    if "jax" in sys.modules:
        _patch(sys.modules["jax"])
    else:
        sys.meta_path.insert(0, _Finder())
