"""`adapt`: ADaPT's released results (Prasad et al.): ALFWorld and TextCraft traces, WebShop action histories.

One JSON object per file. ALFWorld groups episodes by task type, then game path (`pick_and_place` ->
`pick_and_place_simple-Mug-None-Desk-308/trial_...`); TextCraft and WebShop key them `env_0`, `fixed_0`, ...;
an `overall` entry holds the success rate. An ALFWorld or TextCraft episode's `trace` is one string: the blocks
`> action\\nobservation` of every ADaPT executor call, each call ending with a bare `>` and the next starting
with its first action (no `>`). A `think: ...` action (answered `OK.`) is the model thinking aloud, not a move:
it goes into the reasoning of the next action (thoughts after the last action into `meta.thoughts_after_end`).
WebShop keeps only `action_history` (`think[...]` folded alike), no observations.

ALFWorld's state is the agent's location: the target of the last `go to X` that did not answer "Nothing
happens." (its observations use the old text, "You arrive at the location."). TextCraft has no location.
Instances: `alfworld/<game path>`, `textcraft/env_<i>`, `webshop/fixed_<i>`; trajectory ids `<file stem>/<instance>`;
the model is read from ADaPT's file name (`ADaPT_maxd3_alfworld_text_davinci_003.json`: text-davinci-003).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, bad_record, number
from eebench.adapters.records import head_value, json_document
from eebench.documents import json_type
from eebench.errors import InputError

SUMMARY = "overall"
_GO_TO = re.compile(r"go to (.+)")
_WEB_THINK = re.compile(r"think\[(.*)\]", re.S)
NOTHING = "Nothing happens."
# ADaPT names its results ADaPT_<config>_<world>_<model with _ for ->: the model is the agent's label
_NAME = re.compile(r"ADaPT_(?P<config>[^_]+)_(?:alfworld|textcraft|webshop)_(?P<model>.+)", re.I)


class AdaptAdapter(Adapter):
    name = "adapt"
    summary = ("ADaPT results (ALFWorld, TextCraft, WebShop JSON): each executor trace split into actions and "
               "observations; think steps folded into reasoning; ALFWorld's location as the state")
    example = "eebench convert ADaPT/results/ADaPT_maxd3_alfworld_text_davinci_003.json --from adapt --out a.jsonl"
    suffixes = (".json",)
    never_carries = frozenset({"raw", "tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        return (path.suffix.lower() == ".json" and head_value(head) == "{" and b'"problem"' in head
                and (b'"trace"' in head or b'"action_history"' in head))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        document = json_document(path)
        if not isinstance(document, dict):
            raise bad_record(path, f"expected ADaPT's results (a JSON object), found {json_type(document)}")
        world = _world(path.name, document)
        named = _NAME.fullmatch(path.stem)
        agent = {"name": "adapt", "harness": "adapt", "model": named["model"].replace("_", "-") if named else None}
        for key, value in document.items():
            if key == SUMMARY:
                continue
            if world == "alfworld":
                if not isinstance(value, dict):
                    yield bad_record(path, f"expected the episodes of task type {key!r} (an object), found "
                                           f"{json_type(value)}", record=key)
                    continue
                for game, entry in value.items():
                    yield _episode(path, world, f"{key}/{game}", game, entry, agent)
            else:
                yield _episode(path, world, key, key, value, agent)


def _world(name: str, document: dict[str, Any]) -> str:
    """Which of ADaPT's three worlds: the file's name says (as ADaPT names them), else the shape does."""
    for world in ("alfworld", "textcraft", "webshop"):
        if world in name.lower():
            return world
    first = next((v for k, v in document.items() if k != SUMMARY and isinstance(v, dict)), {})
    if "trace" in first:
        return "textcraft"
    return "webshop" if "action_history" in first else "alfworld"   # alfworld nests episodes by task type


def _episode(path: Path, world: str, record: str, game: str, entry: Any,
             agent: dict[str, str | None]) -> Episode | InputError:
    if not isinstance(entry, dict):
        return bad_record(path, f"expected an episode (an object), found {json_type(entry)}", record=record)
    if isinstance(entry.get("trace"), str):
        steps, after = _trace_steps(entry["trace"], locations=world == "alfworld")
    elif isinstance(entry.get("action_history"), list):
        wrong = next((i for i, a in enumerate(entry["action_history"]) if not isinstance(a, str)), None)
        if wrong is not None:   # (it was written as its Python repr)
            return bad_record(path, f"expected an action string, found {json_type(entry['action_history'][wrong])}",
                              record=record, field=f"action_history[{wrong}]")
        steps, after = _history_steps(entry["action_history"])
    else:
        return bad_record(path, "expected a `trace` string or an `action_history` list", record=record,
                          field="trace")
    meta: dict[str, Any] = {k: entry[k] for k in ("reward", "score", "success")
                            if isinstance(entry.get(k), bool) or number(entry.get(k)) is not None}
    if isinstance(entry.get("problem"), str):
        meta["problem"] = entry["problem"]
    if after:
        meta["thoughts_after_end"] = after
    # the id names the file too: two runs of one game (another model's) convert together
    return Episode(id=f"{path.stem}/{world}/{game}", record=record, steps=steps, task=f"{world}/{game}", fields=entry,
                   agent=agent, meta=meta)


def _trace_steps(trace: str, *, locations: bool) -> tuple[list[LoggedStep], list[str]]:
    """The actions of a trace with what followed each, thoughts folded into the next action's reasoning."""
    blocks: list[tuple[str, list[str]]] = []   # (action, observation lines)
    expect_action = True   # at the trace's start and after a bare `>`, the next text line is an action
    for line in trace.split("\n"):
        if line.startswith(">"):
            action = line[1:].strip()
            if action:
                blocks.append((action, []))
            expect_action = not action
        elif expect_action:
            if line.strip():
                blocks.append((line.strip(), []))
                expect_action = False
        elif blocks:
            blocks[-1][1].append(line)
    steps: list[LoggedStep] = []
    thoughts: list[str] = []
    location: str | None = None
    for action, lines in blocks:
        if action.startswith("think:"):
            thoughts.append(action[len("think:"):].strip())
            continue
        observation = "\n".join(lines).strip()
        if locations:
            target = _GO_TO.fullmatch(action)
            if target and observation != NOTHING:
                location = target.group(1).strip()
        steps.append(LoggedStep(action=action, reasoning="\n".join(thoughts) or None, observation=observation,
                                state=location if locations else None))
        thoughts = []
    return steps, thoughts


def _history_steps(history: list[str]) -> tuple[list[LoggedStep], list[str]]:
    steps: list[LoggedStep] = []
    thoughts: list[str] = []
    for text in history:
        think = _WEB_THINK.fullmatch(text.strip())
        if think:
            thoughts.append(think.group(1))
            continue
        steps.append(LoggedStep(action=text, reasoning="\n".join(thoughts) or None))
        thoughts = []
    return steps, thoughts
