"""`grade --workers N`: worker processes grade pieces of the input in parallel; this process adds their rows to the run.

The input is cut into pieces in input order: JSONL files into byte ranges cut at line starts (so one big file uses
every core), other files (.json) whole. Each piece knows the true line and record number it starts at, so rows
and messages name the lines one process would. N worker processes take pieces as they come free (a slow or late
worker holds no one up), grade each with the same `Grader` as one process, and write its rows as Arrow files in
the layout of the run's staged tables, in the run's staging folder. The parent adds the pieces' rows to the run
in input order as they are ready (the DuckDB writing, the part that stays serial, overlaps the grading), each
piece's trajectories keyed after the earlier pieces': the rows, their order and their keys are one process's, so
duplicates, `skip_invalid`, the empty-input rule and coverage notes are judged by the store and `grade_files` as
for one process.
Of the problems, the one raised is the first in input order: pieces after a failed one are not graded, pieces
before it are awaited.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import multiprocessing
import os
import queue
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from eebench.checkpoints import CheckpointLibrary
from eebench.errors import EebenchError, InputError, Problem
from eebench.evaluator.families import Coded
from eebench.evaluator.grade import Bench, Grader, chunked, empty_input, graded_by, written
from eebench.evaluator.store import Batch, ResultStore, batch_tables
from eebench.pieces import line_spans
from eebench.trajectories import Record, read_raw_records

if TYPE_CHECKING:
    import pyarrow as pa

PIECE_BYTES = 4 << 20   # of JSONL per piece: enough to pay for its Arrow files, small enough to balance the end
POLL_SECONDS = 0.2      # how often the parent looks for workers that died
PARTS_DIR = "parts"     # in the run's staging folder
WRITER_MEMORY_MB = 160  # DuckDB's cap in the parent, which grades nothing (see grade_in_workers)


class Piece(NamedTuple):
    """A share of the input: bytes [start, end) of a JSONL file, or a whole other file (end None)."""

    index: int          # in input order
    file: str           # as given: rows and messages name it so
    start: int
    end: int | None
    line: int           # the true line number at `start`
    record: int         # the true record number (non-blank lines before) at `start`
    last: bool          # the file's last piece (the empty-input rule is checked after it)


class Outcome(NamedTuple):
    """What a worker reports of a piece: its records, the problems skipped, or the one that stopped it."""

    index: int
    records: int
    skipped: list[Problem]
    error: list[Problem | str] | None
    parts: list[tuple[str, str]]   # (table, Arrow file) of the piece's rows


class _Failed(NamedTuple):
    """A worker's unexpected failure (not bad input)."""

    worker: int
    error: BaseException | None   # an EebenchError, re-raised as it is
    text: str                     # the traceback of anything else


class _Progress(NamedTuple):
    records: int
    steps: int


def pieces(files: Sequence[Path], piece_bytes: int | None = None) -> Iterator[Piece]:
    """The pieces of `files`, in input order (JSONL cut every `piece_bytes`, default PIECE_BYTES)."""
    piece_bytes = piece_bytes or PIECE_BYTES
    index = 0
    for path in files:
        if path.suffix.lower() == ".json":
            yield Piece(index, str(path), 0, None, 1, 0, True)
            index += 1
            continue
        cuts = list(line_spans(path, piece_bytes))
        for k, (start, end, line, record) in enumerate(cuts):
            yield Piece(index, str(path), start, end, line, record, k == len(cuts) - 1)
            index += 1


def _piece_records(piece: Piece) -> Iterator[Record]:
    if piece.end is None and piece.start == 0 and piece.line == 1:  # a whole file (.json, or JSONL never cut)
        yield from read_raw_records(piece.file)
    else:
        yield from read_raw_records(piece.file, start=piece.start, end=piece.end, line=piece.line,
                                    index=piece.record)


class _PartWriter:
    """A piece's rows as Arrow files in the layout of the run's staged tables: one per table and run of writes
    with the same columns (a column no family fills stays out, so DuckDB gives it its default, as in one process),
    so rows keep their order."""

    def __init__(self, folder: Path, piece: Piece, schemas: dict[str, pa.Schema]):
        self.folder, self.piece, self.schemas = folder, piece, schemas
        self.parts: list[tuple[str, str]] = []   # (table, Arrow file), in the order made
        self._writers: list[Any] = []
        self._last: dict[str, tuple[tuple[str, ...], Any]] = {}   # table -> its last file's columns and writer
        self._next = 0   # trajectory_key: the position in the piece (the parent adds the keys of earlier pieces)

    def write(self, batch: Batch) -> None:
        import pyarrow as pa

        if not len(batch):
            return
        keys = np.arange(self._next, self._next + len(batch), dtype=np.int64)
        self._next += len(batch)
        for table, data in batch_tables(batch, keys):
            schema = pa.schema([field for field in self.schemas[table] if field.name in data])
            columns = [_arrow(data[field.name], field.type) for field in schema]
            names, writer = self._last.get(table, ((), None))
            if writer is None or names != tuple(schema.names):
                file = str(self.folder / f"piece-{self.piece.index:06d}-{len(self.parts)}.{table}.arrow")
                self.parts.append((table, file))
                writer = pa.ipc.new_file(file, schema)
                self._writers.append(writer)
                self._last[table] = (tuple(schema.names), writer)
            writer.write_batch(pa.RecordBatch.from_arrays(columns, schema=schema))

    def close(self) -> list[tuple[str, str]]:
        for writer in self._writers:
            writer.close()
        return self.parts

    def discard(self) -> None:
        self.close()
        for _, file in self.parts:
            with contextlib.suppress(OSError):
                os.remove(file)


def _arrow(values: np.ndarray | Coded, type: pa.DataType) -> pa.Array:
    """A NumPy column as Arrow of the staged table's type; NaN is NULL (from_pandas), as DuckDB reads NumPy floats
    in one process. A Coded column's words are converted once each, and taken for its rows in C."""
    import pyarrow as pa

    if isinstance(values, Coded):
        return _arrow(values.words, type).take(values.codes)
    if values.dtype == object:
        return pa.array(values, type=type, from_pandas=True)
    return pa.array(values, from_pandas=True).cast(type)


def _grade_piece(grader: Grader, piece: Piece, skip_invalid: bool, folder: Path, schemas: dict[str, pa.Schema],
                 results: Any) -> Outcome:
    """Grade one piece as one process grades its records (the same chunks, the same flushes)."""
    writer = _PartWriter(folder, piece, schemas)
    records = 0
    skipped: list[Problem] = []
    try:
        for chunk, batch, problems in written(graded_by(grader, chunked(_piece_records(piece)), skip_invalid),
                                              writer.write):
            records += len(chunk)
            skipped.extend(problems)
            results.put(_Progress(len(chunk), batch.n_steps))
    except InputError as exc:
        writer.discard()
        return Outcome(piece.index, records, skipped, exc.problems, [])
    return Outcome(piece.index, records, skipped, None, writer.close())


def _work(worker: int, tasks: Any, results: Any, stop: Any, bench: Bench | None, graded_at: dt.datetime,
          skip_invalid: bool, checkpoints: CheckpointLibrary | None, folder: str,
          schemas: dict[str, pa.Schema]) -> None:
    """A worker process: grade the pieces it takes until told there are no more (None), or that pieces after a
    failed one are not wanted (`stop`), or the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle: it stops the workers
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_die_with, args=(parent,), daemon=True).start()
    try:
        grader = Grader(bench, graded_at, checkpoints=checkpoints)
        while True:
            try:
                piece = tasks.get(timeout=1.0)
            except queue.Empty:
                if parent is not None and not parent.is_alive():
                    return
                continue
            if piece is None:
                return
            if piece.index <= stop.value:
                results.put(_grade_piece(grader, piece, skip_invalid, Path(folder), schemas, results))
    except BaseException as exc:  # noqa: BLE001  (reported to the parent, which decides)
        known = exc if isinstance(exc, EebenchError) else None
        results.put(_Failed(worker, known, "".join(traceback.format_exception(exc))))


def _die_with(parent: Any) -> None:
    """Exit the moment the parent is gone, even in the middle of a piece: a parent killed with SIGKILL sends no
    word, and its workers graded on for the rest of the input (the queue is only asked between pieces)."""
    parent.join()   # (waits on the parent's sentinel, which closes when it dies)
    os._exit(1)


def worth_workers(files: Sequence[Path]) -> bool:
    """Whether the input makes more than one piece: smaller inputs are graded by one process (the workers' start,
    about half a second, would cost more than they save)."""
    return sum(Path(f).stat().st_size for f in files) > PIECE_BYTES


def most_pieces(files: Sequence[Path]) -> int:
    """An upper bound of the pieces of `files` (see `pieces`), from their sizes alone: workers beyond it would
    have nothing to grade."""
    return sum(1 if path.suffix.lower() == ".json" else path.stat().st_size // PIECE_BYTES + 1 for path in files)


def grade_in_workers(files: Sequence[Path], bench: Bench | None, graded_at: dt.datetime, skip_invalid: bool,
                     checkpoints: CheckpointLibrary | None, store: ResultStore, workers: int,
                     progress: Callable[[int, int], None] | None) -> list[Problem]:
    """Grade `files` in `workers` processes into the run of `store` (its rows staged, not committed); returns the
    problems skipped, in input order. Raises the first bad record's InputError in input order, as one process."""
    # forkserver, not fork (this process may hold DuckDB's and numba's threads): a fresh process that imports
    # this module once, then forks each worker from itself, ready to grade
    workers = min(workers, most_pieces(files))   # (`--workers 1000` on a small input starts no idle processes)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    folder = store.folder / PARTS_DIR
    folder.mkdir()
    tasks, results = context.Queue(), context.Queue()
    stop = context.Value("q", 1 << 62, lock=False)   # pieces after this index are not wanted (one failed)
    schemas = store.arrow_schemas()
    # this process only writes: DuckDB may have the memory a grading process keeps for numba and its batches (its
    # checkpoints of the wide trajectories table ran out of the 24 MB cap now and then, which DuckDB cannot undo)
    store.allow_memory(WRITER_MEMORY_MB)
    processes = [context.Process(target=_work, name=f"eebench grade worker {k + 1}", daemon=True,
                                 args=(k + 1, tasks, results, stop, bench, graded_at, skip_invalid, checkpoints,
                                       str(folder), schemas)) for k in range(workers)]
    starter = threading.Thread(target=lambda: [process.start() for process in processes])
    try:
        starter.start()  # (the first start waits for the forkserver's imports) while the pieces are cut
        planned = []
        for piece in pieces(files):  # cut while the workers start
            tasks.put(piece)
            planned.append(piece)
        for _ in processes:
            tasks.put(None)
        starter.join()
        outcomes: dict[int, Outcome] = {}
        added = 0   # pieces whose rows are in the run: those before it, in input order
        while not all(k in outcomes for k in range(min(len(planned), stop.value + 1))):
            try:
                message = results.get(timeout=POLL_SECONDS)
            except queue.Empty:
                _check_alive(processes)
                continue
            if isinstance(message, _Progress):
                if progress:
                    progress(message.records, message.steps)
            elif isinstance(message, _Failed):
                if message.error is not None:
                    raise message.error
                raise RuntimeError(f"grading worker {message.worker} failed:\n{message.text}")
            else:
                outcomes[message.index] = message
                if message.error is not None:
                    stop.value = min(stop.value, message.index)
                while added in outcomes and added < stop.value:
                    _add_parts(store, outcomes[added].parts)
                    _remove_parts(outcomes[added])
                    added += 1
                if message.index >= stop.value:   # not wanted
                    _remove_parts(message)
        return _in_input_order(planned, outcomes)
    finally:
        stop.value = -1
        if starter.ident is not None:
            starter.join()
        for process in processes:
            if process.is_alive():
                process.terminate()
            if process.pid is not None:  # (started)
                process.join()
        for channel in (tasks, results):
            channel.cancel_join_thread()  # what a stopped worker left unread is not waited for
            channel.close()


def _add_parts(store: ResultStore, parts: list[tuple[str, str]]) -> None:
    """Add a piece's rows to the run, its trajectories keyed after those of the run so far."""
    import pyarrow as pa
    import pyarrow.compute as pc

    tables = []
    for table, file in parts:
        with pa.memory_map(file) as source:   # (the rows keep the mapping: closed, it is not unmapped)
            tables.append((table, pa.ipc.open_file(source).read_all()))
    first = store.take_keys(sum(len(rows) for table, rows in tables if table == "trajectories"))
    for table, rows in tables:
        at = rows.schema.get_field_index("trajectory_key")
        store.add_rows(table, rows.set_column(at, "trajectory_key", pc.add(rows["trajectory_key"], first)))


def _remove_parts(outcome: Outcome) -> None:
    for _, file in outcome.parts:
        with contextlib.suppress(FileNotFoundError):
            os.remove(file)


def _in_input_order(planned: list[Piece], outcomes: dict[int, Outcome]) -> list[Problem]:
    """The pieces' problems as one process meets them: the skipped ones in order, and the first that stops the run
    (a bad record, or an empty file after its last piece) raised."""
    skipped: list[Problem] = []
    records = 0
    for piece in planned:
        outcome = outcomes[piece.index]
        skipped.extend(outcome.skipped)
        if outcome.error is not None:
            raise InputError(outcome.error)
        records += outcome.records
        if piece.last:
            if not records:
                raise empty_input(piece.file)
            records = 0
    return skipped


def _check_alive(processes: list[BaseProcess]) -> None:
    """A worker that died (killed, out of memory) stops the run, named; so do workers all gone with pieces left."""
    for k, process in enumerate(processes):
        code = process.exitcode
        if code is not None and code != 0:
            how = f"killed by {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
            raise EebenchError(f"grading worker {k + 1} of {len(processes)} (pid {process.pid}) died ({how}); "
                               "nothing was written")
    if all(process.exitcode is not None for process in processes):
        raise EebenchError("the grading workers ended before every piece of the input was graded; nothing was "
                           "written")
