"""`fix --interactive`: show each change `fix` would make and apply only the accepted ones (y/n/q), as Fixit does.

The files are analysed as `fix` analyses them (api.analyze_found: each file, then the rules and
helpers imported between the files) and nothing is written before its answer. A file changed on
its own is asked about site by site (the users of a shared fwd/bwd together; a site whose fix
needs another's, after it and only once it is accepted: plan.needs); a multi-file
migration is one question showing the diffs of all its files, and is written together when
accepted. Accepted changes go through ``api.write_all``, or are proven first (``fix --verify``:
a Verifier).

Input and output are injected (``show`` prints, ``ask`` returns the answer, or raises EOFError
at the end of input, which counts as q), so this module never touches the terminal itself.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from vjp_migrate import api
from vjp_migrate.config import CliOptions, Resolver, groups
from vjp_migrate.model import FileResult, RewritePlan, Settings, Status
from vjp_migrate.report import diff_text
from vjp_migrate.runs import parts
from vjp_migrate.source import SourceError, check_syntax
from vjp_migrate.transaction import FileChange, Outcome
from vjp_migrate.wording import shell_path

if TYPE_CHECKING:
    from vjp_migrate.discover import Found
    from vjp_migrate.plan.needs import Question
    from vjp_migrate.project import Project
    from vjp_migrate.verified_writes import Verifier

Show = Callable[[str], None]
Ask = Callable[[str], str]
Write = Callable[[Outcome], list[FileResult]]
QUESTION = "Apply this change? [y]es / [n]o / [q]uit"
ENDED = "end of input: stopped; nothing more is applied"
_END = "end"  # the answer that stands for the end of input


class _Quit(Exception):
    """q was answered, or the input ended (args: which, "q" or _END)."""


def _answer(ask: Ask) -> str:
    while True:
        try:
            answer = ask(QUESTION).strip().lower()[:1]
        except EOFError:
            return _END
        if answer in ("y", "n", "q"):
            return answer


def _names(results: Sequence[FileResult]) -> str:
    functions = dict.fromkeys(d.function for result in results for d in result.fixed)
    return ", ".join(f"`{name}`" for name in functions)


def _sites(plans: Sequence[RewritePlan]) -> str:
    return ", ".join(f"`{plan.site.qualname}`" for plan in plans)


def _relation(asked: Sequence[Question], k: int) -> str:
    """What the ``k``th question's fix has to do with the others' (needed by them, or needing them)."""
    earlier = [asked[j].plans for j, _ in asked[k].needs]
    later = [q.plans for q in asked[k + 1 :] if any(j == k for j, _ in q.needs)]
    parts = [f"its fix needs the fix of {', '.join(map(_sites, earlier))}, accepted above"] if earlier else []
    parts += [f"the fix of {', '.join(map(_sites, later))}, asked after, needs this one"] if later else []
    return f" ({'; '.join(parts)})" if parts else ""


def _unchanged(result: FileResult) -> FileResult:
    return dataclasses.replace(result, new_text=result.old_text, fixed=())


class _Part:
    """The questions about the files of one configuration (a runs.parts part), in their order."""

    def __init__(
        self, found: Found, outcome: Outcome, settings: Settings, show: Show, ask: Ask, notice: Show, write: Write
    ) -> None:
        self.found, self.outcome, self.settings, self.write = found, outcome, settings, write
        self.show, self.ask, self.notice = show, ask, notice
        self.together = {change.path: group for group in outcome.groups if len(group) > 1 for change in group}
        self.decided: dict[Path, FileResult] = {}
        self.stopped = ""  # "q" or _END once the review was stopped
        self._project: Project | None = None

    @property
    def project(self) -> Project:
        """The run's files as phase 2 reads them (made when a file is first asked about site by site)."""
        if self._project is None:
            from vjp_migrate.project import Project

            self._project = Project.for_run([c.path for c in self.found.candidates], self.found.roots)
        return self._project

    def review(self) -> list[FileResult]:
        """The results of the files asked about, in their order, until q or the end of input."""
        try:
            for result in self.outcome.results:
                if result.path not in self.decided:
                    self._decide(result)
        except _Quit as stop:
            self.stopped = str(stop.args[0])
        return [self.decided[r.path] for r in self.outcome.results if r.path in self.decided]

    def _decide(self, result: FileResult) -> None:
        path = result.path
        if result.status is not Status.OK or not result.changed:
            self.decided[path] = result
        elif path.suffix == ".ipynb":  # reported, left as it is
            self.notice(
                f"{path}: notebooks are not reviewed site by site; "
                f"`vjp-migrate fix --diff {shell_path(str(path))}` shows their change"
            )
            self.decided[path] = _unchanged(result)
        elif path in self.together:
            self._ask_together(self.together[path])
        else:
            try:
                self._ask_by_site(result)
            except SourceError as error:
                self.decided[path] = api.failed_result(path, error)

    def _ask(self, planned: list[FileResult], changes: list[list[FileChange]], question: str) -> None:
        """One question about the whole of ``planned`` (the files of one change): written on y."""
        self.show(question)
        answer = _answer(self.ask)
        done = self.write(Outcome(planned, changes)) if answer == "y" else [_unchanged(r) for r in planned]
        self.decided.update((r.path, r) for r in done)
        if answer in ("q", _END):
            raise _Quit(answer)

    def _ask_together(self, changes: list[FileChange]) -> None:
        """A multi-file migration: one question with the diffs of all its files."""
        by_path = {r.path: r for r in self.outcome.results}
        planned = [by_path[change.path] for change in changes]
        diffs = "".join(diff_text(r.old_text or "", r.new_text or "", str(r.path)) for r in planned)
        files = ", ".join(str(r.path) for r in planned)
        self._ask(planned, [changes], f"{files}: custom_vjp {_names(planned)} (one migration of these files)\n{diffs}")

    def _ask_by_site(self, result: FileResult) -> None:
        """A file changed on its own: a question per site, the users of a shared fwd/bwd together.
        Its sites are planned again with the run's other files at hand. Phase 2 also weighed every
        user of a rule shared across files, which one file cannot: when the plans applied together
        do not make the change `fix` makes, the whole file is one question."""
        from vjp_migrate.imports import import_table
        from vjp_migrate.plan.needs import plan_needs, questions
        from vjp_migrate.plan.shared import plan_groups
        from vjp_migrate.project import rule_files
        from vjp_migrate.rewrite import apply_plans
        from vjp_migrate.roundtrip import kept_source

        path, old = result.path, result.old_text or ""
        analysis = api.analyze(old, str(path), self.settings, parse_anyway=True, project=self.project)
        module = analysis.module
        # A plan that also changes another file is not in a file changed on its own: phase 2 blocked it.
        plans = [d.plan for d in analysis.decisions if d.plan is not None and not rule_files(d)]

        def applied(chosen: list[RewritePlan]) -> str:
            return kept_source(old, module, apply_plans(module, chosen).code)  # type: ignore[arg-type]

        if module is None or applied(plans) != result.new_text:
            whole = diff_text(old, result.new_text or "", str(path))
            self._ask([result], [], f"{path}: custom_vjp {_names([result])}\n{whole}")
            return
        needs = plan_needs(analysis.decisions, plans, import_table(module))  # type: ignore[arg-type]
        asked = questions(plan_groups(plans), plans, needs)
        accepted, answer = self._ask_questions(asked, lambda group: diff_text(old, applied(group), str(path)), path)
        new_text = applied(accepted) if accepted else old
        check_syntax(new_text, str(path))
        moved = {(p.site.qualname, i) for p in accepted for i in p.moved}
        fixed = tuple(d for d in result.fixed if (d.function, d.index) in moved)
        planned = dataclasses.replace(result, new_text=new_text, fixed=fixed)
        self.decided[path] = self.write(Outcome([planned], []))[0] if accepted else planned
        if answer in ("q", _END):
            raise _Quit(answer)

    def _ask_questions(
        self, asked: list[Question], diff: Callable[[list[RewritePlan]], str], path: Path
    ) -> tuple[list[RewritePlan], str]:
        """The plans accepted, and the last answer: a question whose fix needs a fix not accepted
        is not asked (written alone, it would pass a Tracer to a position that stays nondiff)."""
        accepted: list[RewritePlan] = []
        answer = ""
        taken: list[bool] = []  # per question so far: its plans are accepted
        for k, question in enumerate(asked):
            group = list(question.plans)
            missing = [(asked[j], why) for j, why in question.needs if not taken[j]]
            taken.append(False)
            if missing:
                needed, why = missing[0]
                self.show(
                    f"{path}: custom_vjp {_sites(group)} is left as it is: its fix needs the fix of "
                    f"{_sites(needed.plans)}, which is not applied ({why})"
                )
                continue
            self.show(f"{path}: custom_vjp {_sites(group)}{_relation(asked, k)}\n" + diff(group))
            answer = _answer(self.ask)
            if answer in ("q", _END):
                break
            if answer == "y":
                accepted.extend(group)
                taken[k] = True
        return accepted, answer


def review(
    paths: Sequence[Path],
    options: CliOptions,
    show: Show,
    ask: Ask,
    notice: Show | None = None,
    verifier: Verifier | None = None,
) -> list[FileResult]:
    """Review every change `fix` would make under ``paths`` (notebooks are fixed with plain `fix`);
    with a ``verifier``, an accepted change is written only once proven (`fix --verify`).

    It writes, so like `fix` it first finishes the multi-file migrations an interrupted run left
    below or above ``paths``, one line each to ``notice`` (default: ``show``).
    """
    from vjp_migrate.transaction import recover
    from vjp_migrate.workers import Task

    notice = notice or show
    for message in recover(paths):
        notice(message)
    # A Verifier tells the files of a multi-file migration by their findings' also_touches.
    write: Write = api.write_all if verifier is None else lambda outcome: verifier.write(outcome.results)
    results: list[FileResult] = []
    resolver = Resolver(options)
    for group, found in parts(groups(paths, options, resolver), resolver):
        outcome = api.analyze_found(found, Task("fix", group.settings), None, None)
        part = _Part(found, outcome, group.settings, show, ask, notice, write)
        results.extend(part.review())
        if part.stopped:
            if part.stopped == _END:
                notice(ENDED)
            break
    return results
