"""The metric-family seam: which world kinds a family grades, which columns it fills, and the registry.

A family is a pure function of (instance, trajectory) to column arrays, split in three so that it can be fast:
`tables` precomputes once per instance what every trajectory of that instance shares, `replay` grades one
trajectory (raising `InputError` for bad input, so one bad record can be skipped alone), and `columns` turns the
replays of a chunk into columns at once (NumPy, not row by row). Grading a trajectory runs every family whose
`envs` holds its world's kind; the store (store.py) is the one place that knows DuckDB and its column types.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple, Protocol

import numpy as np


class Trajectory(NamedTuple):
    """What a family reads of one trajectory: its checked document, where it was read (for messages), and the
    replays of the families that graded it before, by name (so a family adding to a world's own family replays
    the world's rules once: coverage reads the cells the Park replay entered)."""

    doc: dict[str, Any]
    file: str
    line: int | None
    earlier: Mapping[str, Any] | None = None


# A chunk of more graded steps than this has its step columns made this many rows at a time, never whole (one
# trajectory of millions of steps): DuckDB's row group size (store.ROW_GROUP_ROWS), so a window is one insert.
WINDOW_STEPS = 122_880


class StepWindows(NamedTuple):
    """A chunk's step columns made a window of rows at a time: `make(a, b)` gives rows a..b-1 of the columns a
    dict of whole columns would hold. A family returns it for a chunk of more than WINDOW_STEPS graded steps, so
    memory follows the window, not the trajectory."""

    rows: int
    make: Callable[[int, int], dict[str, np.ndarray]]

    def windows(self) -> Iterator[dict[str, np.ndarray]]:
        for a in range(0, self.rows, WINDOW_STEPS):
            yield self.make(a, min(a + WINDOW_STEPS, self.rows))

    def map(self, change: Callable[[dict[str, np.ndarray]], dict[str, np.ndarray]]) -> StepWindows:
        """The same windows, each passed through `change`."""
        make = self.make
        return StepWindows(self.rows, lambda a, b: change(make(a, b)))


class Coded:
    """A text column as codes into its words: row i is words[codes[i]] (a word may be None: NULL). For columns
    that repeat a few texts (a trajectory's id on each of its steps, the four move words): the store has DuckDB
    look each row's word up in C, where a column of Python strings is read string by string under Python's lock,
    which the grading thread wants back (store.py, `_insert`)."""

    __slots__ = ("codes", "words")

    def __init__(self, codes: np.ndarray, words: np.ndarray):
        self.codes, self.words = codes, words

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows: slice) -> Coded:
        return Coded(self.codes[rows], self.words)

    def values(self) -> np.ndarray:
        """The column as Python objects."""
        return self.words[self.codes]

    def compact(self) -> Coded:
        """The same rows with only the words they use (a remainder kept for a later insert)."""
        used, codes = np.unique(self.codes, return_inverse=True)
        return Coded(codes.astype(np.int32), self.words[used])


class WordList:
    """The words of a Coded column being made, added a part at a time."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []
        self.size = 0

    def add(self, words: Sequence[str | None]) -> int:
        """Add words; the code of the first of them."""
        code = self.size
        self.parts.append(np.fromiter(words, dtype=object, count=len(words)))
        self.size += len(words)
        return code

    def coded(self, codes: np.ndarray) -> Coded:
        return Coded(codes, np.concatenate(self.parts) if self.parts else np.empty(0, dtype=object))


def concatenated(parts: Sequence[np.ndarray | Coded]) -> np.ndarray | Coded:
    """Parts of one column as one (Coded parts as Coded: each part's codes moved past the words before it)."""
    if not isinstance(parts[0], Coded):
        return parts[0] if len(parts) == 1 else np.concatenate(parts)
    if len(parts) == 1:
        return parts[0]
    sizes = np.fromiter((len(p.words) for p in parts), dtype=np.int64, count=len(parts))  # type: ignore[union-attr]
    before = (np.cumsum(sizes) - sizes).tolist()
    return Coded(np.concatenate([p.codes + np.int32(b) for p, b in zip(parts, before)]),  # type: ignore[union-attr]
                 np.concatenate([p.words for p in parts]))  # type: ignore[union-attr]


StepColumns = Mapping[str, np.ndarray] | StepWindows


def step_columns_of(rows: int, make: Callable[[int, int], dict[str, np.ndarray]]) -> StepColumns:
    """A chunk's step columns: whole (`make(0, rows)`) up to WINDOW_STEPS rows, else StepWindows."""
    return make(0, rows) if rows <= WINDOW_STEPS else StepWindows(rows, make)


def step_parts(steps: StepColumns) -> Iterator[Mapping[str, np.ndarray]]:
    """The columns whole, or window by window."""
    return steps.windows() if isinstance(steps, StepWindows) else iter((steps,))


def step_rows(steps: StepColumns) -> int:
    return steps.rows if isinstance(steps, StepWindows) else len(steps["trajectory"])


def joined_steps(parts: Sequence[StepColumns]) -> StepColumns:
    """Several families' step columns of one chunk as one: a dict, or windows when any family's are windows."""
    if not any(isinstance(part, StepWindows) for part in parts):
        return {name: values for part in parts for name, values in part.items()}  # type: ignore[union-attr]

    def make(a: int, b: int) -> dict[str, np.ndarray]:
        return {name: values for part in parts
                for name, values in (part.make(a, b) if isinstance(part, StepWindows)
                                     else {name: values[a:b] for name, values in part.items()}).items()}
    return StepWindows(step_rows(parts[0]), make)


class FamilyColumns(NamedTuple):
    """A chunk's results: `trajectories` has one value per replay (in order); `steps`, `episodes` and
    `checkpoints` one row per step, episode or checkpoint of a trajectory, with the column `trajectory` giving the
    replay's position in the chunk. `steps` may come as StepWindows (a chunk of more than WINDOW_STEPS steps)."""

    trajectories: Mapping[str, Sequence[Any] | np.ndarray]
    steps: StepColumns | None = None
    episodes: Mapping[str, np.ndarray] | None = None
    checkpoints: Mapping[str, np.ndarray] | None = None


class MetricFamily(Protocol):
    """A module of the evaluator that grades some world kinds and fills some columns."""

    name: str                      # e.g. "park"
    version: str                   # the metric version recorded on every row it grades, e.g. "park/1"
    envs: frozenset[str]           # the world kinds (instance `env`) it grades
    fills: Mapping[str, tuple[str, ...]]   # table -> the columns it fills (the store defines them all)

    def tables(self, instance: Any) -> Any:
        """What every trajectory of `instance` shares (distances, solver caches): built once per instance."""
        ...

    def replay(self, tables: Any, instance: Any, trajectory: Trajectory) -> Any:
        """Grade one trajectory; InputError (located at the trajectory) when it cannot be graded."""
        ...

    def columns(self, replays: Sequence[Any]) -> FamilyColumns:
        """Columns of many replays at once (step columns by `step_columns_of`, so a long chunk's are windows)."""
        ...

    # Optional: `configure(checkpoints)` returns the family as a grading run uses it (coverage: the run's
    # checkpoint sets); `adds_to_others = True` says it grades alongside the world's own family and records its
    # version in a column of its own, so a row's `metric_version` keeps naming the others.


@functools.cache
def registered() -> tuple[MetricFamily, ...]:
    """Every metric family, in the order their columns are filled (imported on first use: families import this
    module for its types)."""
    from eebench.evaluator.coverage import FAMILY as COVERAGE
    from eebench.evaluator.gaps import FAMILY as GAPS
    from eebench.evaluator.park import FAMILY as PARK

    return (PARK, GAPS, COVERAGE)


@functools.cache
def families_for(env: str) -> tuple[MetricFamily, ...]:
    """The families that grade a world kind, in registry order (none: the kind is not graded yet)."""
    return tuple(f for f in registered() if env in f.envs)


@functools.cache
def metric_version(families: tuple[MetricFamily, ...]) -> str:
    """The versions of the families that graded a row, as one value (e.g. `park/1`, or `a/1+b/2`); a family that
    adds to others is left out unless it graded the row alone."""
    own = tuple(f for f in families if not getattr(f, "adds_to_others", False)) or families
    return "+".join(f.version for f in own)
