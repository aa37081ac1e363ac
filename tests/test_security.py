"""Security (issue #6, item 6): check and fix never import, execute or evaluate user code, and
write only below the paths they are given.

The tree under test is hostile: modules with top-level side effects, a non-literal
`nondiff_argnums` that would run a command if evaluated, annotations and defaults with side
effects, and files shadowing `jax`, `functools`, `libcst`, `click` and `rich`, with the
tool started from inside the tree. The CLI runs in a subprocess under a Python audit hook
that records every import from the tree, every execution of code compiled from it, every
process spawned and every file opened for writing, renamed, removed or chmod-ed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from vjp_migrate.api import fix_source

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
MIGRATED = fix_source(SEED).source

POISON = """\
import pathlib
pathlib.Path({marker!r}).write_text("{name} was executed")
"""

AUDITED = """\
import json, os, sys
tree, log_path, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
# Opened before the hook: lines are appended by this process and by any worker it forks.
log = open(log_path, "a", buffering=1)
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
PATH_EVENTS = ("os.rename", "os.replace", "os.remove", "os.chmod", "os.chown", "os.mkdir", "os.rmdir",
               "os.symlink", "os.link", "os.truncate", "shutil.copyfile", "shutil.rmtree")


def record(*event):
    log.write(json.dumps(event) + "\\n")


def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writing = (mode and any(c in mode for c in "wax+")) or (flags & WRITE)
        if writing and isinstance(path, (str, bytes, os.PathLike)):
            record("write", os.path.abspath(os.fsdecode(path)))
    elif event in PATH_EVENTS:
        for arg in args[:2]:
            if isinstance(arg, (str, bytes, os.PathLike)):
                record(event, os.path.abspath(os.fsdecode(arg)))
    elif event == "exec":
        record("exec", getattr(args[0], "co_filename", repr(args[0])))
    elif event in ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen"):
        record(event, repr(args)[:300])
    elif event == "os.fork":
        record(event, "")


sys.addaudithook(hook)
sys.path[:] = [p for p in sys.path if p not in ("", ".", tree)]  # as the console script runs
from vjp_migrate.cli import main

try:
    main(argv)
except SystemExit as stop:
    code = stop.code
from_tree = sorted(
    name for name, module in list(sys.modules.items())
    if os.path.abspath(str(getattr(module, "__file__", None) or "/")).startswith(tree + os.sep)
)
record("end", code, from_tree)
"""

# The tool forks its own worker processes (crash isolation): that is not running user code.
SPAWNS = ("os.system", "os.exec", "os.posix_spawn", "os.spawn", "subprocess.Popen")
SEMAPHORES = "/dev/shm/pym-"  # multiprocessing's own locks for those workers
CACHE = ".vjp_migrate_cache"  # check's result cache (JSON only), at the project root like ruff's (no configuration here: the current folder)


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    pkg = tree / "pkg"
    pkg.mkdir(parents=True)
    marker = tmp_path / "EXECUTED"
    for name in (
        "jax.py",
        "functools.py",
        "libcst.py",
        "click.py",
        "rich.py",
        "conftest.py",
        "setup.py",
        "sitecustomize.py",
        "pkg/__init__.py",
    ):
        (tree / name).write_text(POISON.format(marker=str(marker), name=name) + "nondiff_argnums = (0,)\n")
    poisoned_seed = POISON.format(marker=str(marker), name="seed.py") + SEED
    (pkg / "seed.py").write_text(poisoned_seed, encoding="utf-8")
    (pkg / "evaluated.py").write_text(
        SEED.replace(
            "nondiff_argnums=(0, 1)",
            f"nondiff_argnums=__import__('pathlib').Path({str(marker)!r}).write_text('argnums evaluated')",
        ).replace(
            "def clip_gradient(lo, hi, x):",
            f"def clip_gradient(lo, hi, x=open({str(marker)!r}, 'w')) -> print('annotation evaluated'):",
        ),
        encoding="utf-8",
    )
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "sibling.py").write_text(SEED, encoding="utf-8")
    return tree


def snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.relative_to(root).as_posix(): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def audited_run(tree: Path, *args: str) -> dict[str, object]:
    log = tree.parent / "audit.jsonl"
    home = tree.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache"), "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        [sys.executable, "-c", AUDITED, str(tree), str(log), *args],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    assert list(home.iterdir()) == []  # no caches, no configuration written to the home folder
    (end,) = [line for line in lines if line[0] == "end"]
    events = [line for line in lines if line[0] != "end"]
    root = str(tree.parent)
    return {
        "code": end[1],
        "imported_from_tree": end[2],
        "user_code_executed": [e for e in events if e[0] == "exec" and e[1].startswith(root)],
        "spawned": [e for e in events if e[0] in SPAWNS],
        "written": [e for e in events if e[0] not in (*SPAWNS, "exec", "os.fork") and not e[1].startswith(SEMAPHORES)],
    }


@pytest.mark.parametrize(
    "command",
    [
        pytest.param(["check"], id="check"),
        pytest.param(["check", "--output-format", "json"], id="check json"),
        pytest.param(["fix", "--diff"], id="fix --diff"),
    ],
)
def test_read_only_commands_execute_nothing_and_write_nothing(hostile: Path, command: list[str]) -> None:
    root = hostile.parent
    before = snapshot(root)
    result = audited_run(hostile, *command, str(hostile))
    assert result["code"] == 1  # findings were made: the files really were analysed
    assert not (root / "EXECUTED").exists()
    assert result["imported_from_tree"] == []
    assert result["user_code_executed"] == []
    assert result["spawned"] == []
    cache = str(hostile / CACHE)
    assert [e for e in result["written"] if not (e[1] + os.sep).startswith(cache + os.sep)] == []  # only its cache
    after = snapshot(root)
    assert {k: v for k, v in after.items() if not k.startswith(f"tree/{CACHE}/")} == before
    for name, (data, _) in after.items():  # the cache holds data, never code (JSON, no pickle)
        if CACHE in name and not name.endswith(("CACHEDIR.TAG", ".gitignore")):
            json.loads(data)


def test_fix_writes_only_below_the_given_path(hostile: Path) -> None:
    root = hostile.parent
    target = hostile / "pkg"
    before = snapshot(root)
    result = audited_run(hostile, "fix", str(target))
    # evaluated.py's nondiff_argnums cannot be read without running it: a finding that says so
    # (positions read from bwd's names, VJP003), and the file left alone
    assert result["code"] == 1
    assert not (root / "EXECUTED").exists()
    assert result["imported_from_tree"] == []
    assert result["user_code_executed"] == []
    assert result["spawned"] == []
    assert result["written"], "fix wrote nothing"
    assert all(path.startswith(str(target) + os.sep) for _, path in result["written"]), result["written"]
    after = snapshot(root)
    assert after.keys() == before.keys()  # no new file: no cache, no bytecode, no temporary left
    assert {name for name in after if after[name] != before[name]} == {"tree/pkg/seed.py"}
    assert (target / "seed.py").read_text(encoding="utf-8").endswith(MIGRATED)
