"""Verify stage 6 (parent side): worker processes, each handed one job at a time, each job with
its own timeout.

A worker reads the request's header and then one job per line on its stdin, and answers each
job with one line on its stdout (``worker.py``). The parent hands a job to whichever worker is
free; a job that outlives its timeout has its worker killed, one that takes its worker down is
reported with how and where, and the jobs after it go on in a new worker. Its progress markers
(``model.progress``) on stderr say where each job stopped.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from collections import deque
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import IO, Any

from vjp_migrate.verify.model import PROGRESS, where_stopped
from vjp_migrate.workers import killed_by


@dataclass(frozen=True)
class Answer:
    """A worker's answer to one job: its report (``report``), or why there is none: ``error``
    for this job alone, ``fatal`` for every job of the request."""

    report: dict[str, Any] | None = None
    error: str | None = None
    fatal: bool = False


class _Stderr:
    """Drains a worker's stderr (user code prints there too), keeping the current job's progress
    markers and the last few other lines."""

    def __init__(self, stream: IO[str]) -> None:
        self.markers: dict[str, str] = {}
        self.said: deque[str] = deque(maxlen=20)
        self._thread = threading.Thread(target=self._drain, args=(stream,), daemon=True)
        self._thread.start()

    def _drain(self, stream: IO[str]) -> None:
        for line in stream:
            read_marker(self.markers, line.rstrip("\n"))
            if not line.startswith(PROGRESS) and line.strip():
                self.said.append(line.strip())

    def join(self) -> None:
        self._thread.join(timeout=5)


def read_marker(markers: dict[str, str], line: str) -> None:
    """Update ``markers`` with one stderr line: a "job" marker starts a new set."""
    kind, _, what = line.partition(PROGRESS)[2].partition("\t")
    if line.startswith(PROGRESS) and what:
        if kind == "job":
            markers.clear()
        markers[kind] = what


class Worker:
    """One worker process, asked one job at a time."""

    def __init__(self, command: list[str], env: dict[str, str], header: dict[str, Any]) -> None:
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            encoding="utf-8",
            errors="replace",
        )
        assert self._process.stdin and self._process.stdout and self._process.stderr
        self._lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, args=(self._process.stdout,), daemon=True).start()
        self._stderr = _Stderr(self._process.stderr)
        self._send(header)

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._lines.put(line)
        self._lines.put(None)

    def _send(self, data: dict[str, Any]) -> None:
        assert self._process.stdin
        try:
            self._process.stdin.write(json.dumps(data) + "\n")
            self._process.stdin.flush()
        except OSError:  # it died: the answer's end of file says how
            pass

    def ask(self, job: dict[str, Any], timeout: float) -> Answer:
        """The answer to ``job``; after a timeout or a crash the worker is gone (``alive``)."""
        self._send({"job": job})
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            self._stderr.join()  # every marker it wrote before it was killed
            where = where_stopped(self._stderr.markers)
            return Answer(error=f"timed out after {timeout:g}s{where}; raise --timeout if it is only slow")
        if line is None:
            return Answer(error=self._crash())
        try:
            answer = json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            return Answer(error=self._crash())
        if "fatal" in answer:
            return Answer(error=str(answer["fatal"]), fatal=True)
        if "error" in answer:
            return Answer(error=str(answer["error"]))
        return Answer(report=answer["report"])

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def kill(self) -> None:
        self._process.kill()
        self._process.wait()

    def close(self) -> None:
        """Let the worker finish (no more jobs), or kill it when it does not."""
        try:
            assert self._process.stdin
            self._process.stdin.close()
        except OSError:
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.kill()
        self._stderr.join()

    def _crash(self) -> str:
        """One line: how the worker died, and where (or its last words when it died starting)."""
        returncode = self._process.wait()
        self._stderr.join()
        how = killed_by(-returncode) if returncode < 0 else f"exit {returncode}"
        where = where_stopped(self._stderr.markers)
        if not where and self._stderr.said:
            where = f": {self._stderr.said[-1][:300]}"
        if returncode == 0:  # user code that called os._exit(0), or a worker of another version
            return f"the worker ended without answering{where}"
        return f"the worker crashed ({how}){where}"


Start = Callable[[ExitStack], Worker]  # a new worker, its resources held by the stack


@dataclass(frozen=True)
class Job:
    """One job of a request and its timeout, in seconds."""

    data: dict[str, Any]
    timeout: float


def run_pool(jobs: list[Job], start: Start, workers: int) -> list[Answer]:
    """The answer to every job, in order, from up to ``workers`` worker processes."""
    pending = deque(range(len(jobs)))
    answers: dict[int, Answer] = {}
    lock = threading.Lock()
    live: set[Worker] = set()
    stopping = threading.Event()

    def take() -> int | None:
        with lock:
            return pending.popleft() if pending and not stopping.is_set() else None

    def drive() -> None:
        worker: Worker | None = None
        with ExitStack() as stack:
            while (index := take()) is not None:
                if worker is None or not worker.alive:
                    started = _started(start, stack)
                    if isinstance(started, str):
                        answers[index] = Answer(error=f"could not start the worker: {started}")
                        continue
                    with lock:
                        live.discard(worker)
                        live.add(started)
                    worker = started
                answers[index] = answer = worker.ask(jobs[index].data, jobs[index].timeout)
                if answer.fatal:  # the same for every job: no worker can do them
                    with lock:
                        answers.update((i, answer) for i in pending)
                        pending.clear()
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=drive, daemon=True) for _ in range(max(1, min(workers, len(jobs))))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(timeout=0.5)  # a plain join would not let Ctrl-C through
    except BaseException:
        stopping.set()
        with lock:
            for worker in live:
                worker.kill()
        raise
    return [answers[i] for i in range(len(jobs))]


def _started(start: Start, stack: ExitStack) -> Worker | str:
    try:
        return start(stack)
    except OSError as error:
        return str(error)
