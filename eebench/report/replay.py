"""Replay documents: each trajectory's graded steps, its instance's map, node events and the log's text per step.

The steps come from the results file; the map from the instances (`--bench`), checked against the digest that was
graded; the text (observation, raw output, reasoning) from the trajectory file named in `source_file`, when it
is still there and still holds that trajectory at that line.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from enum import IntEnum
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from eebench.documents import special_file
from eebench.errors import InputError
from eebench.instances import Bench, InstanceLibrary
from eebench.report.data import MAX_TEXT_CHARS, TEXT_FIELDS, Results
from eebench.trajectories import read_raw_records
from eebench.world.grid_dag import GridDagInstance, GridDagWorld

class NodeEvent(IntEnum):
    """A node's status after a step, as a replay's node events [t, node index, status] carry it."""

    DISCOVERED = 1
    ACHIEVED = 2


DISCOVERED, ACHIEVED = NodeEvent.DISCOVERED, NodeEvent.ACHIEVED


def _digits(values: np.ndarray) -> str:
    """Small non-negative integers (cases, 0/1 flags) as one string of digits: compact in JSON."""
    return (np.asarray(values, dtype=np.uint8) + 48).tobytes().decode("ascii")


def instance_map(instance: Any) -> dict[str, Any]:
    """What the browser draws of an instance: a grid's rows, start and nodes; or the rooms, doors and balls."""
    if not isinstance(instance, GridDagInstance):
        return rooms_map(instance)
    return {"env": "grid_dag", "w": instance.width, "h": instance.height, "map": list(instance.map),
            "start": list(instance.start),
            "nodes": [{"id": n.id, "x": n.pos[0], "y": n.pos[1], "goal": n.id == instance.goal,
                       "requires": [list(a) for a in n.requires]} for n in instance.nodes]}


def rooms_map(instance: Any) -> dict[str, Any]:
    """A rooms world for drawing: each room at its `layout` position, or where a seeded spring layout puts it."""
    layout = instance.layout
    if layout is None:
        import networkx as nx

        graph = nx.Graph()
        graph.add_nodes_from(instance.rooms)
        graph.add_edges_from(door.between for door in instance.doors)
        side = max(1, round(len(instance.rooms) ** 0.5))
        placed = nx.spring_layout(graph, seed=0)   # in [-1, 1]^2: spread over a grid of about side x side
        layout = {room: (round(float(x) * side, 3), round(float(y) * side, 3)) for room, (x, y) in placed.items()}
    return {"env": "rooms", "start": instance.start,
            "rooms": [{"id": room, "x": layout[room][0], "y": layout[room][1]} for room in instance.rooms],
            "doors": [{"name": door.name, "between": list(door.between)} for door in instance.doors],
            "balls": [{"name": ball.name, "room": ball.room, "reward": ball.reward} for ball in instance.balls]}


class Maps:
    """Instances by id from the --bench folders, each kept only if it is the instance that was graded."""

    def __init__(self, bench: Path | Bench | Sequence[Path | Bench] | None, results: Results):
        self.docs: dict[str, dict[str, Any]] = {}
        self.worlds: dict[str, GridDagWorld] = {}
        benches = [] if bench is None else [bench] if isinstance(bench, (str, Path, Bench)) else list(bench)
        rows = results.trajectories
        # a logged world (a text game) has no instance eebench could draw: neither looked for nor missed
        graded = {i: sha for i, sha, env in zip(rows["instance_id"], rows["instance_sha256"], rows["env"],
                                                 strict=True) if env != "logged"}
        if not graded:
            return
        if not benches:
            results.notes.append("maps show only the cells the agents visited: pass --bench to draw the instances")
            return
        # an opened bench is named as given (an archive's root is a temporary folder: the page would differ)
        libraries = [InstanceLibrary(b.root if isinstance(b, Bench) else b) for b in benches]
        where = ", ".join(b.where if isinstance(b, Bench) else str(b) for b in benches)
        missing, changed, unreadable = [], [], []
        for instance_id, sha in sorted(graded.items()):
            library = next((lib for lib in libraries if lib.path_for(instance_id) is not None), None)
            if library is None:
                missing.append(instance_id)
                continue
            try:
                loaded = library.get(instance_id)
            except InputError as exc:   # e.g. a world kind this eebench does not know: report without its map
                unreadable.append(str(exc.problems[0]))
                continue
            if sha is not None and loaded.sha256 != sha:
                changed.append(instance_id)
                continue
            self.docs[instance_id] = instance_map(loaded.instance)
            if isinstance(loaded.instance, GridDagInstance):
                self.worlds[instance_id] = GridDagWorld(loaded.instance)
        if missing:
            results.notes.append(f"{len(missing)} instance(s) not found in {where}, e.g. {missing[0]}")
        if unreadable:
            results.notes.append(f"{len(unreadable)} instance(s) could not be read, e.g. {unreadable[0]}")
        if changed:
            results.notes.append(f"{len(changed)} instance(s) in {where} differ from the ones graded (sha256), "
                                 f"e.g. {changed[0]}: their maps are left out")


def node_events(world: GridDagWorld, xs: np.ndarray, ys: np.ndarray, valid: np.ndarray) -> list[list[int]]:
    """[t, node, status] when a step's move discovers or achieves a node, by the world's own prerequisite rule."""
    cells = ys.astype(np.int64) * world.width + xs.astype(np.int64)
    node_at = np.asarray(world.node_at, dtype=np.int64)
    hits = np.flatnonzero((node_at[cells] >= 0) & valid.astype(bool))
    seen: set[int] = set()
    achieved = 0
    events = []
    for t in hits.tolist():
        node = int(node_at[cells[t]])
        if node not in seen:
            seen.add(node)
            events.append([t, node, int(DISCOVERED)])
        if not achieved >> node & 1 and world.prerequisites_met(node, achieved):
            achieved |= 1 << node
            events.append([t, node, int(ACHIEVED)])
    return events


def _clip(value: Any) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else orjson.dumps(value).decode()
    return text if len(text) <= MAX_TEXT_CHARS else text[:MAX_TEXT_CHARS] + f" ... [{len(text) - MAX_TEXT_CHARS} more characters]"


def _where_graded(file: str, db: Path) -> str:
    """A trajectory file as grade was given it: a relative path is read from here, or else from the results
    file's folder (`grade runs.jsonl --db results.duckdb` run there, the report made from elsewhere)."""
    path = Path(file)
    if path.is_absolute() or path.exists():
        return file
    beside = Path(db).parent / path
    return str(beside) if beside.exists() else file


def _graded_log_steps(steps: list[Any], episodes: np.ndarray | None) -> list[Any]:
    """The log's steps that were graded, in order. A rooms log whose every step names its episode is graded per
    episode, the steps after the world ended one left out: the first m of each episode are kept, m its graded
    steps (the steps table's `episode`), so that the text of graded step k is that step's. Otherwise the graded
    steps are the log's first ones (the ignored come after the goal, the budget or the last episode)."""
    if episodes is None or not all(isinstance(s, dict) and type(s.get("episode")) is int for s in steps):
        return steps
    left = Counter(np.asarray(episodes).tolist())
    kept = []
    for step in steps:
        if left[step["episode"]] > 0:
            left[step["episode"]] -= 1
            kept.append(step)
    return kept


def step_texts(results: Results, episodes: dict[str, np.ndarray] | None = None
               ) -> dict[str, dict[str, list[str | None]]]:
    """Observation, raw output and reasoning per graded step, read back from the trajectory files (`episodes`:
    each rooms trajectory's graded steps' episodes, to tell its graded steps from its ignored ones)."""
    rows = results.trajectories
    wanted: dict[str, dict[tuple[int | None, str], int]] = {}
    for tid, file, line, n in zip(rows["trajectory_id"], rows["source_file"], rows["source_line"], rows["n_steps"],
                                  strict=True):
        if file is not None:
            wanted.setdefault(file, {})[(None if line is None else int(line), tid)] = int(n)
    texts: dict[str, dict[str, list[str | None]]] = {}
    unreadable = 0
    for file, entries in wanted.items():
        path = _where_graded(file, results.db)
        # graded from standard input or a pipe (`grade -`, `grade <(...)`): gone; reading it would read the
        # report's own standard input, or wait for a writer (a terminal's, a pipe's: forever)
        if file == "-" or special_file(Path(path)):
            unreadable += 1
            continue
        lines = {line for line, _ in entries}
        try:
            for record in read_raw_records(path):
                if record.line not in lines:
                    continue
                raw = record.value
                if isinstance(raw, bytes):
                    if not any(f'"{f}"'.encode() in raw for f in TEXT_FIELDS):
                        continue
                    raw = orjson.loads(raw)
                if not isinstance(raw, dict) or (record.line, raw.get("id")) not in entries:
                    continue
                steps = _graded_log_steps(raw.get("steps") or [], (episodes or {}).get(raw["id"]))
                n = entries[(record.line, raw["id"])]
                found = {f: [_clip(s.get(f)) if isinstance(s, dict) else None for s in steps[:n]] for f in TEXT_FIELDS}
                found = {f: v for f, v in found.items() if any(x is not None for x in v)}
                if found:
                    texts[raw["id"]] = found
        except (InputError, OSError, orjson.JSONDecodeError):
            unreadable += 1
    if unreadable:
        results.notes.append(f"{unreadable} trajectory file(s) could not be read back: their steps show no text")
    return texts


def _rooms_steps(cols: dict[str, np.ndarray] | None, episodes: list[dict[str, Any]]) -> dict[str, Any]:
    """A rooms replay: the room after each step, its episode, and the returns and gaps of each episode."""
    n = 0 if cols is None else len(cols["t"])
    return {"env": "rooms", "room": [] if cols is None else _texts(cols["room"]),
            "episode": [] if cols is None else cols["episode"].astype(np.int64).tolist(),
            "valid": "" if cols is None else _digits(cols["valid"]),
            "action": [] if cols is None else _texts(cols["action"]),
            "episodes": episodes, "x": [0] * n}


def _texts(column: np.ndarray) -> list[str | None]:
    """A text column as a list: its values are str or None already (DuckDB's VARCHAR), read in C; anything else
    as its text."""
    values = column.tolist()
    return values if {str, type(None)}.issuperset(map(type, values)) else [
        None if v is None else str(v) for v in values]


def _logged_steps(cols: dict[str, np.ndarray] | None) -> dict[str, Any]:
    """A logged replay (a world eebench cannot simulate): the state after each step, its visit depth, the action."""
    n = 0 if cols is None else len(cols["t"])
    column = (lambda name: [None] * n if cols is None or name not in cols else cols[name].tolist())  # noqa: E731
    return {"env": "logged", "state": [None if s is None else str(s) for s in column("state")],
            "depth": [None if d is None else int(d) for d in column("visit_depth")],
            "action": [None if a is None else str(a) for a in column("action")], "x": [0] * n}


def replay_documents(results: Results, maps: Maps) -> Iterator[dict[str, Any]]:
    """One document per selected trajectory (in trajectory_id order), as the browser's replay reads it."""
    rows = results.trajectories
    instance_of = dict(zip(rows["trajectory_id"], rows["instance_id"], strict=True))
    env_of = dict(zip(rows["trajectory_id"], rows["env"], strict=True))
    steps = dict(results.steps())
    texts = step_texts(results, {tid: cols["episode"] for tid, cols in steps.items()
                                 if env_of[tid] == "rooms" and "episode" in cols})
    episodes = results.episodes()
    for tid in rows["trajectory_id"]:
        cols = steps.get(tid)
        instance_id = instance_of[tid]
        doc: dict[str, Any] = {"id": tid, "inst": instance_id if instance_id in maps.docs else None}
        if env_of[tid] == "rooms":
            doc.update(_rooms_steps(cols, episodes.get(tid, [])))
            doc["start"] = maps.docs[instance_id]["start"] if instance_id in maps.docs else None
        elif env_of[tid] == "logged":
            doc.update(_logged_steps(cols))
        elif cols is None or not len(cols["t"]):
            start = maps.docs[instance_id]["start"] if instance_id in maps.docs else [0, 0]
            doc.update(start=start, x=[], y=[], case="", err="", xe="", ye="", valid="", stale=[], action=[],
                       nodes=[])
        else:
            xs, ys = cols["to_x"], cols["to_y"]
            doc.update(start=[int(cols["from_x"][0]), int(cols["from_y"][0])], x=xs.tolist(), y=ys.tolist(),
                       case=_digits(cols["case_id"]), err=_digits(cols["error"]),
                       xe=_digits(cols["explore_error"]), ye=_digits(cols["exploit_error"]),
                       valid=_digits(cols["valid"]), stale=cols["stale"].tolist(),
                       action=_texts(cols["action"]),
                       nodes=node_events(maps.worlds[instance_id], xs, ys, cols["valid"])
                       if instance_id in maps.worlds else [])
        if cols is not None and "ecc" in cols and any(v is not None for v in cols["ecc"]):
            doc["ecc"] = [None if v is None else float(v) for v in cols["ecc"]]   # a later family's curve
        if tid in texts:
            doc["text"] = texts[tid]
        yield doc
