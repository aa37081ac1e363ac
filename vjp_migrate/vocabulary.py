"""The words classify (LibCST) and the screen (ast) read as evidence: one list for both stages.

No LibCST here: the screen runs before any LibCST import.
"""

from __future__ import annotations

from collections.abc import Sequence

# Names a project's own module re-exports (`from .compat import jax, jnp`): taken for the module
# each conventionally is, as such shims are, so `jax.custom_vjp` through one is JAX's.
REEXPORTED_MODULES = {"jax": "jax", "jnp": "jax.numpy", "lax": "jax.lax", "np": "numpy"}


def imported_name(module: str, name: str) -> str:
    """What ``from module import name`` binds: ``module.name``, or a re-exported module's own name
    (a relative module is the project's own, even one named `jax`)."""
    if name in REEXPORTED_MODULES and (module.startswith(".") or module.split(".")[0] not in ("jax", "numpy")):
        return REEXPORTED_MODULES[name]
    return f"{module}.{name}" if module else name


def may_be_project_alias(target: str) -> bool:
    """Whether an imported name (its target, ``imported_name``'s) may be an alias of the partial
    another module of the project defines (sites.imported): not one of JAX, functools or builtins."""
    return target.startswith(".") or target.split(".")[0] not in ("jax", "functools", "builtins")


ARRAY_MODULES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.", "numpy.", "jax.random.", "jax.image.")
ARRAY_ANNOTATION_NAMES = frozenset(
    {"Array", "ArrayLike", "ndarray", "ArrayTree", "PyTree", "PRNGKey", "PRNGKeyArray", "ArrayDevice"}
)
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
        "tobytes",
        "tolist",
        "trace",
        "view",
    }
)
# Array methods that read the values on the host: a Tracer raises (ConcretizationTypeError).
CONCRETE_METHODS = frozenset({"item", "tolist", "tobytes"})
# Methods of a host NumPy array that make NumPy values (or ints) of what they are given: a Tracer
# raises there (`table.take(k)`, `table.item(k)`; `table.astype(k)` and `.view(k)` read only a
# Tracer's dtype and are left out). The ones whose index or data a JAX array takes too
# (`.take`, `.item`, `.searchsorted`) are doubts on a container nothing tells the kind of.
HOST_ARRAY_METHODS = frozenset(
    {"take", "item", "searchsorted", "dot", "compress", "choose", "put", "repeat", "clip", "partition"}
)
INDEXING_METHODS = frozenset({"take", "item", "searchsorted"})
# Methods of the containers a pytree of arrays is often made of (dict, NamedTuple, list).
CONTAINER_METHODS = frozenset({"get", "items", "keys", "values", "copy", "_replace", "_asdict", "index", "count"})

# classify's own words (the screen reads a subset: tests/test_prefilter.py). Keywords whose value
# any function needs concrete: shapes, axes, dtypes, jit's and scan's settings, modes.
STATIC_KEYWORDS = frozenset(
    {
        *("shape", "newshape", "axis", "axes", "dtype", "keepdims", "mode", "method", "precision"),
        *("static_argnums", "static_argnames", "unroll", "num_segments", "reverse", "ord", "side", "kind"),
        *("total_repeat_length", "indices_are_sorted", "unique_indices", "preferred_element_type"),
        *("window_dimensions", "window_strides"),
    }
)
# Keywords that are sizes, counts or settings in the array libraries, but name array data as often
# elsewhere (`attend(q, k=keys)`, `order=perm`, `padding=mask`): static for a library function; for
# a function not analysed, a doubt (never a safe fix), not a proof.
SETTING_KEYWORDS = frozenset(
    {"num", "length", "dimension", "dimensions", "k", "order", "size", "source", "destination", "padding", "n"}
)
# How an array-library function takes each argument. Static positions and keywords (shapes,
# axes, sizes, modes, flags) need concrete values: JAX fails on a Tracer there. Data positions
# take arrays. The first positional argument is data unless listed static; any other position or
# keyword is data only when listed, and otherwise says nothing (a closed list of static places
# would turn every static place it misses into a fix that breaks working code). Tables are keyed
# by the function's last name, or by its qualified name where two modules differ.
STATIC, CALLABLE, DATA, UNSURE = "static", "callable", "data", "unsure"
# A place that takes an int it needs concretely or an array as data: `permutation(key, n)` shuffles
# `arange(n)`, `permutation(key, x)` shuffles x; `histogram(x, bins)` takes a bin count or edges.
SIZE_OR_DATA = "size or data"
_SIZE_OR_DATA_PLACES: dict[str, tuple[int, str]] = {
    "jax.random.choice": (1, "a"),
    "jax.random.permutation": (1, "x"),
    "jax.numpy.histogram": (1, "bins"),
    "jax.numpy.histogram_bin_edges": (1, "bins"),
    "jax.numpy.histogramdd": (1, "bins"),
    "jax.numpy.histogram2d": (2, "bins"),
}
# Functions whose second argument (position 1) is an axis, size, k, decimals, dtype...
_SECOND_STATIC = (
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
    "softmax",
    "log_softmax",
    "median",
    "sort",
    "argsort",
    "nansum",
    "nanmean",
    "nanmax",
    "nanmin",
    "nanprod",
    "nanstd",
    "nanvar",
    "nanargmax",
    "nanargmin",
    "nanmedian",
    "nancumsum",
    "nancumprod",
    "amax",
    "amin",
    "ptp",
    "count_nonzero",
    "reduce_sum",
    "reduce_max",
    "reduce_min",
    "reduce_prod",
    "psum",
    "pmean",
    "pmax",
    "pmin",
    "cummax",
    "cummin",
    "cumlogsumexp",
    "glu",
    "fftshift",
    "ifftshift",
    "matrix_power",
    "tensorinv",
    "slogdet",
    "eigvalsh",
    "qr",
    "cholesky",
    "cho_factor",
    "round",
    "around",
    "diag",
    "tril",
    "triu",
    "gelu",
    "integer_pow",
    "rev",
    "broadcast",
    "bitcast_convert_type",
    "packbits",
    "ravel",
    "hsplit",
    "vsplit",
    "dsplit",
    "top_k",
    "convert_element_type",
    "split_key",
    "astype",
    "flip",
    "tile",
    "transpose",
    "expand_dims",
    "squeeze",
    "broadcast_to",
    "concatenate",
    "stack",
    "zeros_like",
    "ones_like",
    "empty_like",
)
_FFT = ("fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "fft2", "ifft2", "rfft2", "irfft2", "fftn", "ifftn", "rfftn")
STATIC_POSITIONS: dict[str, frozenset[int]] = {
    **{f: frozenset({1}) for f in _SECOND_STATIC},
    **{f: frozenset({1, 2, 3}) for f in (*_FFT, "irfftn")},
    **{f: frozenset({0, 1}) for f in ("zeros", "ones", "empty", "identity", "indices", "diag_indices", "iota")},
    **{f: frozenset({0, 1, 2, 3}) for f in ("eye", "tri", "arange")},
    "full": frozenset({0, 2}),
    "full_like": frozenset({2, 3}),
    "linspace": frozenset({2, 3, 4, 5, 6}),
    "logspace": frozenset({2, 3, 5, 6}),
    "geomspace": frozenset({2, 3, 4, 5}),
    "fftfreq": frozenset({0, 2}),
    "rfftfreq": frozenset({0, 2}),
    "triu_indices": frozenset({0, 1, 2}),
    "tril_indices": frozenset({0, 1, 2}),
    "broadcasted_iota": frozenset({0, 1, 2}),
    "axis_index": frozenset({0}),
    "einsum": frozenset({0}),
    "reshape": frozenset({1, 2}),
    "moveaxis": frozenset({1, 2}),
    "swapaxes": frozenset({1, 2}),
    "split": frozenset({1, 2}),
    "array_split": frozenset({1, 2}),
    "repeat": frozenset({1, 2}),
    "pad": frozenset({1, 2}),
    "roll": frozenset({2}),
    "take": frozenset({2, 3, 4}),
    "take_along_axis": frozenset({2}),
    "diagonal": frozenset({1, 2, 3}),
    "trace": frozenset({1, 2, 3, 4}),
    "tensordot": frozenset({2, 3}),
    "partition": frozenset({1, 2}),
    "argpartition": frozenset({1, 2}),
    "rot90": frozenset({1, 2}),
    "diff": frozenset({1, 2}),
    **{f: frozenset({2, 3, 4, 5, 6}) for f in ("percentile", "quantile", "nanpercentile", "nanquantile")},
    "logsumexp": frozenset({1, 3, 4}),
    "average": frozenset({1, 3, 4}),
    "unravel_index": frozenset({1}),
    "ravel_multi_index": frozenset({1, 2}),
    "vander": frozenset({1, 2}),
    "norm": frozenset({1, 2, 3}),
    "matrix_norm": frozenset({1, 2}),
    "vector_norm": frozenset({1, 2, 3}),
    "svd": frozenset({1, 2, 3}),
    "eigh": frozenset({1, 2}),
    "pinv": frozenset({2}),
    "lstsq": frozenset({2}),
    "tensorsolve": frozenset({2}),
    "vecdot": frozenset({2}),
    "cross": frozenset({2, 3, 4, 5}),
    "solve_triangular": frozenset({2, 3, 4, 5, 6}),
    "triangular_solve": frozenset({2, 3, 4, 5, 6}),
    "lu_solve": frozenset({2, 3, 4}),
    "cho_solve": frozenset({2, 3}),
    "multi_dot": frozenset({1}),
    "dot": frozenset({2, 3}),
    **{f: frozenset({2}) for f in ("vdot", "inner", "outer", "matmul", "batch_matmul", "polyval", "polymul")},
    "custom_root": frozenset({4}),
    "custom_linear_solve": frozenset({4, 5}),
    "unique": frozenset({1, 2, 3, 4}),
    "bincount": frozenset({2, 3}),
    "searchsorted": frozenset({2, 4}),
    "digitize": frozenset({2, 3}),
    "convolve": frozenset({2, 3, 4}),
    "correlate": frozenset({2, 3, 4}),
    "isclose": frozenset({4}),
    "allclose": frozenset({4}),
    "array_equal": frozenset({2}),
    "append": frozenset({2}),
    "insert": frozenset({3}),
    "trapezoid": frozenset({3}),
    "polyfit": frozenset({2}),
    "unpackbits": frozenset({1, 2}),
    "apply_along_axis": frozenset({1}),
    "apply_over_axes": frozenset({2}),
    "dynamic_slice": frozenset({2}),
    "slice": frozenset({1, 2, 3}),
    "gather": frozenset({2, 3, 4, 5, 6, 7}),
    **{f: frozenset({3, 4, 5, 6}) for f in ("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max")},
    "index_in_dim": frozenset({1, 2, 3}),
    "dynamic_index_in_dim": frozenset({2, 3}),
    "slice_in_dim": frozenset({1, 2, 3, 4}),
    "dynamic_slice_in_dim": frozenset({2, 3}),
    "dynamic_update_slice_in_dim": frozenset({3}),
    "dynamic_update_index_in_dim": frozenset({3}),
    "collapse": frozenset({1, 2}),
    "sort_key_val": frozenset({2, 3}),
    "reduce_precision": frozenset({1, 2}),
    "broadcast_in_dim": frozenset({1, 2}),
    "dot_general": frozenset({2, 3, 4}),
    "conv": frozenset({2, 3, 4, 5}),
    "conv_general_dilated": frozenset(range(2, 11)),
    "conv_transpose": frozenset(range(2, 8)),
    "conv_with_general_padding": frozenset(range(2, 8)),
    "reduce_window": frozenset({3, 4, 5, 6, 7}),
    "reduce": frozenset({3}),
    "all_gather": frozenset({1, 2, 3, 4}),
    "ppermute": frozenset({1, 2}),
    "pshuffle": frozenset({1, 2}),
    "all_to_all": frozenset({1, 2, 3}),
    "psum_scatter": frozenset({1, 2}),
    "scan": frozenset({3, 4, 5}),
    "associative_scan": frozenset({2, 3}),
    "fori_loop": frozenset({0, 1, 2}),
    "one_hot": frozenset({1, 2, 3}),
    "normalize": frozenset({1}),
    "standardize": frozenset({1}),
    "resize": frozenset({1, 2, 3, 4}),
    "scale_and_translate": frozenset({1, 2, 5, 6, 7}),
    # jax.random: the key (0) is data; shapes and dtypes are not.
    **{f: frozenset({1, 2}) for f in ("normal", "exponential", "laplace", "logistic", "gumbel", "cauchy", "bits")},
    "uniform": frozenset({1, 2}),
    "rademacher": frozenset({1, 2}),
    "bernoulli": frozenset({2}),
    "randint": frozenset({1, 4}),
    "choice": frozenset({2, 3, 5}),
    "permutation": frozenset({2, 3}),
    "categorical": frozenset({2, 3}),
    "truncated_normal": frozenset({3, 4}),
    "gamma": frozenset({2, 3}),
    "beta": frozenset({3, 4}),
    "poisson": frozenset({2, 3}),
    "dirichlet": frozenset({2, 3}),
    "multivariate_normal": frozenset({3, 4, 5}),
    "orthogonal": frozenset({1, 2, 3}),
    "ball": frozenset({1, 2, 3, 4}),
    # where two modules' functions share a last name
    "jax.lax.max": frozenset(),
    "jax.lax.min": frozenset(),
    "jax.lax.pad": frozenset({2}),
    "jax.lax.split": frozenset({1, 2}),
    "jax.lax.round": frozenset({1}),
    "jax.lax.cumsum": frozenset({1, 2}),
    "jax.lax.argmax": frozenset({1, 2}),
    "jax.lax.argmin": frozenset({1, 2}),
    "jax.scipy.linalg.eigh": frozenset({2, 3, 4}),
    "jax.scipy.special.gamma": frozenset(),
    "jax.scipy.special.beta": frozenset(),
    "jax.numpy.linalg.cross": frozenset({2}),
    "jax.scipy.linalg.solve": frozenset({2, 3, 4, 5, 6, 7}),
    "jax.scipy.linalg.cholesky": frozenset({1, 2, 3}),
    "jax.scipy.linalg.qr": frozenset({1, 2, 3, 4}),
}
CALLABLE_POSITIONS: dict[str, frozenset[int]] = {
    "scan": frozenset({0}),
    "map": frozenset({0}),
    "while_loop": frozenset({0, 1}),
    "fori_loop": frozenset({2}),
    "cond": frozenset({1, 2}),
    "switch": frozenset({1}),
    "custom_root": frozenset({0, 2, 3}),
    "custom_linear_solve": frozenset({0, 2, 3}),
    "associative_scan": frozenset({0}),
    "reduce": frozenset({2}),
    "reduce_window": frozenset({2}),
    "apply_along_axis": frozenset({0}),
    "apply_over_axes": frozenset({0}),
    "vectorize": frozenset({0}),
    "piecewise": frozenset({2}),
}
# Every positional argument (but the static and callable ones) is data.
ALL_DATA = frozenset(
    {
        *("add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "divmod", "power"),
        *("float_power", "mod", "remainder", "fmod", "maximum", "minimum", "fmax", "fmin", "arctan2"),
        *("hypot", "logaddexp", "logaddexp2", "copysign", "nextafter", "ldexp", "heaviside", "greater"),
        *("greater_equal", "less", "less_equal", "equal", "not_equal", "logical_and", "logical_or"),
        *("logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor", "left_shift", "right_shift", "gcd"),
        *("lcm", "dot", "vdot", "inner", "outer", "matmul", "kron", "cross", "vecdot", "where", "select"),
        *("select_n", "clip", "clamp", "interp", "polyval", "polyadd", "polysub", "polymul", "convolve"),
        *("correlate", "isclose", "allclose", "array_equal", "searchsorted", "digitize", "append"),
        *("einsum", "tensordot", "solve", "lstsq", "tensorsolve", "cho_solve", "lu_solve"),
        *("solve_triangular", "triangular_solve", "multi_dot", "sub", "mul", "div", "rem", "pow"),
        *("atan2", "complex", "batch_matmul", "dot_general", "conv", "conv_general_dilated"),
        *("conv_transpose", "conv_with_general_padding", "dynamic_update_slice", "dynamic_slice"),
        *("scatter", "scatter_add", "scatter_mul", "scatter_min", "scatter_max", "gather", "cond"),
        *("switch", "while_loop", "fori_loop", "scan", "map", "take", "take_along_axis", "stop_gradient"),
        *("dynamic_update_slice_in_dim", "dynamic_update_index_in_dim", "dynamic_index_in_dim"),
        *("dynamic_slice_in_dim", "reduce_window", "reduce", "sort_key_val", "xlogy", "xlog1py"),
        *("gammainc", "gammaincc", "betainc", "betaln", "zeta", "polygamma", "kl_div", "rel_entr"),
        *("pdf", "logpdf", "cdf", "logcdf", "sf", "logsf", "ppf", "isf", "pmf", "logpmf", "celu", "elu"),
        *("leaky_relu", "dot_product_attention", "fold_in", "trapezoid", "full", "full_like", "linspace"),
        *("logspace", "geomspace", "roll", "average", "logsumexp", "normalize", "standardize"),
        *("jax.scipy.linalg.solve", "batch_matmul"),
        *("truncated_normal", "beta", "gamma", "poisson", "dirichlet", "multivariate_normal", "choice"),
        *("permutation", "categorical", "bernoulli", "uniform", "randint", "jax.lax.max", "jax.lax.min"),
        *("jax.lax.pad", "jax.scipy.linalg.eigh", "scale_and_translate", "custom_root", "custom_linear_solve"),
        *("associative_scan", "percentile", "quantile", "nanpercentile", "nanquantile"),
    }
)
# Keywords that need concrete values in these libraries (keywords any call takes as static are
# STATIC_KEYWORDS), and keywords that take arrays; any other keyword says nothing.
LIBRARY_STATIC_KEYWORDS = frozenset(
    {
        *("norm", "lower", "upper", "full_matrices", "compute_uv", "overwrite_a", "overwrite_b"),
        *("check_finite", "symmetrize_input", "equal_nan", "indexing", "interpolation", "optimize"),
        *("return_index", "return_inverse", "return_counts", "stable", "descending", "exponent_bits"),
        *("mantissa_bits", "out_sharding", "decimals", "kth", "offset", "axis1", "axis2", "dimension_numbers"),
        *("permutation", "new_sizes", "axis_name", "perm", "split_axis", "concat_axis", "tiled"),
        *("axis_index_groups", "num_classes", "index_dtype", "minlength", "endpoint", "retstep"),
        *("slice_sizes", "lhs_dilation", "rhs_dilation", "feature_group_count", "batch_group_count"),
        *("approximate", "antialias", "rounding_method", "new_dtype", "broadcast_dimensions", "strides"),
        *("start_dimension", "stop_dimension", "assume_a", "trans", "unit_diagonal", "left_side"),
        *("transpose_a", "conjugate_a", "hermitian", "UPLO", "eigvals_only", "symmetrize", "implementation"),
        *("is_causal", "local_window_size", "window_shape", "batch_size", "return_sign", "assume_unique"),
        *("invert", "copy", "s", "spatial_dims", "keep_dims", "replace", "independent", "restart"),
    }
)
DATA_KEYWORDS = frozenset(
    {
        *("where", "weights", "b", "initial", "fill_value", "minval", "maxval", "p", "logits", "key"),
        *("operand", "operands", "init", "init_val", "init_value", "xs", "x", "y", "a", "v", "lam"),
        *("alpha", "loc", "scale", "mean", "cov", "bias", "mask", "query", "value", "updates"),
        *("indices", "values", "update", "start_indices", "pred", "nan", "posinf", "neginf", "atol"),
        *("rtol", "dx", "xp", "fp", "left", "right", "period", "q", "shift", "prepend", "to_begin"),
        *("to_end", "constant_values", "end_values", "negative_slope", "variance", "epsilon"),
        *("segment_ids", "a_min", "a_max", "min", "max", "ddof", "translation"),
    }
)
# Keywords that take arrays in one function and flags in others (``lower=``).
_DATA_KEYWORDS_OF = {"jax.random.truncated_normal": frozenset({"lower", "upper"})}
# jax.random functions whose first argument is a seed or raw key bits, not a key.
_RANDOM_SEEDERS = frozenset({"jax.random.PRNGKey", "jax.random.key", "jax.random.wrap_key_data"})


def takes_random_key(qname: str, position: int, keyword: str | None) -> bool:
    """Whether the ``jax.random`` function ``qname`` takes a PRNG key at that place."""
    if not qname.startswith("jax.random.") or qname in _RANDOM_SEEDERS:
        return False
    return keyword == "key" if keyword is not None else position == 0


def at_place(place: tuple[int, str], position: int, keyword: str | None) -> bool:
    """Whether an argument given at ``position`` (or as ``keyword=``) reaches the parameter at
    ``place``, a (position, name) pair."""
    return keyword == place[1] if keyword is not None else position == place[0]


def reordered(names: Sequence[str], expected: Sequence[str]) -> bool:
    """Whether a rule's parameters are the primal's names in another order (JAX passes arguments
    by position, so each of them holds another argument)."""
    return list(names) != list(expected) and len(set(names)) == len(names) > 1 and sorted(names) == sorted(expected)


def library_use(qname: str, position: int, keyword: str | None) -> str:
    """How the array-library function ``qname`` takes an argument: STATIC, CALLABLE, DATA,
    SIZE_OR_DATA or UNSURE.

    ``position`` counts positional arguments from 0; it is negative for arguments after a ``*``.
    """
    last = qname.rsplit(".", 1)[-1]
    if qname in _SIZE_OR_DATA_PLACES and at_place(_SIZE_OR_DATA_PLACES[qname], position, keyword):
        return SIZE_OR_DATA
    if keyword is not None:
        if "fun" in keyword:
            return CALLABLE
        if keyword in _DATA_KEYWORDS_OF.get(qname, ()):
            return DATA
        if keyword in STATIC_KEYWORDS or keyword in SETTING_KEYWORDS or keyword in LIBRARY_STATIC_KEYWORDS:
            return STATIC
        return DATA if keyword in DATA_KEYWORDS else UNSURE
    if position in CALLABLE_POSITIONS.get(last, ()):
        return CALLABLE
    if position in STATIC_POSITIONS.get(qname, STATIC_POSITIONS.get(last, frozenset())):
        return STATIC
    if position == 0 or (position > 0 and (qname in ALL_DATA or last in ALL_DATA)):
        return DATA
    return UNSURE


# jax calls outside the array modules that take only static descriptions (of an abstract value:
# shape, dtype, sharding; of a Pallas kernel: block shapes, compiler options): a Tracer at any of
# their places fails.
_PALLAS = "jax.experimental.pallas"
PALLAS_CALL = f"{_PALLAS}.pallas_call"
# JAX's private modules some code imports from, and the public module that re-exports their names
# (`from jax._src.pallas.pallas_call import pallas_call`, as microsoft/folx does).
_PUBLIC_MODULES = (("jax._src.pallas.pallas_call.", f"{_PALLAS}."), ("jax._src.pallas.core.", f"{_PALLAS}."))


def public_name(qname: str) -> str:
    """``qname`` under the public module that re-exports it, when it names one of JAX's private modules."""
    for private, public in _PUBLIC_MODULES:
        if qname.startswith(private):
            return public + qname[len(private) :]
    return qname


STATIC_CALLS = frozenset(
    {
        "jax.ShapeDtypeStruct",
        "jax.sharding.NamedSharding",
        "jax.sharding.PartitionSpec",
        f"{_PALLAS}.BlockSpec",
        f"{_PALLAS}.CompilerParams",
        f"{_PALLAS}.tpu.CompilerParams",
        f"{_PALLAS}.tpu.TPUCompilerParams",
        f"{_PALLAS}.triton.CompilerParams",
        f"{_PALLAS}.triton.TritonCompilerParams",
        f"{_PALLAS}.gpu.TritonCompilerParams",
        f"{_PALLAS}.mosaic_gpu.CompilerParams",
    }
)
# The static parameters of other calls (and of builtin `round`), each a (position, name) pair, the
# position None for a keyword-only one: hashable parameters of a primitive, static arguments of
# the jit inside the call, sizes it reads concretely (`segment_sum`'s `num_segments`) or a Python
# int (`round(x, ndigits)`). A Tracer there fails, given by position or by keyword alike
# (tests/test_classify_probe31.py checks the positions against the installed JAX's signatures).
# Not `pallas_call`'s `grid`: Pallas TPU takes dynamic grid sizes. odeint's tolerances are its
# jit's static arguments, unlike `rtol=` elsewhere.
StaticParameters = tuple[tuple[int | None, str], ...]


def _keyword_only(*names: str) -> StaticParameters:
    return tuple((None, name) for name in names)


# The device mesh and partition specs of `shard_map`: descriptions of placement, no JAX values.
_SHARD_MAP_SETTINGS = ("mesh", "in_specs", "out_specs", "axis_names", "check_vma", "check_rep", "auto")
# `jax.ops.segment_sum(data, segment_ids, num_segments, ...)`: the number of segments is the result's size.
_SEGMENT_SETTINGS: StaticParameters = (
    (2, "num_segments"),
    (3, "indices_are_sorted"),
    (4, "unique_indices"),
    (5, "bucket_size"),
    (6, "mode"),
    (7, "out_sharding"),
)
STATIC_PARAMETERS_OF: dict[str, StaticParameters] = {
    "jax.experimental.ode.odeint": _keyword_only("rtol", "atol", "mxstep", "hmax"),
    "jax.shard_map": _keyword_only(*_SHARD_MAP_SETTINGS),
    "jax.experimental.shard_map.shard_map": (
        (1, "mesh"),
        (2, "in_specs"),
        (3, "out_specs"),
        (4, "check_rep"),
        *_keyword_only("axis_names", "check_vma", "auto"),
    ),
    PALLAS_CALL: (
        (1, "out_shape"),
        *_keyword_only("in_specs", "out_specs", "scratch_shapes", "input_output_aliases", "compiler_params"),
        *_keyword_only("interpret", "debug", "name", "cost_estimate", "backend"),
    ),
    **{f"jax.ops.segment_{reduction}": _SEGMENT_SETTINGS for reduction in ("sum", "max", "min", "prod")},
    "builtins.round": ((1, "ndigits"),),
}


def static_parameter(qname: str, position: int, keyword: str | None) -> str | None:
    """The static parameter of ``qname`` (``STATIC_PARAMETERS_OF``) an argument given at
    ``position`` (or as ``keyword=``) is passed as; None if it is none."""
    return next(
        (
            name
            for at, name in STATIC_PARAMETERS_OF.get(qname, ())
            if (keyword == name if keyword is not None else at is not None and position == at)
        ),
        None,
    )


# Places of other jax calls that take a description, never a value: the tree structure
# `tree_unflatten` rebuilds a pytree from (a PyTreeDef is no JAX type, so never a Tracer).
STATIC_PLACES_OF: dict[str, tuple[int, str]] = {
    "jax.tree_util.tree_unflatten": (0, "treedef"),
    "jax.tree.unflatten": (0, "treedef"),
}
# The qualified-name prefixes of JAX's, NumPy's and the standard library's own names: never a
# function of the user's project (no custom_vjp of theirs, no table of theirs behind one).
LIBRARY_PREFIXES = ("jax.", "numpy.", "functools.", "builtins.")
# Transforms mapping a function over its operands' leading axis, with the place of their `in_axes`:
# an operand mapped over (by default, or with an int axis) must be an array (or a pytree of
# arrays) with that axis; a static setting fails there ("vmap was requested to map its argument").
MAPPING_TRANSFORMS: dict[str, tuple[int, str]] = {
    "jax.vmap": (1, "in_axes"),
    "jax.pmap": (1, "in_axes"),
}
# Callbacks into Python on the host, with the name of the parameter taking the host function. The
# function runs when the compiled code runs, after tracing: a value it reads from around it (or that
# `partial` binds) must be concrete then, while the operands passed to the callback are array data.
HOST_CALLBACKS: dict[str, str] = {
    "jax.pure_callback": "callback",
    "jax.experimental.io_callback": "callback",
    "jax.debug.callback": "callback",
    "jax.experimental.host_callback.call": "callback_func",
}
# Calls that hand their positional arguments from this place on to a host function or a kernel as
# arrays, so a Tracer is fine there: the callbacks' operands (past the host function and the
# result's shapes), and those of AWS Neuron's `nki_call(kernel, *operands, out_shape=...)`.
ARRAY_OPERANDS_FROM: dict[str, int] = {
    "jax.pure_callback": 2,
    "jax.experimental.io_callback": 2,
    "jax.debug.callback": 1,
    "jax.experimental.host_callback.call": 1,
    "jax_neuronx.nki_call": 1,
}
# `jax.ffi.ffi_call(target, result_shape_dtypes)` returns a function taking `(*operands, **attributes)`:
# the attributes become the custom call's static attributes, and a Tracer there fails ("Non-hashable
# keyword argument to ffi_call").
FFI_CALLS = frozenset({"jax.ffi.ffi_call", "jax.extend.ffi.ffi_call"})
# `Primitive.bind(*operands, **params)`: the keywords are the primitive's parameters, which JAX
# needs hashable (concrete); the positional operands are data. The receiver is a primitive when it
# is made by one of these classes, or is one of JAX's own (`jax.lax.add_p`).
PRIMITIVE_CLASSES = frozenset({"jax.extend.core.Primitive", "jax.core.Primitive", "jax._src.core.Primitive"})

# Bases and metaclasses that leave a class plain (no pytree, so an instance is no JAX value): an
# abstract base class is an ordinary Python class.
PLAIN_BASES = frozenset({"builtins.object", "abc.ABC"})
PLAIN_METACLASSES = frozenset({"abc.ABCMeta"})

# Enum bases whose members are no numbers: a Tracer is never one of them (`IntEnum`, `IntFlag` left out).
ENUM_CLASSES = frozenset({"enum.Enum", "enum.StrEnum", "enum.Flag"})

# Class decorators that make a pytree with no leaves: jit hands an instance on as it is, never a Tracer.
STATIC_PYTREE_DECORATORS = frozenset({"jax.tree_util.register_static"})
# Registrations whose leaves are the fields named in `data_fields`: none for `data_fields=[]`;
# with no field lists, every field not marked `dataclasses.field(metadata={"static": True})`.
DATACLASS_REGISTRARS = frozenset({"jax.tree_util.register_dataclass"})
DATACLASS_FIELDS = frozenset({"dataclasses.field"})
# Registrations whose leaves are the children the class's own `tree_flatten` returns.
PYTREE_NODE_CLASS_REGISTRARS = frozenset({"jax.tree_util.register_pytree_node_class"})
# `register_pytree_with_keys_class`: the children of the class's `tree_flatten` if it has one,
# else those of its `tree_flatten_with_keys`.
PYTREE_WITH_KEYS_CLASS_REGISTRARS = frozenset({"jax.tree_util.register_pytree_with_keys_class"})
# Registrations taking the flatten functions themselves: the leaves are the children the flatten
# function returns. Each with where it takes the functions that flatten (positions past the class,
# keywords); `register_pytree_with_keys` flattens with its optional `flatten_func` when given.
PYTREE_NODE_REGISTRARS = {
    "jax.tree_util.register_pytree_node": ((0, "flatten_func"),),
    "jax.tree_util.register_pytree_with_keys": ((0, "flatten_with_keys"), (2, "flatten_func")),
}
# The parameter each registrar takes the class as (`register_dataclass(nodetype=Config, ...)`).
REGISTRAR_CLASS_PARAMETERS = {
    "jax.tree_util.register_static": "cls",
    "jax.tree_util.register_dataclass": "nodetype",
    "jax.tree_util.register_pytree_node_class": "cls",
    "jax.tree_util.register_pytree_with_keys_class": "cls",
    "jax.tree_util.register_pytree_node": "nodetype",
    "jax.tree_util.register_pytree_with_keys": "nodetype",
}
# Flax struct classes: every field is a leaf unless it is `struct.field(pytree_node=False)`.
FLAX_DATACLASSES = frozenset({"flax.struct.dataclass"})
FLAX_PYTREE_NODES = frozenset({"flax.struct.PyTreeNode"})
FLAX_FIELDS = frozenset({"flax.struct.field"})
# Equinox modules: every field is a leaf unless it is `eqx.field(static=True)` (or the older
# `eqx.static_field()`), which eqx keeps as aux data: jit passes it on as it is.
EQUINOX_MODULES = frozenset({"equinox.Module"})
EQUINOX_FIELDS = frozenset({"equinox.field"})
EQUINOX_STATIC_FIELDS = frozenset({"equinox.static_field"})
# Annotations of a value that is no JAX value (a function, a string, a type, a dtype): held as a
# leaf of a pytree, it makes the pytree no valid argument of jit or custom_vjp.
NO_JAX_VALUE_ANNOTATION_NAMES = frozenset({"Callable", "str", "type", "Type", "dtype", "DTypeLike", "Literal"})
# Typed named tuples: JAX flattens a tuple, so every field is a leaf.
NAMED_TUPLES = frozenset({"typing.NamedTuple", "typing_extensions.NamedTuple"})
# Registrations whose leaves a flatten function says: a class registered by one with a field
# annotated as an array keeps that array among its children (aux data must be hashable).
CHILDREN_REGISTRARS = (
    PYTREE_NODE_CLASS_REGISTRARS | PYTREE_WITH_KEYS_CLASS_REGISTRARS | frozenset(PYTREE_NODE_REGISTRARS)
)


def is_jax_primitive(qname: str) -> bool:
    """A primitive JAX itself defines: ``jax.<module>.<name>_p`` (``jax.lax.psum_p``)."""
    module, _, name = qname.rpartition(".")
    return module.split(".")[0] == "jax" and name.endswith("_p")


# Wrappers that keep a function's signature: `custom_vjp(jax.jit(f), ...)` has `f` as its primal.
PRIMAL_WRAPPERS = frozenset({"jax.jit", "jax.checkpoint", "jax.remat", "jax.named_call"})
# Decorators that only name a function's calls (in the jaxpr, in profiles) and pass any
# arguments on: a rule's parameters can change under them.
NAMING_DECORATORS = frozenset({"jax.named_call", "jax.named_scope"})
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
# Builtins that fail on a Tracer; not `str`, which prints one ("Traced<float32[]>...").
STATIC_BUILTINS = frozenset(
    {
        "builtins.range",
        "builtins.int",
        "builtins.float",
        "builtins.complex",
        "builtins.bool",
        "builtins.hash",
        "builtins.slice",
        # They compare their items with `<`, whose traced result has no concrete truth value.
        "builtins.min",
        "builtins.max",
        "builtins.sorted",
    }
)
# `math` functions make Python numbers of their arguments (a Tracer fails: ConcretizationTypeError),
# but for these, which only multiply.
MULTIPLYING_MATH = frozenset({"math.prod", "math.sumprod"})


def needs_python_number(qname: str) -> bool:
    """A builtin or `math` function a Tracer cannot be passed to (`int(n)`, `math.ceil(n / k)`)."""
    return qname in STATIC_BUILTINS or (qname.startswith("math.") and qname not in MULTIPLYING_MATH)


# Decorators that cache a function by its arguments: they hash them, and a Tracer is unhashable.
CACHING_DECORATORS = frozenset({"functools.lru_cache", "functools.cache"})
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
# Host NumPy functions that hand a value that is no NumPy array to its own method of that name
# (NumPy's `_wrapfunc`/`_wrapreduction`; `np.shape` reads `.shape`): they take a Tracer, so
# unlike other `numpy` functions they prove no concrete value (checked with JAX 0.10, NumPy 2).
NUMPY_TRACER_METHODS = frozenset(
    f"numpy.{name}"
    for name in (
        "sum",
        "mean",
        "std",
        "var",
        "max",
        "min",
        "amax",
        "amin",
        "prod",
        "any",
        "all",
        "cumsum",
        "cumprod",
        "argmax",
        "argmin",
        "reshape",
        "transpose",
        "squeeze",
        "round",
        "around",
        "repeat",
        "swapaxes",
        "searchsorted",
        "shape",
        "ndim",
        "size",
    )
)
# The methods of an indexed update (`x.at[i].set(v)`), whose first argument is written into the
# array (`apply`'s is the function it maps).
INDEXED_UPDATES = frozenset(
    {"set", "add", "subtract", "multiply", "mul", "divide", "div", "power", "min", "max", "apply"}
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
# An array's attributes that are no part of an object it may be (`cfg.n`): metadata, its indexed
# update helper, and what jit knows of a Tracer.
ARRAY_ATTRIBUTE_NAMES = METADATA_ATTRIBUTES | {"at", "flat", "sharding", "itemsize", "nbytes", "weak_type", "aval"}
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
# The metadata functions that take a dtype, or an array whose dtype they read (`jnp.dtype(x)`,
# `jnp.finfo(x)` work for a Tracer too): what is passed there is no more array data than a dtype.
DTYPE_FUNCTIONS = frozenset(
    {"dtype", "issubdtype", "isdtype", "finfo", "iinfo", "promote_types", "can_cast", "result_type"}
)
# The metadata reads that give sizes, which are Python ints even for a Tracer (`x.shape[0]`,
# `len(x)`); `jnp.zeros_like(x)` reads only metadata too, but gives an array.
SIZE_NAMES = frozenset({"shape", "ndim", "size"})
ARRAY_ANNOTATIONS = frozenset(
    {
        "jax.Array",
        "jax.numpy.ndarray",
        "jax.typing.ArrayLike",
        "chex.Array",
        "chex.ArrayTree",
        "jaxtyping.Array",
        "jaxtyping.ArrayLike",
        # PRNG keys, arrays too (`key: jax.random.PRNGKey`, the function used as an annotation).
        "jax.random.PRNGKey",
        "jax.random.PRNGKeyArray",
        "jax.prng.PRNGKeyArray",
        "jaxtyping.PRNGKeyArray",
        "chex.PRNGKey",
        "chex.ArrayDevice",
    }
)
# A host NumPy array in nondiff_argnums is usually concrete data the code reads on the host (a
# sparsity pattern, a mesh): its annotation is no evidence that the argument may be a Tracer.
HOST_ARRAY_ANNOTATIONS = frozenset({"numpy.ndarray"})
# What only a JAX array is (no host NumPy array, no Python number): a module-level name annotated
# so is one, whose index may be a Tracer.
JAX_ARRAY_ANNOTATIONS = frozenset({"jax.Array", "jax.numpy.ndarray"})
SCALAR_ANNOTATION_NAMES = frozenset({"float", "int", "complex"})
STATIC_ANNOTATION_NAMES = frozenset(
    {"Callable", "str", "bool", "Shape", "DTypeLike", "dtype", "Sequence", "Literal", "type"}
)
# JAX types that describe a value or its placement, with a `.shape` or `.dtype` as arrays have,
# but are no JAX value themselves: one is never traced (jit cannot take it as an argument), and
# moved out of nondiff_argnums it fails ("not a valid JAX type", "a ShapeDtypeStruct does not have
# a value"). Qualified names: a module's own `Mesh` class may well hold arrays.
STATIC_ANNOTATIONS = frozenset(
    {
        "jax.ShapeDtypeStruct",
        "jax.core.ShapedArray",
        "jax.sharding.Mesh",
        "jax.sharding.AbstractMesh",
        "jax.sharding.Sharding",
        "jax.sharding.NamedSharding",
        "jax.sharding.PartitionSpec",
        "jax.sharding.SingleDeviceSharding",
        "jax.sharding.PositionalSharding",
    }
)
# Static annotations that are containers: an array type inside (`Sequence[jax.Array]`) makes them array data.
CONTAINER_ANNOTATION_NAMES = frozenset({"Sequence", "tuple", "Tuple"})
# Mapping annotations: a loop over such a parameter takes its keys, Python values.
MAPPING_ANNOTATION_NAMES = frozenset({"dict", "Dict", "Mapping", "MutableMapping", "FrozenDict"})


# Builtins that test what a value is, not what it holds: as concrete for a Tracer or a pytree of
# Tracers as for an array (`isinstance(init, list)`, `hasattr(x, "items")`, `callable(f)`), so a
# test built on them needs nothing of the argument's values.
TYPE_TESTS = frozenset(f"builtins.{name}" for name in ("isinstance", "hasattr", "callable", "type", "id"))


# The types a Tracer is never an instance of, whatever it traces: an argument that must be one
# (`assert isinstance(lr, float)`, `if not isinstance(lr, (int, float)): raise ...`) is static.
PYTHON_VALUE_TYPES = frozenset(
    {
        *(f"builtins.{name}" for name in ("int", "float", "complex", "bool", "str", "bytes")),
        *(f"numbers.{name}" for name in ("Number", "Complex", "Real", "Rational", "Integral")),
        *(f"numpy.{name}" for name in ("number", "floating", "integer", "generic", "bool_")),
    }
)
# Library checks that their first argument is a Python number (chex: `isinstance(x, (int, float))`).
PYTHON_NUMBER_CHECKS = frozenset(
    f"chex.assert_scalar{suffix}" for suffix in ("", "_positive", "_non_negative", "_negative", "_in")
)


def is_metadata_function(qname: str) -> bool:
    """``len`` or a ``jnp``/``np`` function that reads only metadata (``jnp.shape``, ``jnp.ndim``...)."""
    return qname == "builtins.len" or (
        qname.startswith(ARRAY_MODULES) and qname.rsplit(".", 1)[-1] in METADATA_FUNCTIONS
    )


def makes_jax_array(qname: str | None) -> bool:
    """A JAX function whose call makes an array (`jnp.ones`, `jax.random.split`): not host
    NumPy's (concrete, never a Tracer), nor one of metadata (`jnp.shape`)."""
    jax_modules = tuple(module for module in ARRAY_MODULES if module.startswith("jax."))
    return qname is not None and qname.startswith(jax_modules) and not is_metadata_function(qname)


def is_size_function(qname: str) -> bool:
    """``len``, or a ``jnp``/``np`` function that gives an array's sizes (``jnp.shape``...)."""
    return qname == "builtins.len" or (qname.startswith(ARRAY_MODULES) and qname.rsplit(".", 1)[-1] in SIZE_NAMES)
