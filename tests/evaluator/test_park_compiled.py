"""The compiled replay against the plain-Python reference: every metric column equal on random worlds and runs."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.evaluator import Bench, grade, grade_files, park, store
from eebench.evaluator.park import (ParkTables, action_codes, replay, replay_compiled, replay_compiled_many,
                                   step_columns)
from eebench.generator import generate_instance
from eebench.generator.params import DagParams, MapParams, Preset
from eebench.instances import write_instances
from eebench.suites import resolve_spec
from tests.conftest import make_instance, write_jsonl

WORDS = st.sampled_from(["up", "down", "left", "right", "Up", " LEFT", "jump", "", None])
MOVES = st.sampled_from(["up", "down", "left", "right"])


def _assert_same(tables: ParkTables, actions: list[str | None]) -> None:
    ours, reference = replay_compiled(tables, actions), replay(tables, actions)
    width = tables.world.width
    assert ours[5:] == reference[5:]  # success, end reason, ignored actions, nodes achieved, cells observed
    assert ours.start == reference.start
    assert ours.changes.tolist() == reference.changes.tolist()
    compiled, plain = step_columns([ours], [width]), step_columns([reference], [width])
    assert compiled.keys() == plain.keys()
    for name, values in plain.items():
        assert compiled[name].dtype == values.dtype, name
        assert compiled[name].tolist() == values.tolist(), name


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n_nodes=st.integers(1, 9), width=st.integers(2, 13), height=st.integers(2, 13),
       corridor=st.integers(1, 3), options=st.sampled_from([((1, 1.0),), ((1, 0.5), (2, 0.5))]),
       seed=st.integers(0, 10_000), actions=st.lists(WORDS, max_size=150), walk=st.lists(MOVES, max_size=400))
def test_compiled_replay_equals_the_reference(n_nodes, width, height, corridor, options, seed, actions,
                                              walk) -> None:
    # maps up to 13 x 13 cells: closer sets of one to three 64-bit words
    if width * height < n_nodes + 1:
        return
    preset = Preset("p", DagParams(n_nodes, option_count_probs=options,
                                   dependency_count_probs=((1, 0.5), (2, 0.5))),
                    MapParams((1, corridor), size=(width, height)))
    tables = ParkTables(generate_instance(preset, seed, "prop/compiled"))
    for run in (actions, walk, walk + actions, actions + walk):
        _assert_same(tables, run)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(n_nodes=st.integers(1, 20), width=st.integers(2, 13), height=st.integers(2, 13),
       corridor=st.integers(1, 3), options=st.sampled_from([((1, 1.0),), ((1, 0.5), (2, 0.5))]),
       seed=st.integers(0, 10_000))
def test_the_optimal_steps_of_the_compiled_distances_are_planning_s_own(monkeypatch, n_nodes, width, height,
                                                                        corridor, options, seed) -> None:
    # the tables of a large instance plan over compiled BFS rows (COMPILED_PLAN_FROM_VISITS): here every instance
    # is one; up to 14 nodes the search is exact, above it greedy, and both read the rows
    if width * height < n_nodes + 1:
        return
    preset = Preset("p", DagParams(n_nodes, option_count_probs=options,
                                   dependency_count_probs=((1, 0.5), (2, 0.5))),
                    MapParams((1, corridor), size=(width, height)))
    instance = generate_instance(preset, seed, "prop/plan")
    monkeypatch.setattr(park, "COMPILED_PLAN_FROM_VISITS", 1 << 62)   # (set by each example: it lasts across them)
    plain = ParkTables(instance).optimal_steps
    monkeypatch.setattr(park, "COMPILED_PLAN_FROM_VISITS", 0)
    compiled = ParkTables(instance)
    assert compiled._node_distances() is not None
    assert compiled.optimal_steps == plain and type(compiled.optimal_steps) is int


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), corridor=st.integers(1, 3), walks=st.lists(st.lists(MOVES, max_size=600),
                                                                               min_size=1, max_size=4))
def test_compiled_replay_on_a_map_whose_rows_are_made_as_used(seed, corridor, walks) -> None:
    # 34 x 34 = 1,156 cells, above DENSE_CELLS: closer rows are made batch by batch for the moves made, across runs
    preset = Preset("p", DagParams(6, option_count_probs=((1, 0.5), (2, 0.5)),
                                   dependency_count_probs=((1, 0.5), (2, 0.5))),
                    MapParams((1, corridor), size=(34, 34)))
    tables = ParkTables(generate_instance(preset, seed, "prop/large"))
    assert tables.compiled().n > tables.compiled().DENSE_CELLS
    for walk in walks:
        _assert_same(tables, walk)
    assert tables.compiled().rows - 1 <= tables.compiled().valid_slots


@settings(max_examples=30, deadline=None)
@given(walk=st.lists(st.sampled_from(["up", "down", "left", "right", "x"]), max_size=300))
def test_compiled_replay_with_alternatives_and_a_node_on_the_start(walk) -> None:
    # a node on the start cell (achieved by coming back), OR-prerequisites, obstacles, a goal needing two nodes
    instance = make_instance(["......", ".#.##.", "......", "##.#.."], [2, 0],
                             [("S", [2, 0], []), ("A", [0, 2], [["S"]]), ("B", [5, 3], []),
                              ("C", [4, 2], [["A"], ["B"]]), ("G", [2, 3], [["A", "C"]])], "G", budget=250)
    _assert_same(ParkTables(instance), walk)


def test_closer_rows_are_made_only_for_the_moves_made() -> None:
    # an open 40 x 40 map (above DENSE_CELLS): ten steps right prepare ten slots, not 40^2 x 4
    instance = make_instance(["." * 40] * 40, [0, 0], [("G", [39, 39], [])], "G", budget=100)
    tables = ParkTables(instance)
    flat = tables.compiled()
    assert flat.n > flat.DENSE_CELLS
    flat.prepare(action_codes(["right"] * 10 + ["jump", "up"], 100), np.array([0, 12]), np.array([0]))
    assert flat.rows - 1 == 10  # (row 0 is the empty row; "up" at the top edge and "jump" are no moves)
    assert int(flat.slot_row[5 * 3 + 3]) > 0 and int(flat.slot_row[5 * 3 + 1]) == 0
    assert replay_compiled(tables, ["right"] * 10).cells_to.tolist() == list(range(1, 11))


def test_small_maps_get_every_row_at_once() -> None:
    instance = make_instance(["...", ".#.", "..."], [0, 0], [("G", [2, 2], [])], "G", budget=10)
    flat = ParkTables(instance).compiled()
    assert flat.rows - 1 == flat.valid_slots == 16  # 8 free cells of a ring, two moves each


def test_many_runs_in_one_call_equal_one_at_a_time() -> None:
    instance = make_instance(["....", ".#..", "...."], [0, 0], [("A", [3, 0], []), ("G", [0, 2], [["A"]])], "G",
                             budget=30)
    tables = ParkTables(instance)
    runs = [["right"] * 3 + ["down"] * 2 + ["left"] * 3, [], ["up", "jump"], ["down", "up"] * 20]
    together = replay_compiled_many(tables, runs)
    for run, replayed in zip(runs, together):
        alone = replay(tables, run)
        assert replayed[5:] == alone[5:] and replayed.changes.tolist() == alone.changes.tolist()
        assert replayed.cells_to.tolist() == alone.cells_to.tolist()
        assert replayed.stale.tolist() == alone.stale.tolist() and replayed.flags.tolist() == alone.flags.tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seeds=st.lists(st.integers(0, 10_000), min_size=1, max_size=3, unique=True),
       runs=st.lists(st.tuples(st.integers(0, 2), st.lists(st.one_of(MOVES, WORDS), max_size=250)), min_size=1,
                     max_size=12))
def test_a_chunk_across_instances_has_the_same_columns_compiled_or_not(seeds, runs) -> None:
    # one chunk of trajectories in up to three instances, in turns (the compiled replay runs an instance at a time,
    # at the trajectories' places), some reaching the goal early (their unused places left out of the columns)
    preset = Preset("p", DagParams(2, option_count_probs=((1, 1.0),), dependency_count_probs=((1, 1.0),)),
                    MapParams((1, 2), size=(5, 5)))
    tables = [ParkTables(generate_instance(preset, seed, f"prop/{k}")) for k, seed in enumerate(seeds)]
    columns = []
    for graded_before in (0, park.COMPILED_FROM_STEPS):   # the plain reference, then the compiled replay
        family = park.ParkFamily()
        family.steps_graded = graded_before
        columns.append(family.columns([park.ParkReplay(tables[k % len(tables)], actions) for k, actions in runs]))
    plain, compiled = columns
    assert compiled.trajectories == plain.trajectories
    assert compiled.steps.keys() == plain.steps.keys()
    for name, values in plain.steps.items():
        ours = compiled.steps[name]
        assert (ours.values() if name == "action" else ours).tolist() == \
            (values.values() if name == "action" else values).tolist(), name


def test_codes_follow_parse_action() -> None:
    codes = action_codes(["up", "Down ", "LEFT", "right", "jump", None, ""], 10)
    assert codes.tolist() == [0, 1, 2, 3, 4, 4, 4] and codes.dtype == np.int8
    assert action_codes(["up"] * 5, 3).tolist() == [0, 0, 0]


def test_a_grade_is_the_same_byte_for_byte_compiled_or_not(tmp_path, monkeypatch) -> None:
    # the same runs graded with the plain replays and with the compiled ones (threshold 0; Park's and coverage's, with
    # the shipped checkpoints): equal tables

    suite = resolve_spec("park2026-main")
    instances = list(suite.instances())[:6]
    write_instances(instances, tmp_path / "bench", suite.source())
    words = ["up", "down", "left", "right", "Left ", "wait", None]
    runs = write_jsonl(tmp_path / "runs.jsonl", [
        {"eebench": "trajectory/1", "id": f"r{k}", "instance": instances[k % 6].id,
         "steps": [{"action": words[(k * 7 + i * i) % 7]} for i in range(k * 3)]} for k in range(40)])
    # and the repeated texts (ids, actions, checkpoint ids) written as codes into their words or as strings
    tables = {}
    for threshold, rows_per_word in ((10 ** 12, 10 ** 12), (0, 0), (0, 10 ** 12)):
        monkeypatch.setattr(park, "COMPILED_FROM_STEPS", threshold)
        monkeypatch.setattr(store, "CODED_ROWS_PER_WORD", rows_per_word)
        db = tmp_path / f"{threshold}-{rows_per_word}.duckdb"
        grade_files([runs], Bench(tmp_path / "bench"), db)
        with duckdb.connect(str(db), read_only=True) as con:
            tables[threshold, rows_per_word] = [
                con.execute("SELECT * EXCLUDE (graded_at) FROM trajectories ORDER BY ALL").fetchall(),
                con.execute("SELECT * FROM steps ORDER BY ALL").fetchall(),
                con.execute("SELECT * FROM checkpoints ORDER BY ALL").fetchall()]
    plain, *compiled = tables.values()
    assert all(other == plain for other in compiled) and len(plain[1]) > 1000 and len(plain[2]) > 1000


@settings(max_examples=30, deadline=None)
@given(sizes=st.lists(st.integers(2, 400), min_size=1, max_size=60), budget=st.integers(50, 1000))
def test_chunks_are_cut_by_bytes_and_keep_every_record_in_order(tmp_path_factory, sizes, budget) -> None:
    # memory follows steps, not records: a chunk holds at most CHUNK_BYTES of JSON, or one longer record alone
    path = tmp_path_factory.mktemp("chunks") / "runs.jsonl"
    path.write_bytes(b"".join(b"x" * (size - 1) + b"\n" for size in sizes))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grade, "CHUNK_BYTES", budget)
        chunks = list(grade._chunks([path]))
    assert [len(r.value) for chunk in chunks for r in chunk] == sizes
    for chunk in chunks:
        assert len(chunk) == 1 or sum(len(r.value) for r in chunk) <= budget
        assert len(chunk) <= grade.CHUNK_RECORDS
    for before, after in zip(chunks, chunks[1:]):  # cut only when the next record would not fit
        assert sum(len(r.value) for r in before) + len(after[0].value) > budget


def test_the_kernel_cache_goes_where_it_can_be_written(tmp_path) -> None:
    from eebench.evaluator.park_compiled import cache_folder

    writable, read_only = tmp_path / "pkg", tmp_path / "missing"  # (os.access is False for a missing folder)
    writable.mkdir()
    assert cache_folder(writable, {}) is None                     # next to the module: numba's default
    assert cache_folder(read_only, {"NUMBA_CACHE_DIR": "x"}) is None  # the user's choice stands
    chosen = cache_folder(read_only, {"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert chosen == str(tmp_path / "cache" / "eebench" / "numba") and (tmp_path / "cache" / "eebench").is_dir()
