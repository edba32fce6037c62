"""The rules of the grid_dag world (Park et al. 2026, Section 3 and Appendix B) on tiny hand-built maps."""

from __future__ import annotations

import pytest

from eebench.errors import EebenchError
from eebench.world import (
    ACTIONS,
    GridDagEnv,
    GridDagWorld,
    NodeStatus,
    State,
    parse_action,
    render_observation,
    render_text,
)
from tests.conftest import make_instance

UND, DIS, ACH = NodeStatus.UNDISCOVERED, NodeStatus.DISCOVERED, NodeStatus.ACHIEVED


def cells(world: GridDagWorld, mask: int) -> set[tuple[int, int]]:
    return {world.xy(c) for c in range(world.n_cells) if mask >> c & 1}


def play(world: GridDagWorld, *words: str | None) -> State:
    state = world.initial_state()
    for word in words:
        state = world.step(state, parse_action(word)).state
    return state


def statuses(world: GridDagWorld, state: State) -> dict[str, NodeStatus]:
    return {node_id: world.status(state, i) for i, node_id in enumerate(world.node_ids)}


def row_world(requires_goal: list[list[str]], budget: int = 100) -> GridDagWorld:
    """One row of 7 free cells: G at x=0, start at x=3, C at x=2, A at x=4, B at x=5 (all primitive)."""
    return GridDagWorld(make_instance(
        ["......."], [3, 0],
        [("G", [0, 0], requires_goal), ("C", [2, 0], []), ("A", [4, 0], []), ("B", [5, 0], [])],
        "G", budget))


# -- coordinates and moves -------------------------------------------------------------------------

OPEN_3X3 = ["...", "...", "..."]


def open_world(start: list[int] = [1, 1], budget: int = 100) -> GridDagWorld:
    # the goal sits in the bottom-right corner, away from every move the tests make from the centre
    return GridDagWorld(make_instance(OPEN_3X3, start, [("G", [2, 2], [])], "G", budget))


@pytest.mark.parametrize("word, expected", [("up", (1, 0)), ("down", (1, 2)), ("left", (0, 1)), ("right", (2, 1))])
def test_moves_follow_x_column_y_row_from_top(word: str, expected: tuple[int, int]) -> None:
    world = open_world()
    step = world.step(world.initial_state(), parse_action(word))
    assert world.xy(step.state.pos) == expected
    assert step.valid and step.new_cell and step.state.t == 1


def test_actions_are_the_four_moves_in_order() -> None:
    assert ACTIONS == ("up", "down", "left", "right")


@pytest.mark.parametrize("word", ["UP", "Up", " up ", "\tUp\n", "uP"])
def test_action_words_ignore_case_and_surrounding_spaces(word: str) -> None:
    assert parse_action(word) == 0


@pytest.mark.parametrize("word", ["north", "u", "upp", "go up", "", "move up", None, 0, 1.5, ["up"], {"up": 1}])
def test_anything_but_a_move_word_parses_to_none(word: object) -> None:
    assert parse_action(word) is None


@pytest.mark.parametrize("start, word", [
    ([0, 0], "up"), ([0, 0], "left"), ([2, 2], "down"), ([2, 2], "right"),  # the map's edge
])
def test_a_move_off_the_map_leaves_the_agent_in_place_and_costs_a_step(start: list[int], word: str) -> None:
    world = GridDagWorld(make_instance(OPEN_3X3, start, [("G", [1, 1], [])], "G"))
    before = world.initial_state()
    step = world.step(before, parse_action(word))
    assert step.state == State(1, before.pos, before.observed, before.achieved)
    assert not step.valid and not step.new_cell and step.achieved == -1


def test_a_move_into_an_obstacle_leaves_the_agent_in_place_and_costs_a_step() -> None:
    world = GridDagWorld(make_instance(["...", ".#.", "..."], [1, 0], [("G", [1, 2], [])], "G"))
    state = world.step(world.initial_state(), parse_action("down")).state
    assert (world.xy(state.pos), state.t) == ((1, 0), 1)
    assert world.admissible(state.pos) == [2, 3]  # left, right: down is the obstacle, up the edge


@pytest.mark.parametrize("word", ["jump", None, "", "wait"])
def test_an_unknown_word_or_null_leaves_the_agent_in_place_and_costs_a_step(word: str | None) -> None:
    world = open_world()
    state = play(world, "up", word, word)
    assert (world.xy(state.pos), state.t) == ((1, 0), 3)
    assert cells(world, state.observed) == {(1, 1), (1, 0)}


# -- cell states -----------------------------------------------------------------------------------

def test_observed_unobserved_and_unknown_cells() -> None:
    world = GridDagWorld(make_instance(["...#", "....", "#..."], [1, 1], [("G", [3, 2], [])], "G"))
    state = world.initial_state()
    assert cells(world, state.observed) == {(1, 1)}  # the start is observed at t = 0
    assert cells(world, world.unobserved(state)) == {(1, 0), (0, 1), (2, 1), (1, 2)}
    state = play(world, "up")
    assert cells(world, state.observed) == {(1, 1), (1, 0)}
    # (0, 0) and (2, 0) are new free neighbours; obstacles are never unobserved, the rest stays unknown
    assert cells(world, world.unobserved(state)) == {(0, 0), (2, 0), (0, 1), (2, 1), (1, 2)}
    state = play(world, "up", "right", "down", "right")
    assert cells(world, state.observed) == {(1, 1), (1, 0), (2, 0), (2, 1), (3, 1)}
    assert cells(world, world.unobserved(state)) == {(0, 0), (0, 1), (1, 2), (2, 2), (3, 2)}
    everything = play(world, "up", "left", "down", "right", "down", "right", "right", "up", "left", "up")
    assert len(cells(world, everything.observed)) == 10
    assert world.unobserved(everything) == 0  # every free cell observed: nothing left unobserved


def test_a_cell_stays_observed_after_the_agent_leaves_it() -> None:
    world = open_world()
    state = play(world, "up", "down", "down")
    assert cells(world, state.observed) == {(1, 0), (1, 1), (1, 2)}
    assert (1, 0) not in cells(world, world.unobserved(state))


# -- node statuses and prerequisites ---------------------------------------------------------------

def test_node_statuses_undiscovered_discovered_achieved() -> None:
    world = GridDagWorld(make_instance(
        ["....."], [2, 0], [("A", [3, 0], []), ("B", [1, 0], [["A"]]), ("G", [0, 0], [["B"]])], "G"))
    state = world.initial_state()
    assert statuses(world, state) == {"A": UND, "B": UND, "G": UND}
    state = play(world, "left")  # B visited too early: discovered, not achieved
    assert statuses(world, state) == {"A": UND, "B": DIS, "G": UND}
    state = play(world, "left", "right", "right")  # a primitive node is achieved on its first visit
    assert statuses(world, state) == {"A": ACH, "B": DIS, "G": UND}
    assert world.pending(state) == [1]  # B: discovered and its prerequisites hold
    state = play(world, "left", "right", "right", "left", "left")  # back to B
    assert statuses(world, state) == {"A": ACH, "B": ACH, "G": UND}
    assert world.pending(state) == []  # G is undiscovered, so not pending
    state = play(world, "left", "right", "right", "left", "left", "left")
    assert statuses(world, state)["G"] is ACH and world.goal_achieved(state) and world.is_over(state)


def test_a_node_is_undiscovered_while_it_is_only_an_unobserved_neighbour() -> None:
    world = GridDagWorld(make_instance([".."], [0, 0], [("G", [1, 0], [])], "G"))
    state = world.initial_state()
    assert cells(world, world.unobserved(state)) == {(1, 0)}
    assert world.status(state, 0) is UND


def test_a_node_visited_too_early_must_be_revisited() -> None:
    world = GridDagWorld(make_instance(
        ["....."], [1, 0], [("B", [3, 0], []), ("A", [2, 0], [["B"]]), ("G", [0, 0], [["A"]])], "G"))
    state = world.initial_state()
    trace = []
    for word in ["right", "right", "left", "left"]:
        step = world.step(state, parse_action(word))
        state = step.state
        trace.append((world.xy(state.pos), step.achieved))
    # right: A too early (-1); right: B (0) achieved; left: A (1) achieved on the revisit; left: empty cell
    assert trace == [((2, 0), -1), ((3, 0), 0), ((2, 0), 1), ((1, 0), -1)]
    assert not world.goal_achieved(state)


def test_standing_still_on_a_node_visited_too_early_does_not_achieve_it() -> None:
    world = GridDagWorld(make_instance(
        ["...."], [1, 0], [("B", [3, 0], []), ("A", [2, 0], [["B"]]), ("G", [0, 0], [["A"]])], "G"))
    state = play(world, "right", "jump", "up", None)
    assert world.xy(state.pos) == (2, 0) and state.achieved == 0 and state.t == 4


def test_an_achieved_node_is_not_achieved_twice() -> None:
    world = GridDagWorld(make_instance(
        ["...."], [1, 0], [("A", [2, 0], []), ("B", [3, 0], [["A"]]), ("G", [0, 0], [["B"]])], "G"))
    state = play(world, "right")
    step = world.step(play(world, "right", "left"), parse_action("right"))
    assert state.achieved == 1 and step.achieved == -1 and step.state.achieved == 1 and step.valid


def test_and_prerequisites_need_every_parent() -> None:
    world = row_world([["A", "B", "C"]])
    assert not world.goal_achieved(play(world, "right", "left", "left", "left", "left"))  # A and C, not B
    state = play(world, "right", "right", "left", "left", "left", "left", "left")  # A, B, then C on the way
    assert world.goal_achieved(state) and state.t == 7


def test_or_prerequisites_need_one_alternative() -> None:
    world = row_world([["C"], ["A"], ["B"]])
    assert world.goal_achieved(play(world, "left", "left", "left"))  # C alone
    world = row_world([["A"], ["B", "C"]])
    state = play(world, "right", "left", "left", "left", "left")  # A, then C on the way: the first alternative
    assert world.goal_achieved(state) and state.t == 5


def test_mixed_prerequisites_read_as_a_disjunction_of_conjunctions() -> None:
    world = row_world([["A", "B"], ["C"]])  # (A and B) or C
    assert world.goal_achieved(play(world, "left", "left", "left"))  # C
    and_world = row_world([["A", "B"], ["C", "A"]])  # (A and B) or (C and A)
    assert not and_world.goal_achieved(play(and_world, "left", "left", "left"))  # C alone: neither holds
    assert and_world.goal_achieved(play(and_world, "right", "left", "left", "left", "left"))  # A, C


@pytest.mark.parametrize("requires, achieved, met", [
    ([], set(), True),
    ([["A"]], set(), False),
    ([["A"]], {"A"}, True),
    ([["A", "B"]], {"A"}, False),
    ([["A", "B"]], {"A", "B"}, True),
    ([["A"], ["B"]], {"B"}, True),
    ([["A", "B"], ["C"]], {"A", "C"}, True),
    ([["A", "B"], ["C"]], {"B"}, False),
    ([["A", "B"], ["B", "C"]], {"B", "C"}, True),
    ([["A", "B"], ["B", "C"]], {"A", "C"}, False),
])
def test_prerequisites_met_is_dnf(requires: list[list[str]], achieved: set[str], met: bool) -> None:
    world = row_world(requires or [])
    mask = sum(1 << world.node_index[n] for n in achieved)
    assert world.prerequisites_met(world.node_index["G"], mask) is met


# -- budget and the end of an episode --------------------------------------------------------------

def test_the_episode_ends_when_the_budget_is_spent() -> None:
    world = open_world(budget=3)
    state = play(world, "up", "down")
    assert not world.is_over(state)
    state = play(world, "up", "down", "jump")  # an inadmissible move spends the budget like any other
    assert world.is_over(state) and not world.goal_achieved(state)


def test_the_episode_ends_when_the_goal_is_achieved() -> None:
    world = open_world(start=[2, 1])
    state = play(world, "down")
    assert world.goal_achieved(state) and world.is_over(state) and state.t == 1


def test_env_terminated_on_the_goal_with_reward_one() -> None:
    env = GridDagEnv(make_instance(OPEN_3X3, [2, 0], [("G", [2, 2], [])], "G", budget=5))
    obs, info = env.reset(seed=7)
    assert info == {"t": 0} and obs["position"] == [2, 0]
    obs, reward, terminated, truncated, info = env.step("down")
    assert (reward, terminated, truncated, info) == (0.0, False, False, {"t": 1, "valid": True, "achieved": None})
    obs, reward, terminated, truncated, info = env.step("Down ")
    assert (reward, terminated, truncated, info) == (1.0, True, False, {"t": 2, "valid": True, "achieved": "G"})
    with pytest.raises(EebenchError, match=r"^the episode is over; call reset\(\) first$"):
        env.step("up")


def test_env_truncated_when_the_budget_is_spent() -> None:
    env = GridDagEnv(make_instance(OPEN_3X3, [0, 0], [("G", [2, 2], [])], "G", budget=2))
    env.reset()
    assert env.step("up")[1:] == (0.0, False, False, {"t": 1, "valid": False, "achieved": None})
    assert env.step("right")[1:] == (0.0, False, True, {"t": 2, "valid": True, "achieved": None})
    with pytest.raises(EebenchError, match=r"^the episode is over; call reset\(\) first$"):
        env.step("right")
    obs, info = env.reset()  # reset starts the same episode again: the world has no randomness
    assert obs == {"t": 0, "position": [0, 0], "moves": ["down", "right"], "node": None} and info == {"t": 0}


def test_achieving_the_goal_on_the_last_step_of_the_budget_is_terminated_not_truncated() -> None:
    env = GridDagEnv(make_instance(OPEN_3X3, [2, 0], [("G", [2, 2], [])], "G", budget=2))
    env.reset()
    env.step("down")
    assert env.step("down")[1:4] == (1.0, True, False)


# -- observations ----------------------------------------------------------------------------------

def dag_world() -> GridDagWorld:
    """Row of 5: G at x=0, B at x=1 (requires A or C), start at x=2, A at x=3, C at x=4."""
    return GridDagWorld(make_instance(
        ["....."], [2, 0],
        [("A", [3, 0], []), ("C", [4, 0], []), ("B", [1, 0], [["A"], ["C"]]), ("G", [0, 0], [["B", "A"]])], "G"))


def test_observation_on_an_empty_cell() -> None:
    world = open_world()
    assert world.observe(world.initial_state()) == {
        "t": 0, "position": [1, 1], "moves": ["up", "down", "left", "right"], "node": None}


def test_observation_on_a_node_names_its_prerequisites_and_children_never_their_cells() -> None:
    world = dag_world()
    state = play(world, "left")
    obs = world.observe(state, action="left", valid=True)
    assert obs == {
        "t": 1, "position": [1, 0], "moves": ["left", "right"], "action": "left", "valid": True,
        "node": {"id": "B", "status": "discovered", "goal": False, "requires": [["A"], ["C"]], "children": ["G"]},
    }
    state = play(world, "right")
    assert world.observe(state)["node"] == {
        "id": "A", "status": "achieved", "goal": False, "requires": [], "children": ["B", "G"]}
    goal = world.observe(play(world, "right", "left", "left", "left"))["node"]
    assert goal == {"id": "G", "status": "achieved", "goal": True, "requires": [["B", "A"]], "children": []}
    # the exact equalities above leave no room for a location: only the agent's own position is told


def test_observation_after_an_inadmissible_move() -> None:
    world = open_world(start=[0, 0])
    state = play(world, "up")
    assert world.observe(state, action="up", valid=False) == {
        "t": 1, "position": [0, 0], "moves": ["down", "right"], "node": None, "action": "up", "valid": False}


def test_env_step_observation_echoes_the_raw_action() -> None:
    env = GridDagEnv(dag_world().instance)
    env.reset()
    obs = env.step(" LEFT")[0]
    assert (obs["action"], obs["valid"], obs["node"]["id"]) == (" LEFT", True, "B")
    obs = env.step("fly")[0]
    assert (obs["action"], obs["valid"], obs["position"]) == ("fly", False, [1, 0])


def test_render_observation_texts() -> None:
    world = dag_world()
    assert render_observation(world.observe(world.initial_state())) == (
        "You are at [2, 0].\nAdmissible moves: left, right.\nThere is no node here.")
    assert render_observation(world.observe(play(world, "left"), action="left", valid=True)) == (
        "You moved left. You are at [1, 0].\n"
        "Admissible moves: left, right.\n"
        "There is node B here.\n"
        "B is not achieved: its prerequisites are not met yet; come back once they are.\n"
        "Prerequisites: A or C.\n"
        "It is a prerequisite of: G.")
    assert render_observation(world.observe(play(world, "right", "up"), action="up", valid=False)) == (
        "You could not move 'up'; you stay at [3, 0].\n"
        "Admissible moves: left, right.\n"
        "There is node A here.\n"
        "A is achieved.\n"
        "Prerequisites: none.\n"
        "It is a prerequisite of: B, G.")
    final = play(world, "right", "left", "left", "left")
    assert render_observation(world.observe(final, action="left", valid=True)) == (
        "You moved left. You are at [0, 0].\n"
        "Admissible moves: right.\n"
        "There is node G here. It is the goal.\n"
        "G is achieved.\n"
        "Prerequisites: B and A.")


def test_render_observation_names_the_move_made_not_the_raw_text() -> None:
    # case and surrounding whitespace are ignored by the rules; echoed as written, "up\n" split the line
    world = dag_world()
    for raw in ("left\n", " LEFT", "\u00a0Left\t"):
        text = render_observation(world.observe(play(world, raw), action=raw, valid=True))
        assert text.startswith("You moved left. You are at [1, 0].\nAdmissible moves: left, right.\n")


def test_render_observation_of_mixed_prerequisites() -> None:
    obs = {"t": 0, "position": [0, 0], "moves": [], "node": {
        "id": "X", "status": "discovered", "goal": False, "requires": [["A", "B"], ["C"]], "children": []}}
    assert render_observation(obs) == (
        "You are at [0, 0].\nAdmissible moves: none.\nThere is node X here.\n"
        "X is not achieved: its prerequisites are not met yet; come back once they are.\n"
        "Prerequisites: (A and B) or C.")


def test_render_text_is_the_oracle_view() -> None:
    instance = make_instance(
        ["..#", "...", "#.."], [0, 0],
        [("A", [1, 0], []), ("B", [0, 1], []), ("G", [2, 2], [["A", "B"]])], "G", budget=21)
    assert render_text(instance) == (
        "test/tiny: 3x3, budget 21, goal G\n"
        "S a #\n"
        "b . .\n"
        "# . G\n"
        "nodes:\n"
        "  a A at [1, 0] requires none\n"
        "  b B at [0, 1] requires none\n"
        "  G G at [2, 2] requires A and B")
    env = GridDagEnv(instance)
    env.reset()
    env.step("down")
    env.step("right")
    assert env.render().splitlines()[1:4] == ["S a #", "b @ .", "# . G"]


def test_the_env_takes_an_instance_document_or_says_what_it_plays() -> None:
    """GridDagEnv(document) ended in AttributeError: 'dict' object has no attribute 'width'."""
    import eebench
    from eebench.world.grid_dag import GridDagEnv

    instance = eebench.load("park2026-main/low-small/seed-0")
    from_document = GridDagEnv(instance.to_document())
    assert from_document.reset()[0] == GridDagEnv(instance).reset()[0]
    for bad, says in ((5, "not int"), (eebench.load("grams2025-rooms/4x4/seed-0"), "not RoomsInstance")):
        with pytest.raises(TypeError, match=rf"^GridDagEnv plays GridDagInstance \(eebench.load\) or its document, "
                                            rf"{says}$"):
            GridDagEnv(bad)
