"""World kinds: one registry entry per instance `env`, the one place the commands look a world up.

A `WorldKind` gathers what eebench needs of a world: its instance document (schema `instance.<env>`, semantic
checks, parsing), its rules behind a Gymnasium-shaped env, its observation text, its generator presets (schema
`generator.<env>`) and its baseline agents. `validate`, `generate`, `show`, `play`, `publish`, `list`, `schema`
and the grader's instance loading ask this registry; none of them names a world.

Adding a world is one factory below and one line in `_FACTORIES`; no other world's code changes. The factories
import their world's modules only when the kind is first asked for, so a command pays for the worlds it uses.
This module sits in `world/` but looks up (lazily) at the generator and agents of each world: it is the index
of the worlds, not a rule of one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from eebench.errors import InputError, did_you_mean, one_of, quoted

DEFAULT_ENV = "grid_dag"  # what documents written before there were several worlds mean (suite inline presets)


class Agent(Protocol):
    def act(self, observation: dict[str, Any]) -> str:
        """The action text for this (structured) observation."""
        ...


class Env(Protocol):
    """The Gymnasium API shape every world offers."""

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict]: ...

    def step(self, action: str) -> tuple[Any, float, bool, bool, dict[str, Any]]: ...


@dataclass(frozen=True)
class WorldKind:
    """Everything eebench knows of one world kind, keyed by the documents' `env`."""

    env: str
    title: str                                                   # one line for `eebench list` and cards
    instance_type: type                                          # what from_document builds
    preset_type: type                                            # what parse_preset builds
    from_document: Callable[[dict[str, Any]], Any]               # a document that passed schema and semantics
    semantic_problems: Callable[[dict[str, Any]], list[tuple[str, str]]]  # (field path, reason) beyond the schema
    render_text: Callable[[Any], str]                            # `eebench show`
    render_observation: Callable[[Any], str]                     # the text an LLM reads after a step
    make_env: Callable[[Any], Env]                               # the rules behind reset/step
    parse_preset: Callable[[str, dict[str, Any]], Any]           # a schema-valid preset whose problems are none
    preset_problems: Callable[[str, dict[str, Any]], list[tuple[str, str]]]
    generate_instance: Callable[[Any, int, str], Any]            # (preset, seed, id), byte-deterministic
    describe_preset: Callable[[Any], str]                        # one line for `eebench list`
    summary: Callable[[Any], str]                                # `eebench validate`'s line for an instance
    agents: Mapping[str, str]                                    # baseline agent name -> what it does
    make_agent: Callable[[str, Any, int], Agent]                 # (name, instance, seed): a fresh agent
    statistics: Mapping[str, str]                                # bundle manifest key -> how the card names it
    measures: Callable[[Any], dict[str, int]]                    # one instance's values of `statistics`
    relabel: Callable[[Any, str], Any] | None = None             # (instance, id): the symbolic twin, if the
    #                                                              kind has node names a suite may hide
    episodes: Callable[[Any], int] | None = None                 # env episodes in one run of an instance, for
    #                                                              worlds of several; None: one, unnumbered

    @property
    def instance_schema(self) -> str:
        return f"instance.{self.env}"

    @property
    def generator_schema(self) -> str:
        return f"generator.{self.env}"


# -- the registry ------------------------------------------------------------------------------------------

def _grid_dag() -> WorldKind:
    from eebench.generator.params import Preset, parse_preset, preset_problems
    from eebench.world import grid_dag

    # the generator, the planner and the agents import NumPy (world.geometry): only when an instance is made,
    # measured or played, not when a suite's presets are read (`convert` naming a log's instance)
    def generate_instance(preset: Preset, seed: int, instance_id: str) -> grid_dag.GridDagInstance:
        from eebench.generator.instances import generate_instance

        return generate_instance(preset, seed, instance_id)

    def relabel(instance: grid_dag.GridDagInstance, instance_id: str) -> grid_dag.GridDagInstance:
        from eebench.generator.instances import relabel_symbolic

        return relabel_symbolic(instance, instance_id)

    def make_agent(name: str, instance: grid_dag.GridDagInstance, seed: int) -> Agent:
        from eebench.agents import baselines

        return baselines.make_agent(name, instance, seed)

    def describe(preset: Preset) -> str:
        size = (f"{preset.map.size[0]}x{preset.map.size[1]}" if preset.map.size
                else f"density {preset.map.density:g}")
        width = "-".join(str(w) for w in sorted(set(preset.map.corridor_width)))
        return f"{preset.dag.n_nodes} nodes, {size}, corridors {width} wide"

    def summary(instance: grid_dag.GridDagInstance) -> str:
        return f"{instance.width}x{instance.height}, {len(instance.nodes)} nodes, budget {instance.budget}"

    def measures(instance: grid_dag.GridDagInstance) -> dict[str, int]:
        from eebench.world.planning import shortest_completion

        return {
            "width": instance.width, "height": instance.height, "free_cells": len(instance.free_cells()),
            "nodes": len(instance.nodes), "or_nodes": sum(len(node.requires) > 1 for node in instance.nodes),
            "budget": instance.budget,
            "optimal_steps": shortest_completion(grid_dag.GridDagWorld(instance)).cost,
        }

    return WorldKind(
        env="grid_dag",
        title="Park et al. (2026): a partially observable grid map hiding a task DAG",
        instance_type=grid_dag.GridDagInstance, preset_type=Preset,
        from_document=grid_dag.GridDagInstance.from_document, semantic_problems=grid_dag.semantic_problems,
        render_text=grid_dag.render_text, render_observation=grid_dag.render_observation,
        make_env=grid_dag.GridDagEnv,
        parse_preset=parse_preset, preset_problems=preset_problems, generate_instance=generate_instance,
        describe_preset=describe, summary=summary,
        agents={"random": "uniform admissible moves",
                "frontier": "nearest target of Park et al.'s target set from what it observed",
                "oracle": "shortest completion with full knowledge",
                "explore-then-act": "goal-free exploration for half the budget, then the frontier agent's targets "
                                    "(steps carry their phase)"},
        make_agent=make_agent,
        statistics={
            "width": "map width",
            "height": "map height",
            "free_cells": "free cells",
            "nodes": "task nodes (the goal included)",
            "or_nodes": "nodes with 2+ alternatives (OR)",
            "budget": "budget (timesteps)",
            "optimal_steps": "fewest steps to finish, full knowledge",
        },
        measures=measures,
        relabel=relabel,
    )


def _rooms() -> WorldKind:
    import operator

    from eebench.generator import rooms as generator
    from eebench.world import rooms

    # the agents and the solver import OR-Tools: only when a rooms instance is played or measured
    def make_agent(name: str, instance: rooms.RoomsInstance, seed: int) -> Agent:
        from eebench.agents import rooms as agents

        return agents.make_agent(name, instance, seed)

    def best_return(instance: rooms.RoomsInstance) -> int:
        """R_max of a rooms instance, as the gaps family defines and solves it (one place for the problem)."""
        from eebench.evaluator.gaps import GapsTables
        from eebench.evaluator.orienteering import Status

        solution = GapsTables(instance).max_solution
        if solution.status is not Status.OPTIMAL:  # a bundle's statistics are measurements, never bounds
            raise InputError(f"{instance.id}: the best return was not proven within the solver's time limit")
        return int(solution.value)

    def summary(instance: rooms.RoomsInstance) -> str:
        return (f"{len(instance.rooms)} rooms, {len(instance.doors)} doors, {len(instance.balls)} balls, "
                f"{instance.episodes} episodes, door budget {instance.door_budget}, ball limit {instance.ball_limit}")

    def measures(instance: rooms.RoomsInstance) -> dict[str, int]:
        return {
            "rooms": len(instance.rooms), "doors": len(instance.doors), "balls": len(instance.balls),
            "reward": sum(ball.reward for ball in instance.balls), "door_budget": instance.door_budget,
            "ball_limit": instance.ball_limit, "episodes": instance.episodes, "max_return": best_return(instance),
        }

    return WorldKind(
        env="rooms",
        title="Grams et al.: rooms joined by named doors, balls with rewards, several episodes",
        instance_type=rooms.RoomsInstance, preset_type=generator.RoomsPreset,
        from_document=rooms.RoomsInstance.from_document, semantic_problems=rooms.semantic_problems,
        render_text=rooms.render_text, render_observation=rooms.render_observation, make_env=rooms.RoomsEnv,
        parse_preset=generator.parse_preset, preset_problems=generator.preset_problems,
        generate_instance=generator.generate_instance, describe_preset=generator.describe_preset,
        summary=summary,
        agents={"random": "uniform over the doors and balls it sees",
                "explorer": "nearest unvisited room by known doors (systematic coverage), collecting what it passes",
                "oracle": "every episode walks the optimal orienteering path of the full map"},
        make_agent=make_agent,
        statistics={
            "rooms": "rooms",
            "doors": "doors",
            "balls": "balls",
            "reward": "reward of all balls",
            "door_budget": "door budget (traversals per episode)",
            "ball_limit": "ball limit (balls per episode)",
            "episodes": "episodes",
            "max_return": "best return of one episode, full knowledge (R_max)",
        },
        measures=measures,
        episodes=operator.attrgetter("episodes"),
    )


_FACTORIES: dict[str, Callable[[], WorldKind]] = {
    "grid_dag": _grid_dag,
    "rooms": _rooms,
}


def envs() -> tuple[str, ...]:
    """The registered world kinds, by their `env`."""
    return tuple(_FACTORIES)


@functools.cache
def kind(env: str) -> WorldKind:
    """The kind of `env`; InputError naming the known ones (and a close name) when there is none."""
    factory = _FACTORIES.get(env)
    if factory is None:
        raise InputError(f"unknown world kind {quoted(env)}{did_you_mean(env, _FACTORIES)}; "
                         f"known: {one_of(_FACTORIES)}")
    made = factory()
    if made.env != env:  # a factory registered under another name would split one world in two
        raise RuntimeError(f"world kind {made.env!r} is registered as {quoted(env)}")
    return made


def kinds() -> list[WorldKind]:
    return [kind(env) for env in _FACTORIES]


def kind_of(value: Any) -> WorldKind:
    """The kind an instance or a preset belongs to, by its type."""
    for env in _FACTORIES:  # one kind at a time: a grid_dag instance never imports the other worlds
        candidate = kind(env)
        if isinstance(value, (candidate.instance_type, candidate.preset_type)):
            return candidate
    raise TypeError(f"{type(value).__name__} is no instance or preset of a registered world kind")


def instance_for(env: str, value: Any, who: str) -> Any:
    """What an env of world `env` plays: an instance of it (eebench.load), or its document, validated as `eebench
    validate` validates it; else a TypeError naming `who`."""
    if isinstance(value, Mapping):
        from eebench.instances import check_instance_document

        value = check_instance_document(dict(value), "<instance>")
    if not isinstance(value, kind(env).instance_type):
        raise TypeError(f"{who} plays {kind(env).instance_type.__name__} (eebench.load) or its document, not "
                        f"{type(value).__name__}")
    return value


def check_env(env: Any, file: str, *, field: str = "env", line: int | None = None) -> WorldKind:
    """The kind a document's `env` names; InputError at file, line and field otherwise."""
    known = list(_FACTORIES)
    if env is None:
        raise InputError.at(file, f"missing required field (expected {one_of(known)})", field=field, line=line)
    if not isinstance(env, str) or env not in _FACTORIES:  # a list or a mapping is no name (nor hashable)
        hint = did_you_mean(env, known) if isinstance(env, str) else ""
        raise InputError.at(file, f"expected one of {one_of(known)}, found {quoted(env)}{hint}", field=field, line=line)
    return kind(env)
