"""eebench/GridDag-v0: Gymnasium's checker passes, the rules and text are the world's, ScoredReward is the record."""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import eebench
import eebench.gym
from eebench.world.grid_dag import ACTIONS, GridDagEnv, render_observation


@pytest.fixture(scope="module")
def instance():
    return eebench.load("park2026-main/low-small/seed-0")


def test_check_env_passes(instance) -> None:
    env = gymnasium.make("eebench/GridDag-v0", instance=instance, render_mode="ansi")
    check_env(env.unwrapped)
    env.close()


def test_steps_follow_the_world(instance) -> None:
    """Random play: the Gymnasium env and the world's own env agree on every observation, reward and ending."""
    env = gymnasium.make("eebench/GridDag-v0", instance=instance, render_mode="ansi")
    world_env = GridDagEnv(instance)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    raw, _ = world_env.reset()
    assert info["observation"] == raw and env.render() == render_observation(raw) + "\n"
    assert obs["position"].tolist() == raw["position"] and obs in env.observation_space
    for _ in range(instance.budget):
        action = int(rng.integers(4))
        obs, reward, terminated, truncated, info = env.step(action)
        expected = world_env.step(ACTIONS[action])
        assert (info["observation"], reward, terminated, truncated) == (expected[0], *expected[1:4])
        assert obs in env.observation_space
        assert obs["moves"].tolist() == [int(a in expected[0]["moves"]) for a in ACTIONS]
        assert env.render().startswith(f"You moved {ACTIONS[action]}" if expected[4]["valid"]
                                       else f"You could not move {ACTIONS[action]!r}")
        if terminated or truncated:
            break
    assert truncated or terminated


def test_node_in_observation() -> None:
    instance = eebench.load({"eebench": "instance/1", "id": "t/c", "env": "grid_dag", "map": ["..."],
                             "start": [0, 0], "nodes": [{"id": "G", "pos": [2, 0], "requires": []}], "goal": "G",
                             "budget": 5})
    env = eebench.gym.GridDag(instance)
    env.reset()
    env.step("right")
    obs, reward, terminated, _, _ = env.step(3)
    assert (obs["node"], obs["node_status"], obs["goal"], reward, terminated) == (1, 3, 1, 1.0, True)
    assert env.render() is None  # no render_mode asked


def test_scored_reward_is_minus_the_error(instance) -> None:
    env = eebench.gym.ScoredReward(gymnasium.make("eebench/GridDag-v0", instance=instance))
    scorer = eebench.Scorer(instance)
    rng = np.random.default_rng(1)
    env.reset(seed=1)
    for _ in range(instance.budget):
        action = int(rng.integers(4))
        _, reward, terminated, truncated, info = env.step(action)
        record = scorer.step(ACTIONS[action])
        assert info["step_record"] == record and reward == -record.error
        if terminated or truncated:
            break
    env.reset()
    assert env.unwrapped.instance is instance and env.scorer.t == 0
