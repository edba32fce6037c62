"""Graded results in DuckDB: the tables (defined once, with their documentation), bulk writes, read-only queries.

Tables `trajectories`, `steps`, `episodes` and `checkpoints` hold one row per graded trajectory, step, episode and
checkpoint of a trajectory, with columns that are NULL where a metric family does not apply; `meta` records the schema and metric versions. A results file
of an older schema is upgraded in place by the next grade, in its transaction (`_upgrade`). Rows of a trajectory
id are replaced, never duplicated, when it is graded again.
Writes are staged as NumPy column batches and reach the results file in one transaction (see ResultStore);
queries run read-only as DuckDB enforces it (see READ_ONLY_CONFIG) and stream; `export` writes tables as files.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import glob
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import duckdb
import numpy as np

from eebench import __version__
from eebench.documents import atomic_directory, special_file
from eebench.errors import (EebenchError, EebenchWarning, InputError, Problem, did_you_mean, near_path, quote,
                            quoted)
from eebench.evaluator.families import Coded, StepColumns, StepWindows, concatenated, registered, step_rows
from eebench.evaluator.park import EXPLOIT_CASES, EXPLORE_CASES, METRIC_VERSION
from eebench.interrupts import CommitGate, interruptible

if TYPE_CHECKING:
    import pyarrow as pa  # only grading workers' parts are Arrow: a one-process grade does not import it

SCHEMA_VERSION = 4  # of the tables below; a change of meaning or layout bumps it (and gets a step in _upgrade)


def _cases(cases: tuple[int, ...]) -> str:
    return ", ".join(map(str, cases))


def _attributed(cases: tuple[int, ...]) -> str:
    return f"(error * (case_id IN ({', '.join(map(str, cases))}))::TINYINT)::TINYINT"


class Column(NamedTuple):
    name: str
    type: str
    doc: str


TRAJECTORY_COLUMNS = (
    Column("trajectory_id", "VARCHAR NOT NULL", "The trajectory's `id`; unique in the table."),
    Column("instance_id", "VARCHAR NOT NULL", "The instance it was played in."),
    Column("instance_sha256", "VARCHAR", "sha256 of the instance's canonical JSON, as graded (NULL for logged)."),
    Column("agent_name", "VARCHAR", "`agent.name` of the trajectory."),
    Column("model", "VARCHAR", "`agent.model`."),
    Column("prompt", "VARCHAR", "`agent.prompt`."),
    Column("harness", "VARCHAR", "`agent.harness`."),
    Column("success", "BOOLEAN", "The goal was achieved within the budget."),
    Column("end_reason", "VARCHAR NOT NULL",
           "`goal` (achieved), `budget` (spent first) or `end_of_log` (the actions ran out first); rooms: "
           "`episodes` (every episode of the instance ended) or `end_of_log`; logged: `end_of_log`."),
    Column("n_steps", "INTEGER NOT NULL", "Graded steps (actions up to the goal or the budget; rooms: of every "
                                          "episode; logged: every step of the log)."),
    Column("ignored_actions", "INTEGER NOT NULL", "Actions after the goal or the budget (rooms: after the world "
                                                  "ended an episode or the last episode): in the log, not graded."),
    Column("invalid_moves", "INTEGER", "Graded steps whose action was inadmissible (the agent stayed); NULL for "
                                       "logged (no rules to judge)."),
    Column("explore_steps", "INTEGER", "Steps in cases 1 and 4 (exploration required)."),
    Column("exploit_steps", "INTEGER", "Steps in cases 2, 3 and 4 (exploitation required)."),
    Column("explore_errors", "INTEGER", "Errors in cases 1 and 4."),
    Column("exploit_errors", "INTEGER", "Errors in cases 2, 3 and 4."),
    Column("explore_error", "DOUBLE", "explore_errors / explore_steps; NULL when there is no such step."),
    Column("exploit_error", "DOUBLE", "exploit_errors / exploit_steps; NULL when there is no such step."),
    Column("metric_version", "VARCHAR NOT NULL",
           f"Version of the metric family that graded the row (now `{METRIC_VERSION}` for grid_dag, `gaps/2` for "
           "rooms, `coverage/1` for logged)."),
    Column("graded_at", "TIMESTAMP NOT NULL", "When it was graded (UTC)."),
    Column("budget", "INTEGER", "The instance's budget."),
    Column("optimal_steps", "INTEGER", "Fewest steps that achieve the goal with full knowledge."),
    Column("nodes_total", "INTEGER", "Nodes of the task DAG."),
    Column("nodes_achieved", "INTEGER", "Nodes achieved by the end of grading."),
    Column("free_cells", "INTEGER", "Free cells of the map."),
    Column("cells_observed", "INTEGER", "Cells observed by the end of grading (the start included)."),
    Column("preset", "VARCHAR", "The generator preset of the instance (`meta.preset`), NULL if hand-made."),
    Column("tokens_in", "BIGINT", "Sum of the steps' `tokens_in` (all steps of the log); NULL if none has it."),
    Column("tokens_out", "BIGINT", "Sum of the steps' `tokens_out`; NULL if none has it."),
    Column("latency_ms", "DOUBLE", "Sum of the steps' `latency_ms`; NULL if none has it."),
    Column("source_file", "VARCHAR NOT NULL", "The file the trajectory was read from."),
    Column("source_line", "INTEGER", "Its line in that file (NULL for a .json file)."),
    Column("bench_name", "VARCHAR", "Name of the published bundle graded against; NULL for a plain folder."),
    Column("bench_version", "VARCHAR", "Version of that bundle."),
    Column("bench_digest", "VARCHAR", "Digest of that bundle."),
    Column("eebench_version", "VARCHAR NOT NULL", "Version of eebench that graded the row."),
    # schema 2: the world kind, and the gaps family of Grams et al. (NULL for grid_dag)
    Column("env", "VARCHAR NOT NULL", "The world kind of the instance (`grid_dag`, `rooms`), or `logged`."),
    Column("n_episodes", "INTEGER", "Episodes played (the last one perhaps cut short by the end of the log)."),
    Column("max_return", "DOUBLE", "R_max: the best return of one episode on the full instance."),
    Column("total_gap_last", "DOUBLE", "total_gap of the last episode played; NULL when R_max = 0."),
    Column("explore_gap_last", "DOUBLE", "explore_gap of the last episode played."),
    Column("exploit_gap_last", "DOUBLE", "exploit_gap of the last episode played."),
    Column("total_gap_mean", "DOUBLE", "Mean of total_gap over the episodes played."),
    Column("explore_gap_mean", "DOUBLE", "Mean of explore_gap over the episodes played."),
    Column("exploit_gap_mean", "DOUBLE", "Mean of exploit_gap over the episodes played."),
    Column("coverage", "DOUBLE", "coverage of the last episode played: rooms known / all rooms."),
    Column("redundancy", "DOUBLE", "Steps whose (room before the step, action stripped and lower-cased) occurred "
                                   "earlier in the trajectory / all steps; NULL without steps."),
    Column("sample_efficiency", "INTEGER",
           "Steps up to the end of the first episode whose R_exploit reaches 90% of the trajectory's largest "
           "R_exploit; NULL when that is 0."),
    # schema 3: the coverage family (ECC of Look Before You Leap, revisits of EAPO), every world kind
    Column("checkpoints_total", "INTEGER", "Checkpoints of the trajectory: those of every checkpoint set that "
                                          "matches its instance (0 when none applies)."),
    Column("checkpoints_hit", "INTEGER", "Those it hit (the initial state's count, after 0 steps)."),
    Column("ecc", "DOUBLE", "Exploration Checkpoint Coverage: checkpoints_hit / checkpoints_total; NULL when no "
                            "checkpoint applies."),
    Column("distinct_states", "INTEGER", "Distinct states visited, the initial state included; NULL for a logged "
                                        "trajectory in which no state is known."),
    Column("exploration_degree", "DOUBLE", "States visited two or more times / distinct_states (EAPO, Appendix "
                                           "D.7.5; rooms: the start room is visited again at each episode's "
                                           "start); NULL when distinct_states is."),
    Column("coverage_version", "VARCHAR", "Version of the coverage family that filled the five columns above, "
                                          "`steps.visit_depth`, `steps.ecc` and `checkpoints` (now `coverage/1`)."),
)
V1_TRAJECTORY_COLUMNS = 36   # the first columns were schema 1's, in this order

STEP_COLUMNS = (
    Column("trajectory_id", "VARCHAR NOT NULL", "The trajectory the step belongs to."),
    Column("t", "INTEGER NOT NULL", "Timestep, from 0: the action at t moves the agent from p(t) to p(t+1)."),
    Column("action", "VARCHAR", "The action as written in the log (NULL when none could be read)."),
    Column("from_x", "SMALLINT", "x (column) of p(t)."),
    Column("from_y", "SMALLINT", "y (row from the top) of p(t)."),
    Column("to_x", "SMALLINT", "x of p(t+1); equals from_x after an inadmissible move."),
    Column("to_y", "SMALLINT", "y of p(t+1)."),
    Column("valid", "BOOLEAN", "The move was admissible (false: obstacle, map edge or not a move word; rooms: not a "
                               "door or ball action that applies); NULL for logged."),
    Column("case_id", "TINYINT",
           "Case of the state at t: 1 explore (no pending node), 2 goal pending, 3 exploit (nothing unobserved), "
           "4 either."),
    Column("n_targets", "INTEGER", "|T(t)|, the size of the target set."),
    Column("gain", "TINYINT", "1 if p(t+1) is a target or strictly closer to one, else 0."),
    Column("progress", "TINYINT", "1 if the step entered an unobserved cell or achieved a pending node."),
    Column("stale", "INTEGER", "Stale score S(t) = c + e + n of the no-progress segment (0 on progress)."),
    Column("error", "TINYINT", "err(t) of Park et al., Eq. 1: 1 for an error."),
    # computed on read from error and case_id (never stored: COMPUTED), from the one definition in park.py
    Column("explore_error", "TINYINT", "1 for an error in case 1 or 4; NULL where `error` is."),
    Column("exploit_error", "TINYINT", "1 for an error in case 2, 3 or 4; NULL where `error` is."),
    # schema 2
    Column("episode", "SMALLINT NOT NULL DEFAULT 0", "The episode of the step, from 0 (0 in single-episode worlds)."),
    Column("room", "VARCHAR", "rooms: the room the agent is in after the step; NULL for grid_dag."),
    Column("state", "VARCHAR",
           "The state after the step: the room id, `x,y` of the cell entered for grid_dag, `logged_state` for "
           "logged (computed on read)."),
    # schema 3: the coverage family
    Column("visit_depth", "INTEGER", "Earlier visits of the step's `state` (EAPO's visitation depth): 0 on its first "
                                     "visit; the initial state counts as one visit before the first step (rooms: "
                                     "the start room at each episode's start). NULL when the state is."),
    Column("ecc", "DOUBLE", "ECC after the step (the curve); NULL when no checkpoint applies."),
    Column("phase", "VARCHAR", "The step's `phase` in the log (`explore` or `act`, Explore-then-Act); NULL if none."),
    Column("logged_state", "VARCHAR", "logged: the state read from the log (the step's `state`, else its set's "
                                      "state regex, else the previous step's); NULL for simulated worlds."),
)
V1_STEP_COLUMNS = 16

EPISODE_COLUMNS = (
    Column("trajectory_id", "VARCHAR NOT NULL", "The trajectory the episode belongs to."),
    Column("episode", "SMALLINT NOT NULL", "The episode i, from 0."),
    Column("n_steps", "INTEGER NOT NULL", "Graded steps of the episode."),
    Column("agent_return", "DOUBLE NOT NULL", "R_agent(i): the reward the agent collected in the episode."),
    Column("exploit_return", "DOUBLE NOT NULL",
           "R_exploit(i): the best return of one episode using the knowledge K(i) after it."),
    Column("max_return", "DOUBLE NOT NULL", "R_max: the best return of one episode on the full instance."),
    Column("total_gap", "DOUBLE", "(R_max - R_agent(i)) / R_max, stored as explore_gap + exploit_gap so that the identity holds exactly (it may differ from the quotient in the last bit of a double); NULL when R_max = 0."),
    Column("explore_gap", "DOUBLE", "(R_max - R_exploit(i)) / R_max; NULL when R_max = 0."),
    Column("exploit_gap", "DOUBLE", "(R_exploit(i) - R_agent(i)) / R_max; NULL when R_max = 0. "
                                    "total_gap = explore_gap + exploit_gap."),
    Column("coverage", "DOUBLE NOT NULL", "Rooms in K(i) / all rooms."),
    Column("solver", "VARCHAR NOT NULL", "The method that solved R_exploit(i): `exhaustive` or `cp-sat`."),
    Column("solver_status", "VARCHAR NOT NULL",
           "`optimal` when R_exploit(i) and R_max are proven optima; `bound` when a time limit was hit (the row is "
           "then not an exact measurement: see the bounds)."),
    Column("exploit_bound", "DOUBLE", "Proven upper bound of R_exploit(i) when its solve hit the time limit; else "
                                      "NULL."),
    Column("max_bound", "DOUBLE", "Proven upper bound of R_max when its solve hit the time limit; else NULL."),
)

CHECKPOINT_COLUMNS = (
    Column("trajectory_id", "VARCHAR NOT NULL", "The trajectory."),
    Column("checkpoint_id", "VARCHAR NOT NULL", "A checkpoint of the trajectory: an explicit id of its set, or one "
                                                "derived by a rule (`node:<id>:discovered`, `node:<id>:achieved`, "
                                                "`cell:<x>,<y>`, `room:<id>`, `ball:<name>`)."),
    Column("hit_after_steps", "INTEGER", "Steps taken when it was first hit (0: in the initial state); NULL if "
                                         "never."),
)

# Schema 4: `steps` and `checkpoints` are views over narrower rows in the schema `storage` (writing their texts was
# about a third of a grade's time): a row names its trajectory, and its action or checkpoint id, by integer keys
# into small tables of those texts, and the view looks each up by position in a list of the table's values (a join
# would not keep the rows' order, which `SELECT * FROM steps` has always had: the order graded). Keys are dense
# from 0 in a results file: a run's keys follow the file's; a key whose rows were replaced or dropped stays,
# unused (its id NULL for a duplicate dropped in its run).
STORAGE = "storage"


class Words(NamedTuple):
    """A text column stored as integer keys into a table of its texts, `storage.<table>` (key, text)."""

    column: str
    key: str
    table: str
    key_type: str
    doc: str

    def lookup(self) -> str:
        """The view's expression of the text."""
        return f"(SELECT list({self.column} ORDER BY {self.key}) FROM {STORAGE}.{self.table})[{self.key} + 1]"

    def columns(self) -> tuple[Column, Column]:
        return (Column(self.key, f"{self.key_type} NOT NULL", "Position in the list the view looks up: dense from 0."),
                Column(self.column, "VARCHAR", self.doc))


TRAJECTORY_IDS = Words("trajectory_id", "trajectory_key", "trajectory_keys", "BIGINT",
                       "The trajectory id; NULL for a key no row uses (a duplicate dropped in its run).")
WORDS = {   # the tables stored narrower, and their texts stored as keys besides the trajectory's
    "steps": (Words("action", "action_key", "actions", "INTEGER", "The action as written in the log (NULL: none "
                                                                  "could be read)."),),
    "checkpoints": (Words("checkpoint_id", "checkpoint_key", "checkpoint_ids", "INTEGER", "The checkpoint id."),),
}
COMPUTED = {"steps": {   # columns the view computes (never stored), from the one definition in park.py
    "explore_error": _attributed(EXPLORE_CASES),
    "exploit_error": _attributed(EXPLOIT_CASES),
    "state": "coalesce(room, logged_state, to_x::VARCHAR || ',' || to_y::VARCHAR)",
}}
_SHOWN = {"steps": STEP_COLUMNS, "checkpoints": CHECKPOINT_COLUMNS}
_VIEWED = {table: {TRAJECTORY_IDS.column: TRAJECTORY_IDS.lookup(), **{w.column: w.lookup() for w in WORDS[table]},
                   **COMPUTED.get(table, {})} for table in WORDS}   # the view's columns not stored as they are
STORAGE_COLUMNS = {table: (Column(TRAJECTORY_IDS.key, "BIGINT NOT NULL", "The row's trajectory: a row of "
                                                                         f"{STORAGE}.{TRAJECTORY_IDS.table}."),
                           *(Column(w.key, w.key_type, f"The row's {w.column}: a row of {STORAGE}.{w.table}.")
                             for w in WORDS[table]),
                           *(c for c in _SHOWN[table] if c.name not in _VIEWED[table])) for table in WORDS}
VIEW_SQL = {table: "SELECT " + ", ".join(f"{_VIEWED[table][c.name]} AS {c.name}" if c.name in _VIEWED[table]
                                         else c.name for c in _SHOWN[table]) + f" FROM {STORAGE}.{table}"
            for table in WORDS}
LOOKUPS = {f"{STORAGE}.{w.table}": w.columns() for w in (TRAJECTORY_IDS, *(w for ws in WORDS.values() for w in ws))}

META_COLUMNS = (
    Column("key", "VARCHAR NOT NULL", "`schema_version`, `metric_version` or `eebench_version`."),
    Column("value", "VARCHAR NOT NULL", "Its value, as text."),
)

# A mean of a DOUBLE column is taken `ORDER BY rowid` (the order graded): a plain avg() adds the values in whatever
# order DuckDB's threads finish their row groups, so past 122,880 rows the same results gave other last digits at
# another thread count, and a --workers grade (another layout of the same rows) other digits than one process.
# Integer means (success_rate, mean_steps_success, ...) are exact sums already.
VIEWS = {
    "agent_summary": (
        "One row per agent, model, prompt, harness and metric version: episodes, success rate, mean exploration "
        "and exploitation error over episodes (the paper's figures), the same pooled over steps, mean steps of "
        "successful episodes.",
        """
        SELECT agent_name, model, prompt, harness, metric_version,
               count(*) AS episodes,
               count(*) FILTER (WHERE success) AS successes,
               avg(success::INTEGER) AS success_rate,
               avg(explore_error ORDER BY rowid) AS mean_explore_error,
               avg(exploit_error ORDER BY rowid) AS mean_exploit_error,
               sum(explore_errors) / nullif(sum(explore_steps), 0) AS pooled_explore_error,
               sum(exploit_errors) / nullif(sum(exploit_steps), 0) AS pooled_exploit_error,
               avg(n_steps) FILTER (WHERE success) AS mean_steps_success,
               avg(n_steps::DOUBLE / optimal_steps ORDER BY rowid) FILTER (WHERE success)
                   AS mean_steps_over_optimal,
               avg(invalid_moves::DOUBLE / nullif(n_steps, 0) ORDER BY rowid) AS invalid_move_rate
        FROM trajectories
        WHERE metric_version LIKE '%park/%'  -- the Park family's rows
        GROUP BY ALL
        ORDER BY ALL
        """),
    "preset_summary": (
        "agent_summary split by generator preset (exploitation demand x DAG size), as in the paper's "
        "Appendix G.",
        """
        SELECT agent_name, model, prompt, harness, metric_version, preset,
               count(*) AS episodes,
               avg(success::INTEGER) AS success_rate,
               avg(explore_error ORDER BY rowid) AS mean_explore_error,
               avg(exploit_error ORDER BY rowid) AS mean_exploit_error,
               avg(n_steps) FILTER (WHERE success) AS mean_steps_success
        FROM trajectories
        WHERE metric_version LIKE '%park/%'  -- the Park family's rows
        GROUP BY ALL
        ORDER BY ALL
        """),
    "case_summary": (
        "Steps and errors per agent, model, prompt, harness and case (Table 1 of the paper).",
        """
        SELECT t.agent_name, t.model, t.prompt, t.harness, t.metric_version, s.case_id,
               count(*) AS steps,
               sum(s.error) AS errors,
               avg(s.error) AS error_rate,
               avg(s.gain) AS gain_rate,
               avg(s.progress) AS progress_rate
        FROM steps s JOIN trajectories t USING (trajectory_id)
        WHERE t.metric_version LIKE '%park/%'  -- the Park family's rows
        GROUP BY ALL
        ORDER BY ALL
        """),
    "gaps_summary": (
        "Tables 1 and 2 of Grams et al. per agent, model, prompt, harness and metric version: trajectories and "
        "episodes graded, the total, exploration and exploitation gaps at the last episode and averaged over "
        "episodes (means over trajectories; the gap columns count only trajectories with R_max > 0, "
        "`with_gaps`), the exploitation and exploration shares of the total gap, the mean exploitation and agent "
        "returns per episode, coverage, redundancy, sample efficiency, and the episodes whose solve hit a time "
        "limit (`bound_episodes`).",
        """
        WITH per_trajectory AS (
            SELECT trajectory_id, avg(exploit_return ORDER BY rowid) AS exploit_return,
                   avg(agent_return ORDER BY rowid) AS agent_return,
                   count(*) FILTER (WHERE solver_status <> 'optimal') AS bound_episodes
            FROM episodes GROUP BY trajectory_id)
        SELECT t.agent_name, t.model, t.prompt, t.harness, t.metric_version,
               count(*) AS trajectories,
               sum(t.n_episodes) AS episodes,
               count(t.total_gap_last) AS with_gaps,
               avg(t.total_gap_last ORDER BY t.rowid) AS total_gap_last,
               avg(t.exploit_gap_last ORDER BY t.rowid) AS exploit_gap_last,
               avg(t.explore_gap_last ORDER BY t.rowid) AS explore_gap_last,
               avg(t.exploit_gap_last ORDER BY t.rowid) / nullif(avg(t.total_gap_last ORDER BY t.rowid), 0)
                   AS exploit_share_last,
               avg(t.explore_gap_last ORDER BY t.rowid) / nullif(avg(t.total_gap_last ORDER BY t.rowid), 0)
                   AS explore_share_last,
               avg(t.total_gap_mean ORDER BY t.rowid) AS total_gap_mean,
               avg(t.exploit_gap_mean ORDER BY t.rowid) AS exploit_gap_mean,
               avg(t.explore_gap_mean ORDER BY t.rowid) AS explore_gap_mean,
               avg(t.exploit_gap_mean ORDER BY t.rowid) / nullif(avg(t.total_gap_mean ORDER BY t.rowid), 0)
                   AS exploit_share_mean,
               avg(t.explore_gap_mean ORDER BY t.rowid) / nullif(avg(t.total_gap_mean ORDER BY t.rowid), 0)
                   AS explore_share_mean,
               avg(p.exploit_return ORDER BY t.rowid) AS exploit_return,
               avg(p.agent_return ORDER BY t.rowid) AS agent_return,
               avg(t.coverage ORDER BY t.rowid) AS coverage,
               avg(t.redundancy ORDER BY t.rowid) AS redundancy,
               avg(t.sample_efficiency) AS sample_efficiency,
               count(t.sample_efficiency) AS with_sample_efficiency,
               coalesce(sum(p.bound_episodes), 0) AS bound_episodes
        FROM trajectories t LEFT JOIN per_trajectory p USING (trajectory_id)
        WHERE t.metric_version LIKE '%gaps/%'  -- the gaps family's rows
        GROUP BY ALL
        ORDER BY ALL
        """),    "ecc_curve": (
        "ECC after t steps, t from 0 (the initial state) to the trajectory's graded steps: the share of its "
        "checkpoints whose hit_after_steps <= t; trajectories without checkpoints have no rows. In trajectory_id, "
        "t order.",
        """
        SELECT trajectory_id, 0 AS t, avg(coalesce(hit_after_steps = 0, false)::INTEGER) AS ecc
        FROM checkpoints GROUP BY trajectory_id
        UNION ALL
        SELECT trajectory_id, t + 1 AS t, ecc FROM steps WHERE ecc IS NOT NULL
        ORDER BY trajectory_id, t
        """),
    "coverage_summary": (
        "Coverage and revisits per agent, model, prompt, harness, world kind and coverage version: trajectories, "
        "those with checkpoints, mean ECC (Look Before You Leap), mean checkpoints hit, mean exploration degree "
        "and distinct states (EAPO), mean steps.",
        """
        SELECT agent_name, model, prompt, harness, env, coverage_version,
               count(*) AS trajectories,
               count(ecc) AS with_checkpoints,
               avg(ecc ORDER BY rowid) AS mean_ecc,
               avg(checkpoints_hit) FILTER (WHERE ecc IS NOT NULL) AS mean_checkpoints_hit,
               avg(exploration_degree ORDER BY rowid) AS mean_exploration_degree,
               avg(distinct_states) AS mean_distinct_states,
               avg(n_steps) AS mean_steps
        FROM trajectories
        WHERE coverage_version IS NOT NULL  -- the coverage family's rows
        GROUP BY ALL
        ORDER BY ALL
        """),
    "phase_summary": (
        "Explore-then-Act per trajectory and phase (NULL: steps without a phase): steps, the first and last step, "
        "ECC at the end of the phase, distinct states the phase's steps ended in, and for grid_dag the "
        "exploration and exploitation errors of the phase's steps.",
        f"""
        SELECT s.trajectory_id, t.agent_name, t.model, t.prompt, t.harness, t.env, s.phase,
               count(*) AS steps,
               min(s.t) AS first_t,
               max(s.t) AS last_t,
               arg_max(s.ecc, s.t) AS ecc_end,
               -- NULL, not 0, when no step of the phase has a known state (as trajectories.distinct_states)
               nullif(count(DISTINCT s.state), 0) AS distinct_states,
               sum(s.explore_error) / nullif(count(*) FILTER (WHERE s.case_id IN ({_cases(EXPLORE_CASES)})), 0)
                   AS explore_error,
               sum(s.exploit_error) / nullif(count(*) FILTER (WHERE s.case_id IN ({_cases(EXPLOIT_CASES)})), 0)
                   AS exploit_error
        FROM steps s JOIN trajectories t USING (trajectory_id)
        WHERE t.coverage_version IS NOT NULL
        GROUP BY ALL
        ORDER BY s.trajectory_id, first_t
        """),
}

_FIRST_COPIES = "(SELECT trajectory_id, min(trajectory_key) AS trajectory_key, arg_min(source_file, trajectory_key) AS source_file, arg_min(source_line, trajectory_key) AS source_line FROM trajectories GROUP BY trajectory_id)"
_KEY = Column("trajectory_key", "BIGINT NOT NULL", "Staging only: the row's position in the run.")
# DuckDB's memory cap while grading, so memory stays flat: pages beyond it go to the run's spill folder. Some
# work cannot spill (very long strings in a row group); then the cap is raised (CAP_GROWTH each time, up to most of
# the machine's memory) and the work done again, so a valid run never fails for the cap's sake. At 24 MB the two
# writer lanes' commits ran out of it together in a third to a half of 5M-step grades, and the recovery's higher
# cap took their peak past 300 MB; at 32 MB none did in 8 (peaks 285-290 MB; 278-291 MB at 24 MB otherwise).
MEMORY_LIMIT_MB = 32  # (with numba loaded for a large run, a grade stays under 300 MB: see docs/performance.md)
MEMORY_SHARE = 0.8   # of the machine's memory: the highest cap a run may raise DuckDB's to
CAP_GROWTH = 4       # the factor a cap is raised by when work does not fit it (see _Memory)
# An automatic checkpoint of the run's file keeps the metadata of every row group pinned, so the memory it needs
# grows with the rows staged; it cannot be retried under a higher cap (DuckDB invalidates the file: a 1M-trajectory
# run failed so at 24 MB). So the cap grows by 1 MB per this many staged rows (110M rows: 142 MB).
ROWS_PER_CHECKPOINT_MB = 1_000_000
SPILL_DIR = "spill"  # in a run's staging folder: DuckDB's temp_directory (swept with the folder)
# DuckDB threads while writing a run (its own file, and the copy into an existing results file): one thread
# appends into full row groups written as they fill, and keeps the run's order; with more, each thread leaves a
# partial row group that the checkpoint compresses and writes again (the writes took 1.5x as long on 2 cores).
WRITE_THREADS = 1
ROW_GROUP_ROWS = 122_880  # DuckDB's row group size: appends of whole row groups are written once, as they are
# Rows of a table queued before one insert: an insert costs about 10 ms whatever its size (53 inserts of a
# 256-trajectory batch took 0.6 s where one of their 13,568 rows took 0.06 s), so the narrow tables go in whole
# row groups, the wide ones (trajectories, episodes) in parts that stay well under the memory cap.
INSERT_ROWS = {"steps": ROW_GROUP_ROWS, "checkpoints": ROW_GROUP_ROWS, "trajectories": 8192, "episodes": 8192}
# DuckDB types a column of Python objects from a sample of its values (1,000 by default): a nullable number of the
# wide tables is typed from all of them (a large number the sample skipped would not fit the type it gave); the
# narrow tables' object columns are all text, and sampling them costs less.
ANALYZE_ROWS = {"steps": 1000, "checkpoints": 1000, "trajectories": 1 << 40, "episodes": 1 << 40}
T = TypeVar("T")
TABLES = {"trajectories": TRAJECTORY_COLUMNS, "steps": STEP_COLUMNS, "episodes": EPISODE_COLUMNS,
          "checkpoints": CHECKPOINT_COLUMNS}   # as users see them (`steps` and `checkpoints` views: WORDS)
# Where each table's rows are stored, and how, in a results file; in a run's file the tables of `main` have the
# key column too (the narrower ones have it anyway)
RELATIONS = {table: f"{STORAGE}.{table}" if table in WORDS else table for table in TABLES}
STORED = {table: STORAGE_COLUMNS.get(table, columns) for table, columns in TABLES.items()}
STAGED = {table: columns if table in WORDS else (*columns, _KEY) for table, columns in STORED.items()}


DUCKDB_MARK = b"DUCK"   # what a DuckDB database file holds after the 8 bytes of its header's checksum


def results_file_problem(path: Path) -> str | None:
    """Why `path` cannot be opened as a results file, known before DuckDB tries: a pipe (DuckDB's open of it waits
    for a writer forever), a device or a socket, or a file of other data (DuckDB's own messages for one named
    `.json` or `.csv` spoke of an in-memory database); else None."""
    try:   # DuckDB takes the name as UTF-8 text: bytes that are not (kept as lone surrogates) ended in std::bad_cast
        str(path.absolute()).encode("utf-8")
    except UnicodeEncodeError:
        return "is a path whose bytes are not UTF-8 text, which DuckDB cannot open; rename it"
    special = special_file(path)
    if special:
        return f"is {special}, expected a DuckDB file"
    try:
        with path.open("rb") as handle:
            header = handle.read(len(DUCKDB_MARK) + 8)
    except OSError:   # (missing, a folder, unreadable: DuckDB's own message says which)
        return None
    if header and header[8:] != DUCKDB_MARK:   # (an empty file: DuckDB's message)
        return "is not a DuckDB database file (a results file is one `eebench grade --db` wrote)"
    return None


def _newer_schema(version: Any, does: str) -> str | None:
    """What to say of `version` (meta's schema_version) when it is newer than this eebench `does` (reads, writes):
    its tables may mean what this version cannot know."""
    if str(version).isdecimal() and int(version) > SCHEMA_VERSION:   # (`²` is a digit, but no int())
        return f"results schema version {version} is newer than this eebench {does} ({SCHEMA_VERSION})"
    return None


def refuse_newer_schema(path: Path, version: Any, does: str) -> None:
    """InputError when the results file is of a newer schema (grade, report, plot and ingest interpret its rows)."""
    if problem := _newer_schema(version, does):
        raise InputError.at(str(path), f"{problem}; upgrade eebench")


def _schema_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """meta's schema_version of a results file; None when the file has none (a DuckDB file eebench did not
    write)."""
    try:
        found = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
    except duckdb.Error:   # no meta table
        return None
    return int(found[0][0]) if found and str(found[0][0]).isdecimal() else None


def _warn_if_newer(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """`query` and `export` interpret no row, so a newer file is read; but its columns may not mean what this
    eebench's README says, and the user is told so (an EebenchWarning: one `warning:` line from the CLI)."""
    version = _schema_version(con)
    if version is not None and (problem := _newer_schema(version, "reads")):
        warnings.warn(EebenchWarning(f"{path}: {problem}: its tables may not mean what this eebench's README says; "
                                     "upgrade eebench"), stacklevel=3)


def _connect(path: Path, *, read_only: bool = False, spill: Path | None = None,
             config: dict[str, Any] | None = None) -> duckdb.DuckDBPyConnection:
    """A connection with eebench's settings (a memory cap when `spill` names a folder for what exceeds it);
    InputError when the file is not a DuckDB database."""
    problem = results_file_problem(Path(path))
    if problem:
        raise InputError.at(str(path), problem)
    settings = dict(config or {})
    if spill is not None:
        settings.update(memory_limit=f"{MEMORY_LIMIT_MB}MB", temp_directory=str(spill))
    try:
        con = duckdb.connect(str(path), read_only=read_only, config=settings)
    except duckdb.Error as exc:
        raise InputError.at(str(path), f"cannot open as a DuckDB database: {duckdb_message(exc)}") from None
    if not settings.get("lock_configuration"):
        con.execute("SET enable_progress_bar = false")  # our own progress bar is the one on stderr
    return con


LOCK_WAIT_SECONDS = 60  # how long a grade waits for another process to let go of the results file


def _connect_waiting(path: Path, *, read_only: bool = False, spill: Path | None = None) -> duckdb.DuckDBPyConnection:
    """A connection to the results file, waiting while another process holds it (any holder: an `eebench query`,
    a DuckDB shell, a Python program, reading or writing), so a holder that is there when a grade starts or
    commits does not cost the run."""
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    delay = 0.05
    while True:
        try:
            return _connect(path, read_only=read_only, spill=spill)
        except InputError as exc:
            if "could not set lock" not in str(exc).lower():
                raise
            if time.monotonic() > deadline:
                raise InputError.at(str(path), f"is in use by another process (waited {LOCK_WAIT_SECONDS} s for its "
                                               "lock); close it and grade again") from None
        time.sleep(delay)
        delay = min(delay * 2, 1.0)


def _memory_ceiling_mb() -> int:
    try:
        return max(MEMORY_LIMIT_MB, int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * MEMORY_SHARE)
                   >> 20)
    except (ValueError, OSError, AttributeError):  # no sysconf: a generous fixed ceiling
        return 16 << 10


def _out_of_memory(exc: duckdb.Error) -> bool:
    """DuckDB ran into its memory cap (a commit reports it as a failure to pin a block)."""
    text = str(exc)
    return isinstance(exc, duckdb.OutOfMemoryException) or "failed to pin block" in text \
        or "could not allocate block" in text


class _Memory:
    """DuckDB's memory cap on one connection, raised when a piece of work cannot be done within it.

    A write whose commit ran out of the cap cannot be done again on the same connection: DuckDB (2.0) leaves the
    table's columns misaligned in memory, and its next checkpoint invalidates the file (3,000 trajectories with a
    10 KB agent.prompt failed so). So with `reopen`, the work is done again on a connection opened afresh from
    the file (what was committed, and nothing else), under the higher cap; `retried` tells the work it must first
    see whether its write was committed after all (DuckDB may fail in the checkpoint that follows a commit).
    """

    def __init__(self, con: duckdb.DuckDBPyConnection,
                 reopen: Callable[[int], duckdb.DuckDBPyConnection] | None = None):
        self.con = con
        self.limit_mb = MEMORY_LIMIT_MB
        self.reopen = reopen
        self.retried = False
        self.reopened = 0   # times the file was opened afresh after work ran out of the cap

    def run(self, work: Callable[[], T], failed: duckdb.Error | None = None, reopened: int | None = None,
            same_cap_first: bool = False) -> T:
        """Do `work` (which must leave nothing behind when it fails: one statement or one transaction); `failed`:
        how a first attempt, made elsewhere, failed; `reopened`: what `self.reopened` was when that attempt began.

        `same_cap_first`: that attempt ran beside other work (a writer lane's insert beside the other lane's), so it
        is done again alone on the file opened afresh under the same cap before the cap is raised. Two lanes
        committing at once ran out of 27 MB in about one 5M-step grade in three, and the cap raised for it let
        DuckDB keep up to 108 MB for the rest of the run: its peak went from 280 to 333-370 MB. A first attempt that
        failed before the file was last opened afresh (the other lane recovered first) is done again as it stands:
        raising the cap once per lane took it from 27 to 432 MB."""
        self.retried = False
        while True:
            if failed is None:
                try:
                    return work()
                except duckdb.Error as exc:
                    failed = exc
            ceiling = _memory_ceiling_mb()
            if not _out_of_memory(failed) or self.limit_mb >= ceiling:
                raise failed
            failed = None
            if reopened is not None and self.reopened > reopened:   # the file is afresh since that attempt
                reopened = None
                self.retried = True   # (its write may have been committed before it failed)
                continue
            reopened = None
            if not same_cap_first:
                self.limit_mb = min(self.limit_mb * CAP_GROWTH, ceiling)
            same_cap_first = False
            if self.reopen is None:
                self.con.execute(f"SET memory_limit = '{self.limit_mb}MB'")
                continue
            with contextlib.suppress(duckdb.Error):   # (a connection DuckDB may have invalidated)
                self.con.close()
            self.con = self.reopen(self.limit_mb)
            self.reopened += 1
            self.retried = True


class _Gate:
    """The writer lanes insert at once (shared); recovering from DuckDB's memory cap reopens the run's file, so it
    waits until no insert runs, and holds the others back until it is done (exclusive)."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._running = 0
        self._recovering = False
        self._to_recover = 0   # lanes waiting to recover: no insert starts meanwhile (or they might wait forever)

    @contextlib.contextmanager
    def shared(self) -> Iterator[None]:
        with self._changed:
            self._changed.wait_for(lambda: not self._recovering and not self._to_recover)
            self._running += 1
        try:
            yield
        finally:
            with self._changed:
                self._running -= 1
                self._changed.notify_all()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        with self._changed:
            self._to_recover += 1
            self._changed.wait_for(lambda: not self._recovering and not self._running)
            self._to_recover -= 1
            self._recovering = True
        try:
            yield
        finally:
            with self._changed:
                self._recovering = False
                self._changed.notify_all()


# In a run's staging folder: "<host> <pid>" of the grade that made it (for people, and to leave alone the runs
# of other machines sharing the folder), and the file the run locks (flock) for as long as it lives.
OWNER_FILE = "owner"
LOCK_FILE = "lock"


def _make_staging(results: Path) -> tuple[Path, int]:
    """A new staging folder next to the results and an open descriptor holding its lock for the run's lifetime.

    The lock (flock on the folder's lock file) is the proof of life: the kernel drops it when the process dies,
    however it dies, so a folder nobody holds is abandoned. A sweep may take a folder in the instant between its
    creation and its lock; then it is gone, and another is made. Where the file system has no locks, the run
    goes on unlocked, and sweeps leave its folder alone (they cannot tell it is abandoned).
    """
    while True:
        try:
            folder = Path(tempfile.mkdtemp(prefix=f".{results.name}.", suffix=".grading", dir=results.parent))
        except OSError as exc:
            raise InputError.at(str(results), f"cannot write: {exc.strerror}") from None
        lock = folder / LOCK_FILE
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:
            continue  # swept already
        except OSError as exc:
            raise InputError.at(str(results), f"cannot write: {exc.strerror}") from None
        with contextlib.suppress(OSError):  # (no locks on this file system: see above)
            fcntl.flock(fd, fcntl.LOCK_EX)  # a sweep holds it only while it removes the folder
        with contextlib.suppress(FileNotFoundError):
            if os.path.samestat(os.fstat(fd), os.stat(lock)):
                return folder, fd
        os.close(fd)


def _sweep_abandoned_runs(results: Path) -> None:
    """Remove the staging folders of runs that were killed outright: folders whose lock nobody holds (whatever
    their owner file says, or when it or the lock file is missing or empty), except those another machine's run
    made."""
    for folder in results.parent.glob(f".{glob.escape(results.name)}.*.grading"):
        try:
            host = (folder / OWNER_FILE).read_text().split()[0]
        except (OSError, IndexError, UnicodeDecodeError):
            host = None  # no owner yet, or a run killed before it wrote one: the lock tells
        if host not in (None, socket.gethostname()):
            continue   # another machine's run: its lock may not be visible here
        try:
            fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)  # (made if a kill came first)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            shutil.rmtree(folder, ignore_errors=True)
        except OSError:
            pass   # held by a live run (or a file system without locks: left alone)
        finally:
            os.close(fd)


def _ddl(table: str, columns: Iterable[Column]) -> str:
    methods = COMPRESSION.get(table, {})
    return f"CREATE TABLE IF NOT EXISTS {table} (" + ", ".join(
        f"{c.name} {c.type}" + (f" USING COMPRESSION {methods[c.name]}" if c.name in methods else "")
        for c in columns) + ")"


# The compression of each number column of storage.steps, named so that DuckDB does not analyze each column of each
# row group to choose one (the steps' writing took 10% less CPU; the methods are those it chose for main-suite
# steps, and the file is as large). Texts are left to DuckDB, and so is every column of the other tables.
_RUNS = ("trajectory_key", "case_id", "episode", "ecc")   # long runs of one value: run-length encoded
COMPRESSION = {f"{STORAGE}.steps": {c.name: "rle" if c.name in _RUNS else "bitpacking"
                                    for c in STORAGE_COLUMNS["steps"] if not c.type.startswith("VARCHAR")}}


Columns = dict[str, np.ndarray | Coded]   # a table's rows as columns, by name
# The writer threads ("lanes"), each inserting through its own connection to the run's file (a cursor): DuckDB
# appends to different tables at once, and compresses without Python's lock. `steps`, about three quarters of the
# writing, has a lane of its own; the other tables share the second. A table's rows go through one lane, so they
# stay in order (two transactions appending to one table at once hung a run now and then). Since lines are read
# without a dict per step (bare_steps) the grading outpaces one writer thread; with two lanes 5M main-suite steps
# grade in 9.0-9.3 s against 10.6-11.2 s on a busy machine (in turns; the rows are the same, in the same order).
LANES = {"steps": 0, "trajectories": 1, "episodes": 1, "checkpoints": 1}
# Inserts handed to a lane and not done, at most (a whole row group of steps each, some megabytes): the grading
# waits for the lane's oldest beyond that. One a lane was 7-9% slower than two, which held 7 MB more at the peak.
WRITER_QUEUE = 2

# A Coded column goes in as codes when its words are this many times fewer than its rows, else as Python strings:
# DuckDB takes a list parameter at about 0.35 us a word, and copies it again as it evaluates the lookup (122,880
# rows with as many distinct words: 0.3 s as codes, 0.01 s as strings; a main-suite trajectory's id covers 74 rows)
CODED_ROWS_PER_WORD = 16

SWITCH_SECONDS = 2e-5  # Python's thread switch interval while a grade writes (its default: 5 ms)


@contextlib.contextmanager
def quick_switches() -> Iterator[None]:
    """Python's switch interval shortened while a store's writer lanes insert beside a grading thread.

    DuckDB's client takes Python's lock again and again while it inserts (between its execution steps, and for
    each vector of a column of Python strings). At the default interval it waits up to 5 ms each time for the
    grading thread to let go, so the two threads took turns: 1M rows beside a busy thread took 4.2 s instead of
    0.3 s. At SWITCH_SECONDS the waits are short and the insert runs beside the grading (0.4 s)."""
    kept = sys.getswitchinterval()
    sys.setswitchinterval(min(kept, SWITCH_SECONDS))
    try:
        yield
    finally:
        sys.setswitchinterval(kept)


class Batch:
    """Graded trajectories (their columns of `trajectories`: a list of values each, one per trajectory) and their
    steps, episodes and checkpoints as column parts.

    A column no trajectory of the batch fills may be left out (NULL). In the parts, the column `trajectory` holds
    each row's trajectory as its position in the batch; a part holds the columns its metric families fill (the
    others are NULL). A part of `steps` may be StepWindows (a long trajectory's columns, made a window at a time as
    they are written).
    """

    def __init__(self, n: int = 0, trajectories: dict[str, list[Any]] | None = None,
                 steps: list[StepColumns] | None = None, episodes: list[dict[str, np.ndarray]] | None = None,
                 checkpoints: list[dict[str, np.ndarray]] | None = None):
        self.n = n
        self.trajectories = trajectories or {}
        self.steps = steps or []
        self.episodes = episodes or []
        self.checkpoints = checkpoints or []

    def __len__(self) -> int:
        return self.n

    @property
    def n_steps(self) -> int:
        return sum(map(step_rows, self.steps))

    def extend(self, other: Batch) -> None:
        offset = self.n

        def moved(part: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
            return {**part, "trajectory": part["trajectory"] + offset}
        for name, column in self.trajectories.items():
            values = other.trajectories.get(name)
            column.extend([None] * other.n if values is None else values)
        for name, values in other.trajectories.items():
            if name not in self.trajectories:
                self.trajectories[name] = [None] * offset + list(values)
        self.n += other.n
        self.steps.extend(part.map(moved) if isinstance(part, StepWindows) else moved(part)  # type: ignore[arg-type]
                          for part in other.steps)
        self.episodes.extend(map(moved, other.episodes))
        self.checkpoints.extend(map(moved, other.checkpoints))


def batch_tables(batch: Batch, keys: np.ndarray) -> Iterator[tuple[str, Columns]]:
    """A batch as NumPy columns of the staged tables, `keys` its rows' trajectory_key: the trajectories, then
    each part of steps, episodes and checkpoints, in order (a run of parts with the same columns together;
    StepWindows a window at a time)."""
    rows = _columns(batch.trajectories, TRAJECTORY_COLUMNS)
    yield "trajectories", {**rows, _KEY.name: keys}

    def table_of(part: Mapping[str, np.ndarray]) -> Columns:
        owner = part["trajectory"]  # position in the batch
        return {"trajectory_id": Coded(owner, rows["trajectory_id"]), _KEY.name: keys[owner],
                **{name: values for name, values in part.items() if name != "trajectory"}}

    for table, parts in (("steps", batch.steps), ("episodes", batch.episodes), ("checkpoints", batch.checkpoints)):
        same: list[Mapping[str, np.ndarray]] = []   # a run of parts with the same columns, in input order
        for part in [*parts, None]:
            if same and (part is None or isinstance(part, StepWindows) or tuple(part) != tuple(same[0])):
                yield table, table_of({name: concatenated([p[name] for p in same]) for name in same[0]})
                same = []
            if isinstance(part, StepWindows):
                for window in part.windows():
                    yield table, table_of(window)
            elif part is not None:
                same.append(part)


class Replaced(NamedTuple):
    """Rows of earlier grades that a commit replaced (their trajectory ids were graded again)."""

    trajectories: int = 0
    unbundled: int = 0               # of them graded against a bundle, now against a plain folder (no bench)
    bundles: tuple[str, ...] = ()    # those bundles, as "name version"


class ResultStore:
    """Writes one grading run into a DuckDB results file, as one transaction.

    The run is built in a new DuckDB file in a temporary folder next to the results file, in the results' own
    tables and column order plus a trailing `trajectory_key` (the trajectory's position in the run, which tells
    repeated ids apart). Each batch is committed there, by the store's writer lanes (threads: `steps` in one, the
    other tables in the other) while the caller grades the next ones (`write`), so memory stays flat however many
    trajectories a run grades; steps and checkpoints are appended a whole number of DuckDB row groups at a time,
    trajectories and episodes some thousands at a time (the rest waits for the next batch: INSERT_ROWS), which
    DuckDB compresses and writes once, as they come. `commit`
    then makes the run the results:
    - when there is no results file, the key columns are dropped and the run's file is moved into place;
    - otherwise the run's file is attached to the results file and its rows copied in, in a single transaction,
      after the rows of re-graded trajectory ids are deleted.
    Until then the results file is not touched (not even created), so a failed run leaves it exactly as it was.
    The folder is locked while the run lives; a later run removes the folder of a run that was killed outright.
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if self.path.exists():
            self._check_existing()
        self._stage_dir, self._lock = _make_staging(self.path)
        self._stage_path = self._stage_dir / "run.duckdb"
        # by lane: its connection to the run's file and that connection's settings (made when the lane first needs it)
        self._lane_connections: dict[int, tuple[duckdb.DuckDBPyConnection, dict[str, int]]] = {}
        try:
            with self._failures():
                _sweep_abandoned_runs(self.path)
                (self._stage_dir / OWNER_FILE).write_text(f"{socket.gethostname()} {os.getpid()}\n")
                try:
                    self.stage = self._open_stage(MEMORY_LIMIT_MB)
                except InputError as exc:  # a new file that cannot be made: a full disk, say
                    raise self._failed(str(exc)) from None
                self._memory = _Memory(self.stage, reopen=self._open_stage)
                self.stage.execute(f"CREATE SCHEMA {STORAGE}")
                for table, columns in STAGED.items():
                    self.stage.execute(_ddl(RELATIONS[table], columns))
        except BaseException:
            self._cleanup()
            raise
        self._next_key = 0   # the run's trajectories are keyed 0, 1, ... in input order
        # the run's texts stored as keys (WORDS), by table of words: each text's key, in the order given
        self._words: dict[str, dict[str | None, int]] = {w.table: {} for ws in WORDS.values() for w in ws}
        self._waiting: dict[str, list[Columns]] = {}  # by table: rows not inserted yet (INSERT_ROWS)
        self._staged_rows = 0   # of every table: DuckDB's cap grows with them (ROWS_PER_CHECKPOINT_MB)
        self._stage_lock = threading.Lock()   # the lanes' uses of `stage`: the count and the cap, new cursors
        self._rows = dict.fromkeys(TABLES, 0)   # by table: what a retried insert finds there if it was committed
        self._gate = _Gate()
        self._lanes = [ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"eebench-writer-{lane}")
                       for lane in range(max(LANES.values()) + 1)]
        self._pending: list[deque[Future[None]]] = [deque() for _ in self._lanes]   # by lane, oldest first
        self._waiting_arrow: dict[str, list[pa.Table]] = {}   # rows of `add_rows` not inserted yet, by table

    @contextlib.contextmanager
    def _failures(self) -> Iterator[None]:
        """DuckDB or the disk failing while the run is built or committed (a full disk, say): one line that says
        what happened; the results file is left as it was (the commit is one transaction)."""
        try:
            yield
        except duckdb.Error as exc:
            text = duckdb_message(exc)
            if "max_temp_directory_size" in text:  # its default is the free space of the spill folder's disk
                text = f"No space left on device (DuckDB could not spill to {self._stage_dir / SPILL_DIR})"
            raise self._failed(text) from None
        except OSError as exc:
            raise self._failed(f"{exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else "")) from None

    def _failed(self, what: str) -> EebenchError:
        return EebenchError(f"{self.path}: grading failed while writing results: {what}; nothing was written "
                            f"({self.path} is as it was)")

    def _open_stage(self, limit_mb: int) -> duckdb.DuckDBPyConnection:
        """A connection to the run's file under a cap of `limit_mb` (again after a failed commit: see _Memory);
        the lanes' connections of an earlier one are closed first, so the file is read afresh."""
        self._close_lanes()
        self.stage = _connect(self._stage_path, spill=self._stage_dir / SPILL_DIR)
        self.stage.execute(f"SET threads = {WRITE_THREADS}")
        if limit_mb != MEMORY_LIMIT_MB:
            self.stage.execute(f"SET memory_limit = '{limit_mb}MB'")
        return self.stage

    def _lane(self, lane: int) -> tuple[duckdb.DuckDBPyConnection, dict[str, int]]:
        """A lane's connection to the run's file, and its settings."""
        if lane not in self._lane_connections:
            with self._stage_lock:   # (a connection used from two threads at once refuses)
                self._lane_connections[lane] = (self.stage.cursor(), {})
        return self._lane_connections[lane]

    def _close_stage(self) -> None:
        self._close_lanes()
        self.stage.close()

    def _close_lanes(self) -> None:
        for con, _ in self._lane_connections.values():
            with contextlib.suppress(duckdb.Error):
                con.close()
        self._lane_connections.clear()

    def _check_existing(self) -> None:
        """Refuse, before any grading, a results file eebench cannot add to: damaged, a newer layout, or foreign
        tables."""
        con = _connect_waiting(self.path, read_only=True)
        try:
            columns: dict[str, list[str]] = {}
            for table, column in con.execute("SELECT table_name, column_name FROM information_schema.columns "
                                             "WHERE table_schema = 'main' ORDER BY ordinal_position").fetchall():
                columns.setdefault(table, []).append(column)
            # schema 1's columns come first in every later schema: a file of any version starts with them
            ours = {"meta": ["key", "value"],
                    "trajectories": [c.name for c in TRAJECTORY_COLUMNS[:V1_TRAJECTORY_COLUMNS]],
                    "steps": [c.name for c in STEP_COLUMNS[:V1_STEP_COLUMNS]]}
            if "meta" not in columns and not columns.keys() & ours.keys():  # a DuckDB file of other tables
                # ours are added beside them, unless a name is taken (DuckDB's names ignore case)
                taken = sorted(name for name in columns if name.lower() in {*TABLES, *VIEWS, "meta"})
                if con.execute("SELECT count(*) FROM information_schema.schemata WHERE catalog_name = "
                               "current_database() AND lower(schema_name) = ?", [STORAGE]).fetchone()[0]:
                    taken.append(f"the schema {STORAGE}")
                if taken:
                    raise InputError.at(str(self.path), f"is not an eebench results file: it has {taken[0]}, a "
                                                        "name eebench's results use; grade into another --db")
                return
            for table, names in ours.items():
                if columns.get(table, names)[:len(names)] != names:
                    raise InputError.at(str(self.path), f"is not an eebench results file: its table {table} has "
                                                        f"columns ({', '.join(columns.get(table, []))}); grade into "
                                                        "another --db")
            found = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            if found is None or not str(found[0]).isdecimal():   # (a value that is there is named, not denied)
                what = "its meta table names no schema_version" if found is None else \
                    f"its meta schema_version is {quoted(found[0])}, not a version number"
                raise InputError.at(str(self.path), f"is not an eebench results file: {what}; grade into another --db")
            refuse_newer_schema(self.path, found[0], "writes")
        except duckdb.Error as exc:
            raise InputError.at(str(self.path), f"cannot be read as a results file: {duckdb_message(exc)}; grade into "
                                                "another --db") from None
        finally:
            con.close()

    def write(self, batch: Batch) -> None:
        """Stage a batch (committed to the run's file, not yet to the results).

        The columns are made here; DuckDB inserts them in the store's writer lanes while the caller grades the
        next batch, each table's in order (LANES); a failed insert is raised by the next call that uses the run's
        file. DuckDB compresses and writes without Python's lock, save for brief moments (see quick_switches); a
        Coded column's words are looked up in C, not read from Python strings row by row."""
        if not len(batch):
            return
        keys = np.arange(self._next_key, self._next_key + len(batch), dtype=np.int64)
        self._next_key += len(batch)
        inserts: list[tuple[str, Columns | pa.Table]] = []
        # a long trajectory's windows go to the writer as they are due, so its rows are never in memory whole
        eager = any(isinstance(part, StepWindows) for part in batch.steps)
        for table, data in batch_tables(batch, keys):
            inserts.extend(self._queue(table, self._narrow(table, data)))
            if eager and inserts:
                self._submit(inserts)
                inserts = []
        self._submit(inserts)

    def _narrow(self, table: str, data: Columns) -> Columns:
        """A table's columns as stored (WORDS): the trajectory by its key alone, the other texts by their keys."""
        if table not in WORDS:
            return data
        data = {name: values for name, values in data.items() if name != TRAJECTORY_IDS.column}
        for words in WORDS[table]:
            texts = data.pop(words.column, None)
            if isinstance(texts, Coded):
                data[words.key] = self._keys(words, texts.words)[texts.codes]
            elif texts is not None:
                data[words.key] = self._keys(words, texts)
        return data

    def _keys(self, words: Words, texts: Sequence[str | None]) -> np.ndarray:
        """The keys of texts in the run (a text new to it gets the next key)."""
        known = self._words[words.table]
        return np.fromiter((known.setdefault(text, len(known)) for text in texts), dtype=np.int32, count=len(texts))

    def _submit(self, inserts: list[tuple[str, Columns | pa.Table]]) -> None:
        """Hand inserts to their tables' lanes, which do them in order; with WRITER_QUEUE inserts handed to a lane
        already, first wait for its oldest."""
        for table, data in inserts:
            lane = LANES[table]
            pending = self._pending[lane]
            while len(pending) >= WRITER_QUEUE:
                pending.popleft().result()
            pending.append(self._lanes[lane].submit(self._insert_all, [(table, data)]))

    def _insert_all(self, inserts: list[tuple[str, Columns | pa.Table]]) -> None:
        with self._failures():
            for table, data in inserts:
                self._insert(table, data)

    def _wait(self) -> None:
        """Wait for every insert handed to the lanes; raise what failed there (the first lane's first)."""
        failed = None
        for pending in self._pending:
            while pending:
                try:
                    pending.popleft().result()
                except BaseException as exc:  # noqa: BLE001  (the other lane is waited for all the same)
                    failed = failed or exc
        if failed is not None:
            raise failed

    def _queue(self, table: str, data: Columns) -> list[tuple[str, Columns | pa.Table]]:
        """Queue a table's columns; the inserts due: whole multiples of INSERT_ROWS rows."""
        waiting = self._waiting.setdefault(table, [])
        inserts = []
        # other columns (another world's, or one NULL throughout a batch and so left out): what waits goes first
        if waiting and waiting[0].keys() != data.keys():
            inserts.append((table, self._take_waiting(table)))
            waiting = self._waiting[table] = []
        waiting.append(data)
        rows = sum(len(part[_KEY.name]) for part in waiting)
        size = INSERT_ROWS[table]
        if rows >= size:
            columns = data if len(waiting) == 1 else {name: concatenated([part[name] for part in waiting])
                                                      for name in data}
            cut = rows - rows % size
            inserts.append((table, {name: values[:cut] for name, values in columns.items()}))
            waiting[:] = [{name: _kept(values[cut:]) for name, values in columns.items()}] if cut < rows else []
        return inserts

    def _take_waiting(self, table: str) -> Columns:
        waiting = self._waiting.pop(table)
        return {name: concatenated([part[name] for part in waiting]) for name in waiting[0]}

    def _flush(self) -> None:
        """Insert the queued rows, after the lanes' inserts (before the staged rows are queried or committed)."""
        self._wait()
        if self._waiting_arrow:
            import pyarrow as pa

            self._insert_all([(table, pa.concat_tables(waiting)) for table, waiting in self._waiting_arrow.items()])
            self._waiting_arrow.clear()
        self._insert_all([(table, self._take_waiting(table)) for table, waiting in list(self._waiting.items())
                          if waiting])

    def _insert(self, table: str, data: Columns | pa.Table) -> None:
        given = set(getattr(data, "column_names", data))  # an Arrow table's, or a dict's
        names = [c.name for c in STAGED[table] if c.name in given]  # the others are NULL
        rows = data.num_rows if hasattr(data, "num_rows") else len(data[_KEY.name])
        # a Coded column goes in as its codes, which DuckDB looks up in its words (a list parameter), unless they
        # are too many for its rows (CODED_ROWS_PER_WORD)
        words: list[list[str | None]] = []
        values = []
        for name in names:
            column = data[name] if isinstance(data, dict) else None
            if isinstance(column, Coded) and len(column.words) * CODED_ROWS_PER_WORD > len(column):
                data = {**data, name: column.values()}  # type: ignore[dict-item]
                values.append(name)
            elif isinstance(column, Coded):
                words.append(column.words.tolist())
                data = {**data, name: column.codes}  # type: ignore[dict-item]
                values.append(f"(${len(words)}::VARCHAR[])[{name} + 1]")
            else:
                values.append(name)
        before = self._rows[table]

        def insert(retried: bool) -> None:  # one statement, one transaction: nothing is left of it when it fails
            con, settings = self._lane(LANES[table])
            if retried and con.execute(f"SELECT count(*) FROM {RELATIONS[table]}").fetchall()[0][0] == before + rows:
                return  # committed: what failed was DuckDB's checkpoint after the commit
            if settings.get("pandas_analyze_sample") != ANALYZE_ROWS[table]:
                settings["pandas_analyze_sample"] = ANALYZE_ROWS[table]
                con.execute(f"SET pandas_analyze_sample = {ANALYZE_ROWS[table]}")
            con.register("batch_rows", data)
            try:
                con.execute(f"INSERT INTO {RELATIONS[table]} ({', '.join(names)}) SELECT {', '.join(values)} "
                            "FROM batch_rows",
                            words or None)
            finally:
                with contextlib.suppress(duckdb.Error):   # (a connection DuckDB invalidated)
                    con.unregister("batch_rows")

        failed = None
        with self._gate.shared():
            reopened = self._memory.reopened   # (no reopening while an insert holds the gate shared)
            with self._stage_lock:
                self._staged_rows += rows
                self._raise_cap(MEMORY_LIMIT_MB + self._staged_rows // ROWS_PER_CHECKPOINT_MB)
            try:
                insert(False)
            except duckdb.Error as exc:
                if not _out_of_memory(exc):
                    raise
                failed = exc
        if failed is not None:   # again alone, on the file opened afresh, then under a higher cap (see _Memory)
            with self._gate.exclusive():
                self._memory.run(lambda: insert(self._memory.retried), failed, reopened, same_cap_first=True)
        self._rows[table] = before + rows

    @property
    def folder(self) -> Path:
        """The run's staging folder (swept with the run): where grading workers write their parts."""
        return self._stage_dir

    def allow_memory(self, limit_mb: int) -> None:
        """Raise DuckDB's memory cap on the run's file to `limit_mb` (a process that only writes, grading
        elsewhere, can give DuckDB what a grading process keeps for its own work)."""
        self._wait()
        self._raise_cap(limit_mb)

    def _raise_cap(self, limit_mb: int) -> None:
        if limit_mb > self._memory.limit_mb:
            self._memory.limit_mb = limit_mb
            with self._failures():
                self.stage.execute(f"SET memory_limit = '{limit_mb}MB'")

    def arrow_schemas(self) -> dict[str, pa.Schema]:
        """The layout of `add_rows` as Arrow schemas: each table's stored columns and trajectory_key (the texts
        that are stored as keys as text: WORDS)."""
        texts = {w.key: w.column for ws in WORDS.values() for w in ws}

        def column(c: Column) -> str:
            return f"NULL::VARCHAR AS {texts[c.name]}" if c.name in texts else c.name

        with self._failures():
            return {table: self.stage.sql(f"SELECT {', '.join(map(column, columns))} FROM {RELATIONS[table]} LIMIT 0"
                                          ).to_arrow_table().schema for table, columns in STAGED.items()}

    def take_keys(self, count: int) -> int:
        """Reserve the run's next `count` trajectory keys, for rows that `add_rows` will stage (a grading worker's
        piece, Parquet partitions); the first of them."""
        first = self._next_key
        self._next_key += count
        return first

    def add_rows(self, table: str, rows: pa.Table) -> None:
        """Stage rows given as Arrow in the layout of `arrow_schemas`, trajectory_key (from `take_keys`) included
        (a grading worker's part). They wait until there are whole multiples of INSERT_ROWS to insert, as
        `write`'s do (so the small parts of many pieces make one insert)."""
        import pyarrow as pa

        rows = self._narrow_arrow(table, rows)
        with self._failures():
            waiting = self._waiting_arrow.setdefault(table, [])
            if waiting and waiting[0].schema != rows.schema:  # another world's columns: what waits goes first
                self._submit([(table, pa.concat_tables(waiting))])
                waiting = self._waiting_arrow[table] = []
            waiting.append(rows)
            count = sum(map(len, waiting))
            size = INSERT_ROWS[table]
            if count >= size:
                queued = pa.concat_tables(waiting)
                cut = count - count % size
                self._submit([(table, queued.slice(0, cut))])
                waiting[:] = [queued.slice(cut)] if cut < count else []

    def _narrow_arrow(self, table: str, rows: pa.Table) -> pa.Table:
        """`_narrow` for Arrow rows: each distinct text looked up once."""
        import pyarrow as pa
        import pyarrow.compute as pc

        if table not in WORDS:
            return rows
        if TRAJECTORY_IDS.column in rows.column_names:
            rows = rows.drop_columns([TRAJECTORY_IDS.column])
        for words in WORDS[table]:
            if words.column in rows.column_names:
                coded = pc.dictionary_encode(rows[words.column].combine_chunks(), null_encoding="encode")
                keys = pa.array(self._keys(words, coded.dictionary.to_pylist())).take(coded.indices)
                rows = rows.drop_columns([words.column]).append_column(words.key, keys)
        return rows

    def _staged(self, sql: str) -> list[tuple[Any, ...]]:
        """Rows of a query over the staged run (queued steps inserted first)."""
        with self._failures():
            self._flush()
            return self._memory.run(lambda: self.stage.execute(sql).fetchall())

    def name_sources(self, names: Mapping[str, str]) -> None:
        """The staged rows read from file `old` name `new` as their source_file (documents a caller wrote to a
        temporary file, which is gone once graded)."""
        for old, new in names.items():
            self._staged(f"UPDATE trajectories SET source_file = {_quoted(new)} WHERE source_file = {_quoted(old)}")

    def duplicates(self, located: Callable[[int], str | None] | None = None) -> list[Problem]:
        """Trajectory ids staged more than once: a problem at each later copy's file and line, naming the first
        copy's. `located` names the file a key's rows were read from when that is not the trajectory's source (the
        Parquet part `ingest` read it from): the problem is then at that file, and names both copies' sources."""
        if self._next_key < 2:   # (one trajectory has no twin: a one-trajectory grade skips the query, 20 ms)
            return []

        def at(file: str, line: int | None) -> str:
            return f"{file}{'' if line is None else f':{line}'}"

        problems = []
        for tid, key, file, line, first_key, first_file, first_line in self._staged("""
                SELECT later.trajectory_id, later.trajectory_key, later.source_file, later.source_line,
                       first.trajectory_key, first.source_file, first.source_line
                FROM stage_first first JOIN trajectories later
                  ON later.trajectory_id = first.trajectory_id AND later.trajectory_key > first.trajectory_key
                ORDER BY later.trajectory_key""".replace("stage_first", _FIRST_COPIES)):
            if located is None:
                problems.append(Problem(file, line, "id", f"trajectory id {quote(repr(tid))} was already read at "
                                                          f"{at(first_file, first_line)}; ids must be unique"))
            else:
                problems.append(Problem(located(key), None, "id", f"trajectory id {quote(repr(tid))} (of "
                                        f"{at(file, line)}) was already read at {located(first_key)} (of "
                                        f"{at(first_file, first_line)}); ids must be unique"))
        return problems

    def drop_duplicates(self) -> None:
        """Keep the first copy of each trajectory id, with its steps."""
        with self._failures():
            self._flush()
            self._memory.run(lambda: self._in_transaction(   # (done again, it deletes nothing more)
                f"DELETE FROM trajectories WHERE trajectory_key NOT IN (SELECT trajectory_key FROM {_FIRST_COPIES})",
                *(f"DELETE FROM {RELATIONS[table]} WHERE trajectory_key NOT IN (SELECT trajectory_key FROM "
                  "trajectories)" for table in ("steps", "episodes", "checkpoints"))))
            self._rows = {table: self.stage.execute(f"SELECT count(*) FROM {RELATIONS[table]}").fetchall()[0][0]
                          for table in TABLES}

    def _in_transaction(self, *statements: str) -> None:
        with _transaction(self.stage):
            for statement in statements:
                self.stage.execute(statement)

    def staged_steps(self) -> int:
        return self._staged("SELECT coalesce(sum(n_steps), 0) FROM trajectories")[0][0]

    def staged_instance_ids(self) -> list[str]:
        """The instance ids of the staged trajectories."""
        return [row[0] for row in self._staged("SELECT DISTINCT instance_id FROM trajectories")]

    def never_hit(self) -> list[str]:
        """Checkpoint ids that no staged trajectory hit, sorted."""
        (words,) = WORDS["checkpoints"]
        texts = list(self._words[words.table])   # (by key)
        return sorted(texts[row[0]] for row in self._staged(
            f"SELECT {words.key} FROM {RELATIONS['checkpoints']} GROUP BY ALL HAVING count(hit_after_steps) = 0"))

    def staged_trajectories(self) -> int:
        return self._staged("SELECT count(*) FROM trajectories")[0][0]

    def commit(self, gate: CommitGate | None = None) -> Replaced:
        """Make the staged rows the results (a new file), or add them to the results file in one transaction,
        replacing re-graded ids (what was replaced is returned). `gate` is closed just before the commit."""
        self._commit_gate = gate or CommitGate()
        try:
            with self._failures():
                self._flush()
                self._write_lookups()
                if os.path.lexists(self.path):  # (also a link to a file still to be made: DuckDB creates it there)
                    self._close_stage()
                else:
                    self._finish_as_results()
                    if self._claim():
                        return Replaced()
            if self.path.exists():  # perhaps made by another run while this one graded
                self._check_existing()
            with self._failures():
                return self._copy_into_results()
        finally:
            self._cleanup()

    def _write_lookups(self) -> None:
        """The run's tables of texts stored as keys (LOOKUPS): its trajectory ids by key (NULL for the key of a
        duplicate dropped), and its texts of WORDS."""
        con = self.stage

        def write() -> None:   # (done again, it writes the same rows)
            with _transaction(con):
                for relation, columns in LOOKUPS.items():
                    con.execute(_ddl(relation, columns))
                    con.execute(f"DELETE FROM {relation}")
                con.execute(f"INSERT INTO {STORAGE}.{TRAJECTORY_IDS.table} SELECT range, t.trajectory_id FROM "
                            f"range({self._next_key}) LEFT JOIN trajectories t ON t.trajectory_key = range")
                for table, known in self._words.items():
                    texts = np.empty(len(known), dtype=object)
                    texts[:] = list(known)   # (in the order of their keys)
                    con.register("texts", {"key": np.arange(len(texts), dtype=np.int32), "text": texts})
                    try:
                        con.execute(f"INSERT INTO {STORAGE}.{table} SELECT key, text FROM texts")
                    finally:
                        con.unregister("texts")
        self._memory.run(write)

    def _claim(self) -> bool:
        """Put the finished run's file in place as the results file, unless one appeared meanwhile."""
        self._commit_gate.close()
        try:
            os.link(self._stage_path, self.path)  # never replaces a file (a concurrent run's results)
        except FileExistsError:
            self._commit_gate.reopen()
            return False
        except OSError:  # a file system without hard links
            if os.path.lexists(self.path):
                self._commit_gate.reopen()
                return False
            os.replace(self._stage_path, self.path)
        return True

    def _finish_as_results(self) -> None:
        """Turn the run's file into a results file: the key columns go, meta and views come."""
        def finish() -> None:   # (done again, it finds the key columns gone and writes the same meta)
            con = self.stage
            with _transaction(con):
                for table in TABLES:
                    if table not in WORDS:   # (where the key stays: storage.trajectory_keys)
                        con.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS {_KEY.name}")
                self._write_meta_and_views(con)

        try:
            self._memory.run(finish)
            # everything in the file itself: no write-ahead log to carry along
            self._memory.run(lambda: self.stage.execute("CHECKPOINT"))
        finally:
            self._close_stage()
        wal = self._stage_path.with_name(self._stage_path.name + ".wal")
        if wal.exists():
            raise EebenchError(f"{self.path}: DuckDB left a write-ahead log after a checkpoint: {wal}")

    def _copy_into_results(self) -> Replaced:
        def connect(limit_mb: int) -> duckdb.DuckDBPyConnection:   # (again after a failed commit: see _Memory)
            con = _connect_waiting(self.path, spill=self._stage_dir / SPILL_DIR)
            con.execute(f"ATTACH {_quoted(self._stage_path)} AS stage (READ_ONLY)")
            con.execute(f"SET threads = {WRITE_THREADS}")
            con.execute(f"SET memory_limit = '{limit_mb}MB'")
            return con

        memory = _Memory(connect(MEMORY_LIMIT_MB), reopen=connect)
        try:
            rows = memory.con.execute("SELECT coalesce(sum(estimated_size), 0) FROM duckdb_tables() "
                                      "WHERE database_name = current_database()").fetchall()[0][0]
            memory.limit_mb = max(self._memory.limit_mb, MEMORY_LIMIT_MB + (rows + self._staged_rows)
                                  // ROWS_PER_CHECKPOINT_MB)   # (both files' rows: see ROWS_PER_CHECKPOINT_MB)
            memory.con.execute(f"SET memory_limit = '{memory.limit_mb}MB'")
            first: list[Replaced] = []   # what the first attempt found: the results before this run
            replaced = memory.run(lambda: self._add_rows(memory.con, first))
            memory.con.execute("DETACH stage")
            return replaced
        finally:
            memory.con.close()

    def _add_rows(self, con: duckdb.DuckDBPyConnection, first: list[Replaced]) -> Replaced:
        """In one transaction: the tables if new, meta and views, then the run's rows instead of earlier rows of
        its trajectory ids. Done again (after a commit that ran out of memory, perhaps in the checkpoint after it,
        when it held), it replaces any of the run's own rows by the same rows, and the first attempt's count of
        what was replaced stands (`first`)."""
        with _transaction(con, self._commit_gate):
            _upgrade(con)
            con.execute(_ddl("meta", META_COLUMNS))
            con.execute(f"CREATE SCHEMA IF NOT EXISTS {STORAGE}")
            for relation, columns in (*((RELATIONS[t], c) for t, c in STORED.items()), *LOOKUPS.items()):
                con.execute(_ddl(relation, columns))
            self._write_meta_and_views(con)
            count, unbundled, bundles = con.execute("""
                SELECT count(*),
                       count(*) FILTER (WHERE r.bench_digest IS NOT NULL AND s.bench_digest IS NULL),
                       list(DISTINCT concat_ws(' ', r.bench_name, r.bench_version) ORDER BY 1)
                           FILTER (WHERE r.bench_digest IS NOT NULL AND s.bench_digest IS NULL)
                FROM trajectories r JOIN stage.trajectories s USING (trajectory_id)""").fetchall()[0]
            if not first:
                first.append(Replaced(count, unbundled, tuple(bundles or ())))
            graded = "(SELECT trajectory_id FROM stage.trajectories)"
            for table in ("steps", "episodes", "checkpoints", "trajectories"):
                con.execute(f"DELETE FROM {RELATIONS[table]} WHERE " + (
                    f"trajectory_key IN (SELECT trajectory_key FROM {STORAGE}.{TRAJECTORY_IDS.table} WHERE "
                    f"trajectory_id IN {graded})" if table in WORDS else f"trajectory_id IN {graded}"))
            # the run's keys follow the file's (dense: the view looks them up by position)
            after = {columns[0].name: con.execute(f"SELECT count(*) FROM {relation}").fetchall()[0][0]
                     for relation, columns in LOOKUPS.items()}
            for relation, columns in (*LOOKUPS.items(), *((RELATIONS[t], c) for t, c in STORED.items())):
                names = [c.name for c in columns]  # the run's rows are in run order already
                values = [f"{name} + {after[name]}" if name in after else name for name in names]
                con.execute(f"INSERT INTO {relation} ({', '.join(names)}) SELECT {', '.join(values)} "
                            f"FROM stage.{relation}")
        return first[0]

    @staticmethod
    def _write_meta_and_views(con: duckdb.DuckDBPyConnection) -> None:
        con.execute(_ddl("meta", META_COLUMNS))
        for table, sql in VIEW_SQL.items():   # (first: the other views read them)
            con.execute(f"CREATE OR REPLACE VIEW {table} AS {sql}")
        for name, (_, sql) in VIEWS.items():
            con.execute(f"CREATE OR REPLACE VIEW {name} AS {sql}")
        con.execute("DELETE FROM meta")
        con.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("schema_version", str(SCHEMA_VERSION)), ("metric_version", ",".join(f.version for f in registered())),
            ("eebench_version", __version__)])

    def abort(self) -> None:
        """Drop the staged rows; the results file is left as it was."""
        with contextlib.suppress(Exception):   # every insert handed to a lane is done before the file closes
            self._wait()                        # (what they raised does not matter now)
        with contextlib.suppress(duckdb.Error, AttributeError):
            self._close_stage()
        self._cleanup()

    def _cleanup(self) -> None:
        for lane in getattr(self, "_lanes", ()):
            lane.shutdown(wait=True)
        shutil.rmtree(self._stage_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            os.close(self._lock)  # (after the removal: a sweep never takes a folder still being emptied)
            self._lock = -1


# Older schemas (in the grade's transaction). Schema 2 added the world kind and the gaps family's columns, made
# the Park-only columns nullable and gave `steps` `episode`, `room` and the computed `state`; schema 3 added the
# coverage columns, made `instance_sha256`, `invalid_moves` and `valid` nullable (logged trajectories) and
# computes `state` from `logged_state` too; schema 4 stores the steps narrower (STORAGE) under the view `steps`.
# DuckDB changes no NOT NULL after an update in one transaction, so an older `trajectories` is rebuilt in the new
# layout from the columns its rows have, and the old `steps` table is moved into storage.steps in its order; new
# tables (`episodes`, `checkpoints`) are made by the caller's DDL.
_OLD_ROW_FILLS = {"trajectories": {"env": "'grid_dag'"}, "steps": {"episode": "0"}}   # new NOT NULL columns


def _upgrade(con: duckdb.DuckDBPyConnection) -> None:
    """Bring a results file of an older schema to SCHEMA_VERSION, in the caller's transaction."""
    has_meta = con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = current_database() "
                           "AND schema_name = 'main' AND table_name = 'meta'").fetchone()[0]
    found = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() if has_meta else None
    if found is None or int(found[0]) >= SCHEMA_VERSION:
        return
    for name in con.execute("SELECT view_name FROM duckdb_views() WHERE database_name = current_database() "
                            "AND NOT internal").fetchall():  # ours are made again after the upgrade
        if name[0] in VIEWS:
            con.execute(f"DROP VIEW {name[0]}")

    def old_columns(table: str) -> set[str]:
        return {row[0] for row in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() "
            "AND schema_name = 'main' AND table_name = ?", [table]).fetchall()}

    if int(found[0]) < 3:
        old = old_columns("trajectories")
        kept = [c.name for c in TRAJECTORY_COLUMNS if c.name in old]
        fills = {name: value for name, value in _OLD_ROW_FILLS["trajectories"].items() if name not in old}
        con.execute(_ddl("trajectories_upgraded", TRAJECTORY_COLUMNS))
        con.execute(f"INSERT INTO trajectories_upgraded ({', '.join([*kept, *fills])}) "
                    f"SELECT {', '.join([*kept, *fills.values()])} FROM trajectories")
        con.execute("DROP TABLE trajectories")
        con.execute("ALTER TABLE trajectories_upgraded RENAME TO trajectories")
    # the narrower tables (WORDS) that the file has as tables (a file before schema 3 has no checkpoints: the
    # caller's DDL makes them), moved into storage in their order, their texts keyed
    moved = [table for table in WORDS if old_columns(table)]
    con.execute(f"CREATE SCHEMA IF NOT EXISTS {STORAGE}")
    for relation, columns in (*((RELATIONS[table], STORED[table]) for table in WORDS), *LOOKUPS.items()):
        con.execute(_ddl(relation, columns))
    ids = " UNION ".join(f"SELECT trajectory_id FROM {table}" for table in moved)
    if ids:
        con.execute(f"INSERT INTO {STORAGE}.{TRAJECTORY_IDS.table} SELECT row_number() OVER (ORDER BY "
                    f"trajectory_id) - 1, trajectory_id FROM (SELECT DISTINCT trajectory_id FROM ({ids}))")
    for table in moved:
        old = old_columns(table)
        kept = [c.name for c in STORED[table] if c.name in old]
        fills = {name: value for name, value in _OLD_ROW_FILLS.get(table, {}).items() if name not in old}
        joins = [f"JOIN {STORAGE}.{TRAJECTORY_IDS.table} k USING (trajectory_id)"]
        for n, words in enumerate(WORDS[table]):
            con.execute(f"INSERT INTO {STORAGE}.{words.table} SELECT row_number() OVER (ORDER BY {words.column}) - 1, "
                        f"{words.column} FROM (SELECT DISTINCT {words.column} FROM {table})")  # (NULL: a key too)
            joins.append(f"LEFT JOIN {STORAGE}.{words.table} w{n} "
                         f"ON w{n}.{words.column} IS NOT DISTINCT FROM s.{words.column}")
        keys = [TRAJECTORY_IDS.key, *(w.key for w in WORDS[table])]
        con.execute(f"INSERT INTO {RELATIONS[table]} ({', '.join([*keys, *kept, *fills])}) "
                    f"SELECT {', '.join([*keys, *(f's.{n}' for n in kept), *fills.values()])} "
                    f"FROM {table} s {' '.join(joins)} ORDER BY s.rowid")
        con.execute(f"DROP TABLE {table}")


@contextlib.contextmanager
def _transaction(con: duckdb.DuckDBPyConnection, gate: CommitGate | None = None) -> Iterator[None]:
    """BEGIN ... COMMIT, or ROLLBACK when the block raises. `gate` is closed for the COMMIT, and reopened if it
    fails (to be done again, say, which a stop must still be able to end)."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
        if gate is not None:
            gate.close()
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.Error):
            con.execute("ROLLBACK")
        if gate is not None and gate.closed:
            gate.reopen()
        raise


def _kept(values: np.ndarray | Coded) -> np.ndarray | Coded:
    """Rows left for a later insert, as a copy of their own (not a view holding the inserted rows' memory)."""
    return values.compact() if isinstance(values, Coded) else values.copy()


def _quoted(text: Path | str) -> str:
    """A path or a text as an SQL string literal."""
    return "'" + str(text).replace("'", "''") + "'"


def _columns(values: Mapping[str, Sequence[Any]], columns: Iterable[Column]) -> dict[str, np.ndarray]:
    """Lists of values as NumPy columns, in the order of `columns`; a column absent or NULL in every row is left
    out (DuckDB fills it with NULL: the columns of other metric families cost nothing)."""
    found = {c.name: _column(values[c.name]) for c in columns if c.name in values}
    return {name: column for name, column in found.items() if column is not None}


def _column(values: Sequence[Any]) -> np.ndarray | None:
    """A column as NumPy; None when every value is NULL."""
    if values and isinstance(values[0], dt.datetime):
        if values.count(values[0]) == len(values):   # (graded_at, one value a run: 0.17 s per 67k rows one by one)
            return np.full(len(values), np.array(values[0], dtype="datetime64[us]"))
        return np.array(values, dtype="datetime64[us]")
    kinds = set(map(type, values))
    if kinds == {type(None)}:
        return None
    # text, no value at all, or a nullable number (floats with NaN would lose NULL): keep objects
    if not kinds or type(None) in kinds or any(issubclass(kind, str) for kind in kinds):
        return np.fromiter(values, dtype=object, count=len(values))
    dtype = _NUMBER_DTYPES.get(kinds.pop()) if len(kinds) == 1 else None
    if dtype is not None:   # (one pass, where np.array first looks for the type)
        with contextlib.suppress(OverflowError):   # (an integer past 64 bits: np.array's choice below)
            return np.fromiter(values, dtype=dtype, count=len(values))
    return np.array(values)


_NUMBER_DTYPES = {int: np.int64, float: np.float64, bool: np.bool_}   # what np.array makes of such a column


MESSAGE_CHARS = 800  # at most this much of a DuckDB message is quoted (it may echo a huge statement)


def duckdb_message(exc: BaseException) -> str:
    """A DuckDB message as one line: its lines joined, so hints such as `Did you mean "trajectories"?` stay whole;
    the caret line that underlines a quoted statement goes."""
    lines = (line.strip() for line in str(exc).splitlines())
    text = " ".join(line for line in lines if line and set(line) != {"^"}) or type(exc).__name__
    return text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + " ..."


# The read-only guarantees of `query`, enforced by DuckDB itself whatever the statement: the file is opened
# read-only, no other file can be read or written (COPY, EXPORT, ATTACH, read_csv, glob, ...), no extension is
# installed or loaded, and no setting can be changed back (SET, PRAGMA, RESET).
READ_ONLY_CONFIG: dict[str, Any] = {
    "enable_external_access": False,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "allow_community_extensions": False,
    "lock_configuration": True,
}
FETCH_ROWS = 10_000  # rows per fetch of a query's result: the output streams, memory stays flat


class QueryResult(NamedTuple):
    """The columns of a query and its rows, fetched batch by batch as they are read."""

    columns: list[str]
    batches: Iterator[list[tuple[Any, ...]]]


def _check_sql_text(sql: str) -> None:
    """SQL that is not UTF-8 (bytes of the command line that did not decode) is refused, naming the byte."""
    try:
        sql.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(sql[exc.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
        raise InputError(f"SQL: not UTF-8 text ({what} at character {exc.start + 1})") from None
    if not sql.strip():
        raise InputError("SQL: no statement given")


def _connect_reading(path: Path, config: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    """A read-only connection for `query` and `export`; a file being written (a grade committing) is said so."""
    if not path.exists():
        raise InputError.at(str(path), "no such database"
                            + (near_path(path) or " (run `eebench grade ... --db` first)"))
    try:
        con = _connect(path, read_only=True, config=config)
    except InputError as exc:
        if "could not set lock" not in str(exc).lower():
            raise
        raise InputError.at(str(path), "is being written by another process (a grade committing, say); try again "
                                       "when it is done") from None
    try:
        _warn_if_newer(con, path)
    except BaseException:   # (a warning made an error by the caller's filter)
        con.close()
        raise
    return con


def _sql_error(exc: duckdb.Error) -> InputError:
    text = duckdb_message(exc)
    if "Required module 'pytz'" in text:  # DuckDB's Python client needs pytz to give TIMESTAMPTZ values
        return InputError("SQL: a TIMESTAMP WITH TIME ZONE value (now(), say) cannot be shown without the Python "
                          "package pytz: cast it (now()::TIMESTAMP) or pip install pytz")
    if "Permission Error" in text or "read-only mode" in text or "configuration has been locked" in text:
        text += " (`eebench query` only reads the results file; `eebench export` writes tables and views as files)"
    return InputError(f"SQL: {text}")


def _refuse_writes(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Refuse a statement that would change rows, in DuckDB's words for a read-only file: on the view `steps`
    DuckDB's binder would refuse it first, saying that it can only delete from a base table."""
    for statement in con.extract_statements(sql):
        if statement.type.name in ("INSERT", "UPDATE", "DELETE"):
            database = con.execute("SELECT current_database()").fetchall()[0][0]
            raise _sql_error(duckdb.InvalidInputException(
                f'Invalid Input Error: Cannot execute statement of type "{statement.type.name}" on database '
                f'"{database}" which is attached in read-only mode!'))


@contextlib.contextmanager
def query_rows(db: Path | str, sql: str, *, timeout: float | None = None) -> Iterator[QueryResult]:
    """Run SQL over a results file, read-only (enforced by DuckDB, see READ_ONLY_CONFIG); rows stream in batches.

    Several statements may be given, separated by `;`; the rows are the last one's. After `timeout` seconds the
    query is interrupted (EebenchError).
    """
    path = Path(db)
    _check_sql_text(sql)
    with tempfile.TemporaryDirectory(prefix="eebench-query-") as spill:  # a big sort spills here, not by the file
        con = _connect_reading(path, {**READ_ONLY_CONFIG, "temp_directory": spill})
        expired = threading.Event()

        def stop() -> None:
            expired.set()
            con.interrupt()

        timer = threading.Timer(timeout, stop) if timeout else None

        def run(work: Callable[[], T]) -> T:
            if expired.is_set():
                raise EebenchError(f"SQL: stopped after {timeout:g} s (--timeout)")
            try:
                return work()
            except duckdb.Error as exc:
                if expired.is_set():
                    raise EebenchError(f"SQL: stopped after {timeout:g} s (--timeout)") from None
                raise _sql_error(exc) from None

        def batches() -> Iterator[list[tuple[Any, ...]]]:
            while rows := run(lambda: cursor.fetchmany(FETCH_ROWS)):
                yield rows

        try:
            if timer:
                timer.daemon = True
                timer.start()
            with interruptible(con):   # (a signal interrupts the statement: see eebench.interrupts)
                run(lambda: _refuse_writes(con, sql))
                cursor = run(lambda: con.execute(sql))
                if cursor is None:   # only `;` or a comment: DuckDB ran nothing
                    raise InputError("SQL: no statement given")
                columns = [d[0] for d in cursor.description or []]
                yield QueryResult(columns, batches() if columns else iter(()))
        finally:
            if timer:
                timer.cancel()
            con.close()


def query(db: Path | str, sql: str, *, timeout: float | None = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Run read-only SQL (see query_rows) and return its columns and all its rows."""
    with query_rows(db, sql, timeout=timeout) as result:
        return result.columns, [row for batch in result.batches for row in batch]


EXPORT_FORMATS = ("parquet", "csv")
EXPORT_MARKER = "export.json"   # in an export folder: what it holds (and the sign that it may be replaced)
EXPORT_VERSION = 1


class Exported(NamedTuple):
    name: str
    file: str
    rows: int


def _identifier(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def export(db: Path | str, out: Path | str, fmt: str, tables: Sequence[str] = ()) -> list[Exported]:
    """Write tables and views of a results file (all by default) as `OUT/<name>.<fmt>` files, plus export.json.

    The database is opened read-only; the files are written into a temporary folder that replaces OUT only when
    every one is complete (OUT may be missing, empty, or an earlier export).
    """
    path, out = Path(db), Path(out)
    if fmt not in EXPORT_FORMATS:
        raise InputError(f"--format: expected parquet or csv, found {fmt!r}")
    con = _connect_reading(path, {k: v for k, v in READ_ONLY_CONFIG.items() if k != "enable_external_access"})
    try:
        try:
            found = [name for (name,) in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
                "AND table_schema = 'main' ORDER BY table_name").fetchall()]
        except duckdb.Error as exc:
            raise InputError.at(str(path), f"cannot be read: {duckdb_message(exc)}") from None
        for name in tables:
            if name not in found:
                raise InputError(f"--table: no table or view {name!r} in {path}{did_you_mean(name, found)}; it has "
                                 f"{', '.join(found) or 'none'}")
        chosen = list(dict.fromkeys(tables)) or found
        for name in chosen:
            if name.startswith(".") or not all(c.isalnum() or c in "_.-" for c in name):
                raise InputError(f"--table: {name!r} cannot be a file name; export it with `eebench query` and a "
                                 "name of letters, digits, '_', '.' or '-'")
        options = "FORMAT parquet" if fmt == "parquet" else "FORMAT csv, HEADER true"
        written: list[Exported] = []
        name = None
        try:
            with atomic_directory(out, marker=EXPORT_MARKER) as folder, interruptible(con):
                for name in chosen:
                    file = f"{name}.{fmt}"
                    (rows,) = con.execute(f"COPY (SELECT * FROM {_identifier(name)}) TO {_quoted(folder / file)} "
                                          f"({options})").fetchone()
                    written.append(Exported(name, file, int(rows)))
                marker = {"export_version": EXPORT_VERSION, "format": fmt, "db": str(path),
                          "eebench_version": __version__, "schema_version": _schema_version(con),
                          "tables": [e._asdict() for e in written]}
                (folder / EXPORT_MARKER).write_text(json.dumps(marker, indent=2) + "\n", "utf-8")
        except duckdb.IOException as exc:   # (the writing)
            raise EebenchError(f"{out}: export failed: {duckdb_message(exc)}; nothing was written") from None
        except duckdb.Error as exc:   # (the reading: a view that fails, a damaged block)
            raise EebenchError(f"{path}: {name!r} cannot be exported: {duckdb_message(exc)}; nothing was written to "
                               f"{out}") from None
        except OSError as exc:
            raise EebenchError(f"{out}: export failed: {exc.strerror or exc}; nothing was written") from None
        return written
    finally:
        con.close()
