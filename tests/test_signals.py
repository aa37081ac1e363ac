"""A run stopped by a signal leaves nothing running (cli30 2): SIGTERM and SIGHUP end it as Ctrl-C
does (exit 128 + the signal, workers ended, a half-renamed migration left to its journal), and
the workers of a parent killed outright (SIGKILL) end on their own."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT

from vjp_migrate.api import fix_source
from vjp_migrate.files import pid_alive
from vjp_migrate.lifeline import ORPHANED
from vjp_migrate.transaction import JOURNAL_PREFIX, KILL_HOOK
from vjp_migrate.workers import CRASH_HOOK

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds child processes through /proc")

SEED = ROOT / "examples" / "clip_gradient.py"


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == pid and fields[0] not in (b"Z", b"X"):
                found.append(int(entry.name))
    return found


def _wait_for(condition: Callable[[], object], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@dataclass
class _Run:
    process: subprocess.Popen[str]
    workers: list[int] = field(default_factory=list)

    def wait_for_workers(self, count: int) -> list[int]:
        _wait_for(lambda: len(_children(self.process.pid)) == count)
        self.workers = _children(self.process.pid)
        return self.workers


@contextmanager
def _started(args: list[str], cwd: Path, env: dict[str, str] | None = None, shell: str = "") -> Iterator[_Run]:
    """``vjp-migrate ARGS`` (``exec``'d by a shell running ``shell`` first, when given); it and the
    workers it was seen with are killed afterwards: a failing test must not leave them behind,
    nor wait for the end of its stderr, which they hold too."""
    command = [sys.executable, "-m", "vjp_migrate", *args]
    if shell:
        command = ["sh", "-c", f'{shell}; exec "$@"', "sh", *command]
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        # at its default, whatever the test runner inherited (CI started under `nohup` ignores it)
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL),
    )
    run = _Run(process)
    try:
        yield run
    finally:
        for pid in [process.pid, *run.workers]:
            if pid_alive(pid):
                os.kill(pid, signal.SIGKILL)
        process.communicate()


def _tree(root: Path) -> Path:
    for i in range(8):
        shutil.copy(SEED, root / f"seed_{i}.py")
    return root


def _busy_workers(tmp_path: Path, signum: int) -> tuple[int | None, str, list[int]]:
    """`check -j 2` with a worker that never finishes its file: the status after ``signum``, its
    last stderr line, and the workers it had (every one ended)."""
    with _started(["check", "--no-cache", "-j", "2", "."], _tree(tmp_path), {CRASH_HOOK: "hang:seed_3.py"}) as run:
        workers = run.wait_for_workers(2)
        time.sleep(0.5)  # one of them hangs on seed_3.py, the other waits for work
        signalled = time.monotonic()
        run.process.send_signal(signum)
        status = run.process.wait(timeout=60)
        # Stopped, it kills its workers at once: it used to give each a second to end on its own,
        # which they never do mid-run (SIGTERM's sender may not wait that long: `docker stop`).
        assert time.monotonic() - signalled < 1.8
        _wait_for(lambda: not any(pid_alive(pid) for pid in workers), seconds=10)
        assert run.process.stderr is not None
        return status, run.process.stderr.read().strip().rsplit("\n", 1)[-1], workers


@pytest.mark.parametrize(
    ("signum", "status", "said"),
    [
        pytest.param(signal.SIGINT, 130, "Interrupted.", id="SIGINT"),
        pytest.param(signal.SIGTERM, 143, "Interrupted by SIGTERM.", id="SIGTERM"),
        pytest.param(signal.SIGHUP, 129, "Interrupted by SIGHUP.", id="SIGHUP"),
    ],
)
def test_sigterm_and_sighup_end_the_run_as_ctrl_c_does(tmp_path: Path, signum: int, status: int, said: str) -> None:
    assert _busy_workers(tmp_path, signum)[:2] == (status, said)


def test_the_workers_of_a_killed_run_end_too(tmp_path: Path) -> None:
    status, _, workers = _busy_workers(tmp_path, signal.SIGKILL)
    assert status == -signal.SIGKILL and len(workers) == 2  # and every worker ended (_busy_workers)


def test_an_ignored_sighup_stays_ignored(tmp_path: Path) -> None:
    """`nohup vjp-migrate fix ...` must outlive the terminal."""
    args, env = ["check", "--no-cache", "-j", "2", "."], {CRASH_HOOK: "hang:seed_3.py"}
    with _started(args, _tree(tmp_path), env, shell='trap "" HUP') as run:
        run.wait_for_workers(2)
        run.process.send_signal(signal.SIGHUP)
        time.sleep(1)
        assert run.process.poll() is None
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(timeout=60) == 143


SAID = {"SIGINT": "Interrupted.", "SIGTERM": "Interrupted by SIGTERM.", "SIGHUP": "Interrupted by SIGHUP."}


@pytest.mark.parametrize(("name", "status"), [("SIGINT", 130), ("SIGTERM", 143), ("SIGHUP", 129)])
def test_a_migration_stopped_between_its_renames_is_completed_by_the_next_fix(
    tmp_path: Path, name: str, status: int
) -> None:
    """As the README promises for an interrupted run: the journal stays, the next `fix` completes it."""
    project = FIXTURES / "project_absolute_imports"
    shutil.copytree(project / "before", tmp_path, dirs_exist_ok=True)
    package = tmp_path / "mypkg"
    with _started(["fix", "-j", "1", "mypkg"], tmp_path, {KILL_HOOK: f"1:{name}"}) as run:
        assert run.process.wait(timeout=120) == status
        assert run.process.stderr is not None and run.process.stderr.read().strip().endswith(SAID[name])
    before, after = (
        {p.name: p.read_bytes() for p in (project / side / "mypkg").glob("*.py")} for side in ("before", "after")
    )
    now = {p.name: p.read_bytes() for p in package.glob("*.py")}
    assert [n for n in sorted(now) if now[n] != before[n]] in (["ops.py"], ["rules.py"])  # one renamed, one not
    assert len(list(package.glob(f"{JOURNAL_PREFIX}*"))) == 1
    done = subprocess.run(
        [sys.executable, "-m", "vjp_migrate", "fix", "mypkg"], cwd=tmp_path, capture_output=True, text=True
    )
    assert "completed an interrupted migration of 2 files" in done.stderr
    assert {p.name: p.read_bytes() for p in package.glob("*.py")} == after
    assert not list(package.glob(f"{JOURNAL_PREFIX}*"))


ORPHAN = """\
import os, time
from vjp_migrate.lifeline import ORPHANED
parent = os.getpid()
child = os.fork()
if child == 0:
    exit_with(parent)
    while True:
        time.sleep(60)
print(child, flush=True)
time.sleep(600)
"""


def test_a_worker_ends_once_its_parent_is_gone() -> None:
    parent = subprocess.Popen([sys.executable, "-c", ORPHAN], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert pid_alive(child)
        parent.kill()
        parent.wait()
        _wait_for(lambda: not pid_alive(child), seconds=10)
    finally:
        if pid_alive(child):
            os.kill(child, signal.SIGKILL)


def test_a_worker_whose_parent_is_already_gone_ends_at_once() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from vjp_migrate.lifeline import exit_with; exit_with(1); print('ran')"],
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (ORPHANED, "")


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="the verify worker needs JAX")
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_verify_worker_busy_with_user_code_ends_with_the_run(tmp_path: Path, signum: int) -> None:
    """A job runs user code for up to --timeout (300 s): the worker must not outlive the run."""
    sleeper = 'import pathlib, time\npathlib.Path("started").touch()\ntime.sleep(600)\n'
    (tmp_path / "before.py").write_text(sleeper + SEED.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "after.py").write_text(sleeper + fix_source(SEED.read_text(encoding="utf-8")).source, encoding="utf-8")
    with _started(["verify", "before.py", "after.py"], tmp_path) as run:
        _wait_for(lambda: (tmp_path / "started").exists())
        (worker,) = run.wait_for_workers(1)
        run.process.send_signal(signum)
        assert run.process.wait(timeout=60) == (-signum if signum == signal.SIGKILL else 128 + signum)
        _wait_for(lambda: not pid_alive(worker), seconds=10)


RECORDED = """\
import os, pathlib, sys, time
pathlib.Path("pid").write_text(str(os.getpid()))
time.sleep(600)
"""


def test_record_passes_sigterm_on_to_its_command(tmp_path: Path) -> None:
    with _started(["record", "--out", "r.npz", "--", sys.executable, "-c", RECORDED], tmp_path) as run:
        _wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text())
        command = int((tmp_path / "pid").read_text())
        run.workers = [command]
        run.process.send_signal(signal.SIGTERM)
        assert run.process.wait(timeout=60) == 143
        _wait_for(lambda: not pid_alive(command), seconds=10)
