"""The exact orienteering solver: best prize-collecting path under a travel budget (Grams et al., Appendix A.6)."""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

import numpy as np

from eebench.errors import EebenchError, InputError, quote

# Float costs are scaled by a power of two before CP-SAT sees them (exact in binary): this one, or a smaller one
# that keeps the scaled budget within 2**40, far from CP-SAT's integer limits.
COST_SCALE = 2 ** 20
# The exhaustive search is chosen when a path may visit at most EXHAUSTIVE_MAX_VISITS prize nodes, or when at most
# EXHAUSTIVE_MAX_NODES are within reach. Measured: room worlds (ball_limit 3..5, 20 to 120 balls) take it 0.2 to
# 40 ms where CP-SAT needs 20 to 50 ms just to start (benchmarks/bench_orienteering.py); the classic sets with at
# most 8 visits take it under 0.1 s (CP-SAT: up to 8 s); but 16 nodes with no visit limit and a budget that reaches
# most of them took it 12 s (CP-SAT: 0.13 s), 11 nodes 18 ms (CP-SAT: 24 ms).
EXHAUSTIVE_MAX_VISITS = 8
EXHAUSTIVE_MAX_NODES = 10
# A few visits among many prize nodes can still take the search forever (60 balls at the ends of corridors, a ball
# limit of 8: still searching after 5 minutes, where CP-SAT proves the optimum in 1 s). So a search chosen by
# `solve` stops after this many steps (about half a second here) and CP-SAT solves the problem instead.
EXHAUSTIVE_MAX_STEPS = 200_000
# Most prize decimals CP-SAT accepts (it needs integer objective coefficients).
MAX_PRIZE_DECIMALS = 6


class Status(str, Enum):
    """Whether a solution is a proven optimum (a measurement) or only the best found when time ran out."""

    OPTIMAL = "optimal"
    BOUND = "bound"  # a time limit hit: value = best found, bound = proven upper bound


class Method(str, Enum):
    """The two exact methods; they agree on every problem (property-tested)."""

    EXHAUSTIVE = "exhaustive"
    CP_SAT = "cp-sat"


def _fail(field_name: str, message: str) -> InputError:
    return InputError.at("orienteering problem", message, field=field_name)


def _no_path(problem: OrienteeringProblem) -> InputError:
    return _fail("end", f"no path from the start {problem.start} to the end {problem.end} within the budget "
                        f"{problem.budget}")


@dataclass(frozen=True, eq=False)
class OrienteeringProblem:
    """Visit prize nodes on one path from `start` within `budget` travel cost; each node's prize counts once.

    `cost[i][j]` is the travel cost between i and j (symmetric, non-negative, zero diagonal, `inf` = no way; meant to
    be shortest-path distances, so a stopover never shortens a leg). The path's value is the sum of the prizes of its
    distinct nodes: `start` (and a fixed `end`) always count and never use up `max_visits`. A node of prize 0 is never
    a stopover. `end=None`: the path ends anywhere; an index: it must end there (`end == start`: a closed tour).
    Problems compare and hash by content (`key`).
    """

    cost: Any
    prize: tuple[float, ...]
    budget: float
    start: int = 0
    end: int | None = None
    max_visits: int | None = None
    key: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        cost = np.array(self.cost, copy=True)
        if cost.ndim != 2 or cost.shape[0] != cost.shape[1] or cost.shape[0] == 0:
            raise _fail("cost", f"expected a non-empty square matrix, found shape {cost.shape}")
        if cost.dtype.kind not in "iuf":
            raise _fail("cost", f"expected numbers, found dtype {cost.dtype}")
        n = cost.shape[0]
        as_float = cost.astype(np.float64)
        if np.isnan(as_float).any() or (as_float < 0).any():
            raise _fail("cost", "expected non-negative numbers or inf, found a negative number or NaN")
        if not np.array_equal(as_float, as_float.T):
            i, j = map(int, np.argwhere(as_float != as_float.T)[0])
            raise _fail("cost", f"expected a symmetric matrix, found cost[{i}][{j}] != cost[{j}][{i}]")
        if (np.diag(as_float) != 0).any():
            raise _fail("cost", "expected a zero diagonal (staying put costs nothing)")
        cost.setflags(write=False)
        object.__setattr__(self, "cost", cost)
        prize = tuple(self.prize)
        if len(prize) != n:
            raise _fail("prize", f"expected {n} prizes (one per node), found {len(prize)}")
        for i, p in enumerate(prize):
            if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(p) or p < 0:
                raise _fail(f"prize[{i}]", f"expected a finite non-negative number, found {p!r}")
        object.__setattr__(self, "prize", tuple(p.item() if isinstance(p, np.generic) else p for p in prize))
        if isinstance(self.budget, bool) or not isinstance(self.budget, (int, float, np.integer, np.floating)) \
                or not math.isfinite(self.budget) or self.budget < 0:
            raise _fail("budget", f"expected a finite non-negative number, found {self.budget!r}")
        for name in ("start", "end"):
            value = getattr(self, name)
            if value is None and name == "end":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < n:
                raise _fail(name, f"expected a node index in 0..{n - 1}, found {value!r}")
        if self.max_visits is not None and (isinstance(self.max_visits, bool)
                                            or not isinstance(self.max_visits, (int, np.integer))
                                            or self.max_visits < 0):
            raise _fail("max_visits", f"expected None or an integer >= 0, found {self.max_visits!r}")
        for name in ("start", "end", "max_visits"):  # numpy integers become ints
            if getattr(self, name) is not None:
                object.__setattr__(self, name, int(getattr(self, name)))
        digest = hashlib.sha256()
        digest.update(f"{n}|{float(self.budget)!r}|{self.start}|{self.end}|{self.max_visits}|".encode())
        digest.update(np.ascontiguousarray(as_float, dtype="<f8").tobytes())
        digest.update(np.asarray(prize, dtype="<f8").tobytes())
        object.__setattr__(self, "key", digest.hexdigest())

    @property
    def n(self) -> int:
        return int(self.cost.shape[0])

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OrienteeringProblem) and other.key == self.key

    def __hash__(self) -> int:
        return hash(self.key)


class Solution(NamedTuple):
    """A path (start first, a fixed end last), the sum of its prizes, and how sure we are it is the best."""

    value: float
    path: tuple[int, ...]
    status: Status
    method: Method
    bound: float  # proven upper bound on the optimum (== value when OPTIMAL)


def path_cost(problem: OrienteeringProblem, path: tuple[int, ...]) -> float:
    """Travel cost of `path` (correctly rounded sum: the one rule that decides whether a path is within budget)."""
    cost = problem.cost
    legs = [cost[a, b].item() for a, b in zip(path, path[1:])]
    return math.fsum(legs) if cost.dtype.kind == "f" else sum(legs)


def path_value(problem: OrienteeringProblem, path: tuple[int, ...]) -> float:
    """Sum of the prizes of the distinct nodes of `path`."""
    return sum(problem.prize[i] for i in sorted(set(path)))


def is_feasible(problem: OrienteeringProblem, path: tuple[int, ...]) -> bool:
    """Whether `path` is a solution: from start, to a fixed end, no repeats, within budget and max_visits."""
    if not path or path[0] != problem.start:
        return False
    if problem.end is not None and (len(path) < 2 or path[-1] != problem.end):
        return False
    inner = path[1:-1] if problem.end is not None else path[1:]
    if len(set(inner)) != len(inner) or problem.start in inner or (problem.end in inner):
        return False
    if problem.max_visits is not None and len(inner) > problem.max_visits:
        return False
    return all(0 <= i < problem.n for i in path) and path_cost(problem, path) <= problem.budget


class _Plan(NamedTuple):
    """What both methods share: the fixed part of every path and the prize nodes worth considering."""

    base: tuple[int, ...]        # nodes on every path: (start,) or (start, end)
    base_value: float
    candidates: list[int]        # positive-prize nodes some path within budget can visit, best prize first
    k: int                       # how many candidates a path may visit
    feasible: bool               # False when a fixed end is surely beyond the budget
    closure: np.ndarray          # shortest-path closure of cost: a lower bound on what reaching a node costs
    integral: bool               # every finite cost is a whole number: sums are exact
    slack: float                 # tolerance of float sums in pruning (0 for integral costs)


def _plan(problem: OrienteeringProblem) -> _Plan:
    s, e, budget = problem.start, problem.end, problem.budget
    base = (s,) if e is None else (s, e)
    base_value = path_value(problem, base)
    closure = problem.cost.astype(np.float64)
    for via in range(problem.n):  # Floyd-Warshall: costs need not obey the triangle inequality
        np.minimum(closure, closure[:, via:via + 1] + closure[via:via + 1, :], out=closure)
    finite = problem.cost[np.isfinite(problem.cost)].astype(np.float64)
    integral = bool((finite == np.floor(finite)).all()) and float(finite.max(initial=0)) < 2 ** 52
    # Float sums may differ from the exact sum by a few ulps: prune with slack, decide with `path_cost`.
    slack = 0.0 if integral else 1e-9 * max(1.0, float(budget))
    if e is not None and closure[s, e] > budget + slack:
        return _Plan(base, base_value, [], 0, False, closure, integral, slack)
    to_end = closure[:, e] if e is not None else np.zeros(problem.n)
    candidates = [j for j in range(problem.n) if j != s and j != e and problem.prize[j] > 0
                  and closure[s, j] + to_end[j] <= budget + slack]
    candidates.sort(key=lambda j: (-problem.prize[j], j))
    k = len(candidates) if problem.max_visits is None else min(problem.max_visits, len(candidates))
    return _Plan(base, base_value, candidates, k, True, closure, integral, slack)


class _TooLong(Exception):
    """The exhaustive search took more than its `max_steps`."""


def _exhaustive(problem: OrienteeringProblem, plan: _Plan, max_steps: float = math.inf) -> Solution:
    """Depth-first search over ordered visits with branch and bound; _TooLong after `max_steps` visits tried.

    Pruned by the remaining budget (a node is worth going to only if the end is still within reach after it), by an
    optimistic bound (value so far plus the best prizes still within reach) and by dominance (a set of visited
    nodes ending at the same node with no less cost spent has been searched already).
    """
    s, e, budget, k, slack = problem.start, problem.end, problem.budget, plan.k, plan.slack
    cand = plan.candidates
    exact = plan.integral
    cost = problem.cost.astype(np.float64).tolist()
    reach = plan.closure.tolist()
    prize = problem.prize
    to_end = [reach[j][e] if e is not None else 0.0 for j in range(problem.n)]
    last_leg = [cost[j][e] if e is not None else 0 for j in range(problem.n)]
    best_value, best_seq = -1.0, ()  # -1: no path yet (a fixed end may be reachable only by way of stopovers)
    seen: dict[tuple[int, int], float] = {}
    steps = 0

    def finish(seq: tuple[int, ...]) -> tuple[int, ...]:
        return (s, *seq) if e is None else (s, *seq, e)

    def dfs(last: int, used: float, value: float, mask: int, seq: tuple[int, ...]) -> None:
        nonlocal best_value, best_seq, steps
        steps += 1
        if steps > max_steps:
            raise _TooLong
        if value > best_value and used + last_leg[last] <= budget + slack \
                and (exact or path_cost(problem, finish(seq)) <= budget):
            best_value, best_seq = value, seq
        r = k - len(seq)
        if r == 0:
            return
        room = budget - used + slack
        near, row = reach[last], cost[last]
        within = [j for j in cand if not mask >> j & 1 and near[j] + to_end[j] <= room]
        top = sum(prize[x] for x in within[:r])
        rest = top - (prize[within[r - 1]] if len(within) >= r else 0)
        for idx, j in enumerate(within):
            # `within` is best prize first: going to j next is worth at most j's prize plus the best r-1 others.
            if value + (top if idx < r else rest + prize[j]) <= best_value:
                break
            spent = used + row[j]
            if spent + to_end[j] > budget + slack:
                continue
            state = (mask | 1 << j, j)
            # Float sums a few ulps apart may be in either order exactly: only a clearly cheaper visit dominates.
            known = seen.get(state, math.inf)
            if known <= spent - slack:
                continue
            seen[state] = min(known, spent)
            dfs(j, spent, value + prize[j], mask | 1 << j, (*seq, j))

    if plan.feasible:
        dfs(s, 0, 0, 0, ())
    if best_value < 0:
        raise _no_path(problem)
    path = finish(best_seq)
    value = path_value(problem, path)
    return Solution(value, path, Status.OPTIMAL, Method.EXHAUSTIVE, value)


def _prize_scale(prize: tuple[float, ...]) -> int:
    """The smallest power of ten that makes every prize an integer (CP-SAT maximizes integers)."""
    for d in range(MAX_PRIZE_DECIMALS + 1):
        scale = 10 ** d
        if all(abs(p * scale - round(p * scale)) <= 1e-9 * max(1.0, p * scale) for p in prize):
            return scale
    raise _fail("prize", f"cp-sat needs prizes with at most {MAX_PRIZE_DECIMALS} decimals; use the exhaustive method")


def _cp_sat(problem: OrienteeringProblem, plan: _Plan, time_limit: float) -> Solution:
    """A circuit over optional nodes (AddCircuit; a skipped node takes its self-loop), closed by a fixed arc back
    to the start: from the end node, or from a dummy node any visited node may step to when the end is free.

    Costs: whole-number costs are used as they are; other costs become floor(S * cost) and the budget
    floor(S * budget) + 1, S = COST_SCALE (smaller for budgets over 2**20). Rounding down makes the model a
    relaxation: it never refuses a path within budget. A path it accepts is re-measured exactly (`path_cost`); one
    over budget is cut off (its arcs may not all be chosen again) and the model solved again, so the first path
    that passes is optimal.
    """
    from ortools.sat.python import cp_model

    s, e = problem.start, problem.end
    scale = _prize_scale(problem.prize)
    floats = not plan.integral
    cost_scale = min(COST_SCALE, 2 ** max(0, 40 - math.frexp(float(problem.budget))[1])) if floats else 1
    budget_int = math.floor(problem.budget * cost_scale) + (1 if floats else 0)

    def arc_cost(i: int, j: int) -> int | None:
        c = float(problem.cost[i, j])
        if not math.isfinite(c) or c > problem.budget:
            return None
        return math.floor(c * cost_scale)

    model = cp_model.CpModel()
    cand = plan.candidates
    visit = {j: model.NewBoolVar(f"visit_{j}") for j in cand}
    arcs: list[tuple[int, int, Any]] = []
    arc_var: dict[tuple[int, int], Any] = {}
    weighted = []

    def add_arc(i: int, j: int, c: int) -> None:
        x = model.NewBoolVar(f"x_{i}_{j}")
        arcs.append((i, j, x))
        arc_var[i, j] = x
        if c:
            weighted.append((c, x))

    closed = e is not None and e == s
    # `sink`: the node the path's last leg enters: the fixed end, or a dummy (index n) for a free end.
    sink = s if closed else (e if e is not None else problem.n)
    for i in [s, *cand]:
        for j in cand:
            if i != j and (c := arc_cost(i, j)) is not None:
                add_arc(i, j, c)
        if not (closed and i == s):
            c = 0 if e is None else arc_cost(i, e)
            if c is not None:
                add_arc(i, sink, c)
    for j in cand:
        arcs.append((j, j, visit[j].Not()))
    if closed:
        # The empty tour: the start alone takes a self-loop, which no visit may join.
        empty = model.NewBoolVar("empty")
        arcs.append((s, s, empty))
        for j in cand:
            model.AddImplication(visit[j], empty.Not())
    else:
        arcs.append((sink, s, model.NewConstant(1)))
    model.AddCircuit(arcs)
    model.Add(sum(c * x for c, x in weighted) <= budget_int)
    if problem.max_visits is not None:
        model.Add(sum(visit.values()) <= problem.max_visits)
    model.Maximize(sum(round(problem.prize[j] * scale) * visit[j] for j in cand))

    solver = cp_model.CpSolver()
    # One worker: the same path on every run, and the machine's other cores stay free. Linearization level 2 puts
    # the circuit's cuts into the LP relaxation; measured: 20 to 35 times less CPU on Tsiligirides 1/40 and 3/70,
    # and Chao 66 at budget 25 proven in 36 s of CPU (over 300 s at level 1).
    solver.parameters.num_workers = 1
    solver.parameters.linearization_level = 2
    deadline = time.monotonic() + time_limit
    best_path = plan.base  # the empty path (the closed tour's is (start, start))
    best_value = path_value(problem, best_path)
    while True:
        solver.parameters.max_time_in_seconds = max(0.01, deadline - time.monotonic())
        status = solver.Solve(model)
        if status == cp_model.INFEASIBLE:
            raise _no_path(problem)
        if status == cp_model.MODEL_INVALID:   # (not a time limit: no bound to report)
            why = quote(model.Validate() or "an invalid model")
            raise _fail("prize", f"CP-SAT cannot take this problem ({why}); prizes and costs must stay well within "
                                 "64-bit integers")
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            # Time ran out before any solution: the empty path is the best known (when it is one).
            if not is_feasible(problem, best_path):
                raise EebenchError(f"orienteering: no path found within the time limit of {time_limit} s")
            bound = plan.base_value + sum(problem.prize[j] for j in cand[:plan.k])
            return Solution(best_value, best_path, Status.BOUND, Method.CP_SAT, bound)
        path = _read_path(solver, arc_var, s, sink, e)
        value = path_value(problem, path)
        if not floats or path_cost(problem, path) <= problem.budget:
            if status == cp_model.OPTIMAL:
                return Solution(value, path, Status.OPTIMAL, Method.CP_SAT, value)
            if value > best_value:
                best_value, best_path = value, path
        else:
            # The relaxation accepted a path over budget: forbid exactly this path and solve again.
            legs = [arc_var[a, b] for a, b in zip(path, path[1:] if e is not None else (*path[1:], sink))]
            model.AddBoolOr([x.Not() for x in legs])
            if time.monotonic() < deadline:
                continue
        bound = plan.base_value + math.floor(solver.BestObjectiveBound() + 1e-6) / scale
        return Solution(best_value, best_path, Status.BOUND, Method.CP_SAT, max(bound, best_value))


def _read_path(solver: Any, arc_var: dict[tuple[int, int], Any], s: int, sink: int,
               e: int | None) -> tuple[int, ...]:
    """Follow the chosen arcs from the start to the sink; the dummy sink of a free end is not part of the path."""
    succ = {i: j for (i, j), x in arc_var.items() if solver.BooleanValue(x)}
    path, node = [s], s
    while node in succ:
        node = succ[node]
        if node == sink:
            break
        path.append(node)
    if e is not None:
        path.append(e)
    return tuple(path)


def choose_method(problem: OrienteeringProblem) -> Method:
    """Exhaustive when a path may visit at most EXHAUSTIVE_MAX_VISITS prize nodes or at most EXHAUSTIVE_MAX_NODES
    are within reach of the start (the cost matrix aside, its work grows with these two), else CP-SAT."""
    return _choose(_plan(problem))


def _choose(plan: _Plan) -> Method:
    small = plan.k <= EXHAUSTIVE_MAX_VISITS or len(plan.candidates) <= EXHAUSTIVE_MAX_NODES
    return Method.EXHAUSTIVE if small else Method.CP_SAT


def solve(problem: OrienteeringProblem, *, method: Method | None = None, time_limit: float = 10.0) -> Solution:
    """The best path of `problem`; `method=None` picks the cheaper method (`choose_method`).

    The exhaustive method asked for has no time limit; chosen here, it gives way to CP-SAT after
    EXHAUSTIVE_MAX_STEPS (and CP-SAT to it where prizes have more decimals than CP-SAT takes). CP-SAT returns
    Status.BOUND when `time_limit` seconds run out before it proves optimality. A fixed end beyond the budget is
    an InputError.
    """
    plan = _plan(problem)
    if not plan.feasible:
        raise _no_path(problem)
    if method is not None:
        return _exhaustive(problem, plan) if Method(method) is Method.EXHAUSTIVE else _cp_sat(problem, plan, time_limit)
    if not _cp_sat_takes(problem.prize):
        return _exhaustive(problem, plan)
    if _choose(plan) is Method.EXHAUSTIVE:
        try:
            return _exhaustive(problem, plan, EXHAUSTIVE_MAX_STEPS)
        except _TooLong:
            pass
    return _cp_sat(problem, plan, time_limit)


def _cp_sat_takes(prize: tuple[float, ...]) -> bool:
    try:
        _prize_scale(prize)
    except InputError:
        return False
    return True


class SolverCache:
    """Get-or-solve by problem content (`OrienteeringProblem.key`, which depends on the order of the nodes); counts
    hits and misses. The first answer stays, whatever method or time limit a later call asks for."""

    def __init__(self) -> None:
        self._solutions: dict[str, Solution] = {}
        self.hits = 0
        self.misses = 0

    def solve(self, problem: OrienteeringProblem, **kw: Any) -> Solution:
        found = self._solutions.get(problem.key)
        if found is not None:
            self.hits += 1
            return found
        self.misses += 1
        solution = self._solutions[problem.key] = solve(problem, **kw)
        return solution

    @property
    def hit_rate(self) -> float | None:
        """Hits over lookups; None before the first lookup."""
        lookups = self.hits + self.misses
        return self.hits / lookups if lookups else None

    def __len__(self) -> int:
        return len(self._solutions)
