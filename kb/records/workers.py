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
from contextlib import contextmanager

PR_SET_PDEATHSIG = 1
WATCH_SECONDS = 0.5


def die_with_parent(parent: int) -> None:
    """Pool initializer: make this worker end when the process `parent` ends. `parent` is the
    command's pid (`os.getpid()` where the pool is made), and the worker must be its child (a fork
    or spawn pool): a forkserver's children outlive a killed command, because the server waits for
    its children and they for it. Ctrl-C is the command's to handle (it reaches the whole process
    group): the worker ignores it and ends when the command does, printing nothing."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # held back by `interrupts_held` while this worker started
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
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


@contextmanager
def interrupts_held():
    """Hold Ctrl-C back in this thread while a pool starts its workers (a spawn pool starts them as
    work is handed out), and so in the workers until `die_with_parent` ignores it: a worker killed
    by Ctrl-C while its interpreter starts breaks the pool, and Python 3.11's pool then hangs on
    shutdown instead of ending. A Ctrl-C meanwhile is delivered when the block ends."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
