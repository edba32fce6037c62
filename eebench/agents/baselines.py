"""Reference agents that bracket real ones: a random walk, a greedy frontier explorer, an all-knowing oracle, and
an explore-then-act agent (a goal-free exploration phase, then acting)."""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from eebench.generator.rng import StableRng
from eebench.world.geometry import path_actions
from eebench.world.grid_dag import ACTIONS, DELTAS, GridDagInstance, GridDagWorld
from eebench.world.planning import node_distances, shortest_completion


class Agent(Protocol):
    def act(self, observation: dict[str, Any]) -> str:
        """The action word for this observation."""
        ...


class RandomAgent:
    """Picks uniformly among the admissible moves of the current cell."""

    def __init__(self, rng: StableRng):
        self.rng = rng

    def act(self, observation: dict[str, Any]) -> str:
        return self.rng.choice(observation["moves"])


class FrontierAgent:
    """Heads for the nearest cell of Park et al.'s target set, knowing only what its observations told it.

    It remembers the cells it visited, the free neighbours each observation listed (U(t) is those not yet
    visited), and every node it stood on with its prerequisites and status. The targets follow Table 1: the
    goal when it is pending; else the unobserved cells and the cells of pending nodes. It walks a shortest path
    over cells it knows to be free; ties between equally near first moves are broken by its seeded stream.
    """

    def __init__(self, rng: StableRng):
        self.rng = rng
        self.visited: set[tuple[int, int]] = set()
        self.free: set[tuple[int, int]] = set()
        self.nodes: dict[str, tuple[tuple[int, int], list[list[str]], bool, bool]] = {}

    def act(self, observation: dict[str, Any]) -> str:
        here = (observation["position"][0], observation["position"][1])
        self.visited.add(here)
        self.free.add(here)
        for move in observation["moves"]:
            dx, dy = DELTAS[ACTIONS.index(move)]
            self.free.add((here[0] + dx, here[1] + dy))
        node = observation["node"]
        if node is not None:
            self.nodes[node["id"]] = (here, node["requires"], node["status"] == "achieved", node["goal"])
        targets = self._targets()
        first_moves = self._first_moves(here, targets)
        return self.rng.choice(first_moves or observation["moves"])

    def _targets(self) -> set[tuple[int, int]]:
        done = {name for name, (_, _, achieved, _) in self.nodes.items() if achieved}
        pending = {name: info for name, info in self.nodes.items()
                   if name not in done and (not info[1] or any(set(alt) <= done for alt in info[1]))}
        goal = [info[0] for info in pending.values() if info[3]]
        if goal:
            return set(goal)
        return (self.free - self.visited) | {info[0] for info in pending.values()}

    def _first_moves(self, here: tuple[int, int], targets: set[tuple[int, int]]) -> list[str]:
        """Every first move of a shortest known path from `here` to the nearest target."""
        first: dict[tuple[int, int], set[str]] = {}
        frontier = []
        for name, (dx, dy) in zip(ACTIONS, DELTAS):
            cell = (here[0] + dx, here[1] + dy)
            if cell in self.free:
                first.setdefault(cell, set()).add(name)
                frontier.append(cell)
        seen = {here, *frontier}
        while frontier:
            reached = [c for c in frontier if c in targets]
            if reached:
                return sorted(set().union(*(first[c] for c in reached)))
            nxt = []
            for cell in frontier:
                for dx, dy in DELTAS:
                    other = (cell[0] + dx, cell[1] + dy)
                    if other in self.free:
                        if other not in seen:
                            seen.add(other)
                            nxt.append(other)
                            first[other] = set(first[cell])
                        elif other in first and other in nxt:
                            first[other] |= first[cell]
            frontier = nxt
        return []


class ExploreThenActAgent(FrontierAgent):
    """Explore-then-Act (Look Before You Leap, Section 3.4) with the frontier agent's memory.

    For its first `share` of the budget it explores goal-free: it heads for the nearest unobserved cell and
    ignores the task (nodes it stands on are still achieved by the world, and remembered). Then it acts: the
    frontier agent's targets (the goal when pending, else pending nodes and unobserved cells), now with what it
    learned. It also acts early once it knows of no unobserved cell. Each step says its `phase`.
    """

    def __init__(self, rng: StableRng, budget: int, share: float = 0.5):
        super().__init__(rng)
        self.explore_steps = int(budget * share)
        self.steps = 0
        self.phase = "explore"   # of the action `act` returned last

    def act(self, observation: dict[str, Any]) -> str:
        self.steps += 1
        return super().act(observation)

    def _targets(self) -> set[tuple[int, int]]:
        unobserved = self.free - self.visited
        if self.steps <= self.explore_steps and unobserved:
            self.phase = "explore"
            return unobserved
        self.phase = "act"
        return super()._targets()


EXPLORE_SHARE = 0.5   # explore-then-act: the share of the budget spent exploring


class OracleAgent:
    """Knows the whole map and DAG and follows the shortest completion (`world.planning`)."""

    def __init__(self, instance: GridDagInstance):
        world = GridDagWorld(instance)
        dist = node_distances(world)
        cell = world.start
        self.actions: deque[str] = deque()
        for node in shortest_completion(world, dist).order:
            self.actions.extend(ACTIONS[a] for a in path_actions(world, cell, world.node_cell[node], dist[node]))
            cell = world.node_cell[node]

    def act(self, observation: dict[str, Any]) -> str:
        return self.actions.popleft()


AGENTS = ("random", "frontier", "oracle", "explore-then-act")


def make_agent(name: str, instance: GridDagInstance, seed: int) -> Agent:
    """A fresh agent for one episode; its random stream depends on the seed and the instance id only."""
    rng = StableRng(seed, "agent", name, instance.id)
    if name == "random":
        return RandomAgent(rng)
    if name == "frontier":
        return FrontierAgent(rng)
    if name == "oracle":
        return OracleAgent(instance)
    if name == "explore-then-act":
        return ExploreThenActAgent(rng, instance.budget, EXPLORE_SHARE)
    raise ValueError(f"unknown agent {name!r}")
