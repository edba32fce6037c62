"""The `agentcc` adapter: BALROG_expt CoinCollector runs (Room column, memory-tool rows) real and hand-made."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.adapters import Episode, detect
from eebench.adapters.formats.agentcc import AgentCCAdapter
from eebench.documents import schema_problems
from tests.adapters.conftest import assert_refused, convert
from tests.textgames import text_games  # noqa: F401  (fixture)

HEADER = ("Step", "Room", "Action", "Result", "Reasoning")
RESULTS = Path("balrog-expt-coincollector/AgentCC/results")


def write_run(folder: Path, rows: list[tuple[str, ...]], stem: str = "play_dschat_t0_hintDFS_WIN") -> Path:
    path = folder / f"{stem}.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(rows)
    return path


def test_memory_rows_fold_into_the_next_game_action_and_the_next_room_is_the_state(tmp_path: Path) -> None:
    path = write_run(tmp_path, [
        ("0", "Bathroom", "write_memory(Notes)", "start in the bathroom", ""),
        ("1", "Bathroom", "game_action(go east)", "\n-= Sweaty Canteen =-\nYou're now in a sweaty canteen.\n\n",
         "east"),
        ("1", "Sweaty Canteen", "read_memory(Notes)", "start in the bathroom", ""),
        ("2", "Sweaty Canteen", "game_action(go north)", "You can't go that way.\n", ""),
        ("3", "Sweaty Canteen", "game_action(take coin)", "You can't see any such thing.\n", ""),
        ("3", "Sweaty Canteen", "write_memory(Notes)", "no coin here", ""),
    ])
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["steps"] == [
        {"action": "go east", "raw": "east", "reasoning": "write_memory(Notes): start in the bathroom\neast",
         "observation": "-= Sweaty Canteen =-\nYou're now in a sweaty canteen.", "state": "Sweaty Canteen"},
        {"action": "go north", "reasoning": "read_memory(Notes): start in the bathroom",
         "observation": "You can't go that way.", "state": "Sweaty Canteen"},
        {"action": "take coin", "observation": "You can't see any such thing.", "state": "Sweaty Canteen"}]
    assert run["instance"] == "textworld/coin_collector/play_dschat_t0_hintDFS_WIN" and run["env"] == "logged"
    assert run["agent"] == {"model": "deepseek-chat", "prompt": "hintDFS", "harness": "balrog-expt"}
    assert run["meta"] == {"memory_calls": 3, "memory_after_end": ["write_memory(Notes): no coin here"], "won": True}
    assert schema_problems(run, "trajectory", "out") == []


def test_the_last_action_takes_its_result_header_as_the_state(tmp_path: Path) -> None:
    path = write_run(tmp_path, [("1", "Cellar", "game_action(go east)", "-= Ugly Garage =-\nA garage.", "")],
                     stem="play_dschat_t0_L300_LOSS_run1")
    [run] = convert(path, tmp_path / "out.jsonl")
    assert run["steps"][0]["state"] == "Ugly Garage"
    assert run["agent"] == {"model": "deepseek-chat", "harness": "balrog-expt"}   # L300 is the map, not a prompt
    assert run["meta"] == {"memory_calls": 0, "won": False, "level": 300}


@pytest.mark.parametrize("content, message", [
    (b"Step,Room,Action,Result,Reasoning\n1,Cellar,go east,ok,\n", r":2: Action: expected game_action\(\.\.\.\), "
     r"write_memory\(\.\.\.\) or read_memory\(\.\.\.\), found 'go east'"),
    (b"Step,Room,Action,Result,Reasoning\nx,Cellar,game_action(go east),ok,\n", r":2: Step: expected a step "
     r"number, found 'x'"),
    (b"Step,Room,Action,Result,Reasoning\n1,Cellar,game_action(go east),ok\n", r":2: expected 5 values \(Step, "
     r"Room, Action, Result, Reasoning\), found 4"),
    (b'Step,Room,Action,Result,Reasoning\n1,Cellar,game_action(go east),"ok', r":2: malformed CSV \(truncated: a "
     r"quoted value is not closed\)"),
    (b"Step,Room,Action,Result,Room\n1,Cellar,game_action(go east),ok,I think\n",
     r":1: the column 'Room' is named twice in the header"),
])
def test_a_broken_run_is_one_located_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "play_x_LOSS.csv"
    path.write_bytes(content)
    assert_refused(path, tmp_path / "out.jsonl", message, fmt="agentcc")


def test_the_five_real_runs(text_games: Path, tmp_path: Path) -> None:
    files = sorted((text_games / RESULTS).glob("*.csv"))
    assert {detect(f).name for f in files} == {"agentcc"}
    runs = convert(files, tmp_path / "out.jsonl")
    # SOURCES.md: rows / environment steps / distinct rooms per run
    assert [(r["id"], len(r["steps"]), len({s["state"] for s in r["steps"]})) for r in runs] == [
        ("play_Qwen3_t0_hintDFS_LOSS", 55, 17), ("play_dschat_t0_L300_LOSS_run1", 62, 40),
        ("play_dschat_t0_hintDFS_WIN", 60, 40), ("play_dschat_t0_noDFS_LOSS", 60, 12),
        ("play_o3mini_hintDFS_LOSS", 80, 20)]
    assert [r["meta"]["won"] for r in runs] == [False, False, True, False, False]
    assert [r["meta"]["memory_calls"] for r in runs] == [56, 0, 3, 185, 2]
    header = re.compile(r"-= (.+?) =-")
    for run in runs:
        assert schema_problems(run, "trajectory", "out") == []
        for step in run["steps"]:   # where a result shows a room, the state is that room
            shown = header.search(step["observation"])
            assert shown is None or shown.group(1) == step["state"]
    assert runs[2]["steps"][-1] == {**runs[2]["steps"][-1], "action": "take coin", "state": "Kitchen"}


_ROOM = st.sampled_from(["Bathroom", "Salon", "Cozy Chamber", "Kitchen"])
# (is it a game action?, the room the row is written in, the row's text)
_ROW = st.tuples(st.booleans(), _ROOM, st.text(alphabet="abc ", max_size=8))


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, min_size=1, max_size=12))
def test_steps_are_the_game_actions_and_each_state_the_next_rows_room(
        tmp_path: Path, rows: list[tuple[bool, str, str]]) -> None:
    table = [(str(i), room, "game_action(go east)" if game else "write_memory(Notes)", text, "")
             for i, (game, room, text) in enumerate(rows)]
    path = write_run(tmp_path, table)
    [episode] = list(AgentCCAdapter().episodes(path))
    assert isinstance(episode, Episode)
    games = [i for i, (game, _, _) in enumerate(rows) if game]
    assert [s.action for s in episode.steps] == ["go east"] * len(games)
    assert [s.state for s in episode.steps] == [rows[i + 1][1] if i + 1 < len(rows) else rows[i][1] for i in games]
    assert episode.meta["memory_calls"] == len(rows) - len(games)
    assert len(episode.meta.get("memory_after_end", [])) == len(rows) - 1 - (games[-1] if games else -1)
