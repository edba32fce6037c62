"""The README's "From Python" example runs as it stands."""

from __future__ import annotations

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
    assert blocks, "the section has a python example"
    exec(compile(blocks[0], "README.md (From Python)", "exec"), {})
    out = capsys.readouterr().out
    assert "Admissible moves" in out and "errors in 6 steps" in out
