"""Exploration checkpoints (checkpoints/1): load, check and compile the declarative file, once, for the grader.

A file holds sets; a set names the instances it applies to (fnmatch patterns over instance ids), optionally how
a logged step's state is read, rules that derive checkpoints from a simulated world, and explicit checkpoints: a
regex searched in a field of a step, a state to be in, or `all` of other checkpoints of the set. Every regex is
compiled here, once; the grader (evaluator/coverage.py) only evaluates.
"""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Iterable
from enum import Enum
from fnmatch import translate
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

from eebench.documents import expect_kind, load_document, load_shipped, validate_schema
from eebench.errors import InputError, Problem, did_you_mean, one_of, quote

KIND = "checkpoints"


class Field(str, Enum):
    """The field of a step a checkpoint's regex is searched in."""

    OBSERVATION = "observation"
    ACTION = "action"
    RAW = "raw"
    REASONING = "reasoning"
    STATE = "state"


class Rule(str, Enum):
    """Checkpoints derived from a simulated world; ids `node:<id>:discovered`, `node:<id>:achieved`, `cell:<x>,<y>`,
    `room:<id>`, `ball:<name>`."""

    NODE_DISCOVERED = "node_discovered"
    NODE_ACHIEVED = "node_achieved"
    CELL_OBSERVED = "cell_observed"
    ROOM_VISITED = "room_visited"
    BALL_COLLECTED = "ball_collected"


# The ids each rule derives; an `all` may name them (one an instance lacks is never hit)
RULE_IDS = {
    Rule.NODE_DISCOVERED: re.compile(r"node:.+:discovered"),
    Rule.NODE_ACHIEVED: re.compile(r"node:.+:achieved"),
    Rule.CELL_OBSERVED: re.compile(r"cell:[0-9]+,[0-9]+"),
    Rule.ROOM_VISITED: re.compile(r"room:.+"),
    Rule.BALL_COLLECTED: re.compile(r"ball:.+"),
}


class Checkpoint(NamedTuple):
    """One explicit checkpoint, compiled: exactly one of (field, regex), state or all is set."""

    id: str
    field: Field | None = None
    regex: re.Pattern[str] | None = None
    state: str | None = None
    all: tuple[str, ...] | None = None


class StateReader(NamedTuple):
    """How a logged step's state is read when the step has no `state`: first group (or whole match) of regex."""

    field: Field
    regex: re.Pattern[str]

    def read(self, step: dict[str, Any]) -> str | None:
        text = step.get(self.field.value)
        if not isinstance(text, str):
            return None
        found = self.regex.search(text)
        if found is None:
            return None
        return found.group(1) if found.re.groups else found.group(0)


class CheckpointSet(NamedTuple):
    """One set of a checkpoints file, compiled; `all` members are listed so that members come first."""

    file: str
    index: int                        # its position in the file's `sets`
    name: str                         # the file's `name`
    instances: tuple[str, ...]
    state: StateReader | None
    rules: tuple[Rule, ...]
    checkpoints: tuple[Checkpoint, ...]

    @property
    def where(self) -> str:
        return f"{self.file}: sets[{self.index}]"

    def matches(self, instance_id: str) -> bool:
        return _matches(self.instances, instance_id)


def _matches(patterns: tuple[str, ...], instance_id: str) -> bool:
    """fnmatch, case-sensitive on every platform (`*` also crosses `/`): one regex per set's patterns, compiled
    when an id first begins with one's literal start (each compiled pattern cost 0.5 ms of a grade's start), so a
    log of 20,000 trajectories, each its own instance, asks each set once per id, not each pattern."""
    return instance_id.startswith(_literal_starts(patterns)) and _set_regex(patterns).match(instance_id) is not None


@functools.cache
def _literal_starts(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The patterns' texts before their first wildcard (`*`, `?`, `[`): every id one matches begins with its own."""
    return tuple(re.split(r"[*?\[]", p, maxsplit=1)[0] for p in patterns)


@functools.cache
def _set_regex(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(translate(p) for p in patterns))


class CheckpointLibrary(NamedTuple):
    """The sets a grading run applies: the files given (`--checkpoints`), and the shipped ones (`shipped`).

    A trajectory takes every given set that matches its instance id; when none does, it takes every shipped set
    that matches (so giving a file for some instances never drops the shipped checkpoints of the others).
    """

    given: tuple[CheckpointSet, ...] = ()
    shipped: bool = False

    def sets_for(self, instance_id: str) -> tuple[CheckpointSet, ...]:
        given = tuple(s for s in self.given if s.matches(instance_id))
        return given or (_shipped_for(instance_id) if self.shipped else ())


def load_checkpoints(path: Path | str) -> tuple[CheckpointSet, ...]:
    """The compiled sets of a checkpoints/1 file; InputError naming file and field path for every problem."""
    file = str(path)
    doc = load_document(path)
    expect_kind(doc, file, KIND)
    validate_schema(doc, KIND, file)
    problems: list[Problem] = []
    sets = tuple(_compile_set(doc["name"], file, i, raw, problems) for i, raw in enumerate(doc["sets"]))
    if problems:
        raise InputError(problems)
    return sets


def library(files: list[Path] | tuple[Path, ...] = (), *, shipped: bool = True) -> CheckpointLibrary:
    """The library of a grading run: the given files (each loaded and checked) and the shipped sets."""
    given: list[CheckpointSet] = []
    problems: list[Problem | str] = []
    for path in files:
        try:
            given.extend(load_checkpoints(path))
        except InputError as exc:
            problems.extend(exc.problems)
    if problems:
        raise InputError(problems)
    return CheckpointLibrary(tuple(given), shipped)


def shipped_sets() -> tuple[CheckpointSet, ...]:
    """Every set of the files shipped in eebench/specs/checkpoints/ (searched recursively), by path."""
    return tuple(_shipped_set(n) for n in range(len(_shipped_raw())))


@functools.cache
def _shipped_raw() -> tuple[tuple[str, dict[str, Any], int], ...]:
    """The shipped files' documents, by path, and each set's position in its file: read at once, compiled per set
    when an instance first matches it (a grid_dag grade compiled the text games' hundreds of regexes: 26 ms).

    eebench's own files are read with libyaml and without the schema pass (the tests check every shipped file
    through the full door): every grade loads them, and the door's pure-Python YAML took half a second."""
    root = resources.files("eebench").joinpath("specs", "checkpoints")
    files = sorted(Path(str(root)).rglob("*.yaml")) if Path(str(root)).is_dir() else []
    docs = [(str(path), load_shipped(path)) for path in files]
    return tuple((file, doc, i) for file, doc in docs for i in range(len(doc["sets"])))


@functools.cache
def _shipped_set(n: int) -> CheckpointSet:
    file, doc, i = _shipped_raw()[n]
    problems: list[Problem] = []
    compiled = _compile_set(doc["name"], file, i, doc["sets"][i], problems)
    if problems:
        raise InputError(problems)
    return compiled


def _shipped_for(instance_id: str) -> tuple[CheckpointSet, ...]:
    """The shipped sets that match an instance id, in file order."""
    lengths, by_start = _shipped_index()
    near = {n for length in lengths for n in by_start.get(instance_id[:length], ())}   # (a dict look-up a length)
    patterns = _shipped_patterns()
    return tuple(_shipped_set(n) for n in sorted(near) if _set_regex(patterns[n]).match(instance_id))


@functools.cache
def _shipped_index() -> tuple[tuple[int, ...], dict[str, tuple[int, ...]]]:
    """The shipped sets by the literal starts of their patterns, and those starts' lengths: a set can match only an
    id that begins with one of its starts (asking all 17 sets of each id of a large log took a tenth of its grade)."""
    by_start: dict[str, list[int]] = {}
    for n, patterns in enumerate(_shipped_patterns()):
        for start in _literal_starts(patterns):
            by_start.setdefault(start, []).append(n)
    return tuple(sorted({len(start) for start in by_start})), {k: tuple(v) for k, v in by_start.items()}


@functools.cache
def _shipped_patterns() -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(doc["sets"][i]["instances"]) for _, doc, i in _shipped_raw())


def _compile_set(name: str, file: str, index: int, raw: dict[str, Any], problems: list[Problem]) -> CheckpointSet:
    at = f"sets[{index}]"

    def problem(field: str, message: str) -> None:
        problems.append(Problem(file, None, f"{at}.{field}", message))

    rules: list[Rule] = []
    known_rules = [r.value for r in Rule]
    for i, rule in enumerate(raw.get("rules", [])):
        if rule in known_rules and Rule(rule) in rules:
            problem(f"rules[{i}]", f"{quote(repr(rule))} is listed twice (also rules[{raw['rules'].index(rule)}])")
        elif rule in known_rules:
            rules.append(Rule(rule))
        else:
            problem(f"rules[{i}]", f"unknown rule {quote(repr(rule))}{did_you_mean(rule, known_rules)}; expected "
                                   f"{one_of(known_rules)}")
    state = None
    if "state" in raw:
        pattern = _regex(raw["state"]["regex"], lambda m: problem("state.regex", m))
        if pattern is not None:
            state = StateReader(Field(raw["state"]["field"]), pattern)
    checkpoints: dict[str, tuple[int, Checkpoint]] = {}
    for i, item in enumerate(raw.get("checkpoints", [])):
        cid = item["id"]
        if cid in checkpoints:
            problem(f"checkpoints[{i}].id",
                    f"duplicate id {quote(repr(cid))} (also checkpoints[{checkpoints[cid][0]}])")
            continue
        deriving = next((rule for rule in rules if RULE_IDS[rule].fullmatch(cid)), None)
        if deriving is not None:
            problem(f"checkpoints[{i}].id", f"{quote(repr(cid))} is an id the set's rule {deriving.value} derives; "
                                            "give this checkpoint another id")
            continue
        if "regex" in item:
            pattern = _regex(item["regex"], lambda m, i=i: problem(f"checkpoints[{i}].regex", m))
            checkpoint = Checkpoint(cid, Field(item["field"]), pattern)
        elif "state" in item:
            checkpoint = Checkpoint(cid, state=item["state"])
        else:
            checkpoint = Checkpoint(cid, all=tuple(item["all"]))
        checkpoints[cid] = (i, checkpoint)
    derived = [RULE_IDS[rule] for rule in rules]
    for cid, (i, checkpoint) in checkpoints.items():
        for k, member in enumerate(checkpoint.all or ()):
            if member not in checkpoints and not any(form.fullmatch(member) for form in derived):
                problem(f"checkpoints[{i}].all[{k}]", f"unknown checkpoint {quote(repr(member))} of this set"
                                                      f"{did_you_mean(member, checkpoints)}")
    ordered = _members_first(checkpoints, lambda i, m: problem(f"checkpoints[{i}].all", m))
    return CheckpointSet(file, index, name, tuple(raw["instances"]), state, tuple(rules), ordered)


def _regex(text: str, report: Any) -> re.Pattern[str] | None:
    try:
        with warnings.catch_warnings():   # ("possible nested set" and the like: Python's notes on a valid pattern)
            warnings.simplefilter("ignore", FutureWarning)
            return re.compile(text)
    except (re.error, OverflowError, RecursionError) as exc:
        report(f"invalid regular expression {quote(repr(text))}: {exc}")
        return None


def _members_first(checkpoints: dict[str, tuple[int, Checkpoint]], report: Any) -> tuple[Checkpoint, ...]:
    """The checkpoints in file order, except that an `all` comes after its members; a cycle is reported."""
    done: dict[str, None] = {}
    visiting: list[str] = []

    def visit(cid: str) -> None:
        if cid in done or cid not in checkpoints:
            return
        if cid in visiting:
            cycle = visiting[visiting.index(cid):] + [cid]
            report(checkpoints[cid][0], f"`all` forms a cycle: {quote(' -> '.join(cycle))}")
            return
        visiting.append(cid)
        for member in checkpoints[cid][1].all or ():
            visit(member)
        visiting.pop()
        done[cid] = None

    for cid in checkpoints:
        visit(cid)
    return tuple(checkpoints[cid][1] for cid in done)
