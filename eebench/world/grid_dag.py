"""Rules of the grid-map + task-DAG world of Park et al. (2026): instance, state, moves, transition, observation.

Cells are indexed `y * width + x`. A state is four integers: the timestep, the agent's cell, the set of observed
cells and the set of achieved nodes, the two sets as bit masks. The transition is a pure function of a state
and an action, so replaying a trajectory is a plain loop and a state can be kept, compared or hashed freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from eebench.errors import EebenchError, did_you_mean, quoted

ACTIONS: tuple[str, ...] = ("up", "down", "left", "right")
DELTAS: tuple[tuple[int, int], ...] = ((0, -1), (0, 1), (-1, 0), (1, 0))  # up = y-1: rows count from the top
ACTION_INDEX = {name: i for i, name in enumerate(ACTIONS)}  # the canonical words; parse_action for the rest


def parse_action(word: Any) -> int | None:
    """Index of a move word (case and surrounding spaces ignored), or None for anything else."""
    if not isinstance(word, str):  # None, numbers, lists (some unhashable): never a move
        return None
    index = ACTION_INDEX.get(word)
    if index is None:
        index = ACTION_INDEX.get(word.strip().lower())
    return index


class NodeStatus(str, Enum):
    UNDISCOVERED = "undiscovered"
    DISCOVERED = "discovered"
    ACHIEVED = "achieved"


class Node(NamedTuple):
    id: str
    pos: tuple[int, int]
    requires: tuple[tuple[str, ...], ...]  # alternatives (OR) of sets of node ids (AND); () = none


@dataclass(frozen=True)
class GridDagInstance:
    """A validated grid_dag instance: the map, the start, the task DAG, the goal and the budget."""

    id: str
    map: tuple[str, ...]
    start: tuple[int, int]
    nodes: tuple[Node, ...]
    goal: str
    budget: int
    names: str | None = None
    meta: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def width(self) -> int:
        return len(self.map[0])

    @property
    def height(self) -> int:
        return len(self.map)

    def is_free(self, x: int, y: int) -> bool:
        return 0 <= y < self.height and 0 <= x < self.width and self.map[y][x] == "."

    def free_cells(self) -> list[tuple[int, int]]:
        return [(x, y) for y, row in enumerate(self.map) for x, ch in enumerate(row) if ch == "."]

    def to_document(self) -> dict[str, Any]:
        """The instance/1 document, the form canonical JSON and digests are taken over."""
        doc: dict[str, Any] = {
            "eebench": "instance/1",
            "id": self.id,
            "env": "grid_dag",
            "map": list(self.map),
            "start": list(self.start),
            "nodes": [{"id": n.id, "pos": list(n.pos), "requires": [list(a) for a in n.requires]} for n in self.nodes],
            "goal": self.goal,
            "budget": self.budget,
        }
        if self.names is not None:
            doc["names"] = self.names
        if self.meta is not None:
            doc["meta"] = self.meta
        return doc

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> GridDagInstance:
        """Build from a document that passed the schema and `semantic_problems`."""
        return cls(
            id=doc["id"],
            map=tuple(doc["map"]),
            start=(doc["start"][0], doc["start"][1]),
            nodes=tuple(Node(n["id"], (n["pos"][0], n["pos"][1]), tuple(tuple(a) for a in n["requires"]))
                        for n in doc["nodes"]),
            goal=doc["goal"],
            budget=doc["budget"],
            names=doc.get("names"),
            meta=doc.get("meta"),
        )


def semantic_problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, reason) for every rule of the world a schema-valid instance document breaks."""
    problems: list[tuple[str, str]] = []
    rows: list[str] = doc["map"]
    width, height = len(rows[0]), len(rows)
    for y, row in enumerate(rows):
        if len(row) != width:
            problems.append((f"map[{y}]", f"expected {width} cells like map[0], found {len(row)}"))
    if problems:
        return problems

    def free(pos: list[int]) -> bool:
        return pos[0] < width and pos[1] < height and rows[pos[1]][pos[0]] == "."

    start = doc["start"]
    if not free(start):
        where = "outside the map" if start[0] >= width or start[1] >= height else "on an obstacle"
        problems.append(("start", f"{start} is {where}; the start must be a free cell"))

    ids: dict[str, int] = {}
    cells: dict[tuple[int, int], int] = {}
    for i, node in enumerate(doc["nodes"]):
        if node["id"] in ids:
            problems.append((f"nodes[{i}].id", f"duplicate id {quoted(node['id'])} (also nodes[{ids[node['id']]}])"))
        ids.setdefault(node["id"], i)
        pos = tuple(node["pos"])
        if not free(node["pos"]):
            where = "outside the map" if pos[0] >= width or pos[1] >= height else "on an obstacle"
            problems.append((f"nodes[{i}].pos", f"{list(pos)} is {where}; nodes sit on free cells"))
        elif pos == tuple(start):
            problems.append((f"nodes[{i}].pos", f"{list(pos)} is the start cell, which carries no node"))
        elif pos in cells:
            problems.append((f"nodes[{i}].pos", f"{list(pos)} already holds nodes[{cells[pos]}]"))
        cells.setdefault(pos, i)

    parents: dict[str, set[str]] = {n["id"]: set() for n in doc["nodes"]}
    for i, node in enumerate(doc["nodes"]):
        for j, alternative in enumerate(node["requires"]):
            for k, parent in enumerate(alternative):
                where = f"nodes[{i}].requires[{j}][{k}]"
                if parent not in ids:
                    problems.append((where, f"names unknown node {quoted(parent)}{did_you_mean(parent, ids)}"))
                elif parent == node["id"]:
                    problems.append((where, f"node {quoted(parent)} requires itself"))
                elif alternative.index(parent) != k:
                    problems.append((where, f"{quoted(parent)} appears twice in one alternative"))
                else:
                    parents[node["id"]].add(parent)

    goal = doc["goal"]
    if goal not in ids:
        problems.append(("goal", f"names unknown node {quoted(goal)}{did_you_mean(goal, ids)}"))
    if problems:
        return problems

    cycle = _find_cycle(parents)
    if cycle:
        problems.append(("nodes", "prerequisites form a cycle: " + " -> ".join(cycle)))
        return problems
    children: dict[str, set[str]] = {u: set() for u in parents}
    for v, ps in parents.items():
        for u in ps:
            children[u].add(v)
    for u in ids:
        if u != goal and not children[u]:
            problems.append((f"nodes[{ids[u]}]",
                             f"{quoted(u)} is a sink but not the goal; the goal must be the one sink"))
    if children[goal]:
        problems.append(("goal", f"{quoted(goal)} is required by {sorted(children[goal])}; the goal must be a sink"))
    ancestors = _ancestors(goal, parents)
    for u in ids:
        if u != goal and u not in ancestors and children[u]:
            problems.append((f"nodes[{ids[u]}]", f"{quoted(u)} is not an ancestor of the goal {quoted(goal)}"))

    unreachable = _unreachable(rows, tuple(start))
    if unreachable:
        x, y = unreachable[0]
        more = f" and {len(unreachable) - 1} more" if len(unreachable) > 1 else ""
        problems.append(("map", f"free cell [{x}, {y}]{more} cannot be reached from the start"))
    return problems


def _find_cycle(parents: dict[str, set[str]]) -> list[str]:
    """One cycle as [u, ..., u], or []: a depth-first search with its own stack (chains may be long)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in sorted(parents):
        if root in state:
            continue
        state[root] = 1
        path = [root]
        stack = [iter(sorted(parents[root]))]
        while stack:
            for p in stack[-1]:
                if state.get(p) == 1:
                    return path[path.index(p):] + [p]
                if p not in state:
                    state[p] = 1
                    path.append(p)
                    stack.append(iter(sorted(parents[p])))
                    break
            else:
                stack.pop()
                state[path.pop()] = 2
    return []


def _ancestors(node: str, parents: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [node]
    while todo:
        for p in parents[todo.pop()]:
            if p not in seen:
                seen.add(p)
                todo.append(p)
    return seen


def _unreachable(rows: list[str], start: tuple[int, int]) -> list[tuple[int, int]]:
    width, height = len(rows[0]), len(rows)
    seen = {start}
    todo = [start]
    while todo:
        x, y = todo.pop()
        for dx, dy in DELTAS:
            nx, ny = x + dx, y + dy
            if 0 <= nx < width and 0 <= ny < height and rows[ny][nx] == "." and (nx, ny) not in seen:
                seen.add((nx, ny))
                todo.append((nx, ny))
    return [(x, y) for y, row in enumerate(rows) for x, ch in enumerate(row) if ch == "." and (x, y) not in seen]


class State(NamedTuple):
    """Where an episode stands: timestep, agent cell, observed cells (bit mask), achieved nodes (bit mask)."""

    t: int
    pos: int
    observed: int
    achieved: int


class Step(NamedTuple):
    """The outcome of one action."""

    state: State
    valid: bool      # the agent moved; an obstacle, the map's edge or a non-move word leave it in place
    new_cell: bool   # the agent entered a cell it had never observed
    achieved: int    # index of the node this step achieved, or -1


class GridDagWorld:
    """The rules of one instance, precomputed as flat tables: moves, neighbours, nodes, prerequisites."""

    def __init__(self, instance: GridDagInstance):
        self.instance = instance
        self.width = width = instance.width
        self.height = height = instance.height
        self.n_cells = n = width * height
        self.free: list[bool] = [ch == "." for row in instance.map for ch in row]
        # step_to[cell * 4 + action]: the cell the action leads to, or -1 when it is inadmissible there
        self.step_to: list[int] = [-1] * (4 * n)
        self.neighbours: list[int] = [0] * n  # bit mask of the free neighbours of each cell
        self.adjacent: list[list[int]] = [[] for _ in range(n)]   # the same as a list, in action order (BFS)
        for cell in range(n):
            if not self.free[cell]:
                continue
            x, y = cell % width, cell // width
            for a, (dx, dy) in enumerate(DELTAS):
                nx, ny = x + dx, y + dy
                if 0 <= nx < width and 0 <= ny < height and self.free[ny * width + nx]:
                    self.step_to[4 * cell + a] = ny * width + nx
                    self.neighbours[cell] |= 1 << (ny * width + nx)
                    self.adjacent[cell].append(ny * width + nx)
        self.node_ids: list[str] = [node.id for node in instance.nodes]
        index = {node_id: i for i, node_id in enumerate(self.node_ids)}
        self.node_index = index
        self.node_cell: list[int] = [node.pos[1] * width + node.pos[0] for node in instance.nodes]
        self.node_at: list[int] = [-1] * n
        for i, cell in enumerate(self.node_cell):
            self.node_at[cell] = i
        # each alternative of a node's prerequisites as a bit mask over node indices
        self.requires: list[tuple[int, ...]] = [
            tuple(sum(1 << index[p] for p in alternative) for alternative in node.requires)
            for node in instance.nodes]
        children: list[set[int]] = [set() for _ in instance.nodes]   # (one pass over the requirements: a goal
        for j, other in enumerate(instance.nodes):                     # requiring 999 nodes took 1 s node by node)
            for alternative in other.requires:
                for parent in alternative:
                    children[index[parent]].add(j)
        self.children: list[tuple[int, ...]] = [tuple(sorted(c)) for c in children]
        self.goal = index[instance.goal]
        self.start = instance.start[1] * width + instance.start[0]
        self.budget = instance.budget

    # -- geometry -------------------------------------------------------------------------------
    def cell(self, x: int, y: int) -> int:
        return y * self.width + x

    def xy(self, cell: int) -> tuple[int, int]:
        return cell % self.width, cell // self.width

    def admissible(self, cell: int) -> list[int]:
        return [a for a in range(4) if self.step_to[4 * cell + a] >= 0]

    # -- the task DAG ---------------------------------------------------------------------------
    def prerequisites_met(self, node: int, achieved: int) -> bool:
        """prec(u): no prerequisites, or every node of at least one alternative achieved."""
        alternatives = self.requires[node]
        return not alternatives or any(mask & achieved == mask for mask in alternatives)

    def status(self, state: State, node: int) -> NodeStatus:
        if state.achieved >> node & 1:
            return NodeStatus.ACHIEVED
        if state.observed >> self.node_cell[node] & 1:
            return NodeStatus.DISCOVERED
        return NodeStatus.UNDISCOVERED

    def pending(self, state: State) -> list[int]:
        """P(t): discovered nodes whose prerequisites hold, ready to be achieved by a visit."""
        return [u for u in range(len(self.node_cell))
                if not state.achieved >> u & 1 and state.observed >> self.node_cell[u] & 1
                and self.prerequisites_met(u, state.achieved)]

    def unobserved(self, state: State) -> int:
        """U(t) as a bit mask: free neighbours of observed cells that are not observed themselves."""
        frontier = 0
        observed = state.observed
        while observed:
            low = observed & -observed
            frontier |= self.neighbours[low.bit_length() - 1]
            observed ^= low
        return frontier & ~state.observed

    # -- dynamics -------------------------------------------------------------------------------
    def initial_state(self) -> State:
        return State(0, self.start, 1 << self.start, 0)

    def step(self, state: State, action: int | None) -> Step:
        """Apply one action; an inadmissible one leaves the agent in place and still costs a timestep."""
        target = -1 if action is None else self.step_to[4 * state.pos + action]
        if target < 0:
            return Step(State(state.t + 1, state.pos, state.observed, state.achieved), False, False, -1)
        bit = 1 << target
        achieved = state.achieved
        got = self.node_at[target]
        if got >= 0 and not achieved >> got & 1 and self.prerequisites_met(got, achieved):
            achieved |= 1 << got
        else:
            got = -1
        return Step(State(state.t + 1, target, state.observed | bit, achieved), True, not state.observed & bit, got)

    def goal_achieved(self, state: State) -> bool:
        return bool(state.achieved >> self.goal & 1)

    def is_over(self, state: State) -> bool:
        """The episode ends when the goal is achieved or the budget is spent."""
        return self.goal_achieved(state) or state.t >= self.budget

    # -- observation ----------------------------------------------------------------------------
    def observe(self, state: State, *, action: str | None = None, valid: bool = True) -> dict[str, Any]:
        """What the agent is told after a step: its position, admissible moves and the node on its cell.

        Node locations are never revealed, only ids: a node's prerequisite alternatives and its children.
        """
        x, y = self.xy(state.pos)
        obs: dict[str, Any] = {
            "t": state.t,
            "position": [x, y],
            "moves": [ACTIONS[a] for a in self.admissible(state.pos)],
            "node": None,
        }
        if action is not None:
            obs["action"] = action
            obs["valid"] = valid
        node = self.node_at[state.pos]
        if node >= 0:
            obs["node"] = {
                "id": self.node_ids[node],
                "status": self.status(state, node).value,
                "goal": node == self.goal,
                "requires": [list(alt) for alt in self.instance.nodes[node].requires],
                "children": [self.node_ids[c] for c in self.children[node]],
            }
        return obs


def render_observation(obs: dict[str, Any]) -> str:
    """The observation as the text an LLM agent reads (in the spirit of Park et al., Appendix C.3)."""
    x, y = obs["position"]
    lines = []
    if "action" in obs:
        if obs["valid"]:   # the move as the world read it (an echoed "up\n" broke the line)
            move = parse_action(obs["action"])
            lines.append(f"You moved {obs['action'] if move is None else ACTIONS[move]}. You are at [{x}, {y}].")
        else:
            lines.append(f"You could not move {obs['action']!r}; you stay at [{x}, {y}].")
    else:
        lines.append(f"You are at [{x}, {y}].")
    lines.append("Admissible moves: " + (", ".join(obs["moves"]) or "none") + ".")
    node = obs["node"]
    if node is None:
        lines.append("There is no node here.")
        return "\n".join(lines)
    goal = " It is the goal." if node["goal"] else ""
    lines.append(f"There is node {node['id']} here.{goal}")
    if node["status"] == NodeStatus.ACHIEVED.value:
        lines.append(f"{node['id']} is achieved.")
    else:
        lines.append(f"{node['id']} is not achieved: its prerequisites are not met yet; come back once they are.")
    lines.append("Prerequisites: " + describe_prerequisites(node["requires"]) + ".")
    if node["children"]:
        lines.append("It is a prerequisite of: " + ", ".join(node["children"]) + ".")
    return "\n".join(lines)


def describe_prerequisites(requires: list[list[str]]) -> str:
    """'(A and B) or C' for alternatives [[A, B], [C]]; 'none' for []."""
    if not requires:
        return "none"
    parts = [" and ".join(alt) for alt in requires]
    if len(parts) == 1:
        return parts[0]
    return " or ".join(f"({p})" if len(alt) > 1 else p for p, alt in zip(parts, requires))


class GridDagEnv:
    """The world behind the Gymnasium API shape: `reset(seed=...)` and `step(action) -> 5-tuple`."""

    def __init__(self, instance: GridDagInstance | Mapping[str, Any]):
        from eebench.world.kinds import instance_for

        self.world = GridDagWorld(instance_for("grid_dag", instance, "GridDagEnv"))
        self.state = self.world.initial_state()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
        """Start over. The world has no randomness: `seed` is accepted for the API's sake."""
        del seed, options
        self.state = self.world.initial_state()
        return self.world.observe(self.state), {"t": 0}

    def step(self, action: str) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.world.is_over(self.state):
            raise EebenchError("the episode is over; call reset() first")
        result = self.world.step(self.state, parse_action(action))
        self.state = result.state
        terminated = self.world.goal_achieved(result.state)
        truncated = not terminated and result.state.t >= self.world.budget
        info = {
            "t": result.state.t,
            "valid": result.valid,
            "achieved": self.world.node_ids[result.achieved] if result.achieved >= 0 else None,
        }
        obs = self.world.observe(result.state, action=str(action), valid=result.valid)
        return obs, 1.0 if terminated else 0.0, terminated, truncated, info

    def render(self) -> str:
        return render_text(self.world.instance, agent=self.world.xy(self.state.pos))


def render_text(instance: GridDagInstance, *, agent: tuple[int, int] | None = None) -> str:
    """The oracle's view of a map: '#' obstacle, '.' free, 'S' start, '@' agent, letters for nodes, with a key."""
    labels = {}
    key = []
    for i, node in enumerate(instance.nodes):
        mark = "G" if node.id == instance.goal else (chr(ord("a") + i) if i < 26 else "*")
        labels[node.pos] = mark
        key.append(f"  {mark} {node.id} at {list(node.pos)} requires {describe_prerequisites([list(a) for a in node.requires])}")
    grid = []
    for y, row in enumerate(instance.map):
        cells = []
        for x, ch in enumerate(row):
            if agent == (x, y):
                cells.append("@")
            elif (x, y) == instance.start:
                cells.append("S")
            else:
                cells.append(labels.get((x, y), ch))
        grid.append(" ".join(cells))
    header = f"{instance.id}: {instance.width}x{instance.height}, budget {instance.budget}, goal {instance.goal}"
    return "\n".join([header, *grid, "nodes:", *key])
