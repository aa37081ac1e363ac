"""Words both classify (LibCST) and the screen (ast) read as array evidence: one list for both.

No LibCST here: the screen runs before any LibCST import.
"""

from __future__ import annotations

ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.", "jax.random.", "jax.image.")
ARRAY_ANNOTATION_NAMES = frozenset({"Array", "ArrayLike", "ndarray", "ArrayTree", "PyTree"})
ARRAY_ATTRIBUTES = frozenset(
    {
        "shape",
        "dtype",
        "ndim",
        "size",
        "T",
        "mT",
        "at",
        "real",
        "imag",
        "astype",
        "reshape",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "dot",
        "transpose",
        "squeeze",
        "ravel",
        "flatten",
        "conj",
        "clip",
        "std",
        "var",
        "argmax",
        "argmin",
        "cumsum",
        "swapaxes",
        "block_until_ready",
    }
)
