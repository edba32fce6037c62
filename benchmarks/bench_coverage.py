"""Coverage and revisits: what the coverage family adds to grading the main suite (target: at most 30%), and
grading 100 MB of logged text-game trajectories (target: >= 20 MB/s).

Main suite: 10,000 random-word trajectories of the park2026-main instances with the shipped checkpoints (every
cell, every node discovered and achieved), graded end to end (`grade_files`: parse, replay, DuckDB) with and
without the coverage family in the same process, five times each in turns; CPU seconds (this process and DuckDB's
threads), the best of each, as the machine is shared; the wall seconds (best of each too) are in the note.
Logged: trajectories of 40 steps whose observations carry a `-= Room =-` header (about 2.5 kB a step with the
model's output), graded with a checkpoints file of 12 rooms and 6 regexes; the baseline is reading and parsing the
same file (`json.loads` per line), the floor of any grader.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import Result
from eebench.checkpoints import library
from eebench.evaluator import Bench, families, grade_files
from eebench.instances import write_instances
from eebench.suites import resolve_spec

WORDS = ("up", "down", "left", "right")
ROOMS = ("Kitchen", "Cellar", "Attic", "Garden", "Hall", "Study", "Pantry", "Bedroom", "Bathroom", "Library",
         "Garage", "Porch")
LOGGED_MB = 100
RUNS = 5   # of the main-suite grade with and without coverage, in turns (the best of each is the figure)
CHECKPOINTS = """eebench: checkpoints/1
name: bench-text
sets:
  - instances: ["tw/*"]
    state: {field: observation, regex: '-= (.+?) =-'}
    checkpoints:
""" + "".join(f"      - {{id: room-{r.lower()}, state: {r}}}\n" for r in ROOMS) + """\
      - {id: took-coin, field: action, regex: '^take coin$'}
      - {id: opened-chest, field: action, regex: '^open (wooden )?chest'}
      - {id: saw-key, field: observation, regex: 'a (rusty|golden) key'}
      - {id: ate, field: action, regex: '^eat '}
      - {id: thought-map, field: reasoning, regex: 'map of the house'}
      - {id: coin-and-chest, all: [took-coin, opened-chest]}
"""


def _times(fn: Callable[[], Any]) -> tuple[float, float]:
    """CPU seconds (every thread of the process: DuckDB's writer too) and wall seconds of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def _best(times: list[tuple[float, float]]) -> tuple[float, float]:
    """The least CPU and the least wall time of some calls' `_times`."""
    return min(cpu for cpu, _ in times), min(wall for _, wall in times)


def _without_coverage() -> Callable[[], None]:
    """Take the coverage family out of the registry; returns the undo."""
    kept = families.registered()
    families.registered = lambda: tuple(f for f in kept if f.name != "coverage")  # type: ignore[assignment]
    families.families_for.cache_clear()

    def undo() -> None:
        families.registered = _registered  # type: ignore[assignment]
        families.families_for.cache_clear()
    return undo


_registered = families.registered


def _main_suite(tmp: Path) -> list[Result]:
    suite = resolve_spec("park2026-main")
    instances = list(suite.instances())
    write_instances(instances, tmp / "main", suite.source())
    rng = random.Random(0)
    runs = tmp / "main.jsonl"
    with runs.open("w") as handle:
        for k in range(10_000):
            instance = instances[k % len(instances)]
            handle.write(json.dumps({"eebench": "trajectory/1", "id": f"run/{k}", "instance": instance.id,
                                     "agent": {"name": "random-words"},
                                     "steps": [{"action": rng.choice(WORDS)} for _ in range(instance.budget)]})
                         + "\n")

    def grade() -> None:
        db = tmp / "main.duckdb"
        db.unlink(missing_ok=True)
        grade_files([runs], Bench(tmp / "main"), db)

    def without_coverage() -> tuple[float, float]:
        undo = _without_coverage()
        try:
            return _times(grade)
        finally:
            undo()

    grade()  # warm: imports, shipped checkpoint files
    # in turns, so a machine that slows down or speeds up meanwhile weighs on both alike
    pairs = [(_times(grade), without_coverage()) for _ in range(RUNS)]
    with_coverage, with_wall = _best([with_ for with_, _ in pairs])
    without, without_wall = _best([without for _, without in pairs])
    return [Result("grade main suite, 10k trajectories, with coverage (CPU s; baseline: without)", with_coverage,
                   "s", without, "<= 1.30x the time without coverage",
                   f"+{100 * (with_coverage / without - 1):.0f}%; wall {with_wall:.2f} s against {without_wall:.2f} s, "
                   f"+{100 * (with_wall / without_wall - 1):.0f}%")]


def _logged(tmp: Path) -> list[Result]:
    rng = random.Random(1)
    runs = tmp / "logged.jsonl"
    size, k = 0, 0
    with runs.open("w") as handle:
        while size < LOGGED_MB * 1_000_000:
            room = rng.choice(ROOMS)
            steps = []
            for _ in range(40):
                if rng.random() < 0.3:
                    room = rng.choice(ROOMS)
                action = rng.choice(("go east", "go west", "take coin", "open wooden chest", "eat apple", "look",
                                     "inventory", "examine table"))
                observation = (f"-= {room} =-\\nYou are in a {room.lower()}. " + "It is dusty and quiet. " * 12
                               + rng.choice(("You see a rusty key.", "There is nothing here.", "A chest sits here.")))
                steps.append({"action": action, "observation": observation,
                              "raw": "Thought: I should look around the house. " * 20 + f"Action: {action}",
                              "reasoning": "I will explore systematically. " * 8, "tokens_in": 900, "tokens_out": 80})
            line = json.dumps({"eebench": "trajectory/1", "id": f"log/{k}", "instance": f"tw/game-{k % 20}",
                               "env": "logged", "agent": {"name": "llm", "model": "m"}, "steps": steps}) + "\n"
            handle.write(line)
            size += len(line)
            k += 1
    cp = tmp / "cp.yaml"
    cp.write_text(CHECKPOINTS)
    checkpoints = library([cp])
    mb = runs.stat().st_size / 1e6
    seconds, parse, _ = _grade_and_parse(runs, tmp / "logged.duckdb", checkpoints)
    return [Result(f"grade {mb:.0f} MB of logged trajectories ({k:,}, 40 steps each); baseline: json.loads",
                   mb / seconds, "MB/s", mb / parse, ">= 20 MB/s"), *_real_logs(tmp)]


def _grade_and_parse(runs: Path, db: Path, checkpoints: Any = None) -> tuple[float, float, Any]:
    """Seconds to grade logged `runs` (no bench), seconds to parse them (`json.loads` per line: the baseline),
    and the grade's report."""
    start = time.perf_counter()
    report = grade_files([runs], None, db, checkpoints=checkpoints)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    with runs.open("rb") as handle:
        for raw in handle:
            json.loads(raw)
    return seconds, time.perf_counter() - start, report


# the text-game logs of ../shared/data/text-games, converted as `make textgames` converts them
TEXT_GAMES = (("balrog-textworld-llama-3.1-8b", {}), ("balrog-expt-coincollector/AgentCC/results", {}),
              ("alfworld-textcraft-adapt/results", {}), ("scienceworld-oracle", {"name": "oracle"}))
REAL_MB = 100


def _real_logs(tmp: Path) -> list[Result]:
    """Every text-game log of the data, converted, then copied under new ids to REAL_MB as the issue's 100 MB, each
    copy's texts made its own (a copy number after each observation: a text seen in another copy would be found in
    what the plan's regexes already found, where a real log of that size shows new games), graded with the shipped
    checkpoint sets (60 room regexes a step on a CoinCollector map), end to end, median of three. Skipped when the
    data is not there (TEXTGAMES_DATA, default ../shared/data/text-games)."""
    import os
    import statistics

    import orjson

    from eebench.adapters.convert import ConvertOptions, convert_files

    data = Path(os.environ.get("TEXTGAMES_DATA", Path(__file__).parents[2] / "shared" / "data" / "text-games"))
    lines = []
    for folder, labels in TEXT_GAMES:
        if not (data / folder).is_dir():
            return []
        convert_files([data / folder], "auto", tmp / "tg.jsonl", ConvertOptions(labels=labels))
        lines += [orjson.loads(line) for line in (tmp / "tg.jsonl").read_bytes().splitlines()]
    runs = tmp / "tg-many.jsonl"
    size, copy = 0, 0
    with runs.open("wb") as handle:
        while size < REAL_MB * 1_000_000:
            for doc in lines:
                steps = [{**step, "observation": f"{step['observation']}\n(copy {copy})"}
                         if isinstance(step.get("observation"), str) else step for step in doc["steps"]]
                line = orjson.dumps({**doc, "id": f"{doc['id']}/copy-{copy}", "steps": steps}) + b"\n"
                handle.write(line)
                size += len(line)
            copy += 1
    timings = []
    for _ in range(3):
        (tmp / "tg.duckdb").unlink(missing_ok=True)
        timings.append(_grade_and_parse(runs, tmp / "tg.duckdb"))
    seconds, parse = (statistics.median(t[k] for t in timings) for k in (0, 1))
    return [Result(f"grade {size / 1e6:.0f} MB of the real text-game logs ({timings[0][2].trajectories:,} "
                   "trajectories, shipped checkpoint sets); baseline: json.loads", size / 1e6 / seconds, "MB/s",
                   size / 1e6 / parse, ">= 20 MB/s", note=f"{len(lines)} trajectories copied {copy} times, each copy's "
                   "texts its own")]


def run() -> list[Result]:
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        return _main_suite(tmp) + _logged(tmp)
