"""The orienteering solver: hand-worked optima, both methods against brute force, the classic data sets."""

from __future__ import annotations

import csv
import itertools
import math
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from eebench.errors import InputError
from eebench.evaluator.orienteering import (
    Method,
    OrienteeringProblem,
    Solution,
    SolverCache,
    Status,
    choose_method,
    is_feasible,
    path_cost,
    path_value,
    solve,
)

BOTH = [Method.EXHAUSTIVE, Method.CP_SAT]


def line(xs: list[float], prize: list[float], budget: float, **kw) -> OrienteeringProblem:
    """Nodes on a line at positions xs: cost = |xi - xj|."""
    x = np.array(xs)
    return OrienteeringProblem(np.abs(x[:, None] - x[None, :]), tuple(prize), budget, **kw)


def check(problem: OrienteeringProblem, solution: Solution, value: float) -> None:
    assert solution.status is Status.OPTIMAL
    assert solution.value == value == solution.bound
    assert is_feasible(problem, solution.path), solution.path
    assert path_value(problem, solution.path) == value


# Nodes 0 (start), 1, 2, 3 at positions 0, 1, 3, 6 with prizes 0, 1, 5, 4 (integer costs).
LINE = dict(xs=[0, 1, 3, 6], prize=[0, 1, 5, 4])


@pytest.mark.parametrize("method", BOTH)
class TestHandWorked:
    def test_open_path_takes_what_lies_on_the_way(self, method):
        # Budget 3 reaches position 3: walking 0 -> 1 -> 2 costs 1 + 2 = 3 and collects 1 + 5; node 3 is 6 away.
        p = line(**LINE, budget=3)
        s = solve(p, method=method)
        check(p, s, 6)
        assert s.path == (0, 1, 2) and s.method is method

    def test_one_visit(self, method):
        # At most one stop within 3: node 1 (1) or node 2 (5): 5.
        p = line(**LINE, budget=3, max_visits=1)
        check(p, solve(p, method=method), 5)

    def test_closed_tour(self, method):
        # Back to 0: 0 -> 1 -> 2 -> 0 costs 1 + 2 + 3 = 6 for 6; with budget 5 only 0 -> 1 -> 0 (cost 2) fits: 1.
        p6 = line(**LINE, budget=6, end=0)
        check(p6, solve(p6, method=method), 6)
        p5 = line(**LINE, budget=5, end=0)
        s = solve(p5, method=method)
        check(p5, s, 1)
        assert s.path == (0, 1, 0)

    def test_empty_closed_tour(self, method):
        # Budget 1 cannot even go to node 1 and back (cost 2): the tour stays at the start.
        p = line(**LINE, budget=1, end=0)
        s = solve(p, method=method)
        check(p, s, 0)
        assert s.path == (0, 0)

    def test_fixed_end(self, method):
        # End at node 3 (position 6) with budget 6: the straight walk passes every node: 1 + 5 + 4 = 10; the end's
        # prize counts without using up a visit, so max_visits=1 gives 5 + 4.
        p = line(**LINE, budget=6, end=3)
        s = solve(p, method=method)
        check(p, s, 10)
        assert s.path == (0, 1, 2, 3)
        p1 = line(**LINE, budget=6, end=3, max_visits=1)
        check(p1, solve(p1, method=method), 9)

    def test_fixed_end_beyond_the_budget_is_refused(self, method):
        p = line(**LINE, budget=5.5, end=3)
        with pytest.raises(InputError, match=r"^orienteering problem: end: no path from the start 0 to the end 3 "
                                             r"within the budget 5.5$"):
            solve(p, method=method)

    def test_zero_prizes(self, method):
        p = line(xs=[0, 1, 2], prize=[0, 0, 0], budget=10)
        s = solve(p, method=method)
        check(p, s, 0)
        assert s.path == (0,)

    def test_budget_zero_collects_the_start_room_only(self, method):
        # Nodes 1 and 2 lie where the start is (cost 0, e.g. balls in the start room); node 3 is one door away.
        p = line(xs=[0, 0, 0, 1], prize=[0, 2, 3, 9], budget=0)
        check(p, solve(p, method=method), 5)
        p1 = line(xs=[0, 0, 0, 1], prize=[0, 2, 3, 9], budget=0, max_visits=1)
        check(p1, solve(p1, method=method), 3)
        p0 = line(xs=[0, 0, 0, 1], prize=[0, 2, 3, 9], budget=0, max_visits=0)
        check(p0, solve(p0, method=method), 0)

    def test_unreachable_nodes(self, method):
        # Node 2 (prize 100) has no way to it (inf), node 3 (prize 50) a huge cost: only node 1 is collectable.
        inf = math.inf
        cost = np.array([[0, 1, inf, 1e9], [1, 0, inf, 1e9], [inf, inf, 0, inf], [1e9, 1e9, inf, 0]])
        p = OrienteeringProblem(cost, (0, 4, 100, 50), 10)
        s = solve(p, method=method)
        check(p, s, 4)
        assert s.path == (0, 1)

    def test_prize_at_the_start(self, method):
        # The start's own prize is always collected and never uses up a visit.
        p = line(xs=[0, 2], prize=[7, 3], budget=1, max_visits=0)
        check(p, solve(p, method=method), 7)
        p2 = line(xs=[0, 2], prize=[7, 3], budget=2, max_visits=1)
        check(p2, solve(p2, method=method), 10)

    def test_detour_beats_greedy(self, method):
        # Room-world shape: start S, a near ball a (1 door, reward 4), two balls b, c in one room 3 doors the other
        # way (rewards 3 and 3), ball_limit 2, budget 3. Greedy takes a (4) and cannot reach b, c; the optimum walks
        # to the far room: 3 + 3 = 6. Door distances: a-b = a-c = 4, b-c = 0.
        cost = np.array([[0, 1, 3, 3], [1, 0, 4, 4], [3, 4, 0, 0], [3, 4, 0, 0]])
        p = OrienteeringProblem(cost, (0, 4, 3, 3), 3, max_visits=2)
        s = solve(p, method=method)
        check(p, s, 6)
        assert set(s.path) == {0, 2, 3}

    def test_float_budget_is_exact_at_the_boundary(self, method):
        # A 3-4-5 triangle scaled by 0.1: 0 -> 1 -> 2 costs 0.3 + 0.4 and takes both prizes (3) when the budget is
        # exactly that sum; one ulp less leaves the best single node: node 2 (0.5 away, prize 2).
        pts = np.array([[0.0, 0.0], [3.0, 0.0], [3.0, 4.0]])
        cost = np.sqrt(((pts[:, None] - pts[None, :]) ** 2).sum(-1)) * 0.1  # legs 0.3, 0.4, 0.5: inexact in binary
        p = OrienteeringProblem(cost, (0, 1, 2), path_cost(OrienteeringProblem(cost, (0, 1, 2), 1), (0, 1, 2)))
        check(p, solve(p, method=method), 3)
        q = OrienteeringProblem(cost, (0, 1, 2), math.nextafter(p.budget, 0))
        check(q, solve(q, method=method), 2)

    def test_a_path_just_over_a_float_budget_is_refused(self, method):
        # Legs 0.5 and 0.5 + 2**-22 sum to just over the budget 1: only node 1 (prize 1) is within reach. CP-SAT's
        # rounded-down costs accept 0 -> 1 -> 2 (worth 6); re-measured, it is cut off and the model solved again.
        p = line(xs=[0, 0.5, 1 + 2 ** -22], prize=[0, 1, 5], budget=1)
        s = solve(p, method=method)
        check(p, s, 1)
        assert s.path == (0, 1)


    def test_large_float_budgets(self, method):
        # Budgets over 2**20 get a smaller cost scale in CP-SAT; the straight walk to position 2.5e7 + 0.25 passes
        # node 1 and takes both prizes exactly at that budget, and only node 1 one ulp below it.
        xs, prize = [0, 1.5e7, 2.5e7 + 0.25], [0, 1, 2]
        p = line(xs=xs, prize=prize, budget=2.5e7 + 0.25)
        check(p, solve(p, method=method), 3)
        q = line(xs=xs, prize=prize, budget=math.nextafter(2.5e7 + 0.25, 0))
        check(q, solve(q, method=method), 1)

def test_decimal_prizes():
    # Budget 2 from position 0: node 1 (1 away, 0.25) then node 2 (2 away, 1.5) is 0.25 + 1.5; node 3 is too far.
    p = line(xs=[0, 1, 2, 5], prize=[0, 0.25, 1.5, 9], budget=2)
    for method in BOTH:
        check(p, solve(p, method=method), 1.75)
    fine = line(xs=[0, 1], prize=[0, 1e-7], budget=1)
    assert solve(fine, method=Method.EXHAUSTIVE).value == 1e-7
    with pytest.raises(InputError, match=r"^orienteering problem: prize: cp-sat needs prizes with at most 6 "
                                         r"decimals; use the exhaustive method$"):
        solve(fine, method=Method.CP_SAT)


def test_a_choice_the_prizes_or_the_search_would_fail_is_made_again(monkeypatch: pytest.MonkeyPatch):
    """`solve` chooses for the caller: prizes CP-SAT cannot take go to the exhaustive search, however large the
    problem; a search that runs past EXHAUSTIVE_MAX_STEPS gives way to CP-SAT (a star of 60 corridors with the
    best prizes at their far ends and 8 visits took the search more than 5 minutes)."""
    from eebench.evaluator import orienteering

    thirds = line(xs=list(range(14)), prize=[1 / 3 + i for i in range(14)], budget=15)
    assert choose_method(thirds) is Method.CP_SAT
    found = solve(thirds)
    assert found.method is Method.EXHAUSTIVE and found.value == pytest.approx(sum(1 / 3 + i for i in range(14)))
    # a star: corridors of 1-5 rooms from the hub 0, each ending at a prize worth about twice its length
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 6, size=60)
    cost = np.zeros((61, 61))
    cost[0, 1:] = cost[1:, 0] = lengths
    cost[1:, 1:] = lengths[:, None] + lengths[None, :]
    np.fill_diagonal(cost, 0)
    star = OrienteeringProblem(cost, (0.0, *(2.0 * lengths - rng.integers(0, 2, size=60))), 25, max_visits=8)
    assert choose_method(star) is Method.EXHAUSTIVE
    monkeypatch.setattr(orienteering, "EXHAUSTIVE_MAX_STEPS", 1_000)
    gave_way = solve(star)
    assert gave_way.method is Method.CP_SAT and gave_way.status is Status.OPTIMAL
    assert is_feasible(star, gave_way.path) and path_value(star, gave_way.path) == gave_way.value

def test_bad_problems_are_refused_with_one_line():
    good = np.array([[0, 1], [1, 0]])
    cases = [
        (dict(cost=np.array([[0, 1], [2, 0]]), prize=(0, 1), budget=1), r"cost: expected a symmetric matrix, found "
                                                                        r"cost\[0\]\[1\] != cost\[1\]\[0\]"),
        (dict(cost=np.array([[0, -1], [-1, 0]]), prize=(0, 1), budget=1), r"cost: expected non-negative"),
        (dict(cost=np.array([[1, 1], [1, 0]]), prize=(0, 1), budget=1), r"cost: expected a zero diagonal"),
        (dict(cost=np.zeros((2, 3)), prize=(0, 1), budget=1), r"cost: expected a non-empty square matrix"),
        (dict(cost=good, prize=(0,), budget=1), r"prize: expected 2 prizes \(one per node\), found 1"),
        (dict(cost=good, prize=(0, -1), budget=1), r"prize\[1\]: expected a finite non-negative number, found -1"),
        (dict(cost=good, prize=(0, 1), budget=-1), r"budget: expected a finite non-negative number, found -1"),
        (dict(cost=good, prize=(0, 1), budget=math.inf), r"budget: expected a finite non-negative number, found inf"),
        (dict(cost=good, prize=(0, 1), budget=1, start=2), r"start: expected a node index in 0..1, found 2"),
        (dict(cost=good, prize=(0, 1), budget=1, end=5), r"end: expected a node index in 0..1, found 5"),
        (dict(cost=good, prize=(0, 1), budget=1, max_visits=-1), r"max_visits: expected None or an integer >= 0"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InputError, match="^orienteering problem: " + message) as caught:
            OrienteeringProblem(**kwargs)
        assert "\n" not in str(caught.value)


def test_prizes_cp_sat_cannot_sum_are_an_error_not_a_bound():
    """CP-SAT refuses a model whose objective may overflow 64 bits: that was reported as a BOUND of the empty path
    (R_max 0) though no time limit was hit."""
    problem = OrienteeringProblem(np.array([[0, 1, 1], [1, 0, 1], [1, 1, 0]]), (0, 2 ** 62, 2 ** 62), 10, 0)
    with pytest.raises(InputError, match=r"^orienteering problem: prize: CP-SAT cannot take this problem \(.*\); "
                                         r"prizes and costs must stay well within 64-bit integers$") as caught:
        solve(problem, method=Method.CP_SAT)
    assert "\n" not in str(caught.value)
    assert solve(problem, method=Method.EXHAUSTIVE).value == 2 ** 63   # (exact in Python's integers)


def test_problems_compare_by_content_and_the_cache_counts():
    cost = np.array([[0, 1], [1, 0]])
    a = OrienteeringProblem(cost, (0, 5), 1)
    b = OrienteeringProblem(cost.astype(float), [0, 5.0], 1.0)
    c = OrienteeringProblem(cost, (0, 5), 1, max_visits=0)
    assert a == b and hash(a) == hash(b) and a != c
    cache = SolverCache()
    assert cache.hit_rate is None
    first = cache.solve(a)
    assert cache.solve(b) is first and cache.solve(c).value == 0
    assert (cache.hits, cache.misses, cache.hit_rate, len(cache)) == (1, 2, 1 / 3, 2)
    cost[0, 1] = 7  # the problem holds its own read-only copy
    assert a.cost[0, 1] == 1 and not a.cost.flags.writeable


def test_choose_method_follows_the_documented_rule():
    room_like = line(xs=list(range(40)), prize=[0] + [1] * 39, budget=12, max_visits=5)
    assert choose_method(room_like) is Method.EXHAUSTIVE
    many = line(xs=list(range(40)), prize=[0] + [1] * 39, budget=30)
    assert choose_method(many) is Method.CP_SAT
    ten = line(xs=list(range(11)), prize=[0] + [1] * 10, budget=30)
    assert choose_method(ten) is Method.EXHAUSTIVE
    eleven = line(xs=list(range(12)), prize=[0] + [1] * 11, budget=30)
    assert choose_method(eleven) is Method.CP_SAT
    nine_visits = line(xs=list(range(40)), prize=[0] + [1] * 39, budget=30, max_visits=9)
    assert choose_method(nine_visits) is Method.CP_SAT
    assert solve(room_like).method is Method.EXHAUSTIVE


# ---- both methods against brute force on random small problems -------------------------------------------------

def brute_force(problem: OrienteeringProblem) -> float | None:
    """Every ordered choice of distinct stopovers; None when no path exists (a fixed end beyond the budget)."""
    s, e = problem.start, problem.end
    others = [j for j in range(problem.n) if j != s and j != e]
    limit = len(others) if problem.max_visits is None else min(problem.max_visits, len(others))
    best = None
    for size in range(limit + 1):
        for seq in itertools.permutations(others, size):
            path = (s, *seq) if e is None else (s, *seq, e)
            if all(problem.prize[j] > 0 for j in seq) and is_feasible(problem, path):
                best = max(best or 0, path_value(problem, path))
    return best


@st.composite
def problems(draw, floats: bool = False) -> OrienteeringProblem:
    n = draw(st.integers(1, 6))
    if floats:
        pts = np.array(draw(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20)), min_size=n, max_size=n)))
        cost = np.sqrt(((pts[:, None] - pts[None, :]) ** 2).sum(-1)) / 7  # sevenths: rarely exact in binary
    elif draw(st.booleans()):
        # Room-like: door distances on a line of rooms, several balls per room, some rooms cut off.
        rooms = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
        cut = draw(st.integers(1, 5))
        cost = np.array([[abs(a - b) if (a < cut) == (b < cut) else math.inf for b in rooms] for a in rooms])
    else:
        # Any symmetric non-negative matrix: the triangle inequality need not hold.
        upper = np.triu(np.array(draw(st.lists(st.integers(0, 9), min_size=n * n, max_size=n * n))).reshape(n, n), 1)
        cost = upper + upper.T
    prize = tuple(draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)))
    start = draw(st.integers(0, n - 1))
    end = draw(st.sampled_from([None, start, draw(st.integers(0, n - 1))]))
    max_visits = draw(st.one_of(st.none(), st.integers(0, n)))
    if floats and draw(st.booleans()):
        # A budget exactly the cost of some path: the rounding boundary.
        order = draw(st.permutations(range(n)))
        budget = path_cost(OrienteeringProblem(cost, prize, 0), tuple(order))
    else:
        budget = draw(st.integers(0, 20)) * (0.5 if floats else 1)
    return OrienteeringProblem(cost, prize, budget, start=start, end=end, max_visits=max_visits)


def solve_or_none(problem: OrienteeringProblem, method: Method) -> Solution | None:
    try:
        return solve(problem, method=method)
    except InputError as error:
        assert "no path" in str(error)
        return None


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_both_methods_equal_brute_force(problem):
    expected = brute_force(problem)
    for method in BOTH:
        solution = solve_or_none(problem, method)
        if expected is None:
            assert solution is None
        else:
            assert solution is not None
            check(problem, solution, expected)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(floats=True))
def test_both_methods_equal_brute_force_on_float_costs(problem):
    expected = brute_force(problem)
    for method in BOTH:
        solution = solve_or_none(problem, method)
        assert (solution is None) == (expected is None)
        if solution is not None:
            check(problem, solution, expected)


@st.composite
def room_worlds(draw) -> OrienteeringProblem:
    """Beyond brute force: balls in the rooms of a W x H grid (door distance = Manhattan), ball_limit 1..5."""
    width, height = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    rooms = draw(st.lists(st.tuples(st.integers(0, width - 1), st.integers(0, height - 1)), min_size=6, max_size=16))
    rooms = [(0, 0), *rooms]
    cost = np.array([[abs(a[0] - b[0]) + abs(a[1] - b[1]) for b in rooms] for a in rooms])
    prize = (0, *draw(st.lists(st.integers(1, 10), min_size=len(rooms) - 1, max_size=len(rooms) - 1)))
    return OrienteeringProblem(cost, prize, draw(st.integers(0, width + height)), max_visits=draw(st.integers(1, 5)))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(room_worlds())
def test_both_methods_agree_on_room_worlds(problem):
    exhaustive, cp_sat = solve(problem, method=Method.EXHAUSTIVE), solve(problem, method=Method.CP_SAT)
    check(problem, cp_sat, exhaustive.value)
    check(problem, exhaustive, cp_sat.value)

@settings(max_examples=60, deadline=None)
@given(problems(), st.integers(0, 5), st.integers(0, 3))
def test_value_is_monotone_in_budget_and_max_visits(problem, more_budget, more_visits):
    richer = OrienteeringProblem(problem.cost, problem.prize, problem.budget + more_budget, start=problem.start,
                                 end=problem.end,
                                 max_visits=None if problem.max_visits is None else problem.max_visits + more_visits)
    base = solve_or_none(problem, Method.EXHAUSTIVE)
    if base is not None:
        assert solve(richer, method=Method.EXHAUSTIVE).value >= base.value
        free = OrienteeringProblem(problem.cost, problem.prize, problem.budget, start=problem.start, end=problem.end)
        assert solve(free).value >= base.value


# ---- the classic data sets ---------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("EEBENCH_ORIENTEERING_DATA", REPO.parent / "shared" / "data" / "orienteering"))
# The quick ones (CP-SAT proved them in under 0.5 s in the reference run) run in `make test`; the rest are slow.
QUICK_SECONDS = 0.5


def load_op(path: Path) -> OrienteeringProblem:
    """A Tsiligirides/Chao file: line 1 budget, then x y score per node; node 0 the start, node 1 the end."""
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    pts = np.array([[float(r[0]), float(r[1])] for r in rows[1:]])
    cost = np.sqrt(((pts[:, None, :] - pts[None, :, :]) ** 2).sum(-1))
    return OrienteeringProblem(cost, tuple(int(float(r[2])) for r in rows[1:]), float(rows[0][0]), start=0, end=1)


def reference_rows(proven: bool = True) -> list:
    """The rows of instance files here whose reference run proved the optimum (or, `proven=False`, did not)."""
    table = DATA / "reference_values.csv"
    if not table.exists():
        return [pytest.param(None, marks=pytest.mark.skip(
            reason=f"orienteering data not found at {DATA} (set EEBENCH_ORIENTEERING_DATA)"))]
    with table.open(newline="") as f:
        rows = [r for r in csv.DictReader(f)
                if r["copied_here"] == "yes" and (r["cpsat_status"] == "OPTIMAL") == proven]
    return [pytest.param(r, id=r["file"], marks=[] if proven and float(r["cpsat_wall_s"]) < QUICK_SECONDS
                         else [pytest.mark.slow]) for r in rows]


@pytest.mark.parametrize("row", reference_rows())
def test_reproduces_the_cp_sat_optimum_of_the_classic_sets(row):
    problem = load_op(DATA / row["file"])
    assert problem.budget == float(row["t_max"])
    solution = solve(problem, time_limit=300)
    check(problem, solution, int(row["cpsat_value"]))


@pytest.mark.parametrize("row", reference_rows(proven=False))
def test_unproven_classic_instances_agree_with_the_reference_bounds(row):
    # The reference run found a path worth cpsat_value and proved no path is worth more than cpsat_upper_bound.
    problem = load_op(DATA / row["file"])
    solution = solve(problem, time_limit=60)
    assert is_feasible(problem, solution.path) and path_value(problem, solution.path) == solution.value
    assert solution.value <= float(row["cpsat_upper_bound"]) and solution.bound >= int(row["cpsat_value"])
    if solution.status is Status.OPTIMAL:
        assert solution.value >= int(row["cpsat_value"])


def test_a_time_limit_hit_gives_a_bound():
    path = DATA / "ChaoSet_66" / "set_66_1_025.txt"
    if not path.exists():
        pytest.skip(f"orienteering data not found at {DATA} (set EEBENCH_ORIENTEERING_DATA)")
    problem = load_op(path)  # CP-SAT needs tens of seconds to prove its optimum, 290
    solution = solve(problem, method=Method.CP_SAT, time_limit=0.05)
    assert solution.status is Status.BOUND and solution.method is Method.CP_SAT
    assert is_feasible(problem, solution.path) and path_value(problem, solution.path) == solution.value
    assert solution.value <= 290 <= solution.bound
