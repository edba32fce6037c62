"""A signal that stops a command interrupts the DuckDB statement it is running.

DuckDB runs Python's signal handlers only when it checks for them, now and then, and misses some (a `query` stopped
by Ctrl-C or SIGTERM ran on to its end, or to its --timeout, in about one try in three here). The interpreter's
own C-level handler never misses: it writes each signal's number to the wakeup file descriptor
(`signal.set_wakeup_fd`), and a thread reading it interrupts every connection registered as running a statement.
The Python-level handler still runs when the statement returns, and ends the command as it always did.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Iterator
from typing import Any

STOPPING = frozenset({signal.SIGINT, signal.SIGTERM})

_running: set[Any] = set()   # connections (anything with `.interrupt()`) running a statement now
_lock = threading.Lock()


@contextlib.contextmanager
def interruptible(con: Any) -> Iterator[None]:
    """While the block runs, a stopping signal interrupts `con` (a DuckDB connection)."""
    with _lock:
        _running.add(con)
    try:
        yield
    finally:
        with _lock:
            _running.discard(con)


@contextlib.contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """While the block runs, in the main thread: a stopping signal interrupts the registered connections. Elsewhere
    (a thread of the caller's), nothing changes."""
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except ValueError:   # not the main thread
        reader.close()
        writer.close()
        yield
        return

    def watch() -> None:
        while data := reader.recv(64):   # (b"" once the writer is closed: the block is over)
            if STOPPING.intersection(data):
                with _lock:
                    for con in list(_running):
                        with contextlib.suppress(Exception):   # (a connection closing meanwhile)
                            con.interrupt()

    watcher = threading.Thread(target=watch, name="eebench-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        signal.set_wakeup_fd(previous)
        writer.close()
        watcher.join(timeout=1)
        reader.close()


class CommitGate:
    """Stops that come once a change is committed: noted, not acted on.

    While the gate's block runs (main thread), SIGINT and SIGTERM act as before until `close()`, called just before
    the statement or rename that commits; from then on they are noted in `late`. A stop that came during a commit
    would otherwise end the command as failed ("Aborted!") with its results written all the same: DuckDB finishes
    a COMMIT it has begun, and a rename is done or not. Elsewhere than the main thread nothing changes.
    """

    def __init__(self) -> None:
        self.closed = False
        self.late: list[int] = []
        self._previous: dict[int, Any] = {}

    def close(self) -> None:
        self.closed = True

    def reopen(self) -> None:
        """The commit raised, or another run's file took the place: stops act again from now on, as the work that
        follows (the commit done again, the rows added to that file) is still to be done. A stop noted meanwhile
        stays noted, not acted on: a COMMIT that raised may have held (DuckDB can fail in the checkpoint after
        it), and ending the run then would say it failed with its rows written."""
        self.closed = False

    def late_names(self) -> list[str]:
        """The signals that came once closed, by name (SIGINT), each once."""
        return [signal.Signals(signum).name for signum in dict.fromkeys(self.late)]

    def __enter__(self) -> CommitGate:
        if threading.current_thread() is threading.main_thread() and \
                all(signal.getsignal(signum) is not None for signum in STOPPING):  # (None: set outside Python)
            self._previous = {signum: signal.signal(signum, self._stop) for signum in STOPPING}
        return self

    def __exit__(self, *exc: Any) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def _stop(self, signum: int, frame: Any) -> None:
        if self.closed:
            self.late.append(signum)
            return
        previous = self._previous.get(signum)
        if callable(previous):
            previous(signum, frame)
        elif previous == signal.SIG_DFL:   # as the process would have ended without us
            signal.signal(signum, signal.SIG_DFL)
            signal.raise_signal(signum)


def late_note(names: list[str]) -> str:
    """What a command's summary adds when stops came once its commit had begun."""
    return f"; {' and '.join(names)} came during the commit, too late to stop it: these results are written" \
        if names else ""
