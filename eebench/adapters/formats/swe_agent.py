"""`swe-agent`: SWE-agent trajectories (`.traj`), the 1.x format and the 0.x legacy one; one file is one episode.

Each `trajectory[i]` is a step: `action` is the command the harness parsed and ran, `observation` its output,
`thought` the model's reasoning and `response` its full output; 1.x adds `execution_time` (seconds) and keeps
`state` as an object where 0.x kept a JSON string, and `reasoning_content` (a thinking model's own reasoning, before
the thought in the step's reasoning). Tokens exist only as episode totals (`info.model_stats`, kept in meta); there
are no timestamps. The instance is `replay_config.problem_statement.id` where the file has it (1.x), else the
file's stem, which SWE-agent names after the instance. A RetryAgent's file holds every attempt (`attempts`, each a
trajectory with its own totals) beside a copy of the one it chose: each attempt is a trajectory,
`<stem>/attempt-<i>`, its meta saying which was chosen (`best_attempt`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from eebench.adapters.base import (Adapter, Episode, LoggedStep, as_int, as_label, bad_record, count_problem, dig,
                                   number)
from eebench.adapters.records import head_value, json_document, object_with_list
from eebench.documents import json_type, loads_json
from eebench.errors import InputError

# SWE-agent writes `environment` first, then `trajectory`: a .json copy is recognized by that opening
_OPENING = re.compile(rb'^\s*\{\s*"environment"\s*:\s*"[^"]*"\s*,\s*"trajectory"\s*:\s*\[')
_TEXT_FIELDS = ("observation", "thought", "response", "reasoning_content")


class SweAgentAdapter(Adapter):
    name = "swe-agent"
    summary = ("SWE-agent trajectories (.traj, 1.x and 0.x legacy): trajectory[] action, observation, thought, "
               "reasoning_content, response, execution_time; token totals from info.model_stats; a RetryAgent's "
               "attempts each a trajectory")
    example = "eebench convert trajectories/*/*.traj --from swe-agent --out swe.jsonl"
    suffixes = (".traj",)
    never_carries = frozenset({"tokens_in", "tokens_out", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        if path.suffix.lower() == ".traj":
            return head_value(head) == "{" and b'"trajectory"' in head
        return path.suffix.lower() == ".json" and _OPENING.match(head) is not None

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        try:
            document = json_document(path)
            attempts = document.get("attempts") if isinstance(document, dict) else None
            if not isinstance(attempts, list):
                yield _episode(path, object_with_list(path, document, "trajectory", "a SWE-agent trajectory"))
                return
            best = dig(document, "info.best_attempt_idx")
            for i, attempt in enumerate(attempts):
                if not isinstance(attempt, Mapping) or not isinstance(attempt.get("trajectory"), list):
                    found = "an object without a `trajectory` list" if isinstance(attempt, Mapping) else \
                        json_type(attempt)
                    raise bad_record(path, f"expected an attempt's trajectory (an object with a `trajectory` list), "
                                           f"found {found}", record=0, field=f"attempts[{i}]")
                yield _episode(path, attempt, attempt=i, best=best)
        except InputError as exc:
            yield exc


def _episode(path: Path, document: Mapping[str, Any], attempt: int | None = None, best: Any = None) -> Episode:
    at = "" if attempt is None else f"attempts[{attempt}]."
    steps = [_step(path, f"{at}trajectory[{index}]", item) for index, item in enumerate(document["trajectory"])]
    replay = document.get("replay_config")
    if isinstance(replay, str):   # some 1.x versions store the replay config as a JSON string
        try:
            replay = loads_json(replay)
        except ValueError:
            replay = None
    task = dig(replay, "problem_statement.id")
    if task is not None and as_label(task) is None:   # (it names the instance: the file's name stood in, silently)
        raise bad_record(path, f"expected a string or an integer, found {json_type(task)}", record=0,
                         field=f"{at}replay_config.problem_statement.id")
    model = dig(replay, "agent.model.name")
    info = document.get("info") if isinstance(document.get("info"), Mapping) else {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), Mapping) else {}
    meta: dict[str, Any] = {key: value for key, value in (("exit_status", info.get("exit_status")),
                                                          ("environment", document.get("environment")))
                            if isinstance(value, str)}
    for key, name in (("tokens_sent", "tokens_in_total"), ("tokens_received", "tokens_out_total"),
                      ("api_calls", "api_calls")):
        if name != "api_calls" and (problem := count_problem(stats.get(key))) is not None:
            raise bad_record(path, problem, record=0, field=f"{at}info.model_stats.{key}")   # (no total, silently)
        if as_int(stats.get(key)) is not None:
            meta[name] = as_int(stats[key])
    for key in ("instance_cost", "total_cost"):
        if number(stats.get(key)) is not None:
            meta[key] = stats[key]
    if attempt is not None:
        meta["attempt"] = attempt
        if isinstance(best, int) and not isinstance(best, bool):
            meta["best_attempt"] = attempt == best
    return Episode(id=path.stem if attempt is None else f"{path.stem}/attempt-{attempt}", record=0, steps=steps,
                   task=as_label(task) or path.stem,
                   fields=document, agent={"model": model if isinstance(model, str) else None, "harness": "swe-agent"},
                   meta=meta)


def _step(path: Path, where: str, item: Any) -> LoggedStep:
    if not isinstance(item, Mapping):
        raise bad_record(path, f"expected a step object, found {json_type(item)}", record=0, field=where)
    action = item.get("action")
    if not isinstance(action, str):
        raise bad_record(path, f"expected the command as a string, found {json_type(action)}", record=0,
                         field=f"{where}.action")
    texts: dict[str, str | None] = {}
    for key in _TEXT_FIELDS:
        value = item.get(key)
        if value is not None and not isinstance(value, str):
            raise bad_record(path, f"expected a string, found {json_type(value)}", record=0, field=f"{where}.{key}")
        texts[key] = value
    seconds = item.get("execution_time")
    if seconds is not None and (number(seconds) is None or seconds < 0):
        found = seconds if number(seconds) is not None else json_type(seconds)
        raise bad_record(path, f"expected seconds (a number >= 0), found {found}", record=0,
                         field=f"{where}.execution_time")
    reasoning = "\n".join(t for t in (texts["reasoning_content"], texts["thought"]) if t) or None
    return LoggedStep(action=action, raw=texts["response"], reasoning=reasoning,
                      observation=texts["observation"],
                      latency_ms=seconds * 1000 if seconds is not None else None)
