"""The rules of each environment: state, admissible moves, transition, observation. Pure, no I/O."""

from eebench.world.grid_dag import (
    ACTIONS,
    GridDagEnv,
    GridDagInstance,
    GridDagWorld,
    Node,
    NodeStatus,
    State,
    Step,
    parse_action,
    render_observation,
    render_text,
)

__all__ = [
    "ACTIONS", "GridDagEnv", "GridDagInstance", "GridDagWorld", "Node", "NodeStatus", "State", "Step",
    "parse_action", "render_observation", "render_text",
]
