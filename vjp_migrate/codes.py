"""The table of diagnostic codes, as data: messages, fix titles and docs all live here."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from vjp_migrate.model import FixSafety


@dataclass(frozen=True)
class Code:
    code: str
    name: str
    message: str  # a str.format template: {function}, {argument}, {index}, {detail}
    fix_title: str | None
    fix_safety: FixSafety
    default: bool  # selected when the user selects nothing
    # Words one of which must occur in a file's bytes for this code to be possible there; or else
    # ``trigger_pattern``, a regular expression, must match the bytes (a second way in).
    triggers: tuple[bytes, ...]
    what: str
    why: str
    example: str
    use_instead: str
    safety: str
    # Appended to the message when the rule cannot be rewritten ({detail}: why); such a finding
    # has no fix. Empty: the code is never reported that way.
    blocked: str = ""
    trigger_pattern: bytes = b""


_TRACER_WHY = (
    "Since JAX PR #4008 an argument listed in a `custom_vjp`'s `nondiff_argnums` must never be "
    'a Tracer. Array-valued arguments there fail with `UnexpectedTracerError` ("Found a JAX '
    "Tracer object passed as an argument to a custom_vjp function in a position indicated by "
    'nondiff_argnums as non-differentiable") as soon as the function runs under `jit`, `vmap`, '
    "`scan` or `grad` of those arguments. JAX's guide: array-valued arguments should not be "
    "indicated as nondiff_argnums; pass them as regular arguments, save them as residuals in "
    "fwd, and return `None` for them from bwd."
)

_BEFORE = """\
@partial(jax.custom_vjp, nondiff_argnums=(0, 1))
def clip_gradient(lo, hi, x):
    return x

def clip_gradient_fwd(lo, hi, x):
    return x, None

def clip_gradient_bwd(lo, hi, _, g):
    return (jnp.clip(g, lo, hi),)

clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
"""

_AFTER = """\
@jax.custom_vjp
def clip_gradient(lo, hi, x):
    return x

def clip_gradient_fwd(lo, hi, x):
    return x, (lo, hi)

def clip_gradient_bwd(res, g):
    lo, hi = res
    return (None, None, jnp.clip(g, lo, hi))

clip_gradient.defvjp(clip_gradient_fwd, clip_gradient_bwd)
"""

# How a message names a nondiff argument; one that no function names (its site's rules are built
# by a call: sites.unnamed_position) has its position alone for a name.
ARGUMENT = "`{argument}` (position {index})"
UNNAMED = "position {index}"

# A note of a finding whose fix leaves a public alias of the partial unused (plan.aliases):
# {alias}, {nondiff_argnums}, and {listed}, the argument as the alias lists it.
ALIAS_KEPT = (
    "the fix keeps the alias `{alias}`, unused here, for the modules that may import it: its "
    "{nondiff_argnums} still lists {listed}"
)

_NONDIFF = (b"nondiff_arg",)
# nondiff_argnums given by position, `jax.custom_vjp(f, (1,))`, has no keyword: a file may hold one
# when it calls something named custom_vjp (subscripted, parenthesized, across comments and line
# breaks: `(jax.custom_vjp)  # c` then `(f, (1,))`) or imports it under another name (`as cv`).
# A comment runs to its line's end (`(?![^\r\n])`): else a run of `#` splits in exponentially many ways.
_COMMENT = rb"#[^\r\n]*(?![^\r\n])"
_POSITIONAL = rb"custom_vjp(?:(?:[\s\\)]|" + _COMMENT + rb")*[(\[]|(?:[\s\\]|" + _COMMENT + rb")+as\b)"
# A site through an alias of the partial imported from another module (sites.imported) has
# neither: its module calls `defvjp` on a def decorated with a bare name (`@vjp_w`), or on a name
# bound to a call of one (`f = vjp_w(_f)`).
_IMPORTED_ALIAS_USE = re.compile(
    rb"@[ \t]*(?P<decorator>[^\s(.@#]+)[ \t]*(?:" + _COMMENT + rb")?(?![^\r\n])|=\s*(?P<called>[^\s(.=]+)\s*\("
)

# From `import` to the end of its statement: its parentheses and `\`-continued lines included.
_IMPORT_STATEMENT = re.compile(rb"\bimport\b(?:[^()\\\r\n]|\\(?:\r\n|[\s\S])|\([^)]*\))*")

CODES: tuple[Code, ...] = (
    Code(
        code="VJP001",
        name="array-in-nondiff-argnums",
        message=(
            ARGUMENT + " of custom_vjp `{function}` is array-valued but listed "
            "in {nondiff_argnums}; it raises UnexpectedTracerError under jit/vmap/grad"
        ),
        fix_title="Pass `{argument}` as a regular argument, save it as a residual in fwd, return None for it in bwd",
        fix_safety=FixSafety.SAFE,
        default=True,
        triggers=_NONDIFF,
        trigger_pattern=_POSITIONAL,
        what=(
            "Finds `jax.custom_vjp` functions whose `nondiff_argnums`/`nondiff_argnames` list an "
            "argument that the code uses as array data (jnp/lax operations, arithmetic, array "
            "attributes, array annotations, array values at call sites) in the primal, fwd, bwd "
            "and the helpers they call. A primal that is no function of the module "
            "(`jax.custom_vjp(make_impl(cfg), ...)`, an imported function, a parameter) is read "
            "through fwd, which has its signature."
        ),
        why=_TRACER_WHY,
        example=_BEFORE,
        use_instead=_AFTER,
        safety=(
            "Safe when every migrated argument has clear array evidence and no static use; the "
            "gradients of the differentiable arguments are unchanged and the migrated arguments "
            "get `None` cotangents. Weaker evidence makes the fix unsafe (`--unsafe-fixes`), and so "
            "does a primal whose body is not seen (it may need the argument concretely). No fix is "
            "offered for an argument that is also called as a function on a branch its type picks "
            "(`if callable(mask): mask = mask(y)`): a function cannot be a residual."
        ),
    ),
    Code(
        code="VJP002",
        name="unknown-nondiff-argument",
        message=(
            "cannot tell whether " + ARGUMENT + " of custom_vjp `{function}` is an "
            "array or a static setting; if it can be a Tracer it must leave {nondiff_argnums}"
        ),
        fix_title="Treat `{argument}` as an array: pass it as a regular argument",
        fix_safety=FixSafety.UNSAFE,
        default=False,
        triggers=_NONDIFF,
        trigger_pattern=_POSITIONAL,
        what=(
            "Finds nondiff arguments of a `jax.custom_vjp` whose kind the tool cannot decide: "
            "they only reach helpers defined elsewhere, are annotated `float`/`int` with no use seen "
            "(or no use at all in fwd and bwd when the primal is no function of the module), "
            "or a local that holds their values on some paths only is needed concretely."
        ),
        why=(
            "The tool cannot tell whether such an argument is ever an array; if it is, the site is broken. "
            + _TRACER_WHY
        ),
        example=_BEFORE.replace("jnp.clip(g, lo, hi)", "my_clip(g, lo, hi)"),
        use_instead=_AFTER.replace("jnp.clip(g, lo, hi)", "my_clip(g, lo, hi)"),
        safety=(
            "Unsafe: if the argument is really a static setting (say, a callable, a shape, or a "
            "dict or object of settings whose values some code reads as Python numbers or flags, "
            "such as `if config['verbose']:`), passing it as a regular argument breaks the function "
            "under `jit`, where it becomes a Tracer. Off by default; "
            "`--select VJP002 --unsafe-fixes` applies it. When the rule cannot be rewritten "
            "(for the reasons of VJP003), the message ends with the reason and there is no fix."
        ),
        blocked=", and the rule cannot be rewritten automatically: {detail}",
    ),
    Code(
        code="VJP003",
        name="cannot-rewrite-nondiff-array",
        message=(
            ARGUMENT + " of custom_vjp `{function}` is array-valued but listed "
            "in {nondiff_argnums}, and the rule cannot be rewritten automatically: {detail}"
        ),
        fix_title=None,
        fix_safety=FixSafety.NONE,
        default=True,
        triggers=_NONDIFF,
        trigger_pattern=_POSITIONAL,
        what=(
            "Finds array-valued nondiff arguments that the tool cannot migrate: fwd/bwd imported "
            "from a module that is not among the files checked, or built by a call the tool does not "
            "follow (`f, f_fwd, f_bwd = make(...)`; when no function names the arguments, each "
            "position is judged from the calls alone and named `position 1`), a fwd/bwd shared by custom_vjp "
            "functions that would change it "
            "differently, a bwd with a decorator other than jax.jit or staticmethod, a rule read through the "
            "instance (`self.f_bwd`) that a subclass defines again, a partial binding keywords, "
            "nondiff_argnums given by an imported name, an expression or a module constant bound "
            "more than once (an expression's positions are read from bwd's nondiff parameters "
            "when they name the primal's, in order), fwd rebinding the argument, a position that falls "
            "in the primal's `*args` (named `args[0]`...), a bwd with a bare `return` or that can reach "
            "the end of its body (it returns None there, with no cotangent tuple for the `None` items), "
            "a function closing over the argument (a lambda, nested def or partial) that the primal, "
            "fwd or bwd passes at a position of a custom_vjp call that stays in nondiff_argnums (a "
            "static argument that would capture a Tracer), a rule's PEP 484 function type comment "
            "that is no signature of it (`# type: (A, B) -> R` that does not parse, or lists a type "
            "count other than the rule's parameter count: the change cannot update it), and similar."
        ),
        why=_TRACER_WHY,
        example=_BEFORE.replace(
            "def clip_gradient_bwd(", "@profiled  # may depend on bwd's signature\ndef clip_gradient_bwd("
        ),
        use_instead=_AFTER.replace("def clip_gradient_bwd(", "@profiled\ndef clip_gradient_bwd("),
        safety=(
            "No automatic fix. By hand: remove the argument from nondiff_argnums, return it as a "
            "residual from fwd, read it from the residuals in bwd and return None for it."
        ),
    ),
    Code(
        code="VJP004",
        name="inconsistent-vjp-rule",
        message="in custom_vjp `{function}`, {detail}",
        fix_title=None,
        fix_safety=FixSafety.NONE,
        default=True,
        triggers=_NONDIFF,
        trigger_pattern=_POSITIONAL,
        what=(
            "Finds custom_vjp rules whose shapes do not fit the primal: bwd's parameter count is not "
            "the number of nondiff arguments + 2 (which counts no name of nondiff_argnames that JAX "
            "ignores: a keyword-only or positional-only parameter, `**kwargs`, or none of the "
            "primal's), fwd's parameter count differs from the primal's, nondiff_argnums lists a "
            "position the primal lacks or a negative one (custom_vjp does not count from the end), "
            "nondiff_argnums is a bare int other than 0 (JAX raises TypeError when it wraps the "
            "function; it ignores a 0, and the rules are judged for no nondiff argument), "
            "nondiff_argnames names the primal's `*args` (JAX ignores it: those arguments stay "
            "differentiable, and bwd must return their cotangents), fwd takes the primal's "
            "parameters by their names in another order or bwd its nondiff ones (JAX passes "
            "arguments by position, so each name holds another argument), bwd returns a tuple "
            "literal with another number of cotangents than the primal has differentiable "
            "arguments, or the bwd of a "
            "one-argument primal returns a bare value (arithmetic, an array function's call, the "
            "cotangent, a local bound only to such values, or the call of a function of the module "
            "whose every return is one) instead of a tuple. Rules registered as bound methods "
            "(`self.f.defvjp(self.f_fwd, self.f_bwd)` in a method of the class of `f`) are counted "
            "after `self`. Also, once per site, a "
            "`nondiff_argnums` whose value is not read (an expression such as `(0, 1) + EXTRA` or "
            "`compute(1)`, or a name imported from a module not among the files checked), "
            "when bwd is imported from one too or its nondiff parameters are not named like the "
            "primal's parameters, in order: which arguments it lists cannot be told, and the site "
            "is reported rather than passed over."
        ),
        why=(
            "JAX calls bwd as `bwd(*nondiff_args, residuals, g)` and requires a tuple with one "
            "cotangent per differentiable argument. Rules like these are often half-migrated by "
            "hand; they fail when differentiated."
        ),
        example=_BEFORE.replace("def clip_gradient_bwd(lo, hi, _, g):", "def clip_gradient_bwd(res, g):"),
        use_instead=_AFTER,
        safety=(
            "Never rewritten: the intent of an inconsistent rule cannot be read from the code, nor "
            "the positions of a `nondiff_argnums` whose value is not seen."
        ),
    ),
)

BY_CODE: dict[str, Code] = {c.code: c for c in CODES}
DEFAULT_SELECT: frozenset[str] = frozenset(c.code for c in CODES if c.default)


def expand_selection(select: list[str] | None, ignore: list[str] | None) -> frozenset[str]:
    """Resolve ruff-style selectors (exact codes, prefixes such as ``VJP00``, ``ALL``).

    Raises ValueError naming a selector that matches no code.
    """

    def matching(selector: str) -> set[str]:
        selector = selector.strip().upper()
        if selector == "ALL":
            return set(BY_CODE)
        found = {code for code in BY_CODE if code.startswith(selector)}
        if not selector or not found:
            raise ValueError(f"unknown rule selector: {selector!r}")
        return found

    chosen = set(DEFAULT_SELECT) if select is None else set().union(*map(matching, select))
    for selector in ignore or []:
        chosen -= matching(selector)
    return frozenset(chosen)


@cache  # once per run, not once per file
def triggers_for(select: frozenset[str]) -> tuple[bytes, ...]:
    """The words a file must contain for any selected code to be possible in it."""
    return tuple(sorted({word for code in select for word in BY_CODE[code].triggers}))


@cache
def _trigger_pattern(select: frozenset[str]) -> re.Pattern[bytes] | None:
    sources = sorted({BY_CODE[code].trigger_pattern for code in select} - {b""})
    return re.compile(b"|".join(sources)) if sources else None


def may_trigger(data: bytes, select: frozenset[str]) -> bool:
    """Whether a selected code may be possible in a file of these bytes (the byte filter): one of
    their trigger words occurs, one of their trigger patterns matches, or the file may register
    rules on a site through an imported alias of the partial (which every code may report on)."""
    if any(word in data for word in triggers_for(select)):
        return True
    pattern = _trigger_pattern(select)
    if pattern is not None and pattern.search(data) is not None:
        return True
    return bool(select) and b"defvjp" in data and _imports_an_alias_use(data)


def _imports_an_alias_use(data: bytes) -> bool:
    """Whether a bare name a def is decorated with, or a name is bound to a call of, is a word of
    an import statement (`from m import (\n a,\n vjp_w)` and backslash-continued lines too; one scan):
    `@staticmethod` or `@property` never is, so a file that only registers rules of its own is
    not let in."""
    names = {m.group("decorator") or m.group("called") for m in _IMPORTED_ALIAS_USE.finditer(data)}
    imported = set(re.findall(rb"\w+", b" ".join(_IMPORT_STATEMENT.findall(data)))) if names else set()
    return not imported.isdisjoint(names)


def format_message(code: str, blocked: bool = False, unnamed: bool = False, **values: object) -> str:
    """The code's message; ``blocked``: for a finding whose rule cannot be rewritten; ``unnamed``:
    of an argument no function names (UNNAMED)."""
    c = BY_CODE[code]
    message = c.message + (c.blocked if blocked else "")
    return (message.replace(ARGUMENT, UNNAMED) if unnamed else message).format(**values)


def _availability(c: Code) -> str:
    fix = {
        FixSafety.SAFE: "Fix is available and safe where the evidence is clear (unsafe otherwise).",
        FixSafety.UNSAFE: "Fix is available but unsafe: it needs `--unsafe-fixes`.",
        FixSafety.NONE: "No automatic fix.",
    }[c.fix_safety]
    return fix + ("" if c.default else f" Off by default: enable it with `--select {c.code}`.")


def explain(code: str) -> str:
    """The rule's documentation in ruff's headings, as Markdown."""
    c = BY_CODE[code]
    return "\n".join(
        [
            f"# {c.name} ({c.code})",
            "",
            _availability(c),
            "",
            "## What it does",
            c.what,
            "",
            "## Why is this bad?",
            c.why,
            "",
            "## Example",
            "```python",
            c.example.rstrip(),
            "```",
            "",
            "## Use instead",
            "```python",
            c.use_instead.rstrip(),
            "```",
            "",
            "## Fix safety",
            c.safety,
            "",
        ]
    )


def rules_markdown() -> str:
    """The README's rule table, generated from this table (a test keeps the README in sync)."""
    rows = ["| Code | Name | Default | Fix | Message |", "| --- | --- | --- | --- | --- |"]
    for c in CODES:
        message = c.message.replace("{", "").replace("}", "").replace("|", "\\|")
        rows.append(f"| {c.code} | {c.name} | {'on' if c.default else 'off'} | {c.fix_safety.value} | {message} |")
    return "\n".join(rows)
