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
# pytest's own traceback styles (long, short, auto): `tests/test_ops.py:6: in test_grad` or
# `tests/test_ops.py:6: UnexpectedTracerError` after the frame's code.
PYTEST_FRAME = re.compile(r"^(?P<file>[^\s\"'][^:\n]*\.py):(?P<line>\d+):(?: (?P<rest>[^\n]*))?$", re.M)
PYTEST_ERROR_PREFIX = re.compile(r"^E {3}", re.M)
FOLLOWED_IMPORTS = 2  # the calling file's imports, and theirs (a package's __init__ re-exporting a module)
MAX_FILES = 200
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
    """The traceback's frames, outermost first, as Python or pytest prints them."""
    found = [
        (m.start(), Frame(m["file"], int(m["line"]), m["func"].strip(), m["code"].strip()))
        for m in FRAME.finditer(text)
    ]
    for m in PYTEST_FRAME.finditer(text):
        rest = (m["rest"] or "").strip()
        function = rest[3:] if rest.startswith("in ") else ""
        found.append((m.start(), Frame(m["file"], int(m["line"]), function, _source_line(m["file"], int(m["line"])))))
    return [frame for _, frame in sorted(found, key=lambda pair: pair[0])]


def _source_line(file: str, line: int) -> str:
    """Line ``line`` of ``file`` (pytest prints the code above its location line, with markers)."""
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:
            for number, text in enumerate(handle, 1):
                if number == line:
                    return text.strip()
    except OSError:
        pass
    return ""


def _user_files(found: list[Frame]) -> list[str]:
    files: list[str] = []
    for frame in reversed(found):  # innermost first
        if any(part in frame.file.replace(os.sep, "/") for part in LIBRARY_PARTS):
            continue
        if frame.file not in files and os.path.isfile(frame.file):
            files.append(frame.file)
    return files


def _package_root(file: Path) -> Path:
    """The folder above the outermost package holding ``file`` (where its absolute imports start)."""
    folder = file.parent
    while (folder / "__init__.py").is_file() and folder.parent != folder:
        folder = folder.parent
    return folder


def _module_files(dotted: str, roots: list[Path]) -> list[Path]:
    """The files that may hold module ``dotted`` (or its package) under the roots."""
    parts = [p for p in dotted.split(".") if p]
    found = []
    for root in roots:
        for depth in range(1, len(parts) + 1):
            base = root.joinpath(*parts[:depth])
            for candidate in (base.with_suffix(".py"), base / "__init__.py"):
                if candidate.is_file() and candidate not in found:
                    found.append(candidate)
    return found


def _imported_files(file: Path) -> list[Path]:
    """The project files ``file`` imports from, found on disk beside it (never imported or run)."""
    import ast

    try:
        tree = ast.parse(file.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    roots = list(dict.fromkeys([_package_root(file), file.parent, Path.cwd(), Path.cwd() / "src"]))
    found: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [(alias.name, roots) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the file's own package, up level - 1 folders
                base = file.parents[node.level - 1] if node.level <= len(file.parents) else None
                here = [base] if base is not None else []
            else:
                here = roots
            module = node.module or ""
            targets = [(module, here)] + [(f"{module}.{alias.name}".strip("."), here) for alias in node.names]
        else:
            continue
        for dotted, where in targets:
            found += [f for f in _module_files(dotted, where) if f not in found]
    return found


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is below it, as the traceback's own paths are."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path.cwd()))
    except ValueError:
        return str(absolute)


def _candidate_files(found: list[Frame]) -> list[str]:
    """The traceback's user files, then the project files they import (the custom_vjp called in a
    test or script is usually defined in a module of the package it imports)."""
    files = _user_files(found)
    seen = {os.path.abspath(f) for f in files}
    layer = [Path(f) for f in files]
    for _ in range(FOLLOWED_IMPORTS):
        following: list[Path] = []
        for file in layer:
            for imported in _imported_files(file):
                absolute = os.path.abspath(imported)
                library = any(part in absolute.replace(os.sep, "/") for part in LIBRARY_PARTS)
                if absolute not in seen and not library and len(seen) < MAX_FILES:
                    seen.add(absolute)
                    following.append(imported)
        files += [_shown(f) for f in following]
        layer = following
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
    if ERROR not in " ".join(PYTEST_ERROR_PREFIX.sub("", text).split()):
        return Outcome("No JAX custom_vjp nondiff_argnums Tracer error found in the input.\n", 2)
    from vjp_migrate.api import analyze
    from vjp_migrate.source import SourceError, decode

    found = frames(text)
    analysed: list[tuple[str, SiteDecision, object]] = []
    for file in _candidate_files(found):
        try:
            data = Path(file).read_bytes()
            if b"nondiff_arg" not in data:
                continue
            analysis = analyze(decode(data).text, file, EVERYTHING)
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
