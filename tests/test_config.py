"""Configuration in pyproject.toml: discovery upward, merging with the command line, overrides."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main
from vjp_migrate.config import CliOptions, ConfigError, find_config, groups, read_config, settings_for

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout + result.stderr


def project(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f"[project]\nname = 'x'\n\n[tool.vjp-migrate]\n{table}\n", encoding="utf-8"
    )
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "seed.py").write_text(SEED, encoding="utf-8")
    return tmp_path


def test_found_from_the_file_folder_upward(tmp_path: Path) -> None:
    root = project(tmp_path, "ignore = ['VJP001']")
    assert find_config(root / "pkg" / "seed.py") == root / "pyproject.toml"


def test_pyproject_without_the_table_is_skipped(tmp_path: Path) -> None:
    root = project(tmp_path, "ignore = ['VJP001']")
    (root / "pkg" / "pyproject.toml").write_text("[tool.black]\nline-length = 80\n", encoding="utf-8")
    assert find_config(root / "pkg" / "seed.py") == root / "pyproject.toml"


def test_ignore_from_the_file_silences_check(tmp_path: Path) -> None:
    root = project(tmp_path, "ignore = ['VJP001']")
    code, out = run("check", str(root / "pkg"))
    assert code == 0, out
    assert "All checks passed (1 file checked)." in out


def test_cli_select_wins_over_the_file(tmp_path: Path) -> None:
    root = project(tmp_path, "select = ['VJP004']")
    assert run("check", str(root / "pkg"))[0] == 0
    code, out = run("check", "--select", "VJP001", str(root / "pkg"))
    assert code == 1 and "VJP001" in out


def test_isolated_ignores_the_file(tmp_path: Path) -> None:
    root = project(tmp_path, "ignore = ['VJP001']")
    assert run("check", "--isolated", str(root / "pkg"))[0] == 1


def test_config_option_names_the_file(tmp_path: Path) -> None:
    root = project(tmp_path, "")
    other = tmp_path / "other.toml"
    other.write_text("[tool.vjp-migrate]\nignore = ['VJP']\n", encoding="utf-8")
    assert run("check", str(root / "pkg"))[0] == 1
    assert run("check", "--config", str(other), str(root / "pkg"))[0] == 0


def test_extend_exclude_anchored_at_the_config(tmp_path: Path) -> None:
    root = project(tmp_path, "extend-exclude = ['pkg/seed.py']")
    code, out = run("check", str(root))
    assert (code, out) == (0, "No files to check.\n")


def test_static_args_override_keeps_an_argument(tmp_path: Path) -> None:
    root = project(tmp_path, "static-args = ['pkg.seed.clip_gradient:lo']")
    code, out = run("check", "--output-format", "concise", str(root / "pkg"))
    assert code == 1
    assert [line.split("`")[1] for line in out.splitlines()] == ["hi"]


def test_static_args_override_matches_whatever_the_spelling_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = project(tmp_path, "static-args = ['pkg.seed.clip_gradient:lo']")
    monkeypatch.chdir(root / "pkg")
    code, out = run("check", "--output-format", "concise", "seed.py")
    assert code == 1
    assert [line.split("`")[1] for line in out.splitlines()] == ["hi"]


def test_array_args_override_makes_an_unknown_argument_fixable(tmp_path: Path) -> None:
    root = project(tmp_path, "array-args = ['f:scale']\nunsafe-fixes = false")
    (root / "pkg" / "seed.py").write_text(
        "from functools import partial\nimport jax\n\n"
        "@partial(jax.custom_vjp, nondiff_argnums=(0,))\ndef f(scale, x):\n    return helper(scale, x)\n\n"
        "def f_fwd(scale, x):\n    return helper(scale, x), None\n\n"
        "def f_bwd(scale, _, g):\n    return (helper(scale, g),)\n\nf.defvjp(f_fwd, f_bwd)\n",
        encoding="utf-8",
    )
    assert run("check", "--isolated", str(root / "pkg"))[0] == 0  # unknown: VJP002 is off by default
    code, out = run("check", "--output-format", "concise", str(root / "pkg"))
    assert code == 1 and "VJP001 `scale`" in out


@pytest.mark.parametrize(
    "table, message",
    [
        pytest.param("selec = ['VJP001']", "unknown key(s) in [tool.vjp-migrate]: selec", id="misspelt key"),
        pytest.param("select = 'VJP9'", "unknown rule selector", id="unknown code"),
        pytest.param("unsafe-fixes = 'yes'", "unsafe-fixes must be true or false", id="not a bool"),
        pytest.param("static-args = ['f']", "is not 'module.function:argument'", id="override without argument"),
    ],
)
def test_bad_configuration_is_a_usage_error(tmp_path: Path, table: str, message: str) -> None:
    root = project(tmp_path, table)
    code, out = run("check", str(root / "pkg"))
    assert code == 2 and message in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("[tool]\nvjp-migrate = 3\n", "must be a table, not an integer", id="a number"),
        pytest.param("[tool]\nvjp-migrate = 'x'\n", "must be a table, not a string", id="a string"),
        pytest.param(
            "[[tool.vjp-migrate]]\nselect = ['VJP']\n",
            "must be a table, not an array of tables",
            id="an array of tables",
        ),
        pytest.param("tool = 3\n", None, id="tool no table: no configuration of ours"),
    ],
)
def test_a_configuration_that_is_no_table_is_one_line(tmp_path: Path, text: str, message: str | None) -> None:
    """cli28 05: a traceback, in the command line and in flake8."""
    (tmp_path / "pyproject.toml").write_text(text + "# vjp-migrate\n", encoding="utf-8")
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    code, out = run("check", "--no-cache", str(tmp_path / "seed.py"))
    if message is None:
        assert code == 1 and "VJP001" in out, out
        return
    assert code == 2 and f"pyproject.toml: [tool.vjp-migrate] {message}" in out and "Traceback" not in out, out
    assert "Usage:" not in out and "--help" not in out, out  # cli28 16: the command line was right


def test_paths_under_different_configs_form_groups(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    a = project(tmp_path / "a", "ignore = ['VJP001']")
    b = tmp_path / "b"
    b.mkdir()
    found = groups([a / "pkg" / "seed.py", b], CliOptions())
    assert [g.config_path for g in found] == [a / "pyproject.toml", None]
    assert "VJP001" not in found[0].settings.select and "VJP001" in found[1].settings.select


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="not valid TOML"):
        read_config(tmp_path / "pyproject.toml")


def test_exclude_does_not_apply_to_files_named_on_the_command_line(tmp_path: Path) -> None:
    root = project(tmp_path, "exclude = ['generated']")
    (root / "generated").mkdir()
    (root / "generated" / "gen.py").write_text(SEED, encoding="utf-8")
    assert run("check", str(root / "generated" / "gen.py"))[0] == 1  # as in ruff, without --force-exclude


@pytest.mark.parametrize(
    "table, named",
    [
        pytest.param("exclude = ['generated']", "generated/gen.py", id="a folder name"),
        pytest.param("exclude = ['gen.py']", "generated/gen.py", id="a file name"),
        pytest.param("extend-exclude = ['generated/*.py']", "generated/gen.py", id="a path from the config's folder"),
        pytest.param("", "build/gen.py", id="a built-in skip"),
    ],
)
def test_force_exclude_applies_exclude_to_named_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, named: str
) -> None:
    """pre-commit names every file: --force-exclude (in the hooks) makes them obey the configuration."""
    root = project(tmp_path, table)
    (root / named).parent.mkdir()
    (root / named).write_text(SEED, encoding="utf-8")
    monkeypatch.chdir(root)
    code, out = run("check", "--force-exclude", named, "pkg/seed.py")
    assert code == 1
    assert "generated" not in out and "build" not in out and "in 1 file checked" in out
    code, out = run("fix", "--force-exclude", named)
    assert (code, out) == (0, "Nothing to fix.\n")
    assert (root / named).read_text(encoding="utf-8") == SEED


def test_force_exclude_skips_a_virtualenv_known_by_its_pyvenv_cfg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cli29 19: the walk skipped env311/ (it holds a pyvenv.cfg), --force-exclude checked its files.
    root = project(tmp_path, "")
    (root / "env311" / "lib").mkdir(parents=True)
    (root / "env311" / "pyvenv.cfg").write_text("home = /usr/bin\n", encoding="utf-8")
    (root / "env311" / "lib" / "a.py").write_text(SEED, encoding="utf-8")
    monkeypatch.chdir(root)
    assert run("check", ".")[1].endswith("in 1 file checked. Run `vjp-migrate fix` to apply the fixes.\n")
    for named in ("env311/lib/a.py", "env311", "env311/lib"):
        code, out = run("check", "--force-exclude", named, "pkg/seed.py")
        assert code == 1 and "env311" not in out and "in 1 file checked" in out, (named, out)
    assert settings_for(root / "env311" / "lib" / "a.py") is None  # the flake8 plugin's view
    assert run("check", "env311/lib/a.py")[0] == 1  # named without --force-exclude: checked, as in ruff


def test_force_exclude_ignores_excluded_names_above_the_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "build").mkdir()  # the project itself lives in a folder named like a built-in skip
    root = project(tmp_path / "build", "")
    monkeypatch.chdir(root)
    assert run("check", "--force-exclude", "pkg/seed.py")[0] == 1


def test_cli_exclude_path_is_relative_to_the_current_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = project(tmp_path, "")
    (root / "pkg" / "other.py").write_text(SEED, encoding="utf-8")
    monkeypatch.chdir(root)
    code, out = run("check", "--output-format", "concise", "--exclude", "pkg/seed.py", ".")
    assert code == 1
    assert {line.split(":")[0] for line in out.splitlines()} == {"pkg/other.py"}


def test_config_and_isolated_contradict(tmp_path: Path) -> None:
    root = project(tmp_path, "ignore = ['VJP001']")
    code, out = run("check", "--isolated", "--config", str(root / "pyproject.toml"), str(root))
    assert code == 2 and "--config cannot be used with --isolated" in out
