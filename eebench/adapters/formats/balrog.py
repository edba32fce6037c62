"""`balrog`: BALROG episode logs, the step table `<task>_run_NN.csv` with its summary `<task>_run_NN.json` beside it.

BALROG's evaluator writes one CSV row per step (Step, Action, Reasoning, Observation, Reward, Done; the column
order changed between versions, so columns are read by their header name) and, when the episode ends, a JSON
summary: task, mission, seed, agent and client configuration, episode totals of tokens, return and outcome.
The two files are one episode: either path, or both, converts it once (`primary_file` names the CSV). The
Action column is the action the environment accepted; Reasoning is the model's full output (empty for agents
that answer with the action alone); Observation is the text the agent saw after acting. The episode's first
observation and per-step tokens and timing are not logged.

The instance is the summary's task (`BabyAI-MixedTrainLocal-v0/goto`), except for TextWorld: BALROG cycles its
TextWorld tasks through several game files, so the task does not name the game played and each episode is its own
instance, `textworld/<task>/<run>/seed-<seed>` (`textworld/coin_collector/coin_collector_run_00/seed-606616765`),
for checkpoint files to map runs to games. The seed is the summary's: run names repeat in every BALROG run
directory, so an id of the run name alone would give another lab's `coin_collector_run_00` the map of ours. A
table without its summary is `textworld/<task>/<run>` when its name is `<task>_run_NN` of a TextWorld task.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, as_int, bad_record, count_problem
from eebench.adapters.chat import split_think
from eebench.adapters.records import csv_table, head_value, json_document
from eebench.documents import json_type
from eebench.errors import InputError

COLUMNS = ("Step", "Action", "Reasoning", "Observation", "Reward", "Done")
REQUIRED = ("Step", "Action", "Observation")   # (every BALROG version writes them; a step without its
#  observation would be graded as an agent that saw nothing)
ESCAPE = "˘"   # BALROG's csv.writer escapechar: read with the dialect it was written with
SUMMARY_MARKERS = (b'"action_frequency"', b'"episode_return"', b'"num_steps"')
_ANSWER = re.compile(r"<\|ACTION\|>.*?<\|END\|>", re.S)
TEXTWORLD_TASKS = frozenset({"coin_collector", "the_cooking_game", "treasure_hunter"})   # BALROG's TextWorld tasks
_RUN = re.compile(r"_run_\d+$")   # BALROG names an episode's files <task>_run_NN
# the summary's fields that name the episode: (name, test, what was expected); null is as good as absent
_SUMMARY_FIELDS = (("task", lambda v: isinstance(v, str), "a string"),
                   ("seed", lambda v: type(v) is int, "an integer"))


class BalrogAdapter(Adapter):
    name = "balrog"
    summary = ("BALROG episodes (BabyAI, TextWorld, ...): the step table <task>_run_NN.csv with its summary "
               "<task>_run_NN.json beside it; either file, or both, converts the episode once")
    example = "eebench convert results/*/babyai/*/*_run_*.csv --from balrog --out balrog.jsonl"
    suffixes = (".csv", ".json")
    never_carries = frozenset({"tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        suffix = path.suffix.lower()
        if suffix == ".csv":
            header = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
            return {"Step", "Action", "Observation", "Done"} <= set(header.split(","))
        return suffix == ".json" and head_value(head) == "{" and all(m in head for m in SUMMARY_MARKERS)

    def primary_file(self, path: Path) -> Path:
        table = path.with_suffix(".csv")
        return table if path.suffix.lower() == ".json" and table.is_file() else path

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        if path.suffix.lower() == ".json":
            # primary_file chose the CSV when there is one
            yield bad_record(path, f"expected the BALROG step table {path.with_suffix('.csv').name} beside this file "
                                   "(BALROG logs an episode as <task>_run_NN.csv with its .json summary)")
            return
        summary_path = path.with_suffix(".json")
        summary: Mapping[str, Any] = {}
        if summary_path.is_file():
            try:
                value = json_document(summary_path)
            except InputError as exc:
                yield exc
                return
            if not isinstance(value, dict):
                yield bad_record(summary_path, f"expected the BALROG episode summary (a JSON object), found "
                                               f"{json_type(value)}")
                return
            summary = value
            for name, wanted, expected in _SUMMARY_FIELDS:   # they name the instance and the trajectory's id
                found = summary.get(name)
                if found is not None and not wanted(found):
                    yield bad_record(summary_path, f"expected {expected}, found {json_type(found)}", field=name)
                    return
            for name in ("input_tokens", "output_tokens"):   # (a total of another type was none, silently)
                problem = count_problem(summary.get(name))
                if problem is not None:
                    yield bad_record(summary_path, problem, field=name)
                    return
        try:
            steps, outcome = _read_table(path)
        except InputError as exc:
            yield exc
            return
        logged = as_int(summary.get("num_steps"))
        if logged is not None and logged != len(steps):
            yield bad_record(path, f"{len(steps)} step rows, but the summary {summary_path.name} says num_steps "
                                   f"{logged}; is the table truncated?")
            return
        yield _episode(path, steps, outcome, summary)


def _read_table(path: Path) -> tuple[list[LoggedStep], dict[str, Any]]:
    """The steps of a BALROG CSV, read as a stream of rows, and what its columns say of the outcome."""
    steps: list[LoggedStep] = []
    rewards: list[float] = []
    done: bool | None = None
    header: list[str] = []
    rows = csv_table(path, COLUMNS, REQUIRED, table="BALROG ", escapechar=ESCAPE, header_out=header)
    for start, cells in rows:
        if cells["Step"].strip() != str(len(steps)):
            raise bad_record(path, f"expected step {len(steps)}, found {cells['Step']!r}", line=start,
                             field="Step")
        if "Reward" in cells:
            reward = _number(cells["Reward"])
            if reward is None:
                raise bad_record(path, f"expected a number, found {cells['Reward']!r}", line=start,
                                 field="Reward")
            rewards.append(reward)
        if "Done" in cells:
            if cells["Done"] not in ("True", "False"):   # (anything else read as False would end no episode)
                raise bad_record(path, f"expected True or False, found {cells['Done']!r}", line=start, field="Done")
            done = cells["Done"] == "True"
        steps.append(_step(cells))
    outcome: dict[str, Any] = {"rewards": rewards} if "Reward" in header else {}
    if done is not None:
        outcome["done"] = done
    return steps, outcome


def _step(cells: Mapping[str, str]) -> LoggedStep:
    output = cells.get("Reasoning") or None
    return LoggedStep(action=cells["Action"], raw=output, reasoning=_reasoning(output),
                      observation=cells.get("Observation"))


def _reasoning(output: str | None) -> str | None:
    """The model's reasoning: its output without the final `<|ACTION|>…<|END|>` answer and `<think>` tags."""
    if not output:
        return None
    thought, rest = split_think(_ANSWER.sub("", output))
    return "\n".join(t for t in (thought, (rest or "").strip()) if t) or None


def _episode(path: Path, steps: list[LoggedStep], outcome: dict[str, Any], summary: Mapping[str, Any]) -> Episode:
    agent = summary.get("agent") if isinstance(summary.get("agent"), Mapping) else {}
    client = summary.get("client") if isinstance(summary.get("client"), Mapping) else {}
    seed = summary.get("seed")
    meta: dict[str, Any] = {key: summary[key] for key in ("mission", "episode_return", "done", "progression",
                                                           "num_steps", "seed")
                            if isinstance(summary.get(key), (str, int, float, bool))}
    for key, total in (("input_tokens", "tokens_in_total"), ("output_tokens", "tokens_out_total")):
        if as_int(summary.get(key)) is not None:
            meta[total] = as_int(summary[key])
    for key, value in outcome.items():   # the table's own record of the outcome, when the summary has none
        meta.setdefault(key, value)
    task = summary.get("task") if summary else _RUN.sub("", path.stem)   # (no summary: the file name's task)
    if task in TEXTWORLD_TASKS:
        task = f"textworld/{task}/{path.stem}" + (f"/seed-{seed}" if isinstance(seed, int) else "")
    elif not summary:
        task = None
    return Episode(
        id=f"{path.stem}/seed-{seed}" if isinstance(seed, int) else path.stem, record=0, steps=steps,
        task=task if isinstance(task, str) else None, fields=summary,
        agent={"name": _string(agent.get("type")), "model": _string(client.get("model_id")), "harness": "balrog"},
        meta=meta)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None   # NaN would not be valid JSON in the trajectory


def _string(value: Any) -> str | None:
    return value if isinstance(value, str) else None
