"""Rules of the room worlds of Grams et al. (Dark Treasure Rooms, mazes): instance, state, transition, observation.

A world is a graph of rooms joined by named doors, with balls that carry rewards, played over several episodes.
Every episode starts in `start` with every ball in place. An action is `<name> door` or `<name> ball` (case and
surrounding spaces ignored): a door of the current room moves the agent to its other side and uses one door
traversal; a ball of the current room not yet collected in this episode is collected and earns its reward;
anything else is invalid and has no effect. The episode ends with the step that collects the `ball_limit`-th
ball, with a door action once `door_budget` traversals are used (the agent does not move), or with the
`max_actions`-th step (default 2 x (door_budget + ball_limit)), whichever comes first.

The transition is a pure function of a state and an action; `replay` is the one loop that turns a trajectory's
actions into steps, per-episode returns and the agent's cumulative knowledge.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, NamedTuple

from eebench.errors import EebenchError, InputError, Problem, did_you_mean, quoted

# networkx (150 ms to import) and NumPy (60 ms) are imported in the functions that use them: reading the rooms
# kind's presets, as `convert` and grid_dag runs do, needs neither
if TYPE_CHECKING:
    import networkx as nx
    import numpy as np

KINDS = ("door", "ball")
UNREACHABLE = 2**31 - 1  # (the largest int32) door distance between rooms that no known door joins


def parse_action(text: Any) -> tuple[str, str] | None:
    """("door" | "ball", name) for `<name> door` / `<name> ball`, case and surrounding spaces ignored (lower-cased).

    Anything else (another word, an empty name, a name and its kind apart by more than one space, a non-string
    such as None) is None: an invalid action. (Names are words apart by single spaces: the instance schema.)
    """
    if not isinstance(text, str):
        return None
    name, space, kind = text.strip().lower().rpartition(" ")
    if not space or kind not in KINDS or not name or name != " ".join(name.split()):
        return None
    return kind, name


def _key(name: str) -> str:
    """How an action names an object: case does not matter (see parse_action)."""
    return name.lower()


@dataclass(frozen=True)
class Door:
    name: str
    between: tuple[str, str]


@dataclass(frozen=True)
class Ball:
    name: str
    room: str
    reward: int


@dataclass(frozen=True)
class RoomsInstance:
    """A validated rooms instance: the room graph, the balls, and the per-episode limits."""

    id: str
    rooms: tuple[str, ...]
    start: str
    doors: tuple[Door, ...]
    balls: tuple[Ball, ...]
    episodes: int
    door_budget: int
    ball_limit: int
    max_actions: int | None = None
    layout: dict[str, tuple[int, int]] | None = field(default=None, compare=False)
    meta: dict[str, Any] | None = field(default=None, compare=False)

    @property
    def effective_max_actions(self) -> int:
        """Steps per episode at most: `max_actions`, or 2 x (door_budget + ball_limit) when the instance omits it."""
        return self.max_actions if self.max_actions is not None else 2 * (self.door_budget + self.ball_limit)

    def to_document(self) -> dict[str, Any]:
        """The instance/1 document, the form canonical JSON and digests are taken over."""
        doc: dict[str, Any] = {
            "eebench": "instance/1",
            "id": self.id,
            "env": "rooms",
            "rooms": list(self.rooms),
            "start": self.start,
            "doors": [{"name": d.name, "between": list(d.between)} for d in self.doors],
            "balls": [{"name": b.name, "room": b.room, "reward": b.reward} for b in self.balls],
            "episodes": self.episodes,
            "door_budget": self.door_budget,
            "ball_limit": self.ball_limit,
        }
        if self.max_actions is not None:
            doc["max_actions"] = self.max_actions
        if self.layout is not None:
            doc["layout"] = {room: list(pos) for room, pos in self.layout.items()}
        if self.meta is not None:
            doc["meta"] = self.meta
        return doc

    @classmethod
    def from_document(cls, doc: dict[str, Any]) -> RoomsInstance:
        """Build from a document that passed the schema and `semantic_problems`."""
        layout = doc.get("layout")
        return cls(
            id=doc["id"],
            rooms=tuple(doc["rooms"]),
            start=doc["start"],
            doors=tuple(Door(d["name"], (d["between"][0], d["between"][1])) for d in doc["doors"]),
            balls=tuple(Ball(b["name"], b["room"], b["reward"]) for b in doc["balls"]),
            episodes=doc["episodes"],
            door_budget=doc["door_budget"],
            ball_limit=doc["ball_limit"],
            max_actions=doc.get("max_actions"),
            layout=None if layout is None else {room: (pos[0], pos[1]) for room, pos in layout.items()},
            meta=doc.get("meta"),
        )


def semantic_problems(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(field path, reason) for every rule of the world a schema-valid instance document breaks."""
    problems: list[tuple[str, str]] = []
    rooms: dict[str, int] = {}
    for i, room in enumerate(doc["rooms"]):
        if room in rooms:
            problems.append((f"rooms[{i}]", f"duplicate room id {quoted(room)} (also rooms[{rooms[room]}])"))
        rooms.setdefault(room, i)

    def unknown(room: str) -> str:
        return f"names unknown room {quoted(room)}{did_you_mean(room, rooms)}"

    if doc["start"] not in rooms:
        problems.append(("start", unknown(doc["start"])))
    import networkx as nx

    graph = nx.MultiGraph()
    graph.add_nodes_from(rooms)
    for what, items in (("door", doc["doors"]), ("ball", doc["balls"])):
        names: dict[str, int] = {}
        for i, item in enumerate(items):
            key = _key(item["name"])
            if key in names:
                problems.append((f"{what}s[{i}].name", f"duplicate {what} name {quoted(item['name'])} (also {what}s"
                                                       f"[{names[key]}]; names ignore case)"))
            names.setdefault(key, i)
    for i, door in enumerate(doc["doors"]):
        a, b = door["between"]
        bad = [(j, r) for j, r in enumerate((a, b)) if r not in rooms]
        for j, r in bad:
            problems.append((f"doors[{i}].between[{j}]", unknown(r)))
        if not bad and a == b:
            problems.append((f"doors[{i}].between",
                             f"joins room {quoted(a)} to itself; a door joins two distinct rooms"))
        elif not bad:
            graph.add_edge(a, b)
    for i, ball in enumerate(doc["balls"]):
        if ball["room"] not in rooms:
            problems.append((f"balls[{i}].room", unknown(ball["room"])))
    layout = doc.get("layout")
    if layout is not None:
        cells: dict[tuple[int, int], str] = {}
        for room, pos in layout.items():
            if room not in rooms:
                problems.append((f"layout.{room}", unknown(room)))
            elif tuple(pos) in cells:
                problems.append((f"layout.{room}", f"{pos} is also the position of room {quoted(cells[tuple(pos)])}"))
            cells.setdefault((pos[0], pos[1]), room)
        missing = [r for r in rooms if r not in layout]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            problems.append(("layout", f"has no position for room {quoted(missing[0])}{more}; give every room one"))
    door_problems = any(where.startswith("doors[") for where, _ in problems)
    if doc["start"] in rooms and not door_problems:  # a broken door is the problem to fix, not what it cuts off
        reached = nx.node_connected_component(graph, doc["start"])
        cut_off = [r for r in rooms if r not in reached]
        if cut_off:
            more = f" and {len(cut_off) - 1} more" if len(cut_off) > 1 else ""
            problems.append((f"rooms[{rooms[cut_off[0]]}]", f"room {quoted(cut_off[0])}{more} cannot be reached from "
                                                            f"the start {quoted(doc['start'])} through the doors"))
    return problems


# -- the rules --------------------------------------------------------------------------------------

class EpisodeEnd(str, Enum):
    """Why an episode ended (the first that applies, in this order)."""

    BALL_LIMIT = "ball_limit"     # the step collected the ball_limit-th ball
    DOOR_BUDGET = "door_budget"   # a door action once door_budget traversals were used
    MAX_ACTIONS = "max_actions"   # the max_actions-th step of the episode


class RoomsState(NamedTuple):
    """Where an episode stands: its index, the agent's room, traversals used, balls collected (bit mask), steps."""

    episode: int
    room: int
    traversals: int
    collected: int
    n_collected: int
    actions: int
    over: bool


class RoomsStep(NamedTuple):
    """One graded step: the room before and after it, what the action named, and what it did."""

    episode: int
    room_before: str
    room: str                 # after the step: the step's state
    kind: str | None          # "door", "ball", or None when the action is neither
    name: str | None          # the object named: the instance's spelling when it exists, else as written (lower case)
    valid: bool               # the action had its effect (moved or collected); a budget-ending door action did not
    reward: int
    ends_episode: bool


class Step(NamedTuple):
    """The outcome of one transition: the next state, the step's record and, if it ended the episode, why."""

    state: RoomsState
    outcome: RoomsStep
    end: EpisodeEnd | None


class RoomsWorld:
    """The rules of one instance, precomputed as lookup tables by room, door and ball index."""

    def __init__(self, instance: RoomsInstance):
        self.instance = instance
        self.room_ids = instance.rooms
        self.room_index = {room: i for i, room in enumerate(instance.rooms)}
        self.start = self.room_index[instance.start]
        self.door_names = tuple(d.name for d in instance.doors)
        self.door_lookup = {_key(d.name): i for i, d in enumerate(instance.doors)}
        self.door_ends = tuple((self.room_index[d.between[0]], self.room_index[d.between[1]]) for d in instance.doors)
        self.ball_names = tuple(b.name for b in instance.balls)
        self.ball_lookup = {_key(b.name): i for i, b in enumerate(instance.balls)}
        self.ball_room = tuple(self.room_index[b.room] for b in instance.balls)
        self.ball_reward = tuple(b.reward for b in instance.balls)
        n = len(instance.rooms)
        doors_of: list[list[int]] = [[] for _ in range(n)]
        for d, (a, b) in enumerate(self.door_ends):
            doors_of[a].append(d)
            doors_of[b].append(d)
        balls_in: list[list[int]] = [[] for _ in range(n)]
        for i, room in enumerate(self.ball_room):
            balls_in[room].append(i)
        # what a room shows, sorted by name: the order of `You see: ...`
        self.doors_of = tuple(tuple(sorted(ds, key=lambda d: self.door_names[d])) for ds in doors_of)
        self.balls_in = tuple(tuple(sorted(bs, key=lambda b: self.ball_names[b])) for bs in balls_in)
        self.door_budget = instance.door_budget
        self.ball_limit = instance.ball_limit
        self.max_actions = instance.effective_max_actions
        self._parsed: dict[Any, tuple[str, str] | None] = {}

    def parse(self, action: Any) -> tuple[str, str] | None:
        """parse_action, remembered per distinct string (logs repeat a few actions many times)."""
        if not isinstance(action, str):
            return None
        try:
            return self._parsed[action]
        except KeyError:
            parsed = self._parsed[action] = parse_action(action)
            return parsed

    def initial_state(self, episode: int = 0) -> RoomsState:
        """The start of an episode: the start room, no traversal, every ball in place."""
        return RoomsState(episode, self.start, 0, 0, 0, 0, False)

    def step(self, state: RoomsState, action: Any) -> Step:
        """Apply one action (a string, or None when none could be read) to a state of an episode not yet over."""
        if state.over:
            raise EebenchError(f"episode {state.episode} is over; start the next one with initial_state()")
        parsed = self.parse(action)
        room, traversals, collected, n_collected = state.room, state.traversals, state.collected, state.n_collected
        kind = name = None
        valid = False
        reward = 0
        end: EpisodeEnd | None = None
        if parsed is not None:
            kind, name = parsed
            if kind == "door":
                door = self.door_lookup.get(name)
                if door is not None:
                    name = self.door_names[door]
                if traversals >= self.door_budget:
                    end = EpisodeEnd.DOOR_BUDGET  # any door action: the budget is spent, the agent does not move
                elif door is not None and room in self.door_ends[door]:
                    a, b = self.door_ends[door]
                    room = b if room == a else a
                    traversals += 1
                    valid = True
            else:
                ball = self.ball_lookup.get(name)
                if ball is not None:
                    name = self.ball_names[ball]
                    if self.ball_room[ball] == room and not collected >> ball & 1:
                        collected |= 1 << ball
                        n_collected += 1
                        reward = self.ball_reward[ball]
                        valid = True
                        if n_collected >= self.ball_limit:
                            end = EpisodeEnd.BALL_LIMIT
        actions = state.actions + 1
        if end is None and actions >= self.max_actions:
            end = EpisodeEnd.MAX_ACTIONS
        over = end is not None
        new = RoomsState(state.episode, room, traversals, collected, n_collected, actions, over)
        outcome = RoomsStep(state.episode, self.room_ids[state.room], self.room_ids[room], kind, name, valid, reward,
                            over)
        return Step(new, outcome, end)

    # -- observation ----------------------------------------------------------------------------
    def observe(self, state: RoomsState) -> dict[str, Any]:
        """What the agent is told in a state: the doors and the balls still there, by name (never the room id)."""
        return {
            "episode": state.episode,
            "doors": [self.door_names[d] for d in self.doors_of[state.room]],
            "balls": [self.ball_names[b] for b in self.balls_in[state.room] if not state.collected >> b & 1],
            "doors_left": max(self.door_budget - state.traversals, 0),
            "balls_left": self.ball_limit - state.n_collected,
            "actions_left": self.max_actions - state.actions,
            "over": state.over,
        }


def _seen(obs: dict[str, Any]) -> str:
    things = [f"{d} door" for d in obs["doors"]] + [f"{b} ball" for b in obs["balls"]]
    return "You see: " + (", ".join(things) if things else "nothing")


def render_observation(obs: dict[str, Any]) -> str:
    """The observation as the text an LLM agent reads (Grams et al., Appendix A.5).

    `You see: apricot door, dodger_blue door, khaki ball` at the start of an episode; after an action
    `Reward: 7` and then `You walk through the door. You see: ...` or `You see: ...` (`Nothing happens.` first
    when the action was invalid), and a last line when the step ended the episode.
    """
    if "action" not in obs:
        return _seen(obs)
    lines = [f"Reward: {obs['reward']}"]
    end = obs.get("end")
    if end == EpisodeEnd.DOOR_BUDGET.value:
        lines.append("You have no door traversals left. " + _seen(obs))
    elif obs["moved"]:
        lines.append("You walk through the door. " + _seen(obs))
    elif not obs["valid"]:
        lines.append("Nothing happens. " + _seen(obs))
    else:
        lines.append(_seen(obs))
    if obs["over"]:
        lines.append(f"Episode {obs['episode'] + 1} is over.")
    return "\n".join(lines)


def reset_options(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """The options of a rooms env's reset, as a dict; EebenchError for a key other than `episode` (misspelt, it
    would start the next episode without a word) or options that are not a mapping."""
    if options is not None and not isinstance(options, Mapping):
        raise EebenchError(f"options: expected a dict such as {{'episode': 0}}, found {type(options).__name__}")
    for key in options or {}:
        if key != "episode":
            raise EebenchError(f"options: unknown key {quoted(key)}"
                               f"{did_you_mean(key, ['episode']) if isinstance(key, str) else ''}; "
                               "the rooms env takes 'episode'")
    return dict(options or {})


class RoomsEnv:
    """The world behind the Gymnasium API shape, one env episode per instance episode.

    The first `reset()` starts episode 0, each later one the next episode (`options={"episode": k}` picks one);
    the agent's memory of earlier episodes is its own business, the env only resets the world. `step` returns
    terminated when the ball limit or the door budget ended the episode, truncated when max_actions did; the
    reward is the collected ball's. A reset after the last episode raises EebenchError.
    """

    def __init__(self, instance: RoomsInstance | Mapping[str, Any]):
        from eebench.world.kinds import instance_for

        self.world = RoomsWorld(instance_for("rooms", instance, "RoomsEnv"))
        self.state: RoomsState | None = None
        self.next_episode = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
        """Start the next episode (or `options["episode"]`). The world has no randomness: `seed` is accepted only."""
        del seed
        episode = self.episode_to_start(options)
        self.state = self.world.initial_state(episode)
        self.next_episode = episode + 1
        return self.world.observe(self.state), {"episode": episode}

    def episode_to_start(self, options: dict[str, Any] | None) -> int:
        """The episode `reset(options=options)` starts: `options["episode"]` or the next one; EebenchError for
        one the instance does not have."""
        episode = reset_options(options).get("episode", self.next_episode)
        total = self.world.instance.episodes
        if isinstance(episode, bool) or not hasattr(episode, "__index__"):   # (a NumPy integer is one)
            raise EebenchError(f"episode {quoted(episode)}: expected an episode index, 0 to {total - 1}")
        episode = operator.index(episode)
        if not 0 <= episode < total:
            raise EebenchError(f"episode {episode} does not exist: the instance has {total} episodes (0 to {total - 1})")
        return episode

    def step(self, action: str | None) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        if self.state is None or self.state.over:
            raise EebenchError("the episode is over; call reset() first")
        result = self.world.step(self.state, action)
        self.state = result.state
        obs = self.world.observe(result.state)
        outcome = result.outcome
        obs.update(action=str(action), valid=outcome.valid, reward=outcome.reward,
                   moved=outcome.room != outcome.room_before, end=result.end.value if result.end else None)
        terminated = result.end in (EpisodeEnd.BALL_LIMIT, EpisodeEnd.DOOR_BUDGET)
        truncated = result.end is EpisodeEnd.MAX_ACTIONS
        info = {"episode": outcome.episode, "valid": outcome.valid, "kind": outcome.kind, "name": outcome.name,
                "end": obs["end"]}
        return obs, float(outcome.reward), terminated, truncated, info

    def render(self) -> str:
        return render_text(self.world.instance)


@functools.lru_cache(maxsize=64)
def world_of(instance: RoomsInstance) -> RoomsWorld:
    """The RoomsWorld of an instance, built once: graders replay many trajectories of few instances."""
    return RoomsWorld(instance)


# -- replay -----------------------------------------------------------------------------------------

class EpisodeKnowledge(NamedTuple):
    """K(i): what the agent knows after episode i, cumulative over episodes 0..i."""

    rooms: frozenset[str]   # rooms it was in (the start included)
    doors: frozenset[str]   # doors it went through (both ends known)
    balls: frozenset[str]   # balls it collected at least once (a reward is known only once collected)


class RoomsReplay(NamedTuple):
    """A trajectory replayed in the rules: every graded step and, per episode played, its return and K(i)."""

    steps: list[RoomsStep]
    returns: list[int]                  # reward collected in each episode played, 0-based by episode
    knowledge: list[EpisodeKnowledge]   # K(i) after each episode played
    episode_steps: list[int]            # graded steps of each episode played
    ignored: int                        # actions not graded: after the world ended their episode, or after the last


def replay(instance: RoomsInstance | RoomsWorld, actions: Sequence[Any],
           episodes: Sequence[int] | None = None) -> RoomsReplay:
    """Replay a trajectory's actions in the rules.

    Without `episodes`, the actions are one stream: a new episode starts where the world ended the previous one,
    and actions after the last of the instance's episodes are ignored (counted). With `episodes` (each step's
    logged 0-based episode index; every step must carry one), the log's boundaries are used: actions after the
    world ended their logged episode are ignored (counted), and an episode the log skips counts as played with no
    step (return 0, knowledge unchanged). Episodes played are 0 .. the last one with a step (or logged).

    A decreasing index or one at or beyond the instance's episodes is an InputError naming `steps[i].episode`
    (no file: the caller knows it and may re-raise the Problem with its file and line).
    """
    world = instance if isinstance(instance, RoomsWorld) else world_of(instance)
    total = world.instance.episodes
    if episodes is not None:
        if len(episodes) != len(actions):
            raise ValueError(f"{len(episodes)} episode indices for {len(actions)} actions")
        check_episodes(enumerate(episodes), total)
    room_ids, door_names, ball_names = world.room_ids, world.door_names, world.ball_names
    steps: list[RoomsStep] = []
    returns: list[int] = []
    knowledge: list[EpisodeKnowledge] = []
    episode_steps: list[int] = []
    rooms = {world.start}
    doors: set[int] = set()
    balls: set[int] = set()
    ignored = 0

    def close(n_steps: int, reward: int) -> None:
        returns.append(reward)
        episode_steps.append(n_steps)
        knowledge.append(EpisodeKnowledge(frozenset(room_ids[r] for r in rooms),
                                          frozenset(door_names[d] for d in doors),
                                          frozenset(ball_names[b] for b in balls)))

    state: RoomsState | None = None
    n_steps = reward = 0
    for i, action in enumerate(actions):
        if episodes is not None:
            logged = episodes[i]
            if state is None or logged != state.episode:
                if state is not None:
                    close(n_steps, reward)
                while len(returns) < logged:  # episodes the log skips: played with no step
                    close(0, 0)
                state, n_steps, reward = world.initial_state(logged), 0, 0
            elif state.over:
                ignored += 1
                continue
        elif state is None or state.over:
            if state is not None:
                close(n_steps, reward)
            if len(returns) >= total:
                ignored = len(actions) - i
                state = None
                break
            state, n_steps, reward = world.initial_state(len(returns)), 0, 0
        before = state.room
        result = world.step(state, action)
        state = result.state
        outcome = result.outcome
        steps.append(outcome)
        n_steps += 1
        reward += outcome.reward
        if outcome.valid:
            if state.room != before:
                rooms.add(state.room)
                doors.add(world.door_lookup[_key(outcome.name)])  # type: ignore[arg-type]
            elif outcome.kind == "ball":
                balls.add(world.ball_lookup[_key(outcome.name)])  # type: ignore[arg-type]
    if state is not None:
        close(n_steps, reward)
    return RoomsReplay(steps, returns, knowledge, episode_steps, ignored)


def check_episodes(episodes: Iterable[tuple[int, Any]], total: int | None) -> None:
    """Each (step position, episode index) of a log: an index >= 0 below `total` (None: the instance is not known,
    as for `validate`), never decreasing; else an InputError naming `steps[i].episode` (no file: the caller adds
    it)."""
    import numpy as np

    from eebench.documents import found

    last = 0
    for i, episode in episodes:
        where = f"steps[{i}].episode"
        if isinstance(episode, bool) or not isinstance(episode, (int, np.integer)) or episode < 0:
            raise InputError(Problem(None, None, where, f"expected an episode index >= 0, {found(episode)}"))
        if total is not None and episode >= total:
            raise InputError(Problem(None, None, where, f"episode {episode} does not exist: the instance has "
                                                        f"{total} episodes (0 to {total - 1})"))
        if episode < last:
            raise InputError(Problem(None, None, where, f"episode {episode} after episode {last}; episode indices "
                                                        "must not decrease"))
        last = episode


# -- graph distances ----------------------------------------------------------------------------------

def door_graph(instance: RoomsInstance, doors: Iterable[str] | None = None,
               rooms: Iterable[str] | None = None) -> nx.Graph:
    """The rooms (all, or `rooms`) joined by the doors (all, or those named in `doors`) with both ends among them."""
    import networkx as nx

    keep = set(instance.rooms if rooms is None else rooms)
    wanted = None if doors is None else set(doors)
    graph = nx.Graph()
    graph.add_nodes_from(r for r in instance.rooms if r in keep)
    graph.add_edges_from(d.between for d in instance.doors
                         if (wanted is None or d.name in wanted) and d.between[0] in keep and d.between[1] in keep)
    return graph


def door_distances(instance: RoomsInstance | RoomsWorld, doors: Iterable[str] | None = None,
                   rooms: Iterable[str] | None = None, *, sources: Iterable[str] | None = None) -> np.ndarray:
    """Door distances (BFS over the known graph) as an int64 matrix indexed by `instance.rooms` order.

    `doors` and `rooms` restrict the graph to what is known (default: the full map); entries between rooms no
    known path joins, or outside `rooms`, are UNREACHABLE. `sources` limits the rows computed (the rest stay
    UNREACHABLE), for callers that need distances from a few rooms only. Pass a RoomsWorld to reuse its tables.

    The graders call this once per knowledge state, so it is a level-synchronous BFS from every source at once
    in NumPy (one matrix product per level) rather than networkx's per-source BFS, which it is tested against.
    """
    import numpy as np

    world = instance if isinstance(instance, RoomsWorld) else world_of(instance)
    index = world.room_index
    n = len(world.room_ids)
    keep = np.ones(n, dtype=bool)
    if rooms is not None:
        keep[:] = False
        keep[[index[r] for r in rooms if r in index]] = True
    adjacency = np.zeros((n, n), dtype=np.float32)
    wanted = None if doors is None else {_key(d) for d in doors}
    for d, (a, b) in enumerate(world.door_ends):
        if (wanted is None or _key(world.door_names[d]) in wanted) and keep[a] and keep[b]:
            adjacency[a, b] = adjacency[b, a] = 1.0
    if sources is None:
        rows = np.flatnonzero(keep)
    else:
        rows = np.array(sorted({index[s] for s in sources if s in index and keep[index[s]]}), dtype=np.intp)
    dist = np.full((n, n), UNREACHABLE, dtype=np.int64)
    if rows.size == 0:
        return dist
    reached = np.zeros((rows.size, n), dtype=bool)
    reached[np.arange(rows.size), rows] = True
    block = np.where(reached, 0, UNREACHABLE)
    frontier = reached.astype(np.float32)
    level = 0
    while True:
        level += 1
        step = (frontier @ adjacency > 0) & ~reached
        if not step.any():
            break
        block[step] = level
        reached |= step
        frontier = step.astype(np.float32)
    dist[rows] = block
    return dist


def render_text(instance: RoomsInstance) -> str:
    """The full map as text for `eebench show`: a drawing when the instance has a layout, then every room's doors
    and balls. In the drawing `S` is the start, `o` another room, the digit after it the balls there (`.` none,
    `+` ten or more), `---` and `|` doors between neighbouring positions."""
    header = (f"{instance.id}: {len(instance.rooms)} rooms, {len(instance.doors)} doors, {len(instance.balls)} balls; "
              f"{instance.episodes} episodes, door budget {instance.door_budget}, ball limit {instance.ball_limit}, "
              f"max actions {instance.effective_max_actions}")
    lines = [header]
    if instance.layout is not None:
        lines += _drawing(instance, instance.layout)
    other = {room: [] for room in instance.rooms}  # type: dict[str, list[str]]
    for door in instance.doors:
        a, b = door.between
        other[a].append(f"{door.name} -> {b}")
        other[b].append(f"{door.name} -> {a}")
    balls = {room: [] for room in instance.rooms}  # type: dict[str, list[str]]
    for ball in instance.balls:
        balls[ball.room].append(f"{ball.name} ({ball.reward})")
    lines.append("rooms:")
    for room in instance.rooms:
        start = " (start)" if room == instance.start else ""
        lines.append(f"  {room}{start}: doors {', '.join(other[room]) or 'none'}; balls {', '.join(balls[room]) or 'none'}")
    return "\n".join(lines)


MAX_DRAWING = 40  # positions per side beyond which a layout is listed, not drawn


def _drawing(instance: RoomsInstance, layout: dict[str, tuple[int, int]]) -> list[str]:
    width = max(x for x, _ in layout.values()) + 1
    height = max(y for _, y in layout.values()) + 1
    if width > MAX_DRAWING or height > MAX_DRAWING:
        return [f"(a {width}x{height} layout is too large to draw)"]
    at = {pos: room for room, pos in layout.items()}
    count = {room: 0 for room in instance.rooms}
    for ball in instance.balls:
        count[ball.room] += 1
    edges = set()
    for door in instance.doors:
        (ax, ay), (bx, by) = layout[door.between[0]], layout[door.between[1]]
        if abs(ax - bx) + abs(ay - by) == 1:
            edges.add((min((ax, ay), (bx, by)), max((ax, ay), (bx, by))))
    out = []
    for y in range(height):
        row, below = "", ""
        for x in range(width):
            room = at.get((x, y))
            if room is None:
                row += "  "
            else:
                n = count[room]
                row += ("S" if room == instance.start else "o") + ("." if n == 0 else str(n) if n < 10 else "+")
            below += ("|" if ((x, y), (x, y + 1)) in edges else " ") + "    "
            if x + 1 < width:
                row += "---" if ((x, y), (x + 1, y)) in edges else "   "
        out.append(row.rstrip())
        if y + 1 < height:
            out.append(below.rstrip())
    return out
