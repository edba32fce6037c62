"""Grade trajectory files against a folder of instances into DuckDB: stream, replay, write in bulk, one transaction.

Records are read in chunks cut by size (so memory follows steps, not records; once COMPACT_FROM_STEPS steps that
hold only an action are graded, such lines are read without a dict per step: bare_steps.py); each chunk is
graded by every metric family of its trajectories' world kind and the results are written in order (the step
columns of a chunk of more than WINDOW_STEPS graded steps, one long trajectory, a window at a time:
families.StepWindows). The first bad record aborts the run and nothing is written, unless `skip_invalid`, which
grades the rest and reports what was skipped and why.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from eebench import __version__
from eebench.checkpoints import CheckpointLibrary
from eebench.documents import read_stdin_once, refuse_given_twice, special_file
from eebench.errors import InputError, Problem, near_path, quote
from eebench.evaluator.coverage import LOGGED, LoggedInstance
from eebench.evaluator.families import (MetricFamily, StepColumns, StepWindows, Trajectory, families_for, joined_steps,
                                        metric_version)
from eebench.evaluator.store import TRAJECTORY_COLUMNS, Batch, Replaced, ResultStore, quick_switches
from eebench.instances import Bench, InstanceLibrary, check_played_in, check_trajectory_env
from eebench.interrupts import CommitGate, late_note
from eebench.long_lines import StepList
from eebench.pieces import resolve_workers
from eebench.trajectories import (AGENT_LABELS, EMPTY_EXPECTED, USAGE_FIELDS, Record, check_trajectory,
                                  parse_record, read_raw_records, usage_totals)

CHUNK_RECORDS = 4096     # at most this many records graded together ...
CHUNK_BYTES = 1 << 20    # ... or of this much JSON (about 50k steps), so memory follows steps, not records
FLUSH_STEPS = 50_000     # steps gathered before a write to DuckDB
NOTHING_GRADED = "nothing was graded: every trajectory was skipped (listed above); nothing was written"
COMPACT_FROM_STEPS = 50_000   # action-only steps after which lines are read by bare_steps (compiled: numba)


@dataclass
class GradeReport:
    trajectories: int = 0
    steps: int = 0
    skipped: list[Problem] = field(default_factory=list)
    seconds: float = 0.0
    replaced: Replaced = Replaced()   # earlier grades of the same trajectory ids, now replaced
    late_stops: list[str] = field(default_factory=list)   # signals that came once the commit had begun

    def notes(self) -> str:
        """What the summary line adds after the counts: replaced grades, bundles they lose, a late stop."""
        replaced = self.replaced
        text = f"; replaced the earlier grades of {replaced.trajectories} trajectory ids" \
            if replaced.trajectories else ""
        if replaced.unbundled:
            text += (f" ({replaced.unbundled} of them graded against bundle {', '.join(replaced.bundles)}, now "
                     "against a plain folder: their bench_name, bench_version and bench_digest are NULL)")
        text += f"; skipped {len(self.skipped)}" if self.skipped else ""
        return text + late_note(self.late_stops)
    coverage_notes: list[str] = field(default_factory=list)   # sets that matched nothing, checkpoints never hit


class Grader:
    """Grades records of one run; holds the instance library and each family's per-instance tables (LRU-cached)."""

    def __init__(self, bench: Bench | None, graded_at: dt.datetime, cache_size: int = 256,
                 checkpoints: CheckpointLibrary | None = None):
        self.bench = bench
        self.library = None if bench is None else InstanceLibrary(bench.root, cache_size=cache_size, label=bench.label)
        self.graded_at = graded_at
        self.checkpoints = checkpoints
        self._families: dict[str, tuple[MetricFamily, ...]] = {}
        # per instance graded (env, type, id, sha256: a logged id may equal an instance's): what its trajectories
        # share, looked up once per trajectory; least recently used first, at most `cache_size` tables in all
        self._graded_in: OrderedDict[tuple[str, type, str, str | None], _GradedIn] = OrderedDict()
        self._tables_held = 0
        self._cache_size = cache_size
        self.action_only_steps = 0   # graded steps of records whose steps hold only an action (up to COMPACT_...)

    def families(self, env: str) -> tuple[MetricFamily, ...]:
        """The families grading `env`, as this run uses them (configured with its checkpoint sets)."""
        found = self._families.get(env)
        if found is None:
            found = self._families[env] = tuple(
                configure(self.checkpoints) if self.checkpoints is not None
                and (configure := getattr(family, "configure", None)) else family for family in families_for(env))
        return found

    def graded_in(self, env: str, instance: Any, sha: str | None) -> _GradedIn | None:
        """What every trajectory of `instance` shares: its families, their tables, its values of BASE_COLUMNS; None
        when no family grades `env`."""
        key = (env, type(instance), instance.id, sha)
        known = self._graded_in.get(key)
        if known is not None:
            self._graded_in.move_to_end(key)
            return known
        families = self.families(env)
        if not families:
            return None
        known = self._graded_in[key] = _GradedIn(families, tuple(family.tables(instance) for family in families),
                                                 self._base_row(env, instance, sha, families))
        self._tables_held += len(families)
        while self._tables_held > self._cache_size and len(self._graded_in) > 1:
            self._tables_held -= len(self._graded_in.popitem(last=False)[1].families)
        return known

    def grade_chunk(self, records: Sequence[Record], skip_invalid: bool) -> tuple[Batch, list[Problem]]:
        """Grade a chunk; a bad record raises InputError, or is listed as skipped with `skip_invalid`."""
        rows: list[tuple[Any, ...]] = []    # per graded record: its values of RECORD_COLUMNS
        bases: list[tuple[Any, ...]] = []   # ... and of BASE_COLUMNS
        graded: list[tuple[tuple[MetricFamily, ...], list[Any]]] = []   # per row: its families and their replays
        skipped: list[Problem] = []
        for record, doc in zip(records, self._read_bare(records)):
            try:
                parsed = parse_record(record, compact=True) if doc is None else record._replace(value=doc)
                row, base, families, replays = self._grade_record(parsed)
            except InputError as exc:
                if not skip_invalid:
                    raise
                skipped.extend(p if isinstance(p, Problem) else Problem(record.file, record.line, None, str(p))
                               for p in exc.problems)
                continue
            rows.append(row)
            bases.append(base)
            graded.append((families, replays))
            if self.action_only_steps < COMPACT_FROM_STEPS:
                self.action_only_steps += _action_only(parsed.value["steps"])
        if not rows:  # every record skipped: nothing to replay
            return Batch(), skipped
        # the trajectories' columns, made as columns (a dict per row, filled family by family, took a tenth of the
        # grading thread): the record's, the instance's, then each family's
        trajectories: dict[str, list[Any]] = {**dict(zip(RECORD_COLUMNS, map(list, zip(*rows)))),
                                              **dict(zip(BASE_COLUMNS, map(list, zip(*bases))))}
        batch = Batch(len(rows), trajectories)
        # one group per run of records of one world kind, usually the whole chunk: rows keep the input's order
        groups: list[tuple[tuple[MetricFamily, ...], list[int]]] = []
        for position, (families, _) in enumerate(graded):
            if groups and groups[-1][0] == families:
                groups[-1][1].append(position)
            else:
                groups.append((families, [position]))
        for families, positions in groups:
            where = np.asarray(positions, dtype=np.int32)
            steps: list[StepColumns] = []
            episodes: dict[str, np.ndarray] = {}
            checkpoints: dict[str, np.ndarray] = {}
            regrouped = len(positions) != len(rows)   # positions in the group -> positions in the chunk
            for k, family in enumerate(families):
                columns = family.columns([graded[p][1][k] for p in positions])
                for name, values in columns.trajectories.items():   # a later family's value wins, as it comes later
                    if not regrouped:
                        trajectories[name] = values if type(values) is list else list(values)   # (a plug-in's array)
                        continue
                    column = trajectories.setdefault(name, [None] * len(rows))
                    for position, value in zip(positions, values):
                        column[position] = value
                if columns.steps:
                    steps.append(columns.steps)
                episodes.update(columns.episodes or {})
                checkpoints.update(columns.checkpoints or {})

            def in_chunk(part: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
                return {**part, "trajectory": where[part["trajectory"]]}
            if steps:
                joined = joined_steps(steps)
                batch.steps.append(joined.map(in_chunk) if regrouped and isinstance(joined, StepWindows)
                                   else in_chunk(joined) if regrouped else joined)  # type: ignore[arg-type]
            for part, add in ((episodes, batch.episodes), (checkpoints, batch.checkpoints)):
                if part:
                    add.append(in_chunk(part) if regrouped else part)
        return batch, skipped

    def _read_bare(self, records: Sequence[Record]) -> list[dict[str, Any] | None]:
        """The documents of the lines whose steps hold only an action, read without a dict per step once this
        grader has graded COMPACT_FROM_STEPS such steps (evaluator/bare_steps.py; a run of logged text-game steps
        never pays for its import); None for every other record."""
        docs: list[dict[str, Any] | None] = [None] * len(records)
        if self.action_only_steps < COMPACT_FROM_STEPS:
            return docs
        from eebench.evaluator.bare_steps import loads_bare

        lines = [k for k, record in enumerate(records) if type(record.value) is bytes]
        for k, doc in zip(lines, loads_bare([records[k].value for k in lines])):
            docs[k] = doc
        return docs

    def _grade_record(self, record: Record
                      ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[MetricFamily, ...], list[Any]]:
        doc = check_trajectory(record)
        file, line = record.file, record.line
        instance_id = doc["instance"]
        if doc.get("env") == LOGGED:  # no world: no bench needed, graded by the families of `logged`
            return self._row(doc, file, line, LOGGED, LoggedInstance(instance_id), None)
        if self.library is None:
            raise InputError(Problem(file, line, "instance", f"grading instance {instance_id!r} needs --bench (only "
                                                             "env logged trajectories grade without one)"))
        try:
            loaded = self.library.get(instance_id)
        except InputError as exc:
            if self.library.path_for(instance_id) is None:  # unknown id: locate the reference in the log
                raise InputError(Problem(file, line, "instance", f"{exc.problems[0]}; give --bench the instances it "
                                                                 "was played in (or `eebench convert --instance ID`)")
                                 ) from None
            raise
        env = check_trajectory_env(doc.get("env"), loaded, file, line).env  # the instance's kind decides
        instance, sha = loaded.instance, loaded.sha256
        assert self.bench is not None
        expected = (self.bench.instances or {}).get(instance_id, sha)
        if sha != expected:  # the file read now is not the one the bundle's manifest promised (changed since verify)
            raise InputError.at(loaded.file, f"instance {instance_id!r} is {sha[:12]}..., but {self.bench.where} "
                                             f"promises {expected[:12]}...; run `eebench verify` on the bundle")
        check_played_in(doc.get("instance_sha256"), expected, instance_id, self.bench.where, file, line,
                        "grade against the same instance (--bench the version it was played in)")
        return self._row(doc, file, line, env, instance, sha)

    def _base_row(self, env: str, instance: Any, sha: str | None, families: tuple[MetricFamily, ...]
                  ) -> tuple[Any, ...]:
        """The values of BASE_COLUMNS: what every trajectory of one instance shares."""
        bench = self.bench
        meta = instance.meta or {}
        values = {
            "instance_sha256": sha, "env": env, "metric_version": metric_version(families), "graded_at": self.graded_at,
            "preset": meta.get("preset") if isinstance(meta.get("preset"), str) else None,
            "bench_name": None if bench is None else bench.name,
            "bench_version": None if bench is None else bench.version,
            "bench_digest": None if bench is None else bench.digest, "eebench_version": __version__}
        return tuple(values[name] for name in BASE_COLUMNS)

    def _row(self, doc: dict[str, Any], file: str, line: int | None, env: str, instance: Any, sha: str | None
             ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[MetricFamily, ...], list[Any]]:
        """The trajectory's values of RECORD_COLUMNS and BASE_COLUMNS, its families, and their replays."""
        graded_in = self.graded_in(env, instance, sha)
        if graded_in is None:
            raise InputError(Problem(file, line, "env", f"no metric family grades {env!r} trajectories yet"))
        families = graded_in.families
        earlier: dict[str, Any] = {}
        trajectory = Trajectory(doc, file, line, earlier)
        replays = []
        for family, tables in zip(families, graded_in.tables):  # in registry order, each seeing the replays before it
            replays.append(replay := family.replay(tables, instance, trajectory))
            earlier[family.name] = replay
        agent = doc.get("agent") or {}
        row = (doc["id"], doc["instance"], *map(agent.get, AGENT_LABELS),
               *usage_totals(doc["steps"], file, line).values(), file, line)
        return row, graded_in.base, families, replays


class _GradedIn(NamedTuple):
    """What every trajectory graded in one instance shares (Grader.graded_in)."""

    families: tuple[MetricFamily, ...]
    tables: tuple[Any, ...]   # each family's
    base: tuple[Any, ...]     # the values of BASE_COLUMNS


# The trajectories' columns that a record gives, in order, and those its instance and run give (the families fill
# the rest; a column no one fills is NULL)
RECORD_COLUMNS = ("trajectory_id", "instance_id", *(("agent_name" if k == "name" else k) for k in AGENT_LABELS),
                  *USAGE_FIELDS, "source_file", "source_line")
BASE_COLUMNS = ("instance_sha256", "env", "metric_version", "graded_at", "preset", "bench_name", "bench_version",
                "bench_digest", "eebench_version")
assert {*RECORD_COLUMNS, *BASE_COLUMNS} <= {c.name for c in TRAJECTORY_COLUMNS}, "columns of the trajectories table"


def _chunks(files: Sequence[Path]) -> Iterator[list[Record]]:
    """Records of `files` in chunks (see chunked); an empty file is refused where it is reached."""
    return chunked(_records(files))


def _records(files: Sequence[Path]) -> Iterator[Record]:
    for path in files:
        records = 0
        for record in read_raw_records(path):
            records += 1
            yield record
        if not records:  # the rule `convert` follows too: an empty input is a mistake, even with skip_invalid
            raise empty_input(path)


def empty_input(path: Path | str) -> InputError:
    return InputError.at(str(path), f"is empty; expected {EMPTY_EXPECTED}")


def _action_only(steps: Any) -> int:
    """The steps of a parsed record when each holds only its action (a long line's StepList: when it kept none
    whole), else 0."""
    if type(steps) is StepList:
        return 0 if steps.others else len(steps)
    return len(steps) if {1}.issuperset(map(len, steps)) else 0   # (one C-level pass)


def chunked(records: Iterator[Record]) -> Iterator[list[Record]]:
    """Records in chunks of at most CHUNK_RECORDS records or CHUNK_BYTES bytes of JSON (a longer record alone).

    When reading fails (a line too long, an empty file), the records read before it are yielded first: the first
    bad record in input order is the one reported, whoever finds it (a worker's piece ends anywhere)."""
    chunk: list[Record] = []
    size = 0
    try:
        for record in records:
            length = len(record.value) if isinstance(record.value, (bytes, bytearray)) else 0
            if chunk and size + length > CHUNK_BYTES:
                yield chunk
                chunk, size = [], 0
            chunk.append(record)
            size += length
            if len(chunk) == CHUNK_RECORDS:
                yield chunk
                chunk, size = [], 0
    except InputError:
        if chunk:
            yield chunk
        raise
    if chunk:
        yield chunk


def graded_by(grader: Grader, chunks: Iterator[list[Record]], skip_invalid: bool
              ) -> Iterator[tuple[list[Record], Batch, list[Problem]]]:
    """Each chunk with its batch and the problems skipped, graded in order by `grader` (one process's grader grades
    the whole input; a worker's, its pieces one after another)."""
    with _young_collections():
        for chunk in chunks:
            batch, skipped = grader.grade_chunk(chunk, skip_invalid)
            gc.collect(1)
            yield chunk, batch, skipped


def written(graded: Iterator[tuple[list[Record], Batch, list[Problem]]], write: Callable[[Batch], None]
            ) -> Iterator[tuple[list[Record], Batch, list[Problem]]]:
    """The graded chunks, passed on as they come, their batches given to `write` every FLUSH_STEPS steps and at
    the end (one process and each worker flush alike)."""
    pending = Batch()
    for graded_chunk in graded:
        pending.extend(graded_chunk[1])
        if pending.n_steps >= FLUSH_STEPS:
            write(pending)
            pending = Batch()
        yield graded_chunk
    write(pending)


@contextlib.contextmanager
def _young_collections() -> Iterator[None]:
    """Python's automatic collections off while chunks are graded, the young generations collected after each.

    A chunk's tens of thousands of step dicts live until it is graded, so the automatic collector promotes them
    and, every few chunks, scans every object of the process (numba's and DuckDB's modules included): that cost a
    grade a fifth of its time. The step dicts hold no cycles (reference counting frees them with the chunk), so
    collecting the young generations between chunks is enough; the collector's state is restored after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def grade_files(files: Sequence[Path], bench: Bench | None, db: Path, *, skip_invalid: bool = False,
                progress: Callable[[int, int], None] | None = None,
                checkpoints: CheckpointLibrary | None = None, workers: int = 1,
                source_names: Mapping[str, str] | None = None) -> GradeReport:
    """Grade every trajectory of `files` into the DuckDB file `db`, in one transaction; `progress` is told the
    records read and the steps graded of each chunk. The file `-` is standard input.

    `workers`: processes that grade pieces of the input in parallel (0: one per core; see evaluator/workers.py);
    the rows, the problems and the messages are those of one process. Standard input is read by this process.

    `bench` may be None when every trajectory is `env: logged`. `checkpoints`: the sets coverage applies (default:
    the shipped ones); a given set that matches no graded trajectory, and every checkpoint no trajectory hit, are
    listed in the report's `coverage_notes`. `source_names`: the name rows give a file (`source_file`) in place of
    its path, for a temporary file of the caller's.
    """
    read_stdin_once(files)   # (the second `-` would read a closed stream)
    for path in files:
        if _streamed(path):
            continue
        if not Path(path).is_file():  # a folder or a device (/dev/zero) is not read
            raise InputError.at(str(path), "is not a file" if Path(path).exists() else f"no such file{near_path(path)}")
    refuse_given_twice(p for p in files if not _streamed(p))
    started = time.perf_counter()
    graded_at = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    grader = Grader(bench, graded_at, checkpoints=checkpoints)  # a bad bench folder fails before the db is touched
    report = GradeReport()
    workers = resolve_workers(workers)
    if workers > 1 and (any(map(_streamed, files)) or not _worth_workers(files)):
        workers = 1  # standard input or a pipe, or too little input to pay for the workers' start: this process
    with quick_switches():
        held_results = Path(db).exists()   # then this run's rows join others: the notes' query must pick its own
        store = ResultStore(db)
        try:
            if workers > 1:
                from eebench.evaluator.workers import grade_in_workers

                report.skipped.extend(grade_in_workers(files, bench, graded_at, skip_invalid, checkpoints, store,
                                                       workers, progress))
            else:
                report.skipped.extend(_grade_here(grader, files, store, skip_invalid, progress))
            _check_unique(store, report, skip_invalid)
            report.trajectories, report.steps = store.staged_trajectories(), store.staged_steps()
            if not report.trajectories:  # one rule with convert: a run that graded nothing is a mistake
                raise InputError([*report.skipped, NOTHING_GRADED])
            report.coverage_notes = _coverage_notes(store, checkpoints, graded_at if held_results else None)
            store.name_sources(source_names or {})
            with CommitGate() as gate:
                report.replaced = store.commit(gate)
            report.late_stops = gate.late_names()
        except BaseException:
            store.abort()
            raise
    report.seconds = time.perf_counter() - started
    return report


def _streamed(path: Path | str) -> bool:
    """Standard input (`-`) or a pipe (`<(zcat runs.jsonl.gz)`, a named pipe): read once, in order, by this
    process."""
    return str(path) == "-" or special_file(Path(path)) == "a pipe"


def _grade_here(grader: Grader, files: Sequence[Path], store: ResultStore, skip_invalid: bool,
                progress: Callable[[int, int], None] | None) -> list[Problem]:
    """Grade `files` in this process into `store` (whose writer lanes insert a batch while the next is graded);
    the problems skipped."""
    skipped: list[Problem] = []
    for chunk, batch, problems in written(graded_by(grader, _chunks(files), skip_invalid), store.write):
        skipped.extend(problems)
        if progress:
            progress(len(chunk), batch.n_steps)
    return skipped


def _worth_workers(files: Sequence[Path]) -> bool:
    from eebench.evaluator.workers import worth_workers

    return worth_workers(files)


def _check_unique(store: ResultStore, report: GradeReport, skip_invalid: bool) -> None:
    """Trajectory ids must be unique within a run: two logs with one id would overwrite each other silently."""
    problems = store.duplicates()
    if problems and not skip_invalid:
        raise InputError(problems)
    if problems:
        report.skipped.extend(problems)
        store.drop_duplicates()


NEVER_HIT_SHOWN = 8  # checkpoint ids named in the note; the query it prints lists them all


def _coverage_notes(store: ResultStore, checkpoints: CheckpointLibrary | None,
                    graded_at: dt.datetime | None = None) -> list[str]:
    """What coverage must not leave silently at zero: given sets that matched no graded trajectory, and
    checkpoints that no graded trajectory hit. `graded_at`: this run's, when the results file holds earlier runs
    too; the query that lists the checkpoints then reads this run's trajectories only (over the whole file it
    listed those no trajectory of any run hit, another list)."""
    notes = []
    instances = store.staged_instance_ids()
    for checkpoint_set in checkpoints.given if checkpoints is not None else ():
        if not any(map(checkpoint_set.matches, instances)):
            patterns = checkpoint_set.instances
            more = f" and {len(patterns) - 3} more" if len(patterns) > 3 else ""
            notes.append(f"{checkpoint_set.where} ({quote(checkpoint_set.name)}): matches no graded trajectory "
                         f"(instances {', '.join(map(quote, patterns[:3]))}{more})")
    never = store.never_hit()
    if never:   # (ids and patterns quoted: a newline in one would break the note's line)
        more = f" and {len(never) - NEVER_HIT_SHOWN} more" if len(never) > NEVER_HIT_SHOWN else ""
        shown = ", ".join(map(quote, never[:NEVER_HIT_SHOWN])) + more
        were = "checkpoint was" if len(never) == 1 else "checkpoints were"
        run = "" if graded_at is None else (" WHERE trajectory_id IN (SELECT trajectory_id FROM trajectories WHERE "
                                            f"graded_at = TIMESTAMP '{graded_at}')")
        notes.append(f"{len(never)} {were} hit by no graded trajectory: {shown} (all: SELECT checkpoint_id "
                     f"FROM checkpoints{run} GROUP BY ALL HAVING count(hit_after_steps) = 0)")
    return notes
