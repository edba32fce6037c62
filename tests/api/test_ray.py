"""`grade --engine ray` and `ingest`: a local Ray with 2 CPUs gives the rows of a local grade (and of `--workers 2`)."""

from __future__ import annotations

import contextlib
import importlib.util
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

import eebench

needs_ray = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="ray is not installed "
                               "(pip install 'eebench[ray]')")
ORDER = {"trajectories": "trajectory_id", "steps": "trajectory_id, t"}


@pytest.fixture(scope="module")
def _ray_of_the_module():
    import ray

    yield ray
    ray.shutdown()


@pytest.fixture
def ray_running(_ray_of_the_module):
    """A local Ray kept running from test to test (a start takes 7-10 s here): a grade uses the Ray it finds."""
    from eebench.engines.ray import _start

    if not _ray_of_the_module.is_initialized():
        _start(_ray_of_the_module, None, 2)


def _no_ray_running() -> None:
    """For a test of how a grade starts or reaches Ray: none left running by an earlier test."""
    import ray

    if ray.is_initialized():
        ray.shutdown()


def _rows(db: Path, table: str) -> list[tuple]:
    """A table's rows in a fixed order; when a grade was, and from which spelling of the file, aside."""
    aside = " EXCLUDE (graded_at, source_file)" if table == "trajectories" else ""
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(f"SELECT *{aside} FROM {table} ORDER BY {ORDER[table]}").fetchall()


@needs_ray
def test_ray_rows_equal_local_rows(main_bundle: Path, tmp_path: Path, cli) -> None:
    _no_ray_running()   # the grade starts its own, of --cpus 2, and stops it
    shards = []
    for seed, agent in enumerate(["random", "frontier", "random"]):
        shards.append(tmp_path / f"shard-{seed}.jsonl")
        cli("play", main_bundle, "--agent", agent, "--seed", str(seed), "--out", shards[-1])
        text = shards[-1].read_text().replace('"id":"', f'"id":"s{seed}/')  # ids unique across shards
        shards[-1].write_text(text)
    local = tmp_path / "local.duckdb"
    cli("grade", *shards, "--bench", main_bundle, "--db", local)
    out = tmp_path / "parquet"
    uri = f"file://{shards[2]}"  # a shard given as a URI: read through pyarrow's filesystems
    done = cli("grade", *shards[:2], uri, "--bench", main_bundle, "--engine", "ray", "--cpus", "2", "--out", out)
    assert "graded 81 trajectories" in done.stdout and "from 3 shards" in done.stdout
    assert "Token authentication" not in done.stderr and "Progress bars" not in done.stderr   # Ray's notes
    assert sorted(p.name for p in (out / "steps").iterdir()) == [f"part-0000{i}.parquet" for i in range(3)]
    ingested = tmp_path / "ingested.duckdb"
    assert "loaded 81 trajectories" in cli("ingest", out, "--db", ingested).stdout
    parallel = tmp_path / "parallel.duckdb"  # local worker processes give the same rows too
    cli("grade", *shards, "--bench", main_bundle, "--db", parallel, "--workers", "2")
    for table in ORDER:
        assert _rows(ingested, table) == _rows(local, table) == _rows(parallel, table)
    with duckdb.connect(str(ingested), read_only=True) as con:
        sources = dict(con.execute("SELECT source_file, count(*) FROM trajectories GROUP BY 1").fetchall())
    assert sources == {str(shards[0]): 27, str(shards[1]): 27, uri: 27}
    # DuckDB reads the partitions directly, as the README shows
    with duckdb.connect() as con:
        count = con.execute(f"SELECT count(*) FROM read_parquet('{out}/steps/*.parquet')").fetchone()[0]
    assert count == len(_rows(local, "steps"))
    assert eebench.query("SELECT episodes FROM agent_summary WHERE agent_name = 'frontier'", ingested)["episodes"][0] == 27
    # ingesting again replaces the rows of the same ids; an id in two partitions is refused
    cli("ingest", out, "--db", ingested)
    assert _rows(ingested, "steps") == _rows(local, "steps")


@needs_ray
def test_an_address_where_no_cluster_answers_is_one_line_not_a_wait(main_bundle: Path, tmp_path: Path,
                                                                     cli) -> None:
    # Ray itself retries an address that never answers without end
    import socket

    _no_ray_running()   # (a grade uses a Ray already running in its process, whatever the address)

    with socket.socket() as closed:   # a port of this machine that nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    shard = tmp_path / "x.jsonl"
    shard.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": []}\n')
    failed = cli("grade", shard, "--bench", main_bundle, "--engine", "ray", "--address", f"127.0.0.1:{port}",
                 "--out", tmp_path / "o", code=2)
    assert failed.stderr == (f"error: --address 127.0.0.1:{port}: no Ray cluster answers there (Connection refused "
                             "within 10 s); start one (`ray start --head`) or leave --address out to grade on a "
                             "local Ray\n")


@needs_ray
@pytest.mark.parametrize("address", ["foo", "host:notaport", ":6379"])
def test_an_address_ray_cannot_parse_is_one_line_not_a_traceback(address: str, main_bundle: Path, tmp_path: Path,
                                                                 cli) -> None:
    _no_ray_running()
    shard = tmp_path / "x.jsonl"
    shard.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": []}\n')
    # (ray.init's ValueError was a traceback; for ':6379' Ray also logs one of its own: a process of its own here,
    # as Ray's logging writes to the stderr it found at import)
    failed = subprocess.run([sys.executable, "-m", "eebench", "grade", str(shard), "--bench", str(main_bundle),
                             "--engine", "ray", "--address", address, "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, timeout=120)
    assert failed.returncode == 2 and failed.stderr.count("\n") == 1, failed.stderr
    assert failed.stderr.startswith("error: ") and f"--address {address}" in failed.stderr
    assert not (tmp_path / "o").exists()


@contextlib.contextmanager
def _server(answer: bytes | None) -> Iterator[int]:
    """A TCP server on a free port of this machine that reads what a client sends and answers `answer` (None:
    says nothing); its port."""
    listener = socket.create_server(("127.0.0.1", 0))
    done = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(1024)
            if answer is not None:
                connection.sendall(answer)
            done.wait(10)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        done.set()
        thread.join(10)
        listener.close()


@pytest.mark.parametrize("answer", [b"HTTP/1.0 400 Bad Request\r\n\r\n<!DOCTYPE html>", None])
def test_an_address_where_another_service_answers_is_one_line_not_a_wait(answer: bytes | None,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A port that accepts the connection but is not a Ray cluster's (a web server, the dashboard's 8265): Ray
    waited there without end, printing its retries."""
    from eebench.engines import ray

    monkeypatch.setattr(ray, "REACH_SECONDS", 1)
    with _server(answer) as port, pytest.raises(eebench.EebenchError) as refused:
        ray._check_reachable(f"127.0.0.1:{port}")
    assert str(refused.value) == (f"--address 127.0.0.1:{port}: what answers there is not a Ray cluster (no gRPC "
                                  "answer within 1 s; a cluster's port is 6379 unless `ray start --head --port` "
                                  "chose another, the dashboard's 8265 is not it)")


def test_an_address_that_answers_as_grpc_does_is_tried() -> None:
    """A gRPC server (Ray's GCS) answers HTTP/2's preface with a SETTINGS frame (checked against a real GCS of Ray
    2.60: 00 00 18 04 ...)."""
    from eebench.engines import ray

    with _server(bytes([0, 0, 0x18, 4, 0, 0, 0, 0, 0])) as port:
        ray._check_reachable(f"127.0.0.1:{port}")


@needs_ray
def test_ray_refuses_bad_shards_and_a_used_folder(main_bundle: Path, tmp_path: Path, cli, ray_running) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": [{"action": "up"}]}\n')
    out = tmp_path / "parquet"
    failed = cli("grade", bad, "--bench", main_bundle, "--engine", "ray", "--out", out, code=2)
    assert f"{bad}:1: instance: " in failed.stderr and "Traceback" not in failed.stderr
    assert not any(out.rglob("*.parquet"))
    (out / "steps").mkdir(parents=True, exist_ok=True)
    used = cli("grade", bad, "--bench", main_bundle, "--engine", "ray", "--out", out, code=2)
    assert "is not empty" in used.stderr
    a_file = cli("grade", bad, "--bench", main_bundle, "--engine", "ray", "--out", bad, code=2)   # (a traceback)
    assert a_file.stderr == (f"error: {bad}: is a file; the Parquet partitions of a run go into a new or empty "
                             "folder\n")


@needs_ray
def test_a_shard_that_is_a_folder_or_one_letter_off_is_named_as_a_local_grade_names_it(main_bundle: Path,
                                                                                      tmp_path: Path, cli) -> None:
    # (checked before Ray starts; a folder was said to be missing, and a typo got no close name)
    shard = tmp_path / "shard.jsonl"
    shard.write_text("")
    out = tmp_path / "parquet"
    for given, says in ((tmp_path, "is not a file"),
                        (tmp_path / "shard.jsonll", f"no such file (did you mean {str(shard)!r}?)")):
        for engine in (("--engine", "ray", "--out", out), ("--db", tmp_path / "r.duckdb")):
            done = cli("grade", given, "--bench", main_bundle, *engine, code=2)
            assert done.stderr == f"error: {given}: {says}\n"
    assert not out.exists()
    done = cli("grade", "-", "--bench", main_bundle, "--engine", "ray", "--out", out, code=2)   # was "no such file"
    assert done.stderr.startswith("error: -: standard input cannot be a Ray shard") and done.stderr.count("\n") == 1


def test_ingest_needs_partitions(tmp_path: Path, cli) -> None:
    done = cli("ingest", tmp_path, "--db", tmp_path / "r.duckdb", code=2)
    assert "holds no trajectories/ partitions" in done.stderr
    (tmp_path / "loop").symlink_to(tmp_path / "loop")   # (resolving it raised RuntimeError: a traceback)
    done = cli("ingest", tmp_path / "loop", "--db", tmp_path / "r.duckdb", code=2)
    assert done.stderr.startswith(f"error: {tmp_path / 'loop'}: ") and done.stderr.count("\n") == 1
    (tmp_path / "parts").mkdir()   # a folder one letter off is named, as other paths are
    done = cli("ingest", tmp_path / "prts", "--db", tmp_path / "r.duckdb", code=2)
    assert done.stderr == f"error: {tmp_path / 'prts'}: no such folder (did you mean {str(tmp_path / 'parts')!r}?)\n"
    assert not (tmp_path / "r.duckdb").exists()


def test_engine_options_go_together(main_bundle: Path, tmp_path: Path, cli) -> None:
    shard = tmp_path / "x.jsonl"
    shard.write_text("")
    assert "--engine ray writes Parquet partitions" in cli("grade", shard, "--bench", main_bundle, "--engine", "ray",
                                                           code=2).stderr
    assert "--address, --cpus and --out go with --engine ray" in cli("grade", shard, "--bench", main_bundle, "--out",
                                                              tmp_path / "o", code=2).stderr
    # --db given with ray was ignored: the rows went to Parquet while the user looked in the DuckDB file
    done = cli("grade", shard, "--bench", main_bundle, "--engine", "ray", "--out", tmp_path / "o", "--db",
               tmp_path / "r.duckdb", code=2)
    assert "--db goes with --engine local" in done.stderr and not (tmp_path / "o").exists()
    for option in ("--address", "--out"):   # (--address '' reached ray.init as no address: a traceback; --out ''
        #                                        was the current folder, named '<input>')
        for engine in ("ray", "local"):
            done = cli("grade", shard, "--bench", main_bundle, "--engine", engine, "--out", tmp_path / "o", option, "",
                       code=2)
            assert done.stderr.startswith(f"error: Invalid value for '{option}'") and "an empty value" in done.stderr


def test_cpus_beside_an_address_is_refused_not_ignored(main_bundle: Path, tmp_path: Path, cli) -> None:
    # --cpus sizes a local Ray; beside --address Ray joined the cluster and the CPUs asked for were silently dropped
    shard = tmp_path / "x.jsonl"
    shard.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": []}\n')
    done = cli("grade", shard, "--bench", main_bundle, "--engine", "ray", "--address", "127.0.0.1:1", "--cpus", "2",
               "--out", tmp_path / "o", code=2)
    assert done.stderr == ("error: --cpus sizes the local Ray started without --address; a cluster at --address "
                           "grades on its own CPUs: give one of them; see `eebench grade --help`\n")
    assert not (tmp_path / "o").exists()


def test_without_ray_the_engine_says_how_to_install(main_bundle: Path, tmp_path: Path) -> None:
    shard = tmp_path / "x.jsonl"
    shard.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": []}\n')
    code = ("import sys; sys.modules['ray'] = None; from eebench.cli import main; "
            f"main([{str(shard)!r}, '--bench', {str(main_bundle)!r}, '--engine', 'ray', '--out', "
            f"{str(tmp_path / 'o')!r}], prog_name='eebench')")
    done = subprocess.run([sys.executable, "-c", code.replace("main([", "main(['grade', ")], capture_output=True,
                          text=True)
    assert done.returncode != 0 and "pip install 'eebench[ray]'" in done.stderr and "Traceback" not in done.stderr


@needs_ray
def test_ray_applies_checkpoint_files_and_grades_logged_runs_without_a_bench(tmp_path: Path, cli,
                                                                             ray_running) -> None:
    from tests.conftest import write_jsonl
    from tests.evaluator.test_coverage_store import CHECKPOINTS, logged

    cp = tmp_path / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    runs = write_jsonl(tmp_path / "logged.jsonl", [logged("text", ["Kitchen", "Hall", "Kitchen"])])
    local = tmp_path / "local.duckdb"
    cli("grade", runs, "--checkpoints", cp, "--db", local)
    out = tmp_path / "parquet"
    cli("grade", runs, "--checkpoints", cp, "--engine", "ray", "--cpus", "1", "--out", out)
    ingested = tmp_path / "ingested.duckdb"
    cli("ingest", out, "--db", ingested)
    with duckdb.connect(str(ingested), read_only=True) as con:
        hit = con.execute("SELECT checkpoint_id, hit_after_steps FROM checkpoints ORDER BY 1").fetchall()
    assert hit == [("cellar", None), ("kitchen", 1)]   # the given file's set, not the shipped ones
    for table in ORDER:
        assert _rows(ingested, table) == _rows(local, table)
    # a bad file is refused before Ray starts
    cp.write_text(CHECKPOINTS.replace("rules: [", "rules: [no_such_rule, "))
    bad = cli("grade", runs, "--checkpoints", cp, "--engine", "ray", "--out", tmp_path / "o", code=2)
    assert "unknown rule 'no_such_rule'" in bad.stderr and not (tmp_path / "o").exists()


def test_ingest_refuses_partitions_it_cannot_load(main_bundle: Path, tmp_path: Path, cli) -> None:
    """Partitions as the Ray tasks write them (COPY of each table), made here from a local grade, then damaged:
    each is one line naming what is wrong, exit 2, and the results file is not touched."""
    runs = tmp_path / "runs.jsonl"
    cli("play", main_bundle, "--agent", "random", "--seed", "0", "--out", runs)
    local = tmp_path / "local.duckdb"
    cli("grade", runs, "--bench", main_bundle, "--db", local)
    out = tmp_path / "parts"
    split = "random/seed-0/park2026-main/low"   # (the high-* instances in part 0, the others in part 1)
    with duckdb.connect(str(local), read_only=True) as con:   # (a grid_dag run's episodes: files of no rows)
        for table in ("trajectories", "steps", "episodes", "checkpoints"):
            (out / table).mkdir(parents=True)
            for part, half in enumerate(("<", ">=")):
                con.execute(f"COPY (SELECT * FROM {table} WHERE trajectory_id {half} '{split}') TO "
                            f"'{out / table / f'part-{part:05d}.parquet'}' (FORMAT parquet)")
    db = tmp_path / "r.duckdb"
    assert "loaded 27 trajectories" in cli("ingest", out, "--db", db).stdout
    (out / "checkpoints" / "part-00000.parquet").rename(tmp_path / "kept.parquet")
    (out / "checkpoints" / "part-00001.parquet").unlink()
    (out / "checkpoints").rmdir()   # a table's folder missing: the set is not whole
    failed = cli("ingest", out, "--db", db, code=2)
    assert failed.stderr == (f"error: {out}: has no checkpoints/ partitions beside trajectories/ (a run of `eebench "
                             "grade --engine ray` writes a folder per table: trajectories, steps, episodes, "
                             "checkpoints)\n")
    (out / "checkpoints").mkdir()
    (tmp_path / "kept.parquet").rename(out / "checkpoints" / "part-00000.parquet")
    # one table's part missing: its rows were lost without a word
    failed = cli("ingest", out, "--db", db, code=2)
    assert failed.stderr == (f"error: {out / 'trajectories' / 'part-00001.parquet'}: has no "
                             "checkpoints/part-00001.parquet beside it (a run of `eebench grade --engine ray` writes "
                             "each shard's part of every table, rows or none)\n")
    (out / "checkpoints" / "part-00002.parquet").write_bytes((out / "checkpoints" / "part-00000.parquet").read_bytes())
    (out / "checkpoints" / "part-00002.parquet").rename(out / "checkpoints" / "part-00001.parquet")
    (out / "steps" / "part-00002.parquet").write_bytes((out / "steps" / "part-00000.parquet").read_bytes())
    failed = cli("ingest", out, "--db", db, code=2)   # (a part left behind, the other way round)
    assert failed.stderr.startswith(f"error: {out / 'steps' / 'part-00002.parquet'}: has no "
                                    "trajectories/part-00002.parquet beside it")
    (out / "steps" / "part-00002.parquet").unlink()
    failed = cli("ingest", "foo://bar", "--db", tmp_path / "none.duckdb", code=2)
    assert failed.stderr == "error: foo://bar: cannot be opened: Unrecognized filesystem type in URI: foo://bar\n"
    assert not (tmp_path / "none.duckdb").exists()
    with duckdb.connect(str(local), read_only=True) as con:   # a part of other trajectories
        con.execute(f"COPY (SELECT * FROM checkpoints WHERE trajectory_id >= '{split}') TO "
                    f"'{out / 'checkpoints' / 'part-00001.parquet'}' (FORMAT parquet)")
        con.execute(f"COPY (SELECT * FROM steps WHERE trajectory_id < '{split}') TO "
                    f"'{out / 'steps' / 'part-00001.parquet'}' (FORMAT parquet)")
    failed = cli("ingest", out, "--db", db, code=2)
    assert failed.stderr == (f"error: {out / 'steps' / 'part-00001.parquet'}: has rows of steps of a trajectory "
                             f"that {out}/trajectories/part-00001.parquet does not hold\n")
    (out / "steps" / "part-00001.parquet").write_bytes((out / "steps" / "part-00000.parquet").read_bytes()[:-100])
    failed = cli("ingest", out, "--db", db, code=2)   # (cut short)
    assert failed.stderr.startswith(f"error: {out / 'steps' / 'part-00001.parquet'}: cannot be loaded: ")
    assert "Traceback" not in failed.stderr and failed.stderr.count("\n") == 1
    with duckdb.connect(str(local), read_only=True) as con:   # a part of another results schema
        con.execute(f"COPY (SELECT * EXCLUDE (visit_depth) FROM steps WHERE trajectory_id >= '{split}') TO "
                    f"'{out / 'steps' / 'part-00001.parquet'}' (FORMAT parquet)")
    failed = cli("ingest", out, "--db", db, code=2)
    assert failed.stderr == (f"error: {out / 'steps' / 'part-00001.parquet'}: has no column visit_depth: not a "
                             "partition of results schema 4 (written by another eebench version?)\n")
    (out / "trajectories" / "part-00001.parquet").write_text("junk")
    failed = cli("ingest", out, "--db", db, code=2)
    assert failed.stderr.startswith(f"error: {out / 'trajectories' / 'part-00001.parquet'}: cannot be loaded: ")
    assert "Traceback" not in failed.stderr and failed.stderr.count("\n") == 1
    assert _rows(db, "steps") == _rows(local, "steps")   # as the first ingest left it


@needs_ray
def test_ray_and_local_agree_on_skip_invalid(main_bundle: Path, tmp_path: Path, cli, ray_running) -> None:
    good = tmp_path / "good.jsonl"
    cli("play", main_bundle, "--agent", "random", "--seed", "0", "--out", good)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"eebench": "trajectory/1", "id": "x", "instance": "nope", "steps": [{"action": "up"}]}\n')
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    options = ("--bench", main_bundle, "--skip-invalid")
    # a shard of bad records only adds nothing; the others are graded
    local = cli("grade", good, bad, *options, "--db", tmp_path / "l.duckdb")
    ray = cli("grade", good, bad, *options, "--engine", "ray", "--cpus", "1", "--out", tmp_path / "o1")
    for done in (local, ray):
        assert "graded 27 trajectories" in done.stdout and f"{bad}:1: instance: " in done.stdout + done.stderr
        assert "nothing was graded" not in done.stdout + done.stderr
    # an empty file is an error --skip-invalid does not cover, in both
    local = cli("grade", good, empty, *options, "--db", tmp_path / "l2.duckdb", code=2)
    ray = cli("grade", good, empty, *options, "--engine", "ray", "--cpus", "1", "--out", tmp_path / "o2", code=2)
    assert local.stderr == ray.stderr and local.stderr.startswith(f"error: {empty}: is empty")
    assert not any((tmp_path / "o2").rglob("*.parquet"))


def _partitions(shards: list[Path], bench: Path, out: Path) -> None:
    """Write the partitions of `grade --engine ray` without Ray: each shard through the function its task runs."""
    from eebench.bundles import open_bench
    from eebench.checkpoints import library
    from eebench.engines.ray import _bench_payload, _grade_shard

    with open_bench(bench) as opened:
        payload = _bench_payload(opened)
        for index, shard in enumerate(shards):
            assert not _grade_shard({"index": index, "path": str(shard)}, payload, str(out), False,
                                    library(()))["problems"]


@pytest.fixture(scope="module")
def mixed_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    """A folder of grid_dag and rooms instances, and two shards of runs in both, with fewer episodes than
    trajectories."""
    from click.testing import CliRunner

    from eebench.cli import main

    tmp = tmp_path_factory.mktemp("mixed")
    runner = CliRunner()
    for args in (["generate", "park2026-main", "--out", tmp / "bench" / "park"],
                 ["generate", "grams2025-rooms", "--out", tmp / "bench" / "rooms"],
                 ["play", tmp / "bench" / "park", "--agent", "random", "--seeds", "0-1", "--out", tmp / "grid.jsonl"],
                 ["play", tmp / "bench" / "rooms", "--agent", "explorer", "--out", tmp / "rooms.jsonl"]):
        assert runner.invoke(main, list(map(str, args))).exit_code == 0
    grid = (tmp / "grid.jsonl").read_text().splitlines()
    rooms = (tmp / "rooms.jsonl").read_text().splitlines()[:2]
    shards = [tmp / "shard-0.jsonl", tmp / "shard-1.jsonl"]
    shards[0].write_text("\n".join([*grid[:30], rooms[0], *grid[30:]]) + "\n")
    shards[1].write_text("\n".join([rooms[1], *grid]).replace('"id":"', '"id":"1/') + "\n")
    return tmp / "bench", shards


def _same_rows(local: Path, ingested: Path) -> None:
    """Every table's rows in the order stored (when each shard was graded aside)."""
    for table in ("trajectories", "steps", "episodes", "checkpoints"):
        aside = " EXCLUDE (graded_at)" if table == "trajectories" else ""
        with duckdb.connect(str(local), read_only=True) as con:
            graded = con.execute(f"SELECT *{aside} FROM {table}").fetchall()
        with duckdb.connect(str(ingested), read_only=True) as con:
            assert con.execute(f"SELECT *{aside} FROM {table}").fetchall() == graded, table


def test_ingest_keeps_the_order_graded_in_every_table(mixed_runs: tuple[Path, list[Path]], tmp_path: Path,
                                                      cli) -> None:
    """`SELECT * FROM episodes` after `ingest` listed a run's episodes in the order of a hash table (DuckDB joined
    the fewer episode rows as the probe side), not in the order a local grade writes them."""
    bench, shards = mixed_runs
    local = tmp_path / "local.duckdb"
    cli("grade", *shards, "--bench", bench, "--db", local)
    _partitions(shards, bench, tmp_path / "parts")
    ingested = tmp_path / "ingested.duckdb"
    cli("ingest", tmp_path / "parts", "--db", ingested)
    _same_rows(local, ingested)
    with duckdb.connect(str(local), read_only=True) as con:
        assert 0 < con.execute("SELECT count(*) FROM episodes").fetchall()[0][0] < \
            con.execute("SELECT count(*) FROM trajectories").fetchall()[0][0]


def test_ingest_says_how_many_earlier_grades_it_replaced_as_grade_does(mixed_runs: tuple[Path, list[Path]],
                                                                       tmp_path: Path, cli) -> None:
    """Ids graded again replace their rows "as in grade", whose summary says how many (and which bundle's rows
    lose it); ingest replaced them silently."""
    bench, shards = mixed_runs
    db = tmp_path / "r.duckdb"
    graded = cli("grade", *shards, "--bench", bench, "--db", db).stdout.splitlines()[-1]
    count, steps = re.match(r"graded (\d+) trajectories \((\d+) steps\)", graded).groups()
    _partitions(shards, bench, tmp_path / "parts")
    done = cli("ingest", tmp_path / "parts", "--db", db)
    assert done.stdout == (f"loaded {count} trajectories ({steps} steps) from {tmp_path / 'parts'} into {db}; "
                           f"replaced the earlier grades of {count} trajectory ids\n")
    first = cli("ingest", tmp_path / "parts", "--db", tmp_path / "new.duckdb")
    assert "replaced" not in first.stdout


def test_ingest_takes_the_parts_in_the_order_of_their_shards(mixed_runs: tuple[Path, list[Path]], tmp_path: Path,
                                                             cli) -> None:
    """Parts were taken in the order of their names: shard 100000's part came before shard 99999's (and 10001's)."""
    bench, shards = mixed_runs
    local = tmp_path / "local.duckdb"
    cli("grade", *shards, "--bench", bench, "--db", local)
    parts = tmp_path / "parts"
    _partitions(shards, bench, parts)
    for table in ("trajectories", "steps", "episodes", "checkpoints"):
        (parts / table / "part-00000.parquet").rename(parts / table / "part-99999.parquet")
        (parts / table / "part-00001.parquet").rename(parts / table / "part-100000.parquet")
    ingested = tmp_path / "ingested.duckdb"
    cli("ingest", parts, "--db", ingested)
    _same_rows(local, ingested)


def test_ingest_refuses_a_column_of_another_type_or_a_null_where_none_goes(mixed_runs: tuple[Path, list[Path]],
                                                                          tmp_path: Path, cli) -> None:
    """A column of another type was cast by DuckDB and loaded without a word (n_steps of true: 1 step; t as text
    '0', '1' ...), or failed in the results file's insert, naming the results file, not the part."""
    import hashlib

    bench, shards = mixed_runs
    parts = tmp_path / "parts"
    _partitions(shards, bench, parts)
    db = tmp_path / "r.duckdb"
    cli("ingest", parts, "--db", db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    for table, change, said in [
            ("trajectories", "* REPLACE (true AS n_steps)", "has column n_steps (bool, not int32): not a partition of "
                                                            "results schema 4"),
            ("steps", "* REPLACE (CAST(t AS VARCHAR) AS t)", "has column t (string, not int32): not a partition"),
            ("episodes", "* REPLACE (1 AS trajectory_id)", "has column trajectory_id (int32, not string)"),
            ("steps", "* REPLACE (NULL::INTEGER AS t)", "has NULL in column t of steps, which holds none")]:
        part = parts / table / "part-00001.parquet"
        kept = part.read_bytes()
        with duckdb.connect() as con:
            con.execute(f"COPY (SELECT {change} FROM read_parquet('{part}')) TO '{tmp_path / 'x.parquet'}' "
                        "(FORMAT parquet)")
        (tmp_path / "x.parquet").replace(part)
        failed = cli("ingest", parts, "--db", db, code=2)
        assert failed.stderr.startswith(f"error: {part}: {said}") and failed.stderr.count("\n") == 1, failed.stderr
        part.write_bytes(kept)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before


def test_ingest_names_the_parts_of_a_repeated_id_and_a_folder_it_cannot_list(
        mixed_runs: tuple[Path, list[Path]], tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """A repeated id was named at its JSONL file and line in both copies (`s.jsonl:1 ... already read at
    s.jsonl:1`), not at the parts that hold it; a table's folder that cannot be listed was a traceback."""
    from eebench.engines import ray as engine

    bench, shards = mixed_runs
    parts = tmp_path / "parts"
    _partitions(shards, bench, parts)
    for table in ("trajectories", "steps", "episodes", "checkpoints"):   # a shard's parts given twice
        (parts / table / "part-00002.parquet").write_bytes((parts / table / "part-00000.parquet").read_bytes())
    failed = cli("ingest", parts, "--db", tmp_path / "r.duckdb", code=2)
    first = failed.stderr.splitlines()[0]
    assert first.startswith(f"error: {parts / 'trajectories' / 'part-00002.parquet'}: id: trajectory id ")
    assert first.endswith(f"was already read at {parts / 'trajectories' / 'part-00000.parquet'} (of {shards[0]}:1); "
                          "ids must be unique")
    (parts / "steps" / "part-00002.parquet").unlink()
    (parts / "steps" / "part-00002.parquet").mkdir()
    failed = cli("ingest", parts, "--db", tmp_path / "r.duckdb", code=2)
    assert failed.stderr == (f"error: {parts / 'steps' / 'part-00002.parquet'}: is not a file (a run of `eebench "
                             "grade --engine ray` writes each part as one Parquet file)\n")

    (parts / "steps" / "part-00002.parquet").rmdir()
    for table in ("trajectories", "episodes", "checkpoints"):
        (parts / table / "part-00002.parquet").unlink()
    real = engine._filesystem

    class Unlistable:   # (as root, a folder of mode 000 is listed all the same: the refusal is staged)
        def __init__(self, source):
            self.source = source

        def get_file_info(self, what):
            if getattr(what, "base_dir", "").endswith("/checkpoints"):
                raise PermissionError(13, "Cannot list directory")
            return self.source.get_file_info(what)

    monkeypatch.setattr(engine, "_filesystem", lambda uri: (Unlistable(real(uri)[0]), real(uri)[1]))
    with pytest.raises(eebench.InputError) as raised:
        engine.ingest(str(parts), tmp_path / "r.duckdb")
    assert str(raised.value) == f"{parts / 'checkpoints'}: cannot be read: [Errno 13] Cannot list directory"
    assert not (tmp_path / "r.duckdb").exists()


def test_ingest_refuses_a_part_damaged_past_its_first_row_group(mixed_runs: tuple[Path, list[Path]],
                                                               tmp_path: Path, cli) -> None:
    """DuckDB's error reading a later row group comes through pyarrow's stream as an OSError: it was a traceback."""
    import pyarrow.parquet as pq

    bench, shards = mixed_runs
    parts = tmp_path / "parts"
    _partitions(shards, bench, parts)
    part = parts / "steps" / "part-00000.parquet"
    with duckdb.connect() as con:
        con.execute(f"COPY (SELECT * FROM read_parquet('{part}')) TO '{tmp_path / 'p.parquet'}' "
                    "(FORMAT parquet, COMPRESSION uncompressed, ROW_GROUP_SIZE 500)")
    metadata = pq.ParquetFile(tmp_path / "p.parquet").metadata
    assert metadata.num_row_groups > 1
    start = metadata.row_group(1).column(0).data_page_offset
    data = bytearray((tmp_path / "p.parquet").read_bytes())
    data[start:start + 4000] = b"\xff" * 4000
    part.write_bytes(bytes(data))
    failed = cli("ingest", parts, "--db", tmp_path / "r.duckdb", code=2)
    assert failed.stderr.startswith(f"error: {part}: cannot be loaded: ") and failed.stderr.count("\n") == 1
    assert not (tmp_path / "r.duckdb").exists()


def test_parts_named_by_hand_sort_without_a_traceback() -> None:
    """`part-²` (a digit str.isdigit takes and int() refuses) was a ValueError; `part-1` and `part-01` tied."""
    from eebench.engines.ray import _shard_order

    names = ["part-10.parquet", "part-².parquet", "part-1.parquet", "part-01.parquet", "part-100000.parquet",
             "part-99999.parquet"]
    assert sorted(names, key=_shard_order) == ["part-².parquet", "part-01.parquet", "part-1.parquet",
                                               "part-10.parquet", "part-99999.parquet", "part-100000.parquet"]
    assert sorted(reversed(names), key=_shard_order) == sorted(names, key=_shard_order)   # (no tie left to order)
