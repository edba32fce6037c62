"""`eebench prompt`: Park et al.'s prompt (Appendix C.3, memory variant of Appendix D) as shipped templates, pinned
for a small instance worked by hand, and the memory summary derived only from what was observed."""

from __future__ import annotations

import json
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.documents import sha256_hex
from eebench.prompts import PROMPT_VERSION, VARIANTS, shown_at, system_prompt
from eebench.world.grid_dag import ACTIONS, GridDagWorld
from tests.conftest import instance_doc, make_instance, write_json, write_jsonl

# start S at [0, 0]; A at [2, 0] (no prerequisites); B at [0, 1] requires A; the goal G at [3, 1] requires B
#   S . A #
#   B . . G
TINY = (["...#", "...."], [0, 0], [("A", [2, 0], []), ("B", [0, 1], [["A"]]), ("G", [3, 1], [["B"]])], "G")
ACTIONS_PLAYED = ["down", "up", "right", None, "right", "left", "left", "down", "right"]

ENVIRONMENT = """\
You are an agent in a two-dimensional grid world. Your task is to achieve the goal state of a hidden task graph.

How the world works:
- The world is a grid of cells; a position is written [x, y]. Some cells are obstacles.
- Each turn you make exactly one move: up, down, left or right. After each move you are told your position and \
which moves are admissible from there. A move that is not admissible leaves you where you are and still uses a step.
- Some cells hold states of the task graph. You discover a state by stepping on its cell: you then learn its \
prerequisites and the states it is a prerequisite of, but not where those states are.
- A state is achieved when you step on its cell while its prerequisites are satisfied: it has none, or every state \
of at least one of its alternatives is already achieved. A state found too early stays discovered; come back to it \
once its prerequisites are achieved.
- The task is complete as soon as you achieve the goal state. You will be told which state is the goal when you \
find it.
- You have at most 10 steps."""
ANSWER = ('Answer format: reply with a single JSON object naming your move, for example {"action": "up"}. You may '
          "reason before it; the last JSON object of your reply is taken as your move.")


def tiny(tmp_path: Path) -> Path:
    return write_json(tmp_path / "tiny.json", instance_doc(*TINY, budget=10, instance_id="test/tiny"))


def test_step_zero_base_prompt_is_pinned(cli, tmp_path: Path) -> None:
    out = cli("prompt", tiny(tmp_path)).stdout
    assert out == (f"[system]\n{ENVIRONMENT}\n\n{ANSWER}\n\n[user]\nStep 0 of 10.\nYou are at [0, 0].\n"
                   "Admissible moves: down, right.\nThere is no node here.\n")


def test_memory_turn_after_five_actions_is_pinned(cli, tmp_path: Path) -> None:
    # worked by hand: down finds B too early (A not achieved), up, right, an unreadable output (stays at [1, 0]),
    # right achieves A at [2, 0]; B is now ready; [0, 2] (below the map) and [3, 0] (#) were refused moves
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": "r", "instance": "test/tiny", "steps": [{"action": a} for a in ACTIONS_PLAYED]},
        {"eebench": "trajectory/1", "id": "other", "instance": "elsewhere", "steps": []}])
    result = cli("prompt", tiny(tmp_path), "--trajectory", runs, "--step", "5", "--memory")
    system, turn = result.stdout.split("\n\n[user]\n")
    assert "- With every observation you also receive a memory summary" in system
    assert "Strategy:" not in system
    assert turn == """\
Step 5 of 10.
You moved right. You are at [2, 0].
Admissible moves: down, left.
There is node A here.
A is achieved.
Prerequisites: none.
It is a prerequisite of: B.

Memory summary:
- Coordinate system learned from your moves: up = y-1, down = y+1, right = x+1
- Goal state: not found yet
- Visited cells: [0, 0], [0, 1], [1, 0], [2, 0]
- Traversable frontier (seen from a visited cell, not visited yet): [1, 1], [2, 1]
- Obstacle cells: [0, 2], [3, 0]
- Discovered states:
  - B at [0, 1] (discovered): prerequisites A; prerequisite of G
  - A at [2, 0] (achieved): prerequisites none; prerequisite of B
- Activated states: A
- The discovered states whose prerequisites are already satisfied: B
"""
    step4 = cli("prompt", tiny(tmp_path), "--trajectory", runs, "--step", "4").stdout
    assert "Step 4 of 10.\nYou could not move '(unreadable)'; you stay at [1, 0]." in step4


def test_strategy_variants_differ_by_one_sentence(tmp_path: Path) -> None:
    instance = make_instance(*TINY, budget=10)
    base = system_prompt(instance)
    assert base == f"{ENVIRONMENT}\n\n{ANSWER}"
    for variant in VARIANTS[1:]:
        text = system_prompt(instance, variant)
        before, sentence, after = text.split("\n\n")[-3:]
        assert text.startswith(ENVIRONMENT) and after == ANSWER and sentence.startswith("Strategy: ")
        assert text.replace("\n\n" + sentence, "") == base


def test_json_format_gives_the_chat_messages(cli, tmp_path: Path) -> None:
    doc = json.loads(cli("prompt", tiny(tmp_path), "--format", "json", "--variant", "exploration").stdout)
    assert doc["prompt_version"] == PROMPT_VERSION and doc["instance"] == "test/tiny" and doc["step"] == 0
    assert [m["role"] for m in doc["messages"]] == ["system", "user"]
    assert "Strategy: prioritize exploration" in doc["messages"][0]["content"]


def test_bad_requests_are_one_line(cli, tmp_path: Path) -> None:
    instance = tiny(tmp_path)
    assert cli("prompt", instance, "--step", "2", code=2).stderr == (
        "error: --step 2: replaying needs the actions: give --trajectory FILE\n")
    two = write_jsonl(tmp_path / "two.jsonl", [
        {"eebench": "trajectory/1", "id": i, "instance": "test/tiny", "steps": [{"action": "down"}]} for i in "ab"])
    assert cli("prompt", instance, "--trajectory", two, code=2).stderr == (
        f"error: {two}: 2 trajectories were played in 'test/tiny' ('a', 'b'); choose one with --trajectory-id ID\n")
    assert cli("prompt", instance, "--trajectory", two, "--trajectory-id", "b", "--step", "3", code=2).stderr == (
        "error: --step 3: the trajectory has 1 actions; a step past them needs --trajectory FILE with more\n")
    solved = write_jsonl(tmp_path / "solved.jsonl", [{"eebench": "trajectory/1", "id": "s", "instance": "test/tiny",
                                                      "steps": [{"action": a} for a in
                                                                ["right", "right", "left", "left", "down",
                                                                 "right", "right", "right", "up"]]}])
    assert cli("prompt", instance, "--trajectory", solved, "--step", "9", code=2).stderr == (
        "error: --step 9: the episode ended after step 8 (the goal was achieved); nothing more is shown\n")
    assert cli("prompt", instance, "--trajectory", solved, "--step", "8", code=2).stderr == (
        "error: --step 8: the episode ended at this step (the goal was achieved); nothing more is shown\n")
    # past the actions of an episode that ended: that it ended is the reason, not that the file has too few
    assert cli("prompt", instance, "--trajectory", solved, "--step", "12", code=2).stderr == (
        "error: --step 12: the episode ended after step 8 (the goal was achieved); nothing more is shown\n")


def test_an_instance_that_is_neither_a_file_nor_a_shipped_id_says_what_prompt_takes(cli, tmp_path: Path) -> None:
    # a preset's or a suite's name holds many instances: "no such file" alone told nothing
    takes = ("no such file, nor the id of a shipped suite's instance (such as park2026-main/low-small/seed-0: a "
             "suite or preset holds many, name one); an id of your own needs --bench DIR")
    assert cli("prompt", "low-small", code=2).stderr == f"error: low-small: {takes}\n"
    assert cli("prompt", "park2026-mian/low-small/seed-0", code=2).stderr == (
        f"error: park2026-mian/low-small/seed-0: {takes} (did you mean 'park2026-main'?)\n")
    assert cli("prompt", tmp_path, code=2).stderr.startswith(f"error: {tmp_path}: is a folder")


def test_by_id_in_a_bench(cli, tmp_path: Path) -> None:
    tiny(tmp_path)
    assert "Step 0 of 10." in cli("prompt", "test/tiny", "--bench", tmp_path).stdout


_FIELD = re.compile(r"^- (.+?): (.*)$", re.M)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([*ACTIONS, None]), max_size=9))
def test_memory_reveals_only_what_was_observed(actions: list[str | None]) -> None:
    instance = make_instance(*TINY, budget=10)
    world = GridDagWorld(instance)
    state = world.initial_state()
    for k, action in enumerate(actions):   # stop where the episode ends: nothing is shown after it
        if world.is_over(state):
            actions = actions[:k]
            break
        state = world.step(state, None if action is None else ACTIONS.index(action)).state
    if world.is_over(state):
        actions = actions[:-1]
        state = world.initial_state()
        for action in actions:
            state = world.step(state, None if action is None else ACTIONS.index(action)).state
    memory = shown_at(instance, actions, len(actions), memory=True).turn.split("Memory summary:\n")[1]
    fields = dict(_FIELD.findall(memory))
    observed = {world.xy(c) for c in range(world.n_cells) if state.observed >> c & 1}
    visited = {tuple(map(int, p)) for p in re.findall(r"\[(\d+), (\d+)\]", fields["Visited cells"])}
    assert visited == observed
    frontier = {tuple(map(int, p)) for p in re.findall(r"\[(\d+), (\d+)\]",
                                                       fields["Traversable frontier (seen from a visited cell, "
                                                              "not visited yet)"])}
    assert not frontier & visited and all(instance.is_free(x, y) for x, y in frontier)
    for node in instance.nodes:   # a state is listed only once its cell was stepped on
        assert (f"  - {node.id} at " in memory) == (node.pos in observed)
    pending = ", ".join(world.node_ids[n] for n in world.pending(state)) or "none"
    assert fields["The discovered states whose prerequisites are already satisfied"] == pending


def test_a_trajectory_of_another_world_or_version_is_refused_as_grade_refuses_it(cli, tmp_path: Path) -> None:
    # replaying it would show observations of a world the agent never played in
    instance = tiny(tmp_path)
    other = "0" * 64
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": "a", "instance": "test/tiny", "instance_sha256": other,
         "steps": [{"action": "down"}]},
        {"eebench": "trajectory/1", "id": "b", "instance": "test/tiny", "env": "rooms", "steps": [{"action": "down"}]}])
    sha = sha256_hex(json.loads(instance.read_text("utf-8")))
    assert cli("prompt", instance, "--trajectory", runs, "--trajectory-id", "a", "--step", "1", code=2).stderr == (
        f"error: {runs}:1: instance_sha256: the log was played in instance {other[:12]}..., but 'test/tiny' in "
        f"{instance} is {sha[:12]}...; show it with the same instance (the version it was played in)\n")
    assert cli("prompt", instance, "--trajectory", runs, "--trajectory-id", "b", "--step", "1", code=2).stderr == (
        f"error: {runs}:2: env: expected 'grid_dag' (the kind of instance 'test/tiny') or no env, found 'rooms'\n")
