"""Park et al.'s agent prompt (Appendix C.3, and Appendix D's memory variant) as text templates, rendered for any
step of an episode by replaying its actions in the world's rules.

The templates are the `.txt` files beside this module: `environment.txt` (the rules, the goal, the budget), an
optional `strategy/<variant>.txt` sentence, `action_format.txt`, and per turn `turn.txt` (the world's observation
text, `render_observation`) plus, with memory, `memory.txt`, whose every field is derived from the observations
the agent already received. The paper shows its prompts as figures only; these texts follow their described
structure and content, and PROMPT_VERSION names this wording so that results from different labs can say which
prompt they used.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources
from string import Template
from typing import NamedTuple

from eebench.errors import InputError
from eebench.world.grid_dag import (ACTIONS, DELTAS, GridDagInstance, GridDagWorld, State, describe_prerequisites,
                                    parse_action, render_observation)

PROMPT_VERSION = "park2026-c3/1"   # changes whenever a template's wording does
VARIANTS = ("base", "exploration", "exploitation", "balance")   # base: no strategy sentence
UNREADABLE = "(unreadable)"        # how a step whose output named no action is echoed back
_AXIS = {"up": "y-1", "down": "y+1", "left": "x-1", "right": "x+1"}


@functools.cache
def template(name: str) -> str:
    """A shipped template's text, without its final line break."""
    return resources.files(__package__).joinpath(name).read_text("utf-8").rstrip("\n")


class Shown(NamedTuple):
    """What an agent is shown at one step: the system prompt and the turn's user message."""

    system: str
    turn: str
    step: int


def system_prompt(instance: GridDagInstance, variant: str = "base", *, memory: bool = False) -> str:
    """The system prompt: the environment (with the memory notice), the strategy sentence, the answer format."""
    if variant not in VARIANTS:
        raise InputError(f"--variant: expected one of {', '.join(VARIANTS)}, found {variant!r}")
    environment = Template(template("environment.txt")).substitute(budget=instance.budget)
    if memory:
        environment += "\n" + template("memory_notice.txt")
    parts = [environment]
    if variant != "base":
        parts.append(template(f"strategy/{variant}.txt"))
    parts.append(template("action_format.txt"))
    return "\n\n".join(parts)


class _History(NamedTuple):
    state: State
    visited: list[int]           # cells in the order first stepped on
    moved: set[str]              # directions that moved the agent at least once
    achieved: list[int]          # nodes in the order achieved
    last: tuple[str, bool] | None  # the last action as echoed, and whether it moved the agent


def _replay(world: GridDagWorld, actions: Sequence[str | None], step: int, asked: int) -> _History:
    """The first `step` actions replayed; InputError when the episode ends before `asked`, the step shown."""
    state = world.initial_state()
    visited, moved, achieved = [state.pos], set(), []
    last = None
    for k in range(step):
        if world.is_over(state):
            why = "the goal was achieved" if world.goal_achieved(state) else "the budget was spent"
            raise InputError(f"--step {asked}: the episode ended after step {k} ({why}); nothing more is shown")
        action = actions[k]
        result = world.step(state, parse_action(action))
        state = result.state
        if result.valid:
            moved.add(ACTIONS[parse_action(action)])  # type: ignore[index]
        if result.new_cell:
            visited.append(state.pos)
        if result.achieved >= 0:
            achieved.append(result.achieved)
        last = (UNREADABLE if action is None else action, result.valid)
    if world.is_over(state):
        why = "the goal was achieved" if world.goal_achieved(state) else "the budget was spent"
        when = "at this step" if asked == step else f"after step {step}"
        raise InputError(f"--step {asked}: the episode ended {when} ({why}); nothing more is shown")
    return _History(state, visited, moved, achieved, last)


def shown_at(instance: GridDagInstance, actions: Sequence[str | None] = (), step: int = 0, *, variant: str = "base",
             memory: bool = False) -> Shown:
    """What the agent is shown before its action `step` (0 = the first), after the first `step` actions."""
    if step < 0:
        raise InputError(f"--step: expected a step >= 0, found {step}")
    if step > len(actions) and not actions:
        raise InputError(f"--step {step}: replaying needs the actions: give --trajectory FILE")
    world = GridDagWorld(instance)
    history = _replay(world, actions, min(step, len(actions)), step)   # (an episode that ended says so first)
    if step > len(actions):
        raise InputError(f"--step {step}: the trajectory has {len(actions)} actions; a step past them needs "
                         "--trajectory FILE with more")
    if history.last is None:
        observation = world.observe(history.state)
    else:
        observation = world.observe(history.state, action=history.last[0], valid=history.last[1])
    turn = Template(template("turn.txt")).substitute(t=step, budget=instance.budget,
                                                     observation=render_observation(observation))
    if memory:
        turn += "\n\n" + memory_summary(world, history)
    return Shown(system_prompt(instance, variant, memory=memory), turn, step)


def _cells(world: GridDagWorld, cells: Sequence[int]) -> str:
    return ", ".join(f"[{x}, {y}]" for x, y in map(world.xy, cells)) or "none"


def memory_summary(world: GridDagWorld, history: _History) -> str:
    """Appendix D's memory: every field derived from the observations received so far, none revealed early."""
    state = history.state
    frontier_mask = world.unobserved(state)
    frontier = sorted((c for c in range(world.n_cells) if frontier_mask >> c & 1), key=world.xy)
    obstacles: set[tuple[int, int]] = set()
    for cell in history.visited:   # a move refused from a visited cell: what lies that way is impassable
        x, y = world.xy(cell)
        for a, (dx, dy) in enumerate(DELTAS):
            if world.step_to[4 * cell + a] < 0 and x + dx >= 0 and y + dy >= 0:
                obstacles.add((x + dx, y + dy))
    discovered = [world.node_at[c] for c in history.visited if world.node_at[c] >= 0]
    lines = []
    for node in discovered:
        x, y = world.xy(world.node_cell[node])
        spec = world.instance.nodes[node]
        children = ", ".join(world.node_ids[c] for c in world.children[node]) or "none"
        status = world.status(state, node).value
        lines.append(f"  - {spec.id} at [{x}, {y}] ({status}): prerequisites "
                     f"{describe_prerequisites([list(a) for a in spec.requires])}; prerequisite of {children}")
    goal_found = any(node == world.goal for node in discovered)
    return Template(template("memory.txt")).substitute(
        coordinates=", ".join(f"{a} = {_AXIS[a]}" for a in ACTIONS if a in history.moved) or "not learned yet",
        goal=world.node_ids[world.goal] if goal_found else "not found yet",
        visited=_cells(world, history.visited),
        frontier=_cells(world, frontier),
        obstacles=", ".join(f"[{x}, {y}]" for x, y in sorted(obstacles)) or "none",
        discovered="\n".join(lines) or "  none",
        activated=", ".join(world.node_ids[n] for n in history.achieved) or "none",
        activatable=", ".join(world.node_ids[n] for n in world.pending(state)) or "none",
    )
