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
    assert info["observation"] == {**raw, "node": {}} and env.render() == render_observation(raw) + "\n"
    assert obs["position"].tolist() == raw["position"] and obs in env.observation_space
    for _ in range(instance.budget):
        action = int(rng.integers(4))
        obs, reward, terminated, truncated, info = env.step(action)
        expected = world_env.step(ACTIONS[action])
        assert (info["observation"], reward, terminated, truncated) == (
            {**expected[0], "node": expected[0]["node"] or {}}, *expected[1:4])
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


@pytest.fixture(scope="module")
def rooms_instance():
    return next(iter(eebench.load("grams2025-rooms").values()))


def test_rooms_check_env_and_text(rooms_instance) -> None:
    """eebench/Rooms-v0 passes Gymnasium's checker and agrees with the world's env on every step and text."""
    from eebench.world.rooms import RoomsEnv
    from eebench.world.rooms import render_observation as render_rooms

    env = gymnasium.make("eebench/Rooms-v0", instance=rooms_instance, render_mode="ansi")
    check_env(env.unwrapped)
    world_env = RoomsEnv(rooms_instance)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    raw, _ = world_env.reset()
    assert info["observation"] == raw and obs in env.observation_space and env.render() == render_rooms(raw) + "\n"
    for episode in range(3):
        for _ in range(200):
            action = int(rng.integers(env.action_space.n))
            obs, reward, terminated, truncated, info = env.step(action)
            expected = world_env.step(env.unwrapped.actions[action])
            assert (info["observation"], reward, terminated, truncated) == (expected[0], *expected[1:4])
            assert obs in env.observation_space and env.render() == render_rooms(expected[0]) + "\n"
            if terminated or truncated:
                break
        assert terminated or truncated
        obs, info = env.reset()
        assert info["episode"] == episode + 1 == obs["episode"]
        world_env.reset()
    assert env.reset(seed=0)[1]["episode"] == 0  # a seed starts the run over


def test_rooms_actions_name_every_door_and_ball(rooms_instance) -> None:
    env = eebench.gym.Rooms(rooms_instance)
    assert env.action_space.n == len(rooms_instance.doors) + len(rooms_instance.balls)
    assert env.actions[0] == f"{rooms_instance.doors[0].name} door"
    assert env.actions[-1] == f"{rooms_instance.balls[-1].name} ball"
    assert env.action_word("Khaki  BALL") == "Khaki  BALL"  # text is passed on as written


@pytest.mark.parametrize("imports", ["gymnasium, eebench", "eebench, gymnasium", "eebench, gymnasium.spaces",
                                     "eebench.gym, gymnasium",
                                     "eebench, importlib.util; importlib.util.find_spec('gymnasium')"])
def test_the_environments_are_registered_whatever_the_order_of_imports(imports: str) -> None:
    """Importing gymnasium after eebench left the ids unknown (NamespaceNotFound): gymnasium 1.x reads no plug-ins.
    So did asking whether gymnasium is installed (find_spec, as libraries check for it) before importing it."""
    import subprocess
    import sys

    code = (f"import sys, {imports}; import gymnasium; env = gymnasium.make('eebench/GridDag-v0', "
            "instance=eebench.load('park2026-main/low-small/seed-0')); env.reset(seed=0); print(env.spec.id, "
            "gymnasium.make('eebench/Rooms-v0', instance=eebench.load('grams2025-rooms/4x4/seed-0')).spec.id)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "eebench/GridDag-v0 eebench/Rooms-v0"


def test_an_action_outside_the_space_is_refused_not_wrapped() -> None:
    import gymnasium
    import numpy as np

    import eebench

    instance = eebench.load("park2026-main/low-small/seed-0")
    env = gymnasium.make("eebench/GridDag-v0", instance=instance)
    env.reset(seed=0)
    env.step(np.int64(1))   # a NumPy index is an index
    for action in (-1, 4, 1.7, True, [1]):
        with pytest.raises(ValueError, match=r"expected an index of Discrete\(4\) \(0 to 3\) or the action's text"):
            env.step(action)
    with pytest.raises(ValueError, match=r"eebench/Rooms-v0 plays RoomsInstance instances, not GridDagInstance: "
                                         r"make eebench/GridDag-v0"):
        gymnasium.make("eebench/Rooms-v0", instance=instance)
    with pytest.raises(TypeError, match=r"action 0: expected the action's text or None"):
        eebench.Scorer(instance).step(0)


def test_rooms_without_balls_passes_the_checker_and_without_actions_is_refused() -> None:
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    from eebench.world.rooms import RoomsInstance

    doc = {"eebench": "instance/1", "id": "t/no-balls", "env": "rooms", "rooms": ["A", "B"], "start": "A",
           "doors": [{"name": "d1", "between": ["A", "B"]}], "balls": [], "episodes": 2, "door_budget": 2,
           "ball_limit": 1}
    env = gymnasium.make("eebench/Rooms-v0", instance=RoomsInstance.from_document(doc))
    check_env(env.unwrapped)
    assert env.reset(seed=0)[0]["balls"].shape == (0,)
    alone = RoomsInstance.from_document({**doc, "id": "t/alone", "rooms": ["A"], "doors": []})
    with pytest.raises(ValueError, match=r"instance 't/alone' has no door and no ball, so no action"):
        gymnasium.make("eebench/Rooms-v0", instance=alone)


def test_rooms_reset_takes_an_episode_index_only() -> None:
    import gymnasium
    import numpy as np

    from eebench.errors import EebenchError
    from eebench.world.rooms import RoomsInstance

    doc = {"eebench": "instance/1", "id": "t/two", "env": "rooms", "rooms": ["A", "B"], "start": "A",
           "doors": [{"name": "d1", "between": ["A", "B"]}], "balls": [], "episodes": 2, "door_budget": 2,
           "ball_limit": 1}
    env = gymnasium.make("eebench/Rooms-v0", instance=RoomsInstance.from_document(doc))
    assert env.reset(options={"episode": np.int64(1)})[0]["episode"] == 1
    for episode in (1.5, True, "1", None):
        with pytest.raises(EebenchError, match=r"expected an episode index, 0 to 1$"):
            env.reset(options={"episode": episode})
    # a misspelt key started the next episode without a word; options not a dict was a bare AttributeError
    with pytest.raises(EebenchError, match=r"^options: unknown key 'epsiode' \(did you mean 'episode'\?\); the "
                                           r"rooms env takes 'episode'$"):
        env.reset(options={"epsiode": 0})
    with pytest.raises(EebenchError, match=r"^options: expected a dict such as \{'episode': 0\}, found list$"):
        env.reset(options=[("episode", 0)])


@pytest.mark.parametrize("env_id", ["eebench/GridDag-v0", "eebench/Rooms-v0"])
def test_vector_envs_merge_the_infos(env_id: str, instance, rooms_instance) -> None:
    # Gymnasium merges the envs' infos key by key, into a nested dict's keys: a key that is None in one env and a
    # dict in another (a node on one agent's cell only) broke every vector env within a few steps
    chosen = instance if env_id.endswith("GridDag-v0") else rooms_instance
    envs = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make(env_id, instance=chosen)] * 2)
    rng = np.random.default_rng(0)
    envs.reset(seed=0)
    on_node = 0
    for _ in range(300):
        _, _, _, _, info = envs.step(rng.integers(envs.single_action_space.n, size=2))
        if env_id.endswith("GridDag-v0"):
            on_node += int(info["observation"]["_node"].all() and "id" in info["observation"]["node"])
    envs.close()
    assert env_id.endswith("Rooms-v0") or on_node > 0   # the case that broke: a node on some agent's cell


def test_off_a_node_the_info_observation_has_an_empty_node(instance) -> None:
    env = gymnasium.make("eebench/GridDag-v0", instance=instance)
    _, info = env.reset(seed=0)
    raw, _ = GridDagEnv(instance).reset()
    assert raw["node"] is None and info["observation"] == {**raw, "node": {}}
