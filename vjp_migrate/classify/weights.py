"""Classify, step 1: how much a piece of evidence weighs; the later steps mark it, ``_decide`` reads it."""

from __future__ import annotations

# DOUBT: a local that only possibly holds the argument's values is needed concretely; the argument
# is then UNKNOWN whatever else says array.
STRONG, WEAK, CALL_SITE, SCALAR, OBJECT, DOUBT = "strong", "weak", "call site", "scalar", "object", "doubt"
# A static use on a branch a type test of the argument picks (`if callable(m): m = m(x)`): the
# argument may be something else on the other branch, array data too. An array use on such a
# branch (`if isinstance(lr, float): return x * lr`) may be of a Python number: it weighs as
# strong everywhere but against a GUARDED static use.
GUARDED, BRANCH_ARRAY = "guarded", "array on a type-picked branch"
NEEDED, MAYBE_NEEDED = "its values are needed concretely", "its values may be needed concretely"
# A parameter a caller annotates with a class registered as a pytree with no leaves, passed on at
# a call site: static like any value a call site passes, yet a JAX value, which can be moved.
LEAFLESS = "a pytree with no leaves passed"
# The text of an arithmetic use: the only array evidence for a call-site tag (`8 + 4 * site`).
ARITHMETIC = "used in arithmetic"
# A use seen and discounted (arithmetic with a size, a value from it passed to a function not
# analysed): no evidence, only a reason to show when nothing else decides.
NOTED = "noted"
# The argument itself passed to a function whose body is not read (imported from a file not
# checked, a module attribute, a third-party function): it may need a concrete value there (an
# `lru_cache` key, a Python `if`), so array evidence elsewhere gives no safe fix, unless a call
# passes a TRACED value: the code means that function to take a Tracer.
OPAQUE = "passed where its body is not seen"
TRACED = "a traced value"
# The text of a use deciding an `if`, `while`, `match` or `assert`: a concrete value, where it runs.
CONTROL = "decides Python control flow"
CALLED = "called as a function"
