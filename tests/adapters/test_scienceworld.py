"""The `scienceworld` adapter: ScienceWorld run histories (the oracle's), real and hand-made."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from eebench.adapters import detect
from eebench.documents import schema_problems
from eebench.errors import InputError
from tests.adapters.conftest import convert
from tests.textgames import text_games  # noqa: F401  (fixture)


def look(room: str) -> str:
    return f"This room is called the {room}. In it, you see: \n\tthe agent\n"


def history(steps: list[dict]) -> dict:
    return {"3": {"episodeIdx": 3, "history": {"taskName": "boil", "variationIdx": 3, "taskDescription": "Boil water.",
                                               "history": steps}}}


def test_the_state_is_the_next_freelook_room_and_the_last_move_target(tmp_path: Path) -> None:
    path = tmp_path / "task1.json"
    path.write_text(json.dumps(history([
        {"action": "look around", "observation": look("kitchen"), "freelook": look("kitchen"), "score": "0.0",
         "isCompleted": "false", "inventory": ""},
        {"action": "go to hallway", "observation": "You move to the hallway.", "freelook": look("kitchen"),
         "score": "0.1", "isCompleted": "false", "inventory": ""},
        {"action": "go to outside", "observation": "You move to the outside.", "freelook": look("hallway"),
         "score": "1.0", "isCompleted": "true", "inventory": ""}])), "utf-8")
    [episode] = convert(path, tmp_path / "out.jsonl")
    assert [(s["action"], s["state"]) for s in episode["steps"]] == [
        ("look around", "kitchen"), ("go to hallway", "hallway"), ("go to outside", "outside")]
    assert episode["instance"] == "scienceworld/boil/3"
    assert episode["id"] == "task1/scienceworld/boil/3"   # (the file's stem: another run of the task converts too)
    assert episode["meta"] == {"taskName": "boil", "taskDescription": "Boil water.", "variationIdx": 3,
                               "final_score": "1.0", "completed": True}
    assert schema_problems(episode, "trajectory", "out") == []


@pytest.mark.parametrize("last, state", [("You teleport to the kitchen.", "kitchen"),
                                         ("You move to the kitchen.", "kitchen"), ("The door is open.", "hallway")])
def test_the_last_steps_state_after_a_teleport(tmp_path: Path, last: str, state: str) -> None:
    """The easy mode's `teleport to X` leaves the agent in X as `go to X` does."""
    path = tmp_path / "task1.json"
    path.write_text(json.dumps(history([
        {"action": "look around", "observation": look("hallway"), "freelook": look("hallway"), "score": "0.0",
         "isCompleted": "false", "inventory": ""},
        {"action": "teleport to kitchen", "observation": last, "freelook": look("hallway"), "score": "0.1",
         "isCompleted": "false", "inventory": ""}])), "utf-8")
    [episode] = convert(path, tmp_path / "out.jsonl")
    assert [s["state"] for s in episode["steps"]] == ["hallway", state]


def test_a_step_without_an_action_is_located(tmp_path: Path) -> None:
    path = tmp_path / "task1.json"
    path.write_text(json.dumps(history([{"observation": "x", "freelook": look("kitchen")}])), "utf-8")
    with pytest.raises(InputError, match=r"task1\.json: record 3: history\.history\[0\]\.action: expected a string, "
                                         r"found null"):
        convert(path, tmp_path / "out.jsonl", fmt="scienceworld")


def test_the_real_oracle_histories(text_games: Path, tmp_path: Path) -> None:
    files = sorted((text_games / "scienceworld-oracle").glob("*.json"))
    assert {detect(f).name for f in files} == {"scienceworld"}
    episodes = convert(files, tmp_path / "out.jsonl")
    assert len(episodes) == 38 and sum(len(e["steps"]) for e in episodes) == 409   # SOURCES.md
    moved = re.compile(r"You move to the (.+?)\.")
    for episode in episodes:
        assert schema_problems(episode, "trajectory", "out") == []
        for step in episode["steps"]:
            target = moved.fullmatch(step["observation"])
            assert step["state"] and (target is None or target.group(1) == step["state"])
