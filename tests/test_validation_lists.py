"""`eebench validate` reads a .json list of trajectories as the grader does, naming each bad item."""

from __future__ import annotations

import json
from pathlib import Path


def test_a_json_list_of_trajectories(cli, tmp_path: Path) -> None:
    good = {"eebench": "trajectory/1", "id": "a", "instance": "x", "steps": [{"action": "up"}]}
    path = tmp_path / "runs.json"
    path.write_text(json.dumps([good, {**good, "id": "b"}]))
    assert cli("validate", path).stdout == f"ok {path}: 2 trajectory/1 records\n"
    path.write_text(json.dumps([good, {"eebench": "trajectory/1", "id": "b", "steps": [{"action": 1}]}]))
    result = cli("validate", path, code=2)
    assert result.stderr.splitlines() == [f"error: {path}: [1].instance: missing required field",
                                          f"error: {path}: [1].steps[0].action: expected string or null, found an "
                                          "integer 1"]
