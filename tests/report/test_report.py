"""`eebench report` and `eebench plot`: the numbers equal the SQL views, replays equal the steps, bad input, files."""

from __future__ import annotations

import os
import re
import shutil
import time
from pathlib import Path

import duckdb
import numpy as np
import pytest

from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files
from eebench.instances import write_instances
from eebench.report import load_results, write_report
from eebench.report.data import decode_block
from eebench.report.figures import draw
from eebench.report.replay import ACHIEVED, DISCOVERED, node_events
from eebench.suites import resolve_spec
from eebench.world.grid_dag import GridDagWorld
from tests.conftest import make_instance, write_jsonl
from tests.report.conftest import Run, embedded


def _sql(db: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture(scope="module")
def page(graded: Run, tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("page") / "report.html"
    write_report(graded.db, out, bench=graded.bench)
    return out.read_text("utf-8")


def test_the_table_equals_the_view_agent_summary(graded: Run, page: str) -> None:
    data = embedded(page, "eeb-data")
    view = _sql(graded.db, "SELECT agent_name, model, prompt, harness, metric_version, episodes, success_rate, "
                           "mean_explore_error, mean_exploit_error, mean_steps_success FROM agent_summary")
    assert len(data["summary"]) == len(view) == 11   # 5 models x 2 prompts, and random
    for row, (agent, model, prompt, harness, version, episodes, success, explore, exploit, steps) in zip(
            data["summary"], view, strict=True):
        assert row["labels"] == {"agent_name": agent, "model": model, "prompt": prompt, "harness": harness,
                                 "metric_version": version}
        assert row["episodes"] == episodes
        for column, expected in (("success", success), ("explore_error", explore), ("exploit_error", exploit)):
            value, low, high, _ = row["est"][column]
            assert value == pytest.approx(expected, rel=1e-12, abs=1e-15)
            assert low <= value <= high
        assert row["steps_success"] == (pytest.approx(steps, rel=1e-12) if steps is not None else None)


def test_figure_one_has_one_point_per_model_equal_to_sql(graded: Run, page: str) -> None:
    data = embedded(page, "eeb-data")
    expected = _sql(graded.db, "SELECT coalesce(model, agent_name) AS m, count(*), avg(success::INTEGER), "
                               "avg(explore_error), avg(exploit_error) FROM trajectories GROUP BY m ORDER BY m")
    points = data["figure1"]["points"]
    assert [p["model"] for p in points] == [m for m, *_ in expected]
    for p, (_, n, success, explore, exploit) in zip(points, expected, strict=True):
        assert p["episodes"] == n
        assert p["success"][0] == pytest.approx(success, rel=1e-12, abs=1e-15)
        assert p["explore"][0] == pytest.approx(explore, rel=1e-12, abs=1e-15)
        assert p["exploit"][0] == pytest.approx(exploit, rel=1e-12, abs=1e-15)


def test_figure_one_draws_each_model_with_a_point_in_a_colour_of_its_own(with_rooms_models: Path,
                                                                          tmp_path: Path) -> None:
    """Colours went by a model's place among all models, those without a point (rooms) included: with 9 models,
    two of the 6 drawn had the same colour."""
    from eebench.report.figures import KINDS

    figure = KINDS["figure1"](load_results(with_rooms_models), {"seed": 0})
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    colours = {label: handle.lines[0].get_color() for axis in figure.axes[:2]
               for handle, label in zip(*axis.get_legend_handles_labels(), strict=True)}
    assert labels == [p.model for p in load_results(with_rooms_models).figure_one(0).drawn()] == list(colours)
    assert len(labels) == 6 and not any(label.startswith("model-b") and label != "model-b" for label in labels)
    assert len(set(colours.values())) == len(colours)


def _renamed(graded: Run, tmp_path: Path, sql: str) -> Path:
    db = tmp_path / "renamed.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute(sql)
    return db


LONG = "anthropic/claude-3-5-sonnet-20241022@temperature=0.7,top_p=0.95,max_tokens=4096-"


def test_figure_one_with_long_and_control_character_names_is_a_valid_svg_with_distinct_short_labels(
        graded: Run, tmp_path: Path) -> None:
    """A control character made the SVG invalid XML (matplotlib copies labels into comments); 110-character names
    collapsed the axes."""
    import xml.etree.ElementTree as ET

    from eebench.report.figures import KINDS, LABEL_CHARS

    db = _renamed(graded, tmp_path, f"""UPDATE trajectories SET model = CASE model WHEN 'model-a' THEN 'bell' || chr(7)
        WHEN 'model-b' THEN '{LONG}v0' WHEN 'model-c' THEN '{LONG}v1' WHEN 'model-d' THEN '{LONG}' || chr(27) ELSE model
        END""")
    figure = KINDS["figure1"](load_results(db), {"seed": 0})
    (legend,) = figure.legends
    names = [text.get_text() for text in legend.get_texts()]
    assert "bell\\x07" in names and all(len(n) <= LABEL_CHARS for n in names) and len(set(names)) == len(names)
    assert {n[-3:] for n in names if n.startswith("anthropic")} == {"-v0", "-v1", "x1b"}
    draw("figure1", db, tmp_path / "f.svg")
    ET.parse(tmp_path / "f.svg")   # (raised: not well-formed)


def test_figure_one_of_many_models_names_each_in_a_style_of_its_own(graded: Run, tmp_path: Path) -> None:
    """25 models: the legend was cut at the top and bottom, and the 8 colours came round again."""
    from eebench.report.figures import KINDS

    db = _renamed(graded, tmp_path, "UPDATE trajectories SET model = 'model-' || "
                                    "lpad((hash(trajectory_id) % 25)::VARCHAR, 2, '0') WHERE model IS NOT NULL")
    drawn = [p.model for p in load_results(db).figure_one(0).drawn()]
    figure = KINDS["figure1"](load_results(db), {"seed": 0})
    (legend,) = figure.legends
    assert [text.get_text() for text in legend.get_texts()] == drawn and len(drawn) > 20
    assert legend._ncols == 2
    styles = {(line.get_color(), line.get_marker()) for ax in figure.axes[:2]
              for handle in ax.get_legend_handles_labels()[0] for line in handle.lines[:1]}
    assert len(styles) == len(drawn)


def test_figure_one_legend_names_a_model_drawn_in_one_panel_only(graded: Run, tmp_path: Path) -> None:
    """The legend was the exploration panel's: a model with an exploitation error alone had a point, no entry."""
    from eebench.report.figures import KINDS

    db = tmp_path / "one-panel.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trajectories SET explore_error = NULL WHERE model = 'model-a'")
    figure = KINDS["figure1"](load_results(db), {"seed": 0})
    (legend,) = figure.legends
    labels = [text.get_text() for text in legend.get_texts()]
    assert "model-a" in labels and labels == [p.model for p in load_results(db).figure_one(0).drawn()]
    assert "model-a" not in figure.axes[0].get_legend_handles_labels()[1]


def test_an_error_below_the_axis_floor_is_drawn_where_it_is_fitted(graded: Run, tmp_path: Path) -> None:
    """A mean error of 0.0005 was drawn hollow at 10^-3, said to be left out of the line, and fitted at 0.0005."""
    from eebench.report.figures import KINDS

    db = tmp_path / "small.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trajectories SET explore_error = 0.0005 WHERE model = 'model-a'")
    results = load_results(db)
    fig1 = results.figure_one(0)
    (small,) = [p for p in fig1.points if p.model == "model-a"]
    assert small.explore.value == pytest.approx(0.0005) and fig1.floor == 1e-4   # an error above 0: in the fit
    figure = KINDS["figure1"](results, {"seed": 0})
    handles, labels = figure.axes[0].get_legend_handles_labels()
    (point,) = [h.lines[0] for h, label in zip(handles, labels, strict=True) if label == "model-a"]
    assert point.get_xdata()[0] == pytest.approx(0.0005) and point.get_markerfacecolor() != "white"
    assert figure.axes[0].get_xlim()[0] < 0.0005
    data = embedded(write_report(db, tmp_path / "r.html").path.read_text(), "eeb-data")
    assert data["figure1"]["floor"] == 1e-4


def test_prompts_draws_a_panel_per_metric_the_model_has(with_rooms_models: Path) -> None:
    """A grid model in a file that also holds rooms rows got a panel for every gap, each empty."""
    from eebench.report.figures import KINDS

    results = load_results(with_rooms_models)
    assert any(m.column == "total_gap_last" for m in results.metrics)
    figure = KINDS["prompts"](results, {"seed": 0, "model": "model-d"})
    titles = [axis.get_title() for axis in figure.axes]
    assert titles and all(axis.patches for axis in figure.axes), titles
    assert not any("gap" in title for title in titles)
    rooms = KINDS["prompts"](results, {"seed": 0, "model": "model-b0"})
    assert [axis.get_title() for axis in rooms.axes] == [m.label for m in results.metrics
                                                         if m.column.endswith("_gap_last")]


def test_figure_one_line_is_least_squares_over_models_with_errors(graded: Run) -> None:
    results = load_results(graded.db)
    fig = results.figure_one(0)
    xs, ys = zip(*[(np.log10(p.explore.value), p.success.value) for p in fig.points if p.explore.value > 0],
                 strict=True)
    slope, intercept = np.polyfit(xs, ys, 1)
    assert fig.explore_fit is not None and fig.explore_fit.n == len(xs)
    assert (fig.explore_fit.slope, fig.explore_fit.intercept) == pytest.approx((slope, intercept))


def test_prompt_bars_equal_sql(graded: Run, page: str) -> None:
    data = embedded(page, "eeb-data")
    expected = _sql(graded.db, "SELECT coalesce(model, agent_name) AS m, coalesce(prompt, '(none)') AS p, count(*), "
                               "avg(success::INTEGER), avg(exploit_error) FROM trajectories GROUP BY ALL ORDER BY m, p")
    got = [(r["model"], r["prompt"], r["episodes"], r["est"]["success"][0], r["est"]["exploit_error"][0])
           for r in data["prompts"]]
    assert [g[:3] for g in got] == [e[:3] for e in expected]
    assert [g[3:] for g in got] == [pytest.approx(e[3:], rel=1e-12, abs=1e-15) for e in expected]
    assert data["prompt_model"] == "model-a"   # five models with two prompts each: the first by name


def test_every_replay_equals_the_steps_table(graded: Run, page: str) -> None:
    data = embedded(page, "eeb-data")
    blocks = embedded(page, "eeb-replays")
    assert len(blocks) == len(data["trajectories"])
    steps = _sql(graded.db, "SELECT trajectory_id, list(to_x ORDER BY t), list(to_y ORDER BY t), "
                            "string_agg(case_id::VARCHAR, '' ORDER BY t), string_agg(error::VARCHAR, '' ORDER BY t), "
                            "list(stale ORDER BY t), string_agg(explore_error::VARCHAR, '' ORDER BY t) "
                            "FROM steps GROUP BY ALL")
    by_id = {row[0]: row[1:] for row in steps}
    for row, block in zip(data["trajectories"], blocks, strict=True):
        doc = decode_block(block)
        assert doc["id"] == row[0]
        xs, ys, cases, errors, stale, explore = by_id[row[0]]
        assert (doc["x"], doc["y"], doc["case"], doc["err"], doc["stale"], doc["xe"]) == (
            xs, ys, cases, errors, stale, explore)
        assert len(doc["x"]) == row[6]   # the list's step count


def test_replays_carry_the_logs_text(graded: Run, page: str) -> None:
    data = embedded(page, "eeb-data")
    blocks = embedded(page, "eeb-replays")
    docs = {r[0]: decode_block(b) for r, b in zip(data["trajectories"], blocks, strict=True)}
    noisy = docs["model-c/default/seed-0/park2026-main/low-small/seed-0"]
    assert noisy["text"]["raw"][0].startswith("I will move ") and noisy["text"]["observation"][0] == "t=1"
    assert len(noisy["text"]["reasoning"]) == len(noisy["x"])
    assert "text" not in docs["random/seed-0/park2026-main/low-small/seed-0"]   # played without text


def test_a_log_graded_by_a_relative_path_is_read_back_from_the_results_folder(graded: Run, tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """`grade runs.jsonl --db r.duckdb` in a folder, `report --db folder/r.duckdb` from elsewhere: the steps lost
    their text (source_file is stored as given)."""
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(graded.runs / "noisy.jsonl", folder / "noisy.jsonl")
    monkeypatch.chdir(folder)
    grade_files([Path("noisy.jsonl")], Bench(graded.bench), Path("r.duckdb"))
    monkeypatch.chdir(tmp_path)
    page = write_report(folder / "r.duckdb", tmp_path / "r.html").path.read_text()
    data = embedded(page, "eeb-data")
    assert not any("could not be read back" in note for note in data["notes"])
    texts = [decode_block(b).get("text") for b in embedded(page, "eeb-replays")]
    assert texts and all(text and text["raw"] for text in texts)



def test_a_log_graded_from_standard_input_is_not_read_back_from_the_reports(cli, graded: Run, tmp_path: Path) -> None:
    """`grade -` records source_file '-': report and plot replay read their own standard input for its text
    (in a terminal they waited for it, forever; piped, they showed whatever came)."""
    runs = "".join((graded.runs / "noisy.jsonl").read_text().splitlines(keepends=True)[:2])
    db = tmp_path / "stdin.duckdb"
    cli("grade", "-", "--bench", graded.bench, "--db", db, input=runs)
    cli("report", "--db", db, "--out", tmp_path / "r.html", input=runs)
    page = (tmp_path / "r.html").read_text()
    assert not any("text" in decode_block(b) for b in embedded(page, "eeb-replays"))
    assert embedded(page, "eeb-data")["notes"][-1] == (
        "1 trajectory file(s) could not be read back: their steps show no text")
    # nor from a pipe (`grade /dev/stdin` piped, `grade <(...)`, a named pipe): a writer, or none ever, not the log
    import contextlib
    import os
    import threading
    fifo = tmp_path / "runs.fifo"
    os.mkfifo(fifo)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trajectories SET source_file = ?", [str(fifo)])
    def write() -> None:
        with contextlib.suppress(BrokenPipeError):
            fifo.write_text(runs)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    cli("report", "--db", db, "--out", tmp_path / "r.html")
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))   # (lets a writer that no report read go)
    writer.join(10)
    page = (tmp_path / "r.html").read_text()
    assert not any("text" in decode_block(b) for b in embedded(page, "eeb-replays"))

def test_node_events_worked_by_hand() -> None:
    # x: 0 1 2 3 -- B needs A; the agent starts at 3, visits B (too early), A, then B again
    world = GridDagWorld(make_instance(["...."], [3, 0], [("A", [0, 0], []), ("B", [1, 0], [["A"]])], "B"))
    xs = np.array([2, 1, 0, 1])
    ys = np.zeros(4, dtype=int)
    events = node_events(world, xs, ys, np.ones(4, dtype=bool))
    assert events == [[1, 1, DISCOVERED], [2, 0, DISCOVERED], [2, 0, ACHIEVED], [3, 1, ACHIEVED]]
    # an inadmissible move stays in place: it discovers nothing
    assert node_events(world, np.array([3]), np.zeros(1, dtype=int), np.zeros(1, dtype=bool)) == []


def test_where_selects_and_bad_where_is_one_line(graded: Run, tmp_path: Path) -> None:
    written = write_report(graded.db, tmp_path / "a.html", where="model = 'model-b'")
    assert written.trajectories == 18
    data = embedded((tmp_path / "a.html").read_text(), "eeb-data")
    assert {r[2] for r in data["trajectories"]} == {"model-b"}
    with pytest.raises(InputError, match=r"^--where 'modle = 1': Binder Error: Referenced column \"modle\" not found"):
        write_report(graded.db, tmp_path / "b.html", where="modle = 1")
    assert not (tmp_path / "b.html").exists()


@pytest.mark.parametrize("where, says", [
    ("1=1) ; COPY trajectories TO 'LEAK' ; SELECT 1 WHERE (1=1",
     "expected one SQL condition on the table trajectories"),
    ("model = 'model-b') OR (1=1", "expected one SQL condition on the table trajectories"),
    ("trajectory_id NOT IN (SELECT content FROM read_text('LEAK'))", "Permission Error"),
])
def test_where_is_one_condition_that_reads_no_other_file(graded: Run, tmp_path: Path, where: str, says: str) -> None:
    """As `eebench query`: statements of its own wrote files, a closing parenthesis widened the selection, and a
    condition could read any file."""
    leak = tmp_path / "leak.csv"
    leak.write_text("a secret\n") if "read_text" in where else None
    where = where.replace("LEAK", str(leak))
    with pytest.raises(InputError, match=re.escape(says)):
        load_results(graded.db, where)
    assert not leak.exists() or leak.read_text() == "a secret\n"


def test_data_that_opens_an_html_comment_keeps_the_page_readable(graded: Run, tmp_path: Path) -> None:
    """`<!--` in a selected text was written `<\\!--`, which JSON.parse refused: the page was blank."""
    page = write_report(graded.db, tmp_path / "c.html", where="trajectory_id NOT LIKE '%<!--%</script>%'")
    text = page.path.read_text()
    data = embedded(text, "eeb-data")
    assert data["where"] == "trajectory_id NOT LIKE '%<!--%</script>%'"
    assert "<!--" not in text.split('id="eeb-data">')[1].split("</script>")[0]


def test_interval_of_a_group_does_not_depend_on_the_others(graded: Run) -> None:
    alone = load_results(graded.db, "model = 'model-d'").summaries(0)
    together = [s for s in load_results(graded.db).summaries(0) if s.labels["model"] == "model-d"]
    assert alone == together


def test_an_older_results_file_without_error_columns(graded: Run, tmp_path: Path) -> None:
    old = tmp_path / "old.duckdb"
    shutil.copy(graded.db, old)
    con = duckdb.connect(str(old))
    for (view,) in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall():
        con.execute(f"DROP VIEW {view}")
    for column in ("explore_error", "exploit_error", "ecc", "exploration_degree"):  # a file of before these
        con.execute(f"ALTER TABLE trajectories DROP COLUMN {column}")
    con.execute("DROP TABLE meta")
    con.close()
    write_report(old, tmp_path / "old.html")
    data = embedded((tmp_path / "old.html").read_text(), "eeb-data")
    assert [m["column"] for m in data["metrics"]] == ["success"]
    assert data["meta"] == {}


def test_a_newer_results_file_shows_its_new_metrics(graded: Run, tmp_path: Path) -> None:
    new = tmp_path / "new.duckdb"
    shutil.copy(graded.db, new)
    con = duckdb.connect(str(new))
    con.execute("UPDATE trajectories SET exploration_degree = NULL")   # NULL everywhere: left out
    con.execute("UPDATE trajectories SET ecc = cells_observed / free_cells")
    con.close()
    data = embedded(write_report(new, tmp_path / "n.html").path.read_text(), "eeb-data")
    assert [m["column"] for m in data["metrics"]] == ["success", "explore_error", "exploit_error", "ecc"]
    expected = _sql(new, "SELECT avg(ecc) FROM trajectories WHERE model = 'model-a' AND prompt = 'default'")
    row = next(r for r in data["summary"] if r["labels"]["model"] == "model-a" and r["labels"]["prompt"] == "default")
    assert row["est"]["ecc"][0] == pytest.approx(expected[0][0], rel=1e-12)


def test_missing_and_foreign_files_are_bad_input(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"nope.duckdb: no such database"):
        load_results(tmp_path / "nope.duckdb")
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).execute("CREATE TABLE t (x INT)").close()
    with pytest.raises(InputError, match=r"other.duckdb: is not an eebench results file: no table trajectories or steps"):
        load_results(other)
    text = tmp_path / "text.duckdb"
    text.write_text("not a database")
    with pytest.raises(InputError, match=r"text.duckdb: is not a DuckDB database file"):
        load_results(text)



@pytest.mark.parametrize("command", [["report"], ["plot", "replay"]])
def test_a_file_of_another_tools_tables_of_the_same_names_is_one_line(cli, tmp_path: Path, command: list[str]
                                                                      ) -> None:
    """Tables `trajectories` and `steps` of other columns: a traceback (`SELECT  FROM steps`, no columns), or
    DuckDB's conversion error blamed on `--where None`, a --where never given."""
    db = tmp_path / "other.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE trajectories (trajectory_id VARCHAR, instance_id VARCHAR, success BOOLEAN, "
                    "n_steps INTEGER)")
        con.execute("INSERT INTO trajectories VALUES ('x', 'i', true, 2)")
        con.execute("CREATE TABLE steps (step_no INTEGER, text VARCHAR)")
    out = tmp_path / ("r.html" if command == ["report"] else "r.png")
    r = cli(*command, "--db", db, "--out", out, code=2)
    assert r.stderr == (f"error: {db}: table steps has no column trajectory_id, t; is it an eebench results "
                        "file?\n")
    with duckdb.connect(str(db)) as con:
        con.execute("DROP TABLE steps")
        con.execute("CREATE TABLE steps (trajectory_id VARCHAR, t INTEGER)")
        con.execute("ALTER TABLE trajectories ALTER success TYPE VARCHAR")
        con.execute("UPDATE trajectories SET success = 'yes'")
    r = cli(*command, "--db", db, "--out", out, code=2)
    assert r.stderr.startswith(f"error: {db}: cannot be read as a results file: Conversion Error: ") and \
        r.stderr.count("\n") == 1
    with duckdb.connect(str(db)) as con:   # an episodes table of its own (Binder Error, a traceback)
        con.execute("DROP TABLE trajectories")
        con.execute("CREATE TABLE trajectories AS SELECT 'x' AS trajectory_id, 'i' AS instance_id, true AS success, "
                    "2 AS n_steps")
        con.execute("CREATE TABLE episodes (trajectory_id VARCHAR, reward DOUBLE)")
    r = cli(*command, "--db", db, "--out", out, code=2)
    assert r.stderr == f"error: {db}: table episodes has no column episode; is it an eebench results file?\n"
    assert not out.exists()

@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_results_file_of_a_newer_schema_is_refused(cli, graded: Run, tmp_path: Path, command: str) -> None:
    """Its tables may mean what this eebench cannot know: refused as `grade` refuses to write into it (report and
    plot drew it, exit 0)."""
    newer = tmp_path / "newer.duckdb"
    shutil.copyfile(graded.db, newer)
    with duckdb.connect(str(newer)) as con:
        con.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    out = tmp_path / ("r.html" if command == "report" else "r.png")
    r = cli(command, *(["figure1"] if command == "plot" else []), "--db", newer, "--out", out, code=2)
    assert r.stderr == f"error: {newer}: results schema version 5 is newer than this eebench reads (4); upgrade eebench\n"
    assert not out.exists()


@pytest.mark.parametrize("command", [["report"], ["plot", "figure1"]])
def test_a_truncated_results_file_is_one_line_not_a_traceback(cli, graded: Run, tmp_path: Path,
                                                              command: list[str]) -> None:
    """DuckDB opens a file cut after its first block, then fails to read it: an IOException traceback, exit 1."""
    db = tmp_path / "cut.duckdb"
    shutil.copyfile(graded.db, db)
    os.truncate(db, 3 * 4096 + 262144)   # DuckDB's headers and one block
    out = tmp_path / ("r.html" if command == ["report"] else "r.png")
    r = cli(*command, "--db", db, "--out", out, code=2)
    assert r.stderr.startswith(f"error: {db}: cannot be read as a results file: IO Error: ") and r.stderr.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cut.duckdb"]


def test_text_in_a_log_cannot_break_out_of_its_script_block(tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    write_instances([make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G", instance_id="t/x")], bench, {})
    runs = write_jsonl(tmp_path / "r.jsonl", [{
        "eebench": "trajectory/1", "id": "</script><script>alert(1)</script>", "instance": "t/x",
        "agent": {"name": "<b>x</b>", "model": "</script>"},
        "steps": [{"action": "right", "raw": "</script><!-- x"}, {"action": "right"}]}])
    grade_files([runs], Bench(bench), tmp_path / "r.duckdb")
    page = write_report(tmp_path / "r.duckdb", tmp_path / "r.html", bench=bench).path.read_text()
    assert page.count("</script>") == 3   # the three blocks' own ends, nothing from the data
    data = embedded(page, "eeb-data")
    assert data["trajectories"][0][0] == "</script><script>alert(1)</script>"
    assert decode_block(embedded(page, "eeb-replays")[0])["text"]["raw"] == ["</script><!-- x", None]


# -- the commands ----------------------------------------------------------------------------------------

def test_report_command(cli, graded: Run, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    result = cli("report", "--db", graded.db, "--out", out, "--bench", graded.bench)
    assert result.stdout.startswith(f"wrote {out} (99 trajectories, ")
    assert out.read_text().startswith("<!DOCTYPE html>")
    bad = cli("report", "--db", graded.db, "--out", tmp_path / "x.html", "--where", "nope = 1", code=2)
    assert bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: --where 'nope = 1': Binder Error")
    assert not (tmp_path / "x.html").exists()



@pytest.mark.parametrize("command", [["report"], ["plot", "figure1"]])
def test_an_out_that_is_the_results_file_is_refused_and_the_results_kept(cli, graded: Run, tmp_path: Path,
                                                                         command: list[str]) -> None:
    """`report --db r.duckdb --out r.duckdb` replaced the results with the page (exit 0): every grade lost."""
    db = tmp_path / "r.png"   # (plot's --out must end in .png, .svg or .pdf: a results file may be named so)
    shutil.copyfile(graded.db, db)
    before = db.read_bytes()
    r = cli(*command, "--db", db, "--out", tmp_path / "." / "r.png", code=2)
    assert r.stderr == f"error: {tmp_path / '.' / 'r.png'}: is the results file --db reads; choose another --out\n"
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["r.png"]

def test_a_where_matching_nothing_and_a_mistyped_trajectory_say_so(cli, graded: Run, tmp_path: Path) -> None:
    """report wrote an empty page (exit 0) for a mistyped value; plot replay quoted a --where never typed and
    named no close id; --where lost DuckDB's candidate columns."""
    r = cli("report", "--db", graded.db, "--out", tmp_path / "x.html", "--where", "model = 'model-z'", code=2)
    assert r.stderr == f"error: {graded.db}: no trajectory matches --where \"model = 'model-z'\"\n"
    assert not (tmp_path / "x.html").exists()
    trajectory = "model-d/default/seed-0/park2026-main/high-large/seed-0"
    typo = trajectory.replace("seed-0/park", "seed-1/park")
    r = cli("plot", "replay", "--db", graded.db, "--out", tmp_path / "r.png", "--trajectory", typo, code=2)
    assert r.stderr == f"error: {graded.db}: no trajectory {typo!r} (did you mean {trajectory!r}?)\n"
    r = cli("report", "--db", graded.db, "--out", tmp_path / "x.html", "--where", "modle = 1", code=2)
    assert 'Candidate bindings: "model"' in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_seed_past_the_seeds_limit_is_a_usage_error(cli, graded: Run, tmp_path: Path, command: str) -> None:
    """--seed is a seed like a suite's (at most 2^63-1): 2^64 ended `report` in a traceback from the JSON writer."""
    out = tmp_path / ("r.html" if command == "report" else "r.png")
    kind = ["figure1"] if command == "plot" else []
    r = cli(command, *kind, "--db", graded.db, "--out", out, "--seed", str(2 ** 64), code=2)
    assert r.stderr == (f"error: Invalid value for '--seed': {2 ** 64} is not in the range 0<=x<={2 ** 63 - 1}; "
                        f"see `eebench {command} --help`\n")
    assert not list(tmp_path.iterdir())
    cli(command, *kind, "--db", graded.db, "--out", out, "--seed", str(2 ** 63 - 1))


def test_report_is_self_contained(page: str) -> None:
    for needle in ("http://", "https://", "<link", "src=", "@import", "url(http"):
        assert needle not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
            '"http://www.w3.org/2000/svg"', ""), needle


@pytest.mark.parametrize(("kind", "suffix", "magic"), [
    ("figure1", ".png", b"\x89PNG"), ("figure1", ".svg", b"<?xml"), ("prompts", ".pdf", b"%PDF"),
    ("replay", ".png", b"\x89PNG")])
def test_plot_writes_each_kind(cli, graded: Run, tmp_path: Path, kind: str, suffix: str, magic: bytes) -> None:
    out = tmp_path / f"fig{suffix}"
    replay = ["--bench", graded.bench, "--trajectory", "model-d/default/seed-0/park2026-main/high-large/seed-0",
              "--step", "5"]
    cli("plot", kind, "--db", graded.db, "--out", out, *(replay if kind == "replay" else []))
    assert out.read_bytes().startswith(magic)
    if kind != "replay":   # the replay's options were silently ignored by the other figures
        refused = cli("plot", kind, "--db", graded.db, "--out", tmp_path / f"other{suffix}", *replay, code=2)
        assert refused.stderr == (f"error: --trajectory goes with `eebench plot replay`; `plot {kind}` does not read "
                                  "it\n")


def test_plot_replay_draws_the_ecc_curve_of_every_world(graded: Run, tmp_path: Path) -> None:
    """Issue 12: a replay shows the ECC curve beside the map; `plot replay` drew none (grid_dag, rooms)."""
    from eebench.report.figures import KINDS

    tid = "model-d/default/seed-0/park2026-main/high-large/seed-0"
    results = load_results(graded.db, f"trajectory_id = '{tid}'")
    figure = KINDS["replay"](results, {"bench": graded.bench, "step": 3, "seed": 0, "model": None})
    (ecc,) = [axis for axis in figure.axes if axis.get_ylabel() == "ECC"]
    (ecc_steps,) = _sql(graded.db, f"SELECT list(ecc ORDER BY t) FROM steps WHERE trajectory_id = '{tid}'")[0]
    assert list(ecc.lines[0].get_ydata()) == pytest.approx([np.nan if v is None else v for v in ecc_steps],
                                                           nan_ok=True)


def test_plot_replay_draws_the_path_in_artists_as_many_at_every_step(graded: Run) -> None:
    """A Line2D per step and a bar per step: a 100,000-step trajectory took 8 minutes and 3.5 GB to draw."""
    import matplotlib.pyplot as plt
    from matplotlib.collections import LineCollection

    from eebench.report.figures import KINDS

    tid = "model-e/default/seed-0/park2026-main/high-large/seed-0"
    results = load_results(graded.db, f"trajectory_id = '{tid}'")
    (n,) = _sql(graded.db, f"SELECT count(*) FROM steps WHERE trajectory_id = '{tid}'")[0]
    assert n > 20
    counts = []
    for step in (1, n):
        figure = KINDS["replay"](results, {"bench": graded.bench, "step": step, "seed": 0, "model": None})
        counts.append(len(figure.findobj()))
        assert [len(c.get_segments()) for c in figure.axes[0].collections if isinstance(c, LineCollection)] == [step]
        plt.close(figure)
    assert counts[0] == counts[1]


@pytest.mark.parametrize("suffix", [".svg", ".pdf"])
def test_a_figure_drawn_twice_is_the_same_bytes(graded: Run, tmp_path: Path, suffix: str) -> None:
    """SVG and PDF carried the clock (a date) and random clip-path ids: the same results gave other bytes (PNG
    has neither)."""
    first = draw("prompts", graded.db, tmp_path / f"a{suffix}")
    time.sleep(1.1)   # (a date to the second differs now)
    assert draw("prompts", graded.db, tmp_path / f"b{suffix}").read_bytes() == first.read_bytes()


def test_the_page_is_the_same_bytes_however_the_results_file_is_named(graded: Run, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # the page carried the --db argument as typed: `results.duckdb` and its absolute path gave two pages
    where = "trajectory_id = 'model-d/default/seed-0/park2026-main/high-large/seed-0'"
    write_report(graded.db, tmp_path / "absolute.html", where=where)
    monkeypatch.chdir(graded.db.parent)
    write_report(graded.db.name, tmp_path / "relative.html", where=where)
    assert (tmp_path / "relative.html").read_bytes() == (tmp_path / "absolute.html").read_bytes()


def test_the_page_is_dated_by_its_results_not_the_clock(graded: Run, page: str) -> None:
    """A report made again of the same results is the same page: it shows when they were graded."""
    (last,) = _sql(graded.db, "SELECT strftime(max(graded_at), '%Y-%m-%d %H:%M UTC') FROM trajectories")[0]
    data = embedded(page, "eeb-data")
    assert data["graded"] == last and "generated" not in data


def test_plot_bad_input(cli, graded: Run, tmp_path: Path) -> None:
    r = cli("plot", "figure", "--db", graded.db, "--out", tmp_path / "a.png", code=2)
    assert r.stderr == "error: unknown figure 'figure' (did you mean 'figure1'?); expected figure1, prompts, replay or rooms-gaps\n"
    r = cli("plot", "figure1", "--db", graded.db, "--out", tmp_path / "a.gif", code=2)
    assert r.stderr == f"error: {tmp_path / 'a.gif'}: expected a file ending in .pdf, .png or .svg, found '.gif'\n"
    r = cli("plot", "replay", "--db", graded.db, "--out", tmp_path / "a.png", "--trajectory", "nope", code=2)
    assert r.stderr == (f"error: {graded.db}: no trajectory 'nope'; the ids: eebench query \"SELECT trajectory_id "
                        f"FROM trajectories\" --db {graded.db}\n")
    # what would draw an empty figure is refused too
    r = cli("plot", "prompts", "--db", graded.db, "--out", tmp_path / "a.png", "--model", "nope", code=2)
    assert r.stderr.startswith(f"error: {graded.db}: no selected trajectory of model 'nope' to draw") and \
        "; models: " in r.stderr
    r = cli("plot", "figure1", "--db", graded.db, "--out", tmp_path / "a.png", "--where", "env = 'rooms'", code=2)
    assert "no trajectory matches" in r.stderr or "has no selected trajectory with a success" in r.stderr
    empty = tmp_path / "empty.duckdb"   # nothing graded: no --where to blame (it said "no trajectory matches")
    shutil.copyfile(graded.db, empty)
    with duckdb.connect(str(empty)) as con:
        con.execute("DELETE FROM trajectories")
    r = cli("plot", "figure1", "--db", empty, "--out", tmp_path / "a.png", code=2)
    assert r.stderr == f"error: {empty}: has no graded trajectory to draw (`eebench grade ... --db` writes them)\n"
    empty.unlink()   # (the folder is checked below for anything a refused plot wrote)
    tid = duckdb.connect(str(graded.db), read_only=True).execute(
        "SELECT trajectory_id, n_steps FROM trajectories ORDER BY 1 LIMIT 1").fetchone()
    r = cli("plot", "replay", "--db", graded.db, "--out", tmp_path / "a.png", "--trajectory", tid[0], "--step",
            str(tid[1] + 1), code=2)
    assert r.stderr == f"error: --step {tid[1] + 1}: trajectory {tid[0]!r} has {tid[1]} graded steps (0 to {tid[1]})\n"
    assert not list(tmp_path.iterdir())


def test_plot_help_lists_the_kinds(cli) -> None:
    text = cli("plot", "--help").stdout
    for kind in ("figure1", "prompts", "replay"):
        assert re.search(rf"\n +{kind} +\S", text), kind


def test_the_report_says_how_far_its_replays_are(graded: Run, tmp_path: Path) -> None:
    """32,400 trajectories took 11 s of silence: progress(done, total) now hears of each replay."""
    heard: list[tuple[int, int]] = []
    written = write_report(graded.db, tmp_path / "r.html", progress=lambda done, total: heard.append((done, total)))
    assert heard == [(k, written.trajectories) for k in range(1, written.trajectories + 1)]


@pytest.mark.parametrize("change, args", [
    ("UPDATE storage.steps SET from_x = NULL, to_x = NULL", ["report"]),
    ("UPDATE storage.steps SET case_id = 99, error = -1", ["report"]),
    ("ALTER TABLE trajectories ALTER n_steps TYPE VARCHAR; UPDATE trajectories SET n_steps = 'x'",
     ["plot", "figure1"]),
])
def test_a_results_file_changed_after_grading_is_one_line_not_a_traceback(graded: Run, tmp_path: Path, cli,
                                                                          change: str, args: list[str]) -> None:
    db = _renamed(graded, tmp_path, change)
    out = tmp_path / ("o.html" if args[0] == "report" else "o.png")
    refused = cli(*args, "--db", db, "--out", out, code=2).stderr
    assert refused.startswith(f"error: {db}: cannot be drawn: ") and refused.count("\n") == 1, refused
    assert "was it changed after grading?" in refused and not out.exists()


def test_a_bench_from_an_archive_is_named_by_its_path_not_its_temporary_folder(graded: Run, tmp_path: Path,
                                                                               cli) -> None:
    # the same results give the same page: an archive's note named the random folder it was unpacked into
    from eebench.bundles import publish

    archive = tmp_path / "pasta.tar.gz"
    publish("park2026-pasta", "1.0.0", archive)   # none of the graded instances: each is "not found"
    pages = []
    for k in range(2):
        cli("report", "--db", graded.db, "--bench", archive, "--out", tmp_path / f"r{k}.html")
        pages.append((tmp_path / f"r{k}.html").read_bytes())
    assert pages[0] == pages[1]
    notes = embedded(pages[0].decode(), "eeb-data")["notes"]
    assert any("not found in" in note and str(archive) in note and "eebench-bundle-" not in note for note in notes)


def test_prompts_panels_are_set_in_rows_whose_titles_do_not_meet(graded: Run, tmp_path: Path) -> None:
    """A model of both worlds, with coverage, has eleven panels: in one row of the page's width their titles ran
    into one another."""
    from eebench.report.figures import KINDS

    db = tmp_path / "both.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:   # model-a plays a rooms world too
        con.execute("INSERT INTO trajectories BY NAME SELECT 'rooms/0' AS trajectory_id, 'r/x' AS instance_id, "
                    "'rooms' AS env, 'agent' AS agent_name, 'model-a' AS model, 'default' AS prompt, 3 AS n_steps, "
                    "'gaps/1' AS metric_version, 0.5 AS total_gap_last, 0.25 AS explore_gap_last, "
                    "0.25 AS exploit_gap_last, 0.5 AS coverage, 0.25 AS redundancy, 2 AS sample_efficiency, "
                    "'end_of_log' AS end_reason, 0 AS ignored_actions, now()::TIMESTAMP AS graded_at, "
                    "'r.jsonl' AS source_file, '0' AS eebench_version")
    figure = KINDS["prompts"](load_results(db), {"seed": 0, "model": "model-a"})
    assert len(figure.axes) == 11
    figure.canvas.draw()
    boxes = [axis.title.get_window_extent(figure.canvas.get_renderer()) for axis in figure.axes]
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]


def test_figure_one_of_many_models_says_where_their_names_are_instead_of_a_legend(graded: Run,
                                                                                 tmp_path: Path) -> None:
    """272 models made a legend of 14 columns over the panels (unreadable), and matplotlib warned on stderr that it
    could not lay the figure out."""
    import warnings

    from eebench.report.figures import KINDS, MAX_LEGEND_NAMES

    db = tmp_path / "many.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:   # each trajectory a model of its own
        con.execute("UPDATE trajectories SET model = 'model-' || trajectory_id")
        models = con.execute("SELECT count(DISTINCT model) FROM trajectories WHERE success IS NOT NULL").fetchone()[0]
    assert models > MAX_LEGEND_NAMES
    figure = KINDS["figure1"](load_results(db), {"seed": 0})
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # (the layout warning)
        figure.savefig(tmp_path / "many.png")
    assert not figure.legends
    assert figure.get_suptitle().endswith(" models: too many to name in a legend (`eebench report` names each one "
                                          "in its tooltips)")


def test_characters_the_font_lacks_are_said_in_one_line(cli, graded: Run, tmp_path: Path) -> None:
    """A model named in CJK made matplotlib warn twice per character, each with a source path, on stderr."""
    db = tmp_path / "cjk.duckdb"
    shutil.copyfile(graded.db, db)
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE trajectories SET model = '模型-' || model WHERE model = 'model-a'")
    r = cli("plot", "figure1", "--db", db, "--out", tmp_path / "cjk.png")
    assert r.stderr == ("warning: the figure's font has no glyph for 2 character(s) of its labels (模, 型): they are "
                        "drawn as boxes (the page, `eebench report`, draws them with the browser's fonts)\n")
    assert (tmp_path / "cjk.png").read_bytes().startswith(b"\x89PNG")


def test_plot_replay_says_why_the_bench_it_was_given_draws_no_map(cli, graded: Run, tmp_path: Path) -> None:
    """The page says at its top why a replay has no map; `plot replay --bench` drew the cells visited alone and
    said nothing, as if the bench had not been given."""
    tid = "model-d/default/seed-0/park2026-main/high-large/seed-0"
    other = tmp_path / "other"   # a bench without the instance graded
    suite = resolve_spec("park2026-main", None)
    write_instances([i for i in suite.instances() if i.id == "park2026-main/low-small/seed-1"], other, suite.source())
    r = cli("plot", "replay", "--db", graded.db, "--trajectory", tid, "--bench", other, "--out", tmp_path / "r.png")
    assert r.stderr == (f"warning: --bench draws no map here: 1 instance(s) not found in {other}, e.g. "
                        "park2026-main/high-large/seed-0\n")
    r = cli("plot", "replay", "--db", graded.db, "--trajectory", tid, "--bench", graded.bench,
            "--out", tmp_path / "r.png")
    assert r.stderr == ""
