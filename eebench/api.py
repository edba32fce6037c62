"""eebench from Python: load instances, grade trajectories in memory or into DuckDB, query results as DataFrames.

A thin layer over the library the CLI uses, so the same input gives the same rows and the same one-line
`InputError` messages. Heavy modules (DuckDB, pyarrow, pandas) are imported on first use.
"""

from __future__ import annotations

import contextlib
import re
import signal
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eebench.errors import InputError, Problem, quote

DOCUMENTS_PREFIX, DOCUMENTS_FILE = "eebench-trajectories-", "trajectories.jsonl"  # where dicts are written to grade
DOCUMENTS = "trajectories"   # how messages and rows (source_file) name documents given as dicts

if TYPE_CHECKING:
    import pandas
    import pyarrow

    from eebench.evaluator.grade import Bench, GradeReport
    from eebench.world.grid_dag import GridDagInstance
    from eebench.world.rooms import RoomsInstance

    Instance = GridDagInstance | RoomsInstance


@dataclass(frozen=True)
class Instances(Mapping[str, "Instance"]):
    """The instances of a suite, a folder or a bundle, by id, in their listed order.

    `source` is what was loaded; `bundle` is (name, version, digest) for a verified bundle, else None.
    """

    source: str
    members: dict[str, Instance] = field(repr=False)
    bundle: tuple[str, str, str] | None = None

    def __getitem__(self, instance_id: str) -> Instance:
        try:
            return self.members[instance_id]
        except KeyError:
            from eebench.errors import did_you_mean

            raise InputError(f"{self.source}: no instance {instance_id!r}{did_you_mean(instance_id, self.members)}"
                             ) from None

    def __contains__(self, instance_id: object) -> bool:   # (Mapping's own asks __getitem__, which raises InputError)
        return instance_id in self.members

    def get(self, instance_id: str, default: Any = None) -> Any:
        return self.members.get(instance_id, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self.members)

    def __len__(self) -> int:
        return len(self.members)


def load(source: str | Path | Mapping[str, Any]) -> Instance | Instances:
    """An instance or a set of them, validated as `eebench validate` does.

    `source` is an instance document (a dict), an instance file, a folder of instances, a bundle (folder or
    archive, verified), a suite or generator spec file, the name of a shipped suite or preset (`eebench list`),
    or the id of one instance of a shipped suite (e.g. 'park2026-main/low-small/seed-0').
    Returns the instance for a single one, else `Instances`.
    """
    from eebench.documents import document_kind, load_document
    from eebench.instances import check_instance_document

    if isinstance(source, Mapping):
        return check_instance_document(dict(source), "<instance>")
    path = _path("source", source)
    if not str(source):   # (Path("") is the current folder: it was searched for instances)
        raise InputError("source: an empty name; expected a file, a folder, a bundle, a shipped suite's name or an "
                         "instance id")
    try:
        is_dir, is_file = path.is_dir(), path.is_file()
    except OSError as exc:   # a name too long for a path, say
        raise InputError(f"{quote(str(source), 100)}: {exc.strerror}") from None
    if is_dir:
        return _load_folder(path)
    if is_file:
        from eebench.archives import archive_suffix

        if archive_suffix(path):
            return _load_bundle(path)
        doc = load_document(path)
        kind, _ = document_kind(doc, str(path))
        if kind == "instance":
            return check_instance_document(doc, str(path))
        if kind == "manifest":
            return _load_bundle(path.parent)
        return _load_suite(str(path))
    return _load_named(str(source))


def _path(name: str, value: Any) -> Path:
    """A path the caller gave (text or a Path), or a TypeError naming the argument."""
    if isinstance(value, (str, Path)):
        return Path(value)
    raise TypeError(f"{name}: expected a path (str or pathlib.Path), found {type(value).__name__}")


def _load_folder(path: Path) -> Instances:
    from eebench.bundles import _enclosing_bundle
    from eebench.instances import InstanceLibrary

    enclosing = _enclosing_bundle(path)  # part of a bundle is the bundle, verified (as `grade --bench` rules)
    if enclosing is not None:
        return _load_bundle(enclosing)
    library = InstanceLibrary(path)
    ids = library.ids()
    if library.unreadable:   # as `eebench show` and `play` rule: a malformed file is bad input, not skipped
        raise InputError(library.unreadable)
    if not ids:
        raise InputError.at(str(path), "holds no instance files (`eebench generate` writes them)")
    return Instances(str(path), {i: library.get(i).instance for i in ids})


def _load_bundle(path: Path) -> Instances:
    from eebench.bundles import verify_bundle
    from eebench.documents import decode_utf8, parse_text
    from eebench.instances import check_instance_document

    bundle = verify_bundle(path)
    manifest = bundle.manifest
    items = {}
    for entry in manifest["instances"]:
        where = f"{path}/{entry['path']}"
        doc = parse_text(decode_utf8(bundle.files[entry["path"]], where), where, yaml_syntax=False)
        items[entry["id"]] = check_instance_document(doc, where)
    return Instances(str(path), items, (manifest["name"], manifest["version"], manifest["digest"]))


def _load_suite(spec: str) -> Instances:
    from eebench.suites import resolve_spec

    suite = resolve_spec(spec)
    return Instances(spec, {instance.id: instance for instance in suite.instances()})


def _load_named(name: str) -> Instance | Instances:
    """A shipped suite or preset by name, or one instance of a shipped suite by id."""
    from eebench.suites import shipped_instance, shipped_instances, shipped_presets, shipped_suites

    if name in shipped_suites() or name in shipped_presets():
        return _load_suite(name)
    if name in shipped_instances():
        from eebench.instances import load_instance

        return load_instance(shipped_instances()[name]).instance
    shipped = shipped_instance(name)
    if shipped is not None:
        return shipped.instance
    return _load_suite(name)  # the message of an unknown name, with close names


# -- grading -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Results:
    """The results file's tables as Arrow tables (`results['steps']`); `to_pandas`/`to_polars` convert one table.

    Arrow -> polars shares the buffers; Arrow -> pandas is the one copy.
    """

    tables: dict[str, pyarrow.Table]
    report: GradeReport

    def __getitem__(self, table: str) -> pyarrow.Table:
        if table not in self.tables:
            from eebench.errors import did_you_mean

            raise InputError(f"no table {table!r}{did_you_mean(table, self.tables)}; tables: {', '.join(self.tables)}")
        return self.tables[table]

    @property
    def trajectories(self) -> pyarrow.Table:
        return self["trajectories"]

    @property
    def steps(self) -> pyarrow.Table:
        return self["steps"]

    @property
    def episodes(self) -> pyarrow.Table:
        return self["episodes"]

    @property
    def checkpoints(self) -> pyarrow.Table:
        return self["checkpoints"]

    @property
    def meta(self) -> pyarrow.Table:
        return self["meta"]

    def to_arrow(self, table: str = "trajectories") -> pyarrow.Table:
        return self[table]

    def to_pandas(self, table: str = "trajectories") -> pandas.DataFrame:
        _installed("pandas", "to_pandas")
        return self[table].to_pandas()

    def to_polars(self, table: str = "trajectories") -> Any:
        _installed("polars", "to_polars")
        import polars

        return polars.from_arrow(self[table])


def _installed(module: str, method: str, name: str | None = None) -> None:
    """An ImportError that says which extra to install, for a DataFrame library eebench does not depend on."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise ImportError(f"{name or f'Results.{method}'} needs {module}: pip install 'eebench[{module}]'")


def grade(trajectories: Any, *, bench: str | Path | Instances | Iterable[Any] | None = None,
          checkpoints: str | Path | Iterable[str | Path] = (), skip_invalid: bool = False) -> Results:
    """Grade trajectories in memory and return their tables (as `eebench grade` would write them).

    `trajectories`: a trajectory file (JSONL) or several, or trajectory/1 documents (a dict or dicts; a float
    NaN or infinity in one is written as null, as JSON has neither).
    `bench`: a folder of instances or a bundle (verified), the name of a shipped suite, instances from `load` (or
    one), or None (the default) when every trajectory is `env: logged`.
    `checkpoints`: checkpoint files (checkpoints/1), as `--checkpoints`: a given set replaces the shipped sets for
    the instances it matches.
    """
    with tempfile.TemporaryDirectory(prefix="eebench-grade-") as tmp:
        db = Path(tmp) / "results.duckdb"
        report = grade_files(trajectories, bench=bench, db=db, checkpoints=checkpoints, skip_invalid=skip_invalid)
        for name in report.late_stops:   # a commit to a file of ours, not kept: a stop then still stops the caller
            signal.raise_signal(signal.Signals[name])
        import duckdb

        from eebench.evaluator.store import TABLES

        with contextlib.closing(duckdb.connect(str(db), read_only=True)) as con:
            # every table of the results file, as users see them (the summary views need grade_files)
            tables = {name: con.sql(f"SELECT * FROM {name}").to_arrow_table() for name in sorted([*TABLES, "meta"])}
    return Results(tables, report)


def grade_files(trajectories: Any, *, bench: str | Path | Instances | Iterable[Any] | None = None, db: str | Path,
                checkpoints: str | Path | Iterable[str | Path] = (), skip_invalid: bool = False, workers: int = 1
                ) -> GradeReport:
    """Grade trajectories into the DuckDB file `db` in one transaction, as `eebench grade` does; `workers`
    processes grade pieces of the input in parallel (0: one per core), with the rows of one process."""
    from eebench.checkpoints import library
    from eebench.evaluator.grade import grade_files as grade_into

    db = _path("db", db)
    counts = f"workers: expected a count of processes (an int >= 0; 0: one per core), found {workers!r}"
    if isinstance(workers, bool) or not isinstance(workers, int):
        raise TypeError(counts)
    if workers < 0:
        raise ValueError(counts)
    given = [checkpoints] if isinstance(checkpoints, (str, Path)) else checkpoints
    if not isinstance(given, Iterable):
        raise TypeError(f"checkpoints: expected checkpoint files (paths), found {type(checkpoints).__name__}")
    sets = library([_path("checkpoints", file) for file in given])   # checked before any grading, as the CLI's
    with contextlib.ExitStack() as stack:
        files = _trajectory_files(trajectories, stack)
        opened = _open_bench(bench, stack)
        try:
            report = grade_into(files, opened, db, skip_invalid=skip_invalid, workers=workers, checkpoints=sets,
                                source_names={str(files[0]): DOCUMENTS} if _documents(files) else None)
        except InputError as exc:
            raise InputError([_located(p, files) for p in exc.problems]) from None
        report.skipped[:] = [_located(p, files) for p in report.skipped]
        return report


def _documents(files: list[Path]) -> bool:
    """Whether `files` is the temporary file of documents given as dicts."""
    return bool(files) and files[0].name == DOCUMENTS_FILE and files[0].parent.name.startswith(DOCUMENTS_PREFIX)


def _located(problem: Problem | str, files: list[Path]) -> Problem | str:
    """A problem in documents given as dicts, located as `trajectories[i]` rather than in the temporary file."""
    if not _documents(files):
        return problem
    if isinstance(problem, str):
        return problem.replace(str(files[0]), DOCUMENTS)
    message = re.sub(re.escape(str(files[0])) + r":(\d+)", lambda m: f"{DOCUMENTS}[{int(m.group(1)) - 1}]",
                     problem.message)
    if problem.file != str(files[0]):
        return problem._replace(message=message)
    where = DOCUMENTS if problem.line is None else f"{DOCUMENTS}[{problem.line - 1}]"
    return Problem(where, None, problem.field, message)


def _trajectory_files(trajectories: Any, stack: contextlib.ExitStack) -> list[Path]:
    """Paths to grade: the files given, or the documents given written to one temporary JSONL file."""
    if isinstance(trajectories, (str, Path)):
        return [Path(trajectories)]
    if not isinstance(trajectories, (Mapping, Iterable)) or isinstance(trajectories, (bytes, bytearray)):
        # (bytes are iterable, as integers)
        raise InputError("trajectories: expected trajectory files or trajectory/1 documents (dicts), found "
                         f"{type(trajectories).__name__}")
    items = [trajectories] if isinstance(trajectories, Mapping) else list(trajectories)
    if not items:
        raise InputError("trajectories: none given; expected trajectory files or trajectory/1 documents (dicts)")
    if all(isinstance(item, (str, Path)) for item in items):
        return [Path(item) for item in items]
    for i, item in enumerate(items):   # an item that is neither is named before the two kinds are called a mix
        if not isinstance(item, (str, Path, Mapping)):
            raise InputError(Problem(f"{DOCUMENTS}[{i}]", None, None, "expected a trajectory file or a trajectory/1 "
                                     f"document (a dict), found {type(item).__name__}"))
    if not all(isinstance(item, Mapping) for item in items):
        raise InputError("trajectories: expected trajectory files or trajectory/1 documents (dicts), not a mix")
    import orjson

    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=DOCUMENTS_PREFIX)))
    path = tmp / DOCUMENTS_FILE
    with path.open("wb") as out:
        for i, item in enumerate(items):
            try:
                out.write(orjson.dumps(item) + b"\n")
            except orjson.JSONEncodeError as exc:   # a value JSON cannot hold: a set, a NumPy scalar, 2**70, ...
                raise InputError(Problem(f"{DOCUMENTS}[{i}]", None, None, f"cannot be written as JSON: {exc}")
                                 ) from None
    return [path]


def _open_bench(bench: Any, stack: contextlib.ExitStack) -> Bench | None:
    """The bench to grade against: a path opened as the CLI opens it, else instances written to a temporary folder
    (None: no bench, for logged trajectories)."""
    from eebench.bundles import open_bench

    if bench is None:
        return None
    if isinstance(bench, (str, Path)) and Path(bench).exists():
        return stack.enter_context(open_bench(Path(bench)))
    document = isinstance(bench, Mapping) and not isinstance(bench, Instances) and "eebench" in bench
    if isinstance(bench, (str, Path)) or document:   # a shipped name or an instance id; an instance document
        bench = load(bench if document else str(bench))
    if hasattr(bench, "id"):
        instances = [bench]
    elif isinstance(bench, Mapping):   # Instances, by id
        instances = list(bench.values())
    elif isinstance(bench, Iterable):
        instances = [load(item) if isinstance(item, Mapping) else item for item in bench]
    else:
        instances = [bench]
    for k, item in enumerate(instances):
        if not hasattr(item, "id"):
            raise InputError(f"bench{'' if item is bench else f'[{k}]'}: expected a folder, a bundle, a shipped "
                             "suite's name, instances (eebench.load) or instance documents, or None for logged "
                             f"trajectories; found {type(item).__name__}")
    from eebench.instances import Bench, write_instances

    tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="eebench-bench-")))
    write_instances(instances, tmp / "instances", {"api": "eebench.grade"})
    bundle = getattr(bench, "bundle", None)   # a verified bundle's name, version and digest go on the rows
    return Bench(tmp / "instances", label=getattr(bench, "source", "the instances given"),
                 **(dict(zip(("name", "version", "digest"), bundle)) if bundle else {}))


def query(sql: str, db: str | Path) -> pandas.DataFrame:
    """Run read-only SQL against a results file (as `eebench query` does) and return a pandas DataFrame."""
    table = query_arrow(sql, db)
    _installed("pandas", "query", "eebench.query")
    return table.to_pandas()


def query_arrow(sql: str, db: str | Path) -> pyarrow.Table:
    """The result of read-only SQL as an Arrow table (polars.from_arrow takes it without a copy)."""
    import duckdb

    from eebench.evaluator.store import READ_ONLY_CONFIG, _check_sql_text, _connect_reading, _refuse_writes, _sql_error

    if not isinstance(sql, str):
        raise TypeError(f"sql: expected the query's text, found {type(sql).__name__}")
    db = _path("db", db)
    _check_sql_text(sql)
    with tempfile.TemporaryDirectory(prefix="eebench-query-") as spill:  # as `query_rows`: spills go here
        with contextlib.closing(_connect_reading(db, {**READ_ONLY_CONFIG, "temp_directory": spill})) as con:
            try:
                _refuse_writes(con, sql)
                return con.sql(sql).to_arrow_table()
            except duckdb.Error as exc:
                raise _sql_error(exc) from None


__all__ = ["Instances", "Results", "grade", "grade_files", "load", "query", "query_arrow"]
