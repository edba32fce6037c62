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
