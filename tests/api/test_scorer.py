"""eebench.Scorer: a hand-worked episode, and records equal to `eebench grade`'s step for step."""

from __future__ import annotations

import copy
import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eebench
from eebench.errors import EebenchError
from eebench.scorer import EndReason, GridDagScorer, StepRecord
from tests.conftest import make_instance

WORDS = ["up", "down", "left", "right", " Left ", "UP", "jump", None]
STEP_FIELDS = [f for f in StepRecord._fields if f != "end"] + ["explore_error", "exploit_error"]


def test_hand_worked_corridor() -> None:
    """A corridor S . G: the goal sits two cells right of the start; worked by hand from the rules (park.py)."""
    instance = make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G", budget=9)
    scorer = eebench.Scorer(instance)
    assert isinstance(scorer, GridDagScorer)
    records = [scorer.step(a) for a in ["left", "right", "left", "right", "right"]]
    # (t, from, to, valid, case, |T|, gain, progress, stale, error): case 1 throughout (no node seen before the
    # goal's cell is entered), T = the one unobserved cell ahead
    expected = [
        (0, (0, 0), (0, 0), False, 1, 1, 0, 0, 0, 1),  # the map's edge: stays, Gain 0, an error
        (1, (0, 0), (1, 0), True, 1, 1, 1, 1, 0, 0),   # enters the unobserved cell: progress
        (2, (1, 0), (0, 0), True, 1, 1, 0, 0, 0, 1),   # away from T = {[2, 0]}: Gain 0, an error
        (3, (0, 0), (1, 0), True, 1, 1, 1, 0, 0, 0),   # back over the same edge, closer: Gain 1, S stays 0
        (4, (1, 0), (2, 0), True, 1, 1, 1, 1, 0, 0),   # the goal: progress, the episode ends
    ]
    got = [(r.t, (r.from_x, r.from_y), (r.to_x, r.to_y), r.valid, r.case_id, r.n_targets, r.gain, r.progress,
            r.stale, r.error) for r in records]
    assert got == expected
    assert [r.end for r in records] == [None] * 4 + [EndReason.GOAL]
    assert records[0].explore_error == 1 and records[0].exploit_error == 0
    with pytest.raises(EebenchError, match=r"^the episode ended \(goal\) at t = 5; call reset\(\) first$"):
        scorer.step("left")
    scorer.reset()
    assert scorer.step("right").progress == 1


def test_budget_ends_the_episode() -> None:
    instance = make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G", budget=2)
    records = eebench.Scorer(instance).play(["left", "left", "right"])
    assert [r.end for r in records] == [None, EndReason.BUDGET]


def test_unknown_instance_type() -> None:
    with pytest.raises(EebenchError, match="no scorer for dict"):
        eebench.Scorer({"map": []})


def _trajectories(main_suite: eebench.Instances, draws: list[tuple[int, list[str | None]]]) -> list[dict]:
    ids = list(main_suite)
    return [{"eebench": "trajectory/1", "id": f"t{k}", "instance": ids[i % len(ids)],
             "steps": [{"action": a} for a in actions]} for k, (i, actions) in enumerate(draws)]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 26), st.lists(st.sampled_from(WORDS), min_size=1, max_size=120)),
                min_size=1, max_size=4))
def test_records_equal_grade(main_suite: eebench.Instances, draws: list[tuple[int, list[str | None]]]) -> None:
    """Scorer.step, Scorer.batch and `eebench grade` give the same step rows."""
    trajectories = _trajectories(main_suite, draws)
    graded = eebench.grade(trajectories, bench=main_suite).steps.to_pylist()
    by_id: dict[str, list[dict]] = {}
    for row in graded:
        by_id.setdefault(row["trajectory_id"], []).append(row)
    for trajectory in trajectories:
        actions = [s["action"] for s in trajectory["steps"]]
        scorer = eebench.Scorer(main_suite[trajectory["instance"]])
        stepped = [{f: getattr(r, f) for f in STEP_FIELDS} for r in scorer.play(actions)]
        rows = sorted(by_id[trajectory["id"]], key=lambda row: row["t"])
        assert stepped == [{f: r[f] for f in STEP_FIELDS} for r in rows]
        columns = scorer.batch([actions])
        batch = [{f: columns[f][i].item() if hasattr(columns[f][i], "item") else columns[f][i]
                  for f in STEP_FIELDS} for i in range(len(columns["t"]))]
        assert batch == stepped
        ends = [r.end for r in scorer.play(actions)]
        assert ends[:-1] == [None] * (len(ends) - 1)


@pytest.mark.parametrize("compiled", [False, True], ids=["plain", "compiled"])
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 26), st.lists(st.lists(st.sampled_from(WORDS), max_size=100), max_size=6))
def test_batch_equals_steps(main_suite: eebench.Instances, monkeypatch: pytest.MonkeyPatch, compiled: bool,
                            which: int, trajectories: list[list[str | None]]) -> None:
    """The batch form's columns are the one-at-a-time records, trajectory after trajectory, replayed compiled or
    not (an empty batch and empty trajectories included)."""
    monkeypatch.setattr(eebench.scorer, "_compiled_batch", lambda actions: compiled)
    scorer = eebench.Scorer(main_suite[list(main_suite)[which]])
    columns = scorer.batch(trajectories)
    records = [(k, r) for k, actions in enumerate(trajectories) for r in scorer.play(actions)]
    assert len(columns["t"]) == len(records)
    for i, (k, record) in enumerate(records):
        assert columns["trajectory"][i] == k
        assert all(columns[f][i] == getattr(record, f) for f in STEP_FIELDS)


def test_large_batch_is_compiled_and_equal(main_suite: eebench.Instances) -> None:
    """A batch past the grader's compiled threshold goes through the numba replay: same records as stepping."""
    import random

    from eebench.evaluator.park import COMPILED_FROM_STEPS

    instance = main_suite["park2026-main/high-large/seed-1"]
    rng = random.Random(3)
    trajectories = [[rng.choice(WORDS) for _ in range(instance.budget + 3)]
                    for _ in range(COMPILED_FROM_STEPS // instance.budget + 1)]
    scorer = eebench.Scorer(instance)
    columns = scorer.batch(trajectories)
    records = [r for actions in trajectories for r in scorer.play(actions)]
    assert len(columns["t"]) == len(records) >= COMPILED_FROM_STEPS
    for field in STEP_FIELDS:
        assert columns[field].tolist() == [getattr(r, field) for r in records], field


@pytest.mark.parametrize("call, says", [
    (lambda s: s.batch(["up", "down"]), r"^trajectories\[0\]: expected a list of actions \(each its text or None\), "
                                        r"found str$"),   # (each letter was graded as an action)
    (lambda s: s.play("up"), r"^actions: expected a list of actions \(each its text or None\), found str$"),
    (lambda s: s.batch(a for a in [["up"]]), r"^trajectories: expected a list of action lists, found generator$"),
    (lambda s: s.batch([["up", {"a": 1}]]), r"^action \{'a': 1\}: expected the action's text or None"),
    (lambda s: s.batch([[0, 1]]), r"^action 0: expected the action's text or None"),   # (graded as invalid moves)
])
def test_batch_and_play_refuse_what_is_not_lists_of_actions(call, says: str) -> None:
    scorer = eebench.Scorer(make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G", budget=9))
    with pytest.raises(TypeError, match=says):
        call(scorer)


@pytest.mark.parametrize("copy_of", [lambda s: pickle.loads(pickle.dumps(s)), copy.deepcopy],
                         ids=["pickle", "deepcopy"])
def test_a_scorer_copied_mid_run_goes_on_as_the_original(main_suite: eebench.Instances, copy_of) -> None:
    # Ray and multiprocessing send objects by pickle, and a copied env copies its scorer: `__new__` dispatching on
    # the instance refused the copy's `__new__(cls)` without one
    rooms = next(iter(eebench.load("grams2025-rooms").values()))
    for instance, actions in ((main_suite["park2026-main/low-small/seed-0"], ["up", "left", "right", "down"] * 5),
                              (rooms, ["x ball", "a door", "b door"] * 40)):
        scorer = eebench.Scorer(instance)
        for action in actions[:7]:
            scorer.step(action)
        twin = copy_of(scorer)
        assert type(twin) is type(scorer)
        assert [twin.step(a) for a in actions[7:]] == [scorer.step(a) for a in actions[7:]]
