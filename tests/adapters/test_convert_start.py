"""What `eebench convert` imports: a start that pays only for what converting uses (docs/performance.md, "Start-up")."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_convert_does_not_import_the_evaluator_duckdb_networkx_or_numpy(tmp_path: Path) -> None:
    log = tmp_path / "chat.jsonl"
    log.write_text(json.dumps({"task_id": "park2026-main/low-small/seed-0", "messages": [
        {"role": "user", "content": "You are at [0, 0]."}, {"role": "assistant", "content": "<action>down</action>"}]})
                   + "\n")
    out = tmp_path / "out.jsonl"
    code = ("import sys; from eebench.cli import main\n"
            "try:\n"
            f"    main(['convert', {str(log)!r}, '--instance-field', 'task_id', '--out', {str(out)!r}])\n"
            "except SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "print(sorted(m for m in ('duckdb', 'networkx', 'numpy', 'eebench.evaluator', 'eebench.report.data')"
            " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert json.loads(out.read_text())["instance"] == "park2026-main/low-small/seed-0"
