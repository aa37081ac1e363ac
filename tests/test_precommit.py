"""The pre-commit hooks, run by the real `pre-commit try-repo` against a temporary git repository.

The project is copied (working tree, no .git) into a fresh repository and committed there, so
nothing is committed in the real checkout. The hook environment is built from PyPI the first
time; PRE_COMMIT_HOME is kept per test session.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:  # the project depends on tomli there
    import tomli as tomllib
from conftest import ROOT

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"]
IGNORE = shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".*_cache", "build", "dist", ".hypothesis")

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is needed by pre-commit")


def git(*args: str, cwd: Path) -> None:
    subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    repo = tmp_path_factory.mktemp("hook-repo") / "vjp-migrate"
    shutil.copytree(ROOT, repo, ignore=IGNORE)
    git("init", "-q", cwd=repo)
    git("add", "-A", cwd=repo)
    git("commit", "-q", "-m", "snapshot", cwd=repo)
    return repo


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("pre-commit-home")


def try_repo(hook_repo: Path, home: Path, user: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hook_repo), "--all-files", "--color", "never"],
        cwd=user,
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )


def user_repo(tmp_path: Path) -> Path:
    (tmp_path / "seed.py").write_text(SEED, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("nondiff_argnums\n", encoding="utf-8")
    # pre-commit names every file; the hooks' --force-exclude makes the configuration's exclude hold.
    (tmp_path / "pyproject.toml").write_text("[tool.vjp-migrate]\nexclude = ['generated']\n", encoding="utf-8")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "gen.py").write_text(SEED, encoding="utf-8")
    git("init", "-q", cwd=tmp_path)
    git("add", "-A", cwd=tmp_path)
    return tmp_path


def test_hooks_report_then_fix_then_pass(hook_repo: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    # try-repo builds the hook environment afresh each time (~15 s), so both hooks run together.
    user = user_repo(tmp_path)
    result = try_repo(hook_repo, pre_commit_home, user)
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    check, fix = out.split("vjp-migrate (fix)")
    assert "vjp-migrate (check)" in check and "Failed" in check
    assert "seed.py:8:19: VJP001" in check and "notes.txt" not in out and "gen.py" not in out
    assert (user / "generated" / "gen.py").read_text(encoding="utf-8") == SEED
    assert "files were modified by this hook" in fix
    assert "@jax.custom_vjp\n" in (user / "seed.py").read_text(encoding="utf-8")
    git("add", "-A", cwd=user)  # what a user does after the fix hook: re-stage, commit again
    result = try_repo(hook_repo, pre_commit_home, user)
    assert result.returncode == 0, result.stdout
    assert result.stdout.count("Passed") == 2


def test_hook_environment_has_no_jax() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert "additional_dependencies" not in hooks and "jupyter" in hooks and "require_serial: true" in hooks
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    assert not [d for d in dependencies if d.startswith(("jax", "numpy"))]


def test_readme_shows_the_hook_and_the_flake8_usage() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "repos:\n  - repo: " in readme and "hooks:\n      - id: vjp-migrate-check" in readme
    assert "flake8 --select VJP" in readme


def readme_local_hook() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", readme, flags=re.S)
    local = [block for block in blocks if "repo: local" in block]
    assert len(local) == 1, blocks
    return local[0]


def test_readme_local_hook_runs_the_installed_tool(tmp_path: Path) -> None:
    # `language: system` builds nothing: the hook runs the vjp-migrate this interpreter installed.
    user = user_repo(tmp_path)
    (user / ".pre-commit-config.yaml").write_text(readme_local_hook(), encoding="utf-8")
    git("add", "-A", cwd=user)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "PRE_COMMIT_HOME": str(tmp_path / "home"), "NO_COLOR": "1"}
    run = [sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"]
    result = subprocess.run(run, cwd=user, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "vjp-migrate (check)" in result.stdout and "Failed" in result.stdout
    assert "seed.py:8:19: VJP001" in result.stdout and "gen.py" not in result.stdout
    assert (user / "seed.py").read_text(encoding="utf-8") == SEED
