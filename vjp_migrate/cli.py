"""The command line: parse options, call the api, print, set the exit code. Nothing else."""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from vjp_migrate import __version__, wording

if TYPE_CHECKING:
    from vjp_migrate.model import FileResult
    from vjp_migrate.verified_writes import Verifier

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE
T = TypeVar("T")


class _Path(click.Path):
    """click's Path, refusing an empty value: pathlib takes '' for the current folder, and
    `vjp-migrate fix "$FILE"` with an empty variable must not rewrite the whole tree."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, (str, bytes)) and not value:
            self.fail("an empty path names no file or folder (the current folder is .)", param, ctx)
        return super().convert(value, param, ctx)


class _Finite(click.FloatRange):
    """click's FloatRange, refusing nan and inf too (nan compares false with any bound): a
    tolerance or a timeout must be a number, or verify and record report nonsense."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{number} is not a finite number.", param, ctx)
        return number


_SECONDS = _Finite(min=0, min_open=True)


def _codes(values: tuple[str, ...]) -> list[str] | None:
    codes = [c for value in values for c in value.split(",") if c.strip()]
    return codes or None


_select = click.option(
    "--select", multiple=True, help="Codes or prefixes to enable (replaces the default set), e.g. VJP002 or VJP."
)
_ignore = click.option("--ignore", multiple=True, help="Codes or prefixes to disable.")
_stdin_name = click.option(
    "--stdin-filename", default="-", help="The name to report for source read from stdin (PATH '-')."
)
_exclude = click.option(
    "--exclude",
    multiple=True,
    help="Files or folders to skip: globs as in ruff (`legacy`, `**/gen`, `src/*.py`; paths from the current "
    "folder), on top of the built-in ones and the configuration's.",
)
_force_exclude = click.option(
    "--force-exclude",
    is_flag=True,
    help="Also skip files named on the command line (and the --stdin-filename) that the exclude patterns match "
    "(for pre-commit and editors).",
)
_respect_gitignore = click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Leave out what .gitignore, .ignore, .git/info/exclude and git's global excludes file name when "
    "walking folders (default: yes, or the configuration's respect-gitignore).",
)
_quiet = click.option(
    "--quiet", "-q", is_flag=True, help="Print the findings (and diffs) only: no summary, no progress bar."
)
_reasons = click.option("--show-reasons", is_flag=True, help="Say why each argument was classified as it was.")


class _Interruptible(click.Group):
    """Ctrl-C exits 130, as a shell reports SIGINT (click's own "Aborted!" exits 1: findings), and
    SIGTERM and SIGHUP end the run the same way (143, 129). Output that cannot be written is one
    line and exit 2; a reader that left (`| head`) ends the run quietly, 141 as a shell reports
    SIGPIPE (click's own exits 1). Messages that stderr refuses are lost, not the exit code."""

    def main(self, *args: Any, **kwargs: Any) -> Any:  # also around --help and --version
        from vjp_migrate.output import OutputError, guarded, messages_may_fail, silence, standard_descriptors
        from vjp_migrate.signals import stops_interrupt

        standard_descriptors()
        with messages_may_fail(), stops_interrupt():
            try:
                with guarded():
                    return super().main(*args, **kwargs)
            except OutputError as error:
                silence()
                if error.broken_pipe:
                    sys.exit(EXIT_BROKEN_PIPE)
                click.echo(f"vjp-migrate: cannot write the output: {error.reason}", err=True)
                sys.exit(EXIT_ERROR)

    def invoke(self, ctx: click.Context) -> object:
        from vjp_migrate.signals import exit_status, interrupted

        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as interrupt:
            stop = interrupt
        except click.Abort as abort:  # a prompt's Ctrl-C; its end of input is the command's to handle
            if not isinstance(abort.__context__, KeyboardInterrupt):
                raise
            stop = abort.__context__
        click.echo(interrupted(stop), err=True)
        sys.exit(exit_status(stop))


@click.group(cls=_Interruptible, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", "-V", prog_name="vjp-migrate")
def main() -> None:
    """Find and migrate jax.custom_vjp functions with array-valued nondiff_argnums."""


def _options(
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    exclude: tuple[str, ...],
    unsafe_fixes: bool | None,
    config: Path | None,
    isolated: bool,
    force_exclude: bool,
    respect_gitignore: bool | None,
) -> object:
    from vjp_migrate.config import CliOptions

    if config is not None and isolated:
        raise click.UsageError("--config cannot be used with --isolated (which ignores every configuration file)")
    sel, ign = _codes(select), _codes(ignore)
    return CliOptions(
        tuple(sel) if sel else None,
        tuple(ign) if ign else None,
        exclude,
        unsafe_fixes,
        config,
        isolated,
        force_exclude,
        respect_gitignore,
    )


def _request(paths: tuple[Path, ...], options: object, stdin_filename: str, baseline: Path | None = None) -> object:
    from vjp_migrate.runs import Request

    if Path("-") in paths and len(paths) > 1:
        raise click.UsageError("- (read stdin) cannot be combined with other paths")
    stdin = sys.stdin.buffer.read() if paths == (Path("-"),) else None
    return Request(paths, options, stdin, stdin_filename, baseline)  # type: ignore[arg-type]


class _FileError(click.ClickException):
    """A configuration or baseline file that cannot be used, or an output location that cannot be
    written: `Error: <file>: <reason>`, exit 2, without click's usage banner (the command line
    itself was right)."""

    exit_code = EXIT_ERROR


def _writable(option: str, path: Path, folders_made: bool = False) -> None:
    """Refuse, before the work, an output the command writes at its end (a long run must not end
    in a traceback and a lost result); ``folders_made``: missing folders are created."""
    if path.exists():
        if not os.access(path, os.W_OK | (os.X_OK if path.is_dir() else 0)):
            raise _FileError(f"{option} {path}: is not writable")
        return
    folder = path.parent
    while folders_made and not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.exists():
        raise _FileError(f"{option} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise _FileError(f"{option} {path}: {folder} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise _FileError(f"{option} {path}: the folder {folder} is not writable")


def _guarded(work: Callable[[], T]) -> T:
    """Configuration and baseline errors exit 2, said in one line."""
    from vjp_migrate.baseline import BaselineError
    from vjp_migrate.config import ConfigError

    try:
        return work()
    except (ConfigError, BaselineError) as error:
        raise _FileError(str(error)) from None


_config = click.option(
    "--config",
    type=_Path(exists=True, dir_okay=False, path_type=Path),
    help="Use this pyproject.toml's [tool.vjp-migrate] for every path (default: the nearest one above each path).",
)
_isolated = click.option("--isolated", is_flag=True, help="Ignore every configuration file.")
_jobs = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes (default: one per CPU; 1: analyse in this process, and prove fix --verify in one worker).",
)
_no_cache = click.option("--no-cache", is_flag=True, help="Neither read nor write the result cache.")
_cache_dir = click.option(
    "--cache-dir",
    type=_Path(file_okay=False, path_type=Path),
    envvar="VJP_MIGRATE_CACHE_DIR",
    show_envvar=True,
    help="Where check keeps results of unchanged files "
    "[default: .vjp_migrate_cache in the folder of the configuration file, else in the current folder].",
)

# fix keeps no cache; it takes check's cache options, doing nothing, so one argument list serves both (as ruff's).
_fix_no_cache = click.option(
    "--no-cache",
    is_flag=True,
    expose_value=False,
    help="Does nothing (fix keeps no cache); accepted so that check's arguments work with fix too.",
)
_fix_cache_dir = click.option(
    "--cache-dir",
    type=_Path(file_okay=False, path_type=Path),
    expose_value=False,
    help="Does nothing (fix keeps no cache); accepted so that check's arguments work with fix too.",
)


@main.command(short_help="Report old-style custom_vjp functions.")
@click.argument("paths", nargs=-1, required=True, type=_Path(path_type=Path, allow_dash=True, readable=False))
@_select
@_ignore
@click.option(
    "--output-format",
    type=click.Choice(["text", "concise", "json", "github", "sarif", "junit"]),
    default="text",
    show_default=True,
    help="text for people; concise (flake8's lines), json, github, sarif or junit for machines "
    "(a file that could not be processed is an entry too: E902 or invalid-syntax).",
)
@_reasons
@_quiet
@_stdin_name
@_exclude
@_force_exclude
@_respect_gitignore
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@_config
@_isolated
@click.option(
    "--baseline", type=_Path(dir_okay=False, path_type=Path), help="Do not report findings recorded in this file."
)
@click.option("--write-baseline", type=_Path(dir_okay=False, path_type=Path), help="Record the current findings here.")
@click.option("--add-noqa", is_flag=True, help="Add `# noqa: CODE` comments for every current finding.")
@_jobs
@_no_cache
@_cache_dir
def check(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    output_format: str,
    show_reasons: bool,
    quiet: bool,
    stdin_filename: str,
    exclude: tuple[str, ...],
    force_exclude: bool,
    respect_gitignore: bool | None,
    exit_zero: bool,
    config: Path | None,
    isolated: bool,
    baseline: Path | None,
    write_baseline: Path | None,
    add_noqa: bool,
    jobs: int | None,
    no_cache: bool,
    cache_dir: Path | None,
) -> None:
    """Report old-style custom_vjp functions. Exit 0 clean, 1 findings, 2 errors."""
    from vjp_migrate import report, runs

    options = _options(select, ignore, exclude, None, config, isolated, force_exclude, respect_gitignore)
    if add_noqa and Path("-") in paths:
        raise click.UsageError("--add-noqa needs files (it writes the comments into them), not -")
    if add_noqa and (write_baseline is not None or output_format != "text"):
        other = "--write-baseline" if write_baseline is not None else f"--output-format {output_format}"
        raise click.UsageError(f"--add-noqa writes comments and reports in text; it does not go with {other}")
    request = _request(paths, options, stdin_filename, baseline)
    if add_noqa:
        results = _guarded(lambda: runs.add_noqa(request, _notice))  # type: ignore[arg-type]
        report.print_errors(results)
        if quiet:
            report.print_findings(report.silenced(results), show_reasons)
        else:
            report.print_noqa(results, show_reasons)
        sys.exit(EXIT_ERROR if any(r.status.value == "failed" for r in results) else EXIT_CLEAN)
    from vjp_migrate.api import Execution, execution

    how = Execution(jobs, None if no_cache else cache_dir, project_cache=not no_cache and cache_dir is None)
    with report.progress(enabled=output_format == "text" and not quiet) as tick, execution(how):
        results, count = _guarded(
            lambda: runs.record(request, write_baseline, output_format == "sarif", tick, _notice)  # type: ignore[arg-type]
        )
    if write_baseline is not None and not quiet:
        click.echo(f"Recorded {wording.count(count, 'finding')} in {write_baseline}.", err=True)
    report.print_errors(results)
    if output_format == "text" and quiet:
        report.print_findings([d for r in results for d in r.diagnostics], show_reasons)
    elif output_format == "text":
        report.print_check(results, show_reasons)
    else:
        sys.stdout.write(report.render_machine(results, output_format))
    if any(r.status.value == "failed" for r in results):
        sys.exit(EXIT_ERROR)
    found = any(r.diagnostics for r in results) and write_baseline is None
    sys.exit(EXIT_FINDINGS if found and not exit_zero else EXIT_CLEAN)


@main.command(short_help="Rewrite old-style custom_vjp functions in place.")
@click.argument("paths", nargs=-1, required=True, type=_Path(path_type=Path, allow_dash=True, readable=False))
@_select
@_ignore
@click.option("--diff", is_flag=True, help="Print a unified diff, write nothing, exit 1 if anything would change.")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None, help="Also apply fixes marked unsafe.")
@click.option(
    "--exit-zero", is_flag=True, help="Exit 0 even when findings remain (over --diff and --exit-non-zero-on-fix too)."
)
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 when any file was changed.")
@_reasons
@_quiet
@_stdin_name
@_exclude
@_force_exclude
@_respect_gitignore
@_config
@_isolated
@click.option(
    "--interactive",
    "-i",
    is_flag=True,
    help="Show each site's change (a multi-file migration's as one) and ask: apply it (y), skip it (n), "
    "stop (q, or the end of input).",
)
@_jobs
@click.option(
    "--verify",
    "verify_rewrites",
    is_flag=True,
    help=(
        "Prove each file's rewrite, and each multi-file migration as one group, with real JAX gradients "
        "before writing; a group is written all or none (needs the [verify] extra)."
    ),
)
@click.option("--verify-examples", type=_Path(path_type=Path, dir_okay=False), help="EXAMPLES file for --verify.")
@_fix_no_cache
@_fix_cache_dir
def fix(
    paths: tuple[Path, ...],
    select: tuple[str, ...],
    ignore: tuple[str, ...],
    diff: bool,
    unsafe_fixes: bool | None,
    exit_zero: bool,
    exit_non_zero_on_fix: bool,
    show_reasons: bool,
    quiet: bool,
    stdin_filename: str,
    exclude: tuple[str, ...],
    force_exclude: bool,
    respect_gitignore: bool | None,
    config: Path | None,
    isolated: bool,
    interactive: bool,
    jobs: int | None,
    verify_rewrites: bool,
    verify_examples: Path | None,
) -> None:
    """Rewrite old-style custom_vjp functions in place (or show the diff)."""
    from vjp_migrate import report, runs
    from vjp_migrate.api import Execution, execution

    options = _options(select, ignore, exclude, unsafe_fixes, config, isolated, force_exclude, respect_gitignore)
    verifier = _verifier(verify_examples, jobs) if verify_rewrites and not diff else None
    if interactive:
        from vjp_migrate.interactive import review

        if paths == (Path("-"),):
            raise click.UsageError("--interactive needs files (it reads answers from the terminal)")
        if diff:  # --diff writes nothing; --interactive writes what is accepted
            raise click.UsageError("--interactive writes the changes it is told to apply; --diff writes nothing")

        def ask(question: str) -> str:
            try:
                return str(click.prompt(question, default="n"))
            except click.Abort as abort:
                # click turns both Ctrl-C and the end of input into Abort; the original is its context.
                if isinstance(abort.__context__, EOFError):
                    click.echo()  # end the prompt's line
                    raise EOFError from None
                raise

        with execution(Execution(jobs)):
            results = _guarded(lambda: review(paths, options, click.echo, ask, _notice, verifier))  # type: ignore[arg-type]
        report.print_errors(results)
        _print_fix(results, False, show_reasons, quiet)
    elif paths == (Path("-"),):
        request = _request(paths, options, stdin_filename)
        results = _guarded(lambda: runs.fix(request, write=False))  # type: ignore[arg-type]
        if verifier is not None:  # printed in the file's place: only once proven
            results = verifier.prove(results)
        report.print_errors(results)
        click.echo(_stdin_output(request.stdin, results[0], diff), nl=False)  # type: ignore[attr-defined]
        for d in results[0].remaining:
            sys.stderr.write(report.concise_line(d) + "\n")
    else:
        write_now = not diff and verifier is None  # with --verify: plan, prove, then write
        with report.progress(enabled=not quiet) as tick, execution(Execution(jobs)):
            request = _request(paths, options, stdin_filename)
            results = _guarded(lambda: runs.fix(request, write_now, tick, _notice, not diff))  # type: ignore[arg-type]
        if verifier is not None:
            results = verifier.write(results)
        report.print_errors(results)
        _print_fix(results, diff, show_reasons, quiet)
    if verifier is not None and not quiet and (proven := verifier.proof.summary()):
        click.echo(proven, err=paths == (Path("-"),))  # stdout holds the source
    if any(r.status.value == "failed" for r in results):
        sys.exit(EXIT_ERROR)
    if exit_zero:  # as ruff's: it wins over --diff and --exit-non-zero-on-fix too
        sys.exit(EXIT_CLEAN)
    changed = any(r.changed for r in results)
    remaining = any(r.remaining for r in results)
    if (diff and changed) or (exit_non_zero_on_fix and changed):
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_FINDINGS if remaining else EXIT_CLEAN)


def _verifier(examples: Path | None, jobs: int | None) -> Verifier:
    from vjp_migrate.verified_writes import Verifier
    from vjp_migrate.verify import VerifyOptions
    from vjp_migrate.workers import default_jobs

    return Verifier(VerifyOptions(examples=examples), jobs or default_jobs())


def _print_fix(results: list[FileResult], diff: bool, show_reasons: bool, quiet: bool) -> None:
    from vjp_migrate import report

    if not quiet:
        report.print_fix(results, diff, show_reasons)
        return
    if diff:
        report.print_patches(results, sys.stdout)
    report.print_findings([d for r in results for d in r.remaining], show_reasons)


def _stdin_output(data: bytes, result: FileResult, diff: bool) -> bytes | str:
    """What `fix -` prints: the migrated source in the input's own bytes (encoding cookie, BOM), or
    its diff. An editor may put this in place of its buffer, so a source that cannot be processed
    (or that --force-exclude skips) comes back unchanged."""
    from vjp_migrate import report
    from vjp_migrate.model import Status

    if result.status is not Status.OK:
        return "" if diff else data
    if diff:
        return report.unified_diff(result) if result.changed else ""
    from vjp_migrate.source import decode, encode

    return encode(decode(data), result.new_text or "")


def _notice(message: str) -> None:
    click.echo(f"vjp-migrate: {message}", err=True)


@main.command("explain-error", short_help="Find the custom_vjp behind a nondiff_argnums Tracer error.")
@click.argument("traceback_file", required=False, type=click.File("r", encoding="utf-8", errors="replace"), default="-")
def explain_error(traceback_file: object) -> None:
    """Read a traceback (file or stdin) with JAX's nondiff_argnums Tracer error; point at the fix.

    Exit 0 when the definition was found, 1 when it was not, 2 when the text has no such error.
    """
    from vjp_migrate.explain_error import explain_traceback

    text = traceback_file.read()  # type: ignore[attr-defined]
    outcome = explain_traceback(text)
    click.echo(outcome.text, nl=False)
    sys.exit(outcome.exit_code)


_file = _Path(exists=True, dir_okay=False, path_type=Path)
_file_or_folder = _Path(exists=True, path_type=Path)


@main.command("verify", short_help="Prove a migration with real JAX gradients.")
@click.argument("before", type=_file_or_folder)
@click.argument("after", type=_file_or_folder)
@click.option(
    "--examples",
    type=_file,
    help="A Python file defining EXAMPLES = {'name': [args_tuple or call(*args, **kwargs), ...]}.",
)
@click.option("--inputs", type=_file, help="A recording made by `vjp-migrate record`.")
@click.option("--rtol", type=_Finite(min=0), help="Relative tolerance, 0 or more (default: by dtype).")
@click.option("--atol", type=_Finite(min=0), help="Absolute tolerance, 0 or more (default: by dtype).")
@click.option("--device", type=click.Choice(["cpu", "gpu", "tpu", "all"]), help="Backend (default: JAX's default).")
@click.option(
    "--timeout", type=_SECONDS, default=300.0, show_default=True, help="Seconds (above 0) before the run is stopped."
)
@click.option(
    "--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the random cotangents and inputs."
)
@click.option("--strict", is_flag=True, help="Exit 2 when a function could not be verified for lack of inputs.")
@click.option(
    "--emit-tests", type=_Path(file_okay=False, path_type=Path), help="Write a pytest file per function here."
)
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True)
def verify_command(
    before: Path,
    after: Path,
    examples: Path | None,
    inputs: Path | None,
    rtol: float | None,
    atol: float | None,
    device: str | None,
    timeout: float,
    seed: int,
    strict: bool,
    emit_tests: Path | None,
    output_format: str,
) -> None:
    """Prove a migration with real JAX gradients (runs both versions in a subprocess).

    BEFORE and AFTER are two files, or two folders (a project before and after; its modules
    are paired by relative path). Exit 0 all verified equal, 1 a mismatch (or AFTER fails
    under vmap), 2 something could not be run.
    """
    from vjp_migrate.verify import VerifyOptions, render_report, verify_files, verify_trees

    if before.is_dir() != after.is_dir():
        raise click.UsageError("BEFORE and AFTER must both be files or both be folders")
    if emit_tests is not None:
        _writable("--emit-tests", emit_tests, folders_made=True)
    options = VerifyOptions(examples, inputs, rtol, atol, device, timeout, seed, strict, emit_tests)
    result = (verify_trees if before.is_dir() else verify_files)(before, after, options)
    click.echo(render_report(result, output_format), nl=output_format == "json")
    sys.exit(result.exit_code)


@main.command(
    "record",
    context_settings={"ignore_unknown_options": True},
    short_help="Record custom_vjp inputs while a command runs.",
)
@click.option("--out", required=True, type=_Path(dir_okay=False, path_type=Path), help="The recording to write (.npz).")
@click.option("--max-calls", type=click.IntRange(min=1), default=5, show_default=True, help="Calls kept per function.")
@click.option("--timeout", type=_SECONDS, help="Seconds (above 0) before the command is stopped.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def record_command(out: Path, max_calls: int, timeout: float | None, command: tuple[str, ...]) -> None:
    """Run COMMAND, recording the arguments of every custom_vjp call: `record --out in.npz -- pytest tests/`."""
    from vjp_migrate.verify.record import record

    _writable("--out", out)
    result = record(list(command), out, max_calls, timeout)
    click.echo(result.message, err=True)
    sys.exit(result.exit_code)


@main.command(short_help="Print the documentation of one rule.")
@click.argument("code")
def explain(code: str) -> None:
    """Print the documentation of one rule (e.g. VJP001)."""
    from vjp_migrate.codes import BY_CODE
    from vjp_migrate.codes import explain as explain_code

    if code.upper() not in BY_CODE:
        raise click.UsageError(f"unknown rule code: {code!r} (known: {', '.join(BY_CODE)})")
    click.echo(explain_code(code.upper()))


@main.command()
def rules() -> None:
    """List every rule with its default state and fix safety."""
    from vjp_migrate.codes import CODES

    for c in CODES:
        state = "default" if c.default else "opt-in"
        click.echo(f"{c.code}  {c.name:<32} {state:<8} fix: {c.fix_safety.value}")
