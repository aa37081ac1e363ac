"""Grammar newer than the oldest supported Python (3.10): type parameters and aliases (3.12).

The tool checks a file with the running interpreter's parser, so what it does depends on the
Python it runs on: from 3.12 such a file is migrated like any other and the result runs under
JAX; before, it is one clear error line naming the file, and the file is left alone.
"""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from click.testing import CliRunner

from vjp_migrate.cli import main

GENERIC = textwrap.dedent(
    """
    from functools import partial

    import jax
    import jax.numpy as jnp

    type Bounds[T] = tuple[T, T]


    @partial(jax.custom_vjp, nondiff_argnums=(0, 1))
    def clip_gradient[T](lo: T, hi: T, x):
        return x


    def clip_gradient_fwd[T](lo: T, hi: T, x):
        return x, None


    def clip_gradient_bwd(lo, hi, _, g):
        return (jnp.clip(g, lo, hi),)


    clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
    """
)


def _load(path: Path) -> object:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_type_parameters_are_migrated_where_python_parses_them(tmp_path: Path) -> None:
    path = tmp_path / "generic_clip.py"
    path.write_text(GENERIC, encoding="utf-8")
    result = CliRunner().invoke(main, ["fix", str(path)], catch_exceptions=False)
    after = path.read_text(encoding="utf-8")
    if sys.version_info < (3, 12):
        assert result.exit_code == 2, result.output
        (line,) = [x for x in result.stderr.splitlines() if ": error: " in x]
        assert line.startswith(f"{path}: error: syntax error at line 7")
        assert after == GENERIC
        return
    assert result.exit_code == 0, result.output
    assert "def clip_gradient[T](lo: T, hi: T, x):" in after
    assert "def clip_gradient_fwd[T](lo: T, hi: T, x):\n    return x, (lo, hi)" in after
    assert "type Bounds[T] = tuple[T, T]" in after
    clip = _load(path).clip_gradient  # type: ignore[attr-defined]
    lo, hi, x = jnp.float32(-0.5), jnp.float32(0.5), jnp.float32(3.0)
    grads = jax.jit(jax.grad(lambda lo, hi, x: clip(lo, hi, x) * 4.0, argnums=2))(lo, hi, x)
    np.testing.assert_allclose(grads, 0.5)  # the cotangent 4.0, clipped to hi
    per_lo = jax.vmap(jax.grad(lambda lo, x: clip(lo, hi, x) * -4.0, argnums=1), in_axes=(0, None))
    batched = per_lo(jnp.array([-1.0, -2.0]), x)  # the traced lower bound: broken before the fix
    np.testing.assert_allclose(batched, [-1.0, -2.0])
