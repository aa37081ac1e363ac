"""`explain-error`: from JAX's "Tracer ... nondiff_argnums" traceback to the definition and its fix.

The error does not name the function, so the traceback's frames in user code are read: the
innermost frame whose line calls a custom_vjp defined in one of those files is the culprit.
"""

from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.codes import BY_CODE
from vjp_migrate.model import ArgKind, Settings, SiteDecision

ERROR = (
    "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position "
    "indicated by nondiff_argnums"
)
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>[^\n]+)\n(?P<code>[^\n]*)', re.M)
LIBRARY_PARTS = ("site-packages", "dist-packages", "/jax/_src/", "/jaxlib/", "<frozen", "/lib/python3")
EVERYTHING = Settings(frozenset(BY_CODE), unsafe_fixes=True)


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str
    code: str


@dataclass(frozen=True)
class Outcome:
    text: str
    exit_code: int  # 0 found, 1 error seen but definition not found, 2 no such error


def frames(text: str) -> list[Frame]:
    """The traceback's frames, outermost first, as Python prints them."""
    return [Frame(m["file"], int(m["line"]), m["func"].strip(), m["code"].strip()) for m in FRAME.finditer(text)]


def _user_files(found: list[Frame]) -> list[str]:
    files: list[str] = []
    for frame in reversed(found):  # innermost first
        if any(part in frame.file.replace(os.sep, "/") for part in LIBRARY_PARTS):
            continue
        if frame.file not in files and os.path.isfile(frame.file):
            files.append(frame.file)
    return files


def _describe(decision: SiteDecision, path: str, module: object, caller: Frame | None) -> str:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from vjp_migrate.rewrite import apply_plans

    assert isinstance(module, cst.Module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    where = positions[decision.site.anchor].start
    lines = [
        f"{path}:{where.line}:{where.column + 1}: custom_vjp `{decision.site.qualname}` received a JAX Tracer "
        "in a position listed in nondiff_argnums"
    ]
    if caller is not None:
        lines.append(f"  called at {caller.file}:{caller.line}: {caller.code}")
    suspects = [i for i in decision.infos if i.kind is not ArgKind.STATIC]
    for info in decision.infos:
        kind = {ArgKind.ARRAY: "array-valued", ArgKind.UNKNOWN: "may be an array", ArgKind.STATIC: "static"}[info.kind]
        reasons = "; ".join(e.text for e in info.evidence[:2])
        lines.append(f"  `{info.name}` (position {info.index}): {kind}" + (f" — {reasons}" if reasons else ""))
    if decision.plan is not None:
        new = apply_plans(module, [decision.plan]).code
        diff = difflib.unified_diff(module.code.splitlines(True), new.splitlines(True), path, path)
        lines += [
            "",
            "The migration (`vjp-migrate fix --unsafe-fixes --select ALL` applies it):",
            "".join(diff).rstrip("\n"),
        ]
    elif decision.problem:
        lines += [
            "",
            f"It cannot be migrated automatically: {decision.problem}. Move the array arguments out of "
            "nondiff_argnums by hand: save them as residuals in fwd and return None for them from bwd.",
        ]
    elif not suspects:
        names = ", ".join(f"`{i.name}`" for i in decision.infos)
        lines += [
            "",
            f"Every nondiff argument ({names}) looks static to vjp-migrate, but one of them was a Tracer. "
            "Name it in `array-args` under [tool.vjp-migrate] in pyproject.toml "
            f'(e.g. array-args = ["{decision.site.qualname}:{decision.infos[0].name if decision.infos else "x"}"]) '
            "and run `vjp-migrate fix`.",
        ]
    return "\n".join(lines) + "\n"


def explain_traceback(text: str) -> Outcome:
    """Find the custom_vjp the traceback's error comes from and say how to migrate it."""
    if ERROR not in " ".join(text.split()):
        return Outcome("No JAX custom_vjp nondiff_argnums Tracer error found in the input.\n", 2)
    from vjp_migrate.api import analyze
    from vjp_migrate.source import SourceError, decode

    found = frames(text)
    analysed: list[tuple[str, SiteDecision, object]] = []
    for file in _user_files(found):
        try:
            analysis = analyze(decode(Path(file).read_bytes()).text, file, EVERYTHING)
        except (SourceError, OSError):
            continue
        analysed.extend((file, d, analysis.module) for d in analysis.decisions)
    for frame in reversed(found):
        for file, decision, module in analysed:
            name = decision.site.name.split(".")[-1]
            if re.search(rf"(?<![\w.]){re.escape(name)}\s*\(|\.{re.escape(name)}\s*\(", frame.code):
                return Outcome(_describe(decision, file, module, frame), 0)
    if len(analysed) == 1:
        file, decision, module = analysed[0]
        return Outcome(_describe(decision, file, module, None), 0)
    files = ", ".join(_user_files(found)) or "none readable"
    return Outcome(
        "The traceback has JAX's nondiff_argnums Tracer error, but no custom_vjp called in its frames was "
        f"found in the files it names ({files}). Run `vjp-migrate check --select ALL` on the module that "
        "defines the function.\n",
        1,
    )
