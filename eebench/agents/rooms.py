"""Baseline agents of the room worlds: a random one, a systematic explorer and an oracle that knows the full map.

One agent plays a whole trajectory (every episode of an instance), so it may remember earlier episodes. It reads
only the structured observation (`RoomsWorld.observe`, plus `action`, `valid`, `reward`, `moved` after a step);
an observation without `action` is the start of an episode. The oracle alone reads the instance.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any, Protocol

import networkx as nx
import numpy as np

from eebench.evaluator.orienteering import OrienteeringProblem, solve
from eebench.generator.rng import StableRng
from eebench.world.rooms import RoomsInstance

AGENTS = ("random", "explorer", "oracle")
IDLE = "wait"  # what an agent says when its room shows nothing: an invalid action, it only spends a step


class Agent(Protocol):
    """An agent may also have `observe(observation)`: play gives it the last observation of each episode."""

    def act(self, observation: dict[str, Any]) -> str:
        """The action text (`<name> door` or `<name> ball`) for this observation."""
        ...


def _door(name: str) -> str:
    return f"{name} door"


def _ball(name: str) -> str:
    return f"{name} ball"


def best_route(graph: nx.Graph, here: Any, balls: Iterable[tuple[str, Any, int]], door_budget: int,
               ball_limit: int) -> list[str]:
    """The actions of an optimal orienteering path: from `here`, at most `door_budget` doors and `ball_limit` balls.

    `graph` joins rooms by edges carrying their door's name (`door`); `balls` are (name, room, reward). The solver
    (eebench.evaluator.orienteering) picks the balls; doors between them follow shortest paths in `graph`.
    """
    stops = [(name, room, reward) for name, room, reward in balls if reward > 0 and room in graph]
    rooms = [here] + [room for _, room, _ in stops]
    lengths = {room: nx.single_source_shortest_path_length(graph, room) for room in set(rooms)}
    cost = np.array([[lengths[a].get(b, np.inf) for b in rooms] for a in rooms], dtype=np.float64)
    problem = OrienteeringProblem(cost, (0, *(reward for _, _, reward in stops)), door_budget, start=0,
                                  max_visits=ball_limit)
    path = solve(problem).path
    actions: list[str] = []
    room = here
    for node in path[1:]:
        name, target, _ = stops[node - 1]
        actions += door_path(graph, room, target)
        actions.append(_ball(name))
        room = target
    return actions


def door_path(graph: nx.Graph, a: Any, b: Any) -> list[str]:
    """Door actions of a shortest path from room a to room b (ties: networkx's BFS order, deterministic)."""
    rooms = nx.shortest_path(graph, a, b)
    return [_door(graph.edges[u, v]["door"]) for u, v in zip(rooms, rooms[1:])]


def _finish(obs: dict[str, Any]) -> str:
    """An action that brings the episode to its end: a door (walked while traversals last, then refused)."""
    return _door(obs["doors"][0]) if obs["doors"] else IDLE


class RandomAgent:
    """Uniform over what it sees: every door and every ball of its room."""

    def __init__(self, rng: StableRng):
        self.rng = rng

    def act(self, observation: dict[str, Any]) -> str:
        options = [_door(d) for d in observation["doors"]] + [_ball(b) for b in observation["balls"]]
        return self.rng.choice(options) if options else IDLE


class ExplorerAgent:
    """Systematic coverage from what it observed: unknown balls first, then the nearest room not yet visited.

    It recognises rooms by their doors: a door joins two rooms and is listed in both, so walking door d from room
    X leads to the other visited room that listed d, or else to a room never visited (and a door listed in two
    visited rooms joins them, walked or not). In each room it collects the
    balls whose reward it does not know yet (learning it), then walks a shortest known path towards the nearest
    door whose other side it has not seen. With nothing left to explore within reach it exploits: it walks the
    best orienteering path of what it knows, then ends the episode.
    """

    def __init__(self, rng: StableRng):
        self.rng = rng
        self.doors_seen: dict[str, set[int]] = {}   # door -> the agent's rooms that listed it
        self.links = nx.Graph()                     # the agent's rooms joined by the doors it knows (attr: door)
        self.balls: dict[str, tuple[int, int | None]] = {}   # ball -> (room, reward once collected)
        self.n_rooms = 0
        self.room = 0
        self.plan: deque[str] | None = None
        self.collected: set[str] = set()   # balls collected in this episode

    def _enter_new_room(self) -> int:
        self.n_rooms += 1
        self.links.add_node(self.n_rooms - 1)
        return self.n_rooms - 1

    def act(self, observation: dict[str, Any]) -> str:
        self.observe(observation)
        return self._choose(observation)

    def observe(self, observation: dict[str, Any]) -> None:
        """Learn from an observation. Play also calls it with the last one of each episode, which no action
        follows: the reward of the ball that ended an episode is shown there and nowhere else."""
        obs = observation
        if "action" not in obs:   # a new episode: back in the start room (the agent's room 0)
            if self.n_rooms == 0:
                self._enter_new_room()
            self.room, self.plan = 0, None
            self.collected = set()
        elif obs["moved"]:
            door = " ".join(obs["action"].lower().split()[:-1])
            other = self.doors_seen.get(door, set()) - {self.room}
            target = min(other) if other else self._enter_new_room()
            self.links.add_edge(self.room, target, door=door)
            self.room = target
        elif obs["valid"] and obs["action"].lower().split()[-1] == "ball":
            name = " ".join(obs["action"].lower().split()[:-1])
            self.balls[name] = (self.room, obs["reward"])
            self.collected.add(name)
        for d in map(str.lower, obs["doors"]):  # names as its own actions spell them (case is ignored)
            sides = self.doors_seen.setdefault(d, set())
            sides.add(self.room)
            if len(sides) == 2:  # listed in two rooms: it joins them, walked or not
                self.links.add_edge(*sides, door=d)
        for b in map(str.lower, obs["balls"]):
            self.balls.setdefault(b, (self.room, None))

    def _choose(self, obs: dict[str, Any]) -> str:
        if self.plan is not None:
            return self.plan.popleft() if self.plan else _finish(obs)
        unknown = sorted(b for b in map(str.lower, obs["balls"]) if self.balls[b][1] is None)
        if unknown:
            return _ball(unknown[0])
        step = self._towards_frontier(obs["doors_left"])
        if step is not None:
            return step
        known = [(name, room, reward) for name, (room, reward) in self.balls.items()
                 if reward is not None and name not in self.collected]
        self.plan = deque(best_route(self.links, self.room, known, obs["doors_left"], obs["balls_left"]))
        return self.plan.popleft() if self.plan else _finish(obs)

    def _towards_frontier(self, doors_left: int) -> str | None:
        """The first door of a shortest known path to a door not yet walked, if one is within the traversals left."""
        frontier: dict[int, list[str]] = {}
        for door, rooms in self.doors_seen.items():
            if len(rooms) == 1:  # a door walked is listed on both sides: its other side is unknown
                frontier.setdefault(next(iter(rooms)), []).append(door)
        if not frontier or doors_left < 1:
            return None
        distance = nx.single_source_shortest_path_length(self.links, self.room, cutoff=doors_left - 1)
        near = [room for room in frontier if room in distance]
        if not near:
            return None
        best = min(distance[room] for room in near)
        goal = min(room for room in near if distance[room] == best)
        if goal == self.room:
            return _door(self.rng.choice(sorted(frontier[goal])))
        return door_path(self.links, self.room, goal)[0]


class OracleAgent:
    """Knows the whole map and walks the optimal orienteering path of it in every episode, then ends the episode."""

    def __init__(self, instance: RoomsInstance):
        graph = nx.Graph()
        graph.add_nodes_from(instance.rooms)
        for door in sorted(instance.doors, key=lambda d: d.name, reverse=True):  # parallel doors: the first name
            graph.add_edge(*door.between, door=door.name)
        balls = [(b.name, b.room, b.reward) for b in instance.balls]
        self.route = best_route(graph, instance.start, balls, instance.door_budget, instance.ball_limit)
        self.todo: deque[str] = deque()

    def act(self, observation: dict[str, Any]) -> str:
        if "action" not in observation:
            self.todo = deque(self.route)
        return self.todo.popleft() if self.todo else _finish(observation)


def make_agent(name: str, instance: RoomsInstance, seed: int) -> Agent:
    """A fresh agent for a whole trajectory; its random stream depends on the seed and the instance id only."""
    rng = StableRng(seed, "agent", name, instance.id)
    if name == "random":
        return RandomAgent(rng)
    if name == "explorer":
        return ExplorerAgent(rng)
    if name == "oracle":
        return OracleAgent(instance)
    raise ValueError(f"unknown agent {name!r}")


def play_steps(instance: RoomsInstance, agent_name: str, seed: int, *,
               observations: bool = False) -> list[dict[str, Any]]:
    """Every episode of the instance played by a fresh agent, as the trajectory/1 steps `eebench play` writes:
    each carries its `episode` (0-based), and `observation` (the text after the step) when asked."""
    from eebench.agents.play import play_episode

    return play_episode(instance, agent_name, seed, observations=observations)["steps"]
