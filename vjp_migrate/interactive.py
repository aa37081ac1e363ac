"""`fix --interactive`: show each site's change and apply only the accepted ones (y/n/q), as Fixit does.

Input and output are injected (``show`` prints, ``ask`` returns the answer, or raises EOFError
at the end of input, which counts as q), so this module never touches the terminal itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from vjp_migrate import api
from vjp_migrate.codes import triggers_for
from vjp_migrate.config import CliOptions, Resolver, groups
from vjp_migrate.files import write_atomically
from vjp_migrate.model import FileResult, RewritePlan, Settings, Status
from vjp_migrate.report import diff_text
from vjp_migrate.runs import parts
from vjp_migrate.source import SourceError, check_syntax, decode, encode
from vjp_migrate.wording import shell_path

Show = Callable[[str], None]
Ask = Callable[[str], str]
QUESTION = "Apply this change? [y]es / [n]o / [q]uit"
ENDED = "end of input: stopped; nothing more is applied"
_END = "end"  # the answer that stands for the end of input


class _Quit(Exception):
    """q was answered (args: the file's result, and whether it was the end of input)."""


def _answer(ask: Ask) -> str:
    while True:
        try:
            answer = ask(QUESTION).strip().lower()[:1]
        except EOFError:
            return _END
        if answer in ("y", "n", "q"):
            return answer


def review_file(path: Path, settings: Settings, show: Show, ask: Ask, explicit: bool = True) -> FileResult:
    """Ask about each site of one file; write the accepted ones. Raises _Quit after writing on q
    or at the end of input.

    A file found by walking a folder is read only when it mentions a word the selected codes
    need, as `fix` reads it (so a syntax error in an unrelated file is no error).
    """
    data = path.read_bytes()
    if not explicit and not any(word in data for word in triggers_for(settings.select)):
        return FileResult(path, Status.OK)
    source = decode(data)
    analysis = api.analyze(source.text, str(path), settings, parse_anyway=True)
    plans = [d.plan for d in analysis.decisions if d.plan is not None]
    if not plans:
        return FileResult(path, Status.OK, diagnostics=analysis.diagnostics, old_text=source.text, new_text=source.text)
    from vjp_migrate.plan.shared import plan_groups
    from vjp_migrate.rewrite import apply_plans
    from vjp_migrate.roundtrip import kept_source

    accepted: list[RewritePlan] = []
    quit_now = ended = False
    for group in plan_groups(plans):  # users of a shared fwd/bwd are applied together
        single = apply_plans(analysis.module, group).code  # type: ignore[arg-type]
        names = ", ".join(f"`{plan.site.qualname}`" for plan in group)
        show(f"{path}: custom_vjp {names}\n" + diff_text(source.text, single, str(path)))
        answer = _answer(ask)
        if answer in ("q", _END):
            quit_now, ended = True, answer == _END
            break
        if answer == "y":
            accepted.extend(group)
    new_text = source.text
    if accepted:
        new_text = kept_source(source.text, analysis.module, apply_plans(analysis.module, accepted).code)  # type: ignore[arg-type]
    check_syntax(new_text, str(path))
    if new_text != source.text:
        write_atomically(path, encode(source, new_text), data)
    moved = {(p.site.qualname, i) for p in accepted for i in p.moved}
    fixed = tuple(d for d in analysis.diagnostics if (d.function, d.index) in moved)
    result = FileResult(
        path,
        Status.OK,
        diagnostics=analysis.diagnostics,
        fixed=fixed,
        old_text=source.text,
        new_text=new_text,
        written=new_text != source.text,
        encoding=source.encoding,
    )
    if quit_now:
        raise _Quit(result, ended)
    return result


def review(
    paths: Sequence[Path], options: CliOptions, show: Show, ask: Ask, notice: Show | None = None
) -> list[FileResult]:
    """Review every site under ``paths`` (Python files; notebooks are fixed with plain `fix`).

    It writes, so like `fix` it first finishes the multi-file migrations an interrupted run left
    below or above ``paths``, one line each to ``notice`` (default: ``show``).
    """
    from vjp_migrate.transaction import recover

    for message in recover(paths):
        (notice or show)(message)
    results: list[FileResult] = []
    resolver = Resolver(options)
    for group, found in parts(groups(paths, options, resolver), resolver):
        results.extend(FileResult(r.path, Status.FAILED, r.reason) for r in found.rejected)
        for candidate in found.candidates:
            if candidate.path.suffix == ".ipynb":  # reported, left as they are
                checked = api.check_file(candidate.path, group.settings, candidate.explicit)
                if any(d.fixable for d in checked.diagnostics):
                    (notice or show)(
                        f"{candidate.path}: notebooks are not reviewed site by site; "
                        f"`vjp-migrate fix --diff {shell_path(str(candidate.path))}` shows their change"
                    )
                results.append(checked)
                continue
            try:
                results.append(review_file(candidate.path, group.settings, show, ask, candidate.explicit))
            except _Quit as stop:
                results.append(stop.args[0])
                if stop.args[1]:
                    (notice or show)(ENDED)
                return results
            except (SourceError, OSError) as error:
                results.append(api.failed_result(candidate.path, error))
    return results
