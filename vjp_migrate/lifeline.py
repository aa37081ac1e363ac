"""Stage 11: a worker process ends when the process that started it is gone (verify's workers too).

A parent stopped by SIGKILL (or by a signal it does not handle) cannot tell its workers: one
blocked on its job pipe would wait forever (a forked worker and its siblings hold the pipe's
other end too, so no end of file comes), and one running a job would run it to the end, however
long. So each worker watches its parent from a daemon thread: once it has another parent (an
orphan is handed to init or to a subreaper), it exits. Polling ``getppid`` costs nothing and
works wherever there are process ids; ``PR_SET_PDEATHSIG`` would be Linux-only, and would fire
when the *thread* that started the worker ends (verify starts its workers from threads).
"""

from __future__ import annotations

import os
import threading
import time

INTERVAL = 0.2  # seconds between looks at the parent
ORPHANED = 3  # the exit status of a worker whose parent died (nobody is left to read it)


def exit_with(parent: int) -> None:
    """End this process as soon as ``parent`` is no longer its parent (also when it already is not)."""
    if os.getppid() != parent:
        os._exit(ORPHANED)
    threading.Thread(target=_watch, args=(parent,), name="vjp-migrate-lifeline", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(INTERVAL)
    os._exit(ORPHANED)
