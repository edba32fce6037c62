"""`eebench validate`: check any eebench document by the kind its `eebench` field names."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eebench.documents import (document_kind, load_document, parse_text, read_text, refuse_duplicate_keys,
                               schema_problems, validate_schema)
from eebench.errors import InputError, Problem
from eebench.instances import check_instance_document
from eebench.suites import load_presets, load_suite
from eebench.trajectories import (EMPTY_EXPECTED, Record, check_trajectory, parse_record, read_raw_records,
                                  read_records, usage_totals)
from eebench.world.kinds import kind_of


def validate_file(path: Path, seen: dict[str, str] | None = None) -> str:
    """A one-line summary of a valid file; InputError listing every problem otherwise.

    `seen` (trajectory id -> where it was first read) carries across the files of one call: as in a grade, an id
    read twice is refused.
    """
    if path.suffix.lower() == ".jsonl" or _is_json_list(path):
        return _validate_trajectories(path, {} if seen is None else seen)
    doc = load_document(path)
    file = str(path)
    kind, version = document_kind(doc, file)
    tag = f"{kind}/{version}"
    if kind == "instance":
        instance = check_instance_document(doc, file)
        return f"{tag} {instance.id}: {kind_of(instance).summary(instance)}"
    if kind == "generator":
        presets = load_presets(path)
        return f"{tag}: {len(presets)} presets ({', '.join(presets)})"
    if kind == "suite":
        suite = load_suite(path)
        return f"{tag} {suite.name}: {len(suite)} instances"
    if kind == "manifest":
        from eebench.bundles import manifest_problems  # the grader's imports, needed for manifests only

        problems = manifest_problems(doc, file)
        if problems:
            raise InputError(problems)
        return (f"{tag} {doc['name']} {doc['version']}: {len(doc['instances'])} instances, digest {doc['digest']} "
                "(`eebench verify` checks the files)")
    if kind == "checkpoints":
        from eebench.checkpoints import load_checkpoints

        sets = load_checkpoints(path)
        return f"{tag} {doc['name']}: {len(sets)} sets, {sum(len(s.checkpoints) for s in sets)} checkpoints"
    if kind == "trajectory":
        validate_schema(doc, "trajectory", file)
        repeated = _repeated(doc["id"], file, None, None, {} if seen is None else seen)
        if repeated:
            raise InputError(repeated)
        return f"{tag} {doc['id']}: {len(doc['steps'])} steps"
    validate_schema(doc, kind, file)
    return tag


def _unique_key_records(path: Path, problems: list[Problem]) -> Iterator[Record]:
    """read_records, with each line (or the .json file) refused when an object in it gives a key twice: grade,
    reading at speed, takes the last copy as every fast JSON parser does; validate says so."""
    if path.suffix.lower() == ".json":
        try:
            refuse_duplicate_keys(read_text(path), str(path))
        except InputError as exc:
            problems.extend(p for p in exc.problems if isinstance(p, Problem))
            return
        except (ValueError, RecursionError):   # (not JSON, or nested past the door's limit: read_records says where)
            pass
        yield from read_records(path, errors=problems)
        return
    for raw in read_raw_records(path):
        try:
            record = parse_record(raw)
            refuse_duplicate_keys(bytes(raw.value), raw.file, raw.line)
        except InputError as exc:
            problems.extend(p for p in exc.problems if isinstance(p, Problem))
            continue
        yield record


def _env(trajectory: dict[str, Any]) -> str | None:
    """The world kind a trajectory names, else its instance's when a shipped suite has that instance: validate has
    no bench to look the instance up in."""
    from eebench.suites import shipped_instance_envs

    return trajectory.get("env") or shipped_instance_envs().get(trajectory["instance"])


def _check_episode_order(record: Record) -> None:
    """The episode indices a rooms log's steps carry never decrease (their bound is the instance's, checked by
    grade)."""
    from eebench.world.rooms import check_episodes

    steps = record.value["steps"]
    try:
        check_episodes(((i, step["episode"]) for i, step in enumerate(steps) if "episode" in step), None)
    except InputError as exc:
        raise InputError([Problem(record.file, record.line, p.field, p.message) for p in exc.problems
                          if isinstance(p, Problem)]) from None


def _repeated(trajectory_id: str, file: str, line: int | None, item: str | None,
              seen: dict[str, str]) -> list[Problem]:
    """The grader's rule and words (evaluator.grade._check_unique): an id read a second time is a problem."""
    where = file + (f":{line}" if line is not None else f" {item}" if item else "")
    first = seen.setdefault(trajectory_id, where)
    if first == where:
        return []
    return [Problem(file, line, f"{item}.id" if item else "id",
                    f"trajectory id {trajectory_id!r} was already read at {first}; ids must be unique")]


def _is_json_list(path: Path) -> bool:
    """A .json file holding a list: trajectories, as the grader reads them."""
    return path.suffix.lower() == ".json" and isinstance(parse_text(read_text(path), str(path), yaml_syntax=False),
                                                         list)


def _validate_trajectories(path: Path, seen: dict[str, str]) -> str:
    problems: list[Problem] = []
    count = 0
    for record in _unique_key_records(path, problems):  # a malformed line is reported and the next one read
        full = schema_problems(record.value, "trajectory", record.file, line=record.line) \
            if isinstance(record.value, dict) and record.value.get("eebench") == "trajectory/1" else []
        if record.in_list:  # name the item of a .json list, as the grader does
            full = [p._replace(field=f"[{record.index}]" + (f".{p.field}" if p.field else "")) for p in full]
        try:
            check_trajectory(record)
        except InputError as exc:
            # the grader's check stops at the first problem; the schema, which covers all it checks, names them all
            problems.extend(full or [p for p in exc.problems if isinstance(p, Problem)])
            continue
        problems.extend(full)
        count += 1
        problems.extend(_repeated(record.value["id"], record.file, record.line,
                                  f"[{record.index}]" if record.in_list else None, seen))
        if not full:
            try:  # the sums the results table must hold, and a rooms log's episode order: grade's own checks
                usage_totals(record.value["steps"], record.file, record.line)
                if any("episode" in step for step in record.value["steps"]) and _env(record.value) == "rooms":
                    _check_episode_order(record)
            except InputError as exc:
                problems.extend(p for p in exc.problems if isinstance(p, Problem))
    if problems:
        raise InputError(problems)
    if not count:  # one rule with grade and convert: an input that holds nothing is a mistake
        raise InputError.at(str(path), f"is empty; expected {EMPTY_EXPECTED}")
    return f"{count} trajectory/1 records"
