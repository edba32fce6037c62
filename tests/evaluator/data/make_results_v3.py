"""How results-v3.duckdb.gz was made: by eebench at commit 6e8f621 (results schema 3), before schema 4.

Run: `git archive 6e8f621 | tar -x -C <checkout>`, then `python make_results_v3.py <checkout> <out folder>` and
`gzip -9 <out folder>/results-v3.duckdb`. Kept as data because the schema 3 code is no longer in the tree.
A grid_dag trajectory that reaches the goal, one that wanders (an action that is no move word, one that is null),
a rooms trajectory of two episodes, with a checkpoint set for every instance; then a second grade adds a
trajectory whose id sorts first, so the stored order of the steps and checkpoints is not the order of their ids.
"""

import json
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from eebench.checkpoints import CheckpointLibrary, load_checkpoints  # noqa: E402
from eebench.evaluator import Bench, grade_files  # noqa: E402
from eebench.evaluator.store import SCHEMA_VERSION  # noqa: E402
from eebench.instances import write_instances  # noqa: E402
from eebench.world.rooms import RoomsInstance  # noqa: E402
from tests.conftest import make_instance  # noqa: E402
from tests.evaluator.test_gaps import LINE  # noqa: E402
assert SCHEMA_VERSION == 3
tmp = Path(sys.argv[2])
CORRIDOR = dict(map_rows=["......."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])], goal="G", budget=30)
write_instances([make_instance(**CORRIDOR, instance_id="t/corridor"), RoomsInstance.from_document(LINE)],
                tmp / "bench", {"kind": "test"})
def traj(i, actions, instance="t/corridor"):
    return {"eebench": "trajectory/1", "id": i, "instance": instance,
            "agent": {"name": "agent-a", "model": "m1", "prompt": "base"}, "steps": [{"action": a} for a in actions]}
(tmp / "runs.jsonl").write_text("".join(json.dumps(t) + "\n" for t in [
    traj("v3-solve", ["left"] * 3 + ["right"] * 6), traj("v3-wander", ["left", "bogus", None, "right", "up"]),
    traj("v3-rooms", ["x ball", "d1 door", "y ball", "d1 door", "d2 door"], instance="t/rooms")]))
(tmp / "cp.yaml").write_text("eebench: checkpoints/1\nname: v3\nsets:\n  - instances: ['t/*']\n    rules: "
                             "[cell_observed, node_discovered, node_achieved, room_visited, ball_collected]\n")
library = CheckpointLibrary(load_checkpoints(tmp / "cp.yaml"))
grade_files([tmp / "runs.jsonl"], Bench(tmp / "bench"), tmp / "results-v3.duckdb", checkpoints=library)
(tmp / "later.jsonl").write_text(json.dumps(traj("v3-a-later", ["left", "left", "down"])) + "\n")
grade_files([tmp / "later.jsonl"], Bench(tmp / "bench"), tmp / "results-v3.duckdb", checkpoints=library)
