"""The eebench command line: every command on good input, and on bad input one `error:` line per problem, exit code 2,
no traceback and nothing half-written."""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
from pathlib import Path
from typing import Any

import pytest

from eebench.cli import main
from eebench.documents import canonical_json, load_document, sha256_hex
from eebench.suites import resolve_spec
from tests.conftest import instance_doc, write_json, write_jsonl

LOW_SMALL_0 = "eed3dee8e60cb5abf98d2edf9fd874c0b6fa9feddc61849561a4b6b3f58f81c3"  # tests/generator/test_determinism.py

SUITE = """\
eebench: suite/1
name: mine
description: a user suite with an inline preset, a shipped preset and two hand-made instances
members:
  - {presets: [tiny, high-small], seeds: [0, 1]}
  - {instance: pasta/custom-201, variants: [semantic, symbolic]}
  - {instance: hand.yaml}
presets:
  tiny: {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}
"""

GENERATOR = """\
eebench: generator/1
env: grid_dag
presets:
  tiny: {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}
  wide: {dag: {n_nodes: 5, option_count_probs: {1: 0.5, 2: 0.5}}, map: {density: 0.2, corridor_width: [2, 2]}}
"""


def tiny_doc(**changes: Any) -> dict[str, Any]:
    doc = instance_doc(["....", "...."], [0, 0], [("A", [1, 0], []), ("G", [3, 1], [["A"]])], "G",
                       instance_id="hand/tiny")
    doc.update(changes)
    return doc


def assert_errors(result: Any, *lines: str) -> None:
    """Exit code 2, nothing on stdout, and exactly these problems on stderr, one `error: ` line each."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == "".join(f"error: {line}\n" for line in lines)


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# -- list, schema ------------------------------------------------------------------------------------

def test_list_shows_suites_presets_and_hand_made_instances(cli: Any) -> None:
    out = cli("list").stdout.splitlines()
    assert out[0] == "suites (eebench generate NAME --out DIR):"
    assert "  park2026-main        27 instances  Park et al. (2026) main suite" in out
    assert "  park2026-pasta        8 instances  Park et al. (2026) Appendix E" in out
    assert "  high-large         8 nodes, density 0.4, corridors 1 wide" in out
    assert "  8x8-medium-small   4 nodes, 8x8, corridors 1-3 wide" in out
    assert out[-4:] == [f"  pasta/custom-20{i}" for i in range(1, 5)]


@pytest.mark.parametrize("kind, schema_id", [
    ("instance", "instance.grid_dag"), ("instance.grid_dag", "instance.grid_dag"), ("generator", "generator.grid_dag"),
    ("suite", "suite"), ("trajectory", "trajectory"), ("index", "index"), ("manifest", "manifest"),
    ("registry", "registry"),
])
def test_schema_prints_each_kind(cli: Any, kind: str, schema_id: str) -> None:
    schema = json.loads(cli("schema", kind).stdout)
    assert schema["$id"] == f"https://eebench.org/schemas/{schema_id}.json"
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("kind, close", [("trajectoy", "trajectory"), ("instanse", "instance")])
def test_schema_of_an_unknown_kind(cli: Any, kind: str, close: str) -> None:
    assert_errors(cli("schema", kind, code=None),
                  f"unknown schema {kind!r} (did you mean {close!r}?); "
                  "known: checkpoints, generator, generator.grid_dag, generator.rooms, index, instance, "
                  "instance.grid_dag, instance.rooms, manifest, registry, suite or trajectory")


def test_an_unknown_command_suggests_a_close_one(cli: Any) -> None:
    result = cli("generat", code=2)
    assert result.stderr == "error: no command 'generat' (did you mean 'generate'?); see `eebench --help`\n"


@pytest.mark.parametrize(("args", "message"), [
    (["convert", "x.json", "--format", "atif"],
     "No such option '--format'. (Did you mean one of: '--from', '--out', '--prompt'?); see `eebench convert --help`"),
    (["query"], "Missing argument 'SQL'; see `eebench query --help`"),
    (["list", "--bogus"], "No such option '--bogus'; see `eebench list --help`"),
    (["grade", "x.jsonl", "--workers", "two"], "Invalid value for '--workers': 'two' is not a count of processes "
                                               "(0 or auto: one per core); see `eebench grade --help`"),
    # click's parser raises these without the command: they pointed to `eebench --help`
    (["grade", "x.jsonl", "--db"], "Option '--db' requires an argument; see `eebench grade --help`"),
    (["grade", "x.jsonl", "--skip-invalid=1"], "Option '--skip-invalid' does not take a value; see `eebench grade "
                                               "--help`"),
])
def test_a_usage_error_is_one_line_with_exit_code_2(cli: Any, args: list[str], message: str) -> None:
    # click alone prints four lines (usage, hint, a blank line, the message)
    assert cli(*args, code=2).stderr == f"error: {message}\n"


def test_eebench_alone_prints_its_help(cli: Any) -> None:
    shown = cli(code=None)
    assert shown.exit_code in (0, 2)   # (click 8.2 exits 2)
    assert (shown.stdout + shown.stderr).startswith("Usage: eebench [OPTIONS] COMMAND [ARGS]...\n")
    assert "Start here:" in shown.stdout + shown.stderr


# -- generate ----------------------------------------------------------------------------------------

def test_generate_a_shipped_suite(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "bench"
    result = cli("generate", "park2026-main", "--out", out)
    assert result.stdout == f"wrote 27 instances to {out}/ (listed in {out}/index.json)\n" and result.stderr == ""
    index = json.loads((out / "index.json").read_text("utf-8"))
    assert index["eebench"] == "index/1" and len(index["instances"]) == 27
    assert index["source"]["kind"] == "suite" and index["source"]["name"] == "park2026-main"
    for entry in index["instances"]:
        data = (out / entry["path"]).read_bytes()
        # the file is its own canonical JSON, so sha256sum of the file is the instance's digest
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] == sha256_hex(json.loads(data))
        assert data == canonical_json(json.loads(data))
    assert hashlib.sha256((out / "park2026-main/low-small/seed-0.json").read_bytes()).hexdigest() == LOW_SMALL_0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench"]  # no temporary folders left


def test_generate_a_preset_at_seeds(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "p"
    cli("generate", "low-small", "--seeds", "0-2", "--out", out)
    index = json.loads((out / "index.json").read_text("utf-8"))
    assert [e["id"] for e in index["instances"]] == ["low-small/seed-0", "low-small/seed-1", "low-small/seed-2"]
    assert index["source"]["kind"] == "presets" and index["source"]["seeds"] == [0, 1, 2]
    # the same instance as in the suite but for its id
    first = load_document(out / "low-small/seed-0.json")
    suite_doc = next(iter(resolve_spec("park2026-main").instances())).to_document()
    assert {**first, "id": suite_doc["id"]} == suite_doc


def test_generate_seeds_lists_and_ranges(cli: Any, tmp_path: Path) -> None:
    cli("generate", "high-small", "--seeds", " 4-5, 0,4", "--out", tmp_path / "o")
    assert [e["id"] for e in json.loads((tmp_path / "o/index.json").read_text("utf-8"))["instances"]] == [
        "high-small/seed-0", "high-small/seed-4", "high-small/seed-5"]


def test_generate_defaults_to_seed_0_and_reads_the_environment(cli: Any, tmp_path: Path) -> None:
    cli("generate", "high-small", "--out", tmp_path / "a")
    assert (tmp_path / "a/high-small/seed-0.json").is_file()
    result = cli.runner.invoke(main, ["generate", "high-small", "--out", str(tmp_path / "b")],
                               env={"EEBENCH_GENERATE_SEEDS": "7"}, catch_exceptions=False)
    assert result.exit_code == 0 and (tmp_path / "b/high-small/seed-7.json").is_file()


def test_generate_a_user_suite_with_inline_presets(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "specs/mine.yaml"
    spec.parent.mkdir()
    spec.write_text(SUITE, "utf-8")
    write_json(tmp_path / "specs/hand.yaml", tiny_doc())  # JSON is YAML: a hand-made instance beside the suite
    out = tmp_path / "out"
    assert cli("generate", spec, "--out", out).stdout.startswith("wrote 7 instances")
    ids = [e["id"] for e in json.loads((out / "index.json").read_text("utf-8"))["instances"]]
    assert ids == ["mine/tiny/seed-0", "mine/tiny/seed-1", "mine/high-small/seed-0", "mine/high-small/seed-1",
                   "mine/custom-201/semantic", "mine/custom-201/symbolic", "mine/hand"]
    tiny = load_document(out / "mine/tiny/seed-0.json")
    assert (len(tiny["map"]), len(tiny["map"][0]), len(tiny["nodes"])) == (5, 5, 3)
    semantic, symbolic = load_document(out / "mine/custom-201/semantic.json"), \
        load_document(out / "mine/custom-201/symbolic.json")
    assert semantic["map"] == symbolic["map"] and semantic["names"] == "semantic" and symbolic["names"] == "symbolic"
    assert load_document(out / "mine/hand.json")["nodes"] == tiny_doc()["nodes"]


def test_generate_a_generator_file(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "gen.yaml"
    spec.write_text(GENERATOR, "utf-8")
    cli("generate", spec, "--seeds", "0,3", "--out", tmp_path / "o")
    index = json.loads((tmp_path / "o/index.json").read_text("utf-8"))
    assert [e["id"] for e in index["instances"]] == ["tiny/seed-0", "tiny/seed-3", "wide/seed-0", "wide/seed-3"]
    assert sorted(index["source"]["presets"]) == ["tiny", "wide"]


def test_generate_twice_gives_the_same_bytes_and_replaces_its_earlier_output(cli: Any, tmp_path: Path) -> None:
    cli("generate", "park2026-pasta", "--out", tmp_path / "a")
    cli("generate", "park2026-pasta", "--out", tmp_path / "b")
    assert tree(tmp_path / "a") == tree(tmp_path / "b")
    cli("generate", "high-small", "--out", tmp_path / "a")
    assert sorted(tree(tmp_path / "a")) == ["high-small/seed-0.json", "index.json"]


# -- show --------------------------------------------------------------------------------------------

def test_show_a_file_and_an_id_in_a_folder(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "t.json", tiny_doc())
    expected = ("hand/tiny: 4x2, budget 100, goal G\n"
                "S a . .\n"
                ". . . G\n"
                "nodes:\n"
                "  a A at [1, 0] requires none\n"
                "  G G at [3, 1] requires A\n")
    assert cli("show", file).stdout == expected
    assert cli("show", "hand/tiny", "--bench", tmp_path).stdout == expected
    cli("generate", "park2026-main", "--out", tmp_path / "g")
    shown = cli("show", "park2026-main/low-small/seed-0", "--bench", tmp_path / "g").stdout.splitlines()
    assert shown[:4] == ["park2026-main/low-small/seed-0: 7x6, budget 75, goal 0W4G",
                         "# # # # # # #", "# # # # b . #", "# G . . . . #"]


def test_show_an_unknown_id(cli: Any, tmp_path: Path) -> None:
    cli("generate", "high-small", "--seeds", "0-1", "--out", tmp_path / "g")
    assert_errors(cli("show", "high-small/seed-2", "--bench", tmp_path / "g", code=None),
                  f"no instance 'high-small/seed-2' under {tmp_path / 'g'} (did you mean 'high-small/seed-1'?)")


# -- play --------------------------------------------------------------------------------------------

def test_play_a_folder(cli: Any, tmp_path: Path) -> None:
    cli("generate", "park2026-pasta", "--out", tmp_path / "g")
    out = tmp_path / "runs/oracle.jsonl"
    result = cli("play", tmp_path / "g", "--agent", "oracle", "--seed", "1", "--out", out)
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    steps = sum(len(r["steps"]) for r in records)
    assert result.stdout == f"played oracle on 8 instances ({steps} steps) -> {out}\n"
    index = {e["id"]: e["sha256"] for e in json.loads((tmp_path / "g/index.json").read_text("utf-8"))["instances"]}
    assert [r["instance"] for r in records] == sorted(index)
    assert all(r["instance_sha256"] == index[r["instance"]] for r in records)
    assert all(r["id"] == f"oracle/seed-1/{r['instance']}" for r in records)
    assert cli("validate", out).stdout == f"ok {out}: 8 trajectory/1 records\n"


def test_play_to_standard_output(cli: Any, tmp_path: Path) -> None:
    # `eebench play ... --out - | eebench grade - ...`: the trajectories own stdout, the summary goes to stderr
    file = write_json(tmp_path / "t.json", tiny_doc())
    cli("play", file, "--agent", "frontier", "--seeds", "0-2", "--out", tmp_path / "r.jsonl")
    piped = cli("play", file, "--agent", "frontier", "--seeds", "0-2", "--out", "-")
    assert piped.stdout == (tmp_path / "r.jsonl").read_text("utf-8")
    assert piped.stderr.startswith("played frontier on 1 instances x 3 seeds (") and piped.stderr.endswith(" -> -\n")
    assert not Path("-").exists()   # (no file named - where the command ran)


def test_play_a_single_file_with_observations(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "t.json", tiny_doc())
    out = tmp_path / "r.jsonl"
    cli("play", file, "--agent", "frontier", "--out", out, "--observations")
    (record,) = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert record["instance"] == "hand/tiny" and record["instance_sha256"] == sha256_hex(tiny_doc())
    assert all(step["observation"].startswith("You moved ") for step in record["steps"])


def test_play_seed_has_the_limit_of_seeds(cli: Any, tmp_path: Path) -> None:
    """--seed N is --seeds N: both at most 2^63-1 (--seed took any integer, --seeds refused it)."""
    file = write_json(tmp_path / "t.json", tiny_doc())
    out = tmp_path / "r.jsonl"
    assert_errors(cli("play", file, "--agent", "random", "--seed", str(2 ** 63), "--out", out, code=None),
                  f"Invalid value for '--seed': {2 ** 63} is not in the range 0<=x<={2 ** 63 - 1}; "
                  "see `eebench play --help`")
    assert_errors(cli("play", file, "--agent", "random", "--seeds", str(2 ** 63), "--out", out, code=None),
                  f"--seeds: seeds are at most 2^63-1, found '{2 ** 63}'")
    assert not out.exists()


@pytest.mark.parametrize("agent", ["random", "frontier", "oracle"])
def test_play_is_deterministic_per_seed(cli: Any, tmp_path: Path, agent: str) -> None:
    cli("generate", "park2026-8x8", "--out", tmp_path / "g")
    for name in ("a", "b"):
        cli("play", tmp_path / "g", "--agent", agent, "--seed", "3", "--out", tmp_path / f"{name}.jsonl")
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


# -- validate ----------------------------------------------------------------------------------------

def test_validate_every_kind(cli: Any, tmp_path: Path) -> None:
    cli("generate", "high-small", "--out", tmp_path / "g")
    spec = tmp_path / "gen.yaml"
    spec.write_text(GENERATOR, "utf-8")
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE, "utf-8")
    write_json(tmp_path / "hand.yaml", tiny_doc())
    trajectory = {"eebench": "trajectory/1", "id": "r/1", "instance": "hand/tiny", "steps": [{"action": "up"}]}
    files = [tmp_path / "g/high-small/seed-0.json", tmp_path / "hand.yaml", spec, suite, tmp_path / "g/index.json",
             write_json(tmp_path / "one.json", trajectory),
             write_jsonl(tmp_path / "many.jsonl", [trajectory | {"id": f"r/{i}"} for i in (2, 3, 4)])]
    assert cli("validate", *files).stdout.splitlines() == [
        f"ok {files[0]}: instance/1 high-small/seed-0: 4x3, 4 nodes, budget 27",
        f"ok {files[1]}: instance/1 hand/tiny: 4x2, 2 nodes, budget 100",
        f"ok {files[2]}: generator/1: 2 presets (tiny, wide)",
        f"ok {files[3]}: suite/1 mine: 7 instances",
        f"ok {files[4]}: index/1",
        f"ok {files[5]}: trajectory/1 r/1: 1 steps",
        f"ok {files[6]}: 3 trajectory/1 records",
    ]


def test_validate_the_shipped_specs(cli: Any) -> None:
    root = Path(__file__).parent.parent / "eebench/specs"
    files = sorted(root.rglob("*.yaml"))
    assert len(files) == 12 + len(list((root / "checkpoints").rglob("*.yaml")))
    assert all(line.startswith("ok ") for line in cli("validate", *files).stdout.splitlines())


def test_validate_reports_every_problem_of_every_file(cli: Any, tmp_path: Path) -> None:
    good = write_json(tmp_path / "good.json", tiny_doc())
    bad_instance = write_json(tmp_path / "bad.json", tiny_doc(budget=0, goal=7))
    bad_lines = tmp_path / "runs.jsonl"
    bad_lines.write_text(
        '{"eebench": "trajectory/1", "id": "a", "instance": "b", "steps": [{"action": "up"}]}\n'
        '{"eebench": "trajectory/2", "id": "a", "instance": "b", "steps": []}\n'
        "\n"
        '{"eebench": "trajectory/1", "id": "c", "steps": [{"action": 5}]}\n'
        "{not json\n"
        '{"eebench": "trajectory/1", "id": "d", "instance": "b", "steps": [{"action": "up", "tokens_in": -1}]}\n',
        "utf-8")
    result = cli("validate", good, bad_instance, bad_lines, code=2)
    assert result.stdout == f"ok {good}: instance/1 hand/tiny: 4x2, 2 nodes, budget 100\n"
    assert result.stderr == "".join(f"error: {line}\n" for line in [
        f"{bad_instance}: budget: expected a number >= 1, found 0",
        f"{bad_instance}: goal: expected string, found an integer 7",
        f"{bad_lines}:2: eebench: trajectory/2 is newer than this eebench reads (trajectory/1); upgrade eebench",
        f"{bad_lines}:4: instance: missing required field",
        f"{bad_lines}:4: steps[0].action: expected string or null, found an integer 5",
        f"{bad_lines}:5: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
        f"{bad_lines}:6: steps[0].tokens_in: expected a number >= 0, found -1",
    ])


# -- bad input ----------------------------------------------------------------------------------------

def test_malformed_yaml_names_file_and_line(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("eebench: suite/1\nname: x\nmembers:\n  - {presets: [low-small], seeds: [0]\n", "utf-8")
    for args in (["generate", spec, "--out", tmp_path / "o"], ["validate", spec]):
        assert_errors(cli(*args, code=None), f"{spec}:5: malformed YAML: expected ',' or '}}', but got '<stream end>'")
    assert not (tmp_path / "o").exists()


def test_malformed_json_names_file_and_line(cli: Any, tmp_path: Path) -> None:
    file = tmp_path / "t.json"
    file.write_text('{"eebench": "instance/1",\n "id": 3,\n}', "utf-8")
    line = f"{file}:3: malformed JSON: Expecting property name enclosed in double quotes (column 1)"
    play = ["play", file, "--agent", "random", "--out", tmp_path / "r.jsonl"]
    for args in (["validate", file], ["show", file], play):
        assert_errors(cli(*args, code=None), line)
    assert not (tmp_path / "r.jsonl").exists()


def test_play_refuses_a_folder_with_a_malformed_file_and_writes_nothing(cli: Any, tmp_path: Path) -> None:
    cli("generate", "high-small", "--out", tmp_path / "g")
    (tmp_path / "g/broken.yaml").write_text("eebench: [\n", "utf-8")
    out = tmp_path / "new/runs.jsonl"
    assert_errors(cli("play", tmp_path / "g", "--agent", "oracle", "--out", out, code=None),
                  f"{tmp_path / 'g/broken.yaml'}:2: malformed YAML: expected the node content, "
                  "but found '<stream end>'")
    assert not (tmp_path / "new").exists()


def test_play_refuses_an_invalid_instance_in_a_folder_and_keeps_the_earlier_output(cli: Any, tmp_path: Path) -> None:
    write_json(tmp_path / "g/a.json", tiny_doc(id="a/ok"))
    write_json(tmp_path / "g/b.json", tiny_doc(id="b/bad", start=[3, 1]))
    out = tmp_path / "runs.jsonl"
    out.write_text("earlier\n", "utf-8")
    assert_errors(cli("play", tmp_path / "g", "--agent", "oracle", "--out", out, code=None),
                  f"{tmp_path / 'g/b.json'}: nodes[1].pos: [3, 1] is the start cell, which carries no node")
    assert out.read_text("utf-8") == "earlier\n" and sorted(p.name for p in tmp_path.iterdir()) == ["g", "runs.jsonl"]


@pytest.mark.parametrize("changes, lines", [
    ({"budgte": 5}, ["{file}: budgte: unknown field (did you mean 'budget'?)"]),
    ({"eebench": "instance/2"}, ["{file}: eebench: instance/2 is newer than this eebench reads (instance/1); "
                                 "upgrade eebench"]),
    ({"start": [1, 0]}, ["{file}: nodes[0].pos: [1, 0] is the start cell, which carries no node"]),
    ({"goal": "A"}, ["{file}: nodes[1]: 'G' is a sink but not the goal; the goal must be the one sink",
                     "{file}: goal: 'A' is required by ['G']; the goal must be a sink"]),
])
def test_schema_semantic_and_version_violations_in_instances(cli: Any, tmp_path: Path, changes: dict[str, Any],
                                                             lines: list[str]) -> None:
    file = write_json(tmp_path / "t.json", tiny_doc(**changes))
    expected = [line.format(file=file) for line in lines]
    assert_errors(cli("validate", file, code=None), *expected)
    assert_errors(cli("show", file, code=None), *expected)
    assert_errors(cli("play", file, "--agent", "oracle", "--out", tmp_path / "r.jsonl", code=None), *expected)
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("spec, line", [
    ("low-smal", "low-smal: no such file, shipped suite or preset (did you mean 'low-small'?) "
                 "(`eebench list` shows them)"),
    ("park2026-mian", "park2026-mian: no such file, shipped suite or preset (did you mean 'park2026-main'?) "
                      "(`eebench list` shows them)"),
])
def test_unknown_suite_and_preset_names(cli: Any, tmp_path: Path, spec: str, line: str) -> None:
    assert_errors(cli("generate", spec, "--out", tmp_path / "o", code=None), line)
    assert not (tmp_path / "o").exists()


def test_unknown_presets_and_instances_in_a_suite_file(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {presets: [tiny, lo-small], seeds: [0]}\n"
                    "  - {instance: pasta/custom-2O1}\n", "utf-8")
    assert_errors(cli("generate", spec, "--out", tmp_path / "o", code=None),
                  f"{spec}: members[0].presets[0]: unknown preset 'tiny'",
                  f"{spec}: members[0].presets[1]: unknown preset 'lo-small' (did you mean 'low-small'?)",
                  f"{spec}: members[1].instance: no file '{tmp_path / 'pasta/custom-2O1'}' and no shipped instance "
                  "'pasta/custom-2O1' (did you mean 'pasta/custom-201'?)")


def test_impossible_generator_parameters(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "g.yaml"
    spec.write_text("""\
eebench: generator/1
env: grid_dag
presets:
  crowded: {dag: {n_nodes: 10}, map: {size: [3, 3], corridor_width: [1, 1]}}
  dense: {dag: {n_nodes: 4}, map: {density: 1.0, corridor_width: [1, 1]}}
  odd: {dag: {n_nodes: 4, option_count_probs: {1: 0.5, 2: 0.4}}, map: {density: 0.5, corridor_width: [3, 1]}}
  both: {dag: {n_nodes: 4}, map: {density: 0.5, size: [4, 4], corridor_width: [1, 1]}}
  few: {dag: {n_nodes: 4}, map: {density: 0.5, corridor_width: [1, 1]}, names: [a, b]}
  far: {dag: {n_nodes: 8}, map: {density: 0.0004, corridor_width: [1, 1]}}
  flat: {dag: {n_nodes: 64}, map: {density: 0.1, aspect_ratio: 100, corridor_width: [1, 1]}}
  tiny: {dag: {n_nodes: 4}, map: {density: 1.0e-320, corridor_width: [1, 1]}}
  thin: {dag: {n_nodes: 4}, map: {density: 0.5, aspect_ratio: 1.0e-320, corridor_width: [1, 1]}}
  typo: {dag: {n_nodes: 4, n_node: 3}, map: {density: 0.5, corridor_width: [1, 1]}}
""", "utf-8")
    assert_errors(cli("generate", spec, "--out", tmp_path / "o", code=None),
                  f"{spec}: presets.typo.dag.n_node: unknown field (did you mean 'n_nodes'?)")
    spec.write_text(spec.read_text("utf-8").replace("  typo:", "# typo:"), "utf-8")
    assert_errors(cli("generate", spec, "--out", tmp_path / "o", code=None),
                  f"{spec}: presets.crowded.map: a 3x3 map cannot hold 10 nodes and the start on distinct cells",
                  f"{spec}: presets.dense.map: a 2x2 map cannot hold 4 nodes and the start on distinct cells",
                  f"{spec}: presets.odd.dag.option_count_probs: probabilities sum to 0.9, expected 1",
                  f"{spec}: presets.odd.map.corridor_width: min 3 is larger than max 1",
                  f"{spec}: presets.both.map: give exactly one of density (the size follows) or size [width, height]",
                  f"{spec}: presets.few.names: 2 semantic names for 4 nodes",
                  f"{spec}: presets.far.map: a 142x141 map is larger than an instance may be (100x100); raise the "
                  "density or bring the aspect ratio closer to 1",
                  f"{spec}: presets.flat.map: a 214x3 map is larger than an instance may be (100x100); raise the "
                  "density or bring the aspect ratio closer to 1",
                  # (both ended in an OverflowError: no float holds their number of cells)
                  f"{spec}: presets.tiny.map: a 1000000x1000000 map is larger than an instance may be (100x100); "
                  "raise the density or bring the aspect ratio closer to 1",
                  f"{spec}: presets.thin.map: a 1x1000000 map is larger than an instance may be (100x100); raise "
                  "the density or bring the aspect ratio closer to 1")
    assert not (tmp_path / "o").exists()


def test_a_budget_no_map_can_meet_is_refused_and_nothing_is_left(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "g.yaml"
    spec.write_text("eebench: generator/1\nenv: grid_dag\npresets:\n"
                    "  broke: {dag: {n_nodes: 6}, map: {density: 0.1, corridor_width: [1, 1]}, budget_alpha: 0.05}\n",
                    "utf-8")
    # located as every other problem of a spec: its file and the preset's field path
    assert_errors(cli("generate", spec, "--out", tmp_path / "new/sub/o", code=None),
                  f"{spec}: presets.broke: preset 'broke', seed 0: in 200 maps the task never fits the budget; raise "
                  "budget_alpha or the corridor width")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


def test_a_failed_generate_leaves_an_earlier_output_untouched(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "o"
    cli("generate", "high-small", "--out", out)
    before = tree(out)
    spec = tmp_path / "g.yaml"
    spec.write_text("eebench: generator/1\nenv: grid_dag\npresets:\n"
                    "  ok: {dag: {n_nodes: 3}, map: {size: [4, 4], corridor_width: [1, 1]}}\n"
                    "  broke: {dag: {n_nodes: 6}, map: {density: 0.1, corridor_width: [1, 1]}, budget_alpha: 0.05}\n",
                    "utf-8")
    cli("generate", spec, "--out", out, code=2)  # 'ok' is generated first, then 'broke' fails
    assert tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml", "o"]


def test_generate_never_overwrites_a_folder_it_did_not_write(cli: Any, tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes/thesis.tex").write_text("precious", "utf-8")
    assert_errors(cli("generate", "high-small", "--out", tmp_path / "notes", code=None),
                  f"{tmp_path / 'notes'}: exists and is not an eebench output folder (no index.json); "
                  "choose an empty or new folder")
    assert tree(tmp_path / "notes") == {"thesis.tex": b"precious"}


@pytest.mark.parametrize("seeds, line", [
    ("3-1", "--seeds: expected seeds like '0,1,2' or '0-9', found '3-1'"),
    ("a", "--seeds: expected seeds like '0,1,2' or '0-9', found 'a'"),
    ("0,,1", "--seeds: expected seeds like '0,1,2' or '0-9', found '0,,1'"),
    ("-1", "--seeds: expected seeds like '0,1,2' or '0-9', found '-1'"),
    ("1.5", "--seeds: expected seeds like '0,1,2' or '0-9', found '1.5'"),
])
def test_bad_seeds(cli: Any, tmp_path: Path, seeds: str, line: str) -> None:
    assert_errors(cli("generate", "low-small", "--seeds", seeds, "--out", tmp_path / "o", code=None), line)
    assert not (tmp_path / "o").exists()


def test_seeds_are_for_presets_not_suites(cli: Any, tmp_path: Path) -> None:
    assert_errors(cli("generate", "park2026-main", "--seeds", "1", "--out", tmp_path / "o", code=None),
                  "park2026-main: a suite lists its own seeds; --seeds is for presets")


@pytest.mark.parametrize("text, kind", [
    ("eebench: suite/2\nname: x\nmembers: []\n", "suite/2 is newer than this eebench reads (suite/1)"),
    ("eebench: generator/9\n", "generator/9 is newer than this eebench reads (generator/1)"),
])
def test_future_versions_of_specs(cli: Any, tmp_path: Path, text: str, kind: str) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(text, "utf-8")
    for args in (["generate", spec, "--out", tmp_path / "o"], ["validate", spec]):
        assert_errors(cli(*args, code=None), f"{spec}: eebench: {kind}; upgrade eebench")


def test_generate_refuses_a_document_that_is_no_spec(cli: Any, tmp_path: Path) -> None:
    file = write_json(tmp_path / "t.json", tiny_doc())
    assert_errors(cli("generate", file, "--out", tmp_path / "o", code=None),
                  f"{file}: eebench: expected a suite or generator spec, found instance/1")


def test_missing_files(cli: Any, tmp_path: Path) -> None:
    assert_errors(cli("validate", tmp_path / "nope.json", tmp_path, code=None),
                  f"{tmp_path / 'nope.json'}: no such file", f"{tmp_path}: is a folder, expected a file")
    assert_errors(cli("show", tmp_path / "nope.json", code=None), f"{tmp_path / 'nope.json'}: no such file")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_errors(cli("play", empty, "--agent", "oracle", "--out", tmp_path / "r.jsonl", code=None),
                  f"{empty}: holds no instance files")


# -- publish, verify, bundles ------------------------------------------------------------------------

PASTA_DIGEST = "30d6f53be48d5e97932d83c9eba92ef634269febf16f047221f566f169ea50c7"  # tests/test_bundles.py


def test_publish_verify_and_list_a_shipped_bundle(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "pasta"
    assert cli("publish", "park2026-pasta", "--version", "1.0.0", "--out", out).stdout == (
        f"published park2026-pasta 1.0.0 (8 instances) to {out}, digest {PASTA_DIGEST}\n")
    assert cli("publish", "park2026-pasta", "--version", "1.0.0", "--out", out).stdout == (
        f"{out} already holds park2026-pasta 1.0.0 (8 instances) with these bytes, digest {PASTA_DIGEST}; "
        "nothing written\n")
    intact = f"intact: park2026-pasta 1.0.0, 8 instances, digest {PASTA_DIGEST}\n"
    assert cli("verify", out).stdout == intact
    assert cli("verify", out, "--digest", PASTA_DIGEST).stdout == intact
    cli("publish", "park2026-pasta", "--version", "1.0.0", "--out", tmp_path / "pasta.tar.gz")
    assert cli("verify", tmp_path / "pasta.tar.gz").stdout == intact
    assert cli("validate", out / "manifest.json").stdout == (
        f"ok {out / 'manifest.json'}: manifest/1 park2026-pasta 1.0.0: 8 instances, digest {PASTA_DIGEST} "
        "(`eebench verify` checks the files)\n")
    assert cli("bundles", tmp_path).stdout.splitlines() == [
        f"bundles in {tmp_path} (eebench verify PATH checks one):",
        f"  park2026-pasta     1.0.0       8 instances  digest {PASTA_DIGEST}  {out}  (the shipped digest)",
        f"  park2026-pasta     1.0.0       8 instances  digest {PASTA_DIGEST}  {tmp_path / 'pasta.tar.gz'}  "
        "(the shipped digest)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pasta", "pasta.tar.gz"]  # no temporary files left


def test_bundles_lists_the_shipped_versions_and_how_to_write_them(cli: Any, tmp_path: Path) -> None:
    out = cli("bundles").stdout.splitlines()
    assert out[0] == "shipped bundles (eebench publish NAME --version VERSION --out DIR writes one):"
    assert out[5:7] == [f"  park2026-pasta     1.0.0       8 instances  digest {PASTA_DIGEST}",
                        "    eebench publish park2026-pasta --version 1.0.0 --out park2026-pasta-1.0.0"]
    assert [line.split()[0] for line in out[1::2]] == ["park2026-main", "park2026-8x8", "park2026-pasta",
                                                       "grams2025-rooms", "grams2025-maze"]
    assert cli("bundles", tmp_path).stdout == f"no bundles in {tmp_path}\n"


def test_verify_prints_each_changed_missing_or_extra_file(cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "pasta"
    cli("publish", "park2026-pasta", "--version", "1.0.0", "--out", out)
    manifest = json.loads((out / "manifest.json").read_text("utf-8"))
    gone, edited = (out / e["path"] for e in manifest["instances"][:2])
    gone.unlink()
    edited.write_bytes(edited.read_bytes() + b" ")
    (out / "extra.json").write_text("{}", "utf-8")
    sha = hashlib.sha256(edited.read_bytes()).hexdigest()
    assert_errors(cli("verify", out, code=None),
                  f"{gone}: missing (listed in manifest.json)",
                  f"{edited}: changed (sha256 {sha[:12]}..., manifest.json lists "
                  f"{manifest['instances'][1]['sha256'][:12]}...)",
                  f"{out / 'extra.json'}: extra (not listed in manifest.json)",
                  f"{out}: verification failed (3 problems)")


def test_publish_and_verify_bad_input_is_one_line_and_nothing_is_written(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {presets: [lo-small], seeds: [0]}\n", "utf-8")
    out = tmp_path / "out/b"
    assert_errors(cli("publish", spec, "--version", "1.0.0", "--out", out, code=None),
                  f"{spec}: members[0].presets[0]: unknown preset 'lo-small' (did you mean 'low-small'?)")
    assert_errors(cli("publish", "park2026-main", "--version", "1", "--out", out, code=None),
                  "--version: expected X.Y.Z, three whole numbers (e.g. 1.0.0), found '1'")
    spec.write_text("eebench: suite/1\nname: s\nmembers:\n  - {presets: [low-small, broke], seeds: [0]}\npresets:\n"
                    "  broke: {dag: {n_nodes: 6}, map: {density: 0.1, corridor_width: [1, 1]}, budget_alpha: 0.05}\n",
                    "utf-8")
    for target in (out, tmp_path / "out/b.tar.gz"):  # fails after the first instance: nothing is left of it
        assert_errors(cli("publish", spec, "--version", "1.0.0", "--out", target, code=None),
                      f"{spec}: presets.broke: preset 'broke', seed 0: in 200 maps the task never fits the budget; "
                      "raise budget_alpha or the corridor width")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"]
    cli("generate", "high-small", "--out", tmp_path / "g")
    assert_errors(cli("verify", tmp_path / "g", code=None),
                  f"{tmp_path / 'g'}: not a bundle: no manifest.json (`eebench publish` writes bundles)")
    assert_errors(cli("verify", tmp_path / "nope", code=None), f"{tmp_path / 'nope'}: no such file or folder")
    assert_errors(cli("bundles", tmp_path / "nope", code=None), f"{tmp_path / 'nope'}: no such folder")
    assert_errors(cli("bundles", tmp_path / "s.yaml", code=None),
                  f"{tmp_path / 's.yaml'}: is a file, expected a folder to search for bundles")
    assert_errors(cli("ingest", tmp_path / "nope", "--db", tmp_path / "i.duckdb", code=None),
                  f"{tmp_path / 'nope'}: no such folder")
    assert not (tmp_path / "i.duckdb").exists()


def test_verify_refuses_an_archive_that_would_write_outside_its_folder(cli: Any, tmp_path: Path) -> None:
    evil = tmp_path / "in/evil.tar.gz"
    evil.parent.mkdir()
    with tarfile.open(evil, "w:gz") as archive:
        member = tarfile.TarInfo("../../escaped.json")
        member.size = 2
        archive.addfile(member, io.BytesIO(b"{}"))
    line = (f"{evil}: member '../../escaped.json' would be written outside the folder it is read into (absolute, "
            "'..' or a drive); refused")
    assert_errors(cli("verify", evil, code=None), line)
    runs = write_jsonl(tmp_path / "r.jsonl", [])
    assert_errors(cli("grade", runs, "--bench", evil, "--db", tmp_path / "r.duckdb", code=None), line)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "in", "in/evil.tar.gz", "r.jsonl"]


def test_seed_options_take_ascii_seeds_within_limits(cli) -> None:
    for seeds, said in (("0-99999999999", "at most 1,000,000 seeds at once"), ("99999999999999999999999",
                        "seeds are at most 2^63-1"), ("1_0", "expected seeds like"), ("5-2", "expected seeds like")):
        refused = cli("show", "low-small", "--seeds", seeds, code=2).stderr
        assert refused.startswith(f"error: --seeds: {said}") and refused.count("\n") == 1
    refused = cli("play", "low-small", "--agent", "random", "--instance-seeds", "x", "--out", "-", code=2).stderr
    assert refused.startswith("error: --instance-seeds: expected seeds like")


def test_a_path_name_the_system_refuses_is_one_line(cli, tmp_path: Path) -> None:
    long = tmp_path / ("b" * 300)   # longer than a file name may be: the first look at it fails
    for args in (("verify", long), ("generate", "low-small", "--out", long), ("query", "select 1", "--db",
                 f"{long}.duckdb"), ("convert", f"{long}.jsonl", "--out", tmp_path / "o.jsonl")):
        refused = cli(*args, code=2).stderr
        assert refused.startswith("error: ") and refused.endswith(": File name too long\n") and \
            refused.count("\n") == 1, args


def test_a_command_stopped_by_sigterm_removes_what_it_was_writing(tmp_path: Path) -> None:
    # `timeout`, `kill` or a scheduler's stop: the output's temporary folder is removed, as after Ctrl-C
    import signal
    import subprocess
    import sys
    import time

    command = [sys.executable, "-m", "eebench", "generate", "low-large", "--seeds", "0-99999", "--out", "out"]
    with subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE) as running:
        deadline = time.monotonic() + 60
        while not list(tmp_path.glob(".out.*")) and time.monotonic() < deadline and running.poll() is None:
            time.sleep(0.05)
        appeared = bool(list(tmp_path.glob(".out.*")))
        running.send_signal(signal.SIGTERM)
        _, stderr = running.communicate(timeout=60)
    assert appeared, "the output's temporary folder never appeared"
    assert running.returncode == 128 + signal.SIGTERM, stderr
    assert list(tmp_path.iterdir()) == [] and b"Traceback" not in stderr


@pytest.mark.parametrize(("signum", "code", "said"), [(2, 1, b"\nAborted!\n"), (15, 143, b"")])
def test_a_signal_during_a_duckdb_statement_ends_as_that_signal_does(tmp_path: Path, signum: int, code: int,
                                                                     said: bytes) -> None:
    """DuckDB turns the exception of a signal's handler into RuntimeError('Query interrupted'): a traceback. And
    DuckDB runs the handler only when it checks for signals, missing some: the statement ran on to its --timeout
    (eebench.interrupts now interrupts it at once)."""
    import subprocess
    import sys
    import time

    import duckdb

    duckdb.connect(str(tmp_path / "r.duckdb")).close()
    command = [sys.executable, "-m", "eebench", "query", "--db", "r.duckdb", "--timeout", "30",
               "SELECT sum(hash(a.range * b.range)) FROM range(1000000) a, range(1000000) b"]
    running = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        time.sleep(5)   # (started, imported, and in the statement)
        assert running.poll() is None
        running.send_signal(signum)
        sent = time.monotonic()
        _, stderr = running.communicate(timeout=60)
        assert time.monotonic() - sent < 10   # (a missed signal: the statement's 30 s --timeout)
    finally:
        running.kill()
        running.communicate()
    assert (running.returncode, stderr) == (code, said)


@pytest.mark.parametrize(("signum", "code", "said"), [(2, 1, "\nAborted!\n"), (15, 143, "")])
def test_a_signal_inside_a_duckdb_scan_of_python_data_ends_as_that_signal_does(tmp_path: Path, signum: int,
                                                                                code: int, said: str) -> None:
    """A SIGTERM while DuckDB read the rows `ingest` or `grade` registered (Python data, read through Python) was
    raised inside that read: DuckDB made it an error ("... failed: SystemExit: 143", Python's traceback in the
    text), and the results store one line, so the stopped command ended with exit code 2 and
    "grading failed while writing results". The stop's own ending wins over what it broke on its way out."""
    import subprocess
    import sys

    script = tmp_path / "stop.py"
    script.write_text(
        "import os, signal\n"
        "import duckdb, pyarrow as pa\n"
        "from eebench.cli import main\n"
        "from eebench.errors import EebenchError\n"
        "@main.command('stopme')\n"
        "def stopme():\n"
        "    def batches():\n"
        "        yield pa.record_batch({'a': [1]})\n"
        f"        os.kill(os.getpid(), {signum})\n"
        "        for _ in range(10 ** 6): pass   # the handler runs here, inside DuckDB's scan\n"
        "        yield pa.record_batch({'a': [2]})\n"
        "    reader = pa.RecordBatchReader.from_batches(pa.schema({'a': pa.int64()}), batches())\n"
        "    try:\n"
        "        print(duckdb.connect().execute('SELECT sum(a) FROM reader').fetchall())\n"
        "    except duckdb.Error as exc:   # as the results store turns DuckDB's errors into one line\n"
        "        raise EebenchError(f'x.duckdb: failed while writing results: {exc}') from None\n"
        "main(['stopme'], prog_name='eebench')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert (done.returncode, done.stdout, done.stderr) == (code, "", said)


def test_an_error_line_is_bounded_and_keeps_its_ends(cli: Any) -> None:
    # a huge value quoted whole made a 3 KB line; the start (what) and the end (what was expected) stay
    from eebench.errors import LINE_CHARS, message_line

    line = cli("schema", "x" * 3000, code=2).stderr
    assert line.count("\n") == 1 and len(line) == len("\n") + LINE_CHARS
    assert line.startswith("error: unknown schema 'xxx") and " ... " in line
    assert line.endswith("instance.rooms, manifest, registry, suite or trajectory\n")
    assert message_line("short\nline") == "short\\nline"
    assert len(message_line("y" * 10 ** 6)) == LINE_CHARS


@pytest.mark.parametrize("args", [["show", ""], ["play", "", "--agent", "random", "--out", "x.jsonl"], ["bundles", ""],
                                  ["validate", "x.json", ""], ["query", ""],
                                  # options too: `play --out ''` renamed its temporary file onto the current folder
                                  ["play", "park2026-pasta", "--agent", "random", "--out", ""],
                                  ["convert", "x.jsonl", "--out", ""], ["query", "SELECT 1", "--db", ""],
                                  ["generate", "park2026-pasta", "--out", ""],
                                  # `convert --instance ''` read the instance from the file's name, and
                                  # `--action-regex ''` was no pattern, without a word
                                  ["convert", "x.jsonl", "--instance", "", "--out", "x.jsonl"],
                                  ["convert", "x.jsonl", "--action-regex", "", "--out", "x.jsonl"]])
def test_an_empty_argument_is_refused_not_read_as_the_current_folder(cli: Any, args: list[str]) -> None:
    # Path("") is the current folder: `show ""` showed every instance below it
    failed = cli(*args, code=2)
    assert failed.stderr.startswith("error: Invalid value for '")
    assert "': an empty value; see `eebench " in failed.stderr
    assert not Path("x.jsonl").exists()


def test_the_program_flushes_its_output_and_keeps_exit_codes_when_it_skips_pythons_teardown(tmp_path: Path) -> None:
    # `eebench` and `python -m eebench` end with os._exit after main (cli.run): nothing may be lost on the way
    import subprocess
    import sys

    def program(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "eebench", *args], capture_output=True, timeout=60)

    shown = program("schema", "trajectory")
    assert shown.returncode == 0 and json.loads(shown.stdout)["title"]   # whole: the JSON parses
    refused = program("schema", "nope")
    assert refused.returncode == 2 and refused.stderr.startswith(b"error: unknown schema 'nope'")
    assert program("--version").stdout == b"eebench, version " + __import__("eebench").__version__.encode() + b"\n"


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full, a device every write to fails as full")
@pytest.mark.parametrize("args", [["list"], ["--help"], ["schema", "trajectory"], ["show", "low-small"], ["formats"]])
def test_an_output_that_cannot_be_written_is_one_line(args: list[str]) -> None:
    """`> /dev/full` (a full disk, a failing device): one line, exit code 2, no traceback; whether the output fails
    as it is written or when it is flushed at the end."""
    import subprocess
    import sys

    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "eebench", *args], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "error: cannot write the output: No space left on device\n")


@pytest.mark.parametrize("command, out", [
    (["generate", "park2026-main", "--out"], "instances"),
    (["play", "park2026-main", "--agent", "random", "--seeds", "0-9", "--out"], "runs.jsonl"),
])
def test_an_output_file_a_full_disk_refuses_is_named(cli, small_disk: Path, command: list[str], out: str) -> None:
    """`play`/`generate` on a full disk said 'cannot write the output', naming no file; nothing is left behind."""
    free = os.statvfs(small_disk)
    (small_disk / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize - 8192))
    result = cli(*command, small_disk / out, code=2)
    assert result.stderr == f"error: {small_disk / out}: cannot write: No space left on device; nothing was written\n"
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]


@pytest.mark.parametrize("args, said", [
    (["query", "SELECT 1", "--format", "tabel"], "'--format': 'tabel' is not one of 'table', 'csv', 'json' (did you "
                                                 "mean 'table'?); see `eebench query --help`"),
    (["convert", "x.txt", "--env", "gridd"], "'--env': 'gridd' is not one of 'grid_dag', 'rooms', 'logged' (did you "
                                             "mean 'grid_dag'?); see `eebench convert --help`"),
    (["query", "SELECT 1", "--format", "CSV"], "'--format': 'CSV' is not one of 'table', 'csv', 'json' (did you "
                                               "mean 'csv'?); see `eebench query --help`"),
    (["query", "SELECT 1", "--format", "zzz"], "'--format': 'zzz' is not one of 'table', 'csv', 'json'; see `eebench "
                                               "query --help`"),
])
def test_a_mistyped_choice_suggests_the_close_one(cli, args: list[str], said: str) -> None:
    assert_errors(cli(*args, code=None), f"Invalid value for {said}")


def test_a_shipped_suite_given_as_bench_is_told_how_to_freeze_it(cli, tmp_path: Path) -> None:
    runs = write_jsonl(tmp_path / "runs.jsonl", [{"eebench": "trajectory/1", "id": "a",
                                                  "instance": "park2026-main/low-small/seed-0", "steps": []}])
    assert_errors(cli("grade", runs, "--bench", "park2026-main", "--db", tmp_path / "r.duckdb", code=None),
                  "Invalid value for '--bench': park2026-main is a shipped suite, not a folder or bundle; freeze it "
                  "first: eebench publish park2026-main --version 1.0.0 --out DIR, then --bench DIR; see `eebench "
                  "grade --help`")
    assert not (tmp_path / "r.duckdb").exists()


def test_show_prompt_and_play_take_an_id_of_a_shipped_suite(cli, tmp_path: Path) -> None:
    """As eebench.load does: the instance is generated as `eebench generate` would make it."""
    instance_id = "park2026-main/low-small/seed-0"
    assert cli("show", instance_id).stdout.startswith(f"{instance_id}: 7x6, budget 75")
    assert cli("prompt", instance_id).stdout.startswith("[system]\n")
    cli("play", instance_id, "--agent", "frontier", "--out", tmp_path / "runs.jsonl")
    assert json.loads((tmp_path / "runs.jsonl").read_text())["instance"] == instance_id
    for command in ("show", "prompt"):
        assert_errors(cli(command, "park2026-main/low-small/seed-9", code=None),
                      "park2026-main/low-small/seed-9: no such instance in the shipped suite 'park2026-main' (did "
                      "you mean 'park2026-main/low-small/seed-2'?)")


def test_a_sigterm_that_lands_where_exceptions_are_dropped_still_ends_the_command(tmp_path: Path) -> None:
    """A SIGTERM during an import landed in importlib's weakref callback, which prints an exception and drops it:
    the exit was lost and `generate` ran on (a CI run timed out so). It is raised again from the next safe place."""
    import subprocess
    import sys

    script = tmp_path / "stop.py"
    script.write_text(
        "import os, signal, time, weakref\n"
        "from eebench.cli import _terminated_as_exit\n"
        "class A: pass\n"
        "def cb(ref):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    for _ in range(100000): pass   # the handler runs here, in the callback\n"
        "with _terminated_as_exit():\n"
        "    a = A(); r = weakref.ref(a, cb); del a\n"
        "    t = time.time()\n"
        "    while time.time() - t < 5: pass\n"
        "    print('ran on')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (143, "", "")


def test_a_mistyped_path_or_value_names_the_close_one(cli: Any, tmp_path: Path) -> None:
    """A path one letter off said only "no such file" (or click's "does not exist"); `--workers atuo` named no
    `auto`; `--out` on a local grade did not say results go to --db; `-` where nothing streams named a file `-`."""
    runs = write_jsonl(tmp_path / "runs.jsonl", [])
    (tmp_path / "bench-1.0.0").mkdir()
    (tmp_path / "results.duckdb").write_bytes(b"")
    cases = [
        (["grade", tmp_path / "runs.jsonll", "--db", tmp_path / "r.duckdb"],
         f"error: {tmp_path / 'runs.jsonll'}: no such file (did you mean {str(runs)!r}?)"),
        (["grade", runs, "--bench", tmp_path / "bench-1.0", "--db", tmp_path / "r.duckdb"],
         f"error: Invalid value for '--bench': no such file or folder {tmp_path / 'bench-1.0'} (did you mean "
         f"{str(tmp_path / 'bench-1.0.0')!r}?)"),
        (["grade", runs, "--bench", "park2026-mian", "--db", tmp_path / "r.duckdb"],
         "error: Invalid value for '--bench': no such folder or bundle park2026-mian; a shipped suite is named alike "
         "(did you mean 'park2026-main'?)"),
        (["query", "SELECT 1", "--db", tmp_path / "result.duckdb"],
         f"error: {tmp_path / 'result.duckdb'}: no such database (did you mean {str(tmp_path / 'results.duckdb')!r}?)"),
        (["query", "SELECT 1", "--db", tmp_path / "elsewhere.duckdb"],
         f"error: {tmp_path / 'elsewhere.duckdb'}: no such database (run `eebench grade ... --db` first)"),
        (["grade", runs, "--db", tmp_path / "r.duckdb", "--workers", "atuo"],
         "error: Invalid value for '--workers': 'atuo' is not a count of processes (0 or auto: one per core) (did "
         "you mean 'auto'?)"),
        (["grade", runs, "--out", tmp_path / "r.duckdb"],
         "error: --address, --cpus and --out go with --engine ray (Parquet partitions); a local grade writes into "
         "--db FILE"),
        (["report", "--db", tmp_path / "results.duckdb", "--out", "-"],
         "error: Invalid value for '--out' / '-o': `-` (standard input or output) is not read or written here; give "
         "a file's path"),
        (["validate", "-"], "error: Invalid value for 'FILES...': `-` (standard input or output) is not read or "
                            "written here; give a file's path"),
        # a folder one letter off, inside a path; and what `show`, `verify` and `prompt` are given
        (["grade", tmp_path / "bench-1.0" / "runs.jsonl", "--db", tmp_path / "r.duckdb"],
         f"error: {tmp_path / 'bench-1.0' / 'runs.jsonl'}: no such file (did you mean "
         f"{str(tmp_path / 'bench-1.0.0' / 'runs.jsonl')!r}?)"),
        (["bundles", tmp_path / "bench-1.0"],
         f"error: {tmp_path / 'bench-1.0'}: no such folder (did you mean {str(tmp_path / 'bench-1.0.0')!r}?)"),
        (["verify", tmp_path / "bench-1.0"],
         f"error: {tmp_path / 'bench-1.0'}: no such file or folder (did you mean {str(tmp_path / 'bench-1.0.0')!r}?)"),
        (["show", tmp_path / "runs.jsonll"],
         f"error: {tmp_path / 'runs.jsonll'}: no such file (did you mean {str(runs)!r}?)"),
        (["prompt", tmp_path / "bench-1.0" / "runs.jsonl"],
         f"error: {tmp_path / 'bench-1.0' / 'runs.jsonl'}: no such file, nor the id of a shipped suite's instance"),
    ]
    (tmp_path / "bench-1.0.0" / "runs.jsonl").write_bytes(b"")
    for args, said in cases:
        refused = cli(*args, code=2).stderr
        assert refused.startswith(said) and refused.count("\n") == 1, (args, refused)
    assert not (tmp_path / "-").exists() and not (tmp_path / "r.duckdb").exists()


@pytest.mark.parametrize("command", [["grade", "RUNS", "--db", "DB"], ["show", "park2026-main/low-small/seed-0"],
                                     ["convert", "RUNS", "--out", "OUT"]])
def test_a_bench_given_twice_is_refused_where_one_is_read(cli: Any, tmp_path: Path, command: list[str]) -> None:
    """The last --bench silently won (report takes several, and the others looked as if they did too)."""
    runs = write_jsonl(tmp_path / "runs.jsonl", [])
    folders = [tmp_path / "a", tmp_path / "b"]
    for folder in folders:
        folder.mkdir()
    places = {"RUNS": runs, "DB": tmp_path / "r.duckdb", "OUT": tmp_path / "o.jsonl"}
    args = [places.get(a, a) for a in command] + ["--bench", folders[0], "--bench", folders[1]]
    refused = cli(*args, code=2).stderr
    assert refused.startswith(f"error: Invalid value for '--bench': given 2 times; `eebench {command[0]}` reads one "
                              "folder or bundle") and refused.count("\n") == 1
    assert not (tmp_path / "r.duckdb").exists() and not (tmp_path / "o.jsonl").exists()


def test_every_commands_help_shows_how_it_is_run(cli: Any) -> None:
    """14 of 18 commands' --help had no example."""
    from eebench.cli import main as group

    for name in group.commands:
        text = cli(name, "--help").stdout
        assert f"\n    eebench {name} " in text or f"\n    eebench {name}\n" in text, name


def test_a_hand_made_instance_is_shown_by_the_name_list_gives_it(cli: Any) -> None:
    """`eebench list` names hand-made instances (pasta/custom-201) that no command took."""
    assert "  pasta/custom-201" in cli("list").stdout
    assert cli("show", "pasta/custom-201").stdout.startswith("custom-201: 7x7, budget 99")


def test_a_mistyped_trajectory_id_of_prompt_names_the_close_one(cli: Any, tmp_path: Path) -> None:
    runs = tmp_path / "runs.jsonl"
    cli("play", "park2026-main/low-small/seed-0", "--agent", "random", "--seed", "0", "--out", runs)
    refused = cli("prompt", "park2026-main/low-small/seed-0", "--trajectory", runs, "--trajectory-id",
                  "random/seed-9/park2026-main/low-small/seed-0", "--step", "1", code=2).stderr
    played = "random/seed-0/park2026-main/low-small/seed-0"
    assert refused == (f"error: {runs}: trajectory 'random/seed-9/park2026-main/low-small/seed-0' is not one played in "
                       f"'park2026-main/low-small/seed-0' (did you mean {played!r}?); played there: {played!r}\n")


def test_review_points_of_the_close_names_and_the_bench_variable(cli: Any, tmp_path: Path, monkeypatch: Any) -> None:
    """A link to nothing was its own close name; EEBENCH_GRADE_BENCH was split at ':' into two benches."""
    (tmp_path / "run.jsonl").symlink_to(tmp_path / "gone")
    refused = cli("validate", tmp_path / "run.jsonl", code=2).stderr
    assert "did you mean" not in refused and refused.count("\n") == 1
    bench = tmp_path / "a:b"
    bench.mkdir()
    monkeypatch.setenv("EEBENCH_GRADE_BENCH", str(bench))
    refused = cli("grade", write_jsonl(tmp_path / "runs.jsonl", []), "--db", tmp_path / "r.duckdb", code=2).stderr
    assert "given 2 times" not in refused


def test_standard_output_is_utf_8_whatever_the_locale_says(tmp_path: Path) -> None:
    # Under a latin-1 locale (here its encoding, as PYTHONIOENCODING gives it where no such locale is installed),
    # `show` and `query` of a name latin-1 lacks ended in a UnicodeEncodeError traceback, and `play --out -`
    # wrote other bytes than `play --out FILE` (which `grade -` then read as UTF-8)
    import subprocess
    import sys

    doc = instance_doc(["....", "...."], [0, 0], [("Su", [3, 1], []), ("ılık çay", [1, 1], [["Su"]])], "ılık çay",
                       24, "hand/tea")
    file = write_json(tmp_path / "t.json", doc)
    env = {**os.environ, "PYTHONIOENCODING": "latin-1"}

    def program(*args: str | Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "eebench", *map(str, args)], capture_output=True, env=env,
                              cwd=tmp_path, timeout=60)

    shown = program("show", file)
    assert shown.returncode == 0, shown.stderr
    assert "ılık çay" in shown.stdout.decode("utf-8")
    assert program("play", file, "--agent", "frontier", "--observations", "--out", "r.jsonl").returncode == 0
    piped = program("play", file, "--agent", "frontier", "--observations", "--out", "-")
    assert piped.returncode == 0 and piped.stdout == (tmp_path / "r.jsonl").read_bytes()
    assert "ılık çay".encode() in piped.stdout
    assert program("grade", "r.jsonl", "--bench", file, "--db", "r.duckdb").returncode == 0
    queried = program("query", "SELECT DISTINCT instance_id, 'ılık çay' AS goal FROM trajectories", "--db", "r.duckdb",
                      "--format", "csv")
    assert queried.returncode == 0, queried.stderr
    assert queried.stdout == "instance_id,goal\nhand/tea,ılık çay\n".encode()


def test_a_file_name_that_is_not_utf_8_is_printed_back_as_its_bytes(tmp_path: Path) -> None:
    # a POSIX file name is bytes: `generate --out` a folder named so wrote it, then ended in a UnicodeEncodeError
    # traceback, exit 1, under a UTF-8 locale other than C (en_US.UTF-8: Python writes its stdout strictly)
    import subprocess
    import sys

    out = os.fsencode(tmp_path) + b"/bad\xffname"
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}   # (as en_US.UTF-8 sets it, where no such locale is installed)
    done = subprocess.run([sys.executable, "-m", "eebench", "generate", "low-small", "--out", out],
                          capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"wrote 1 instances to " + out + b"/ (listed in " + out + b"/index.json)\n"


@pytest.mark.parametrize(("option", "args"), [
    ("--model", ["convert", "LOG", "--out", "OUT", "--model", "ab\udcff"]),   # (bytes that did not decode)
    ("--instance", ["convert", "LOG", "--out", "OUT", "--instance", "\udcff"]),
    ("--where", ["plot", "figure1", "--out", "OUT", "--where", "model = \udcff"]),
])
def test_a_text_option_that_is_not_utf8_is_a_bad_option_value(cli, tmp_path: Path, option: str,
                                                               args: list[str]) -> None:
    """convert wrote the label into a trajectory and ended in a UnicodeEncodeError traceback; --where of report
    and plot blamed the results file ("cannot be drawn: TypeError ... was it changed after grading?")."""
    log = tmp_path / "log.jsonl"
    log.write_text("{}\n", "utf-8")
    out = tmp_path / "out.png"
    r = cli(*[str(log) if a == "LOG" else str(out) if a == "OUT" else a for a in args], code=2)
    assert r.stderr.startswith(f"error: Invalid value for '{option}': not UTF-8 text (byte 0xff at character ")
    assert r.stderr.count("\n") == 1 and not out.exists()


@pytest.mark.parametrize("command", [["query", "SELECT 1"], ["export", "--out", "OUT"], ["grade", "RUNS"]])
def test_a_results_file_whose_name_is_not_utf8_is_one_line(cli, tmp_path: Path, command: list[str]) -> None:
    """DuckDB takes a file name as UTF-8 text: a name of other bytes ended in `RuntimeError: std::bad_cast`."""
    db = tmp_path / "r\udcff.duckdb"   # (the byte 0xff of a file name, as Python keeps it)
    runs = tmp_path / "runs.jsonl"
    runs.write_text("", "utf-8")
    args = [str(tmp_path / "out") if a == "OUT" else str(runs) if a == "RUNS" else a for a in command]
    r = cli(*args, "--db", db, code=2)
    assert r.stderr.startswith("error: Invalid value for '--db': ") and r.stderr.count("\n") == 1
    assert "is a path whose bytes are not UTF-8 text, which DuckDB cannot open; rename it" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.jsonl"]
