"""How results-v1.duckdb.gz was made: by eebench at commit e940368 (results schema 1), before schema 2 existed.

Run from a checkout of that commit: `PYTHONPATH=<checkout> python make_results_v1.py <checkout> <out folder>`,
then `gzip -9 <out folder>/results-v1.duckdb`. Kept as data because the schema 1 code is no longer in the tree.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from eebench.evaluator import Bench, grade_files  # noqa: E402
from eebench.evaluator.store import SCHEMA_VERSION  # noqa: E402
from eebench.instances import write_instances  # noqa: E402
from tests.conftest import make_instance  # noqa: E402
assert SCHEMA_VERSION == 1
tmp = Path(sys.argv[2])
CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])], goal="G", budget=30)
write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], tmp / "bench", {"kind": "test"})
def traj(i, actions):
    return {"eebench": "trajectory/1", "id": i, "instance": "t/corridor",
            "agent": {"name": "agent-a", "model": "m1", "prompt": "base"}, "steps": [{"action": a} for a in actions]}
(tmp / "runs.jsonl").write_text("".join(json.dumps(t) + "\n" for t in [
    traj("v1-solve", ["left"] * 3 + ["right"] * 6), traj("v1-wander", ["left", "bogus", "right", "right", "up"])]))
grade_files([tmp / "runs.jsonl"], Bench(tmp / "bench"), tmp / "results-v1.duckdb")
