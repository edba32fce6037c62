"""The `adapt` adapter: ADaPT's ALFWorld / TextCraft / WebShop results, real and hand-made."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.adapters import detect
from eebench.adapters.formats.adapt import _trace_steps
from eebench.documents import schema_problems
from eebench.errors import InputError
from tests.adapters.conftest import convert
from tests.textgames import text_games  # noqa: F401  (fixture)

RESULTS = Path("alfworld-textcraft-adapt/results")
# two executor calls joined as ADaPT joins them: each ends with a bare `>`, the next starts with its action
TRACE = (" think: First I need to find a mug.\nOK.\n> go to desk 1\nYou arrive at the location. On the desk 1, you "
         "see a mug 1.\n> go to drawer 3\nNothing happens.\n> take mug 1 from desk 1\nYou pick up the mug 1 from the "
         "desk 1.\n> think: Task completed!\nOK.\n>\n\n\n go to shelf 2\nYou arrive at the location. On the shelf 2, "
         "you see nothing.\n> put mug 1 in/on shelf 2\nYou put the mug 1 in/on the shelf 2.\n>\n")


def alfworld(tmp_path: Path) -> Path:
    path = tmp_path / "ADaPT_maxd3_alfworld_test.json"
    path.write_text(json.dumps({"pick_and_place": {"pick_and_place_simple-Mug-None-Shelf-308/trial_1": {
        "problem": "You are in the middle of a room.", "trace": TRACE, "plans": [], "reward": True}},
        "overall": {"rate": 1.0, "success": 1, "count": 1}}), "utf-8")
    return path


def test_an_alfworld_trace_splits_into_actions_with_the_location_as_state(tmp_path: Path) -> None:
    [episode] = convert(alfworld(tmp_path), tmp_path / "out.jsonl")
    assert episode["steps"] == [
        {"action": "go to desk 1", "reasoning": "First I need to find a mug.",
         "observation": "You arrive at the location. On the desk 1, you see a mug 1.", "state": "desk 1"},
        {"action": "go to drawer 3", "observation": "Nothing happens.", "state": "desk 1"},  # the move failed
        {"action": "take mug 1 from desk 1", "observation": "You pick up the mug 1 from the desk 1.",
         "state": "desk 1"},
        {"action": "go to shelf 2", "reasoning": "Task completed!",
         "observation": "You arrive at the location. On the shelf 2, you see nothing.", "state": "shelf 2"},
        {"action": "put mug 1 in/on shelf 2", "observation": "You put the mug 1 in/on the shelf 2.",
         "state": "shelf 2"}]
    assert episode["instance"] == "alfworld/pick_and_place_simple-Mug-None-Shelf-308/trial_1"
    assert episode["id"] == "ADaPT_maxd3_alfworld_test/" + episode["instance"]
    assert episode["meta"] == {"reward": True, "problem": "You are in the middle of a room."}
    assert schema_problems(episode, "trajectory", "out") == []


def test_webshop_history_folds_thoughts(tmp_path: Path) -> None:
    path = tmp_path / "ADaPT_maxd3_webshop_test.json"
    path.write_text(json.dumps({"fixed_0": {"problem": "buy a clip", "score": 0.5, "success": False,
                                            "action_history": ["search[clip]", "think[check it]", "click[B0]",
                                                               "think[done]"]}}), "utf-8")
    [episode] = convert(path, tmp_path / "out.jsonl")
    assert episode["steps"] == [{"action": "search[clip]"}, {"action": "click[B0]", "reasoning": "check it"}]
    assert episode["instance"] == "webshop/fixed_0"
    assert episode["meta"] == {"score": 0.5, "success": False, "problem": "buy a clip", "thoughts_after_end": ["done"]}


def test_an_episode_without_trace_or_history_is_located(tmp_path: Path) -> None:
    path = tmp_path / "ADaPT_textcraft.json"
    path.write_text(json.dumps({"env_0": {"problem": "craft x", "trace": ""}, "env_1": {"problem": "craft y"}}))
    with pytest.raises(InputError, match=r"ADaPT_textcraft\.json: record env_1: trace: expected a `trace` string "
                                         r"or an `action_history` list"):
        convert(path, tmp_path / "out.jsonl", fmt="adapt")


def test_the_real_results(text_games: Path, tmp_path: Path) -> None:
    files = sorted((text_games / RESULTS).glob("*.json"))
    assert {detect(f).name for f in files} == {"adapt"}
    episodes = convert(files, tmp_path / "out.jsonl")
    by_world: dict[str, list[dict]] = {}
    for episode in episodes:
        assert schema_problems(episode, "trajectory", "out") == []
        by_world.setdefault(episode["instance"].split("/")[0], []).append(episode)
    alfworld = by_world["alfworld"]
    # SOURCES.md: 134 episodes, 2098 "> action" lines of which 642 think (folded) and 821 "go to"; 107 successes
    assert len(alfworld) == 134 and sum(len(e["steps"]) for e in alfworld) == 2098 - 642
    assert sum(s["action"].startswith("go to") for e in alfworld for s in e["steps"]) == 821
    assert sum(e["meta"]["reward"] is True for e in alfworld) == 107
    assert all("state" in s for e in alfworld for s in e["steps"][1:] if e["steps"][0]["action"].startswith("go to"))
    assert len(by_world["textcraft"]) == 200 and sum(bool(e["steps"]) for e in by_world["textcraft"]) == 162
    assert not any("state" in s for e in by_world["textcraft"] for s in e["steps"])
    assert len(by_world["webshop"]) == 100
    assert {w: {e["agent"]["model"] for e in es} for w, es in by_world.items()} == {
        "alfworld": {"text-davinci-003"}, "textcraft": {"gpt-3.5-turbo-instruct"}, "webshop": {"gpt-3.5-turbo"}}


def test_the_model_is_read_from_adapts_file_name(tmp_path: Path) -> None:
    path = alfworld(tmp_path).rename(tmp_path / "ADaPT_maxd3_alfworld_text_davinci_003.json")
    [episode] = convert(path, tmp_path / "out.jsonl")
    assert episode["agent"] == {"name": "adapt", "model": "text-davinci-003", "harness": "adapt"}


_WORD = st.text(alphabet="abcdefgh 12", min_size=1, max_size=12).map(str.strip).filter(bool)
_BLOCK = st.tuples(st.booleans(), _WORD, st.lists(_WORD, max_size=3))   # (a thought?, action or thought, lines)


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(st.lists(_BLOCK, min_size=1, max_size=5), min_size=1, max_size=4))
def test_a_trace_joined_as_adapt_joins_it_splits_back(calls: list[list[tuple[bool, str, list[str]]]]) -> None:
    # every executor call: `> action\nobservation` blocks, the first without `>`, ending with a bare `>`
    texts = []
    for call in calls:
        blocks = [(f"think: {word}" if thought else f"go to {word}", ["OK."] if thought else lines)
                  for thought, word, lines in call]
        first, *rest = ["\n".join([action, *lines]) for action, lines in blocks]
        texts.append(" " + "\n> ".join([first, *rest]) + "\n>\n")
    steps, after = _trace_steps("\n\n".join(texts), locations=True)
    flat = [block for call in calls for block in call]
    moves = [(word, lines) for thought, word, lines in flat if not thought]
    assert [s.action for s in steps] == [f"go to {word}" for word, _ in moves]
    assert [s.observation for s in steps] == ["\n".join(lines).strip() for _, lines in moves]
    assert [s.state for s in steps] == [word for word, _ in moves]   # no observation here says "Nothing happens."
    thoughts = sum(thought for thought, _, _ in flat)
    assert thoughts == len(after) + sum(len(s.reasoning.split("\n")) for s in steps if s.reasoning)
