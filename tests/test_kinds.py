"""The world-kind registry: every registered kind passes the same conformance checks through the CLI, and the
commands find a world by its documents' `env` (never by name)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.agents import play_episode
from eebench.bundles import publish
from eebench.documents import canonical_json, load_document, load_schema, schema_names, sha256_hex
from eebench.errors import InputError, one_of
from eebench.evaluator.store import query
from eebench.instances import check_instance_document, load_instance
from eebench.suites import resolve_spec, shipped_presets
from eebench.trajectories import Record, check_trajectory
from eebench.world.kinds import DEFAULT_ENV, check_env, envs, kind, kind_of, kinds
from tests.conftest import instance_doc, write_json, write_jsonl

KINDS = envs()


def exactly(text: str) -> str:
    return f"^{re.escape(text)}$"


def first_preset(env: str) -> str:
    """The first shipped preset of a world kind: every kind ships at least one."""
    return next(name for name, preset in shipped_presets().items() if kind_of(preset).env == env)


def assert_errors(result: Any, *lines: str) -> None:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr == "".join(f"error: {line}\n" for line in lines)


# -- the registry ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("env", KINDS)
def test_each_kind_is_complete(env: str) -> None:
    world = kind(env)
    assert world.env == env and kind(env) is world  # looked up once
    assert {world.instance_schema, world.generator_schema} <= set(schema_names())
    assert load_schema(world.instance_schema)["properties"]["env"] == {"const": env}
    assert load_schema(world.generator_schema)["properties"]["env"] == {"const": env}
    assert world.agents and all(isinstance(help_, str) and help_ for help_ in world.agents.values())
    assert world.statistics and any(kind_of(p) is world for p in shipped_presets().values())


@pytest.mark.parametrize("env", KINDS)
def test_eebench_schema_prints_each_kinds_schemas(cli: Any, env: str) -> None:
    for name in (f"instance.{env}", f"generator.{env}"):
        assert json.loads(cli("schema", name).stdout) == load_schema(name)


def test_the_trajectory_schema_knows_every_kind() -> None:
    assert set(load_schema("trajectory")["properties"]["env"]["enum"]) == {*KINDS, "logged"}


def test_the_default_kind_is_registered() -> None:
    assert DEFAULT_ENV in KINDS


def test_an_unknown_env_names_the_known_ones_and_a_close_one() -> None:
    known = one_of(KINDS)
    with pytest.raises(InputError, match=exactly(f"f.json: env: expected one of {known}, found 'grid-dag' "
                                                 "(did you mean 'grid_dag'?)")):
        check_env("grid-dag", "f.json")
    with pytest.raises(InputError, match=exactly(f"f.json: env: missing required field (expected {known})")):
        check_env(None, "f.json")
    with pytest.raises(InputError, match=r"^unknown world kind 'gridd_dag' \(did you mean 'grid_dag'\?\); known: "):
        kind("gridd_dag")


def test_kind_of_refuses_what_no_kind_made() -> None:
    with pytest.raises(TypeError, match="no instance or preset of a registered world kind"):
        kind_of("grid_dag")


# -- conformance: every kind round-trips through generate, validate, show and play ---------------------------

@pytest.mark.parametrize("env", KINDS)
def test_generated_instances_round_trip(env: str) -> None:
    world = kind(env)
    for instance in resolve_spec(first_preset(env), [0, 1]).instances():
        assert kind_of(instance) is world
        doc = instance.to_document()
        assert doc["env"] == env
        assert check_instance_document(json.loads(canonical_json(doc)), "mem") == instance
        assert world.from_document(doc).to_document() == doc


@pytest.mark.parametrize("env", KINDS)
def test_generate_validate_show_play_through_the_cli(cli: Any, tmp_path: Path, env: str) -> None:
    world, preset = kind(env), first_preset(env)
    out = tmp_path / "g"
    cli("generate", preset, "--seeds", "0-1", "--out", out)
    files = [out / preset / f"seed-{s}.json" for s in (0, 1)]
    for file in files:
        loaded = load_instance(file)
        assert loaded.kind is world and loaded.sha256 == sha256_hex(load_document(file))
        summary = f"instance/1 {preset}/seed-{file.stem[5:]}: {world.summary(loaded.instance)}"
        assert cli("validate", file).stdout == f"ok {file}: {summary}\n"
        assert cli("show", file).stdout == world.render_text(loaded.instance) + "\n"
    for agent in world.agents:
        runs = tmp_path / f"{agent}.jsonl"
        result = cli("play", out, "--agent", agent, "--seeds", "0-1", "--out", runs)
        records = [json.loads(line) for line in runs.read_text("utf-8").splitlines()]
        assert len(records) == 4 and result.stdout.startswith(f"played {agent} on 2 instances x 2 seeds (")
        assert {r["id"] for r in records} == {f"{agent}/seed-{s}/{preset}/seed-{i}" for s in (0, 1) for i in (0, 1)}
        assert all(check_trajectory(Record("mem", None, 0, r)) is r for r in records)
        assert cli("validate", runs).stdout == f"ok {runs}: 4 trajectory/1 records\n"


@pytest.mark.parametrize("env", KINDS)
def test_show_and_play_take_preset_names_as_generate_does(cli: Any, tmp_path: Path, env: str) -> None:
    world, preset = kind(env), first_preset(env)
    instances = list(resolve_spec(preset, [2, 3]).instances())
    shown = cli("show", preset, "--seeds", "2-3").stdout
    assert shown == "".join(f"== {i.id} ({env})\n{world.render_text(i)}\n\n" for i in instances)
    assert cli("show", preset).stdout == world.render_text(next(iter(resolve_spec(preset).instances()))) + "\n"
    agent = next(iter(world.agents))
    runs = tmp_path / "r.jsonl"
    cli("play", preset, "--agent", agent, "--instance-seeds", "2-3", "--seed", "5", "--out", runs)
    records = [json.loads(line) for line in runs.read_text("utf-8").splitlines()]
    assert [r["id"] for r in records] == [f"{agent}/seed-5/{i.id}" for i in instances]
    assert [r["instance_sha256"] for r in records] == [sha256_hex(i.to_document()) for i in instances]
    assert records == [play_episode(i, agent, 5, instance_sha256=sha256_hex(i.to_document())) for i in instances]


@pytest.mark.parametrize("env", KINDS)
def test_an_agent_of_another_kind_is_refused_by_name(cli: Any, tmp_path: Path, env: str) -> None:
    world = kind(env)
    out = tmp_path / "r.jsonl"
    assert_errors(cli("play", first_preset(env), "--agent", "oracel", "--out", out, code=None),
                  f"--agent: {env} worlds have the agents {one_of(world.agents)}, not 'oracel' (did you mean "
                  "'oracle'?)")
    foreign = {name: other.env for other in kinds() for name in other.agents if name not in world.agents}
    for name, other_env in foreign.items():
        assert_errors(cli("play", first_preset(env), "--agent", name, "--out", out, code=None),
                      f"--agent: {env} worlds have the agents {one_of(world.agents)}, not {name!r}; {name!r} plays "
                      f"{other_env} worlds")
    assert not out.exists()


# -- bundles through show and play -------------------------------------------------------------------------

TINY_SUITE = "eebench: suite/1\nname: tiny\nmembers:\n  - {presets: [high-small], seeds: [0, 1]}\n"


def test_show_and_play_read_a_bundle_archive_verified(cli: Any, tmp_path: Path) -> None:
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE, "utf-8")
    archive = tmp_path / "tiny-1.0.0.tar.gz"
    publish(str(suite), "1.0.0", archive)
    runs = tmp_path / "runs.jsonl"
    assert cli("play", archive, "--agent", "oracle", "--out", runs).stdout.startswith("played oracle on 2 instances (")
    ids = [json.loads(line)["instance"] for line in runs.read_text("utf-8").splitlines()]
    assert ids == ["tiny/high-small/seed-0", "tiny/high-small/seed-1"]
    shown = cli("show", "tiny/high-small/seed-1", "--bench", archive).stdout
    instance = list(resolve_spec(str(suite)).instances())[1]
    assert shown == kind_of(instance).render_text(instance) + "\n"
    assert cli("show", archive).stdout.startswith("== tiny/high-small/seed-0 (grid_dag)\n")
    # a tampered archive is refused as `grade --bench` refuses it, and nothing is played
    data = bytearray(archive.read_bytes())
    data[len(data) // 2] ^= 0xFF
    broken = tmp_path / "broken.tar.gz"
    broken.write_bytes(bytes(data))
    result = cli("play", broken, "--agent", "oracle", "--out", tmp_path / "x.jsonl", code=2)
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_play_seed_and_seeds_are_one_or_the_other(cli: Any, tmp_path: Path) -> None:
    assert_errors(cli("play", "high-small", "--agent", "random", "--seed", "1", "--seeds", "0-2",
                      "--out", tmp_path / "r.jsonl", code=None),
                  "--seed and --seeds: give one of them (--seed N is --seeds N)")
    assert_errors(cli("play", "high-small", "--agent", "random", "--seeds", "3-1", "--out", tmp_path / "r.jsonl",
                      code=None),
                  "--seeds: expected seeds like '0,1,2' or '0-9', found '3-1'")


def test_seeds_are_for_presets_only(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "t.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G"))
    assert_errors(cli("show", file, "--seeds", "1", code=None),
                  f"{file}: --seeds picks the seeds of presets; an instance, folder or bundle has its own")
    assert_errors(cli("show", "park2026-pasta", "--seeds", "1", code=None),
                  "park2026-pasta: a suite lists its own seeds; --seeds is for presets")


def test_play_names_its_instance_seeds_not_its_agent_seeds(cli: Any, tmp_path: Path) -> None:
    # play's --seeds are the agent's: the refusals of --instance-seeds named --seeds, the option that was fine
    file = write_json(tmp_path / "t.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G"))
    out = tmp_path / "r.jsonl"
    assert_errors(cli("play", "park2026-pasta", "--agent", "random", "--instance-seeds", "1", "--out", out, code=None),
                  "park2026-pasta: a suite lists its own seeds; --instance-seeds is for presets")
    assert_errors(cli("play", file, "--agent", "random", "--instance-seeds", "1", "--out", out, code=None),
                  f"{file}: --instance-seeds picks the seeds of presets; an instance, folder or bundle has its own")
    assert_errors(cli("play", "park2026-main/low-small/seed-0", "--agent", "random", "--instance-seeds", "1",
                      "--out", out, code=None),
                  "park2026-main/low-small/seed-0: --instance-seeds picks the seeds of presets; an instance has its own")
    assert not out.exists()


def test_an_unknown_name_suggests_a_close_one(cli: Any) -> None:
    assert_errors(cli("show", "high-smal", code=None),
                  "high-smal: no such file, shipped suite or preset (did you mean 'high-small'?) "
                  "(`eebench list` shows them)")


# -- the trajectory's env: optional, and when given, its instance's kind --------------------------------------

def _grid_bench(tmp_path: Path) -> Path:
    write_json(tmp_path / "bench/t.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G",
                                                       instance_id="t/line"))
    return tmp_path / "bench"


@pytest.mark.parametrize("env", [None, "grid_dag"])
def test_a_trajectory_without_env_or_with_its_instances_kind_grades(cli: Any, tmp_path: Path, env: str | None) -> None:
    doc: dict[str, Any] = {"eebench": "trajectory/1", "id": "a", "instance": "t/line",
                           "steps": [{"action": "right"}, {"action": "right"}]}
    if env:
        doc["env"] = env
    runs = write_jsonl(tmp_path / "r.jsonl", [doc])
    result = cli("grade", runs, "--bench", _grid_bench(tmp_path), "--db", tmp_path / "x.duckdb")
    assert result.stdout.startswith("graded 1 trajectories (2 steps)")


def test_a_trajectory_for_another_world_kind_is_one_clear_line(cli: Any, tmp_path: Path) -> None:
    other = next((env for env in KINDS if env != "grid_dag"), None)
    if other is None:
        pytest.skip("one world kind registered")
    doc = {"eebench": "trajectory/1", "id": "a", "instance": "t/line", "env": other, "steps": [{"action": "x"}]}
    runs = write_jsonl(tmp_path / "r.jsonl", [doc])
    assert_errors(cli("grade", runs, "--bench", _grid_bench(tmp_path), "--db", tmp_path / "x.duckdb", code=None),
                  f"{runs}:1: env: expected 'grid_dag' (the kind of instance 't/line') or no env, found {other!r}")
    assert not (tmp_path / "x.duckdb").exists()


def test_a_logged_trajectory_is_not_replayed(cli: Any, tmp_path: Path) -> None:
    doc = {"eebench": "trajectory/1", "id": "a", "instance": "t/line", "env": "logged", "steps": [{"action": "x"}]}
    runs = write_jsonl(tmp_path / "r.jsonl", [doc])
    cli("grade", runs, "--bench", _grid_bench(tmp_path), "--db", tmp_path / "x.duckdb")  # by coverage alone
    assert query(tmp_path / "x.duckdb", "SELECT env, metric_version, instance_sha256 FROM trajectories")[1] == [
        ("logged", "coverage/1", None)]


# -- suites and bundles by kind ------------------------------------------------------------------------------

def test_inline_presets_are_of_the_suites_env(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text("eebench: suite/1\nname: s\nenv: grid-dag\nmembers: [{presets: [p], seeds: [0]}]\n"
                     "presets:\n  p: {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}\n", "utf-8")
    with pytest.raises(InputError, match=exactly(f"{suite}: env: expected one of {one_of(KINDS)}, found 'grid-dag' "
                                                 "(did you mean 'grid_dag'?)")):
        resolve_spec(str(suite))
    suite.write_text(suite.read_text("utf-8").replace("grid-dag", "grid_dag"), "utf-8")
    (instance,) = resolve_spec(str(suite)).instances()
    assert kind_of(instance).env == "grid_dag"


@pytest.mark.parametrize("env", KINDS)
def test_statistics_are_the_kinds_measures(env: str) -> None:
    world = kind(env)
    for instance in resolve_spec(first_preset(env)).instances():
        measures = world.measures(instance)
        assert list(measures) == list(world.statistics)
        assert all(isinstance(v, int) and not isinstance(v, bool) for v in measures.values())


def test_every_kind_is_listed_with_its_agents(cli: Any) -> None:
    out = cli("list").stdout.splitlines()
    start = out.index("world kinds (an instance's env; eebench play INSTANCE --agent NAME):")
    for i, world in enumerate(kinds()):
        assert out[start + 1 + 2 * i] == f"  {world.env:<18} {world.title}"
        assert out[start + 2 + 2 * i] == f"  {'':<18} agents: {', '.join(world.agents)}"


# -- the rooms world end to end, and its bad input -----------------------------------------------------------

def rooms_doc(**changes: Any) -> dict[str, Any]:
    """Three rooms in a row, A - B - C, a ball in C."""
    doc: dict[str, Any] = {
        "eebench": "instance/1", "id": "hand/row", "env": "rooms", "rooms": ["A", "B", "C"], "start": "A",
        "doors": [{"name": "red", "between": ["A", "B"]}, {"name": "blue", "between": ["B", "C"]}],
        "balls": [{"name": "khaki", "room": "C", "reward": 7}], "episodes": 2, "door_budget": 2, "ball_limit": 1,
    }
    doc.update(changes)
    return doc


def test_a_rooms_instance_is_found_by_its_env(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "row.json", rooms_doc())
    loaded = load_instance(file)
    assert loaded.kind is kind("rooms") and loaded.instance.doors[1].between == ("B", "C")
    assert cli("validate", file).stdout == (f"ok {file}: instance/1 hand/row: 3 rooms, 2 doors, 1 balls, 2 episodes, "
                                            "door budget 2, ball limit 1\n")
    assert cli("show", file).stdout == kind("rooms").render_text(loaded.instance) + "\n"
    assert kind("rooms").measures(loaded.instance)["max_return"] == 7   # A -red-> B -blue-> C: 2 doors, the budget


def test_rooms_through_the_cli_generate_show_validate_grade(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "g"
    cli("generate", "grams2025-maze", "--out", out)
    index = json.loads((out / "index.json").read_text("utf-8"))
    assert [e["id"] for e in index["instances"]][:2] == ["grams2025-maze/maze-7x7/seed-0",
                                                          "grams2025-maze/maze-7x7/seed-1"]
    first = out / index["instances"][0]["path"]
    assert cli("show", first).stdout.startswith("grams2025-maze/maze-7x7/seed-0: 49 rooms, 48 doors, ")
    lines = cli("validate", *sorted(out.rglob("seed-*.json"))).stdout.splitlines()
    assert len(lines) == 6 and all(" rooms, " in line for line in lines)
    # a trajectory of the maze given as a grid_dag one is refused naming both kinds, nothing written
    doc = {"eebench": "trajectory/1", "id": "x", "instance": "grams2025-maze/maze-7x7/seed-0", "env": "grid_dag",
           "steps": [{"action": "red door"}]}
    runs = write_jsonl(tmp_path / "r.jsonl", [doc])
    assert_errors(cli("grade", runs, "--bench", out, "--db", tmp_path / "x.duckdb", code=None),
                  f"{runs}:1: env: expected 'rooms' (the kind of instance 'grams2025-maze/maze-7x7/seed-0') or no "
                  "env, found 'grid_dag'")
    assert not (tmp_path / "x.duckdb").exists()


@pytest.mark.parametrize("changes, line", [
    ({"doors": [{"name": "red", "between": ["A", "A"]}, {"name": "blue", "between": ["B", "C"]},
                {"name": "green", "between": ["A", "B"]}]},
     "doors[0].between: joins room 'A' to itself; a door joins two distinct rooms"),
    ({"doors": [{"name": "red", "between": ["A", "B"]}]},
     "rooms[2]: room 'C' cannot be reached from the start 'A' through the doors"),
    # a self-door that is a room's only door: the door is the problem named, not the room it leaves unreachable
    ({"doors": [{"name": "red", "between": ["A", "B"]}, {"name": "blue", "between": ["C", "C"]}]},
     "doors[1].between: joins room 'C' to itself; a door joins two distinct rooms"),
    ({"balls": [{"name": "khaki", "room": "D", "reward": 7}]},
     "balls[0].room: names unknown room 'D'"),
    ({"env": "room"}, "env: expected one of grid_dag or rooms, found 'room' (did you mean 'rooms'?)"),
    ({"episodes": 40_000}, "episodes: expected a number <= 32767, found 40000"),  # an episode index is a SMALLINT
    # an id part is a file or folder name, as for every kind
    ({"id": "hand/" + "x" * 251},
     "id: expected an id of letters, digits, '.', '_', '-' in '/'-separated parts (e.g. 'grams2025-rooms/5x5/seed-0'), "
     "a part at most 250 characters, 1000 in all, found \"hand/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx..."),
])
def test_bad_rooms_instances_are_one_clear_line(cli: Any, tmp_path: Path, changes: dict[str, Any], line: str) -> None:
    file = write_json(tmp_path / "row.json", rooms_doc(**changes))
    play = ["play", file, "--agent", "random", "--out", tmp_path / "r.jsonl"]
    for args in (["validate", file], ["show", file], play):
        assert_errors(cli(*args, code=None), f"{file}: {line}")
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("agent", ["random", "explorer", "oracle"])
def test_the_one_play_loop_plays_rooms_as_the_rooms_agents_module_does(agent: str) -> None:
    from eebench.agents.rooms import play_steps

    for instance in resolve_spec("4x4", [0, 1]).instances():
        steps = play_episode(instance, agent, 3)["steps"]
        assert steps == play_steps(instance, agent, 3)
        assert [s["episode"] for s in steps] == sorted(s["episode"] for s in steps)
        assert {s["episode"] for s in steps} == set(range(instance.episodes))


def test_the_oracle_earns_r_max_in_every_episode() -> None:
    from eebench.world.rooms import replay

    world = kind("rooms")
    for instance in resolve_spec("grams2025-maze").instances():
        steps = play_episode(instance, "oracle", 0)["steps"]
        replayed = replay(instance, [s["action"] for s in steps], [s["episode"] for s in steps])
        assert replayed.returns == [world.measures(instance)["max_return"]] * instance.episodes


# -- properties over every kind ------------------------------------------------------------------------------

@settings(max_examples=12, deadline=None)
@given(env=st.sampled_from(KINDS), seed=st.integers(0, 10_000), agent_seed=st.integers(0, 10_000))
def test_any_seed_of_any_kind_round_trips_and_plays_valid_trajectories(env: str, seed: int, agent_seed: int) -> None:
    world = kind(env)
    (instance,) = resolve_spec(first_preset(env), [seed]).instances()
    doc = instance.to_document()
    # the file eebench writes is the canonical JSON, read back as the same instance of the same kind
    assert check_instance_document(json.loads(canonical_json(doc)), "mem") == instance and kind_of(instance) is world
    measures = world.measures(instance)
    assert list(measures) == list(world.statistics)
    for agent in world.agents:
        trajectory = play_episode(instance, agent, agent_seed, instance_sha256=sha256_hex(doc))
        assert check_trajectory(Record("mem", None, 0, trajectory)) is trajectory
        assert trajectory["steps"] and all(isinstance(s["action"], str) for s in trajectory["steps"])
        if world.episodes is not None:   # a world of several episodes numbers them 0, 1, ... without gaps
            episodes = [s["episode"] for s in trajectory["steps"]]
            assert sorted(set(episodes)) == list(range(world.episodes(instance))) and episodes == sorted(episodes)


def test_show_and_play_take_spec_files_as_generate_does(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "gen.yaml"
    spec.write_text("eebench: generator/1\nenv: rooms\npresets:\n  tiny: {graph: maze, size: [2, 2], start: corner, "
                    "door_budget: 3, episodes: 2}\n", "utf-8")
    (instance,) = resolve_spec(str(spec), [4]).instances()
    assert instance.id == "tiny/seed-4" and len(instance.doors) == 3   # a 2x2 maze: a spanning tree of 4 rooms
    assert cli("show", spec, "--seeds", "4").stdout == kind("rooms").render_text(instance) + "\n"
    runs = tmp_path / "r.jsonl"
    cli("play", spec, "--agent", "explorer", "--instance-seeds", "4", "--out", runs)
    (record,) = [json.loads(line) for line in runs.read_text("utf-8").splitlines()]
    assert record["instance"] == "tiny/seed-4" and {s["episode"] for s in record["steps"]} == {0, 1}
    cli("generate", spec, "--seeds", "4", "--out", tmp_path / "g")   # index.json stands for its folder
    assert cli("show", tmp_path / "g/index.json").stdout == kind("rooms").render_text(instance) + "\n"
    assert_errors(cli("show", runs, code=None),
                  f"{runs}: eebench: expected an instance, suite or generator document (or a folder or bundle of "
                  "instances), found trajectory/1")


def test_convert_reads_actions_in_the_words_of_the_instances_kind(cli: Any, tmp_path: Path) -> None:
    bench = tmp_path / "bench"
    cli("generate", "grams2025-rooms", "--out", bench)
    log = tmp_path / "a.txt"
    log.write_text("<copper ball>\n>slate_gray ball\ngo up\n", "utf-8")
    for extra in ([], ["--bench", bench]):  # known from the shipped suites, or from the bench
        out = tmp_path / "c.jsonl"
        cli("convert", log, "--from", "actions", "--instance", "grams2025-rooms/4x4/seed-0", "--out", out, *extra)
        steps = json.loads(out.read_text("utf-8"))["steps"]
        assert [step["action"] for step in steps] == ["copper ball", "slate_gray ball", None]
    assert_errors(cli("convert", log, "--from", "actions", "--env", "rooms", "--actions", "grid", "--out",
                      tmp_path / "x.jsonl", code=None),
                  "--actions grid does not fit --env rooms, whose actions are --actions rooms")


def test_convert_refuses_an_env_that_is_not_the_known_instances_kind(cli: Any, tmp_path: Path) -> None:
    # grade would refuse the trajectory (its env is not its instance's kind); without a bench, its actions would
    # even be read in the wrong words (all null): so convert says so in one line and writes nothing
    bench = tmp_path / "bench"
    cli("generate", "grams2025-rooms", "--out", bench)
    log = tmp_path / "a.txt"
    log.write_text("<copper ball>\n", "utf-8")
    instance = "grams2025-rooms/4x4/seed-0"
    for extra, where in (([], "the shipped suites"), (["--bench", bench], str(bench))):
        out = tmp_path / f"c{len(extra)}.jsonl"
        assert_errors(cli("convert", log, "--from", "actions", "--instance", instance, "--env", "grid_dag", "--out",
                          out, *extra, code=None),
                      f"{log}: record 0: env: --env grid_dag does not fit instance '{instance}', a rooms instance "
                      f"in {where}; leave --env out (the instance's kind decides) or give --env rooms")
        assert not out.exists()
        cli("convert", log, "--from", "actions", "--instance", instance, "--env", "rooms", "--out", out, *extra)
        assert json.loads(out.read_text("utf-8"))["steps"] == [{"action": "copper ball", "raw": "<copper ball>"}]


def test_prompt_of_a_rooms_instance_is_refused_in_one_line(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "row.json", rooms_doc())
    assert_errors(cli("prompt", file, code=None),
                  f"{file}: env: prompt templates exist for grid_dag instances (Park et al., Appendix C.3), not for "
                  "rooms; `eebench play --observations` records the text a world shows")
