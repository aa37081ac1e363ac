"""The words classify (LibCST) and the screen (ast) read as evidence: one list for both stages.

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

# classify's own words (the screen reads a subset: tests/test_prefilter.py).
STATIC_KEYWORDS = frozenset(
    {
        "shape",
        "newshape",
        "axis",
        "axes",
        "dtype",
        "num",
        "keepdims",
        "mode",
        "method",
        "precision",
        "static_argnums",
        "static_argnames",
        "length",
        "unroll",
        "num_segments",
        "dimension",
        "dimensions",
        "reverse",
        "ord",
        "k",
        "side",
        "order",
        "kind",
        "size",
        "total_repeat_length",
        "indices_are_sorted",
        "unique_indices",
        "preferred_element_type",
        "source",
        "destination",
        "window_dimensions",
        "window_strides",
        "padding",
        "n",
    }
)
# Array libraries: a value passed to one of their functions is array data, except at these
# positions (shapes, axes, sizes, dtypes, subscripts) and the callable positions below.
STATIC_POSITIONS: dict[str, frozenset[int]] = {
    **{f: frozenset({0}) for f in ("zeros", "ones", "empty", "eye", "identity", "tri")},
    "full": frozenset({0}),
    "arange": frozenset({0, 1, 2}),
    "linspace": frozenset({2}),
    "logspace": frozenset({2}),
    "reshape": frozenset({1}),
    "broadcast_to": frozenset({1}),
    "tile": frozenset({1}),
    "transpose": frozenset({1}),
    "expand_dims": frozenset({1}),
    "squeeze": frozenset({1}),
    "moveaxis": frozenset({1, 2}),
    "swapaxes": frozenset({1, 2}),
    "concatenate": frozenset({1}),
    "stack": frozenset({1}),
    "split": frozenset({1, 2}),
    "repeat": frozenset({1, 2}),
    "pad": frozenset({1, 2}),
    "einsum": frozenset({0}),
    "astype": frozenset({1}),
    "zeros_like": frozenset({1}),
    "ones_like": frozenset({1}),
    "flip": frozenset({1}),
    "roll": frozenset({2}),
    "take": frozenset({2}),
    "dynamic_slice": frozenset({2}),
    "slice": frozenset({1, 2, 3}),
    "fori_loop": frozenset({0, 1, 2}),
    "top_k": frozenset({1}),
    "convert_element_type": frozenset({1}),
    "broadcast_in_dim": frozenset({1, 2}),
    "one_hot": frozenset({1}),
    "normal": frozenset({1, 2}),
    "uniform": frozenset({1, 2}),
    "bernoulli": frozenset({2}),
    "split_key": frozenset({1}),
    "resize": frozenset({1, 2}),
    **{
        f: frozenset({1})
        for f in (
            "sum",
            "mean",
            "max",
            "min",
            "prod",
            "std",
            "var",
            "argmax",
            "argmin",
            "any",
            "all",
            "cumsum",
            "cumprod",
            "logsumexp",
            "softmax",
            "log_softmax",
            "norm",
            "median",
            "sort",
            "argsort",
            "nansum",
            "nanmean",
            "amax",
            "amin",
            "ptp",
            "average",
            "reduce_sum",
            "reduce_max",
            "reduce_min",
            "psum",
            "pmean",
            "all_gather",
        )
    },
}
CALLABLE_POSITIONS: dict[str, frozenset[int]] = {
    "scan": frozenset({0}),
    "map": frozenset({0}),
    "while_loop": frozenset({0, 1}),
    "cond": frozenset({1, 2}),
    "switch": frozenset({1}),
    "custom_root": frozenset({1, 2, 3}),
    "custom_linear_solve": frozenset({0, 2, 3}),
    "associative_scan": frozenset({0}),
    "reduce": frozenset({3}),
}
# jax.* transformations take the function first; for vjp/jvp/linearize the rest are primals.
JAX_TRANSFORMS = frozenset(
    {
        "jax.grad",
        "jax.value_and_grad",
        "jax.vjp",
        "jax.jvp",
        "jax.linearize",
        "jax.vmap",
        "jax.jit",
        "jax.pmap",
        "jax.checkpoint",
        "jax.remat",
        "jax.jacfwd",
        "jax.jacrev",
        "jax.hessian",
        "jax.eval_shape",
        "jax.closure_convert",
        "jax.make_jaxpr",
        "jax.tree_util.tree_map",
        "jax.tree.map",
        "jax.tree_map",
        "jax.custom_jvp",
        "jax.custom_vjp",
        "jax.linear_transpose",
        "functools.partial",
        "functools.reduce",
    }
)
STATIC_BUILTINS = frozenset(
    {
        "builtins.range",
        "builtins.int",
        "builtins.float",
        "builtins.complex",
        "builtins.bool",
        "builtins.hash",
        "builtins.str",
        "builtins.slice",
        "builtins.callable",
    }
)
# Host NumPy conversions: a Tracer cannot become a NumPy value, so the argument must be concrete
# (`np.float32(gravity)` for an FFI attribute); unlike other `numpy` functions, not array data.
HOST_CONVERSIONS = frozenset(
    f"numpy.{name}"
    for name in (
        "asarray",
        "array",
        "float16",
        "float32",
        "float64",
        "double",
        "single",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "bool_",
        "complex64",
        "complex128",
    )
)
# Array methods whose arguments are shapes/axes (``x.reshape(shape)``, ``x.sum(axis)``).
SHAPE_METHODS = frozenset(
    {"reshape", "transpose", "astype", "view", "squeeze", "swapaxes", "repeat", "tile", "broadcast_to"}
)
AXIS_METHODS = frozenset(
    {"sum", "mean", "max", "min", "prod", "std", "var", "argmax", "argmin", "any", "all", "cumsum"}
)
# What carries an argument's values into another value (`n = int(a[0]) + 1`): indexing,
# arithmetic, comparisons, these builtins and methods, and array functions except the ones that
# read only the shape or dtype. Metadata (`a.shape`, `len(a)`, `jnp.shape(a)`) is concrete even
# for a Tracer, so values computed from it say nothing about the argument.
VALUE_BUILTINS = frozenset(
    f"builtins.{name}"
    for name in (
        "abs",
        "bool",
        "complex",
        "divmod",
        "float",
        "int",
        "list",
        "max",
        "min",
        "pow",
        "reversed",
        "round",
        "sorted",
        "sum",
        "tuple",
    )
)
VALUE_METHODS = frozenset(
    {
        "item",
        "tolist",
        "get",
        "sum",
        "mean",
        "max",
        "min",
        "prod",
        "cumsum",
        "cumprod",
        "astype",
        "reshape",
        "ravel",
        "flatten",
        "squeeze",
        "transpose",
        "swapaxes",
        "argmax",
        "argmin",
        "round",
        "clip",
        "any",
        "all",
        "take",
        "repeat",
        "sort",
        "argsort",
        "copy",
        "conj",
        "conjugate",
        "dot",
        "trace",
        "diagonal",
        "nonzero",
        "searchsorted",
    }
)
# Attributes that read only an array's metadata: concrete even for a Tracer, so `if x.shape[0] > 1`
# needs nothing of `x`'s values.
METADATA_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "size"})
METADATA_FUNCTIONS = frozenset(
    {
        "shape",
        "ndim",
        "size",
        "result_type",
        "dtype",
        "iinfo",
        "finfo",
        "issubdtype",
        "isdtype",
        "can_cast",
        "promote_types",
        "isscalar",
        "zeros_like",
        "ones_like",
        "empty_like",
    }
)
ARRAY_ANNOTATIONS = frozenset(
    {
        "jax.Array",
        "jax.numpy.ndarray",
        "numpy.ndarray",
        "jax.typing.ArrayLike",
        "chex.Array",
        "chex.ArrayTree",
        "jaxtyping.Array",
        "jaxtyping.ArrayLike",
    }
)
SCALAR_ANNOTATION_NAMES = frozenset({"float", "int", "complex"})
STATIC_ANNOTATION_NAMES = frozenset(
    {"Callable", "str", "bool", "Shape", "DTypeLike", "dtype", "Sequence", "Literal", "type"}
)


def is_metadata_function(qname: str) -> bool:
    """``len`` or a ``jnp``/``np`` function that reads only metadata (``jnp.shape``, ``jnp.ndim``...)."""
    return qname == "builtins.len" or (
        qname.startswith(ARRAY_MODULES) and qname.rsplit(".", 1)[-1] in METADATA_FUNCTIONS
    )
