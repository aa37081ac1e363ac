"""Stage 11: run the per-file work over many files, in worker processes the run survives.

LibCST's native parser can take a whole process down (a segfault on pathological input), and
any process can be killed by the OOM killer. Files are therefore processed in worker
processes; the parent hands out small batches, collects one result per file as it is done,
and when a worker dies it reports the file that worker was on as FAILED ("the parser crashed
on this file"), puts the rest of its batch back in the queue and starts a new worker. Results
come back in the order of the candidates, whatever the order the workers finished in.

``jobs == 1`` runs everything in this process (no isolation, no start-up cost).
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import os
import signal
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import get_context
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from multiprocessing.process import BaseProcess

    from vjp_migrate.discover import Candidate
    from vjp_migrate.model import FileResult, Settings

Progress = Callable[[int, int], None]
CRASHED = "the parser crashed on this file"
# Test-only fault injection: "<kind>:<file name>[:<phase>]" makes a *worker* process (of that
# phase only, when given) fail on that file.
# kind: segv (SIGSEGV), kill (SIGKILL, like the OOM killer), exit (os._exit), memory (MemoryError),
# hang (a file it never finishes).
CRASH_HOOK = "VJP_MIGRATE_TEST_CRASH"


@dataclass(frozen=True)
class Task:
    """What to do with each file; plain data, so it can be sent to a worker process."""

    mode: str  # "check" or "fix"
    settings: Settings
    cache_dir: Path | None = None  # check: the result cache, or None
    phase: int = 1  # 2: project.analyse_alone
    run: tuple[tuple[Path, ...], tuple[Path, ...]] = ((), ())  # phase 2: the run's files and roots


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def process(task: Task, candidate: Candidate) -> FileResult:
    """The work for one file (also what a worker runs); never raises for a bad file."""
    from vjp_migrate import api

    if task.phase == 2:
        from vjp_migrate.project import analyse_alone

        return analyse_alone(candidate.path, task.settings, task.mode == "fix", task.run)
    if task.mode == "fix":
        # Never written here: the parent writes once every file (and multi-file group) is decided.
        return api.fix_file(candidate.path, task.settings, False, candidate.explicit)
    cache = None
    if task.cache_dir is not None:
        from vjp_migrate.cache import Cache

        cache = Cache.open(task.cache_dir, task.settings)
    return api.check_file(candidate.path, task.settings, candidate.explicit, cache=cache)


def run(
    candidates: Sequence[Candidate], task: Task, jobs: int | None = None, progress: Progress | None = None
) -> list[FileResult]:
    """``process`` over every candidate, in the candidates' order."""
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1:
        results: list[FileResult] = []
        for candidate in candidates:
            results.append(process(task, candidate))
            if progress is not None:
                progress(len(results), len(candidates))
        return results
    return _Pool(candidates, task, jobs, progress).run()


BATCH = 16  # files per batch handed to a worker


# --- the pool ----------------------------------------------------------------------------------


Batch = list[int]  # indexes into the candidates


@dataclass
class _Worker:
    process: BaseProcess
    conn: Connection
    current: Any  # shared memory: the index the worker is on, -1 between files
    batch: set[int]  # handed out, not yet answered
    busy: bool = False  # a batch was handed out and its closing "rest" has not come back yet


class _Pool:
    """Hands out batches; a worker answers files with findings, failures or changes one by one,
    and the plain "nothing here" files of a batch in one message at its end (most files are
    dropped by the byte filter in microseconds, so a message per file would cost more than the
    work). Which file a dead worker was on is read from shared memory."""

    def __init__(self, candidates: Sequence[Candidate], task: Task, jobs: int, progress: Progress | None) -> None:
        self.candidates = candidates
        self.task = task
        self.progress = progress
        self.results: list[FileResult | None] = [None] * len(candidates)
        self.done = 0
        self.unexplained_deaths = 0
        size = max(1, min(BATCH, len(candidates) // (jobs * 4) or 1))
        self.queue: deque[Batch] = deque(
            list(range(start, min(start + size, len(candidates)))) for start in range(0, len(candidates), size)
        )
        self.jobs = max(1, min(jobs, len(self.queue)))
        # fork starts in milliseconds and needs nothing pickled, but is unsafe in a process that
        # already runs threads (say, a library user who imported JAX), and on macOS and Windows.
        self.context: Any = get_context("fork" if _single_threaded_linux() else "spawn")
        if task.mode == "fix" and self.context.get_start_method() == "fork":
            _preload()  # forked workers then share one import instead of each paying for its own

    def _start(self) -> _Worker:
        parent, child = self.context.Pipe()
        current = self.context.RawValue("q", -1)
        worker = self.context.Process(
            target=_worker_main, args=(child, current, self.task, self.candidates, os.getpid()), daemon=True
        )
        worker.start()
        child.close()
        return _Worker(worker, parent, current, set())

    def _give(self, worker: _Worker) -> None:
        if self.queue and not worker.busy:
            batch = self.queue.popleft()
            worker.batch.update(batch)
            worker.busy = True
            worker.conn.send(batch)

    def _record(self, index: int, result: FileResult) -> None:
        self.results[index] = result
        self.done += 1
        if self.progress is not None:
            self.progress(self.done, len(self.candidates))

    def run(self) -> list[FileResult]:
        workers = [self._start() for _ in range(self.jobs)]
        finished = False  # else stopped (Ctrl-C, SIGTERM): the workers are killed at once
        try:
            for worker in workers:
                self._give(worker)
            while any(w.busy for w in workers):
                busy = [w for w in workers if w.busy]
                ready = set(wait([w.conn for w in busy] + [w.process.sentinel for w in busy]))
                for i, worker in enumerate(workers):
                    if worker.busy and (worker.conn in ready or worker.process.sentinel in ready):
                        if not self._drain(worker):
                            workers[i] = worker = self._replace(worker)
                        self._give(worker)
            for worker in workers:
                with contextlib.suppress(OSError):  # a worker that died idle
                    worker.conn.send(None)  # no more work: the worker exits
            finished = True
        finally:
            for worker in workers:
                worker.process.join(timeout=1 if finished else 0)
                if worker.process.is_alive():
                    worker.process.kill()
                    worker.process.join()
                worker.conn.close()
        return [r for r in self.results if r is not None]

    def _drain(self, worker: _Worker) -> bool:
        """Take every answer the worker has sent; False when the worker has died."""
        from vjp_migrate.model import FileResult, Status

        try:
            while worker.conn.poll():
                kind, payload = worker.conn.recv()
                if kind == "one":
                    index, result = payload
                    worker.batch.discard(index)
                    self._record(index, result)
                else:  # "rest": every other file of the batch had nothing to say
                    for index in sorted(worker.batch):
                        self._record(index, FileResult(self.candidates[index].path, Status.OK))
                    worker.batch.clear()
                    worker.busy = False
        except (EOFError, OSError):
            pass
        worker.process.join(timeout=0)
        return worker.process.exitcode is None

    def _replace(self, dead: _Worker) -> _Worker:
        from vjp_migrate.model import FileResult, Status

        dead.conn.close()
        crashed = dead.current.value
        if crashed in dead.batch:
            dead.batch.discard(crashed)
            reason = _why(dead.process.exitcode)
            self._record(crashed, FileResult(self.candidates[crashed].path, Status.FAILED, reason))
        elif dead.batch:
            self.unexplained_deaths += 1  # died between files: try again, but not forever
            if self.unexplained_deaths > 3:
                for index in sorted(dead.batch):
                    reason = _why(dead.process.exitcode)
                    self._record(index, FileResult(self.candidates[index].path, Status.FAILED, reason))
                dead.batch.clear()
        if dead.batch:
            self.queue.appendleft(sorted(dead.batch))  # redone: files without news had no effects
        return self._start()


def _preload() -> None:
    """Import what analysing a file needs (LibCST above all), before the workers are forked."""
    import importlib

    for stage in ("api", "classify", "plan", "rewrite", "walk"):
        importlib.import_module(f"vjp_migrate.{stage}")


def _single_threaded_linux() -> bool:
    try:
        return sys.platform.startswith("linux") and len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def killed_by(signum: int) -> str:
    """``killed by SIGSEGV``, or the number of a signal Python has no name for."""
    try:
        return f"killed by {signal.Signals(signum).name}"
    except ValueError:
        return f"killed by signal {signum}"


def _why(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"{CRASHED} (its worker process was {killed_by(-exitcode)}); skipped"
    return f"{CRASHED} (its worker process exited with status {exitcode}); skipped"


def _worker_main(conn: Connection, current: Any, task: Task, candidates: Sequence[Candidate], parent: int) -> None:
    from vjp_migrate.lifeline import exit_with
    from vjp_migrate.model import FileResult, Status
    from vjp_migrate.signals import default_stops

    exit_with(parent)  # a parent killed outright cannot say that the run is over
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when the run stops
    default_stops()  # not the parent's handlers, inherited through fork
    faulthandler.disable()  # a crash is reported by the parent in one line, not as a C traceback
    if task.phase == 2:
        # It keeps every module it reads, as phase 2 in the parent does, and collections would
        # walk them all; reference counting frees the rest, and the process ends with the run.
        gc.disable()
    kind, _, target = os.environ.get(CRASH_HOOK, "").partition(":")
    target, _, phase = target.partition(":")
    if phase and phase != str(task.phase):
        target = ""
    while True:
        batch = conn.recv()
        if batch is None:
            return
        for index in batch:
            candidate = candidates[index]
            current.value = index
            try:
                if target and candidate.path.name == target:
                    _inject(kind)
                result = process(task, candidate)
            except MemoryError:
                result = FileResult(candidate.path, Status.FAILED, "ran out of memory on this file; skipped")
            if result != FileResult(result.path, Status.OK):
                conn.send(("one", (index, result)))
        current.value = -1
        conn.send(("rest", None))


def _inject(kind: str) -> None:
    if kind == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif kind == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif kind == "exit":
        os._exit(70)
    elif kind == "memory":
        raise MemoryError
    elif kind == "hang":
        while True:
            time.sleep(60)
