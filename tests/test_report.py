"""The text report: summary lines, and colour only on a terminal without NO_COLOR."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate import report
from vjp_migrate.api import check_source
from vjp_migrate.cli import main
from vjp_migrate.model import FileResult, FixSafety, Status

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(*args: str) -> tuple[int, str]:
    """The exit code and the report: stdout, but for `fix --diff`, whose stdout is the patch alone
    (as ruff's): then stderr, past the files' error lines."""
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    if "--diff" in args:
        return result.exit_code, "".join(
            line for line in result.stderr.splitlines(keepends=True) if ": error: " not in line
        )
    return result.exit_code, result.stdout


def test_a_run_with_errors_does_not_say_all_checks_passed(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    (tmp_path / "broken.py").write_text("nondiff_argnums = (\n", encoding="utf-8")
    code, out = run("check", str(tmp_path))
    assert (code, out) == (2, "No findings in 1 file checked; 1 file could not be processed.\n")
    code, out = run("fix", str(tmp_path))
    assert (code, out) == (2, "Nothing to fix in 1 file; 1 file could not be processed.\n")


def test_a_single_file_that_cannot_be_parsed_is_not_called_checked(tmp_path: Path) -> None:
    broken = tmp_path / "broken.py"
    broken.write_text("nondiff_argnums = (\n", encoding="utf-8")
    assert run("check", str(broken)) == (2, "Nothing checked: 1 file could not be processed.\n")
    assert run("fix", str(broken)) == (2, "Nothing fixed: 1 file could not be processed.\n")
    assert run("fix", "--diff", str(broken)) == (2, "Would fix nothing: 1 file could not be processed.\n")


def test_clean_runs_keep_their_summary(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text("import jax\n", encoding="utf-8")
    assert run("check", str(tmp_path)) == (0, "All checks passed (1 file checked).\n")
    assert run("fix", str(tmp_path)) == (0, "Nothing to fix.\n")
    (tmp_path / "clean.py").unlink()
    assert run("check", str(tmp_path)) == (0, "No files to check.\n")


FINDINGS = tuple(check_source(SEED, path="seed.py"))  # two fixable findings


def ok(fixed: bool = False, findings: bool = True) -> FileResult:
    found = FINDINGS if findings else ()
    return FileResult(
        Path("seed.py"),
        Status.OK,
        diagnostics=found,
        fixed=found if fixed else (),
        old_text="a",
        new_text="b" if fixed else "a",
        written=fixed,
    )


def unsafe(n: int = 2) -> FileResult:
    """Findings whose fix is unsafe and not enabled: only `fix --unsafe-fixes` fixes them."""
    weak = tuple(dataclasses.replace(d, fixable=False, fix_safety=FixSafety.UNSAFE) for d in FINDINGS[:n])
    return FileResult(Path("weak.py"), Status.OK, diagnostics=weak, old_text="a", new_text="a")


def unfixable() -> FileResult:
    """Findings no fix suits, with any options."""
    none = tuple(dataclasses.replace(d, fixable=False, fix_safety=FixSafety.NONE) for d in FINDINGS)
    return FileResult(Path("stuck.py"), Status.OK, diagnostics=none, old_text="a", new_text="a")


BROKEN = FileResult(Path("broken.py"), Status.FAILED, "syntax error")
CLEAN = FileResult(Path("clean.py"), Status.OK)


@pytest.mark.parametrize(
    "results, summary",
    [
        pytest.param([CLEAN, CLEAN], "All checks passed (2 files checked).", id="clean"),
        pytest.param([], "No files to check.", id="nothing found to check"),
        pytest.param([BROKEN], "Nothing checked: 1 file could not be processed.", id="one error only"),
        pytest.param([BROKEN, BROKEN], "Nothing checked: 2 files could not be processed.", id="errors only"),
        pytest.param(
            [CLEAN, BROKEN], "No findings in 1 file checked; 1 file could not be processed.", id="clean and error"
        ),
        pytest.param(
            [ok(), BROKEN, BROKEN],
            "Found 2 findings (2 fixable) in 1 file checked; 2 files could not be processed. "
            "Run `vjp-migrate fix` to apply the fixes.",
            id="findings and errors",
        ),
        pytest.param(
            [ok(), CLEAN],
            "Found 2 findings (2 fixable) in 2 files checked. Run `vjp-migrate fix` to apply the fixes.",
            id="findings",
        ),
        pytest.param(
            [ok(), unsafe(1)],
            "Found 3 findings (2 fixable) in 2 files checked. "
            "Run `vjp-migrate fix` to apply the fixes (1 unsafe fix available with `--unsafe-fixes`).",
            id="fixable and one unsafe fix",
        ),
        pytest.param(
            [unsafe(), BROKEN],
            "Found 2 findings (0 fixable) in 1 file checked; 1 file could not be processed. "
            "2 unsafe fixes available with `vjp-migrate fix --unsafe-fixes`.",
            id="only unsafe fixes",
        ),
        pytest.param(
            [unfixable(), unsafe(1)],
            "Found 3 findings (0 fixable) in 2 files checked. "
            "1 unsafe fix available with `vjp-migrate fix --unsafe-fixes`.",
            id="a finding without any fix has no unsafe fix",
        ),
        pytest.param([unfixable()], "Found 2 findings (0 fixable) in 1 file checked.", id="no fix at all"),
    ],
)
def test_check_summary_reads_naturally_for_every_count(results: list[FileResult], summary: str) -> None:
    assert report.check_summary(results)[1] == summary


@pytest.mark.parametrize(
    "results, summary, diff_summary",
    [
        pytest.param([CLEAN], "Nothing to fix.", "Nothing to fix.", id="clean"),
        pytest.param(
            [BROKEN],
            "Nothing fixed: 1 file could not be processed.",
            "Would fix nothing: 1 file could not be processed.",
            id="one error only",
        ),
        pytest.param(
            [CLEAN, CLEAN, BROKEN],
            "Nothing to fix in 2 files; 1 file could not be processed.",
            "Nothing to fix in 2 files; 1 file could not be processed.",
            id="clean and error",
        ),
        pytest.param(
            [ok(fixed=True), BROKEN, BROKEN],
            "Fixed 2 findings in 1 file; 2 files could not be processed.",
            "Would fix 2 findings in 1 file; 2 files could not be processed.",
            id="fixed and errors",
        ),
        pytest.param(
            [ok()],
            "Nothing fixed, 2 findings remaining.",
            "Would fix nothing, 2 findings remaining.",
            id="nothing fixable",
        ),
        pytest.param(
            [ok(fixed=True), ok()],
            "Fixed 2 findings in 1 file, 2 remaining.",
            "Would fix 2 findings in 1 file, 2 remaining.",
            id="fixed and remaining",
        ),
        pytest.param(
            [unsafe(), unfixable()],
            "Nothing fixed, 4 findings remaining (2 unsafe fixes available with `--unsafe-fixes`).",
            "Would fix nothing, 4 findings remaining (2 unsafe fixes available with `--unsafe-fixes`).",
            id="left for an unsafe fix",
        ),
        pytest.param(
            [ok(fixed=True), unsafe(1), BROKEN],
            "Fixed 2 findings in 1 file, 1 remaining (1 unsafe fix available with `--unsafe-fixes`); "
            "1 file could not be processed.",
            "Would fix 2 findings in 1 file, 1 remaining (1 unsafe fix available with `--unsafe-fixes`); "
            "1 file could not be processed.",
            id="fixed, one left for an unsafe fix, and an error",
        ),
    ],
)
def test_fix_summary_reads_naturally_for_every_count(
    results: list[FileResult], summary: str, diff_summary: str
) -> None:
    assert report.fix_summary(results, diff=False)[1] == summary
    assert report.fix_summary(results, diff=True)[1] == diff_summary


def findings_text(stream: io.StringIO) -> str:
    result = FileResult(Path("seed.py"), Status.OK, diagnostics=tuple(check_source(SEED, path="seed.py")))
    report.print_check([result], False, stream)
    return stream.getvalue()


@pytest.mark.parametrize(
    "no_color, coloured",
    [
        pytest.param(None, True, id="unset"),
        pytest.param("1", False, id="set"),
        pytest.param("", True, id="empty: unset, as no-color.org says"),
    ],
)
def test_colour_on_a_terminal_follows_no_color(
    monkeypatch: pytest.MonkeyPatch, no_color: str | None, coloured: bool
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    if no_color is not None:
        monkeypatch.setenv("NO_COLOR", no_color)
    assert ("\x1b[" in findings_text(Terminal())) is coloured


def test_no_colour_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert "\x1b[" not in findings_text(io.StringIO())


HELPER_ARITHMETIC = """
from functools import partial

import jax


def weight(x, alpha):
    scaled = x * alpha
    shifted = scaled + alpha
    return shifted / alpha


@partial(jax.custom_vjp, nondiff_argnums=(1,))
def solve(x, alpha):
    return weight(x, alpha)


def solve_fwd(x, alpha):
    return solve(x, alpha), x


def solve_bwd(alpha, x, g):
    return (g * alpha,)


solve.defvjp(solve_fwd, solve_bwd)
"""


def test_show_reasons_gives_one_line_per_reason_with_every_line_it_was_seen_on(tmp_path: Path) -> None:
    path = tmp_path / "helper.py"
    path.write_text(HELPER_ARITHMETIC, encoding="utf-8")
    (diagnostic,) = check_source(HELPER_ARITHMETIC, path=str(path))
    texts = [r.text for r in diagnostic.reasons]
    assert len(texts) > len(set(texts))  # the helper's three lines are three reasons of one text
    code, out = run("check", "--show-reasons", str(path))
    reasons = [line.strip() for line in out.splitlines() if line.startswith("    alpha: ")]
    assert code == 1
    assert len(reasons) == len(set(texts)), out
    helper = next(r for r in reasons if "helper `weight`" in r and "the primal" in r)
    assert helper.endswith("(lines 8, 9, 10)"), helper
    assert any(r.endswith("(line 23)") for r in reasons), reasons  # bwd's own arithmetic, one line


WEAK = """
from functools import partial

import jax
import jax.numpy as jnp


@partial(jax.custom_vjp, nondiff_argnums=(1, 2))
def directional_grad(x, lo, hi):
    return x


def directional_grad_fwd(x, lo, hi):
    return x, x


def directional_grad_bwd(lo, hi, x, g):
    mask = jnp.where(x <= lo, g > 0, jnp.where(x >= hi, g < 0, True))
    return (g * mask.astype(g.dtype),)


directional_grad.defvjp(directional_grad_fwd, directional_grad_bwd)
"""  # lo and hi are only compared: array-valued on weak evidence, so their fix is unsafe


def test_check_and_fix_say_how_many_fixes_need_unsafe_fixes(tmp_path: Path) -> None:
    (tmp_path / "weak.py").write_text(WEAK, encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    code, out = run("check", "--no-cache", "--isolated", str(tmp_path / "weak.py"))
    lines = out.splitlines()
    assert code == 1 and len(lines) == 3
    assert all(line.endswith("under jit/vmap/grad") for line in lines[:2])  # as ruff's: no mark
    assert lines[2] == (
        "Found 2 findings (0 fixable) in 1 file checked. 2 unsafe fixes available with "
        "`vjp-migrate fix --unsafe-fixes`."
    )
    code, out = run("check", "--no-cache", "--isolated", str(tmp_path))
    assert out.splitlines()[-1] == (
        "Found 4 findings (2 fixable) in 2 files checked. "
        "Run `vjp-migrate fix` to apply the fixes (2 unsafe fixes available with `--unsafe-fixes`)."
    )
    code, out = run("fix", "--diff", "--isolated", str(tmp_path))
    assert out.splitlines()[-1] == (
        "Would fix 2 findings in 1 file, 2 remaining (2 unsafe fixes available with `--unsafe-fixes`)."
    )
    code, out = run("fix", "--diff", "--isolated", "--unsafe-fixes", str(tmp_path))
    assert (code, out.splitlines()[-1]) == (1, "Would fix 4 findings in 2 files.")


def test_unsafe_fixes_the_configuration_enables_are_marked_and_counted_fixable(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nunsafe-fixes = true\n", encoding="utf-8")
    (tmp_path / "weak.py").write_text(WEAK, encoding="utf-8")
    _, out = run("check", "--no-cache", str(tmp_path / "weak.py"))
    lines = out.splitlines()
    assert all(line.endswith(" [*unsafe]") for line in lines[:2])
    assert lines[2] == "Found 2 findings (2 fixable) in 1 file checked. Run `vjp-migrate fix` to apply the fixes."
    _, out = run("fix", "--diff", "--no-unsafe-fixes", str(tmp_path / "weak.py"))
    assert out.splitlines()[-1] == (
        "Would fix nothing, 2 findings remaining (2 unsafe fixes available with `--unsafe-fixes`)."
    )


def test_a_finding_whose_site_a_noqa_keeps_from_fix_has_no_unsafe_fix(tmp_path: Path) -> None:
    # `scale` is unknown (VJP002, silenced here), `lo` array-valued on weak evidence: fix leaves
    # the whole site alone, so no option would fix `lo` and the summary must not promise it.
    source = (
        WEAK.replace("nondiff_argnums=(1, 2))", "nondiff_argnums=(1, 2, 3))  # noqa: VJP002")
        .replace("(x, lo, hi)", "(x, lo, hi, scale)")
        .replace("(lo, hi, x, g)", "(lo, hi, scale, x, g)")
    )
    (tmp_path / "weak.py").write_text(source, encoding="utf-8")
    args = ["--no-cache", "--isolated", "--select", "ALL", str(tmp_path / "weak.py")]
    code, out = run("check", *args)
    assert (code, out.splitlines()[-1]) == (1, "Found 2 findings (0 fixable) in 1 file checked.")
    _, out = run("check", "--output-format", "json", *args)
    assert [(f["argument"], f["fixable"], f["fix_safety"]) for f in json.loads(out)] == [
        ("lo", False, "none"),
        ("hi", False, "none"),
    ]
    _, out = run("fix", "--diff", *args[1:])
    assert out.splitlines()[-1] == "Would fix nothing, 2 findings remaining."


ALIASED = """\
from functools import partial

import jax

vjp_w = partial(jax.custom_vjp, nondiff_argnums=(1,))


@vjp_w
def f(x, w):
    return x * w


def f_fwd(x, w):
    return f(x, w), None


def f_bwd(w, _, g):
    return (g * w,)


f.defvjp(f_fwd, f_bwd)
"""


def test_a_public_alias_the_fix_keeps_unused_is_noted_by_check_and_fix(tmp_path: Path) -> None:
    # review: the alias stays for other modules but still lists the moved position; say so
    path = tmp_path / "ops.py"
    path.write_text(ALIASED, encoding="utf-8")
    note = (
        "the fix keeps the alias `vjp_w`, unused here, for the modules that may import it: its "
        "nondiff_argnums still lists position 1"
    )
    cache = str(tmp_path / "cache")
    for _ in range(2):  # the second answered from the cache
        _, out = run("check", "--isolated", "--cache-dir", cache, str(path))
        assert out.splitlines()[1] == f"    {note}"
    _, out = run("check", "--isolated", "--output-format", "json", str(path))
    assert json.loads(out)[0]["notes"] == [note]
    _, out = run("fix", "--isolated", str(path))
    assert out.splitlines() == [f"{path}:9:10: note: {note}", "Fixed 1 finding in 1 file."]
    assert path.read_text(encoding="utf-8").startswith(ALIASED.split("@vjp_w")[0] + "@jax.custom_vjp\n")
