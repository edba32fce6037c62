"""The rules of the room worlds (Grams et al.; issue 10 "The world") replayed by hand on tiny instances."""

from __future__ import annotations

import copy
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.documents import schema_problems
from eebench.errors import EebenchError, InputError
from eebench.world.rooms import (
    UNREACHABLE,
    EpisodeEnd,
    EpisodeKnowledge,
    RoomsEnv,
    RoomsInstance,
    RoomsStep,
    RoomsWorld,
    door_distances,
    door_graph,
    parse_action,
    render_observation,
    render_text,
    replay,
    semantic_problems,
)

# The hand-made world of these tests:
#
#   D --green-- A --red-- B --blue-- C          balls: gold (1) in A, khaki (7) in B, teal (3) and plum (5) in C
#
# door budget 2, ball limit 2, 3 episodes; max_actions defaults to 2 x (2 + 2) = 8.
DOC: dict[str, Any] = {
    "eebench": "instance/1", "id": "test/line", "env": "rooms",
    "rooms": ["A", "B", "C", "D"], "start": "A",
    "doors": [{"name": "red", "between": ["A", "B"]}, {"name": "blue", "between": ["B", "C"]},
              {"name": "green", "between": ["D", "A"]}],
    "balls": [{"name": "gold", "room": "A", "reward": 1}, {"name": "khaki", "room": "B", "reward": 7},
              {"name": "teal", "room": "C", "reward": 3}, {"name": "plum", "room": "C", "reward": 5}],
    "episodes": 3, "door_budget": 2, "ball_limit": 2,
    "layout": {"A": [1, 0], "B": [2, 0], "C": [3, 0], "D": [0, 0]},
}


def doc(**changes: Any) -> dict[str, Any]:
    d = copy.deepcopy(DOC)
    d.update(changes)
    return d


def line(**changes: Any) -> RoomsInstance:
    return RoomsInstance.from_document(doc(**changes))


def step(episode: int, before: str, after: str, kind: str | None, name: str | None, valid: bool, reward: int = 0,
         ends: bool = False) -> RoomsStep:
    return RoomsStep(episode, before, after, kind, name, valid, reward, ends)


# -- the document ---------------------------------------------------------------------------------

def test_the_document_round_trips_and_is_schema_valid() -> None:
    instance = line()
    assert instance.to_document() == DOC
    assert schema_problems(DOC, "instance.rooms", "x.json") == []
    assert semantic_problems(DOC) == []
    assert instance.effective_max_actions == 8
    assert line(max_actions=3).effective_max_actions == 3
    assert RoomsInstance.from_document(line(max_actions=3).to_document()) == line(max_actions=3)


@pytest.mark.parametrize("changes, expected", [
    ({"rooms": ["A", "B", "C", "D", "B"]}, [("rooms[4]", "duplicate room id 'B' (also rooms[1])")]),
    ({"start": "AA"}, [("start", "names unknown room 'AA' (did you mean 'A'?)")]),
    ({"start": "Z"}, [("start", "names unknown room 'Z'")]),
    ({"doors": [*DOC["doors"], {"name": "Red", "between": ["C", "D"]}]},
     [("doors[3].name", "duplicate door name 'Red' (also doors[0]; names ignore case)")]),
    ({"doors": [*DOC["doors"], {"name": "loop", "between": ["C", "C"]}]},
     [("doors[3].between", "joins room 'C' to itself; a door joins two distinct rooms")]),
    ({"doors": [*DOC["doors"], {"name": "far", "between": ["C", "Q"]}]},
     [("doors[3].between[1]", "names unknown room 'Q'")]),
    ({"doors": DOC["doors"][:2]}, [("rooms[3]", "room 'D' cannot be reached from the start 'A' through the doors")]),
    ({"doors": DOC["doors"][2:]},
     [("rooms[1]", "room 'B' and 1 more cannot be reached from the start 'A' through the doors")]),
    ({"balls": [*DOC["balls"], {"name": "KHAKI", "room": "D", "reward": 1}]},
     [("balls[4].name", "duplicate ball name 'KHAKI' (also balls[1]; names ignore case)")]),
    ({"balls": [*DOC["balls"], {"name": "navy", "room": "Cc", "reward": 1}]},
     [("balls[4].room", "names unknown room 'Cc' (did you mean 'C'?)")]),
    ({"layout": {"A": [1, 0], "B": [2, 0], "C": [3, 0]}},
     [("layout", "has no position for room 'D'; give every room one")]),
    ({"layout": {"A": [1, 0], "B": [2, 0], "C": [3, 0], "D": [1, 0], "E": [5, 5]}},
     [("layout.D", "[1, 0] is also the position of room 'A'"), ("layout.E", "names unknown room 'E'")]),
])
def test_semantic_problems_name_the_field(changes: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert semantic_problems(doc(**changes)) == expected


def test_a_door_and_a_ball_may_share_a_name() -> None:
    shared = doc(balls=[{"name": "red", "room": "B", "reward": 2}])
    assert semantic_problems(shared) == []
    world = RoomsWorld(RoomsInstance.from_document(shared))
    s1 = world.step(world.initial_state(), "red door")
    assert s1.outcome == step(0, "A", "B", "door", "red", True)
    assert world.step(s1.state, "red ball").outcome == step(0, "B", "B", "ball", "red", True, 2)


@pytest.mark.parametrize("field, value, message", [
    ("door_budget", 0, "expected a number >= 1, found 0"),
    ("ball_limit", 0, "expected a number >= 1, found 0"),
    ("episodes", 0, "expected a number >= 1, found 0"),
    ("max_actions", 0, "expected a number >= 1, found 0"),
    ("door_budget", 2.0, "expected integer, found a number 2.0"),
    # past 2^31 - 1 (grid_dag's budget bound): 2^63 - 1 ended grade in an OverflowError in the gaps family's costs
    ("door_budget", 2 ** 63 - 1, "expected a number <= 2147483647, found 9223372036854775807"),
    ("ball_limit", 2 ** 31, "expected a number <= 2147483647, found 2147483648"),
    ("max_actions", 2 ** 40, "expected a number <= 2147483647, found 1099511627776"),
    ("env", "grid_dag", 'expected "rooms", found "grid_dag"'),
])
def test_the_schema_refuses_bad_budgets(field: str, value: Any, message: str) -> None:
    problems = schema_problems(doc(**{field: value}), "instance.rooms", "x.json")
    assert [str(p) for p in problems] == [f"x.json: {field}: {message}"]


def test_the_schema_refuses_a_ball_with_a_negative_reward_and_a_name_with_spaces_around() -> None:
    bad = doc(balls=[{"name": " gold", "room": "A", "reward": -1}])
    assert [p.field for p in schema_problems(bad, "instance.rooms", "x.json")] == ["balls[0].name", "balls[0].reward"]


def test_a_reward_is_at_most_2_to_the_31_minus_1() -> None:
    """Rewards of 2^62 passed: CP-SAT's objective overflowed and R_max was stored as 0 with status 'bound'."""
    assert not schema_problems(doc(balls=[{"name": "gold", "room": "A", "reward": 2 ** 31 - 1}]), "instance.rooms",
                               "x.json")
    (problem,) = schema_problems(doc(balls=[{"name": "gold", "room": "A", "reward": 2 ** 31}]), "instance.rooms",
                                 "x.json")
    assert problem.field == "balls[0].reward" and "<= 2147483647" in problem.message


# -- actions ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("tangerine door", ("door", "tangerine")),
    ("  Tangerine DOOR ", ("door", "tangerine")),
    ("midnight blue ball", ("ball", "midnight blue")),
    ("\tdodger_blue ball\n", ("ball", "dodger_blue")),   # surrounding spaces, of any kind
    # the rule exactly: case and surrounding spaces ignored, anything else invalid
    ("dodger_blue  ball", None), ("dodger_blue\tball", None), ("midnight  blue ball", None),
    ("d2\u00a0door", None),
    ("door", None), ("red key", None), ("red", None), ("", None), ("<red door>", None),
    (None, None), (3, None), (["red", "door"], None),
])
def test_parse_action(text: Any, expected: tuple[str, str] | None) -> None:
    assert parse_action(text) == expected


# -- the rules, step by step ---------------------------------------------------------------------------

def walk(world: RoomsWorld, *actions: Any, episode: int = 0) -> list[Any]:
    state = world.initial_state(episode)
    out = []
    for action in actions:
        result = world.step(state, action)
        out.append(result)
        state = result.state
    return out


def test_doors_move_balls_collect_and_anything_else_is_invalid() -> None:
    world = RoomsWorld(line(ball_limit=3))
    results = walk(world, "gold ball", "gold ball", "blue door", "Red Door", "khaki ball", "teal ball", "jump", None,
                   "violet door")
    assert [r.outcome for r in results] == [
        step(0, "A", "A", "ball", "gold", True, 1),
        step(0, "A", "A", "ball", "gold", False),       # collected already in this episode
        step(0, "A", "A", "door", "blue", False),       # blue does not touch A
        step(0, "A", "B", "door", "red", True),         # the instance's spelling
        step(0, "B", "B", "ball", "khaki", True, 7),
        step(0, "B", "B", "ball", "teal", False),       # teal is in C
        step(0, "B", "B", None, None, False),
        step(0, "B", "B", None, None, False),
        step(0, "B", "B", "door", "violet", False),     # no such door: named as written
    ]
    last = results[-1].state
    assert (last.room, last.traversals, last.n_collected, last.actions, last.over) == (1, 1, 2, 9, False)


def test_the_step_collecting_the_last_allowed_ball_ends_the_episode() -> None:
    world = RoomsWorld(line())
    results = walk(world, "gold ball", "red door", "khaki ball")
    assert [r.outcome.ends_episode for r in results] == [False, False, True]
    assert results[-1].end is EpisodeEnd.BALL_LIMIT and results[-1].state.over
    with pytest.raises(EebenchError, match="episode 0 is over"):
        world.step(results[-1].state, "red door")


def test_after_the_last_traversal_balls_can_still_be_collected_and_a_door_action_ends_the_episode() -> None:
    world = RoomsWorld(line())
    results = walk(world, "red door", "blue door", "teal ball", "blue door")
    assert [r.outcome for r in results] == [
        step(0, "A", "B", "door", "red", True),
        step(0, "B", "C", "door", "blue", True),        # the second and last traversal
        step(0, "C", "C", "ball", "teal", True, 3),     # still allowed
        step(0, "C", "C", "door", "blue", False, 0, True),  # a door action after the budget: no move, the end
    ]
    assert results[-1].end is EpisodeEnd.DOOR_BUDGET


def test_after_the_budget_any_door_action_ends_the_episode_even_a_wrong_one() -> None:
    world = RoomsWorld(line())
    results = walk(world, "red door", "red door", "jump", "khaki ball", "purple door")
    assert [r.outcome.ends_episode for r in results] == [False, False, False, False, True]
    assert results[-1].outcome == step(0, "A", "A", "door", "purple", False, 0, True)


def test_the_max_actions_th_step_ends_the_episode() -> None:
    world = RoomsWorld(line())
    results = walk(world, *["jump"] * 8)
    assert [r.outcome.ends_episode for r in results] == [False] * 7 + [True]
    assert results[-1].end is EpisodeEnd.MAX_ACTIONS
    world3 = RoomsWorld(line(max_actions=3))
    assert [r.end for r in walk(world3, "red door", "khaki ball", "red door")] == [None, None, EpisodeEnd.MAX_ACTIONS]
    # the ball limit is named first when both end the same step
    assert walk(world3, "gold ball", "red door", "khaki ball")[-1].end is EpisodeEnd.BALL_LIMIT


# -- replay: episodes, boundaries, knowledge -------------------------------------------------------------

def test_a_stream_starts_each_episode_where_the_world_ended_the_last_and_balls_are_back() -> None:
    actions = ["gold ball", "red door", "khaki ball",     # episode 0: 1 + 7, ends on the 2nd ball
               "red door", "blue door", "plum ball", "blue door",  # episode 1: budget spent, ends on a door action
               "gold ball", "green door",                 # episode 2: gold is back in A
               "extra", "more"]
    r = replay(line(), actions)
    assert r.returns == [8, 5, 1]
    assert r.episode_steps == [3, 4, 4]
    assert r.ignored == 0
    assert [s.episode for s in r.steps] == [0] * 3 + [1] * 4 + [2] * 4
    assert r.steps[-1] == step(2, "D", "D", None, None, False)
    assert r.knowledge == [
        EpisodeKnowledge(frozenset("AB"), frozenset({"red"}), frozenset({"gold", "khaki"})),
        EpisodeKnowledge(frozenset("ABC"), frozenset({"red", "blue"}), frozenset({"gold", "khaki", "plum"})),
        EpisodeKnowledge(frozenset("ABCD"), frozenset({"red", "blue", "green"}), frozenset({"gold", "khaki", "plum"})),
    ]


def test_actions_after_the_last_episode_are_ignored_and_counted() -> None:
    one = line(episodes=1)
    r = replay(one, ["gold ball", "red door", "khaki ball", "red door", "jump", "teal ball"])
    assert r.returns == [8] and r.episode_steps == [3] and r.ignored == 3 and len(r.steps) == 3


def test_a_stream_that_stops_mid_episode_plays_that_episode_partly() -> None:
    r = replay(line(), ["gold ball", "red door", "khaki ball", "red door"])
    assert r.returns == [8, 0] and r.episode_steps == [3, 1] and r.ignored == 0
    assert replay(line(), []) == ([], [], [], [], 0)


def test_logged_boundaries_are_used_and_actions_after_the_world_ended_an_episode_are_ignored() -> None:
    actions = ["gold ball", "red door", "khaki ball", "blue door",   # logged 0: the world ends it at step 2
               "red door",                                        # logged 1: the log ends it early
               "gold ball", "green door"]                         # logged 2
    r = replay(line(), actions, episodes=[0, 0, 0, 0, 1, 2, 2])
    assert r.returns == [8, 0, 1] and r.episode_steps == [3, 1, 2] and r.ignored == 1
    assert [s.episode for s in r.steps] == [0, 0, 0, 1, 2, 2]
    assert r.steps[3] == step(1, "A", "B", "door", "red", True)
    assert r.steps[4:] == [step(2, "A", "A", "ball", "gold", True, 1),   # episode 2 starts in A again
                           step(2, "A", "D", "door", "green", True)]
    # the same actions as a stream: the world's boundaries instead (blue door, gold ball, green door: invalid in A, B)
    s = replay(line(), actions)
    assert s.returns == [8, 0] and s.episode_steps == [3, 4] and s.ignored == 0


def test_an_episode_the_log_skips_is_played_with_no_step() -> None:
    r = replay(line(), ["red door", "gold ball"], episodes=[0, 2])
    assert r.returns == [0, 0, 1] and r.episode_steps == [1, 0, 1]
    assert r.knowledge[0] == r.knowledge[1] == EpisodeKnowledge(frozenset("AB"), frozenset({"red"}), frozenset())


@pytest.mark.parametrize("episodes, message", [
    ([0, 1, 0], "<input>: steps[2].episode: episode 0 after episode 1; episode indices must not decrease"),
    ([0, 3, 3], "<input>: steps[1].episode: episode 3 does not exist: the instance has 3 episodes (0 to 2)"),
    ([0, -1, 1], "<input>: steps[1].episode: expected an episode index >= 0, found an integer -1"),
    ([0, True, 1], "<input>: steps[1].episode: expected an episode index >= 0, found a boolean true"),
])
def test_bad_episode_indices_are_bad_input_naming_the_step(episodes: list[Any], message: str) -> None:
    with pytest.raises(InputError) as caught:
        replay(line(), ["gold ball"] * 3, episodes=episodes)
    assert str(caught.value) == message


# -- observation and env --------------------------------------------------------------------------------

def test_the_observation_text_follows_the_paper() -> None:
    env = RoomsEnv(line())
    obs, info = env.reset()
    assert info == {"episode": 0}
    assert render_observation(obs) == "You see: green door, red door, gold ball"
    texts = []
    for action in ["gold ball", "red door", "jump", "khaki ball"]:
        obs, reward, terminated, truncated, info = env.step(action)
        texts.append((render_observation(obs), reward, terminated, truncated))
    assert texts == [
        ("Reward: 1\nYou see: green door, red door", 1.0, False, False),
        ("Reward: 0\nYou walk through the door. You see: blue door, red door, khaki ball", 0.0, False, False),
        ("Reward: 0\nNothing happens. You see: blue door, red door, khaki ball", 0.0, False, False),
        ("Reward: 7\nYou see: blue door, red door\nEpisode 1 is over.", 7.0, True, False),
    ]
    with pytest.raises(EebenchError, match="call reset"):
        env.step("red door")
    obs, info = env.reset()
    assert info == {"episode": 1} and obs["balls"] == ["gold"]  # balls are back


def test_the_env_ends_on_the_budget_as_terminated_and_on_max_actions_as_truncated() -> None:
    env = RoomsEnv(line(max_actions=4))
    env.reset()
    outcomes = [env.step(a) for a in ["red door", "red door", "green door"]]
    obs, reward, terminated, truncated, info = outcomes[-1]
    # the budget of 2 is spent before the max_actions-th step
    assert render_observation(obs).startswith("Reward: 0\nYou have no door traversals left. You see: green door")
    assert (terminated, truncated, info["end"]) == (True, False, "door_budget")
    env.reset()
    outcomes = [env.step("x") for _ in range(4)]
    assert [o[2:4] for o in outcomes] == [(False, False)] * 3 + [(False, True)]
    env.reset()
    with pytest.raises(EebenchError, match="episode 3 does not exist: the instance has 3 episodes"):
        env.reset()
    obs, info = env.reset(options={"episode": 0})
    assert info == {"episode": 0}


def test_render_text_draws_the_layout_and_lists_every_room() -> None:
    text = render_text(line())
    assert text.splitlines() == [
        "test/line: 4 rooms, 3 doors, 4 balls; 3 episodes, door budget 2, ball limit 2, max actions 8",
        "o.---S1---o1---o2",
        "rooms:",
        "  A (start): doors red -> B, green -> D; balls gold (1)",
        "  B: doors red -> A, blue -> C; balls khaki (7)",
        "  C: doors blue -> B; balls teal (3), plum (5)",
        "  D: doors green -> A; balls none",
    ]
    square = RoomsInstance.from_document(doc(
        rooms=["A", "B", "C", "D"], layout={"A": [0, 0], "B": [1, 0], "C": [1, 1], "D": [0, 1]},
        doors=[{"name": "red", "between": ["A", "B"]}, {"name": "blue", "between": ["B", "C"]},
               {"name": "green", "between": ["D", "A"]}]))
    assert render_text(square).splitlines()[1:4] == ["S1---o1", "|    |", "o.   o2"]
    assert "rooms:" in render_text(line(layout=None)).splitlines()[1]


# -- distances -------------------------------------------------------------------------------------------

def test_door_distances_on_the_full_and_the_known_graph() -> None:
    instance = line()
    full = door_distances(instance)
    assert full.tolist() == [[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 3], [1, 2, 3, 0]]
    known = door_distances(instance, doors={"red"}, rooms={"A", "B"})
    X = UNREACHABLE
    assert known.tolist() == [[0, 1, X, X], [1, 0, X, X], [X, X, X, X], [X, X, X, X]]
    only_a = door_distances(instance, sources=["A"])
    assert only_a[0].tolist() == [0, 1, 2, 1] and (only_a[1:] == X).all()
    assert full.dtype == np.int64


# -- invariants ------------------------------------------------------------------------------------------

WORDS = ["red door", "blue door", "green door", "RED door", "gold ball", "khaki ball", "teal ball", "plum ball",
         "pink door", "jump", None]


@settings(max_examples=150, deadline=None)
@given(actions=st.lists(st.sampled_from(WORDS), max_size=40), budget=st.integers(1, 3), limit=st.integers(1, 3),
       max_actions=st.one_of(st.none(), st.integers(1, 6)))
def test_replay_keeps_its_invariants(actions: list[Any], budget: int, limit: int, max_actions: int | None) -> None:
    instance = line(door_budget=budget, ball_limit=limit, **({} if max_actions is None else {"max_actions": max_actions}))
    world = RoomsWorld(instance)
    r = replay(instance, actions)
    # every action is a step or ignored; each episode ends within its limits
    assert len(r.steps) + r.ignored == len(actions) and sum(r.episode_steps) == len(r.steps)
    assert len(r.returns) == len(r.knowledge) == len(r.episode_steps) <= instance.episodes
    assert all(0 < n <= instance.effective_max_actions for n in r.episode_steps)
    start = 0
    for e, n in enumerate(r.episode_steps):
        episode = r.steps[start:start + n]
        start += n
        assert {s.episode for s in episode} == {e}
        assert sum(s.reward for s in episode) == r.returns[e]
        assert all(not s.ends_episode for s in episode[:-1])
        assert episode[0].room_before == instance.start
        assert sum(s.kind == "door" and s.valid for s in episode) <= budget
        assert sum(s.kind == "ball" and s.valid for s in episode) <= limit
        if e + 1 < len(r.episode_steps):
            assert episode[-1].ends_episode   # a new episode starts only where the world ended the last
        # knowledge: every room entered, door walked and ball collected so far, and nothing else
        so_far = r.steps[:start]
        assert r.knowledge[e].rooms == {instance.start} | {s.room for s in so_far}
        assert r.knowledge[e].doors == {s.name for s in so_far if s.kind == "door" and s.valid}
        assert r.knowledge[e].balls == {s.name for s in so_far if s.kind == "ball" and s.valid}
    for s in r.steps:
        assert (s.room != s.room_before) == (s.valid and s.kind == "door")
        assert (s.reward > 0) <= s.valid
    if r.ignored:
        assert len(r.returns) == instance.episodes and r.steps[-1].ends_episode
    # the env walks the same steps: in a stream only actions after the last episode are ignored
    env = RoomsEnv(instance)
    for action, s in zip(actions, r.steps):
        if env.state is None or env.state.over:
            env.reset()
        obs, reward, terminated, truncated, info = env.step(action)
        assert (world.room_ids[env.state.room], reward, terminated or truncated) == (s.room, s.reward, s.ends_episode)
    assert world.max_actions == instance.effective_max_actions


@settings(max_examples=80, deadline=None)
@given(actions=st.lists(st.sampled_from(WORDS), max_size=30), data=st.data())
def test_logged_boundaries_keep_their_invariants(actions: list[Any], data: st.DataObject) -> None:
    episodes = sorted(data.draw(st.lists(st.integers(0, 2), min_size=len(actions), max_size=len(actions))))
    r = replay(line(), actions, episodes=episodes)
    assert len(r.steps) + r.ignored == len(actions)
    assert len(r.returns) == (episodes[-1] + 1 if episodes else 0)
    assert [s.episode for s in r.steps] == sorted(s.episode for s in r.steps)
    for e in range(len(r.returns)):
        logged = episodes.count(e)
        assert r.episode_steps[e] <= logged
        assert r.episode_steps[e] == logged or r.steps[sum(r.episode_steps[:e + 1]) - 1].ends_episode


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10**6), data=st.data())
def test_door_distances_agree_with_networkx_bfs(seed: int, data: st.DataObject) -> None:
    from eebench.generator.rooms import Graph, RoomsPreset, generate_instance

    instance = generate_instance(RoomsPreset("p", Graph.GRID, (4, 3), p_drop=0.2), seed, "t/p")
    doors = data.draw(st.sets(st.sampled_from([d.name for d in instance.doors])))
    rooms = data.draw(st.one_of(st.none(), st.sets(st.sampled_from(instance.rooms))))
    graph = door_graph(instance, doors, rooms)
    dist = door_distances(instance, doors, rooms)
    for i, a in enumerate(instance.rooms):
        lengths = nx.single_source_shortest_path_length(graph, a) if a in graph else {}
        assert [lengths.get(b, UNREACHABLE) for b in instance.rooms] == dist[i].tolist()
