"""Classify, step 7f: ``Uses``, the evidence from what a function does with an argument (arithmetic,
array methods, calls, control flow, keys, type tests and the branches they pick).

One visitor composed of the steps' classes: ``UseState`` (uses_names.py) keeps the names and the
evidence, ``Containers`` (uses_containers.py) tells what an indexed or keyed container holds,
``Operators`` (uses_operators.py), ``Branches`` (uses_branches.py), ``Helpers``
(uses_helpers.py) and ``CallUses`` (uses_calls.py) each judge one kind of use.
"""

from __future__ import annotations

from vjp_migrate.classify.uses_calls import CallUses
from vjp_migrate.classify.uses_operators import Operators


class Uses(CallUses, Operators):
    """Collects evidence about how one name is used inside one function body."""
