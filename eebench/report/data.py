"""What the report and the figures show, read once from a results file: summaries with intervals, and replays.

Everything tolerates older and newer results files: a metric column that is absent, or NULL in every selected
row, is left out (so gaps and ECC appear when the families that fill them have run).
"""

from __future__ import annotations

import base64
import math
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, NamedTuple

import duckdb
import numpy as np
import orjson

from eebench.errors import InputError, near_path
from eebench.evaluator.store import (READ_ONLY_CONFIG, STORAGE, VIEW_SQL, duckdb_message, refuse_newer_schema,
                                     results_file_problem)
from eebench.report.stats import Estimate, Fit, bootstrap_mean, group_seed, least_squares

GROUP_KEYS = ("agent_name", "model", "prompt", "harness", "metric_version")   # as the view agent_summary groups
TEXT_FIELDS = ("observation", "raw", "reasoning")
MAX_TEXT_CHARS = 4000      # per step and field in the replay: a paper-size run stays small enough to mail
LOG_FLOOR = 1e-3           # Figure 1 draws a zero error here (log 0 is -inf), or a decade below a smaller error


class Better(str, Enum):
    """Which way a metric improves (shown as an arrow in the table's header)."""

    HIGHER = "higher"
    LOWER = "lower"


class Metric(NamedTuple):
    """A per-episode column of `trajectories` the report averages over episodes (with a bootstrap interval)."""

    column: str
    label: str
    view_column: str | None   # its mean in the view agent_summary, where the view has it
    better: Better


METRICS = (
    Metric("success", "success rate", "success_rate", Better.HIGHER),
    Metric("explore_error", "exploration error", "mean_explore_error", Better.LOWER),
    Metric("exploit_error", "exploitation error", "mean_exploit_error", Better.LOWER),
    # rooms worlds (Grams et al.), from the gaps family: gaps of the last episode, coverage over the trajectory
    Metric("total_gap_last", "total gap", None, Better.LOWER),
    Metric("explore_gap_last", "exploration gap", None, Better.LOWER),
    Metric("exploit_gap_last", "exploitation gap", None, Better.LOWER),
    Metric("coverage", "coverage", None, Better.HIGHER),
    Metric("redundancy", "redundancy", None, Better.LOWER),
    Metric("sample_efficiency", "sample efficiency (steps)", None, Better.LOWER),   # steps to 90% of R_exploit
    # later families (ECC of Look Before You Leap, EAPO's exploration degree)
    Metric("ecc", "ECC", None, Better.HIGHER),
    Metric("exploration_degree", "exploration degree", None, Better.HIGHER),
)


class Summary(NamedTuple):
    """One row of the report's table: a group of episodes and the mean of each metric with its interval."""

    labels: dict[str, str | None]
    episodes: int
    estimates: dict[str, Estimate]
    mean_steps_success: float | None


class ModelPoint(NamedTuple):
    """Figure 1: one model's success rate and mean errors over all its selected episodes."""

    model: str
    episodes: int
    success: Estimate
    explore: Estimate
    exploit: Estimate


class FigureOne(NamedTuple):
    points: list[ModelPoint]  # every model of the selection, drawn or not (a rooms model has no Park errors)
    explore_fit: Fit | None   # success rate against log10 exploration error, over points with an error > 0
    exploit_fit: Fit | None
    floor: float              # where an error 0 is drawn: below every error > 0, which is drawn where it is fitted

    def drawn(self) -> list[ModelPoint]:
        """The models with a point: a success rate and at least one of the errors (the legend's, by colour)."""
        return [p for p in self.points
                if p.success.value is not None and (p.explore.value is not None or p.exploit.value is not None)]


@dataclass
class Results:
    """The selected rows of a results file and everything computed from them."""

    db: Path
    where: str | None
    meta: dict[str, str]
    columns: dict[str, list[str]]          # table -> its columns, as the file has them
    trajectories: dict[str, np.ndarray]    # selected rows, ordered by trajectory_id
    metrics: list[Metric]                  # those present and not NULL everywhere in the selection
    graded: str | None = None              # the selection's latest graded_at (UTC): the page's date, not the clock's
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.trajectories["trajectory_id"])

    # -- the table ---------------------------------------------------------------------------------------
    def summaries(self, seed: int) -> list[Summary]:
        """One row per agent, model, prompt, harness and metric version, in the order of the view agent_summary."""
        rows = self.trajectories
        keys = [tuple(rows[k][i] for k in GROUP_KEYS) for i in range(len(self))]
        groups: dict[tuple[Any, ...], list[int]] = {}
        for i, key in enumerate(keys):
            groups.setdefault(key, []).append(i)
        out = []
        for key in sorted(groups, key=_null_last):
            index = np.asarray(groups[key])
            name = "\x1f".join("" if k is None else str(k) for k in key)
            estimates = {m.column: bootstrap_mean(rows[m.column][index], group_seed(f"{m.column}\x1f{name}", seed))
                         for m in self.metrics}
            success_steps = rows["n_steps"][index][rows["success"][index] == 1]
            out.append(Summary(dict(zip(GROUP_KEYS, key, strict=True)), len(index), estimates,
                               float(success_steps.mean()) if len(success_steps) else None))
        return out

    # -- the figures -------------------------------------------------------------------------------------
    def model_labels(self) -> np.ndarray:
        """The model of each row, or its agent's name when the log named no model."""
        return np.array([m if m is not None else (a if a is not None else "(unnamed)")
                         for m, a in zip(self.trajectories["model"], self.trajectories["agent_name"], strict=True)],
                        dtype=object)

    def figure_one(self, seed: int) -> FigureOne:
        labels = self.model_labels()
        points = []
        for model in sorted(set(labels)):
            index = np.flatnonzero(labels == model)
            est = {c: bootstrap_mean(self.trajectories[c][index], group_seed(f"{c}\x1fmodel\x1f{model}", seed))
                   for c in ("success", "explore_error", "exploit_error")}
            points.append(ModelPoint(model, len(index), est["success"], est["explore_error"], est["exploit_error"]))

        def fit(which: str) -> Fit | None:
            pairs = [(np.log10(getattr(p, which).value), p.success.value) for p in points
                     if getattr(p, which).value is not None and getattr(p, which).value > 0]
            return least_squares(np.array([x for x, _ in pairs]), np.array([y for _, y in pairs])) if pairs else None

        errors = [e.value for p in points if p.success.value is not None   # (the points drawn: see drawn())
                  for e in (p.explore, p.exploit) if e.value is not None and e.value > 0]
        floor = LOG_FLOOR
        if errors and min(errors) <= LOG_FLOOR:   # the power of ten below the smallest error
            floor = 10.0 ** (math.ceil(math.log10(min(errors))) - 1)
        return FigureOne(points, fit("explore"), fit("exploit"), floor)

    def prompt_groups(self, seed: int) -> list[tuple[str, str, int, dict[str, Estimate]]]:
        """Figure 5: per model and prompt, the mean of each metric ((none) where the log named no prompt)."""
        labels, prompts = self._labels_and_prompts()
        out = []
        for model, prompt in self._model_prompts():
            index = np.flatnonzero((labels == model) & (prompts == prompt))
            out.append((model, prompt, len(index), {
                m.column: bootstrap_mean(self.trajectories[m.column][index],
                                         group_seed(f"{m.column}\x1fprompt\x1f{model}\x1f{prompt}", seed))
                for m in self.metrics}))
        return out

    def _labels_and_prompts(self) -> tuple[np.ndarray, np.ndarray]:
        prompts = np.array(["(none)" if p is None else p for p in self.trajectories["prompt"]], dtype=object)
        return self.model_labels(), prompts

    def _model_prompts(self) -> list[tuple[str, str]]:
        return sorted(set(zip(*self._labels_and_prompts(), strict=True)))

    def prompt_model(self) -> str | None:
        """The model Figure 5 shows first: the one with the most prompts (the first by name on a tie)."""
        counts: dict[str, int] = {}
        for model, _ in self._model_prompts():
            counts[model] = counts.get(model, 0) + 1
        return min(counts, key=lambda m: (-counts[m], m)) if counts else None

    # -- rooms worlds (Grams et al.) -----------------------------------------------------------------------
    def episode_rows(self) -> dict[str, np.ndarray]:
        """The `episodes` rows of the selected trajectories, ordered by trajectory and episode (none in older
        files)."""
        have = self.columns.get("episodes", [])
        if "trajectory_id" not in have:
            return {}
        wanted = ["trajectory_id", *(c for c in EPISODE_FIELDS if c in have)]
        con = _connect(self.db)
        try:
            con.register("wanted_ids", {"trajectory_id": np.array(list(self.trajectories["trajectory_id"]),
                                                                   dtype=object)})
            cols = con.execute(f"SELECT {', '.join(wanted)} FROM episodes WHERE trajectory_id IN "
                               "(SELECT trajectory_id FROM wanted_ids) ORDER BY trajectory_id, episode").fetchnumpy()
        except duckdb.Error as exc:
            raise _unreadable(self.db, exc) from None
        finally:
            con.close()
        return {k: (np.ma.filled(np.ma.asarray(v, dtype=np.float64), np.nan) if k not in ("trajectory_id",)
                    else _with_none(v)) for k, v in cols.items()}

    def episodes(self) -> dict[str, list[dict[str, Any]]]:
        """Each trajectory's episodes: returns, gaps and coverage (NaN as None)."""
        rows = self.episode_rows()
        out: dict[str, list[dict[str, Any]]] = {}
        if not rows:
            return out
        names = [c for c in EPISODE_FIELDS if c in rows]
        columns = [[None if v != v else v for v in rows[c].astype(np.float64).tolist()] for c in names]  # NaN: None
        for tid, *values in zip(rows["trajectory_id"].tolist(), *columns):
            out.setdefault(tid, []).append(dict(zip(names, values)))
        return out

    def gaps_by_episode(self, seed: int) -> list[dict[str, Any]]:
        """The Grams et al. Figure 2 analogue: per model and episode, the mean agent return, exploration gap and
        coverage over its trajectories, with bootstrap intervals."""
        rows = self.episode_rows()
        if not rows or not len(rows["trajectory_id"]):
            return []
        model_of = dict(zip(self.trajectories["trajectory_id"], self.model_labels(), strict=True))
        models = np.array([model_of[t] for t in rows["trajectory_id"]], dtype=object)
        out = []
        for model, episode in sorted(set(zip(models, rows["episode"].astype(int), strict=True))):
            index = np.flatnonzero((models == model) & (rows["episode"] == episode))
            out.append({"model": model, "episode": int(episode), "n": len(index), **{
                c: bootstrap_mean(rows[c][index], group_seed(f"{c}\x1fepisode\x1f{model}\x1f{episode}", seed))
                for c in ("agent_return", "explore_gap", "coverage") if c in rows}})
        return out

    # -- replays ---------------------------------------------------------------------------------------
    def steps(self, trajectory_ids: list[str] | None = None) -> Iterator[tuple[str, dict[str, np.ndarray]]]:
        """Each selected trajectory's graded steps as columns, in trajectory_id order (one query for all)."""
        wanted = [c for c in STEP_FIELDS if c in self.columns.get("steps", [])]
        con = _connect(self.db)
        try:
            con.register("wanted_ids", {"trajectory_id": np.array(
                list(self.trajectories["trajectory_id"]) if trajectory_ids is None else trajectory_ids,
                dtype=object)})
            cols = con.execute(f"SELECT {', '.join(wanted)} FROM steps WHERE trajectory_id IN "
                               "(SELECT trajectory_id FROM wanted_ids) ORDER BY trajectory_id, t").fetchnumpy()
        except duckdb.Error as exc:
            raise _unreadable(self.db, exc) from None
        finally:
            con.close()
        ids = cols["trajectory_id"]
        if not len(ids):
            return
        cuts = np.flatnonzero(ids[1:] != ids[:-1]) + 1
        bounds = np.concatenate([[0], cuts, [len(ids)]])
        arrays = {k: _with_none(v) for k, v in cols.items()}
        for a, b in zip(bounds[:-1], bounds[1:], strict=True):
            yield str(ids[a]), {k: v[a:b] for k, v in arrays.items()}


STEP_FIELDS = ("trajectory_id", "t", "action", "from_x", "from_y", "to_x", "to_y", "valid", "case_id", "stale",
               "error", "explore_error", "exploit_error", "episode", "room", "ecc", "state", "visit_depth")
EPISODE_FIELDS = ("episode", "n_steps", "agent_return", "exploit_return", "max_return", "total_gap", "explore_gap",
                  "exploit_gap", "coverage")
TRAJECTORY_FIELDS = ("trajectory_id", "instance_id", "instance_sha256", *GROUP_KEYS, "end_reason", "n_steps",
                     "budget", "optimal_steps", "source_file", "source_line", "env", "n_episodes")


def _with_none(values: np.ndarray) -> np.ndarray:
    """A column from DuckDB with its NULLs as None (a masked array's fill value would pass for data)."""
    if not np.ma.isMaskedArray(values):
        return np.asarray(values)
    out = np.array(values.data, dtype=object)
    out[np.ma.getmaskarray(values)] = None
    return out


def _null_last(key: tuple[Any, ...]) -> tuple[Any, ...]:
    """ORDER BY ALL's order: ascending, NULLs last."""
    return tuple((k is None, "" if k is None else k) for k in key)


def _unreadable(db: Path | str, exc: duckdb.Error) -> InputError:
    """A results file DuckDB opened but cannot read (a truncated or damaged block) is bad input, one line: DuckDB's
    IOException was a traceback in `report` and `plot`."""
    return InputError.at(str(db), f"cannot be read as a results file: {duckdb_message(exc)}")


def _connect(db: Path) -> duckdb.DuckDBPyConnection:
    if not db.exists():
        raise InputError.at(str(db), "no such database"
                            + (near_path(db) or " (run `eebench grade ... --db` first)"))
    problem = results_file_problem(db)
    if problem:
        raise InputError.at(str(db), problem)
    try:   # (locked down as `eebench query`: a --where condition can read or write no other file)
        con = duckdb.connect(str(db), read_only=True, config=READ_ONLY_CONFIG)
    except duckdb.Error as exc:
        raise InputError.at(str(db), f"cannot open as a DuckDB database: {duckdb_message(exc)}") from None
    # a file whose view `steps` or `checkpoints` was dropped (the summary views go with DROP VIEW ... in a loop)
    # keeps the rows: they are read through the view's definition, for this connection alone
    try:
        found = {row[0] for row in con.execute("SELECT schema_name || '.' || table_name FROM duckdb_tables() "
                                               "UNION ALL SELECT schema_name || '.' || view_name FROM duckdb_views()"
                                               ).fetchall()}
        for table, sql in VIEW_SQL.items():
            if f"main.{table}" not in found and f"{STORAGE}.{table}" in found:
                con.execute(f"CREATE TEMP VIEW {table} AS {sql}")
    except duckdb.Error as exc:
        con.close()
        raise _unreadable(db, exc) from None
    return con


def _one_condition(con: duckdb.DuckDBPyConnection, where: str) -> None:
    """A --where text that is one condition, not statements of its own or a closing parenthesis that widens it."""
    try:
        whole = len(con.extract_statements(f"SELECT 1 WHERE ({where})")) == 1 and _balanced(where)
    except duckdb.Error as exc:
        raise InputError(f"--where {where!r}: {duckdb_message(exc)}") from None
    if not whole:
        raise InputError(f"--where {where!r}: expected one SQL condition on the table trajectories, e.g. "
                         "\"model = 'gpt-4o' AND n_steps > 10\"")


def _balanced(text: str) -> bool:
    """Parentheses outside quotes that never close more than they opened, and all closed."""
    depth, quote = 0, None
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return False
    return depth == 0 and quote is None


def closest_trajectory_id(db: Path | str, wanted: str) -> str | None:
    """The results file's trajectory id nearest `wanted` in edit distance, for a 'did you mean'."""
    con = _connect(Path(db))
    try:
        found = con.execute("SELECT trajectory_id FROM trajectories ORDER BY levenshtein(trajectory_id, ?), "
                            "trajectory_id LIMIT 1", [wanted]).fetchone()
    except duckdb.Error:   # (a file without the table: load_results says so)
        return None
    finally:
        con.close()
    return found[0] if found else None


def refuse_writing_over(db: Path | str, out: Path | str) -> None:
    """An --out that is the results file itself: the page or figure, moved into place, replaced every grade."""
    try:
        same = os.path.samefile(db, out)
    except OSError:   # (either is missing: nothing to lose; a missing --db is said by load_results)
        return
    if same:
        raise InputError.at(str(out), "is the results file --db reads; choose another --out")


def load_results(db: Path | str, where: str | None = None) -> Results:
    """Read the selected trajectories (`where`: an SQL condition on the table trajectories) of a results file."""
    path = Path(db)
    con = _connect(path)
    try:
        columns: dict[str, list[str]] = {}
        for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                         "WHERE table_schema = 'main' ORDER BY ordinal_position").fetchall():
            columns.setdefault(table, []).append(column)
        missing = [t for t in ("trajectories", "steps") if t not in columns]
        if missing:
            raise InputError.at(str(path), f"is not an eebench results file: no table {' or '.join(missing)}")
        meta = dict(con.execute("SELECT key, value FROM meta").fetchall()) if "meta" in columns else {}
        refuse_newer_schema(path, meta.get("schema_version"), "reads")
        have = columns["trajectories"]
        for table, wanted in (("trajectories", ("trajectory_id", "instance_id", "success", "n_steps")),
                              ("steps", ("trajectory_id", "t")),   # (the columns the queries below order by)
                              ("episodes", ("trajectory_id", "episode"))):   # (when there: older files have none)
            needed = [c for c in wanted if c not in columns.get(table, wanted)]
            if needed:
                raise InputError.at(str(path), f"table {table} has no column {', '.join(needed)}; "
                                               "is it an eebench results file?")
        metric_cols = [m.column for m in METRICS if m.column in have]
        select = [f"{c}" if c in have else f"NULL AS {c}" for c in TRAJECTORY_FIELDS if c not in metric_cols]
        select += [f"{c}::DOUBLE AS {c}" for c in metric_cols]
        sql = f"SELECT {', '.join(select)} FROM trajectories"
        if where:
            _one_condition(con, where)
            sql += f" WHERE ({where})"
        try:
            raw = con.execute(sql + " ORDER BY trajectory_id").fetchnumpy()
            graded = (con.execute(f"SELECT strftime(max(graded_at), '%Y-%m-%d %H:%M UTC') FROM trajectories"
                                  + (f" WHERE ({where})" if where else "")).fetchone()[0]
                      if "graded_at" in have else None)
        except duckdb.Error as exc:   # (with DuckDB's hints: `Candidate bindings: "model"`)
            if not where:   # the file's own columns, of types eebench does not write
                raise _unreadable(path, exc) from None
            raise InputError(f"--where {where!r}: {duckdb_message(exc)}") from None
    except duckdb.Error as exc:   # (the reads before: the columns, meta)
        raise _unreadable(path, exc) from None
    finally:
        con.close()
    rows: dict[str, np.ndarray] = {}
    for name, values in raw.items():
        if name in metric_cols:
            rows[name] = np.ma.filled(np.ma.asarray(values, dtype=np.float64), np.nan)
        else:
            rows[name] = _with_none(values)
    rows["n_steps"] = np.asarray(rows["n_steps"], dtype=np.int64)
    for m in METRICS:   # a metric the file has no column for is NULL in every row
        rows.setdefault(m.column, np.full(len(rows["n_steps"]), np.nan))
    metrics = [m for m in METRICS if m.column in metric_cols and not np.isnan(rows[m.column]).all()]
    if not metrics:  # nothing selected: keep the columns the file has, so the table still shows its header
        metrics = [m for m in METRICS if m.column in metric_cols][:3]
    return Results(path, where, meta, columns, rows, metrics, graded)


# -- replay documents ----------------------------------------------------------------------------------

def encode_block(doc: Any) -> str:
    """A replay as the browser receives it: JSON, deflated (zlib), in base64 (DecompressionStream('deflate'))."""
    return base64.b64encode(zlib.compress(orjson.dumps(doc), 6)).decode("ascii")


def decode_block(text: str) -> Any:
    return orjson.loads(zlib.decompress(base64.b64decode(text)))
