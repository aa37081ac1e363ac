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
# Every public method and attribute of `jax.Array` (tests/test_classify.py checks it against the
# installed JAX): calling anything else on an argument says it is some other object.
ARRAY_METHODS = ARRAY_ATTRIBUTES | frozenset(
    {
        "addressable_data",
        "addressable_shards",
        "all",
        "any",
        "argpartition",
        "argsort",
        "byteswap",
        "choose",
        "committed",
        "compress",
        "conjugate",
        "copy",
        "copy_to_host_async",
        "cumprod",
        "device",
        "devices",
        "diagonal",
        "flat",
        "global_shards",
        "is_fully_addressable",
        "is_fully_replicated",
        "item",
        "itemsize",
        "nbytes",
        "nonzero",
        "ptp",
        "repeat",
        "round",
        "searchsorted",
        "sharding",
        "sort",
        "take",
        "to_device",
        "tolist",
        "trace",
        "view",
    }
)
# Methods of the containers a pytree of arrays is often made of (dict, NamedTuple, list).
CONTAINER_METHODS = frozenset({"get", "items", "keys", "values", "copy", "_replace", "_asdict", "index", "count"})
