"""vjp-migrate: find and migrate old-style ``jax.custom_vjp`` functions whose
``nondiff_argnums`` hold array-valued arguments (broken since JAX PR #4008)."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
