"""Worker processes that die with the command that started them.

`kb check` and `kb build` hand work to process pools. When the command is killed (SIGTERM,
SIGKILL, the OOM killer, an IDE's stop button), a worker whose parent is gone must not live on: it
would keep waiting on a pipe nobody reads, forever. Every pool starts its workers with
`die_with_parent` as the initializer: the kernel kills the worker when its parent dies (Linux
`PR_SET_PDEATHSIG`), and a watching thread exits it where that is not available.
"""

from __future__ import annotations

import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1
WATCH_SECONDS = 0.5


def die_with_parent(parent: int | None = None) -> None:
    """Pool initializer: make this worker end when the process `parent` (the command that forked
    it) ends; None: whichever process started it (a forkserver, which itself ends with the command)."""
    if parent is None:
        parent = os.getppid()
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError, TypeError):
        pass  # not Linux: the thread below does it
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    threading.Thread(target=_watch, args=(parent,), name="kb-watch-parent", daemon=True).start()


def _watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(WATCH_SECONDS)
    os._exit(1)
