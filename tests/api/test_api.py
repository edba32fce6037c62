"""eebench.load, grade, grade_files and query: the same instances, rows and one-line messages as the CLI."""

from __future__ import annotations

import re
import signal

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eebench
from eebench.world.grid_dag import GridDagInstance
from tests.conftest import instance_doc, write_json


def test_load_shipped_suite_instance_and_bundle(main_suite: eebench.Instances, main_bundle: Path) -> None:
    assert len(main_suite) == 27 and main_suite.bundle is None
    one = eebench.load("park2026-main/low-small/seed-0")
    assert isinstance(one, GridDagInstance) and one == main_suite["park2026-main/low-small/seed-0"]
    bundle = eebench.load(main_bundle)
    assert isinstance(bundle, eebench.Instances)
    assert bundle.bundle is not None and bundle.bundle[:2] == ("park2026-main", "1.0.0")
    assert dict(bundle) == dict(main_suite)
    assert dict(eebench.load(main_bundle / "instances")) == dict(bundle)  # part of a bundle: the bundle, verified
    path = main_bundle / "instances" / "park2026-main" / "low-small" / "seed-0.json"
    assert eebench.load(path) == one
    assert eebench.load(json.loads(path.read_text())) == one


def test_load_refuses_with_the_cli_message(tmp_path: Path, cli) -> None:
    doc = instance_doc(["..", ".#"], [0, 0], [("G", [1, 1], [])], "G")
    bad = write_json(tmp_path / "bad.json", doc)
    with pytest.raises(eebench.InputError) as caught:
        eebench.load(bad)
    printed = cli("validate", bad, code=2).stderr.strip().splitlines()
    assert str(caught.value) in printed[0] and "nodes[0].pos" in str(caught.value)
    with pytest.raises(eebench.InputError, match=r"park2026-mian: no such file.*did you mean 'park2026-main'"):
        eebench.load("park2026-mian")
    with pytest.raises(eebench.InputError, match=r"no such instance in the shipped suite 'park2026-main'"):
        eebench.load("park2026-main/low-small/seed-9")


def test_grade_in_memory_equals_grade_files(main_suite: eebench.Instances, main_bundle: Path, tmp_path: Path,
                                            cli) -> None:
    runs = tmp_path / "random.jsonl"
    cli("play", main_bundle, "--agent", "random", "--seed", "1", "--out", runs)
    results = eebench.grade(runs, bench=main_bundle)
    assert results.report.trajectories == 27 and results.trajectories.num_rows == 27
    assert set(results.trajectories.column_names) >= {"trajectory_id", "bench_digest", "explore_error"}
    assert results.trajectories.column("bench_name").to_pylist() == ["park2026-main"] * 27

    db = tmp_path / "results.duckdb"
    eebench.grade_files(runs, bench=main_bundle, db=db)
    order = "ORDER BY trajectory_id, t"
    stored = eebench.query_arrow(f"SELECT * FROM steps {order}", db)
    assert results.steps.sort_by([("trajectory_id", "ascending"), ("t", "ascending")]).equals(stored)

    # dicts and in-memory instances give the same steps (the bench columns aside: no bundle was named)
    docs = [json.loads(line) for line in runs.read_text().splitlines()]
    again = eebench.grade(docs, bench=main_suite)
    assert again.steps.sort_by([("trajectory_id", "ascending"), ("t", "ascending")]).equals(stored)
    assert again.trajectories.column("bench_name").null_count == 27

    frame = eebench.query("SELECT agent_name, episodes FROM agent_summary", db)
    assert frame.to_dict("records") == [{"agent_name": "random", "episodes": 27}]
    assert results.to_pandas("steps").shape == (results.steps.num_rows, results.steps.num_columns)
    polars_frame = results.to_polars("steps")
    assert polars_frame.shape == (results.steps.num_rows, results.steps.num_columns)
    assert isinstance(results.to_arrow("meta"), pa.Table)
    for table in ("trajectories", "steps", "episodes", "checkpoints", "meta"):   # each the README names
        assert getattr(results, table).equals(results[table]), table


@pytest.mark.parametrize("library, method", [("polars", "to_polars"), ("pandas", "to_pandas")])
def test_a_missing_dataframe_library_names_its_extra(library: str, method: str, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    doc = {"eebench": "trajectory/1", "id": "x", "instance": "park2026-main/low-small/seed-0",
           "steps": [{"action": "up"}]}
    results = eebench.grade([doc], bench="park2026-main")
    monkeypatch.setitem(sys.modules, library, None)   # (as if not installed)
    with pytest.raises(ImportError, match=rf"^Results.{method} needs {library}: pip install 'eebench\[{library}\]'$"):
        getattr(results, method)("steps")


def test_grade_errors_are_input_errors(main_suite: eebench.Instances, tmp_path: Path) -> None:
    doc = {"eebench": "trajectory/1", "id": "x", "instance": "park2026-main/nope", "steps": [{"action": "up"}]}
    with pytest.raises(eebench.InputError, match=r"^trajectories\[0\]: instance: "):
        eebench.grade([doc], bench=main_suite)
    with pytest.raises(eebench.InputError, match=r"SQL: Catalog Error"):
        db = tmp_path / "r.duckdb"
        eebench.grade_files([{**doc, "instance": "park2026-main/low-small/seed-0"}], bench=main_suite, db=db)
        eebench.query("SELECT * FROM nope", db)
    with pytest.raises(eebench.InputError, match=r"^trajectories\[1\]: id: trajectory id 'x' was already read at "
                                                 r"trajectories\[0\]; ids must be unique$"):
        eebench.grade([{**doc, "instance": "park2026-main/low-small/seed-0"}] * 2, bench=main_suite)
    with pytest.raises(eebench.InputError, match=r"^trajectories: none given"):
        eebench.grade([], bench=main_suite)
    with pytest.raises(eebench.InputError, match=r"no table 'step'.*did you mean 'steps'"):
        eebench.grade([{**doc, "instance": "park2026-main/low-small/seed-0"}], bench=main_suite)["step"]
    import numpy as np

    with pytest.raises(eebench.InputError, match=r"^trajectories\[1\]: cannot be written as JSON: Type is not JSON "
                                                 r"serializable: numpy.int64$"):
        eebench.grade([doc, {**doc, "meta": {"n": np.int64(2)}}], bench=main_suite)


def test_grade_takes_one_document_one_instance_and_no_bench_for_logged(main_suite: eebench.Instances) -> None:
    instance = main_suite["park2026-main/low-small/seed-0"]
    doc = {"eebench": "trajectory/1", "id": "x", "instance": instance.id, "steps": [{"action": "up"}]}
    assert eebench.grade(doc, bench=instance)["trajectories"].num_rows == 1
    logged = {"eebench": "trajectory/1", "id": "l", "instance": "tw/x", "env": "logged",
              "steps": [{"action": "go", "observation": "-= Hall =-"}]}
    assert eebench.grade(logged, bench=None)["steps"].num_rows == 1
    with pytest.raises(eebench.InputError, match=r"^trajectories\[0\]: instance: grading instance "):
        eebench.grade(doc, bench=None)
    document = instance.to_document() if hasattr(instance, "to_document") else None
    if document is not None:   # an instance document, as `load` takes it
        assert eebench.grade(doc, bench=document)["trajectories"].num_rows == 1
    for bench, where in ((5, "bench"), ([instance, 5], "bench[1]")):
        with pytest.raises(eebench.InputError, match=rf"^{re.escape(where)}: expected a folder, .* found int$"):
            eebench.grade(doc, bench=bench)
    with pytest.raises(eebench.InputError, match=r"^trajectories: expected trajectory files .* found NoneType$"):
        eebench.grade(None, bench=instance)
    # what is neither a path nor a document is named, not called a mix (bytes were read as a list of integers)
    with pytest.raises(eebench.InputError, match=r"^trajectories: expected trajectory files .* found bytes$"):
        eebench.grade(b"runs.jsonl", bench=instance)
    with pytest.raises(eebench.InputError, match=r"^trajectories\[1\]: expected a trajectory file or a "
                                                 r"trajectory/1 document \(a dict\), found int$"):
        eebench.grade([doc, 5], bench=instance)
    with pytest.raises(eebench.InputError, match=r"^trajectories: expected trajectory files .*, not a mix$"):
        eebench.grade([doc, "runs.jsonl"], bench=instance)


def test_import_stays_cheap() -> None:
    """`import eebench` loads none of the heavy modules; the API names arrive on first use."""
    code = ("import sys, eebench; heavy = {'numpy', 'duckdb', 'pyarrow', 'gymnasium', 'jsonschema'} & set(sys.modules);"
            "print(sorted(heavy)); eebench.Scorer; print('eebench.scorer' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["eebench", "id", "env", "map", "start", "nodes", "goal", "budget", "x"]),
                       st.one_of(st.none(), st.integers(-2, 5), st.text(max_size=12), st.just("instance/1"),
                                 st.just("grid_dag"), st.lists(st.text(".#", max_size=4), max_size=3),
                                 st.lists(st.integers(0, 3), max_size=2))))
def test_load_of_any_document_is_an_instance_or_an_input_error(doc: dict) -> None:
    try:
        loaded = eebench.load(doc)
    except eebench.InputError as exc:
        assert str(exc) and "\n" not in str(exc).splitlines()[0]
    else:
        assert isinstance(loaded, GridDagInstance)


def test_arguments_of_the_wrong_type_or_empty_say_which(tmp_path: Path) -> None:
    """load('') searched the current folder; None, numbers and bytes failed deep inside; workers='2' too."""
    with pytest.raises(eebench.InputError, match=r"^source: an empty name; expected a file"):
        eebench.load("")
    for bad in (None, 5, b"park2026-main"):
        with pytest.raises(TypeError, match=rf"^source: expected a path \(str or pathlib.Path\), found "
                                            rf"{type(bad).__name__}$"):
            eebench.load(bad)
    with pytest.raises(eebench.InputError, match="File name too long"):
        eebench.load("x/" + "9" * 5000)
    for workers, error in (("2", TypeError), (1.5, TypeError), (True, TypeError), (-1, ValueError)):
        with pytest.raises(error, match=r"^workers: expected a count of processes"):
            eebench.grade_files([], bench=None, db=tmp_path / "r.duckdb", workers=workers)
    with pytest.raises(TypeError, match=r"^db: expected a path"):
        eebench.grade_files([], bench=None, db=None)
    with pytest.raises(TypeError, match=r"^sql: expected the query's text, found NoneType$"):
        eebench.query(None, tmp_path / "r.duckdb")


def test_instances_are_a_mapping_that_answers_in_and_get(main_suite: eebench.Instances) -> None:
    """`in` and `.get` asked __getitem__, whose InputError is no KeyError: both raised."""
    one = "park2026-main/low-small/seed-0"
    assert one in main_suite and "nope" not in main_suite and 5 not in main_suite
    assert main_suite.get(one) is main_suite[one] and main_suite.get("nope") is None
    assert main_suite.get("nope", "default") == "default"


def test_a_folder_with_a_malformed_instance_file_is_refused_as_the_cli_does(tmp_path: Path, cli) -> None:
    """load(folder) skipped the file silently, or said 'holds no instance files' when it was the only one."""
    doc = instance_doc(["..", ".."], [0, 0], [("G", [1, 1], [])], "G", instance_id="t/ok")
    for others in ([write_json(tmp_path / "f" / "ok.json", doc)], []):
        folder = tmp_path / ("f" if others else "g")
        folder.mkdir(exist_ok=True)
        (folder / "x.json").write_text('{"eebench": "instance/1",\n')
        printed = cli("show", folder, code=2).stderr.strip()
        with pytest.raises(eebench.InputError) as caught:
            eebench.load(folder)
        assert printed == f"error: {caught.value}" and f"{folder / 'x.json'}:1: malformed JSON" in printed


def test_grading_against_loaded_bundle_records_the_bundle(main_bundle: Path) -> None:
    """Instances loaded from a verified bundle carry its name, version and digest onto the rows, as a path does."""
    doc = {"eebench": "trajectory/1", "id": "x", "instance": "park2026-main/low-small/seed-0",
           "steps": [{"action": "up"}]}
    columns = ["bench_name", "bench_version", "bench_digest"]
    by_path = eebench.grade(doc, bench=main_bundle)["trajectories"].select(columns).to_pylist()
    loaded = eebench.grade(doc, bench=eebench.load(main_bundle))["trajectories"].select(columns).to_pylist()
    assert loaded == by_path and by_path[0]["bench_name"] == "park2026-main" and by_path[0]["bench_digest"]


def test_grade_applies_checkpoint_files_and_needs_no_bench_for_logged(tmp_path: Path) -> None:
    """As `grade --checkpoints FILE` with no --bench: the API had neither."""
    from tests.evaluator.test_coverage_store import CHECKPOINTS, logged

    given = tmp_path / "cp.yaml"
    given.write_text(CHECKPOINTS)
    run = logged("text", ["Kitchen", "Hall", "Kitchen"])
    assert eebench.grade(run)["trajectories"]["ecc"].to_pylist() == [None]   # no set for tw/* ships
    for checkpoints in (given, str(given), [given]):
        results = eebench.grade(run, checkpoints=checkpoints)
        assert results["trajectories"]["ecc"].to_pylist() == [0.5]
        assert results["checkpoints"].to_pydict() == {"trajectory_id": ["text", "text"],
                                                      "checkpoint_id": ["kitchen", "cellar"],
                                                      "hit_after_steps": [1, None]}
    with pytest.raises(eebench.InputError, match=r"nope\.yaml"):
        eebench.grade(run, checkpoints=tmp_path / "nope.yaml")
    with pytest.raises(TypeError, match=r"^checkpoints: expected a path"):
        eebench.grade(run, checkpoints=[5])
    db = tmp_path / "r.duckdb"
    eebench.grade_files([run], db=db, checkpoints=given)
    assert eebench.query("SELECT ecc FROM trajectories", db)["ecc"].tolist() == [0.5]


def test_query_names_a_wrong_typed_db_and_the_missing_pandas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    for db in (None, 5):
        with pytest.raises(TypeError, match=rf"^db: expected a path \(str or pathlib.Path\), found "
                                            rf"{type(db).__name__}$"):
            eebench.query("SELECT 1", db)
    db = tmp_path / "r.duckdb"
    eebench.grade_files([{"eebench": "trajectory/1", "id": "x", "instance": "park2026-main/low-small/seed-0",
                          "steps": [{"action": "up"}]}], bench="park2026-main", db=db)
    monkeypatch.setitem(sys.modules, "pandas", None)   # (as if not installed)
    with pytest.raises(ImportError, match=r"^eebench.query needs pandas: pip install 'eebench\[pandas\]'$"):
        eebench.query("SELECT 1", db)


def test_documents_given_as_dicts_are_named_as_their_errors_name_them(main_suite: eebench.Instances,
                                                                      tmp_path: Path) -> None:
    # their rows named a temporary file, gone once graded and another at each call: equal input, unequal rows
    instance = main_suite["park2026-main/low-small/seed-0"]
    docs = [{"eebench": "trajectory/1", "id": name, "instance": instance.id, "steps": [{"action": "up"}]}
            for name in ("x", "y")]
    sources = [eebench.grade(docs, bench=instance)["trajectories"].select(["source_file", "source_line"]).to_pylist()
               for _ in range(2)]
    assert sources[0] == sources[1] == [{"source_file": "trajectories", "source_line": 1},
                                        {"source_file": "trajectories", "source_line": 2}]
    db = tmp_path / "r.duckdb"
    eebench.grade_files(docs, bench=instance, db=db)
    assert eebench.query_arrow("SELECT DISTINCT source_file FROM trajectories", db=db).to_pylist() == \
        [{"source_file": "trajectories"}]


def test_a_stop_during_an_in_memory_grades_commit_still_stops_the_caller(main_suite: eebench.Instances,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # the commit is to a temporary file whose tables are returned, not kept: nothing to protect by going on
    from eebench.interrupts import CommitGate

    close = CommitGate.close

    def close_then_stop(gate: CommitGate) -> None:
        close(gate)
        signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(CommitGate, "close", close_then_stop)
    instance = main_suite["park2026-main/low-small/seed-0"]
    with pytest.raises(KeyboardInterrupt):
        eebench.grade({"eebench": "trajectory/1", "id": "x", "instance": instance.id, "steps": [{"action": "up"}]},
                      bench=instance)
