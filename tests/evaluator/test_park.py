"""Park et al.'s per-step metric: Appendix B's edge cases, hand-worked worlds, and the BFS reference."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchmarks.baseline_grader import grade as reference_grade
from eebench.evaluator.park import ParkTables, Segment, error_counts, replay, step_columns
from eebench.generator import generate_instance
from eebench.generator.params import DagParams, MapParams, Preset
from tests.conftest import make_instance

# -- Appendix B, Tables 4-9: the stale score of a no-progress segment -------------------------------------
# The paper's 3x3 grid is {-1, 0, 1}^2, all cells observed, every move with Gain = 1 and |T| > 1, so an error
# is exactly a rise of the stale score. The tables number moves from 1; `errors` lists those numbers.


def _cell(x: int, y: int) -> int:
    return (y + 1) * 3 + (x + 1)


def _stale_path(path: list[tuple[int, int]]) -> tuple[list[int], list[int]]:
    """Stale scores after each move, and the 1-based moves where the score rose."""
    segment = Segment(_cell(*path[0]))
    scores, rises, before = [], [], 0
    for move, (a, b) in enumerate(zip(path, path[1:]), start=1):
        score = segment.move(_cell(*a), _cell(*b))
        scores.append(score)
        if score > before:
            rises.append(move)
        before = score
    return scores, rises


APPENDIX_B = {
    # Table 4: probe a branch and back out once -- never penalised
    "table4-probe-and-back": ([(0, 0), (1, 0), (0, 0)], [0, 0], []),
    # Table 5: a gateway revisit of (0,0) before a fresh branch to (0,1) -- never penalised
    "table5-gateway-revisit": ([(0, 0), (1, 0), (0, 0), (0, 1)], [0, 0, 0], []),
    # Table 6: re-enter the exhausted branch: move 5 reuses (-1,0)-(0,0) a third time and visits (0,0) a third
    # time (e and n rise); move 6 traverses (0,0)-(1,0) a third time (e rises again)
    "table6-reenter-branch": ([(-1, 0), (0, 0), (1, 0), (0, 0), (-1, 0), (0, 0), (1, 0)],
                              [0, 0, 0, 0, 2, 3], [5, 6]),
    # Table 7: move 4 closes a loop (c: 0 -> 1); the second lap adds no cycle; move 8 visits (-1,-1) a third time
    "table7-repeated-cycle": ([(-1, -1), (0, -1), (0, 0), (-1, 0), (-1, -1), (0, -1), (0, 0), (-1, 0), (-1, -1)],
                              [0, 0, 0, 1, 1, 1, 1, 2], [4, 8]),
    # Table 8: corridor oscillation: tolerated up to move 3; move 4 visits (0,0) a third time; every further
    # oscillation reuses the corridor's edges beyond twice
    "table8-corridor-oscillation": ([(0, 0), (1, 0), (0, 0), (-1, 0), (0, 0), (1, 0), (0, 0)],
                                    [0, 0, 0, 1, 2, 4], [4, 5, 6]),
    # Table 9: comb / broom: one tooth explored and fully backed out along the stem; move 7 traverses the stem
    # (-1,0)-(0,0) a third time and visits (0,0) a third time; the final move opens the fresh branch (0,1)
    "table9-comb-broom": ([(-1, 0), (0, 0), (1, 0), (1, 1), (1, 0), (0, 0), (-1, 0), (0, 0), (0, 1)],
                          [0, 0, 0, 0, 0, 0, 2, 2], [7]),
}


@pytest.mark.parametrize("name", APPENDIX_B)
def test_appendix_b_stale_score(name: str) -> None:
    path, scores, rises = APPENDIX_B[name]
    assert _stale_path(path) == (scores, rises)


def test_segment_counts_its_start_as_one_visit() -> None:
    # the start cell counts once, so returning to it twice more is its third visit (n rises by one)
    segment = Segment(0)
    assert [segment.move(0, 1), segment.move(1, 0), segment.move(0, 1), segment.move(1, 0)] == [0, 0, 1, 3]


# -- hand-worked worlds ---------------------------------------------------------------------------------

def _columns(instance, actions):
    replayed = replay(ParkTables(instance), actions)
    return replayed, step_columns([replayed], [instance.width])


def _rows(instance, actions, *fields):
    _, columns = _columns(instance, actions)
    return [tuple(int(columns[f][i]) for f in fields) for i in range(len(columns["t"]))]


# A corridor of 7 cells; the goal G at the right end needs P, at the left end.
#   x: 0 1 2 3 4 5 6
#      P . . S . . G
CORRIDOR = dict(map_rows=["......."], start=[3, 0],
                nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])], goal="G")


def test_oscillation_between_two_unobserved_cells_is_caught_by_the_stale_score() -> None:
    # Figure 3c in one dimension: two frontier cells on either side, so every move gains (case 1, |T| = 2).
    # left enters x=2 (progress). Then 3, 2, 3, 2: the segment starting at x=2 reuses the edge (2,3) a third
    # time at the third move (e = 1) and visits x=2 a third time at the fourth (n = 1, e = 2).
    instance = make_instance(**CORRIDOR)
    rows = _rows(instance, ["left", "right", "left", "right", "left"],
                 "case_id", "n_targets", "gain", "progress", "stale", "error")
    assert rows == [
        (1, 2, 1, 1, 0, 0),
        (1, 2, 1, 0, 0, 0),
        (1, 2, 1, 0, 0, 0),
        (1, 2, 1, 0, 1, 1),
        (1, 2, 1, 0, 3, 1),
    ]


def test_cases_two_three_four_and_single_target() -> None:
    # Walk right to the goal (discovered, P missing), back left to P (achieved: the goal becomes pending).
    instance = make_instance(**CORRIDOR)
    actions = ["right", "right", "right", "left", "left", "left", "left", "left", "left", "right", "left", "right"]
    replayed, columns = _columns(instance, actions)
    case = columns["case_id"].tolist()
    # steps 0-2 explore right (case 1), reaching G at x=6: discovered but not pending, so still case 1.
    # steps 3-5 walk back over observed cells toward the frontier x=2 (case 1, one target: gain, no error).
    # step 6 enters x=2 (progress); step 7 enters x=1; step 8 enters x=0 and achieves P: the goal is pending.
    assert case[:9] == [1] * 9
    # from here on the goal is pending: case 2, one target (the goal's cell)
    assert case[9:] == [2, 2, 2]
    assert columns["n_targets"][9:].tolist() == [1, 1, 1]
    # right gains (toward the goal), left loses: an exploitation error; right gains again
    assert columns["gain"][9:].tolist() == [1, 0, 1]
    assert columns["error"][9:].tolist() == [0, 1, 0]
    counts = error_counts(columns, 1)
    assert counts["exploit_steps"].tolist() == [3] and counts["exploit_errors"].tolist() == [1]
    assert counts["explore_steps"].tolist() == [9] and counts["explore_errors"].tolist() == [0]
    assert replayed.end_reason == "end_of_log" and not replayed.success


def test_case_three_and_four() -> None:
    #   A S B      A, B primitive; the goal G, on a dead end below the start, needs A and B.
    #   # G #
    instance = make_instance(["...", "#.#"], [1, 0], [("A", [0, 0], []), ("B", [2, 0], []),
                                                      ("G", [1, 1], [["A", "B"]])], "G")
    # down: G discovered (progress), not pending. up: back to S (no progress; case 1, U = {A, B}, |T| = 2).
    # left: A achieved (progress). right, right: B achieved, goal pending and nothing unobserved (case 2).
    rows = _rows(instance, ["down", "up", "left", "right", "right", "left", "down"], "case_id", "n_targets",
                 "progress", "error")
    assert rows == [
        (1, 3, 1, 0),  # U = {A, B, G} at the start: entering G is progress
        (1, 2, 0, 0),  # U = {A, B}; back toward both: gain, stale 0
        (1, 2, 1, 0),  # enter A: achieved
        (1, 1, 0, 0),  # U = {B}: case 1 with one target
        (1, 1, 1, 0),  # enter B: achieved, G pending
        (2, 1, 0, 0),  # toward G
        (2, 1, 1, 0),  # achieve G
    ]
    # Case 3 and 4: a pending node while nothing (3) or something (4) is unobserved.
    #   S A . G    A primitive, G needs B; B at the far end behind G ... B is at x=4
    instance = make_instance(["....."], [0, 0], [("A", [1, 0], []), ("B", [4, 0], [["A"]]),
                                                   ("G", [3, 0], [["A", "B"]])], "G", budget=50)
    rows = _rows(instance, ["right", "right", "right", "right", "left"], "case_id", "n_targets", "gain", "error")
    # right: A achieved (case 1). right: x=2 (case 1). right: G discovered, not pending (case 1).
    # right: B entered and achieved (case 1, progress); now G is pending: case 2.
    assert [r[0] for r in rows] == [1, 1, 1, 1, 2]
    instance = make_instance(["....", "#.##"], [0, 0], [("A", [1, 0], [["B"]]), ("B", [3, 0], []),
                                                          ("G", [1, 1], [["A"]])], "G", budget=50)
    # right: A discovered (prerequisite B missing). right, right: B achieved, A pending, U = {G's cell}: case 4.
    rows = _rows(instance, ["right", "right", "right", "left", "right"], "case_id", "n_targets", "gain", "error")
    assert [r[0] for r in rows][3:] == [4, 4]
    assert rows[3][1] == 2  # T = {A's cell, the unobserved G cell}
    assert rows[3][2:] == (1, 0)  # toward both
    assert rows[4][2:] == (0, 1)  # back right: away from both, an error in case 4
    _, columns = _columns(instance, ["right", "right", "right", "left", "right"])
    assert error_counts(columns, 1)["explore_errors"].tolist() == [1]
    assert error_counts(columns, 1)["exploit_errors"].tolist() == [1]  # case 4 counts as both
    # everything observed, A pending, G not yet pending: case 3
    rows = _rows(instance, ["right", "down", "up", "right", "right", "left", "left", "down", "up"], "case_id")
    assert rows[5] == (3,) and rows[6] == (3,)


def test_inadmissible_moves_stay_cost_a_step_and_are_errors() -> None:
    instance = make_instance(**CORRIDOR)
    actions = ["up", "jump", None, "LEFT ", "down"]
    _, columns = _columns(instance, actions)
    assert columns["valid"].tolist() == [False, False, False, True, False]
    assert columns["gain"].tolist() == [0, 0, 0, 1, 0]
    assert columns["error"].tolist() == [1, 1, 1, 0, 1]
    assert columns["progress"].tolist() == [0, 0, 0, 1, 0]
    assert (columns["from_x"] == columns["to_x"]).tolist() == [True, True, True, False, True]
    assert columns["to_x"].tolist() == [3, 3, 3, 2, 2]
    assert error_counts(columns, 1)["invalid_moves"].tolist() == [4]


def test_inadmissible_move_keeps_the_stale_score() -> None:
    instance = make_instance(**CORRIDOR)
    _, columns = _columns(instance, ["left", "right", "left", "right", "up", "left"])
    assert columns["stale"].tolist() == [0, 0, 0, 1, 1, 3]
    assert columns["error"].tolist() == [0, 0, 0, 1, 1, 1]


def test_budget_goal_and_end_of_log() -> None:
    instance = make_instance(**{**CORRIDOR, "budget": 4})
    replayed = replay(ParkTables(instance), ["right"] * 10)
    assert (replayed.end_reason, len(replayed.cells_to), replayed.ignored_actions, replayed.success) == \
        ("budget", 4, 6, False)
    replayed = replay(ParkTables(instance), ["right"] * 4)
    assert (replayed.end_reason, replayed.ignored_actions) == ("budget", 0)
    replayed = replay(ParkTables(instance), ["right"] * 2)
    assert replayed.end_reason == "end_of_log"
    instance = make_instance(**{**CORRIDOR, "budget": 20})
    path = ["left"] * 3 + ["right"] * 6
    replayed = replay(ParkTables(instance), path + ["left", "left"])
    assert (replayed.end_reason, replayed.success, len(replayed.cells_to), replayed.ignored_actions) == \
        ("goal", True, 9, 2)
    assert (replayed.nodes_achieved, replayed.cells_observed) == (2, 7)


def test_goal_on_the_last_step_of_the_budget_is_a_success() -> None:
    instance = make_instance(**{**CORRIDOR, "budget": 9})
    replayed = replay(ParkTables(instance), ["left"] * 3 + ["right"] * 6 + ["up"])
    assert (replayed.end_reason, replayed.success, replayed.ignored_actions) == ("goal", True, 1)


def test_revisiting_a_node_once_its_prerequisites_hold_is_progress() -> None:
    instance = make_instance(**CORRIDOR)
    actions = ["right"] * 3 + ["left"] * 6 + ["right"] * 6
    _, columns = _columns(instance, actions)
    assert columns["progress"].tolist()[-1] == 1  # achieving the (observed) goal resets the segment
    assert columns["stale"].tolist()[-1] == 0
    assert columns["progress"].tolist()[9:14] == [0, 0, 0, 0, 0]  # walking back over observed cells


def test_several_trajectories_at_once_match_one_at_a_time() -> None:
    instance = make_instance(**CORRIDOR)
    tables = ParkTables(instance)
    runs = [["left", "right", "left"], [], ["up", "right", "right", "right"], ["left"] * 3 + ["right"] * 6]
    together = step_columns([replay(tables, r) for r in runs], [instance.width] * len(runs))
    offset = 0
    for i, run in enumerate(runs):
        alone = step_columns([replay(tables, run)], [instance.width])
        n = len(alone["t"])
        for name, values in alone.items():
            expected = values if name != "trajectory" else values + i
            assert together[name][offset:offset + n].tolist() == expected.tolist(), name
        offset += n
    assert offset == len(together["t"])


# -- the fast grader against the BFS-per-step reference, on generated worlds -----------------------------

WORDS = st.sampled_from(["up", "down", "left", "right", "Up", " LEFT", "jump", "", None])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_nodes=st.integers(1, 7), width=st.integers(2, 7), height=st.integers(2, 7),
       corridor=st.integers(1, 2), options=st.sampled_from([((1, 1.0),), ((1, 0.5), (2, 0.5))]),
       seed=st.integers(0, 10_000), actions=st.lists(WORDS, max_size=120),
       walk=st.lists(st.sampled_from(["up", "down", "left", "right"]), max_size=200))
def test_matches_the_reference_grader_step_by_step(n_nodes, width, height, corridor, options, seed, actions,
                                                   walk) -> None:
    if width * height < n_nodes + 1:
        return
    preset = Preset("p", DagParams(n_nodes, option_count_probs=options,
                                   dependency_count_probs=((1, 0.5), (2, 0.5))),
                    MapParams((1, corridor), size=(width, height)))
    instance = generate_instance(preset, seed, "prop/x")
    tables = ParkTables(instance)
    for run in (actions, walk, walk + actions):
        replayed = replay(tables, run)
        columns = step_columns([replayed], [instance.width])
        reference = reference_grade(instance.to_document(), run)
        ours = [{"case_id": int(columns["case_id"][i]), "n_targets": int(columns["n_targets"][i]),
                 "gain": int(columns["gain"][i]), "progress": int(columns["progress"][i]),
                 "stale": int(columns["stale"][i]), "error": int(columns["error"][i]),
                 "valid": bool(columns["valid"][i]), "to": (int(columns["to_x"][i]), int(columns["to_y"][i]))}
                for i in range(len(columns["t"]))]
        assert ours == reference
        assert replayed.ignored_actions == len(run) - len(reference)


@settings(max_examples=40, deadline=None)
@given(actions=st.lists(st.sampled_from(["up", "down", "left", "right", "x"]), max_size=150))
def test_invariants(actions) -> None:
    instance = make_instance([".....", ".#.#.", "....."], [2, 0],
                             [("A", [0, 2], []), ("B", [4, 2], []), ("G", [2, 2], [["A"], ["B"]])], "G", budget=60)
    replayed, columns = _columns(instance, actions)
    n = len(columns["t"])
    if replayed.success:  # graded up to the step that achieved the goal
        assert n <= min(len(actions), 60) and columns["progress"][-1] == 1
    else:
        assert n == min(len(actions), 60)
    assert replayed.ignored_actions == len(actions) - n
    assert columns["t"].tolist() == list(range(n))
    # progress steps never err and reset the stale score
    progress = columns["progress"] == 1
    assert not (columns["error"][progress]).any() and not (columns["stale"][progress]).any()
    # no gain means an error; an error needs no gain, or |T| > 1
    assert (columns["error"][(columns["gain"] == 0) & ~progress] == 1).all()
    assert ((columns["gain"] == 0) | (columns["n_targets"] > 1) | (columns["error"] == 0)).all()
    # consecutive steps chain: p(t+1) is where step t+1 starts
    assert (columns["from_x"][1:] == columns["to_x"][:-1]).all() and (columns["from_y"][1:] == columns["to_y"][:-1]).all()
    assert set(columns["case_id"].tolist()) <= {1, 2, 3, 4}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), walk=st.lists(st.sampled_from(["up", "down", "left", "right", "x"]), max_size=300))
def test_replay_counts_the_stale_score_as_segment_does(seed, walk) -> None:
    # the replay keeps S incrementally (sets of visited cells and used edges); Segment recounts it from the
    # visit and traversal counts: they agree on every step of long walks that revisit a lot
    preset = Preset("p", DagParams(3, option_count_probs=((1, 1.0),), dependency_count_probs=((1, 1.0),)),
                    MapParams((1, 2), size=(5, 5)))
    instance = generate_instance(preset, seed, "prop/stale")
    _, columns = _columns(instance, walk)
    cell = ParkTables(instance).world.start
    segment, expected = Segment(cell), 0
    for i in range(len(columns["t"])):
        target = int(columns["to_y"][i]) * instance.width + int(columns["to_x"][i])
        if columns["progress"][i]:
            segment, expected = Segment(target), 0
        elif columns["valid"][i]:
            expected = segment.move(cell, target)
        assert columns["stale"][i] == expected
        cell = target


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(
    st.tuples(st.integers(0, max(n - 1, 0)), st.integers(1, 4), st.booleans(), st.booleans()),
    max_size=0 if n == 0 else 40))))
def test_error_counts_are_the_counts_by_their_definition(case: tuple[int, list[tuple[int, int, bool, bool]]]) -> None:
    # one bincount over (trajectory, case, error, validity) gives, per trajectory, what each definition counts
    import numpy as np

    n, steps = case
    columns = {"trajectory": np.array([s[0] for s in steps], dtype=np.int32),
               "case_id": np.array([s[1] for s in steps], dtype=np.int8),
               "error": np.array([s[2] for s in steps], dtype=np.int8),
               "valid": np.array([s[3] for s in steps], dtype=bool)}
    explore, exploit = (1, 4), (2, 3, 4)
    expected = {
        "explore_steps": [sum(s[0] == j and s[1] in explore for s in steps) for j in range(n)],
        "exploit_steps": [sum(s[0] == j and s[1] in exploit for s in steps) for j in range(n)],
        "explore_errors": [sum(s[0] == j and s[1] in explore and s[2] for s in steps) for j in range(n)],
        "exploit_errors": [sum(s[0] == j and s[1] in exploit and s[2] for s in steps) for j in range(n)],
        "invalid_moves": [sum(s[0] == j and not s[3] for s in steps) for j in range(n)],
    }
    counted = error_counts(columns, n)
    assert {name: values.tolist() for name, values in counted.items()} == expected
    assert all(values.dtype == np.int64 for values in counted.values())
