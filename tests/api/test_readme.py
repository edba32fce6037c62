"""The README's "From Python" example runs as it stands."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def _python_blocks(section: str) -> list[str]:
    text = README.read_text("utf-8")
    start = text.index(f"## {section}\n")
    end = text.find("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end if end > 0 else None], re.S)


def test_from_python_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _python_blocks("From Python")
    assert len(blocks) == 2, "the section has the example and the RewardWrapper"
    namespace: dict = {}
    for i, block in enumerate(blocks):  # one namespace, as cells of one notebook
        exec(compile(block, f"README.md (From Python, block {i + 1})", "exec"), namespace)
    out = capsys.readouterr().out.splitlines()
    assert "Admissible moves: up, down, left, right." in out and "0 errors in 6 steps" in out
    rewards = ast.literal_eval(out[-1])  # the wrapper's rewards, printed last
    scorer = namespace["eebench"].Scorer(namespace["instance"])
    assert rewards == [r.progress - r.error for r in scorer.play(["left", "left", "right", "up"])]
