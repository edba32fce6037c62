"""How results-v2.duckdb.gz was made: by eebench at commit 03e3474 of branch gaps (results schema 2), before schema 3.

Run: `git archive 03e3474 | tar -x -C <checkout>`, then `python make_results_v2.py <checkout> <out folder>` and
`gzip -9 <out folder>/results-v2.duckdb`. Kept as data because the schema 2 code is no longer in the tree.
A grid_dag trajectory that reaches the goal, one that wanders, and a rooms trajectory of two episodes.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from eebench.evaluator import Bench, grade_files  # noqa: E402
from eebench.evaluator.store import SCHEMA_VERSION  # noqa: E402
from eebench.instances import write_instances  # noqa: E402
from eebench.world.rooms import RoomsInstance  # noqa: E402
from tests.conftest import make_instance  # noqa: E402
from tests.evaluator.test_gaps import LINE  # noqa: E402
assert SCHEMA_VERSION == 2
tmp = Path(sys.argv[2])
CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])], goal="G", budget=30)
write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"), RoomsInstance.from_document(LINE)],
                tmp / "bench", {"kind": "test"})
def traj(i, actions, instance="t/corridor"):
    return {"eebench": "trajectory/1", "id": i, "instance": instance,
            "agent": {"name": "agent-a", "model": "m1", "prompt": "base"}, "steps": [{"action": a} for a in actions]}
(tmp / "runs.jsonl").write_text("".join(json.dumps(t) + "\n" for t in [
    traj("v2-solve", ["left"] * 3 + ["right"] * 6), traj("v2-wander", ["left", "bogus", "right", "right", "up"]),
    traj("v2-rooms", ["x ball", "d1 door", "y ball", "d1 door", "d2 door"], instance="t/rooms")]))
grade_files([tmp / "runs.jsonl"], Bench(tmp / "bench"), tmp / "results-v2.duckdb")
