"""`eebench convert`: logs in, canonical trajectories (trajectory/1 JSON Lines) out, the same rules for every format.

The adapter reads its format into episodes; here each episode becomes a trajectory: its actions read in one
vocabulary, its instance named (`--instance`, `--instance-field`, `--instance-from-name`, or the log's own task,
or the file's name), its labels filled, its source recorded. Inputs are files, folders of logs, or `-` (standard
input); output goes to a temporary file renamed into place at the end (or copied to standard output), so a
failed run writes nothing.

Which trajectories are graded: a trajectory whose instance the user named, or whose log names an instance that is
known (in `--bench`, else in a shipped suite), is written without `env` (the instance's kind decides when it is
graded) and graded by replay. Any other is `env: logged`: kept as text (graded for coverage and revisits, not
replayed), and counted in the summary with the option that would fix it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from eebench.adapters.actions import VOCABULARIES, ActionReader, render_call
from eebench.adapters.base import HEAD_BYTES, Adapter, Episode, LoggedStep, bad_record, dig
from eebench.adapters import records
from eebench.adapters.records import dumps_line, is_json_lines
from eebench.adapters.registry import claiming, detect, get_adapter
from eebench.documents import (
    atomic_file,
    found,
    json_type,
    open_input,
    read_position,
    read_stdin_once,
    size_text,
)
from eebench.errors import EebenchError, InputError, Problem, did_you_mean, near_path, one_of
from eebench.instances import InstanceLibrary
from eebench.pieces import Span, line_spans, resolve_workers
from eebench.trajectories import AGENT_LABELS, usage_bound

if TYPE_CHECKING:   # (the worker processes' modules, 40 ms, are imported when a file is cut into pieces)
    import multiprocessing.context
    from concurrent.futures import Future, ProcessPoolExecutor

    from eebench.instances import Bench

ENVS = ("grid_dag", "rooms", "logged")
FIELD_PATH = re.compile(r"[^.\[\]]+(\[-?\d+\]|\.[^.\[\]]+)*")   # `task_id`, `metadata.instance`, `samples[0].id`
LOGGED = "logged"
STDIN = "-"                      # the input (and output) name of the standard streams
# trajectories of a few KB each: written 1 MiB at a time, not one system call each (the default buffer is 8 KiB)
OUTPUT_BUFFER = 1 << 20
SHOWN_LOCATIONS = 5              # unreadable actions listed by place in the summary, the rest counted
PIECE_BYTES = 4 << 20            # of JSON Lines per piece a worker converts: small enough to balance the end
PARALLEL_FROM_BYTES = 32 << 20   # a smaller file is converted by this process alone: measured on 2 cores, 20 MB
#                                  took 0.23 s in pieces against 0.26 s, 8 MB 0.11 s against 0.08 s
# endings of log files, stripped to name an instance after its file (`a-3.5__b.json` -> `a-3.5__b`); never a cut at
# the first dot, which model names contain
LOG_SUFFIXES = frozenset({".json", ".jsonl", ".ndjson", ".txt", ".log", ".csv", ".eval", ".traj", ".trajectory",
                          ".actions", ".gz", ".zip", ".yaml", ".yml"})


class KnownInstances:
    """The instances a log's own task name (or its file name) may refer to: a bench's (`--bench`), or, without
    one, those of the shipped suites (what `eebench publish` freezes). Answers whether an id is one of them, and the
    sha256 a bench promises for it."""

    def __init__(self, bench: Bench | None = None):
        self.bench = bench   # a folder or an opened bundle (bundles.open_bench), or None for the shipped suites
        self._library: InstanceLibrary | None = None
        if bench is not None:
            self._library = InstanceLibrary(bench.root, label=bench.label)

    @property
    def where(self) -> str:
        return self.bench.where if self.bench is not None else "the shipped suites"

    @property
    def _shipped(self) -> dict[str, str]:
        from eebench.suites import shipped_instance_envs

        return shipped_instance_envs()

    def knows(self, instance_id: str) -> bool:
        if self._library is None:
            return instance_id in self._shipped
        return self._library.path_for(instance_id) is not None

    def env(self, instance_id: str) -> str | None:
        """The world kind of a known instance (its actions read in that world's vocabulary); None if unknown."""
        if self._library is None:
            return self._shipped.get(instance_id)
        if self._library.path_for(instance_id) is None:
            return None
        return self._library.get(instance_id).kind.env

    def sha256(self, instance_id: str) -> str | None:
        """The sha256 of a bench's instance (the manifest's for a bundle); None without a bench."""
        if self._library is None or self.bench is None:
            return None
        promised = (self.bench.instances or {}).get(instance_id)
        return promised or self._library.get(instance_id).sha256

    def unknown_shipped(self, instance_id: str) -> str | None:
        """The shipped suite whose name an id starts with when, without a bench, it is none of that suite's
        instances (a mistyped seed, say); else None. Its ids are fixed: the grade would refuse it later."""
        from eebench.suites import shipped_suites

        suite = instance_id.split("/")[0]
        return suite if self._library is None and suite in shipped_suites() and not self.knows(instance_id) else None

    def close_to(self, instance_id: str) -> str:
        ids = self._library.ids() if self._library is not None else self._shipped
        return did_you_mean(instance_id, ids)


@dataclass(frozen=True)
class ConvertOptions:
    """How logs map to eebench: which instance, which world, how actions read, which labels."""

    instance: str | None = None          # every trajectory was played in this instance
    instance_field: str | None = None    # or: the instance id is this field of each record (dotted path)
    instance_from_name: str | None = None  # or: a regex over the file's name (group `instance`, or groups joined by /)
    env: str | None = None               # grid_dag or logged, when the user says so; else decided per trajectory
    vocabulary: str | None = None        # grid, rooms or text; default grid for graded worlds, text for logged
    action_regex: str | None = None      # tried first: the action is this pattern's `action` group (or group 1)
    labels: Mapping[str, str] = field(default_factory=dict)  # agent name/model/prompt/harness; they win over the log
    skip_invalid: bool = False
    known: KnownInstances | None = None  # instances a log may name; default: the shipped suites'

    def named(self) -> bool:
        """Whether the user named the instances (then every trajectory is meant to be graded)."""
        return bool(self.instance or self.instance_field or self.instance_from_name)

    def name_pattern(self) -> re.Pattern[str] | None:
        if self.instance_from_name is None:
            return None
        try:
            pattern = re.compile(self.instance_from_name)
        except re.error as exc:
            raise InputError(f"--instance-from-name: not a regular expression: {exc}") from None
        if not pattern.groups:
            raise InputError("--instance-from-name: the pattern needs a group: (?P<instance>...), or groups joined "
                             "by '/' such as '__(park2026-main)__(.+)__(seed-\\d+)$'")
        # a group of another name is joined into the instance unless one is named `instance`: a mistyped `modle`
        # went into the instance id (or, beside an `instance` group, set no label), silently
        known = ("instance", *AGENT_LABELS)
        for name in pattern.groupindex:
            if name not in known and (did_you_mean(name, known) or "instance" not in pattern.groupindex):
                raise InputError(f"--instance-from-name: a group named {name!r} is none of {one_of(known)}"
                                 f"{did_you_mean(name, known)}; leave it unnamed to join it into the instance")
        return pattern

    def readers(self) -> dict[str, ActionReader]:
        """The action reader of each vocabulary (all --actions when given); InputError for options that do not
        fit."""
        if self.env is not None and self.env not in ENVS:
            raise InputError(f"--env: expected {one_of(ENVS)}, found {self.env!r}")
        if self.vocabulary is not None and self.vocabulary not in VOCABULARIES:
            raise InputError(f"--actions: expected {one_of(VOCABULARIES)}, found {self.vocabulary!r}")
        fits = _VOCABULARY_OF.get(self.env or "", self.vocabulary)
        if self.env not in (None, LOGGED) and self.vocabulary not in (None, fits):
            raise InputError(f"--actions {self.vocabulary} does not fit --env {self.env}, whose actions are "
                             f"--actions {fits}")
        named = [n for n, v in (("--instance", self.instance), ("--instance-field", self.instance_field),
                                ("--instance-from-name", self.instance_from_name)) if v]
        if len(named) > 1:
            raise InputError("give one of --instance, --instance-field or --instance-from-name, not "
                             + " and ".join(named))
        if self.instance_field is not None and not FIELD_PATH.fullmatch(self.instance_field):
            raise InputError(f"--instance-field: expected a dotted path such as task_id, metadata.instance or "
                             f"samples[0].id, found {self.instance_field!r}")
        self.name_pattern()
        pattern = None
        if self.action_regex is not None:
            try:
                pattern = re.compile(self.action_regex, re.S)
            except re.error as exc:
                raise InputError(f"--action-regex: not a regular expression: {exc}") from None
        return {vocabulary: ActionReader(self.vocabulary or vocabulary, pattern) for vocabulary in VOCABULARIES}


@dataclass
class ConvertReport:
    trajectories: int = 0
    steps: int = 0
    unreadable: int = 0                  # steps whose output named no action (kept, with action null)
    unreadable_at: list[str] = field(default_factory=list)  # the first few, as `file:line step N`
    logged: int = 0                      # trajectories kept as text (env logged): their instance is not known
    logged_example: str | None = None    # the first such trajectory's instance, for the summary's hint
    skipped: list[Problem] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)        # files of input folders that no adapter reads
    formats: dict[str, str] = field(default_factory=dict)   # input file -> the format it was read as
    files: int = 0


def convert_files(inputs: Sequence[Path], fmt: str, out: Path, options: ConvertOptions,
                  progress: Callable[[int], None] | None = None, workers: int = 0) -> ConvertReport:
    """Convert every episode of `inputs` (files, folders, `-`) into trajectory/1 lines of `out` (`-`: stdout),
    written atomically. `workers`: processes that convert pieces of a large JSON Lines file in parallel (0: one
    per core; 1: this process alone); the output and the report are the same whatever their number."""
    readers = options.readers()
    options = options if options.known is not None else replace(options, known=KnownInstances())
    report = ConvertReport()
    seen: dict[str, str] = {}
    with _stdin_spooled(inputs) as (inputs, shown), contextlib.ExitStack() as stack:
        plan = _plan(inputs, fmt, report, shown)
        _refuse_writing_over_an_input(out, [path for path, _ in plan])
        report.files = len(plan)
        pool = _Pool(stack, resolve_workers(workers))
        with _output(out) as handle:
            for path, adapter in plan:
                name = shown.get(path, str(path))
                report.formats[name] = adapter.name
                pieces = pool.pieces(path, adapter)
                if pieces is None:
                    results: Iterable[Converted | Failed] = (
                        _converted(item, adapter, path, options, readers, name) for item in _items(path, adapter))
                else:
                    results = pool.converted(pieces, path, adapter, options, name, progress)
                done = 0   # of the file, as far as the progress bar knows (pieces report their own)
                for result in results:
                    _take(result, report, seen, handle, options, shown, name)
                    if progress and pieces is None and (at := read_position(path) or 0) > done:
                        progress(at - done)   # (as the file is read: one large file moved the bar only at its end)
                        done = at
                if progress and pieces is None and path.stat().st_size > done:
                    progress(path.stat().st_size - done)
            if not report.trajectories:  # one rule with grade: a run that converted nothing is a mistake
                raise InputError([*report.skipped, "nothing was converted: every episode was skipped (listed "
                                                   "above); nothing was written"])
    return report


def _refuse_writing_over_an_input(out: Path, inputs: Sequence[Path]) -> None:
    """An --out that is one of the files read: the log would be replaced by its trajectories (and a folder's
    earlier output read again as a log)."""
    for path in inputs if str(out) != "-" else ():
        with contextlib.suppress(OSError):   # (a missing --out: nothing to lose)
            if os.path.samefile(path, out):
                raise InputError.at(str(out), "is one of the inputs (it would be replaced by their trajectories); "
                                              "choose another --out")


class Converted(NamedTuple):
    """An episode made a trajectory: its line of output, and what the summary counts of it."""

    id: str
    where: str               # `file:line` or `file record N`: where the episode was read, for messages
    line: int | None
    record: str | int
    data: bytes              # the trajectory/1 JSON line
    steps: int
    logged: str | None       # its instance, when it is kept as text (env logged)
    unreadable: list[int]    # the steps whose output names no action


class Failed(NamedTuple):
    """A record that could not be converted, or what ended its file early (nothing after it there is read)."""

    problems: list[Problem | str]


def _converted(item: Episode | Failed, adapter: Adapter, path: Path, options: ConvertOptions,
               readers: dict[str, ActionReader], name: str) -> Converted | Failed:
    """One episode of the input converted, or its problems."""
    if isinstance(item, Failed):
        return item
    try:
        trajectory = to_trajectory(item, adapter, path, options, readers, name=name)
    except InputError as exc:
        return Failed(exc.problems)
    steps = trajectory["steps"]
    where = f"{name}:{item.line}" if item.line is not None else f"{name} record {item.record}"
    return Converted(trajectory["id"], where, item.line, item.record, dumps_line(trajectory), len(steps),
                     trajectory["instance"] if trajectory.get("env") == LOGGED else None,
                     [t for t, step in enumerate(steps) if step["action"] is None])


def _take(result: Converted | Failed, report: ConvertReport, seen: dict[str, str], handle: IO[bytes],
          options: ConvertOptions, shown: Mapping[Path, str], name: str) -> None:
    """Write a converted episode and count it; or, for a problem (a bad record, an id made twice), stop the run
    on it, or skip it with --skip-invalid. The one place each result of a run is judged, in input order."""
    if isinstance(result, Converted):
        first = seen.get(result.id)
        if first is None:   # (two records of one file may share a label: where, not which one, is remembered)
            seen[result.id] = result.where
            handle.write(result.data)
            _count(report, result)
            return
        result = Failed(bad_record(name, f"trajectory id {result.id!r} was already made from {first}; ids must be "
                                         "unique", line=result.line, record=result.record, field="id").problems)
    exc = _renamed(InputError(result.problems), shown)
    if not options.skip_invalid:
        raise exc
    report.skipped.extend(p if isinstance(p, Problem) else Problem(name, None, None, str(p)) for p in exc.problems)


def _count(report: ConvertReport, converted: Converted) -> None:
    report.trajectories += 1
    report.steps += converted.steps
    if converted.logged is not None:
        report.logged += 1
        report.logged_example = report.logged_example or converted.logged
    report.unreadable += len(converted.unreadable)
    for t in converted.unreadable[:SHOWN_LOCATIONS - len(report.unreadable_at)]:
        report.unreadable_at.append(f"{converted.where} step {t}")


def _renamed(exc: InputError, shown: Mapping[Path, str]) -> InputError:
    """The error with a spooled standard input named `-` rather than by its temporary file."""
    names = {str(path): name for path, name in shown.items()}
    if not names:
        return exc
    return InputError([p._replace(file=names.get(p.file, p.file)) if isinstance(p, Problem) else p
                       for p in exc.problems])


@contextlib.contextmanager
def _stdin_spooled(inputs: Sequence[Path]) -> Iterator[tuple[list[Path], dict[Path, str]]]:
    """The inputs with `-` replaced by a temporary copy of standard input (adapters read files, some twice), named
    by the ending its content suggests (formats are told apart partly by it); and that copy's display name."""
    if not any(str(p) == STDIN for p in inputs):
        yield list(inputs), {}
        return
    read_stdin_once(inputs)
    with tempfile.TemporaryDirectory(prefix="eebench-stdin-") as tmp:
        spool = Path(tmp) / "stdin"
        with spool.open("wb") as handle:
            _spool(sys.stdin.buffer, handle)
        with spool.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
        named = spool.rename(spool.with_suffix(_suffix_for(head)))
        yield [named if str(p) == STDIN else p for p in inputs], {named: STDIN}


def _spool(source: IO[bytes], handle: IO[bytes]) -> None:
    """Copy standard input to `handle`, refused once a stretch without a line end is longer than a whole-document
    log may be (records.MAX_DOCUMENT_BYTES; JSON Lines' lines are shorter still): `- < /dev/zero` filled the
    disk with its copy, then blamed the output."""
    limit = records.MAX_DOCUMENT_BYTES
    stretch = 0   # bytes since the last line end
    while chunk := source.read(1 << 20):
        end = chunk.rfind(b"\n")
        stretch = len(chunk) - end - 1 if end >= 0 else stretch + len(chunk)
        if stretch > limit:
            raise InputError.at(STDIN, f"more than {size_text(limit)} without a line end, more than an agent log "
                                       f"may hold; expected a log (one JSON document of at most "
                                       f"{size_text(limit)}, or JSON Lines)")
        handle.write(chunk)


def _suffix_for(head: bytes) -> str:
    """`.jsonl` for JSON lines (an object per line, more than one), `.json` for one JSON document (a single line
    too: some formats are read from .json only), `.eval` for a zip (the one archive an adapter reads: inspect's
    logs, which it knows by that ending), `.txt` for anything else."""
    if head.startswith(b"PK\x03\x04"):
        return ".eval"
    text = head.lstrip()
    if text[:1] == b"[":
        return ".json"
    if text[:1] == b"{":
        first, _, rest = text.partition(b"\n")
        return ".jsonl" if first.rstrip().endswith(b"}") and rest.lstrip()[:1] == b"{" else ".json"
    return ".txt"


@contextlib.contextmanager
def _output(out: Path) -> Iterator[IO[bytes]]:
    """The output file, written atomically; `-` is standard output, written only once the whole run succeeded."""
    if str(out) != STDIN:
        with atomic_file(out, "wb", OUTPUT_BUFFER) as handle:
            yield handle
        return
    with tempfile.TemporaryFile(buffering=OUTPUT_BUFFER) as handle:
        yield handle
        handle.seek(0)
        shutil.copyfileobj(handle, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _items(path: Path, adapter: Adapter, span: Span | None = None) -> Iterator[Episode | Failed]:
    """The adapter's episodes of one file (or of a `span` of a JSON Lines file), then, as a Failed, whatever ended
    the file early (a cut-off archive, a truncated array, a line too long), so `--skip-invalid` keeps what was
    read before it. A log with no episode is an error too (an empty file is refused before anything is read: see
    `_plan`; a file read in pieces is judged whole, by `_Pool.converted`)."""
    count = 0
    try:
        for item in adapter.episodes(path) if span is None else adapter.line_episodes(path, span):
            count += 1
            yield Failed(item.problems) if isinstance(item, InputError) else item
    except InputError as exc:
        yield _Ended(exc.problems)
        return
    except RecursionError:
        yield _Ended(InputError.at(str(path), "nested too deeply to read (is this a log?)").problems)
        return
    if not count and span is None:
        yield _no_episode(path, adapter)


class _Ended(Failed):
    """A Failed that ended its file: the pieces after it are not read."""


def _no_episode(path: Path, adapter: Adapter) -> _Ended:
    return _Ended(InputError.at(str(path), f"holds no {adapter.name} episode").problems)


class _Pool:
    """Worker processes converting pieces of large JSON Lines files, started when a file first needs them.

    A file is cut into pieces at line starts (`eebench.pieces`); the workers convert up to two pieces each ahead of
    the one this process writes, and this process judges their results in input order (`_take`), as it judges its
    own: the output, the report and the first problem raised are one process's. A problem that ends a file (a line
    too long) drops the pieces after it, as one process reads no further."""

    def __init__(self, stack: contextlib.ExitStack, workers: int):
        self._stack, self.workers = stack, workers
        self._executor: ProcessPoolExecutor | None = None

    def pieces(self, path: Path, adapter: Adapter) -> Iterator[Span] | None:
        """The pieces `path` is converted in; None when this process converts it whole (one worker, a small file,
        a format or layout whose lines are not episodes read alone)."""
        if (self.workers < 2 or not adapter.lines_are_episodes or path.stat().st_size < PARALLEL_FROM_BYTES
                or not is_json_lines(path)):
            return None
        return line_spans(path, PIECE_BYTES)

    def converted(self, pieces: Iterator[Span], path: Path, adapter: Adapter, options: ConvertOptions, name: str,
                  progress: Callable[[int], None] | None) -> Iterator[Converted | Failed]:
        """The results of one file's pieces, in input order."""
        from concurrent.futures.process import BrokenProcessPool

        executor = self._started()
        ahead: collections.deque[tuple[Span, Future[tuple[list[Converted | Failed], int]]]] = collections.deque()

        def submit() -> None:
            span = next(pieces, None)
            if span is not None:
                ahead.append((span, executor.submit(_convert_piece, adapter, path, span, options, name)))

        for _ in range(2 * self.workers):
            submit()
        episodes = 0
        while ahead:
            span, future = ahead.popleft()
            try:
                results, read = future.result()
            except BrokenProcessPool:
                raise EebenchError("a converting worker process died (killed, or out of memory?); nothing was "
                                   "written") from None
            submit()
            episodes += read
            yield from results
            if progress:
                progress((path.stat().st_size if span.end is None else span.end) - span.start)
            if results and isinstance(results[-1], _Ended):
                for _, later in ahead:
                    later.cancel()
                return
        if not episodes:
            yield _no_episode(path, adapter)

    def _started(self) -> ProcessPoolExecutor:
        from concurrent.futures import ProcessPoolExecutor

        if self._executor is None:   # (Ctrl-C is this process's to handle: the workers ignore it, and are stopped)
            self._executor = ProcessPoolExecutor(self.workers, mp_context=_start_method(),
                                                 initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN))
            self._stack.callback(self._executor.shutdown, wait=True, cancel_futures=True)
        return self._executor


def _convert_piece(adapter: Adapter, path: Path, span: Span, options: ConvertOptions,
                   name: str) -> tuple[list[Converted | Failed], int]:
    """A worker's task: a piece of a file converted as one process converts those lines; and its episodes read."""
    readers = options.readers()
    results = [_converted(item, adapter, path, options, readers, name) for item in _items(path, adapter, span)]
    return results, sum(not isinstance(result, _Ended) for result in results)


def _start_method() -> multiprocessing.context.BaseContext:
    """fork where this process has one thread (the command line's): a worker starts in milliseconds. Elsewhere (a
    notebook, a server, whose other threads may hold locks a forked child would inherit) forkserver: a fresh
    process that imports this module once, then forks each worker from itself (0.15 s more)."""
    import multiprocessing

    if sys.platform == "linux" and _threads() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" not in multiprocessing.get_all_start_methods():   # (Windows)
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


def _threads() -> int:
    """This process's threads, as the OS counts them (native ones too, which `threading` does not see)."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0   # unknown: not taken for one


def require_content(path: Path, name: str, expected: str) -> None:
    """The one rule for empty inputs of convert and grade: a file with nothing but white space is an error naming
    it (even with --skip-invalid, like a missing file), never a run that succeeds with nothing."""
    with open_input(path) as handle:
        while chunk := handle.read(1 << 16):
            if chunk.strip():
                return
    raise InputError.at(name, f"is empty; expected {expected}")


def _expand(inputs: Sequence[Path], shown: Mapping[Path, str]) -> list[tuple[Path, bool]]:
    """Files as given, and the files of given folders (recursively, sorted, hidden names left out); each with
    whether it came from a folder (such a file no adapter reads is left out, not an error)."""
    files: list[tuple[Path, bool]] = []
    for path in inputs:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file()
                           and not any(part.startswith(".") for part in p.relative_to(path).parts))
            if not found:
                raise InputError.at(str(path), "is a folder with no files in it")
            files.extend((p, True) for p in found)
        elif not path.exists():
            raise InputError.at(shown.get(path, str(path)), f"no such file or folder{near_path(path)}")
        elif not path.is_file():
            raise InputError.at(str(path), "is not a file")
        else:
            files.append((path, False))
    return files


def _plan(inputs: Sequence[Path], fmt: str, report: ConvertReport,
          shown: Mapping[Path, str]) -> list[tuple[Path, Adapter]]:
    """Each input file with its adapter, all decided before anything is written."""
    chosen = None if fmt == "auto" else get_adapter(fmt)
    plan = []
    for path, in_folder in _expand(inputs, shown):
        if in_folder:
            adapter = _folder_member(path, chosen)
            if adapter is None:
                report.ignored.append(str(path))
                continue
        else:
            require_content(path, shown.get(path, str(path)), f"{_a(chosen.name)} log" if chosen else "an agent log")
            adapter = chosen or _renamed_detect(path, shown)
        plan.append((path, adapter))
    if not plan:
        raise InputError.at(", ".join(str(p) for p in inputs), (
            f"no file here reads as {_a(chosen.name)} log; give a file by its path to see why" if chosen else
            "no file here is a log any adapter reads; name the format with --from (see `eebench formats`)"))
    # a file given twice, or two files of one episode (BALROG's .csv and .json), is read once
    read: dict[Path, tuple[Path, Adapter]] = {}
    for path, adapter in plan:
        primary = adapter.primary_file(path)
        read.setdefault(primary.resolve(), (primary, adapter))
    return list(read.values())


def _renamed_detect(path: Path, shown: Mapping[Path, str]) -> Adapter:
    try:
        return detect(path)
    except InputError as exc:
        raise _renamed(exc, shown) from None


def _folder_member(path: Path, chosen: Adapter | None) -> Adapter | None:
    """The adapter for a file found in a folder: the chosen one if it says it reads the file, else the one that
    does (auto); None for an empty file or one no adapter reads (a README beside the logs)."""
    with open_input(path) as handle:
        head = handle.read(HEAD_BYTES)
    if not head.strip():
        return None
    if chosen is not None:
        return chosen if chosen.named_handles(path, head) else None
    claims = claiming(path, head)
    if not claims:
        return None
    return detect(path, head, claims)  # one, or the canonical one, or the ambiguity named as for a file given alone


def name_stem(name: str) -> str:
    """A log file's name without its format's endings: `claude-3.5-sonnet__x.json` -> `claude-3.5-sonnet__x`."""
    stem = name
    while (dot := stem.rfind(".")) > 0 and stem[dot:].lower() in LOG_SUFFIXES:
        stem = stem[:dot]
    return stem


def from_name(pattern: re.Pattern[str], name: str) -> dict[str, str] | None:
    """What `--instance-from-name` reads from a file's name (without its endings): `instance` (the group of that
    name, else every group joined by '/'), and agent labels from groups named after them; None when it does not
    match."""
    match = pattern.search(name_stem(name))
    if match is None:
        return None
    named = {k: v for k, v in match.groupdict().items() if v is not None}
    labels = {k: v for k, v in named.items() if k in AGENT_LABELS}
    if "instance" in named:
        return {**labels, "instance": named["instance"]}
    label_groups = {pattern.groupindex[k] for k in AGENT_LABELS if k in pattern.groupindex}
    parts = [g for i, g in enumerate(match.groups(), start=1) if g and i not in label_groups]
    return {**labels, "instance": "/".join(parts)}


class Placed(NamedTuple):
    """Where a trajectory was played: its instance, its env when it has to say (logged), the sha256 a bench
    promises, labels read from the file's name, and the world kind whose vocabulary its actions read in."""

    instance: str
    env: str | None
    sha256: str | None
    labels: dict[str, str]
    kind: str | None = None


_VOCABULARY_OF = {LOGGED: "text", "grid_dag": "grid", "rooms": "rooms"}  # a world kind's action words


def place(episode: Episode, path: Path, name: str, options: ConvertOptions) -> Placed:
    """The instance of an episode, and whether it is graded: see the module's docstring."""
    labels: dict[str, str] = {}
    where = {"line": episode.line, "record": episode.record}
    if options.instance:
        instance = options.instance
    elif options.instance_field:
        value = dig(episode.fields, options.instance_field)
        if value is None:
            raise bad_record(name, f"--instance-field {options.instance_field}: no such field in this record"
                                   f"{_close_path(episode.fields, options.instance_field)}", **where)
        if isinstance(value, (bool, dict, list)):
            raise bad_record(name, f"--instance-field {options.instance_field}: expected a string or a number, "
                                   f"found {json_type(value)}", **where)
        instance = str(value)
    elif options.instance_from_name:
        pattern = options.name_pattern()
        read = from_name(pattern, Path(name).name)  # type: ignore[arg-type]
        if read is None and name != STDIN:   # the folders may name it (Harbor: <task>__<id>/agent/trajectory.json)
            read = from_name(pattern, name)  # type: ignore[arg-type]
        if read is None:
            raise InputError.at(name, f"--instance-from-name: '{options.instance_from_name}' matches neither "
                                      f"{name_stem(Path(name).name)!r} nor the file's path")
        instance = read.pop("instance")
        labels = read
    else:
        # the log's own task, else the file's name (an ATIF session, a plain list of actions, standard input)
        instance = episode.task or ("" if name == STDIN else name_stem(path.name))
    known = options.known or KnownInstances()
    env = options.env
    if env is None and not options.named() and known.bench is None and not (instance and known.knows(instance)):
        env = LOGGED  # with --bench the user means to grade: an unknown instance is refused below, not kept as text
    if env == LOGGED:
        if not instance:
            raise bad_record(name, "no instance: the log names no task; give --instance ID", **where)
        return Placed(instance, LOGGED, None, labels, LOGGED)
    if known.bench is None:
        suite = known.unknown_shipped(instance)
        if suite is not None:
            raise bad_record(name, f"instance {instance!r} is not in the shipped suite {suite}"
                                   f"{known.close_to(instance)}; give --bench for instances of your own", **where)
        _check_kind(env, instance, known, name, where)
        return Placed(instance, env, None, labels, env or known.env(instance))
    if not known.knows(instance):
        raise bad_record(name, f"instance {instance!r} is not in {known.where}{known.close_to(instance)}; name it "
                               "with --instance ID, --instance-field PATH or --instance-from-name REGEX", **where)
    _check_kind(env, instance, known, name, where)
    return Placed(instance, env, known.sha256(instance), labels, known.env(instance))


def _check_kind(env: str | None, instance: str, known: KnownInstances, name: str, where: dict[str, Any]) -> None:
    """--env naming another world than a known instance's kind: `grade` would refuse the trajectory (and, without a
    bench, its actions would be read in the wrong world's words), so it is refused here, before anything is
    written."""
    kind = known.env(instance) if env is not None else None
    if kind is not None and kind != env:
        raise bad_record(name, f"--env {env} does not fit instance {instance!r}, a {kind} instance in {known.where}; "
                               f"leave --env out (the instance's kind decides) or give --env {kind}", **where,
                         field="env")


def _close_path(fields: Any, path: str) -> str:
    """' (did you mean X?)' naming the record's path closest to `path`: followed as far as it leads, then the close
    key at the level where it stops (`metadata.instanse`: `metadata.instance`)."""
    parts = path.replace("[", ".").replace("]", "").split(".")
    for depth in range(len(parts)):
        value = dig(fields, ".".join(parts[:depth]))
        if not isinstance(value, Mapping) or dig(value, parts[depth]) is not None:
            continue
        close = did_you_mean(parts[depth], [str(k) for k in value])
        return close.replace("'", f"'{'.'.join(parts[:depth])}.", 1) if close and depth else close
    return ""


def step_documents(logged_steps: Iterable[LoggedStep], reader: ActionReader) -> tuple[list[dict[str, Any]], int]:
    """The trajectory's step documents of an episode's logged steps, their actions read by `reader`; and how many
    name no action."""
    steps: list[dict[str, Any]] = []
    unreadable = 0
    from_call, from_text = reader.from_call, reader.from_text
    for logged in logged_steps:
        call, raw = logged.call, logged.raw
        if call is not None:
            action = from_call(*call)
            if raw is None:
                raw = render_call(*call, verbatim=True)
        elif logged.action is not None:
            action = reader.normalize(logged.action)
            # the log's own word is kept when the vocabulary changed it (`North` read as `up`)
            if raw is None and action != logged.action:
                raw = logged.action
        else:
            action = from_text(logged.text)
            if raw is None:
                raw = logged.text
        if action is None:
            unreadable += 1
        step: dict[str, Any] = {"action": action}
        if raw is not None:
            step["raw"] = raw
        # written out field by field (STEP_FIELDS, in order): this loop is the hot path of every conversion
        if logged.reasoning is not None:
            step["reasoning"] = logged.reasoning
        if logged.observation is not None:
            step["observation"] = logged.observation
        if logged.tokens_in is not None:
            step["tokens_in"] = logged.tokens_in
        if logged.tokens_out is not None:
            step["tokens_out"] = logged.tokens_out
        if logged.latency_ms is not None:
            step["latency_ms"] = logged.latency_ms
        if logged.timestamp is not None:
            step["timestamp"] = logged.timestamp
        if logged.state is not None:
            step["state"] = logged.state
        steps.append(step)
    return steps, unreadable


def to_trajectory(episode: Episode, adapter: Adapter, path: Path, options: ConvertOptions,
                  readers: dict[str, ActionReader], name: str | None = None) -> dict[str, Any]:
    """The canonical trajectory/1 document of one episode."""
    name = name or str(path)
    if episode.document is not None:
        return _relabel(episode.document, episode, path, name, options)
    placed = place(episode, path, name, options)
    reader = readers[_VOCABULARY_OF.get(placed.kind, "grid")]
    if episode.step_documents is not None:   # a fast path's own, held to the same output by a property test
        steps, unreadable = episode.step_documents(reader)
    else:
        steps, unreadable = step_documents(episode.steps, reader)
    if "latency_ms" not in adapter.never_carries:
        _check_latencies(steps, episode, name)
    agent = {label: value for label in AGENT_LABELS
             if (value := options.labels.get(label) or placed.labels.get(label) or episode.agent.get(label))
             is not None}
    trajectory: dict[str, Any] = {"eebench": "trajectory/1", "id": episode.id, "instance": placed.instance}
    if placed.sha256 is not None:
        trajectory["instance_sha256"] = placed.sha256
    if placed.env is not None:
        trajectory["env"] = placed.env
    if agent:
        trajectory["agent"] = agent
    trajectory["steps"] = steps
    trajectory["source"] = {"format": adapter.name, "file": name, "record": episode.record,
                            "adapter_version": adapter.version, "missing_fields": sorted(adapter.never_carries),
                            "unreadable_actions": unreadable}
    if episode.meta:
        trajectory["meta"] = episode.meta
    return trajectory


def _check_latencies(steps: list[dict[str, Any]], episode: Episode, name: str) -> None:
    """Refuse a step latency beyond the trajectory schema's bounds (a log's clock gone wrong: 1e13 s of execution
    time, a span ending in another millennium): written, it made a file that `validate` and `grade` refuse."""
    lowest, highest = 0, usage_bound("latency_ms")
    for i, step in enumerate(steps):
        latency = step.get("latency_ms")
        if latency is not None and not lowest <= latency <= highest:
            raise bad_record(name, f"expected a latency of at most 10^15 ms (the trajectory schema's bound), "
                                   f"{found(latency)}" if latency > highest else
                                   f"expected a latency >= 0 ms, {found(latency)}",
                             line=episode.line, record=episode.record, field=f"steps[{i}].latency_ms")


def _relabel(document: dict[str, Any], episode: Episode, path: Path, name: str,
             options: ConvertOptions) -> dict[str, Any]:
    """An already canonical trajectory, with only what the user asked for changed: instance and labels (its env
    and actions are as the document says). With --bench, its instance must be there, and its sha256 is added."""
    known = options.known
    if known is not None and known.bench is not None and not options.named() and document.get("env") != LOGGED:
        if not known.knows(document["instance"]):
            raise bad_record(name, f"instance {document['instance']!r} is not in {known.where}"
                                   f"{known.close_to(document['instance'])}; name it with --instance ID",
                             line=episode.line, record=episode.record, field="instance")
        if "instance_sha256" not in document:
            document = {**document, "instance_sha256": known.sha256(document["instance"])}
    if not (options.named() or options.labels):
        return document
    document = dict(document)
    placed = place(episode, path, name, options) if options.named() else None
    if placed is not None and placed.instance != document["instance"]:
        document["instance"] = placed.instance
        document.pop("instance_sha256", None)  # it named the old instance
        if placed.sha256 is not None:
            document["instance_sha256"] = placed.sha256
    labels = {**(placed.labels if placed else {}), **options.labels}
    if labels:
        document["agent"] = {**(document.get("agent") or {}), **labels}
    return document


def _a(name: str) -> str:
    """A format's name after its article: `a balrog`, `an atif`."""
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"
