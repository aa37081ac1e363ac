"""Stage 13: results -> text for people and machines. The only place that imports rich (lazily)."""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TextIO

from vjp_migrate.model import Diagnostic, Evidence, FileResult, FixSafety, Status
from vjp_migrate.wording import count

FORMATS = ("text", "concise", "json", "github", "sarif", "junit")


def _use_colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR")  # set and empty counts as unset (no-color.org)


def diagnostic_json(d: Diagnostic) -> dict[str, object]:
    """One finding in the stable JSON schema documented in the README."""
    return {
        "code": d.code,
        "message": d.message,
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "function": d.function,
        "argument": d.argument,
        "index": d.index,
        "fixable": d.fixable,
        "fix_safety": d.fix_safety.value,
        "reasons": [
            {
                "kind": e.kind.value,
                "text": e.text,
                "line": e.line,
                **({"path": e.path} if e.path is not None else {}),
                **({"cell": e.cell} if e.cell is not None else {}),
            }
            for e in d.reasons
        ],
        **({"cell": d.cell} if d.cell is not None else {}),
        **({"also_touches": list(d.also_touches)} if d.also_touches else {}),
        **({"notes": list(d.notes)} if d.notes else {}),
    }


def _finding_lines(d: Diagnostic, show_reasons: bool) -> list[tuple[str, str]]:
    """(style, text) pieces: location, code, message, then reasons."""
    lines = [("location", f"{location(d)}:"), ("code", f" {d.code}"), ("plain", f" {d.message}")]
    if d.fixable:
        lines.append(("fix", " [*]" if d.fix_safety.value == "safe" else " [*unsafe]"))
    if d.also_touches:
        lines.append(("reason", f"\n    the fix also changes {', '.join(d.also_touches)}"))
    lines += [("reason", f"\n    {note}") for note in d.notes]
    if show_reasons:
        for (kind, text, path, cell), at in grouped_reasons(d.reasons).items():
            span = lines_span(at)
            if cell is not None and cell != d.cell:
                span = f"cell {cell}, {span}"
            if path is not None:
                span = f"{path}, {span}"
            where = f" ({span})" if at else ""
            lines.append(("reason", f"\n    {d.argument}: {kind} — {text}{where}"))
    return lines


def grouped_reasons(reasons: Sequence[Evidence]) -> dict[tuple[str, str, str | None, int | None], list[int]]:
    """One entry per reason text, with every line it was seen on: a helper's arithmetic is one
    reason, however many lines of the helper show it (JSON keeps each)."""
    grouped: dict[tuple[str, str, str | None, int | None], list[int]] = {}
    for reason in reasons:
        at = grouped.setdefault((reason.kind.value, reason.text, reason.path, reason.cell), [])
        if reason.line and reason.line not in at:
            at.append(reason.line)
    return grouped


def lines_span(at: Sequence[int]) -> str:
    """``line 3`` or ``lines 3, 8``."""
    return f"{'line' if len(at) == 1 else 'lines'} {', '.join(map(str, at))}"


def location(d: Diagnostic) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` in a notebook (as ruff writes it)."""
    cell = f":cell {d.cell}" if d.cell is not None else ""
    return f"{d.path}{cell}:{d.line}:{d.column}"


def concise_line(d: Diagnostic) -> str:
    return f"{location(d)}: {d.code} {d.message}"


def error_line(result: FileResult) -> str:
    return f"{result.path}: error: {result.reason}"


def _print(pieces: list[tuple[str, str]], stream: TextIO) -> None:
    if not _use_colour(stream):
        stream.write("".join(text for _, text in pieces) + "\n")
        return
    from rich.console import Console
    from rich.text import Text

    styles = {"location": "bold", "code": "bold red", "fix": "cyan", "reason": "dim", "plain": "", "ok": "green"}
    text = Text()
    for style, piece in pieces:
        text.append(piece, style=styles.get(style, ""))
    Console(file=stream, highlight=False, soft_wrap=True, force_terminal=True, no_color=False).print(text)


def print_errors(results: Sequence[FileResult], stream: TextIO | None = None) -> None:
    stream = stream or sys.stderr
    for result in results:
        if result.status is Status.FAILED:
            stream.write(error_line(result) + "\n")


def _unprocessed(failed: int) -> str:
    return f"{count(failed, 'file')} could not be processed"


def _unsafe_only(findings: Sequence[Diagnostic]) -> int:
    """How many findings only `fix --unsafe-fixes` fixes (ruff's hidden fixes)."""
    return sum(1 for d in findings if not d.fixable and d.fix_safety is FixSafety.UNSAFE)


def _unsafe_available(n: int, how: str) -> str:
    return f"{count(n, 'unsafe fix', 'unsafe fixes')} available with `{how}`"


def check_summary(results: Sequence[FileResult]) -> tuple[str, str]:
    """The last line of `check` (with its style): what was checked, what was found, what failed."""
    findings = [d for r in results for d in r.diagnostics]
    checked = sum(1 for r in results if r.status is Status.OK)
    failed = sum(1 for r in results if r.status is Status.FAILED)
    files = f"{count(checked, 'file')} checked"
    errors = f"; {_unprocessed(failed)}" if failed else ""
    if findings:
        fixable = sum(1 for d in findings if d.fixable)
        unsafe = _unsafe_only(findings)
        if fixable:
            more = f" ({_unsafe_available(unsafe, '--unsafe-fixes')})" if unsafe else ""
            hint = f" Run `vjp-migrate fix` to apply the fixes{more}."
        else:
            hint = f" {_unsafe_available(unsafe, 'vjp-migrate fix --unsafe-fixes')}." if unsafe else ""
        return "plain", f"Found {count(len(findings), 'finding')} ({fixable} fixable) in {files}{errors}.{hint}"
    if failed and not checked:
        return "plain", f"Nothing checked: {_unprocessed(failed)}."
    if failed:
        return "plain", f"No findings in {files}{errors}."
    if not checked:
        return "ok", "No files to check."
    return "ok", f"All checks passed ({files})."


def print_check(results: Sequence[FileResult], show_reasons: bool, stream: TextIO | None = None) -> None:
    stream = stream or sys.stdout
    for d in (d for r in results for d in r.diagnostics):
        _print(_finding_lines(d, show_reasons), stream)
    _print([check_summary(results)], stream)


def noqa_summary(results: Sequence[FileResult]) -> tuple[str, str]:
    """The last line of `check --add-noqa` (with its style); `check`'s own when nothing was added."""
    written = [r for r in results if r.written]
    refused = [r for r in results if r.changed and not r.written]  # not written: their errors say why
    if not written and not refused:
        return check_summary(results)
    added = sum(len(r.diagnostics) for r in written)
    head = f"Added noqa comments for {count(added, 'finding')} in {count(len(written), 'file')}"
    clauses = [head if written else "Added no noqa comments"]
    if refused:
        kept = sum(len(r.diagnostics) for r in refused)
        clauses.append(f"{count(kept, 'finding')} in {count(len(refused), 'file')} not written")
    if failed := sum(1 for r in results if r.status is Status.FAILED and not r.changed):
        clauses.append(_unprocessed(failed))
    return "plain", "; ".join(clauses) + "."


def print_noqa(results: Sequence[FileResult], show_reasons: bool, stream: TextIO | None = None) -> None:
    """The findings `check --add-noqa` silenced, then its summary."""
    stream = stream or sys.stdout
    print_findings(silenced(results), show_reasons, stream)
    _print([noqa_summary(results)], stream)


def silenced(results: Sequence[FileResult]) -> list[Diagnostic]:
    """The findings `check --add-noqa` wrote a comment for."""
    return [d for r in results if r.written for d in r.diagnostics]


def print_findings(diagnostics: Sequence[Diagnostic], show_reasons: bool, stream: TextIO | None = None) -> None:
    """The findings as print_check shows them, without its summary (`--quiet`)."""
    for d in diagnostics:
        _print(_finding_lines(d, show_reasons), stream or sys.stdout)


def unified_diff(result: FileResult) -> bytes:
    """The file's diff in its own bytes, as `git apply -p0` and `patch -p0` read the file: its
    encoding, its BOM; the names in the file system's (quoted as git quotes them)."""
    bom = "\ufeff" if result.encoding == "utf-8-sig" else ""
    text = diff_text(bom + (result.old_text or ""), bom + (result.new_text or ""), str(result.path))
    headers, _, hunks = text.partition("\n@@")
    codec = "utf-8" if result.encoding == "utf-8-sig" else result.encoding
    return headers.encode("utf-8", "surrogateescape") + (b"\n@@" + hunks.encode(codec) if hunks else b"")


def diff_text(old: str, new: str, name: str) -> str:
    """A unified diff `git apply` and `patch` take: lines end at `\\n` only, as they count them
    (not at a lone CR, a form feed or U+2028, where str.splitlines ends them too); a last line
    without its newline gets one and GNU diff's `\\ No newline at end of file` (so the next
    file's header starts a line); a name with a quote, a backslash or a control character is
    quoted as git quotes it."""
    quoted = _git_quoted(name)
    lines = difflib.unified_diff(_LINES.findall(old), _LINES.findall(new), quoted, quoted)
    return "".join(line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines)


_LINES = re.compile(r"[^\n]*\n|[^\n]+\Z")
_GIT_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\v": "\\v",
    "\f": "\\f",
    "\r": "\\r",
    '"': '\\"',
    "\\": "\\\\",
}


def _git_quoted(name: str) -> str:
    if not any(c in _GIT_ESCAPES or c < " " or c == "\x7f" for c in name):
        return name
    escaped = "".join(_GIT_ESCAPES.get(c) or (f"\\{ord(c):03o}" if c < " " or c == "\x7f" else c) for c in name)
    return f'"{escaped}"'


def print_patches(results: Sequence[FileResult], stream: TextIO) -> None:
    """The patch of every changed file, in its own bytes."""
    for result in results:
        if result.changed:
            write_patch(stream, unified_diff(result))


def write_patch(stream: TextIO, patch: bytes) -> None:
    """A patch in its files' bytes, to a text stream (through its buffer when it has one)."""
    buffer = getattr(stream, "buffer", None)
    if buffer is None:
        stream.write(patch.decode("utf-8", "replace"))
        return
    stream.flush()
    buffer.write(patch)
    buffer.flush()


def fix_summary(results: Sequence[FileResult], diff: bool) -> tuple[str, str]:
    """The last line of `fix` (with its style): what was (or would be) fixed, what remains, what failed."""
    changed = [r for r in results if r.changed]
    done = changed if diff else [r for r in changed if r.written]
    refused = [] if diff else [r for r in changed if not r.written]  # not written: their errors say why
    remaining = sum(len(r.remaining) for r in results)
    unsafe = _unsafe_only([d for r in results for d in r.remaining])
    left = f" ({_unsafe_available(unsafe, '--unsafe-fixes')})" if unsafe else ""
    failed = sum(1 for r in results if r.status is Status.FAILED and not r.changed)
    nothing = "Would fix nothing" if diff else "Nothing fixed"
    if done:
        head = f"{'Would fix' if diff else 'Fixed'} {_findings_in(done)}" + (
            f", {remaining} remaining{left}" if remaining else ""
        )
    elif remaining:
        head = f"{nothing}, {count(remaining, 'finding')} remaining{left}"
    elif refused:
        head = nothing
    elif failed:
        checked = sum(1 for r in results if r.status is Status.OK)
        if not checked:
            return "plain", f"{nothing}: {_unprocessed(failed)}."
        head = f"Nothing to fix in {count(checked, 'file')}"
    else:
        return "ok", "Nothing to fix."
    clauses = [head, *([f"{_findings_in(refused)} not written"] if refused else [])]
    clauses += [_unprocessed(failed)] if failed else []
    return "plain", "; ".join(clauses) + "."


def print_fix(results: Sequence[FileResult], diff: bool, show_reasons: bool, stream: TextIO | None = None) -> None:
    """With ``diff``, the patch alone goes to stdout (`fix --diff > x.patch`, as ruff does); the
    findings left and the summary to stderr."""
    stream = stream or sys.stdout
    if diff:
        print_patches(results, stream)
        stream = sys.stderr if stream is sys.stdout else stream
    for d in (d for r in results for d in r.remaining):
        _print(_finding_lines(d, show_reasons), stream)
    for fixed, note in ((d, note) for r in results for d in r.fixed for note in d.notes):  # what it left as it was
        _print([("location", f"{location(fixed)}:"), ("reason", f" note: {note}")], stream)
    _print([fix_summary(results, diff)], stream)


def _findings_in(results: Sequence[FileResult]) -> str:
    fixed = sum(len(r.fixed) for r in results)
    return f"{count(fixed, 'finding')} in {count(len(results), 'file')}"


def render_machine(results: Sequence[FileResult], output_format: str) -> str:
    """The machine-readable formats: concise, json, github, sarif, junit."""
    from vjp_migrate import formats

    renderers = {
        "concise": lambda: formats.render_concise(results),
        "json": lambda: formats.render_json(results),
        "github": lambda: formats.render_github(results),
        "sarif": lambda: formats.render_sarif(results),
        "junit": lambda: formats.render_junit(results),
    }
    return renderers[output_format]()


PROGRESS_AFTER = 2.0  # seconds: short runs never show a bar


@contextmanager
def progress(enabled: bool = True, stream: TextIO | None = None) -> Iterator[Callable[[int, int], None] | None]:
    """A progress callback that draws a rich bar on stderr once a run takes over two seconds.

    None (no callback at all) when stderr is not a terminal or the output is for machines.
    """
    stream = stream or sys.stderr
    if not enabled or not stream.isatty():
        yield None
        return
    import time

    started = time.monotonic()
    state: dict[str, object] = {}

    def tick(done: int, total: int) -> None:
        if "bar" not in state:
            if time.monotonic() - started < PROGRESS_AFTER or done >= total:
                return
            from rich.console import Console
            from rich.progress import Progress

            bar = Progress(console=Console(file=stream), transient=True)
            bar.start()
            state["bar"], state["task"] = bar, bar.add_task("vjp-migrate", total=total)
        state["bar"].update(state["task"], completed=done, total=total)  # type: ignore[attr-defined]

    try:
        yield tick
    finally:
        if "bar" in state:
            state["bar"].stop()  # type: ignore[attr-defined]
