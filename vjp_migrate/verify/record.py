"""Verify: ``vjp-migrate record`` (parent side) — run the user's own command with the
recorder bootstrap on ``PYTHONPATH`` and merge what its processes captured into one file.

The bootstrap (``_bootstrap/sitecustomize.py``) patches ``jax.custom_vjp.__call__`` as soon as
the command imports JAX; each process writes a part file into a private temporary directory,
merged here into ``--out`` (arrays in .npz, structure in JSON; see ``values.py``).
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from vjp_migrate.signals import Stopped
from vjp_migrate.verify.values import merge_parts, read_recording

BOOTSTRAP = Path(__file__).resolve().parent / "_bootstrap"


@dataclass(frozen=True)
class RecordResult:
    """What ``record`` did: the command's exit status and what was kept."""

    out: Path
    command_status: int | None  # None: the command could not be started or timed out
    functions: int
    calls: int
    message: str

    @property
    def exit_code(self) -> int:
        """The command's own status when it failed; 2 when nothing was recorded; else 0."""
        if self.command_status is None:
            return 2
        if self.command_status != 0:
            return self.command_status
        return 0 if self.calls else 2


TERMINATE_GRACE = 10.0  # seconds a timed-out command has, after SIGTERM, to write what it recorded


def _run(command: list[str], env: dict[str, str], cwd: Path | None, timeout: float | None, capture: bool) -> int:
    """The command's exit status; TimeoutExpired once it ran too long. Ended by SIGTERM first,
    so the recorder inside it writes what it has (a SIGKILL would lose it), then killed. A
    SIGTERM or SIGHUP that stops this process is passed on to it the same way (a Ctrl-C reaches
    it from the terminal)."""
    pipe = subprocess.PIPE if capture else None
    with subprocess.Popen(command, env=env, cwd=cwd, stdout=pipe, stderr=pipe) as process:
        try:
            process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end(process, signal.SIGTERM)
            raise
        except Stopped as stop:
            _end(process, stop.signum)
            raise
        return process.returncode


def _end(process: subprocess.Popen[bytes], signum: int) -> None:
    process.send_signal(signum)
    try:
        process.communicate(timeout=TERMINATE_GRACE)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()


def record(
    command: list[str],
    out: Path,
    max_calls: int = 5,
    timeout: float | None = None,
    capture: bool = False,
    cwd: Path | None = None,
) -> RecordResult:
    """Run ``command`` with the recorder and write the recording to ``out``."""
    if not command:
        return RecordResult(out, None, 0, 0, "no command given: vjp-migrate record --out FILE -- CMD...")
    with tempfile.TemporaryDirectory(prefix="vjp-migrate-record-") as parts_dir:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOTSTRAP), env.get("PYTHONPATH")) if p)
        env["VJP_MIGRATE_RECORD_DIR"] = parts_dir
        env["VJP_MIGRATE_RECORD_MAX"] = str(max_calls)
        status: int | None
        problem = ""
        try:
            status = _run(command, env, cwd, timeout, capture)
        except subprocess.TimeoutExpired:
            status = None
            problem = f"the command timed out after {timeout:g}s"
        except OSError as exc:
            return RecordResult(out, None, 0, 0, f"could not run {command[0]!r}: {exc}")
        parts = sorted(Path(parts_dir).glob("part-*.npz"))
        if not parts:
            nothing = "no custom_vjp call was recorded"
            why = f"{problem}; {nothing}" if problem else f"{nothing} (did the command import jax?)"
            return RecordResult(out, status, 0, 0, why)
        try:
            calls = merge_parts(parts, out, max_calls)
        except OSError as exc:  # the CLI checked --out before the run; a full disk still ends here
            return RecordResult(out, None, 0, 0, f"cannot write the recording {out}: {exc.strerror or exc}")
    functions = len(read_recording(out).functions)
    message = f"recorded {calls} call(s) of {functions} custom_vjp function(s) into {out}"
    if status is None:
        message = f"{problem}; {message}"
    elif status != 0:
        message += f" (the command exited with status {status})"
    return RecordResult(out, status, functions, calls, message)
