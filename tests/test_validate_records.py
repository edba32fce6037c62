"""`eebench validate` of files holding many trajectories: every message located by line or item, and ids unique
across what one call reads, as `grade` requires."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import write_json, write_jsonl


def trajectory(tid: str, action: object = "up") -> dict:
    return {"eebench": "trajectory/1", "id": tid, "instance": "test/tiny", "steps": [{"action": action}]}


def test_each_message_names_its_line(cli, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "t.jsonl", [trajectory("a", 3), trajectory("b"), trajectory("c", 3)])
    result = cli("validate", file, code=2)
    assert result.stderr.splitlines() == [
        f"error: {file}:1: steps[0].action: expected string or null, found an integer 3",
        f"error: {file}:3: steps[0].action: expected string or null, found an integer 3",
    ]


def test_items_of_a_json_list_are_named(cli, tmp_path: Path) -> None:
    file = write_json(tmp_path / "t.json", [trajectory("a"), trajectory("b", 3)])
    assert cli("validate", file, code=2).stderr == (
        f"error: {file}: [1].steps[0].action: expected string or null, found an integer 3\n")


def test_duplicate_ids_are_refused_as_grade_refuses_them(cli, tmp_path: Path) -> None:
    one = write_jsonl(tmp_path / "one.jsonl", [trajectory("a"), trajectory("b"), trajectory("a")])
    assert cli("validate", one, code=2).stderr == (
        f"error: {one}:3: id: trajectory id 'a' was already read at {one}:1; ids must be unique\n")
    two = write_jsonl(tmp_path / "two.jsonl", [trajectory("c"), trajectory("b")])
    first = write_jsonl(tmp_path / "first.jsonl", [trajectory("a"), trajectory("b")])
    result = cli("validate", first, two, code=2)
    assert result.stdout == f"ok {first}: 2 trajectory/1 records\n"
    assert result.stderr == (f"error: {two}:2: id: trajectory id 'b' was already read at {first}:2; "
                             "ids must be unique\n")
    listed = write_json(tmp_path / "t.json", [trajectory("x"), trajectory("x")])
    assert cli("validate", listed, code=2).stderr == (
        f"error: {listed}: [1].id: trajectory id 'x' was already read at {listed} [0]; ids must be unique\n")


def test_a_file_given_twice_is_refused_as_grade_refuses_it(cli, tmp_path: Path) -> None:
    # every id of it was read twice, yet validate said ok twice (the second reading was taken for the first)
    file = write_jsonl(tmp_path / "t.jsonl", [trajectory("a"), trajectory("b")])
    (tmp_path / "sub").mkdir()
    again = tmp_path / "sub" / ".." / "t.jsonl"   # the same file under another spelling
    result = cli("validate", file, again, code=2)
    assert result.stderr == f"error: {again}: is given twice (also as {file})\n" and result.stdout == ""
    assert cli("grade", file, again, "--db", tmp_path / "r.duckdb", code=2).stderr == result.stderr


def test_a_symlink_loop_among_the_files_is_one_line(cli, tmp_path: Path) -> None:
    # resolving the paths to find one given twice raised RuntimeError (a traceback, exit 1)
    file = write_jsonl(tmp_path / "t.jsonl", [trajectory("a")])
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    result = cli("validate", file, tmp_path / "loop1", code=2)
    assert "Traceback" not in result.stderr and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"error: {tmp_path / 'loop1'}: ")


def test_unique_ids_pass(cli, tmp_path: Path) -> None:
    file = write_jsonl(tmp_path / "t.jsonl", [trajectory(str(i)) for i in range(3)])
    assert cli("validate", file).stdout == f"ok {file}: 3 trajectory/1 records\n"
    assert json.loads(file.read_text().splitlines()[0])["id"] == "0"


def test_a_single_trajectory_document_counts_too(cli, tmp_path: Path) -> None:
    one = write_json(tmp_path / "one.json", trajectory("a"))
    many = write_jsonl(tmp_path / "many.jsonl", [trajectory("a")])
    assert cli("validate", one, many, code=2).stderr == (
        f"error: {many}:1: id: trajectory id 'a' was already read at {one}; ids must be unique\n")


def test_an_empty_input_is_refused_by_validate_grade_and_convert_alike(cli, tmp_path: Path) -> None:
    # one rule: a file (or a run) that holds nothing is a mistake, never a success with nothing in it
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    says = "is empty; expected trajectory/1 records (`eebench convert` makes them from agents' logs)"
    assert cli("validate", empty, code=2).stderr == f"error: {empty}: {says}\n"
    listed = write_json(tmp_path / "none.json", [])
    assert cli("validate", listed, code=2).stderr == f"error: {listed}: {says}\n"
    # every record skipped: grade and convert refuse the run and write nothing
    bad = write_jsonl(tmp_path / "bad.jsonl", [trajectory("a", 5)])
    result = cli("convert", bad, "--from", "eebench", "--skip-invalid", "--out", tmp_path / "c.jsonl", code=2)
    assert result.stderr.splitlines()[-1] == ("error: nothing was converted: every episode was skipped (listed "
                                              "above); nothing was written")
    unknown = write_jsonl(tmp_path / "unknown.jsonl", [{**trajectory("b"), "instance": "nope/x"}])
    bench = tmp_path / "bench"
    cli("generate", "park2026-main", "--out", bench)
    result = cli("grade", unknown, "--bench", bench, "--db", tmp_path / "r.duckdb", "--skip-invalid", code=2)
    assert result.stderr.splitlines()[-1] == ("error: nothing was graded: every trajectory was skipped (listed "
                                              "above); nothing was written")
    assert not (tmp_path / "c.jsonl").exists() and not (tmp_path / "r.duckdb").exists()


def test_validate_refuses_token_sums_the_results_cannot_hold(cli, tmp_path: Path) -> None:
    # each step's count is schema-valid (< 2^53), their sum is not a BIGINT: validate says so, as grade would
    file = write_jsonl(tmp_path / "tok.jsonl", [{**trajectory("a"), "steps": [{"action": "up",
                                                                              "tokens_in": 2 ** 53 - 1}] * 1100}])
    assert cli("validate", file, code=2).stderr == (
        f"error: {file}:1: steps[].tokens_in: the steps' tokens_in sum to more than the results table holds (token "
        "counts below 2^63, a finite latency)\n")


def test_validate_refuses_the_episode_indices_grade_refuses(cli, tmp_path: Path) -> None:
    path = tmp_path / "e.jsonl"
    path.write_text(json.dumps({"eebench": "trajectory/1", "id": "a", "instance": "t/rooms", "steps": [
        {"action": "d1 door", "episode": 0}, {"action": "x ball", "episode": -1}, {"action": "x ball", "episode": "1"},
        {"action": "x ball", "episode": 1.5}]}) + "\n")
    assert cli("validate", path, code=2).stderr == (
        f"error: {path}:1: steps[1].episode: expected a number >= 0, found -1\n"
        f"error: {path}:1: steps[2].episode: expected integer, found a string \"1\"\n"
        f"error: {path}:1: steps[3].episode: expected integer, found a number 1.5\n")


def test_grade_refuses_the_usage_values_validate_refuses(cli, tmp_path: Path) -> None:
    from eebench.instances import write_instances
    from tests.conftest import make_instance

    write_instances([make_instance(["..."], [0, 0], [("G", [2, 0], [])], "G", instance_id="test/tiny")],
                    tmp_path / "bench", {"kind": "test"})
    for field, value in (("tokens_in", 1.5), ("tokens_out", True), ("tokens_in", -1), ("latency_ms", "5"),
                         ("tokens_in", 2 ** 53)):
        path = write_jsonl(tmp_path / "t.jsonl", [{**trajectory("a"), "steps": [{"action": "up"},
                                                                                  {"action": "up", field: value}]}])
        refused = cli("validate", path, code=2).stderr
        assert refused.startswith(f"error: {path}:1: steps[1].{field}: ")
        assert cli("grade", path, "--bench", tmp_path / "bench", "--db", tmp_path / "r.duckdb", code=2).stderr \
            == refused
        assert not (tmp_path / "r.duckdb").exists()


def test_a_key_given_twice_is_refused_where_it_is(cli, tmp_path: Path) -> None:
    """grade keeps the last copy, as every fast JSON parser does; validate, the strict check, says so."""
    twice = json.dumps(trajectory("a")).replace('"id": "a"', '"id": "a", "id": "b"')
    nested = json.dumps(trajectory("c")).replace('{"action": "up"}', '{"action": "up", "action": "down"}')
    lines = tmp_path / "t.jsonl"
    lines.write_text(json.dumps(trajectory("z")) + "\n" + twice + "\n" + nested + "\n")
    assert cli("validate", lines, code=2).stderr == (f"error: {lines}:2: malformed JSON: duplicate key 'id' in an "
                                                     f"object\nerror: {lines}:3: malformed JSON: duplicate key "
                                                     "'action' in an object\n")
    listed = tmp_path / "t.json"
    listed.write_text(f"[{json.dumps(trajectory('z'))}, {twice}]")
    assert cli("validate", listed, code=2).stderr == (f"error: {listed}: malformed JSON: duplicate key 'id' in an "
                                                      "object\n")


def test_a_json_list_nested_past_the_limit_is_refused_by_the_door_not_the_duplicate_check(cli, tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"   # (the duplicate-key check parses the text again: it must not crash first)
    deep.write_text(json.dumps(trajectory("a")).replace('"steps"', '"meta": ' + "[" * 50_000 + "]" * 50_000
                                                          + ', "steps"'))
    assert cli("validate", deep, code=2).stderr == f"error: {deep}: refused JSON: nested more than 100 levels deep\n"


def test_an_enum_with_null_says_null(cli, tmp_path: Path) -> None:
    """The schema's enum of a phase holds null: it was listed as Python's None."""
    path = write_jsonl(tmp_path / "t.jsonl", [{"eebench": "trajectory/1", "id": "x", "instance": "a/b", "env": "logged",
                                               "steps": [{"action": "go", "phase": "x"}]}])
    assert cli("validate", path, code=2).stderr == (f'error: {path}:1: steps[0].phase: expected one of explore, act, '
                                                    'null, found "x"\n')
