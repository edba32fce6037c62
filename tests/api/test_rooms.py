"""Rooms: eebench.Scorer's records equal `eebench grade`'s (steps and episodes), and eebench/Rooms-v0 checks."""

from __future__ import annotations

import copy
import pickle

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eebench
import eebench.gym
from eebench.errors import EebenchError
from eebench.scorer import EpisodeRecord, RoomsScorer
from eebench.world.rooms import EpisodeEnd, RoomsEnv

STEP_FIELDS = ("t", "action", "episode", "room", "valid", "visit_depth")


@pytest.fixture(scope="module")
def rooms_suite() -> eebench.Instances:
    return eebench.load("grams2025-rooms")


@pytest.fixture(scope="module")
def instance(rooms_suite: eebench.Instances):
    return next(iter(rooms_suite.values()))


def test_hand_worked_two_rooms() -> None:
    """Two rooms a and b, door 'red' between them, a ball of 5 in b; door budget 1, ball limit 1, 2 episodes."""
    instance = eebench.load({
        "eebench": "instance/1", "id": "t/two", "env": "rooms", "rooms": ["a", "b"], "start": "a",
        "doors": [{"name": "red", "between": ["a", "b"]}], "balls": [{"name": "gold", "room": "b", "reward": 5}],
        "episodes": 2, "door_budget": 1, "ball_limit": 1})
    scorer = eebench.Scorer(instance)
    assert isinstance(scorer, RoomsScorer)
    # episode 0: a wrong word, through the door, the ball: return 5 = R_max, K(0) knows everything
    first = [scorer.step(a) for a in ["jump", "Red door", "gold ball"]]
    assert [(r.t, r.episode, r.room, r.valid, r.reward, r.return_so_far) for r in first] == [
        (0, 0, "a", False, 0, 0), (1, 0, "b", True, 0, 0), (2, 0, "b", True, 5, 5)]
    assert first[-1].end is EpisodeEnd.BALL_LIMIT
    assert first[-1].episode_record == EpisodeRecord(0, 3, 5, 5, 5, 0.0, 0.0, 0.0, 1.0, "exhaustive", "optimal",
                                                     None, None)
    # episode 1: the ball is not in room a; then the door budget is spent by a second door action
    second = [scorer.step(a) for a in ["gold ball", "red door", "red door"]]
    assert [(r.episode, r.room, r.valid, r.return_so_far) for r in second] == [
        (1, "a", False, 0), (1, "b", True, 0), (1, "b", False, 0)]
    assert second[-1].end is EpisodeEnd.DOOR_BUDGET
    record = second[-1].episode_record
    assert (record.agent_return, record.exploit_return, record.exploit_gap, record.total_gap) == (0, 5, 1.0, 1.0)
    assert scorer.done
    with pytest.raises(EebenchError, match=r"the run ended after its 2 episodes at t = 6; call reset\(\) first"):
        scorer.step("red door")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 8), st.lists(st.integers(0, 99), min_size=1, max_size=80)),
                min_size=1, max_size=3))
def test_records_equal_grade(rooms_suite: eebench.Instances, draws: list[tuple[int, list[int]]]) -> None:
    """Scorer.step and `eebench grade` give the same steps and, for every episode the world ended, the same row."""
    ids = list(rooms_suite)
    trajectories = []
    for k, (which, picks) in enumerate(draws):
        instance = rooms_suite[ids[which % len(ids)]]
        words = [f"{d.name} door" for d in instance.doors] + [f"{b.name} ball" for b in instance.balls] + ["x"]
        trajectories.append({"eebench": "trajectory/1", "id": f"r{k}", "env": "rooms", "instance": instance.id,
                             "steps": [{"action": words[p % len(words)]} for p in picks]})
    results = eebench.grade(trajectories, bench=rooms_suite)
    steps = results.steps.to_pylist()
    episodes = results["episodes"].to_pylist()
    for trajectory in trajectories:
        scorer = eebench.Scorer(rooms_suite[trajectory["instance"]])
        records = []
        for step in trajectory["steps"]:
            if scorer.done:
                break
            records.append(scorer.step(step["action"]))
        graded = sorted((r for r in steps if r["trajectory_id"] == trajectory["id"]), key=lambda r: r["t"])
        assert [tuple(getattr(r, f) for f in STEP_FIELDS) for r in records] == \
            [tuple(r[f] for f in STEP_FIELDS) for r in graded]
        ended = [r.episode_record for r in records if r.episode_record is not None]
        rows = sorted((r for r in episodes if r["trajectory_id"] == trajectory["id"]), key=lambda r: r["episode"])
        # the grade also closes an episode the log cut short; the scorer only those the world ended
        assert [tuple(e) for e in ended] == [tuple(r[f] for f in EpisodeRecord._fields) for r in rows[:len(ended)]]
        assert len(rows) - len(ended) in (0, 1)
        assert scorer.play([step["action"] for step in trajectory["steps"]]) == records   # play resets, then steps
    # the batch form: each run's records as columns, one after another
    scorers = [eebench.Scorer(rooms_suite[t["instance"]]) for t in trajectories]
    for scorer, trajectory in zip(scorers, trajectories):
        actions = [step["action"] for step in trajectory["steps"]]
        columns = scorer.batch([actions, [], actions])
        records = scorer.play(actions)
        assert columns["trajectory"].tolist() == [0] * len(records) + [2] * len(records)
        for name in columns.keys() - {"trajectory"}:
            assert columns[name].tolist() == [getattr(r, name) for r in records] * 2, name


def test_check_env_and_text(instance) -> None:
    env = gymnasium.make("eebench/Rooms-v0", instance=instance, render_mode="ansi")
    check_env(env.unwrapped)
    world_env = RoomsEnv(instance)
    obs, info = env.reset(seed=0)
    raw, _ = world_env.reset()
    assert info["observation"] == raw and obs in env.observation_space
    rng = np.random.default_rng(0)
    for _ in range(200):
        action = int(rng.integers(env.action_space.n))
        obs, reward, terminated, truncated, info = env.step(action)
        expected = world_env.step(env.unwrapped.actions[action])
        assert (info["observation"], reward, terminated, truncated) == (expected[0], *expected[1:4])
        assert obs in env.observation_space
        if terminated or truncated:
            break
    from eebench.world.rooms import render_observation

    assert env.render() == render_observation(info["observation"]) + "\n"


def test_scored_reward_follows_the_run(instance) -> None:
    env = eebench.gym.ScoredReward(gymnasium.make("eebench/Rooms-v0", instance=instance))
    scorer = eebench.Scorer(instance)
    rng = np.random.default_rng(2)
    env.reset(seed=0)
    for _ in range(3):
        while True:
            action = int(rng.integers(env.action_space.n))
            _, reward, terminated, truncated, info = env.step(action)
            record = scorer.step(env.unwrapped.actions[action])
            assert info["step_record"] == record and reward == record.reward
            if terminated or truncated:
                break
        env.reset()
    assert scorer.next_episode == 3
    with pytest.raises(EebenchError, match="episode after episode"):
        env.reset(options={"episode": 7})


def test_a_step_the_env_refuses_leaves_the_scorer_where_it_was(instance) -> None:
    """One step past an episode's end is refused ("call reset() first"); the scorer had moved on to the next
    episode all the same, so the reset() the message asks for was refused as out of order."""
    env = eebench.gym.ScoredReward(gymnasium.make("eebench/Rooms-v0", instance=instance))
    env.reset(seed=0)
    terminated = truncated = False
    while not (terminated or truncated):
        _, _, terminated, truncated, info = env.step(0)
    t = env.scorer.t
    with pytest.raises(EebenchError, match="call reset"):
        env.step(0)
    assert env.scorer.t == t and env.scorer.next_episode == 1
    _, info = env.reset()
    assert info["episode"] == 1
    _, _, _, _, info = env.step(0)
    assert info["step_record"].episode == 1


def test_steps_returns_and_ends() -> None:
    """The step part of the records, worked by hand: two rooms joined by door 'red', a ball of 5 in room b."""
    instance = eebench.load({
        "eebench": "instance/1", "id": "t/two", "env": "rooms", "rooms": ["a", "b"], "start": "a",
        "doors": [{"name": "red", "between": ["a", "b"]}], "balls": [{"name": "gold", "room": "b", "reward": 5}],
        "episodes": 2, "door_budget": 1, "ball_limit": 1})
    scorer = eebench.Scorer(instance)
    records = [scorer.step(a) for a in ["jump", "Red door", "gold ball", "gold ball", "red door", "red door"]]
    assert [(r.t, r.episode, r.room, r.valid, r.reward, r.return_so_far, r.end) for r in records] == [
        (0, 0, "a", False, 0, 0, None), (1, 0, "b", True, 0, 0, None),
        (2, 0, "b", True, 5, 5, EpisodeEnd.BALL_LIMIT),           # the ball limit ends episode 0
        (3, 1, "a", False, 0, 0, None),                          # episode 1 starts in a: no ball here
        (4, 1, "b", True, 0, 0, None), (5, 1, "b", False, 0, 0, EpisodeEnd.DOOR_BUDGET)]  # budget spent
    assert scorer.done and scorer.next_episode == 2
    scorer.reset()
    assert scorer.step("red door").room == "b"


@pytest.mark.parametrize("reset", [{}, {"options": {"episode": 2}}], ids=["next", "skip"])
def test_a_refused_reset_leaves_env_and_scorer_in_step(instance, reset: dict) -> None:
    """A reset the wrapper refuses (the scorer's episode has not ended) is refused before the env moves on: the
    env stays in its episode, and the next steps are scored in it (they were scored as an episode the env left)."""
    env = eebench.gym.ScoredReward(gymnasium.make("eebench/Rooms-v0", instance=instance))
    env.reset(seed=0)
    env.step(0)
    with pytest.raises(EebenchError, match="episode after episode"):
        env.reset(**reset)
    _, _, _, _, info = env.step(0)
    assert info["episode"] == info["step_record"].episode == 0 and info["step_record"].t == 1   # (t from 0)
    with pytest.raises(EebenchError, match="does not exist"):   # the env's own refusal, before anything moves
        env.reset(options={"episode": 99})
    assert env.step(0)[4]["step_record"].t == 2


@pytest.mark.parametrize("copy_of", [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_scorer_copied_after_an_episode_ended_goes_on_as_the_original(copy_of) -> None:
    """Once an episode has ended the scorer holds the gaps family's tables; a copy (pickle: Ray, multiprocessing;
    deepcopy: a copied env) must still be made and go on as the original (they held the rooms module: refused)."""
    instance = eebench.load({
        "eebench": "instance/1", "id": "t/two", "env": "rooms", "rooms": ["a", "b"], "start": "a",
        "doors": [{"name": "red", "between": ["a", "b"]}], "balls": [{"name": "gold", "room": "b", "reward": 5}],
        "episodes": 3, "door_budget": 1, "ball_limit": 1})
    scorer = eebench.Scorer(instance)
    actions = ["red door", "gold ball", "gold ball", "red door", "red door", "red door", "gold ball"]
    for action in actions[:3]:   # episode 0 ends on the second action
        scorer.step(action)
    twin = copy_of(scorer)
    assert [twin.step(a) for a in actions[3:]] == [scorer.step(a) for a in actions[3:]]
    env = eebench.gym.ScoredReward(gymnasium.make("eebench/Rooms-v0", instance=instance))
    env.reset(seed=0)
    env.step(0), env.step(1)   # episode 0 ended: the wrapper's scorer holds the tables
    assert copy_of(env).scorer.next_episode == 1


def test_batch_leaves_a_run_in_step_where_it_was(instance) -> None:
    """`batch` grades other runs; as for grid_dag, a run being scored step by step goes on unchanged after it (it
    was replaced by the batch's last run: a door gone through before the batch was forgotten)."""
    door, ball = (f"{d.name} door" for d in instance.doors[:2]), f"{instance.balls[0].name} ball"
    actions = [next(door), next(door), ball, ball]
    alone, batched = eebench.Scorer(instance), eebench.Scorer(instance)
    first = [alone.step(a) for a in actions[:2]], [batched.step(a) for a in actions[:2]]
    batched.batch([[ball], []])
    assert [batched.step(a) for a in actions[2:]] == [alone.step(a) for a in actions[2:]]
    assert first[0] == first[1]
