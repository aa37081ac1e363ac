"""`explain-error`: from JAX's "Tracer ... nondiff_argnums" traceback to the definition and its fix.

The error does not name the function, so the traceback's frames are read (the user's files and
installed packages; JAX's own and the standard library's are skipped): the innermost frame whose
line calls a custom_vjp defined in one of those files, or in a module they import, is the culprit;
so is one the innermost of those frames hands to JAX as a function (`jax.jit(mylib.f)(x)`), when
its name fits exactly one custom_vjp found.
Imports are resolved on disk only (nothing is imported or run), against the calling file's
package, the current folder, `src/` and the site-packages folders the traceback names.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.codes import ARGUMENT, BY_CODE, UNNAMED, may_trigger
from vjp_migrate.model import ArgInfo, ArgKind, Settings, SiteDecision
from vjp_migrate.report import diff_text, grouped_reasons, lines_span
from vjp_migrate.wording import shell_path

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
INSTALLED = ("site-packages", "dist-packages")
JAX_PACKAGES = frozenset({"jax", "jaxlib"})  # the error is raised there; never the culprit
# Outside site-packages: a JAX checkout, the standard library, frozen modules.
NOT_SEARCHED = ("/jax/_src/", "/jaxlib/", "<frozen", "/lib/python3")
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


def _installed_root(file: str) -> Path | None:
    """The site-packages (or dist-packages) folder ``file`` is installed in, if any."""
    parts = Path(file).parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] in INSTALLED:
            return Path(*parts[: i + 1])
    return None


def _top_level(file: str, installed: Path) -> Path:
    """The installed package (or single module) ``file`` belongs to."""
    parts = Path(file).relative_to(installed).parts
    return installed / parts[0] if parts else installed


def _searched(file: str) -> bool:
    """Whether ``file`` may hold the user's custom_vjp: not JAX's, not the standard library's."""
    installed = _installed_root(file)
    if installed is not None:
        return _top_level(file, installed).name not in JAX_PACKAGES
    return not any(part in file.replace(os.sep, "/") for part in NOT_SEARCHED)


def _user_files(found: list[Frame]) -> list[str]:
    files: list[str] = []
    for frame in reversed(found):  # innermost first
        if _searched(frame.file) and frame.file not in files and os.path.isfile(frame.file):
            files.append(frame.file)
    return files


def _site_folders(found: list[Frame]) -> list[Path]:
    """The site-packages folders the traceback's frames are in (the environment that ran the code);
    when it names none (JAX drops its own frames), the running Python's, where vjp-migrate is
    usually installed beside the project."""
    named = [root for frame in found if (root := _installed_root(frame.file)) is not None]
    return list(dict.fromkeys(named or _environment_sites()))


def _environment_sites() -> list[Path]:
    import sysconfig

    paths = sysconfig.get_paths()
    return [Path(paths[key]) for key in ("purelib", "platlib") if key in paths]


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


def _imported_files(file: Path, sites: list[Path]) -> list[Path]:
    """The files ``file`` imports from, found on disk (never imported or run): beside it, in the
    current folder's project, in the site-packages folders ``sites``. An installed file's
    imports are followed within its own package only, and only when it mentions jax or is a
    package's __init__."""
    try:
        data = file.read_bytes()
        installed = _installed_root(str(file))
        if installed is not None and b"jax" not in data and file.name != "__init__.py":
            return []  # pytest's, pluggy's... frames; a package's __init__ may re-export
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    if installed is not None:
        package = _top_level(str(file), installed)
        return [f for f in _imports(tree, file, [installed]) if package in f.parents]
    roots = [_package_root(file), file.parent, Path.cwd(), Path.cwd() / "src", *sites]
    return _imports(tree, file, list(dict.fromkeys(roots)))


def _imports(tree: ast.AST, file: Path, roots: list[Path]) -> list[Path]:
    """The files of the modules ``tree`` imports, under ``roots`` (relative ones: from ``file``)."""
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
    sites = _site_folders(found)
    seen = {os.path.abspath(f) for f in files}
    layer = [Path(f) for f in files]
    for _ in range(FOLLOWED_IMPORTS):
        following: list[Path] = []
        for file in layer:
            for imported in _imported_files(file, sites):
                absolute = os.path.abspath(imported)
                if absolute not in seen and _searched(absolute) and len(seen) < MAX_FILES:
                    seen.add(absolute)
                    following.append(imported)
        files += [_shown(f) for f in following]
        layer = following
    return files


def _function_arguments(code: str) -> set[str]:
    """The names a line of code hands to a call as a function: `jax.jit(mylib.f)(x)`,
    `jax.vmap(f, in_axes=0)`, `lax.scan(body, ...)`, `partial(f, s)` give `f` (the last part of a
    dotted name). The arguments of a call whose callee is itself a call (the `(x)` of
    `jax.jit(f)(x)`) are data, never functions: they are left out."""
    try:
        tree = ast.parse(code + " pass" if code.rstrip().endswith(":") else code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not isinstance(node.func, ast.Call):
            for value in [*node.args, *(k.value for k in node.keywords)]:
                if isinstance(value, ast.Name):
                    names.add(value.id)
                elif isinstance(value, ast.Attribute):
                    names.add(value.attr)
    return names


def _passed_here(
    frame: Frame, analysed: list[tuple[str, SiteDecision, object]]
) -> tuple[str, SiteDecision, object] | None:
    """The custom_vjp the innermost user frame hands to JAX (which then calls it, in frames the
    traceback leaves out or that are JAX's own), when exactly one analysed custom_vjp has a name
    the line passes as a function; one defined in the frame's own file wins over others of the
    same name. None when nothing or several fit: a wrong pointer is worse than none."""
    names = _function_arguments(frame.code)
    fits = [entry for entry in analysed if entry[1].site.name.split(".")[-1] in names]
    if len(fits) > 1:
        own = [entry for entry in fits if os.path.abspath(entry[0]) == os.path.abspath(frame.file)]
        fits = own if len(own) == 1 else fits
    return fits[0] if len(fits) == 1 else None


def _fix_command(suspects: list[ArgInfo], path: str) -> str:
    """The narrowest `fix` that makes this migration: the plain one when it is a safe fix of
    array data, else with the unsafe fixes (and VJP002's arguments) it needs, on this file only."""
    argument = shell_path(path)
    if all(i.kind is ArgKind.ARRAY and i.strong for i in suspects):
        return f"vjp-migrate fix {argument}"
    if all(i.kind is ArgKind.ARRAY for i in suspects):
        return f"vjp-migrate fix --unsafe-fixes {argument}"
    return f"vjp-migrate fix --unsafe-fixes --select ALL {argument}"


def _describe(decision: SiteDecision, path: str, module: object, caller: Frame | None, how_used: str = "called") -> str:
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from vjp_migrate.rewrite import apply_plans
    from vjp_migrate.sites import unnamed_position

    assert isinstance(module, cst.Module)
    positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    where = positions[decision.site.anchor].start
    lines = [
        f"{path}:{where.line}:{where.column + 1}: custom_vjp `{decision.site.qualname}` received a JAX Tracer "
        "in a position listed in nondiff_argnums"
    ]
    if caller is not None:
        lines.append(f"  {how_used} at {caller.file}:{caller.line}: {caller.code}")
    suspects = [i for i in decision.infos if i.kind is not ArgKind.STATIC]
    for info in decision.infos:
        kind = {ArgKind.ARRAY: "array-valued", ArgKind.UNKNOWN: "may be an array", ArgKind.STATIC: "static"}[info.kind]
        grouped = list(grouped_reasons(info.evidence).items())[:2]  # the same text seen twice is one reason
        reasons = "; ".join(f"{text} ({lines_span(at)})" if at else text for (_, text, _, _), at in grouped)
        named = (UNNAMED if unnamed_position(decision.site, info.index) else ARGUMENT).format(
            argument=info.name, index=info.index
        )
        lines.append(f"  {named}: {kind}" + (f" — {reasons}" if reasons else ""))
    if decision.plan is not None:
        new = apply_plans(module, [decision.plan]).code
        diff = diff_text(module.code, new, path)
        how = (
            f"`{_fix_command(suspects, path)}` applies it"
            if _installed_root(path) is None
            else "this file belongs to an installed package: migrate the package's own source, "
            "or report it to its maintainers"
        )
        lines += [
            "",
            f"The migration ({how}):",
            diff.rstrip("\n"),
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
            if not may_trigger(data, EVERYTHING.select):
                continue
            analysis = analyze(decode(data).text, file, EVERYTHING)
        except (SourceError, OSError):
            continue
        analysed.extend((file, d, analysis.module) for d in analysis.decisions)
    innermost = next((frame for frame in reversed(found) if _searched(frame.file)), None)
    for frame in reversed(found):
        for file, decision, module in analysed:
            name = decision.site.name.split(".")[-1]
            if re.search(rf"(?<![\w.]){re.escape(name)}\s*\(|\.{re.escape(name)}\s*\(", frame.code):
                return Outcome(_describe(decision, file, module, frame), 0)
        if frame is innermost and (passed := _passed_here(frame, analysed)) is not None:
            file, decision, module = passed
            return Outcome(_describe(decision, file, module, frame, "passed"), 0)
    own = [entry for entry in analysed if _installed_root(entry[0]) is None]
    if len(own) == 1:  # the project's only custom_vjp (an installed one must be seen called)
        file, decision, module = own[0]
        return Outcome(_describe(decision, file, module, None), 0)
    files = ", ".join(_user_files(found)) or "none readable"
    return Outcome(
        "The traceback has JAX's nondiff_argnums Tracer error, but no custom_vjp called in its frames was "
        f"found in the files it names ({files}). Run `vjp-migrate check --select ALL` on the module that "
        "defines the function.\n",
        1,
    )
