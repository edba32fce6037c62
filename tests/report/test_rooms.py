"""Rooms worlds in the report: gaps in the table, the Grams et al. Figure 2 analogue, replays between rooms.

The results file here is written by hand in the layout of results schema 2 (tables trajectories, steps and
episodes with the rooms columns), so these checks hold whichever world kinds this eebench can grade.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest

from eebench.report import load_results, write_report
from eebench.report.data import decode_block
from eebench.report.replay import rooms_map
from tests.report.conftest import embedded

# two models, two trajectories each, two episodes each; rooms a - b - c in a line, the start a
TRAJECTORIES = [
    # id, model, total/explore/exploit gap of the last episode, coverage, rooms visited per episode
    ("m1/0", "m1", 0.5, 0.25, 0.25, 2 / 3, [["b", "a"], ["b", "c"]]),
    ("m1/1", "m1", 0.0, 0.0, 0.0, 1.0, [["b", "c"], ["b", "c"]]),
    ("m2/0", "m2", 1.0, 1.0, 0.0, 1 / 3, [["a"], ["a"]]),
    ("m2/1", "m2", 0.5, 0.5, 0.0, 2 / 3, [["b"], ["b"]]),
]


@pytest.fixture(scope="module")
def rooms_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("rooms") / "rooms.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR)")
    con.execute("INSERT INTO meta VALUES ('schema_version', '2'), ('metric_version', 'gaps/1')")
    con.execute("""CREATE TABLE trajectories (trajectory_id VARCHAR, instance_id VARCHAR, instance_sha256 VARCHAR,
        agent_name VARCHAR, model VARCHAR, prompt VARCHAR, harness VARCHAR, success BOOLEAN, end_reason VARCHAR,
        n_steps INTEGER, metric_version VARCHAR, explore_error DOUBLE, exploit_error DOUBLE, source_file VARCHAR,
        source_line INTEGER, env VARCHAR, n_episodes INTEGER, max_return DOUBLE, total_gap_last DOUBLE,
        explore_gap_last DOUBLE, exploit_gap_last DOUBLE, coverage DOUBLE)""")
    con.execute("""CREATE TABLE steps (trajectory_id VARCHAR, t INTEGER, action VARCHAR, from_x SMALLINT,
        from_y SMALLINT, to_x SMALLINT, to_y SMALLINT, valid BOOLEAN, case_id TINYINT, stale INTEGER, error TINYINT,
        explore_error TINYINT, exploit_error TINYINT, episode SMALLINT, room VARCHAR)""")
    con.execute("""CREATE TABLE episodes (trajectory_id VARCHAR, episode SMALLINT, n_steps INTEGER,
        agent_return DOUBLE, exploit_return DOUBLE, max_return DOUBLE, total_gap DOUBLE, explore_gap DOUBLE,
        exploit_gap DOUBLE, coverage DOUBLE)""")
    for tid, model, total, explore, exploit, coverage, episodes in TRAJECTORIES:
        n = sum(map(len, episodes))
        con.execute("INSERT INTO trajectories VALUES (?, 'r/line', 'abc', 'agent', ?, 'p', NULL, NULL, 'end_of_log', "
                    "?, 'gaps/1', NULL, NULL, '/nonexistent.jsonl', 1, 'rooms', 2, 4, ?, ?, ?, ?)",
                    [tid, model, n, total, explore, exploit, coverage])
        t = 0
        for e, rooms in enumerate(episodes):
            for room in rooms:
                con.execute("INSERT INTO steps VALUES (?, ?, ?, NULL, NULL, NULL, NULL, true, NULL, NULL, NULL, "
                            "NULL, NULL, ?, ?)", [tid, t, f"{room} door", e, room])
                t += 1
            ret = 4 * (1 - total) if e == 1 else 1.0
            con.execute("INSERT INTO episodes VALUES (?, ?, ?, ?, ?, 4, ?, ?, ?, ?)",
                        [tid, e, len(rooms), ret, ret + 4 * exploit, 1 - ret / 4, explore if e == 1 else 0.5,
                         exploit, coverage if e == 1 else 1 / 3])
    con.close()
    return db


def _sql(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_table_shows_gaps_and_coverage_equal_to_sql(rooms_db: Path, tmp_path: Path) -> None:
    data = embedded(write_report(rooms_db, tmp_path / "r.html").path.read_text(), "eeb-data")
    columns = [m["column"] for m in data["metrics"]]
    assert columns == ["total_gap_last", "explore_gap_last", "exploit_gap_last", "coverage"]   # no success: NULL
    expected = _sql(rooms_db, "SELECT model, count(*), avg(total_gap_last), avg(explore_gap_last), "
                              "avg(exploit_gap_last), avg(coverage) FROM trajectories GROUP BY model ORDER BY model")
    for row, (model, n, *means) in zip(data["summary"], expected, strict=True):
        assert (row["labels"]["model"], row["episodes"]) == (model, n)
        assert [row["est"][c][0] for c in columns] == pytest.approx(means, rel=1e-12)
    assert data["figure1"]["points"][0]["explore"] is None   # no Park errors in rooms worlds: no Figure 1


def test_figure_two_analogue_per_model_and_episode_equals_sql(rooms_db: Path) -> None:
    got = load_results(rooms_db).gaps_by_episode(0)
    expected = _sql(rooms_db, "SELECT t.model, e.episode, count(*), avg(e.agent_return), avg(e.explore_gap), "
                              "avg(e.coverage) FROM episodes e JOIN trajectories t USING (trajectory_id) "
                              "GROUP BY ALL ORDER BY ALL")
    assert [(g["model"], g["episode"], g["n"]) for g in got] == [e[:3] for e in expected]
    for g, e in zip(got, expected, strict=True):
        assert [g["agent_return"].value, g["explore_gap"].value, g["coverage"].value] == pytest.approx(e[3:])


def test_a_rooms_replay_follows_the_rooms_by_episode(rooms_db: Path, tmp_path: Path) -> None:
    page = write_report(rooms_db, tmp_path / "r.html").path.read_text()
    data = embedded(page, "eeb-data")
    blocks = embedded(page, "eeb-replays")
    i = [r[0] for r in data["trajectories"]].index("m1/0")
    doc = decode_block(blocks[i])
    assert doc["env"] == "rooms"
    assert (doc["room"], doc["episode"], doc["valid"]) == (["b", "a", "b", "c"], [0, 0, 1, 1], "1111")
    assert [e["explore_gap"] for e in doc["episodes"]] == [0.5, 0.25]
    assert len(doc["x"]) == 4   # the step count the slider reads


def test_rooms_map_uses_the_layout_or_a_seeded_one() -> None:
    doors = (SimpleNamespace(name="ab", between=("a", "b")), SimpleNamespace(name="bc", between=("b", "c")))
    balls = (SimpleNamespace(name="red", room="c", reward=3),)
    inst: Any = SimpleNamespace(rooms=("a", "b", "c"), start="a", doors=doors, balls=balls,
                                layout={"a": (0, 0), "b": (1, 0), "c": (2, 0)})
    drawn = rooms_map(inst)
    assert drawn["rooms"] == [{"id": "a", "x": 0, "y": 0}, {"id": "b", "x": 1, "y": 0}, {"id": "c", "x": 2, "y": 0}]
    assert drawn["doors"] == [{"name": "ab", "between": ["a", "b"]}, {"name": "bc", "between": ["b", "c"]}]
    assert drawn["balls"] == [{"name": "red", "room": "c", "reward": 3}] and drawn["start"] == "a"
    inst.layout = None
    first, again = rooms_map(inst), rooms_map(inst)
    assert first == again   # seeded: the same picture every time
    assert len({(r["x"], r["y"]) for r in first["rooms"]}) == 3


def test_rooms_in_the_browser(rooms_db: Path, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    out = write_report(rooms_db, tmp_path / "r.html").path
    browser.get_log("browser")   # only this page's messages below
    browser.get(out.as_uri() + "#t=m1/0")
    deadline = time.monotonic() + 10
    while browser.execute_script("return document.querySelectorAll('#path line.seg').length") != 4:
        assert time.monotonic() < deadline, "the replay of m1/0 did not open"
        time.sleep(0.02)
    models = {p.get_attribute("data-model") for p in browser.find_elements(By.CSS_SELECTOR, "#gaps-explore_gap circle.gap-point")}
    assert models == {"m1", "m2"}
    for k in (0, 1, 3):
        browser.execute_script("const s = document.getElementById('slider'); s.value = arguments[0]; "
                               "s.dispatchEvent(new Event('input'));", k)
        assert browser.execute_script("return document.querySelectorAll('#path line.seg').length") == k
    assert "episode 2" in browser.find_element(By.ID, "step-label").text
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-gaps polyline")
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_plot_rooms_gaps(cli, rooms_db: Path, tmp_path: Path, graded) -> None:
    cli("plot", "rooms-gaps", "--db", rooms_db, "--out", tmp_path / "g.svg")
    assert (tmp_path / "g.svg").read_text().count("<svg") == 1
    r = cli("plot", "rooms-gaps", "--db", graded.db, "--out", tmp_path / "none.png", code=2)
    assert r.stderr == (f"error: {graded.db}: has no episodes of rooms worlds to draw (table episodes is missing or "
                        "holds none of the selected trajectories)\n")


# -- rooms graded by eebench itself (the world kind `rooms` and the gaps family) ---------------------------

@pytest.fixture(scope="module")
def graded_rooms(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """grams2025-rooms (9 instances), three scripted models x 2 seeds, 3 episodes each, graded."""
    rooms = pytest.importorskip("eebench.world.rooms", reason="this eebench has no rooms worlds")
    import json
    import random

    from eebench.evaluator import Bench, grade_files
    from eebench.instances import InstanceLibrary, write_instances
    from eebench.suites import resolve_spec

    root = tmp_path_factory.mktemp("rooms-graded")
    suite = resolve_spec("grams2025-rooms", None)
    write_instances(suite.instances(), root / "bench", suite.source())
    library = InstanceLibrary(root / "bench")
    with (root / "runs.jsonl").open("w") as handle:
        for model, greed in (("rooms-a", 0.9), ("rooms-b", 0.5), ("rooms-c", 0.1)):
            for seed in range(2):
                for instance_id in library.ids():
                    rng = random.Random(f"{model}/{seed}/{instance_id}")
                    env = rooms.RoomsEnv(library.get(instance_id).instance)
                    steps = []
                    for episode in range(3):
                        obs, _ = env.reset()
                        done = False
                        while not done:
                            take = obs["balls"] and rng.random() < greed
                            action = f"{rng.choice(obs['balls'])} ball" if take else f"{rng.choice(obs['doors'])} door"
                            obs, _, terminated, truncated, _ = env.step(action)
                            steps.append({"action": action, "episode": episode})
                            done = terminated or truncated
                    handle.write(json.dumps({"eebench": "trajectory/1", "id": f"{model}/{seed}/{instance_id}",
                                             "instance": instance_id, "env": "rooms", "steps": steps,
                                             "agent": {"name": "scripted", "model": model}}) + "\n")
    grade_files([root / "runs.jsonl"], Bench(root / "bench"), root / "results.duckdb")
    return root / "bench", root / "results.duckdb"


def test_graded_rooms_equal_the_view_gaps_summary(graded_rooms: tuple[Path, Path], tmp_path: Path) -> None:
    bench, db = graded_rooms
    page = write_report(db, tmp_path / "r.html", bench=bench).path.read_text()
    data = embedded(page, "eeb-data")
    view = _sql(db, "SELECT model, trajectories, total_gap_last, explore_gap_last, exploit_gap_last, coverage, "
                    "redundancy FROM gaps_summary")
    assert [r["labels"]["model"] for r in data["summary"]] == [v[0] for v in view]
    for row, (_, n, total, explore, exploit, coverage, redundancy) in zip(data["summary"], view, strict=True):
        assert row["episodes"] == n
        got = [row["est"][c][0] for c in ("total_gap_last", "explore_gap_last", "exploit_gap_last", "coverage",
                                          "redundancy")]
        assert got == pytest.approx([total, explore, exploit, coverage, redundancy], rel=1e-12)
    # every replay walks the rooms of the steps table, and carries the episodes table's gaps
    blocks = embedded(page, "eeb-replays")
    rooms_of = dict(_sql(db, "SELECT trajectory_id, list(room ORDER BY t) FROM steps GROUP BY ALL"))
    gaps_of = dict(_sql(db, "SELECT trajectory_id, list(explore_gap ORDER BY episode) FROM episodes GROUP BY ALL"))
    for row, block in zip(data["trajectories"], blocks, strict=True):
        doc = decode_block(block)
        assert doc["room"] == rooms_of[row[0]]
        assert [e["explore_gap"] for e in doc["episodes"]] == pytest.approx(gaps_of[row[0]])
    assert all(data["instances"][i]["env"] == "rooms" for i in data["instances"])


def test_graded_rooms_in_the_browser(graded_rooms: tuple[Path, Path], browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    bench, db = graded_rooms
    out = write_report(db, tmp_path / "r.html", bench=bench).path
    tid, n = _sql(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY n_steps DESC LIMIT 1")[0]
    browser.get_log("browser")
    browser.get(out.as_uri() + "#t=" + tid)
    deadline = time.monotonic() + 10
    while browser.execute_script("return document.querySelectorAll('#path line.seg').length") != n:
        assert time.monotonic() < deadline, f"the replay of {tid} did not open"
        time.sleep(0.02)
    rooms = len(_sql(db, f"SELECT DISTINCT r.room FROM steps r WHERE trajectory_id = '{tid}'"))
    assert len(browser.find_elements(By.CSS_SELECTOR, "#rooms g.room-group")) >= rooms
    cursor = []
    for k in (1, 2, n // 2):
        browser.execute_script("const s = document.getElementById('slider'); s.value = arguments[0]; "
                               "s.dispatchEvent(new Event('input'));", k)
        assert browser.execute_script("return document.querySelectorAll('#path line.seg').length") == k
        cursor.append(float(browser.find_element(By.CSS_SELECTOR, "#chart-ecc .cursor").get_attribute("x1")))
    # the ECC curve, per step: its cursor moves with the step, within an episode too
    assert browser.find_elements(By.CSS_SELECTOR, "#chart-ecc polyline") and cursor == sorted(set(cursor))
    assert [e for e in browser.get_log("browser") if e["level"] in ("SEVERE", "WARNING")] == []


def test_plot_replay_of_a_rooms_world_draws_its_moves_as_one_collection(graded_rooms: tuple[Path, Path]) -> None:
    """The moves up to step k are one collection of k segments: a Line2D per step grew with the trajectory."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    from eebench.report import load_results
    from eebench.report.figures import KINDS

    bench, db = graded_rooms
    tid, n = _sql(db, "SELECT trajectory_id, n_steps FROM trajectories ORDER BY n_steps DESC LIMIT 1")[0]
    for step in (1, n):
        figure = KINDS["replay"](load_results(db, f"trajectory_id = '{tid}'"),
                                 {"bench": bench, "step": step, "seed": 0, "model": None})
        assert [len(c.get_segments()) for c in figure.axes[0].collections if isinstance(c, LineCollection)] == [step]
        plt.close(figure)


def test_the_text_of_a_step_is_of_that_graded_step_when_a_logged_episode_has_ignored_actions(
        tmp_path: Path) -> None:
    """A log whose every step names its episode is graded per episode: actions after the world ended an episode
    are not graded (not in the steps table). The text shown at step k is still the text of graded step k, not of
    the k-th line of the log (every later step showed the text of the step before, a step per ignored action)."""
    rooms = pytest.importorskip("eebench.world.rooms", reason="this eebench has no rooms worlds")
    import json
    import random

    from eebench.evaluator import Bench, grade_files
    from eebench.instances import InstanceLibrary, write_instances
    from eebench.suites import resolve_spec

    suite = resolve_spec("grams2025-rooms", None)
    instance = next(iter(suite.instances()))
    write_instances([instance], tmp_path / "bench", suite.source())
    loaded = InstanceLibrary(tmp_path / "bench").get(instance.id)
    env, rng, steps = rooms.RoomsEnv(loaded.instance), random.Random(0), []
    for episode in range(2):
        obs, _ = env.reset()
        done = False
        while not done:
            action = f"{rng.choice(obs['doors'])} door"
            obs, _, terminated, truncated, _ = env.step(action)
            steps.append({"action": action, "episode": episode, "observation": f"graded {action}"})
            done = terminated or truncated
        if episode == 0:   # the log goes on after the world ended episode 0: ignored
            steps += [{"action": "wait", "episode": 0, "observation": "ignored wait"} for _ in range(3)]
    (tmp_path / "run.jsonl").write_text(json.dumps({"eebench": "trajectory/1", "id": "t", "instance": instance.id,
                                                    "env": "rooms", "steps": steps}) + "\n")
    db = tmp_path / "results.duckdb"
    grade_files([tmp_path / "run.jsonl"], Bench(tmp_path / "bench"), db)
    assert _sql(db, "SELECT ignored_actions FROM trajectories") == [(3,)]
    page = write_report(db, tmp_path / "r.html", bench=tmp_path / "bench").path.read_text()
    doc = decode_block(embedded(page, "eeb-replays")[0])
    assert doc["text"]["observation"] == [f"graded {a}" for a in doc["action"]]


def test_plot_replay_of_a_rooms_world_draws_the_coverage_of_each_episode_as_the_page_does(
        graded_rooms: tuple[Path, Path]) -> None:
    """The README: a rooms replay shows returns, gaps and coverage per episode, `plot replay` the same. The
    image had returns and gaps, no coverage."""
    import matplotlib.pyplot as plt

    from eebench.report.figures import KINDS

    bench, db = graded_rooms
    tid = _sql(db, "SELECT trajectory_id FROM trajectories ORDER BY n_steps DESC LIMIT 1")[0][0]
    coverage = [c for (c,) in _sql(db, f"SELECT coverage FROM episodes WHERE trajectory_id = '{tid}' ORDER BY episode")]
    figure = KINDS["replay"](load_results(db, f"trajectory_id = '{tid}'"),
                             {"bench": bench, "step": None, "seed": 0, "model": None})
    (ax,) = [ax for ax in figure.axes if ax.get_ylabel().startswith("coverage")]
    (line,) = ax.get_lines()[:1]
    assert list(line.get_ydata()) == pytest.approx(coverage) and list(line.get_xdata()) == list(range(1, 4))
    plt.close(figure)


def test_a_log_whose_episodes_are_no_longer_integers_keeps_its_first_steps_as_the_graded_ones() -> None:
    """A log edited after grading (an episode a list) raised a TypeError that ended the whole report."""
    import numpy as np

    from eebench.report.replay import _graded_log_steps

    steps = [{"action": "a", "episode": 0}, {"action": "b", "episode": [1]}]
    assert _graded_log_steps(steps, np.array([0, 1])) == steps
    assert _graded_log_steps([{"episode": 0}, {"episode": 0}, {"episode": 1}], np.array([0, 1])) == [
        {"episode": 0}, {"episode": 1}]
