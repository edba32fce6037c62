"""The `balrog` adapter on BALROG's real episode logs (CSV step table + JSON summary) and on broken ones."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from eebench.adapters import detect
from eebench.errors import InputError
from tests.adapters.conftest import assert_refused, convert, files_claimed

GOTO = "babyai_goto_run_01__DeepSeek-R1-Distill-Qwen-32B_robust_cot"
OPEN = "babyai_open_run_01__claude-3.5-sonnet_naive"
COINS = "textworld_coin_collector_run_00__gemini-2.5-flash_naive"
NEVER = ["latency_ms", "timestamp", "tokens_in", "tokens_out"]


def write_episode(folder: Path, rows: list[list[str]], summary: dict[str, Any] | None = None,
                  header: tuple[str, ...] = ("Step", "Action", "Reasoning", "Observation", "Reward", "Done"),
                  stem: str = "goto_run_00") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    table = folder / f"{stem}.csv"
    with table.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, escapechar="˘", quoting=csv.QUOTE_MINIMAL)   # as balrog/evaluator.py writes
        writer.writerow(header)
        writer.writerows(rows)
    if summary is not None:
        (folder / f"{stem}.json").write_text(json.dumps(summary), "utf-8")
    return table


def test_the_three_real_episodes(agent_logs: Path, tmp_path: Path) -> None:
    folder = agent_logs / "balrog"
    trajectories = convert(sorted(folder.iterdir()), tmp_path / "out.jsonl")
    assert [t["id"] for t in trajectories] == [f"{GOTO}/seed-1244734774", f"{OPEN}/seed-3288224675",
                                               f"{COINS}/seed-125148109"]
    assert [len(t["steps"]) for t in trajectories] == [2, 47, 80]
    assert [t["instance"] for t in trajectories] == ["BabyAI-MixedTrainLocal-v0/goto", "BabyAI-MixedTrainLocal-v0/open",
                                                     f"textworld/coin_collector/{COINS}/seed-125148109"]
    assert {t["env"] for t in trajectories} == {"logged"}
    assert [t["agent"] for t in trajectories] == [
        {"name": "robust_cot", "model": "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "harness": "balrog"},
        {"name": "naive", "model": "claude-3-5-sonnet-latest", "harness": "balrog"},
        {"name": "naive", "model": "gemini-2.5-flash", "harness": "balrog"}]
    assert [t["source"]["file"] for t in trajectories] == [str(folder / f"{s}.csv") for s in (GOTO, OPEN, COINS)]
    assert {tuple(t["source"]["missing_fields"]) for t in trajectories} == {tuple(NEVER)}


def test_a_reasoning_agent_keeps_its_full_output_and_its_thought(agent_logs: Path, tmp_path: Path) -> None:
    [goto] = convert(agent_logs / "balrog" / f"{GOTO}.csv", tmp_path / "out.jsonl")
    first, second = goto["steps"]
    assert first["action"] == "turn left"
    assert first["raw"].startswith("<think>\nOkay, so I'm trying to figure out what action to take next")
    assert first["raw"].endswith("So the next action should be 'turn left'.\n</think>\n\n<|ACTION|>turn left<|END|>")
    assert first["reasoning"].startswith("Okay, so I'm trying to figure out what action to take next")
    assert first["reasoning"].endswith("So the next action should be 'turn left'.")
    assert first["observation"] == "a wall 1 step left\na purple key 2 steps forward"   # after the action
    assert second["action"] == "go forward"
    assert second["observation"] == "a wall 1 step left\na purple key 1 step forward"
    assert not {"tokens_in", "tokens_out", "latency_ms", "timestamp"} & (first.keys() | second.keys())
    assert goto["meta"] == {"mission": "go to the purple key", "episode_return": 0.971875, "done": True,
                            "progression": 1.0, "num_steps": 2, "seed": 1244734774, "tokens_in_total": 508,
                            "tokens_out_total": 726, "rewards": [0.0, 0.971875]}


def test_a_naive_agent_has_actions_and_observations_only(agent_logs: Path, tmp_path: Path) -> None:
    [episode] = convert(agent_logs / "balrog" / f"{OPEN}.csv", tmp_path / "out.jsonl")
    steps = episode["steps"]
    assert [s["action"] for s in steps[:6]] == ["turn left", "go forward", "turn right", "go forward", "go forward",
                                                "pick up"]
    assert steps[5]["observation"] == "You carry a blue key\na wall 3 steps forward\na wall 3 steps right"
    assert steps[-1] == {"action": "toggle",
                         "observation": "You carry a blue key\na wall 3 steps right\na open blue door 1 step forward"}
    assert all(set(s) == {"action", "observation"} for s in steps)
    assert episode["meta"]["rewards"][-1] == 0.6695312499999999 and sum(episode["meta"]["rewards"][:-1]) == 0


def test_textworld_episode(agent_logs: Path, tmp_path: Path) -> None:
    [episode] = convert(agent_logs / "balrog" / f"{COINS}.csv", tmp_path / "out.jsonl")
    assert episode["steps"][0] == {"action": "go east", "observation": "-= Sweaty Canteen =-\nYou're now in a sweaty "
                                   "canteen.\n\n\n\nThere is an exit to the west. Don't worry, it is unblocked."}
    assert episode["steps"][-1]["observation"].startswith('-= Pantry =-\nYou are in a pantry. An usual one. You try '
                                                          'to gain information on your surroundings by using a '
                                                          'technique you call "looking."')
    assert {s["action"] for s in episode["steps"]} == {"go east", "go west", "go north", "go south"}
    assert episode["meta"]["episode_return"] == 0.0 and "mission" not in episode["meta"]


@pytest.mark.parametrize("names", [[f"{GOTO}.json"], [f"{GOTO}.csv", f"{GOTO}.json"],
                                   [f"{GOTO}.json", f"{GOTO}.csv", f"{GOTO}.csv"]])
def test_either_file_or_both_convert_the_episode_once(agent_logs: Path, tmp_path: Path, names: list[str]) -> None:
    trajectories = convert([agent_logs / "balrog" / n for n in names], tmp_path / "out.jsonl")
    assert [t["id"] for t in trajectories] == [f"{GOTO}/seed-1244734774"]
    assert len(trajectories[0]["steps"]) == 2


def test_each_real_file_is_detected_as_balrog_and_no_other_is_claimed(agent_logs: Path) -> None:
    files = sorted((agent_logs / "balrog").iterdir())
    assert len(files) == 6
    assert {detect(f).name for f in files} == {"balrog"}
    assert files_claimed(agent_logs, "balrog") == [f"balrog/{f.name}" for f in files]


def test_columns_are_read_by_name_in_the_current_order(tmp_path: Path) -> None:
    # current BALROG writes Step, Observation, Action, ...; a value holding the escape character survives
    table = write_episode(tmp_path, [["0", "a wall 2 steps forward", "go forward", "", "0", "False"],
                                     ["1", 'quote " and ˘ breve', "toggle", "", "1.0", "True"]],
                          header=("Step", "Observation", "Action", "Reasoning", "Reward", "Done"))
    [episode] = convert(table, tmp_path / "out.jsonl", fmt="balrog", instance="babyai/goto", env="logged")
    assert episode["steps"] == [{"action": "go forward", "observation": "a wall 2 steps forward"},
                                {"action": "toggle", "observation": 'quote " and ˘ breve'}]
    assert episode["meta"] == {"rewards": [0.0, 1.0], "done": True}   # no summary: what the table says
    assert episode["id"] == "goto_run_00" and episode["agent"] == {"harness": "balrog"}


def test_a_table_without_its_summary_is_known_by_its_file_name(tmp_path: Path) -> None:
    table = write_episode(tmp_path, [["0", "go forward", "", "seen", "0", "True"]])
    [trajectory] = convert(table, tmp_path / "out.jsonl", fmt="balrog")
    assert trajectory["instance"] == "goto_run_00"
    [mapped] = convert(table, tmp_path / "mapped.jsonl", fmt="balrog", instance="babyai/goto", env="logged")
    assert mapped["instance"] == "babyai/goto"
    # a TextWorld task's table: the file name says the task, and the run is its own instance (no seed to add)
    coins = write_episode(tmp_path / "tw", [["0", "go east", "", "-= Attic =-", "0", "False"]],
                          stem="coin_collector_run_03")
    [run] = convert(coins, tmp_path / "tw.jsonl", fmt="balrog")
    assert run["instance"] == "textworld/coin_collector/coin_collector_run_03" and run["env"] == "logged"


def test_a_summary_without_its_table(tmp_path: Path) -> None:
    summary = tmp_path / "goto_run_00.json"
    summary.write_text(json.dumps({"task": "t", "action_frequency": {}, "episode_return": 0, "num_steps": 0}))
    assert detect(summary).name == "balrog"
    with pytest.raises(InputError, match=r"goto_run_00\.json: expected the BALROG step table goto_run_00\.csv beside "
                                         r"this file \(BALROG logs an episode as <task>_run_NN\.csv with its \.json "
                                         r"summary\)"):
        convert(summary, tmp_path / "out.jsonl")
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("content, message", [
    (b'Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,"a wall\n2 steps', r":3: malformed CSV "
     r"\(truncated: a quoted value is not closed\)"),
    (b"Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,ok,0,False\n2,toggle,,ok,0,True\n",
     r":3: Step: expected step 1, found '2'"),
    (b"Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,ok,zero,False\n", r":2: Reward: expected a "
     r"number, found 'zero'"),
    (b"Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,ok,nan,False\n", r":2: Reward: expected a "
     r"number, found 'nan'"),
    (b"Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,ok,0,False\n", r":2: expected 6 values "
     r"\(Step, Action, Reasoning, Observation, Reward, Done\), found 5"),
    (b"Step,Move,Observation,Reward,Done\n0,go,ok,0,False\n", r":1: expected BALROG columns Step, Action, Reasoning, "
     r"Observation, Reward, Done; found Step, Move, Observation, Reward, Done \(no Action\)"),
    (b"Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,ok,0,False\n1,go forward,,\xff\xfe,0,True\n",
     r":3: not UTF-8 text \(byte 0xff\)"),
    (b"", r": is empty; expected a balrog log"),
    # (read before: steps without observation, or with the Done column's False as each one's observation)
    (b"Step,Action,Reasoning,Reward,Done\n0,go forward,,0,False\n", r":1: expected BALROG columns Step, Action, "
     r"Reasoning, Observation, Reward, Done; found Step, Action, Reasoning, Reward, Done \(no Observation\)"),
    (b"Step,Action,Reasoning,Observation,Reward,Observation\n0,go forward,,ok,0,False\n",
     r":1: the column 'Observation' is named twice in the header"),
])
def test_a_broken_table_is_one_located_error(tmp_path: Path, content: bytes, message: str) -> None:
    table = tmp_path / "goto_run_00.csv"
    table.write_bytes(content)
    assert_refused(table, tmp_path / "out.jsonl", message, fmt="balrog", instance="x", env="logged")


def test_a_table_shorter_than_its_summary_says_is_refused(agent_logs: Path, tmp_path: Path) -> None:
    shutil.copy(agent_logs / "balrog" / f"{OPEN}.json", tmp_path / f"{OPEN}.json")
    text = (agent_logs / "balrog" / f"{OPEN}.csv").read_text("utf-8")
    (tmp_path / f"{OPEN}.csv").write_text(text.split("\n20,")[0] + "\n", "utf-8")   # rows of steps 0-19
    with pytest.raises(InputError, match=r"_naive\.csv: 20 step rows, but the summary .*_naive\.json says num_steps "
                                         r"47; is the table truncated\?"):
        convert(tmp_path / f"{OPEN}.csv", tmp_path / "out.jsonl")


def test_a_bad_summary_is_located_in_the_summary(tmp_path: Path) -> None:
    table = write_episode(tmp_path, [["0", "go forward", "", "ok", "0", "True"]])
    (tmp_path / "goto_run_00.json").write_text('{"task": "goto", "episode_return"', "utf-8")
    with pytest.raises(InputError, match=r"goto_run_00\.json:1: truncated JSON"):
        convert(table, tmp_path / "out.jsonl", fmt="balrog")
    (tmp_path / "goto_run_00.json").write_text("[1, 2]", "utf-8")
    with pytest.raises(InputError, match=r"goto_run_00\.json: expected the BALROG episode summary \(a JSON object\), "
                                         r"found a list"):
        convert(table, tmp_path / "out.jsonl", fmt="balrog")


def test_skip_invalid_goes_on_with_the_next_episode(agent_logs: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken_run_00.csv"
    broken.write_bytes(b"Step,Action,Reasoning,Observation,Reward,Done\n0,go,,\xff,0,True\n")
    trajectories = convert([broken, agent_logs / "balrog" / f"{OPEN}.csv"], tmp_path / "out.jsonl", fmt="balrog",
                           skip_invalid=True)
    assert [t["id"] for t in trajectories] == [f"{OPEN}/seed-3288224675"]


def test_the_command_line_fails_with_one_line_and_writes_nothing(cli: Any, tmp_path: Path) -> None:
    table = tmp_path / "goto_run_00.csv"
    table.write_bytes(b'Step,Action,Reasoning,Observation,Reward,Done\n0,go forward,,"a wall\n')
    out = tmp_path / "out.jsonl"
    result = cli("convert", table, "--out", out, code=2)
    assert result.stderr == f"error: {table}:2: malformed CSV (truncated: a quoted value is not closed)\n"
    assert not out.exists()


def test_formats_says_what_balrog_never_carries(cli: Any) -> None:
    [row] = [r for r in json.loads(cli("formats", "--format", "json").stdout)["formats"] if r["name"] == "balrog"]
    assert row["never_carries"] == ["tokens_in", "tokens_out", "latency_ms", "timestamp"]
    assert row["suffixes"] == [".csv", ".json"]


@pytest.mark.parametrize("name, value, said", [
    ("task", {"name": "goto"}, "expected a string, found a mapping"),   # (it crashed: a dict is not hashable)
    ("task", ["goto"], "expected a string, found a list"),
    ("task", 7, "expected a string, found an integer"),               # (the instance was silently the file's)
    ("seed", True, "expected an integer, found a boolean"),           # (the id was .../seed-True)
    ("seed", "7", "expected an integer, found a string"),
])
def test_a_summary_field_naming_the_episode_of_the_wrong_type_is_refused(cli: Any, tmp_path: Path, name: str,
                                                                         value: Any, said: str) -> None:
    table = write_episode(tmp_path, [["0", "go forward", "", "ok", "0", "True"]],
                          {"task": "BabyAI-MixedTrainLocal-v0/goto", "seed": 3, "num_steps": 1} | {name: value})
    out = tmp_path / "out.jsonl"
    result = cli("convert", table, "--from", "balrog", "--out", out, code=2)
    assert result.stderr == f"error: {tmp_path / 'goto_run_00.json'}: {name}: {said}\n"
    assert not out.exists()


def test_a_done_cell_is_true_or_false(tmp_path: Path) -> None:
    table = write_episode(tmp_path, [["0", "go forward", "", "ok", "0", "yes"]])
    assert_refused(table, tmp_path / "out.jsonl", r":2: Done: expected True or False, found 'yes'", fmt="balrog")


def test_a_header_with_empty_names_past_the_columns_converts(tmp_path: Path) -> None:
    """Trailing commas (two empty names) were refused as a column named twice, the name unquoted."""
    table = tmp_path / "goto_run_00.csv"
    table.write_bytes(b"Step,Action,Reasoning,Observation,Reward,Done,,\n0,go forward,,ok,0,True,,\n")
    [run] = convert(table, tmp_path / "out.jsonl", fmt="balrog", instance="x", env="logged")
    assert [s["action"] for s in run["steps"]] == ["go forward"]
