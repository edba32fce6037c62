"""The coverage family: ECC, hit steps, visit depths and exploration degree worked by hand on each world kind,
and their invariants as properties over random action streams."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.checkpoints import CheckpointLibrary, load_checkpoints
from eebench.errors import InputError
from eebench.evaluator import park
from eebench.evaluator.coverage import FAMILY, NEVER, Coverage, LoggedInstance, _compiled_groups, _PendingGrid
from eebench.evaluator.families import Coded, FamilyColumns, Trajectory, families_for
from eebench.evaluator.park import FAMILY as PARK
from eebench.generator import generate_instance
from eebench.generator.params import DagParams, MapParams, Preset
from eebench.world.rooms import RoomsInstance
from tests.conftest import make_instance
from tests.evaluator.test_gaps import LINE

# x: 0 1 2 3 4 5 6 -- P at the left end; the goal G at the right end needs P; the start in the middle (3, 0)
CORRIDOR = make_instance(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                         goal="G", budget=30, instance_id="t/corridor")
SOLVE = ["left"] * 3 + ["right"] * 6


def checkpoints(tmp_path: Path, text: str) -> CheckpointLibrary:
    path = tmp_path / "cp.yaml"
    path.write_text("eebench: checkpoints/1\nname: test\nsets:\n" + text)
    return CheckpointLibrary(load_checkpoints(path))


def grade(library: CheckpointLibrary, instance: Any, *trajectories: list[dict[str, Any]]
          ) -> tuple[list[Coverage], FamilyColumns]:
    family = FAMILY.configure(library)
    tables = family.tables(instance)
    replays = [family.replay(tables, instance, Trajectory({"steps": steps}, "f.jsonl", i + 1))
               for i, steps in enumerate(trajectories)]
    # a grid_dag trajectory's coverage waits for the Park replay (here: the family's own, the Park family not run)
    graded = [r.graded() if isinstance(r, _PendingGrid) else r for r in replays]
    return graded, family.columns(replays)


def actions(*words: str | None) -> list[dict[str, Any]]:
    return [{"action": w} for w in words]


def hits(replay: Coverage) -> dict[str, int | None]:
    return {cid: None if k == NEVER else k for cid, k in zip(replay.ids, replay.hits)}


def test_the_family_grades_every_world_kind() -> None:
    assert all(FAMILY in families_for(env) for env in ("grid_dag", "rooms", "logged"))
    assert families_for("logged") == (FAMILY,)


def test_grid_dag_by_hand(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, """
  - instances: ["t/*"]
    rules: [cell_observed, node_discovered, node_achieved, room_visited, ball_collected]
    checkpoints:
      - {id: at-p, state: "0,0"}
      - {id: said-up, field: action, regex: "^up$"}
      - {id: both, all: [at-p, said-up]}
      - {id: right-end, field: state, regex: "^6,"}
      - {id: nowhere, state: "9,9"}
""")
    (solve, wander), columns = grade(library, CORRIDOR, actions(*SOLVE), actions("left", "bogus", "right", "right",
                                                                                 "up"))
    # SOLVE: 2,0 1,0 0,0 (P achieved) 1,0 2,0 3,0 4,0 5,0 6,0 (G achieved); the start 3,0 is a visit before step 1
    assert solve.depth == [0, 0, 0, 1, 1, 1, 0, 0, 0]
    assert hits(solve) == {
        "cell:0,0": 3, "cell:1,0": 2, "cell:2,0": 1, "cell:3,0": 0, "cell:4,0": 7, "cell:5,0": 8, "cell:6,0": 9,
        "node:P:discovered": 3, "node:G:discovered": 9, "node:P:achieved": 3, "node:G:achieved": 9,
        "at-p": 3, "said-up": None, "both": None, "right-end": 9, "nowhere": None}   # rooms rules add nothing
    # after k steps, hits <= k: k=0 one (the start cell), 1: 2, 2: 3, 3: 7 (0,0, P twice, at-p), ... 9: 13
    assert columns.steps["ecc"][:9].tolist() == pytest.approx([c / 16 for c in (2, 3, 7, 7, 7, 7, 8, 9, 13)])
    assert columns.trajectories["ecc"][0] == 13 / 16
    assert columns.trajectories["distinct_states"][0] == 7
    assert columns.trajectories["exploration_degree"][0] == pytest.approx(3 / 7)  # 1,0 2,0 3,0 twice
    # wander: 2,0; `bogus` stays (a visit of 2,0 again); 3,0; 4,0; `up` is inadmissible and stays on 4,0
    assert wander.depth == [0, 1, 1, 0, 1]
    assert {k: v for k, v in hits(wander).items() if v is not None} == {
        "cell:2,0": 1, "cell:3,0": 0, "cell:4,0": 4, "said-up": 5}
    assert columns.trajectories["distinct_states"][1] == 3
    assert columns.trajectories["exploration_degree"][1] == 1.0
    assert columns.trajectories["checkpoints_hit"] == [13, 4]
    assert columns.checkpoints["checkpoint_id"].values()[:3].tolist() == ["cell:0,0", "cell:1,0", "cell:2,0"]


def test_grid_dag_stops_where_the_park_family_stops(tmp_path: Path) -> None:
    # after the goal nothing is graded; the budget cuts the rest
    (solve,), _ = grade(CheckpointLibrary(), CORRIDOR, actions(*SOLVE, "left", "left"))
    assert solve.n_steps == 9 and solve.ids == ()
    short = make_instance(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                          goal="G", budget=4, instance_id="t/short")
    (cut,), columns = grade(CheckpointLibrary(), short, actions(*SOLVE))
    assert cut.n_steps == 4
    assert columns.trajectories["ecc"] == [None] and np.isnan(columns.steps["ecc"]).all()


def test_rooms_by_hand(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, """
  - instances: ["t/rooms"]
    rules: [room_visited, ball_collected, cell_observed, node_achieved]
    checkpoints:
      - {id: in-c, state: C}
      - {id: b-or-c, field: state, regex: "^[BC]$"}
""")
    instance = RoomsInstance.from_document(LINE)
    # A - d1 - B - d2 - C, start A, 2 balls per episode: x (A); d1 to B; y (B) ends episode 0 (the ball limit);
    # episode 1 starts in A again: d1 to B, d2 to C.
    steps = [{"action": a, "phase": p} for a, p in (("x ball", "explore"), ("d1 door", "explore"),
                                                     ("y ball", "explore"), ("d1 door", "act"), ("d2 door", "act"))]
    (run,), columns = grade(library, instance, steps)
    # visits: A (start) | A B B | A (episode 1 starts) B C
    assert run.depth == [1, 0, 1, 2, 0]
    assert hits(run) == {"room:A": 0, "room:B": 2, "room:C": 5, "ball:x": 1, "ball:y": 3, "ball:z": None,
                         "in-c": 5, "b-or-c": 2}
    assert columns.trajectories["distinct_states"] == [3]
    assert columns.trajectories["exploration_degree"][0] == pytest.approx(2 / 3)  # A three times, B three times
    assert columns.trajectories["ecc"] == [7 / 8]
    assert columns.steps["phase"].tolist() == ["explore"] * 3 + ["act"] * 2
    assert columns.steps["ecc"].tolist() == pytest.approx([c / 8 for c in (2, 4, 5, 5, 7)])


def test_rooms_logged_episodes_start_in_the_start_room(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, '  - instances: ["t/rooms"]\n    rules: [room_visited]\n')
    instance = RoomsInstance.from_document(LINE)
    steps = [{"action": "d1 door", "episode": 0}, {"action": "d1 door", "episode": 1}]
    (run,), columns = grade(library, instance, steps)
    assert run.depth == [0, 1]   # B, then B again after the start room A at episode 1's start
    assert columns.trajectories["exploration_degree"] == [1.0]   # A twice (two starts), B twice


def test_logged_by_hand(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, r"""
  - instances: ["tw-coin/*"]
    state: {field: observation, regex: '-= (.+?) =-'}
    checkpoints:
      - {id: kitchen, field: observation, regex: '-= Kitchen =-'}
      - {id: took-coin, field: action, regex: '^take coin$'}
      - {id: kitchen-and-coin, all: [kitchen, took-coin]}
      - {id: in-cellar, state: Cellar}
      - {id: lit, field: state, regex: 'lar$'}
      - {id: in-attic, state: Attic}
""")
    steps = [{"action": "inventory", "observation": "You carry nothing."},             # no state yet
             {"action": "look", "observation": "-= Kitchen =- a room"},                # Kitchen
             {"action": "go east", "observation": "-= Cellar =- dark"},                # Cellar
             {"action": "take coin", "observation": "Taken."},                          # still Cellar
             {"action": "go west", "observation": "-= Kitchen =-", "state": "Hall"}]   # its own state wins
    (run,), columns = grade(library, LoggedInstance("tw-coin/game-1"), steps)
    assert run.states == [None, "Kitchen", "Cellar", "Cellar", "Hall"]
    assert run.depth == [None, 0, 0, 1, 0]
    assert hits(run) == {"kitchen": 2, "took-coin": 4, "kitchen-and-coin": 4, "in-cellar": 3, "lit": 3,
                         "in-attic": None}
    assert columns.trajectories["distinct_states"] == [3]
    assert columns.trajectories["exploration_degree"] == [pytest.approx(1 / 3)]
    assert columns.trajectories["ecc"] == [pytest.approx(5 / 6)]
    assert columns.trajectories["n_steps"] == [5] and columns.trajectories["end_reason"] == ["end_of_log"]
    assert np.isnan(columns.steps["visit_depth"][0]) and columns.steps["visit_depth"][1:].tolist() == [0, 0, 1, 0]
    assert columns.steps["logged_state"].tolist() == [None, "Kitchen", "Cellar", "Cellar", "Hall"]
    assert columns.checkpoints["hit_after_steps"].tolist()[:5] == [2, 4, 4, 3, 3]


def test_logged_without_states_or_checkpoints() -> None:
    (run,), columns = grade(CheckpointLibrary(), LoggedInstance("x"), actions("a", "b"))
    assert run.depth == [None, None]
    assert columns.trajectories["distinct_states"] == [None]
    assert columns.trajectories["exploration_degree"] == [None]
    assert columns.trajectories["ecc"] == [None] and columns.trajectories["checkpoints_total"] == [0]


def test_sets_match_by_fnmatch_and_the_shipped_ones_apply_when_no_given_set_does(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, '  - instances: ["tw-*/game-?"]\n    checkpoints: [{id: a, state: x}]\n')
    assert [s.index for s in library.sets_for("tw-coin/game-1")] == [0]
    assert library.sets_for("tw-coin/game-12") == ()
    with_shipped = CheckpointLibrary(library.given, shipped=True)
    assert [s.name for s in with_shipped.sets_for("park2026-main/low-small/seed-0")] == ["park2026"]
    assert [s.name for s in with_shipped.sets_for("grams2025-rooms/7x7/seed-0")] == ["grams2025"]
    assert [s.name for s in with_shipped.sets_for("tw-coin/game-1")] == ["test"]


# -- properties -----------------------------------------------------------------------------------

GRIDS = [CORRIDOR, make_instance(map_rows=["...#", "....", "#..."], start=[0, 0],
                                 nodes=[("A", [3, 2], []), ("B", [2, 0], []), ("G", [0, 1], [["A"], ["B"]])],
                                 goal="G", budget=15, instance_id="t/small")]
RULES = """
  - instances: ["*"]
    rules: [cell_observed, node_discovered, node_achieved, room_visited, ball_collected]
    checkpoints:
      - {id: said-up, field: action, regex: "^up$"}
      - {id: in-b, state: B}
      - {id: all-of, all: [said-up, in-b]}
"""
WORDS = st.sampled_from(["up", "down", "left", "right", "Up ", "jump", None])


def check_invariants(replays: list[Coverage], columns: FamilyColumns, initial: bool) -> None:
    start = 0
    for i, run in enumerate(replays):
        curve = columns.steps["ecc"][start:start + run.n_steps]
        start += run.n_steps
        if run.ids:
            assert ((curve >= 0) & (curve <= 1)).all()
            assert (np.diff(curve) >= 0).all()
            for k, value in enumerate(curve, start=1):   # the curve is the share hit within k steps
                assert value == pytest.approx(sum(h <= k for h in run.hits) / len(run.ids))
        known = [d for d in run.depth if d is not None]
        distinct = columns.trajectories["distinct_states"][i]
        if known or initial:
            assert distinct >= 1
            # the depth-0 steps count the distinct states entered (the initial state is no step's)
            assert known.count(0) == distinct - initial
            assert 0 <= columns.trajectories["exploration_degree"][i] <= 1


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(GRIDS), st.lists(st.lists(WORDS, max_size=40), min_size=1, max_size=4))
def test_grid_dag_properties(tmp_path_factory: Any, instance: Any, streams: list[list[str | None]]) -> None:
    library = checkpoints(tmp_path_factory.mktemp("cp"), RULES)
    replays, columns = grade(library, instance, *(actions(*s) for s in streams))
    check_invariants(replays, columns, initial=True)
    park = PARK.columns([PARK.replay(PARK.tables(instance), instance, Trajectory({"steps": actions(*s)}, "f", 1))
                         for s in streams])
    assert [r.n_steps for r in replays] == park.trajectories["n_steps"]   # the same graded steps, row for row


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["x ball", "y ball", "z ball", "d1 door", "d2 door", "D2 Door",
                                                    "nope"]), st.sampled_from(["explore", "act", None])),
                         max_size=20), min_size=1, max_size=3))
def test_rooms_properties(tmp_path_factory: Any, streams: list[list[tuple[str, str | None]]]) -> None:
    library = checkpoints(tmp_path_factory.mktemp("cp"), RULES)
    instance = RoomsInstance.from_document(LINE)
    replays, columns = grade(library, instance, *([{"action": a, "phase": p} for a, p in s] for s in streams))
    check_invariants(replays, columns, initial=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from(["Kitchen", "Cellar", "Hall", None]), st.booleans()),
                         max_size=20), min_size=1, max_size=3))
def test_logged_properties(tmp_path_factory: Any, streams: list[list[tuple[str | None, bool]]]) -> None:
    library = checkpoints(tmp_path_factory.mktemp("cp"), r"""
  - instances: ["*"]
    state: {field: observation, regex: '-= (.+?) =-'}
    checkpoints:
      - {id: kitchen, state: Kitchen}
      - {id: hall, field: observation, regex: Hall}
      - {id: both, all: [kitchen, hall]}
""")
    trajectories = [[{"action": "go", **({"observation": f"-= {s} =-"} if s and not own else {}),
                      **({"state": s} if s and own else {})} for s, own in stream] for stream in streams]
    replays, columns = grade(library, LoggedInstance("g"), *trajectories)
    check_invariants(replays, columns, initial=False)


def test_an_episode_the_log_skips_still_starts_in_the_start_room(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, '  - instances: ["t/rooms"]\n    rules: [room_visited]\n')
    instance = RoomsInstance.from_document(LINE)
    # episode 0 has no step: the start room A is visited at its start and again at episode 1's, then the step
    (run,), columns = grade(library, instance, [{"action": "x ball", "episode": 1}])
    assert run.depth == [2]
    assert columns.trajectories["distinct_states"] == [1] and columns.trajectories["exploration_degree"] == [1.0]


def test_an_all_of_rule_ids(tmp_path: Path) -> None:
    library = checkpoints(tmp_path, """
  - instances: ["t/*"]
    rules: [cell_observed, node_achieved]
    checkpoints:
      - {id: p-then-g, all: ["node:P:achieved", "node:G:achieved"]}
      - {id: off-map, all: ["cell:0,0", "cell:99,0"]}
""")
    (solve,), _ = grade(library, CORRIDOR, actions(*SOLVE))
    assert hits(solve)["p-then-g"] == 9 and hits(solve)["off-map"] is None   # no cell 99,0: never hit


BOTH_WAYS = """
  - instances: ["*"]
    rules: [cell_observed, node_discovered, node_achieved]
    checkpoints:
      - {id: said-up, field: action, regex: "^up$"}
      - {id: thought, field: reasoning, regex: "go"}
      - {id: right-end, field: state, regex: "^[23],"}
      - {id: at-start, state: "0,0"}
      - {id: all-of, all: [said-up, "node:A:achieved"]}
      - {id: all-of-all, all: [all-of, thought]}
  - instances: ["t/small"]
    rules: [node_achieved]
"""
GENERATED = [generate_instance(Preset("p", DagParams(n, option_count_probs=((1, 0.5), (2, 0.5)),
                                                   dependency_count_probs=((1, 0.5), (2, 0.5))),
                                      MapParams((1, 2), size=size)), seed, f"t/gen-{seed}")
             for size, n, seed in (((5, 4), 3, 1), ((7, 6), 5, 2), ((4, 4), 2, 3))]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(GRIDS + GENERATED),
       st.lists(st.lists(st.tuples(WORDS, st.sampled_from([None, "explore", "act"]), st.booleans()), max_size=60),
                min_size=1, max_size=5))
def test_the_compiled_grid_path_equals_the_plain_one(tmp_path_factory: Any, instance: Any,
                                                      streams: list[list[tuple[str | None, str | None, bool]]]) -> None:
    # the compiled kernel (a large run) and the plain reference (a small one) give the same columns, every table
    library = checkpoints(tmp_path_factory.mktemp("cp"), BOTH_WAYS)
    family = FAMILY.configure(library)
    coverage_tables, park_tables = family.tables(instance), PARK.tables(instance)
    runs = [[{"action": word, **({"phase": phase} if phase else {}), **({"reasoning": "go on"} if said else {})}
             for word, phase, said in stream] for stream in streams]
    columns = []
    for threshold in (10 ** 12, 0):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(park, "COMPILED_FROM_STEPS", threshold)
            parks, replays = [], []
            for i, steps in enumerate(runs):
                earlier: dict[str, Any] = {}
                trajectory = Trajectory({"steps": steps}, "f.jsonl", i + 1, earlier)
                earlier["park"] = PARK.replay(park_tables, instance, trajectory)
                parks.append(earlier["park"])
                replays.append(family.replay(coverage_tables, instance, trajectory))
            PARK.columns(parks)
            if threshold == 0:
                assert _compiled_groups(replays)[1] == set(range(len(runs)))   # every one by the kernel
            columns.append(family.columns(replays))
    plain, compiled = columns
    assert plain.trajectories == compiled.trajectories
    for table in ("steps", "checkpoints"):
        ours, reference = getattr(compiled, table), getattr(plain, table)
        assert ours.keys() == reference.keys()
        for name, values in reference.items():
            mine, theirs = (v.values() if isinstance(v, Coded) else v for v in (ours[name], values))
            assert mine.dtype == theirs.dtype, name
            np.testing.assert_array_equal(mine, theirs, err_msg=name)


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_field_hits_are_each_checkpoints_first_step_whose_field_a_regex_finds(data: Any) -> None:
    """`_field_hits` (which keeps what a text's regexes found for its next showing, in this trajectory or the next
    ones of the plan, up to a budget of characters) against the definition: the least of a checkpoint's earlier hit
    and the first step whose field one of its regexes finds."""
    from types import SimpleNamespace

    from eebench.evaluator.coverage import SeenTexts, _field_hits

    class Budget(SeenTexts):
        LIMIT = data.draw(st.sampled_from([0, 2, 5, SeenTexts.LIMIT]))   # forgotten at once, now and then, never

    texts = st.sampled_from(["a", "b", "ab", "ba", "c", None, 3])
    n = data.draw(st.integers(1, 5))
    by_field = tuple((field, tuple((data.draw(st.integers(0, n - 1)), re.compile(data.draw(st.sampled_from(
        ["a", "b", "ab", "^b", "c$"])))) for _ in range(data.draw(st.integers(1, 6)))))
        for field in data.draw(st.lists(st.sampled_from(["observation", "raw"]), min_size=1, max_size=2, unique=True)))
    steps = data.draw(st.lists(st.fixed_dictionaries({"observation": texts, "raw": texts}), max_size=10))
    start = data.draw(st.lists(st.sampled_from([NEVER, 0, 2, 5]), min_size=n, max_size=n))
    expected = [min([start[i]] + [k for k, step in enumerate(steps, start=1) for field, checkpoints in by_field
                                  for j, regex in checkpoints if j == i and isinstance(step[field], str)
                                  and regex.search(step[field])]) for i in range(n)]
    for plan in (SimpleNamespace(by_field=by_field, seen=Budget()), SimpleNamespace(by_field=by_field, seen=None)):
        for _ in range(2):   # a second trajectory of the plan, its texts seen before (or not: `seen` None)
            hits = list(start)
            _field_hits(plan, steps, hits)
            assert hits == expected


EARLY_MID_LATE = [{"action": "a", "observation": text} for text in ("early", "mid", "late")]

def test_an_all_sees_every_sets_definitions_of_its_members(tmp_path: Path) -> None:
    # one id defined by several sets is one checkpoint (hit by the first definition that holds), so an `all` of
    # it waits for that, whichever set defines what and in whichever order the sets come
    later_all = """
  - instances: ["*"]
    checkpoints:
      - {id: y, field: observation, regex: late}
      - {id: x, all: [y]}
  - instances: ["*"]
    checkpoints:
      - {id: z, field: observation, regex: early}
      - {id: y, all: [z]}
"""
    (run,), _ = grade(checkpoints(tmp_path, later_all), LoggedInstance("g/a"), EARLY_MID_LATE)
    assert hits(run) == {"y": 1, "x": 1, "z": 1}
    later_member = """
  - instances: ["*"]
    rules: [room_visited]
    checkpoints:
      - {id: k, field: observation, regex: early}
      - {id: both, all: ["room:hall", k]}
  - instances: ["*"]
    checkpoints:
      - {id: "room:hall", field: observation, regex: mid}
"""
    (run,), _ = grade(checkpoints(tmp_path, later_member), LoggedInstance("g/a"), EARLY_MID_LATE)
    assert hits(run) == {"k": 1, "both": 2, "room:hall": 2}


def test_an_all_in_a_cycle_across_sets_holds_only_by_another_definition(tmp_path: Path) -> None:
    # x needs y and y needs x: neither is hit by the other alone (no step justifies it), but y's own regex does
    cycle = """
  - instances: ["*"]
    checkpoints:
      - {id: y, field: observation, regex: never}
      - {id: x, all: [y]}
  - instances: ["*"]
    checkpoints:
      - {id: x, field: observation, regex: never}
      - {id: y, all: [x]}
"""
    (run,), _ = grade(checkpoints(tmp_path, cycle), LoggedInstance("g/a"), EARLY_MID_LATE)
    assert hits(run) == {"y": None, "x": None}
    (run,), _ = grade(checkpoints(tmp_path, cycle.replace("regex: never}\n      - {id: x", "regex: mid}\n      - {id: x", 1)),
                      LoggedInstance("g/a"), EARLY_MID_LATE)
    assert hits(run) == {"y": 2, "x": 2}


@pytest.mark.parametrize("episode", ["two", -1, [1], 1.5])
def test_a_logged_steps_episode_is_refused_where_validate_refuses_it(episode: Any) -> None:
    # a logged world does not read episodes, but a bad one is refused as in every other world (and by validate)
    with pytest.raises(InputError) as caught:
        grade(CheckpointLibrary(), LoggedInstance("x"), [{"action": "a", "episode": 0},
                                                          {"action": "b", "episode": episode}])
    assert caught.value.problems[0].field == "steps[1].episode"


def test_an_id_that_is_an_all_in_several_sets_waits_for_whichever_holds_first(tmp_path: Path) -> None:
    # x is `all [w]` in one set and `all [q]` in another: hit when w is (2), though q comes later (3); w itself is
    # an `all` of the second set
    library = checkpoints(tmp_path, """
  - instances: ["*"]
    checkpoints:
      - {id: w, field: observation, regex: never}
      - {id: x, all: [w]}
  - instances: ["*"]
    checkpoints:
      - {id: z, field: observation, regex: mid}
      - {id: w, all: [z]}
      - {id: q, field: observation, regex: late}
      - {id: x, all: [q]}
""")
    (run,), _ = grade(library, LoggedInstance("g/a"), EARLY_MID_LATE)
    assert hits(run) == {"w": 2, "x": 2, "z": 2, "q": 3}
