"""`agentcc`: BALROG_expt AgentCC's TextWorld CoinCollector runs, a CSV per run with a Room column and memory rows.

Columns `Step,Room,Action,Result,Reasoning` (read by header name). `Action` is `game_action(go east)` for a move in
the game or `write_memory(Key)` / `read_memory(Key)` for the agent's notebook; memory rows share the step number
of the game action they follow and change nothing in the game, so they are not steps: their calls and text go
into the reasoning of the next game action (the ones after the last action into `meta.memory_after_end`).
`Room` is the room the agent is in when the row is written, so a game action's state (where it leaves the agent)
is the next row's Room; for the last row, the `-= Room =-` header of its Result, else its own Room (no header:
the agent did not move). `Result` is the game's text after the action.

The run's name says the model, the prompt and the outcome (`play_dschat_t0_hintDFS_WIN`): model and prompt become
the agent's labels, WIN/LOSS `meta.won`, an `L300` (the 300-room map) `meta.level`. The instance is
`textworld/coin_collector/<run>`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eebench.adapters.base import Adapter, Episode, LoggedStep, bad_record
from eebench.adapters.records import csv_table
from eebench.errors import InputError

COLUMNS = ("Step", "Room", "Action", "Result", "Reasoning")
_CALL = re.compile(r"(?P<tool>game_action|write_memory|read_memory)\((?P<argument>.*)\)", re.S)
_HEADER = re.compile(r"-= (.+?) =-")
# the run's name: play_<model>[_t0][_L<map size>][_<prompt>]_<WIN|LOSS>[_run<n>]
_NAME = re.compile(r"play_(?P<model>[^_]+)(?:_t\d+)?(?:_L(?P<level>\d+))?(?:_(?P<prompt>.+?))?_(?P<outcome>WIN|LOSS)"
                   r"(?:_run\d+)?$")
MODELS = {"dschat": "deepseek-chat", "o3mini": "o3-mini"}   # the names' short forms, as the research note says


class AgentCCAdapter(Adapter):
    name = "agentcc"
    summary = ("BALROG_expt AgentCC CoinCollector runs: CSV Step,Room,Action,Result,Reasoning; memory-tool rows "
               "folded into the next game action, the Room column read as each step's state")
    example = "eebench convert AgentCC/results/*.csv --from agentcc --out agentcc.jsonl"
    suffixes = (".csv",)
    never_carries = frozenset({"tokens_in", "tokens_out", "latency_ms", "timestamp"})

    def handles(self, path: Path, head: bytes) -> bool:
        header = head.split(b"\n", 1)[0].decode("utf-8", "replace").strip().lstrip("\ufeff")
        return path.suffix.lower() == ".csv" and {"Step", "Room", "Action", "Result"} <= set(header.split(","))

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        try:
            rows = list(_rows(path))
        except InputError as exc:
            yield exc
            return
        steps: list[LoggedStep] = []
        memory: list[str] = []   # memory calls since the last game action
        calls = 0
        for index, (line, cells) in enumerate(rows):
            call = _CALL.fullmatch(cells["Action"].strip())
            if call is None:
                yield bad_record(path, "expected game_action(...), write_memory(...) or read_memory(...), found "
                                       f"{cells['Action']!r}", line=line, field="Action")
                return
            if call["tool"] != "game_action":
                calls += 1
                memory.append(f"{cells['Action'].strip()}: {cells['Result'].strip()}")
                continue
            result = cells["Result"].strip()
            if index + 1 < len(rows):
                state = rows[index + 1][1]["Room"]
            else:
                header = _HEADER.search(result)
                state = header.group(1) if header else cells["Room"]
            own = cells.get("Reasoning") or None
            reasoning = "\n".join([*memory, own] if own else memory) or None
            steps.append(LoggedStep(action=call["argument"], raw=own, reasoning=reasoning, observation=result,
                                    state=state.strip() or None))
            memory = []
        meta: dict[str, Any] = {"memory_calls": calls}
        if memory:
            meta["memory_after_end"] = memory
        named = _NAME.match(path.stem)
        agent: dict[str, str | None] = {"harness": "balrog-expt"}
        if named:
            agent |= {"model": MODELS.get(named["model"], named["model"]), "prompt": named["prompt"]}
            meta["won"] = named["outcome"] == "WIN"
            if named["level"]:
                meta["level"] = int(named["level"])
        yield Episode(id=path.stem, record=0, steps=steps, task=f"textworld/coin_collector/{path.stem}",
                      agent=agent, meta=meta)


def _rows(path: Path) -> Iterator[tuple[int, dict[str, str]]]:
    """The rows of the table with the line each starts at; InputError at the first bad one."""
    for start, cells in csv_table(path, COLUMNS, COLUMNS[:4]):
        if not cells["Step"].strip().isdigit():
            raise bad_record(path, f"expected a step number, found {cells['Step']!r}", line=start, field="Step")
        yield start, cells
