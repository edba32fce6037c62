"""`eebench grade --engine ray`: grade JSONL shards in Ray tasks into Parquet partitions; `ingest` loads them.

Each shard (one trajectory file, local or on any filesystem pyarrow reads) is graded by one task with the same
library call as a local grade (`evaluator.grade_files`, into a DuckDB file of the task's own), and each table is
written as one Parquet file per shard: OUT/<table>/part-<shard>.parquet. So the rows are the local rows; only
`graded_at` differs (when each shard was graded). `ingest` loads a directory of partitions into a results file in
one transaction, through the store's own commit (ids graded again replace their rows; duplicates are refused).
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import socket
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eebench.errors import EebenchError, InputError, near_path, quote

if TYPE_CHECKING:
    from eebench.evaluator.grade import GradeReport

INSTALL_HINT = "--engine ray needs Ray: pip install 'eebench[ray]'"
PART = "part-{index:05d}.parquet"


@dataclass(frozen=True)
class RayReport:
    shards: int
    trajectories: int
    steps: int
    skipped: list[str]   # the problems of the records left out (skip_invalid)
    seconds: float


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401  (the extra installs both)
    except ImportError:
        raise EebenchError(INSTALL_HINT) from None
    return ray


REACH_SECONDS = 10   # how long a cluster's address may take to answer before the grade gives up


def _start(ray: Any, address: str | None, num_cpus: int | None) -> None:
    """Connect to the cluster at `address`, or start a local Ray of `num_cpus`; one line when that fails."""
    if address:
        _check_reachable(address)
    else:   # a Ray of this grade alone, stopped at its end: its note that token authentication is on is not news
        logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    try:
        ray.init(address=address, num_cpus=None if address else num_cpus, include_dashboard=False,
                 log_to_driver=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as exc:   # ValueError: an address Ray cannot parse
        where = f"a Ray cluster at --address {quote(address)}" if address else "a local Ray"
        raise EebenchError(f"cannot start or reach {where}: {quote(str(exc).strip().splitlines()[-1])}") from None


def _check_reachable(address: str) -> None:
    """A cluster named by `host:port` (or `ray://host:port`) must answer: Ray itself waits for an address that
    never answers without end. Other forms (`auto`, `local`) are left to Ray."""
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if colon and port.isdigit() and not host.strip("[]"):   # (Ray logs a traceback of its own for it)
        raise EebenchError(f"--address {quote(address)}: no host before the port; give HOST:PORT")
    if not colon or not port.isdigit() or not host:
        return
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=REACH_SECONDS) as connection:
            speaks_grpc = _speaks_http2(connection) if os.environ.get("RAY_USE_TLS", "0") in ("0", "") else True
    except (OSError, OverflowError) as exc:
        reason = "no answer" if isinstance(exc, TimeoutError) else (getattr(exc, "strerror", None) or str(exc))
        raise EebenchError(f"--address {quote(address)}: no Ray cluster answers there ({reason} within "
                           f"{REACH_SECONDS} s); start one (`ray start --head`) or leave --address out to grade on a "
                           "local Ray") from None
    if not speaks_grpc:
        raise EebenchError(f"--address {quote(address)}: what answers there is not a Ray cluster (no gRPC answer "
                           f"within {REACH_SECONDS} s; a cluster's port is 6379 unless `ray start --head --port` "
                           "chose another, the dashboard's 8265 is not it)")


# HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, 3.4): a gRPC server, as Ray's GCS and
# its client server are, answers with a SETTINGS frame of its own (frame type 4, the fourth byte of its header)
_HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])


def _speaks_http2(connection: socket.socket) -> bool:
    """Whether the server at the other end answers HTTP/2's preface as gRPC does: Ray would wait without end on
    an address where another service (a web server, the dashboard) accepts the connection. (A cluster that uses
    TLS, RAY_USE_TLS=1, is not asked: its servers expect a TLS handshake first.)"""
    connection.sendall(_HTTP2_PREFACE)
    header = b""
    with contextlib.suppress(OSError):
        while len(header) < 9:
            chunk = connection.recv(9 - len(header))
            if not chunk:
                break
            header += chunk
    return len(header) == 9 and header[3] == 4


def _filesystem(uri: str) -> tuple[Any, str]:
    """A pyarrow filesystem and the path within it: a local path, or a URI (s3://, gs://, hdfs://, file://); an
    InputError naming the URI when pyarrow cannot open it (an unknown scheme, a bucket it cannot reach)."""
    import pyarrow as pa
    from pyarrow import fs

    if "://" not in uri:
        try:
            return fs.LocalFileSystem(), str(Path(uri).resolve())
        except (RuntimeError, OSError) as exc:   # (Python 3.11 raises RuntimeError for a symbolic link loop)
            raise InputError.at(uri, f"cannot be resolved: {quote(str(exc), 200)}") from None
    try:
        return fs.FileSystem.from_uri(uri)
    except (pa.ArrowException, OSError) as exc:
        raise InputError.at(uri, f"cannot be opened: {quote(str(exc).splitlines()[0], 200)}") from None


def _bench_payload(bench: Any) -> dict[str, Any]:
    """The bench as data a task on another machine can rebuild: its instance files and what a grade records."""
    root = Path(bench.root)
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
             and p.suffix.lower() in (".json", ".yaml", ".yml")}
    return {"files": files, "name": bench.name, "version": bench.version, "digest": bench.digest,
            "instances": bench.instances, "label": bench.label or str(bench.root)}


def _grade_shard(row: dict[str, Any], bench: dict[str, Any] | None, out: str, skip_invalid: bool,
                 checkpoints: Any = None) -> dict[str, Any]:
    """One Ray task: grade one shard as a local grade does, write its tables as Parquet partitions."""
    import duckdb
    from pyarrow import fs

    from eebench.evaluator.grade import NOTHING_GRADED, Bench, grade_files
    from eebench.evaluator.store import TABLES

    index, source = row["index"], row["path"]
    result: dict[str, Any] = {"index": index, "trajectories": 0, "steps": 0, "problems": []}
    with tempfile.TemporaryDirectory(prefix="eebench-ray-") as folder:
        tmp = Path(folder)
        for rel, data in (bench or {"files": {}})["files"].items():
            (tmp / "bench" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "bench" / rel).write_bytes(data)
        local = Path(source)
        if "://" in source:  # fetch a remote shard; its rows still name the URI as their source_file
            remote, path = _filesystem(source)
            local = tmp / "shard.jsonl"
            fs.copy_files(path, str(local), source_filesystem=remote)
        graded = None if bench is None else Bench(tmp / "bench", bench["name"], bench["version"], bench["digest"],
                                                  bench["instances"], label=bench["label"])
        db = tmp / "shard.duckdb"
        try:
            report = grade_files([local], graded, db, skip_invalid=skip_invalid, checkpoints=checkpoints)
        except InputError as exc:
            problems = list(exc.problems)
            # with skip_invalid, a shard whose every record was skipped adds nothing; any other error (an empty
            # file, say) stops the run, as it stops a local grade
            result["fatal"] = not (skip_invalid and problems[-1] == NOTHING_GRADED)
            result["problems"] = [_problem_text(p, local, source) for p in problems
                                  if result["fatal"] or p != NOTHING_GRADED]
            return result
        result.update(trajectories=report.trajectories, steps=report.steps,
                      problems=[_problem_text(p, local, source) for p in report.skipped])
        target, base = _filesystem(out)
        with contextlib.closing(duckdb.connect(str(db))) as con:
            if str(local) != source:
                con.execute("UPDATE trajectories SET source_file = ?", [source])
            for table in TABLES:   # as users see them (`steps` is a view over narrower storage)
                part = tmp / f"{table}.parquet"
                con.execute(f"COPY (SELECT * FROM {table}) TO '{part}' (FORMAT parquet)")
                target.create_dir(f"{base}/{table}", recursive=True)
                fs.copy_files(str(part), f"{base}/{table}/{PART.format(index=index)}", destination_filesystem=target)
    return result


def _problem_text(problem: Any, local: Path, source: str) -> str:
    return str(problem).replace(str(local), source)


def grade_ray(files: Sequence[str], bench: Any, out: str, *, address: str | None = None,
              skip_invalid: bool = False, num_cpus: int | None = None, checkpoints: Any = None) -> RayReport:
    """Grade each file (a shard) in a Ray task; tables go to `out`/<table>/part-<n>.parquet.

    `bench` may be None when every trajectory is `env: logged`; `checkpoints` (a CheckpointLibrary, loaded and
    checked here: compiled sets travel to the tasks as they are) as for a local grade. `address` is a running
    cluster's (None: start a local Ray with `num_cpus`). The first bad record of a shard stops that shard; every
    shard's problems are reported together, and nothing is left in `out` for the run.
    """
    import time

    ray = _ray()
    started = time.perf_counter()
    target, base = _filesystem(out)
    from pyarrow import fs

    found = target.get_file_info(base).type
    if found not in (fs.FileType.NotFound, fs.FileType.Directory):   # (listing a file raised NotADirectoryError)
        raise InputError.at(out, "is a file; the Parquet partitions of a run go into a new or empty folder")
    if found is not fs.FileType.NotFound and target.get_file_info(fs.FileSelector(base, recursive=False)):
        raise InputError.at(out, "is not empty; the Parquet partitions of a run go into a new or empty folder")
    shards = [str(f) if "://" in str(f) else str(Path(f)) for f in files]
    for shard in shards:
        if shard == "-":   # (a local grade reads it; a task on another machine cannot)
            raise InputError.at(shard, "standard input cannot be a Ray shard (each shard is read by a Ray task): "
                                       "write it to a file, or grade it with --engine local")
        remote, path = _filesystem(shard)
        found = remote.get_file_info(path).type
        if found != fs.FileType.File:   # worded as a local grade words it, a local path's close name included
            missing = "no such file" + ("" if "://" in shard else near_path(shard))
            raise InputError.at(shard, missing if found == fs.FileType.NotFound else "is not a file")
    payload = None if bench is None else _bench_payload(bench)
    started_here = not ray.is_initialized()
    if started_here:
        _start(ray, address, num_cpus)
    logging.getLogger("ray.data").setLevel(logging.WARNING)  # its per-dataset INFO lines would drown ours
    # and its notice that progress bars are off (we turn them off: ours is the one summary line)
    logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
    try:
        import ray.data

        with warnings.catch_warnings():  # Ray Data's own deprecation notes about its defaults: not the user's
            warnings.simplefilter("ignore", DeprecationWarning)
            ray.data.DataContext.get_current().enable_progress_bars = False
            dataset = ray.data.from_items([{"index": i, "path": s} for i, s in enumerate(shards)],
                                          override_num_blocks=len(shards))
            rows = dataset.map(_grade_shard, fn_kwargs={"bench": payload, "out": out, "skip_invalid": skip_invalid,
                                                        "checkpoints": checkpoints}, num_cpus=1).take_all()
    finally:
        if started_here:
            ray.shutdown()
    rows.sort(key=lambda r: r["index"])
    problems = [p for r in rows for p in r["problems"]]
    fatal = [p for r in rows if r.get("fatal") for p in r["problems"]]   # (all of them without skip_invalid)
    graded = sum(r["trajectories"] for r in rows)
    if fatal or not graded:   # as a local grade: nothing of the run is kept
        with contextlib.suppress(OSError):
            target.delete_dir_contents(base, missing_dir_ok=True)
        from eebench.evaluator.grade import NOTHING_GRADED

        raise InputError(fatal or [*problems, NOTHING_GRADED])
    return RayReport(len(rows), graded, sum(r["steps"] for r in rows), problems, time.perf_counter() - started)


def ingest(parquet_dir: str, db: Path) -> GradeReport:
    """Load Parquet partitions (OUT/<table>/*.parquet) into the results file `db` in one transaction.

    Returns a grade's report of it: trajectories and steps loaded, the earlier grades of their ids replaced, and
    the stops that came once the commit had begun (CommitGate). Trajectory ids must be unique across the partitions.
    """
    from eebench.evaluator.grade import GradeReport
    from eebench.evaluator.store import TABLES, ResultStore
    from eebench.interrupts import CommitGate

    source, base = _filesystem(parquet_dir)
    from pyarrow import fs

    try:
        missing = [table for table in TABLES
                   if source.get_file_info(f"{base}/{table}").type != fs.FileType.Directory]
    except OSError as exc:   # a bucket that cannot be reached, say
        raise InputError.at(parquet_dir, f"cannot be read: {quote(str(exc).splitlines()[0], 200)}") from None
    if len(missing) == len(TABLES) and source.get_file_info(base).type == fs.FileType.NotFound:
        raise InputError.at(parquet_dir, "no such folder" + ("" if "://" in parquet_dir else near_path(parquet_dir)))
    if "trajectories" in missing:
        raise InputError.at(parquet_dir, "holds no trajectories/ partitions (`eebench grade --engine ray --out "
                                         "DIR` writes them)")
    if missing:   # a run writes every table's folder, rows or none: without one, the set is not whole
        raise InputError.at(parquet_dir, f"has no {', '.join(f'{t}/' for t in missing)} partitions beside "
                                         "trajectories/ (a run of `eebench grade --engine ray` writes a folder per "
                                         f"table: {', '.join(TABLES)})")
    parts = _parts(source, base, parquet_dir.rstrip("/"))
    store = ResultStore(db)
    try:
        firsts = _stage_tables(store, parquet_dir.rstrip("/"), parts)
        problems = store.duplicates(lambda key: f"{parquet_dir.rstrip('/')}/trajectories/"
                                                f"{parts[bisect.bisect_right(firsts, key) - 1]}")
        if problems:
            raise InputError(problems)
        report = GradeReport(store.staged_trajectories(), store.staged_steps())
        with CommitGate() as gate:
            report.replaced = store.commit(gate)   # (said as `grade` says it: how many, and a bundle they lose)
    except BaseException:
        store.abort()
        raise
    report.late_stops = gate.late_names()
    return report


def _parts(source: Any, base: str, parquet_dir: str) -> list[str]:
    """The part names (`part-00000.parquet` ...) of a set of partitions, in the order of their shards: the same in
    every table's folder, since a run writes each shard's part of every table, rows or none. A part missing beside
    the others (or a file left behind) is bad input: its rows would be lost (or added) without a word; so is a
    folder that cannot be listed, or a .parquet entry that is not a file."""
    from pyarrow import fs

    from eebench.evaluator.store import TABLES

    found: dict[str, set[str]] = {}
    for table in TABLES:
        try:
            infos = source.get_file_info(fs.FileSelector(f"{base}/{table}"))
        except OSError as exc:   # (permission denied, say)
            raise InputError.at(f"{parquet_dir}/{table}", f"cannot be read: {quote(str(exc).splitlines()[0], 200)}"
                                ) from None
        found[table] = set()
        for info in infos:
            if not info.base_name.endswith(".parquet"):
                continue
            if info.type != fs.FileType.File:
                raise InputError.at(f"{parquet_dir}/{table}/{info.base_name}", "is not a file (a run of `eebench grade "
                                    "--engine ray` writes each part as one Parquet file)")
            found[table].add(info.base_name)
    if not found["trajectories"]:
        raise InputError.at(f"{parquet_dir}/trajectories", "holds no .parquet files (`eebench grade --engine ray "
                                                           "--out DIR` writes them)")
    for table in TABLES:
        for name in sorted(found[table] ^ found["trajectories"]):
            there, lacking = (table, "trajectories") if name in found[table] else ("trajectories", table)
            raise InputError.at(f"{parquet_dir}/{there}/{name}", f"has no {lacking}/{name} beside it (a run of "
                                "`eebench grade --engine ray` writes each shard's part of every table, rows or none)")
    return sorted(found["trajectories"], key=_shard_order)


def _shard_order(name: str) -> tuple[int, str]:
    """A part's place among a run's parts: by its shard's number (`part-100000` after `part-99999`, which a sort
    of the names would not give), then by name (a part of another name)."""
    number = name.removeprefix("part-").removesuffix(".parquet")
    return (int(number), name) if number.isdecimal() else (-1, name)   # (`part-²`: a digit int() refuses)


def _stage_tables(store: Any, parquet_dir: str, parts: list[str]) -> list[int]:
    """Stage the partitions in the layout of `store.add_rows`, part by part (a part of each table per shard): a
    trajectory's key is its position in the run (part, then row); the rows of the other tables take the key of
    their trajectory in the part of the same name. Each file is read by a plain scan, one thread, so its rows keep
    their order (a join did not: DuckDB's hash join put rows after the next file's, or in its hash table's order),
    and handed over in record batches. A part DuckDB cannot read (not Parquet, not of this results schema: a
    column missing or of another type, a NULL where the table has none) is bad input, and so are rows of a
    trajectory that the part's trajectories file does not hold. Returns the first trajectory key of each part."""
    import duckdb
    import pyarrow as pa
    import pyarrow.compute as pc

    from eebench.evaluator.store import ROW_GROUP_ROWS, TABLES

    schemas = store.arrow_schemas()
    firsts = []
    with contextlib.closing(duckdb.connect()) as con:
        con.execute("SET threads = 1")
        for part in parts:
            firsts.append(store.take_keys(0))
            keys: dict[str | None, int] = {}   # the part's trajectory ids (the first copy of one given twice)
            for table in TABLES:
                file = f"{parquet_dir}/{table}/{part}"
                names = [name for name in schemas[table].names if name != "trajectory_key"]
                columns = list(dict.fromkeys([*names, "trajectory_id"]))
                scan = f"read_parquet('{file.replace(chr(39), chr(39) * 2)}')"
                try:
                    found = {row[0] for row in con.execute(f"DESCRIBE SELECT * FROM {scan}").fetchall()}
                    if missing := [c for c in columns if c not in found]:
                        raise _other_schema(file, f"has no column {', '.join(missing)}")
                    reader = con.sql(f"SELECT {', '.join(columns)} FROM {scan}").to_arrow_reader(ROW_GROUP_ROWS)
                    _check_types(file, reader.schema, schemas, table)
                    not_null = [c.name for c in TABLES[table] if "NOT NULL" in c.type and c.name in columns]
                    for batch in _batches(reader, file):
                        if nulls := [name for name in not_null if batch.column(name).null_count]:
                            raise InputError.at(file, f"has NULL in column {', '.join(nulls)} of {table}, which "
                                                      "holds none (not written by `eebench grade --engine ray`)")
                        ids = batch.column("trajectory_id")
                        if table == "trajectories":
                            first = store.take_keys(len(batch))
                            for key, tid in enumerate(ids.to_pylist(), first):
                                keys.setdefault(tid, key)
                            column = pa.array(range(first, first + len(batch)), pa.int64())
                        else:   # the key of each run of a trajectory's rows
                            runs = pc.run_end_encode(ids)
                            looked = [keys.get(tid) for tid in runs.values.to_pylist()]
                            if None in looked:
                                raise InputError.at(file, f"has rows of {table} of a trajectory that "
                                                          f"{parquet_dir}/trajectories/{part} does not hold")
                            column = pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(
                                runs.run_ends, pa.array(looked, pa.int64())))
                        rows = pa.Table.from_batches([batch]).select(names).append_column("trajectory_key", column)
                        store.add_rows(table, rows)
                except duckdb.Error as exc:   # (DuckDB's first line says what is wrong)
                    raise InputError.at(file, "cannot be loaded: "
                                              f"{quote(str(exc).splitlines()[0], 300)}") from None
    return firsts


def _batches(reader: Any, file: str) -> Any:
    """The record batches of a part's scan: DuckDB's error reading a later row group (a damaged page) comes through
    pyarrow's stream as an OSError, not a duckdb.Error, and is bad input as well."""
    while True:
        try:
            batch = reader.read_next_batch()
        except StopIteration:
            return
        except OSError as exc:
            raise InputError.at(file, f"cannot be loaded: {quote(str(exc).splitlines()[0], 300)}") from None
        yield batch


def _other_schema(file: str, what: str) -> InputError:
    from eebench.evaluator.store import SCHEMA_VERSION

    return InputError.at(file, f"{what}: not a partition of results schema {SCHEMA_VERSION} (written by another "
                               "eebench version?)")


def _check_types(file: str, found: Any, schemas: dict[str, Any], table: str) -> None:
    """A part's columns must have the types the table stages (DuckDB would cast text to numbers, or true to 1,
    and load them without a word); `trajectory_id` is text in every table."""
    expected = {**{f.name: f.type for f in schemas[table]}, "trajectory_id": schemas["trajectories"].field(
        "trajectory_id").type}
    if other := [f"{f.name} ({f.type}, not {expected[f.name]})" for f in found if f.type != expected[f.name]]:
        raise _other_schema(file, f"has column {', '.join(other)}")
