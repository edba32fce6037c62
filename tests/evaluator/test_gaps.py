"""The gaps family (Grams et al., Section 3.1, Appendix A.6): hand-worked episodes and properties on random worlds."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.errors import InputError
from eebench.evaluator.families import FamilyColumns, Trajectory, families_for
from eebench.evaluator.gaps import FAMILY, GapsTables
from eebench.evaluator.orienteering import Method, Solution, Status
from eebench.world.rooms import RoomsInstance, semantic_problems


def rooms_doc(rooms: list[str], doors: list[tuple[str, str, str]], balls: list[tuple[str, str, int]], *,
              episodes: int = 2, door_budget: int = 2, ball_limit: int = 2, instance_id: str = "t/rooms",
              **extra: Any) -> dict[str, Any]:
    return {"eebench": "instance/1", "id": instance_id, "env": "rooms", "rooms": rooms, "start": rooms[0],
            "doors": [{"name": n, "between": [a, b]} for n, a, b in doors],
            "balls": [{"name": n, "room": r, "reward": w} for n, r, w in balls],
            "episodes": episodes, "door_budget": door_budget, "ball_limit": ball_limit, **extra}


# A - d1 - B - d2 - C, start A; balls x (A, 2), y (B, 5), z (C, 9); 2 traversals and 2 balls per episode.
LINE = rooms_doc(["A", "B", "C"], [("d1", "A", "B"), ("d2", "B", "C")], [("x", "A", 2), ("y", "B", 5), ("z", "C", 9)])


def grade(doc: dict[str, Any], actions: list[Any], episodes: list[int] | None = None) -> FamilyColumns:
    instance = RoomsInstance.from_document(doc)
    steps = [{"action": a} if episodes is None else {"action": a, "episode": e}
             for a, e in zip(actions, episodes or [0] * len(actions))]
    return FAMILY.columns([FAMILY.replay(FAMILY.tables(instance), instance, Trajectory({"steps": steps}, "f", 3))])


def one(columns: FamilyColumns) -> dict[str, Any]:
    return {name: values[0] for name, values in columns.trajectories.items()}


def episode_rows(columns: FamilyColumns, *names: str) -> list[tuple]:
    assert columns.episodes is not None
    return list(zip(*(columns.episodes[name].tolist() for name in names)))


def test_the_family_grades_rooms_only() -> None:
    assert FAMILY in families_for("rooms") and FAMILY not in families_for("grid_dag")


def test_hand_worked_line() -> None:
    # R_max: from A with 2 traversals and 2 balls, y + z = 14 (A -> B -> C); x + z = 11 and x + y = 7 are less.
    # Episode 0: x (+2), through d1 to B, y (+5): the 2nd ball ends it. R_agent(0) = 7.
    #   K(0) = rooms {A, B}, door d1, balls {x, y}: R_exploit(0) = x + y = 7 (z unknown).
    #   explore = (14 - 7) / 14 = 1/2, exploit = (7 - 7) / 14 = 0, total = 1/2; coverage 2/3.
    # Episode 1: d1 to B, d2 to C (2 traversals used), z (+9, still allowed in C), d2 again: a door action after the
    #   budget ends it (no move; invalid). R_agent(1) = 9. K(1) = everything: R_exploit(1) = 14.
    #   explore = 0, exploit = 5/14, total = 5/14; coverage 1.
    # "extra" comes after the last episode: ignored. Redundancy: (A, "d1 door") repeats once in 7 steps (the case
    # of "Y Ball " does not matter). Sample efficiency: 90% of 14 is 12.6, first reached in episode 1: 3 + 4 steps.
    columns = grade(LINE, ["x ball", "d1 door", "Y Ball ", "d1 door", "d2 door", "z ball", "d2 door", "extra"])
    assert episode_rows(columns, "episode", "n_steps", "agent_return", "exploit_return", "max_return") == [
        (0, 3, 7, 7, 14), (1, 4, 9, 14, 14)]
    assert episode_rows(columns, "total_gap", "explore_gap", "exploit_gap") == [
        (0.5, 0.5, 0.0), (pytest.approx(5 / 14), 0.0, pytest.approx(5 / 14))]
    assert episode_rows(columns, "coverage", "solver_status", "exploit_bound", "max_bound") == [
        (pytest.approx(2 / 3), "optimal", None, None), (1.0, "optimal", None, None)]
    row = one(columns)
    assert row == {
        "end_reason": "episodes", "n_steps": 7, "ignored_actions": 1, "invalid_moves": 1, "n_episodes": 2,
        "max_return": 14, "total_gap_last": pytest.approx(5 / 14), "explore_gap_last": 0.0,
        "exploit_gap_last": pytest.approx(5 / 14), "total_gap_mean": pytest.approx((1 / 2 + 5 / 14) / 2),
        "explore_gap_mean": 0.25, "exploit_gap_mean": pytest.approx(5 / 28), "coverage": 1.0,
        "redundancy": pytest.approx(1 / 7), "sample_efficiency": 7}
    assert columns.steps is not None
    assert columns.steps["room"].tolist() == ["A", "B", "B", "B", "C", "C", "C"]
    assert columns.steps["episode"].tolist() == [0, 0, 0, 1, 1, 1, 1]
    assert columns.steps["action"].tolist()[2] == "Y Ball "


def test_logged_episode_boundaries() -> None:
    # Episode 0 as logged: x, y? (y is in B: invalid in A), d1 to B. Episode 1 is skipped by the log (played with
    # no step: return 0, knowledge unchanged). Episode 2 does not exist (episodes: 3 -> 0, 1, 2 exist); it holds
    # d1 to B and y (+5).
    doc = {**LINE, "episodes": 3}
    columns = grade(doc, ["x ball", "y ball", "d1 door", "d1 door", "y ball"], [0, 0, 0, 2, 2])
    # K(0) = {A, B}, d1, {x}: R_exploit = 2 (y was seen but never collected: its reward is unknown).
    # K(1) = K(0); K(2) adds y: x + y = 7. R_max = 14.
    assert episode_rows(columns, "episode", "n_steps", "agent_return", "exploit_return") == [
        (0, 3, 2, 2), (1, 0, 0, 2), (2, 2, 5, 7)]
    assert one(columns)["end_reason"] == "end_of_log"  # the last episode did not end
    # the first 90% of the largest R_exploit (7) is episode 2: 3 + 0 + 2 steps
    assert one(columns)["sample_efficiency"] == 5


def test_actions_after_the_world_ended_a_logged_episode_are_ignored() -> None:
    # Episode 0: x, d1, y (2nd ball: the world ends the episode), then z ball and d2 door in the same logged
    # episode: ignored. Episode 1: d1 door.
    columns = grade(LINE, ["x ball", "d1 door", "y ball", "z ball", "d2 door", "d1 door"], [0, 0, 0, 0, 0, 1])
    row = one(columns)
    assert (row["n_steps"], row["ignored_actions"]) == (4, 2)
    assert columns.steps is not None
    assert columns.steps["action"].tolist() == ["x ball", "d1 door", "y ball", "d1 door"]


def test_bad_episode_indices_name_the_file_line_and_step() -> None:
    with pytest.raises(InputError, match=r"^f:3: steps\[1\]\.episode: episode 0 after episode 1; episode indices "
                                         r"must not decrease$"):
        grade(LINE, ["x ball", "d1 door"], [1, 0])
    with pytest.raises(InputError, match=r"^f:3: steps\[0\]\.episode: episode 2 does not exist: the instance has 2 "
                                         r"episodes \(0 to 1\)$"):
        grade(LINE, ["x ball"], [2])


def test_no_reward_anywhere_gives_null_gaps() -> None:
    doc = rooms_doc(["A", "B"], [("d", "A", "B")], [("x", "B", 0)], episodes=1)
    columns = grade(doc, ["d door", "x ball"])
    row = one(columns)
    assert row["max_return"] == 0
    assert [row[k] for k in ("total_gap_last", "explore_gap_mean", "sample_efficiency")] == [None, None, None]
    assert episode_rows(columns, "total_gap", "explore_gap", "exploit_gap", "coverage") == [(None, None, None, 1.0)]


def test_ball_limit_and_a_crowded_start_room() -> None:
    # Three balls in the start room (3, 4, 5) and one behind a door (8); 1 traversal, 2 balls per episode.
    # R_max = 8 + 5 = 13 (collect 5 in A, walk to B, collect 8). The agent takes 3 and 4 without moving: 7;
    # K(0) = {A} and balls {3, 4}: R_exploit = 7. explore = 6/13, exploit = 0.
    doc = rooms_doc(["A", "B"], [("d", "A", "B")], [("p", "A", 3), ("q", "A", 4), ("r", "A", 5), ("s", "B", 8)],
                    episodes=1, door_budget=1)
    columns = grade(doc, ["p ball", "q ball", "r ball"])
    assert episode_rows(columns, "agent_return", "exploit_return", "max_return") == [(7, 7, 13)]
    assert one(columns)["ignored_actions"] == 1 and one(columns)["coverage"] == 0.5


def test_an_empty_log() -> None:
    row = one(grade(LINE, []))
    assert (row["n_episodes"], row["n_steps"], row["coverage"], row["redundancy"], row["total_gap_last"]) == (
        0, 0, None, None, None)
    assert row["max_return"] == 14


def test_solutions_are_cached_by_knowledge_state_across_trajectories() -> None:
    instance = RoomsInstance.from_document(LINE)
    tables = GapsTables(instance)
    for _ in range(3):
        steps = [{"action": a} for a in ("x ball", "d1 door", "y ball", "x ball")]
        FAMILY.replay(tables, instance, Trajectory({"steps": steps}, "f", 1))
    # each trajectory: episode 0 (ended by its 2nd ball) with K = ({d1}, {x, y}), and episode 1 (x again) with the
    # same K: 6 lookups, 1 state solved
    assert (tables.lookups, tables.state_hits) == (6, 5)
    assert tables.cache.misses == 2  # R_max and that one state


# -- properties on random worlds ------------------------------------------------------------------------------

def reference_best(doc: dict[str, Any], doors: set[str] | None, balls: set[str] | None) -> int:
    """The best return of one episode by brute force over walks (no orienteering): every walk from the start of
    at most door_budget traversals through the given doors, collecting the ball_limit best given balls of the
    rooms it visits."""
    adjacent: dict[str, list[str]] = {}
    for door in doc["doors"]:
        if doors is None or door["name"] in doors:
            a, b = door["between"]
            adjacent.setdefault(a, []).append(b)
            adjacent.setdefault(b, []).append(a)
    rewards: dict[str, list[int]] = {}
    for ball in doc["balls"]:
        if balls is None or ball["name"] in balls:
            rewards.setdefault(ball["room"], []).append(ball["reward"])
    best = 0
    seen: set[tuple[str, int, frozenset[str]]] = set()
    stack = [(doc["start"], doc["door_budget"], frozenset([doc["start"]]))]
    while stack:
        state = stack.pop()
        if state in seen:
            continue
        seen.add(state)
        room, left, visited = state
        best = max(best, sum(sorted((r for v in visited for r in rewards.get(v, [])), reverse=True)
                             [:doc["ball_limit"]]))
        if left:
            stack.extend((nxt, left - 1, visited | {nxt}) for nxt in adjacent.get(room, []))
    return best


@st.composite
def worlds(draw: st.DrawFn) -> tuple[dict[str, Any], list[str], list[int] | None]:
    n = draw(st.integers(1, 6))
    rooms = [f"R{i}" for i in range(n)]
    edges = {(draw(st.integers(0, i - 1)), i) for i in range(1, n)}  # a random spanning tree: all reachable
    if n > 2:
        edges |= {tuple(sorted(p)) for p in draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                                                          .filter(lambda p: p[0] != p[1]), max_size=4))}
    doors = [(f"d{k}", rooms[a], rooms[b]) for k, (a, b) in enumerate(sorted(edges))]
    balls = [(f"b{k}", rooms[draw(st.integers(0, n - 1))], draw(st.integers(0, 10)))
             for k in range(draw(st.integers(0, 6)))]
    episodes = draw(st.integers(1, 4))
    doc = rooms_doc(rooms, doors, balls, episodes=episodes, door_budget=draw(st.integers(1, 4)),
                    ball_limit=draw(st.integers(1, 3)))
    words = [f"{d[0]} door" for d in doors] + [f"{b[0]} ball" for b in balls] + ["look", "D0 DOOR "]
    actions = draw(st.lists(st.sampled_from(words), max_size=30))
    logged = None
    if actions and draw(st.booleans()):
        logged = sorted(draw(st.lists(st.integers(0, episodes - 1), min_size=len(actions), max_size=len(actions))))
    return doc, actions, logged


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_gaps_properties(world: tuple[dict[str, Any], list[str], list[int] | None]) -> None:
    doc, actions, logged = world
    assert semantic_problems(doc) == []
    instance = RoomsInstance.from_document(doc)
    steps = [{"action": a} if logged is None else {"action": a, "episode": e}
             for a, e in zip(actions, logged or [0] * len(actions))]
    graded = FAMILY.replay(FAMILY.tables(instance), instance, Trajectory({"steps": steps}, "f", 1))
    columns = FAMILY.columns([graded])
    r_max = reference_best(doc, None, None)
    assert graded.tables.max_solution.value == r_max
    rows = episode_rows(columns, "agent_return", "exploit_return", "max_return", "total_gap", "explore_gap",
                        "exploit_gap", "coverage")
    assert len(rows) == len(graded.replay.knowledge)
    previous_coverage = 0.0
    for (agent, exploit, best, total, explore, exploit_gap, coverage), known in zip(rows, graded.replay.knowledge):
        assert exploit == reference_best(doc, set(known.doors), set(known.balls))
        assert best == r_max >= exploit >= agent >= 0
        if r_max:
            assert total == explore + exploit_gap  # exactly, as stored
            assert Fraction(explore) == pytest.approx(Fraction(r_max - exploit, r_max))
            assert total == pytest.approx((r_max - agent) / r_max)
            assert 0 <= explore <= 1 and 0 <= exploit_gap <= 1
        else:
            assert total is explore is exploit_gap is None
        assert previous_coverage <= coverage <= 1  # knowledge only grows
        previous_coverage = coverage
    row = one(columns)
    assert row["n_steps"] + row["ignored_actions"] == len(actions)
    if row["redundancy"] is not None:
        assert 0 <= row["redundancy"] < 1  # the first step never repeats
    if row["sample_efficiency"] is not None:
        assert 0 <= row["sample_efficiency"] <= row["n_steps"]


def test_a_solve_stopped_by_the_time_limit_is_flagged_with_its_bound() -> None:
    # A solve CP-SAT could not finish (rare on room worlds: the exhaustive search takes them) keeps its best value
    # as R_exploit, and the row says so: status `bound` and the proven upper bound beside it.
    instance = RoomsInstance.from_document(LINE)
    tables = GapsTables(instance)
    graded = FAMILY.replay(tables, instance, Trajectory({"steps": [{"action": "x ball"}]}, "f", 1))
    stopped = Solution(2, (0, 1), Status.BOUND, Method.CP_SAT, 6)
    columns = FAMILY.columns([graded._replace(exploit=[stopped])])
    assert episode_rows(columns, "exploit_return", "solver", "solver_status", "exploit_bound", "max_bound") == [
        (2, "cp-sat", "bound", 6, None)]
    assert episode_rows(graded_columns := FAMILY.columns([graded]), "solver", "solver_status") == [
        ("exhaustive", "optimal")] and graded_columns.trajectories["n_episodes"] == [1]


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(worlds())
def test_a_stream_and_its_logged_episodes_grade_alike(
        world: tuple[dict[str, Any], list[str], list[int] | None]) -> None:
    # Writing into the log the episode the world gave each graded action changes nothing: the same steps, episodes
    # and gaps (only the ignored tail after the last episode is not written).
    doc, actions, _ = world
    stream = grade(doc, actions)
    assert stream.steps is not None
    graded = stream.steps["action"].tolist()
    logged = grade(doc, graded, stream.steps["episode"].tolist()) if graded else grade(doc, [])
    assert logged.episodes is not None and stream.episodes is not None and logged.steps is not None
    for name in stream.steps:
        assert logged.steps[name].tolist() == stream.steps[name].tolist(), name
    for name in stream.episodes:
        assert logged.episodes[name].tolist() == stream.episodes[name].tolist(), name
    assert {k: v for k, v in one(logged).items() if k != "ignored_actions"} == {
        k: v for k, v in one(stream).items() if k != "ignored_actions"}


def test_the_state_cache_is_bounded_and_forgetting_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    instance = RoomsInstance.from_document(LINE)
    logs = [["x ball", "d1 door", "y ball"], ["d1 door", "d2 door", "z ball", "d2 door"], ["x ball", "y ball"],
            ["d1 door", "y ball", "d2 door", "z ball"]] * 2
    trajectories = [Trajectory({"steps": [{"action": a} for a in log]}, "f", 1) for log in logs]
    unbounded = GapsTables(instance)
    expected = [FAMILY.columns([FAMILY.replay(unbounded, instance, t)]).episodes for t in trajectories]
    monkeypatch.setattr("eebench.evaluator.gaps.STATES_KEPT", 2)
    bounded = GapsTables(instance)
    for trajectory, want in zip(trajectories, expected):
        got = FAMILY.columns([FAMILY.replay(bounded, instance, trajectory)]).episodes
        assert got is not None and want is not None
        assert {k: v.tolist() for k, v in got.items()} == {k: v.tolist() for k, v in want.items()}
        assert len(bounded._by_knowledge) <= 2 and len(bounded.cache) <= 2
    assert bounded.lookups == unbounded.lookups and bounded.state_hits < unbounded.state_hits


def test_a_bound_solve_never_stores_less_than_a_path_known_to_be_feasible() -> None:
    # R_max >= R_exploit(i) >= R_agent(i) always (issue 10; Grams et al., Section 3.1): the agent's episode is a
    # feasible path of K(i), K(i - 1)'s best is one of K(i), and any K(i)'s is one of the whole map. A solve the
    # time limit stopped early (a loaded machine) stored less: a negative explore gap, or R_max 0 and no gaps.
    instance = RoomsInstance.from_document(LINE)
    tables = GapsTables(instance)
    actions = ["x ball", "d1 door", "y ball", "d1 door", "d2 door", "z ball"]
    graded = FAMILY.replay(tables, instance, Trajectory({"steps": [{"action": a} for a in actions]}, "f", 1))
    assert graded.replay.returns == [7, 9]
    stopped = Solution(0, (0,), Status.BOUND, Method.CP_SAT, 20)
    tables.max_solution = stopped
    columns = FAMILY.columns([graded._replace(exploit=[stopped, Solution(2, (0, 1), Status.BOUND,
                                                                          Method.CP_SAT, 20)])])
    assert episode_rows(columns, "agent_return", "exploit_return", "max_return", "solver_status",
                        "exploit_bound", "max_bound") == [(7, 7, 9, "bound", 20, 20), (9, 9, 9, "bound", 20, 20)]
    assert all(gap >= 0 for name in ("explore_gap", "exploit_gap") for gap in columns.episodes[name].tolist())
    assert one(columns)["max_return"] == 9
