"""Shared fixtures: one CliRunner, tiny hand-built instances, absolute tmp paths."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from click.testing import CliRunner

from eebench.cli import main
from eebench.world.grid_dag import GridDagInstance


class Cli:
    """Runs `eebench ...` in-process and keeps stdout and stderr apart."""

    def __init__(self) -> None:
        self.runner = CliRunner()

    def __call__(self, *args: str | Path, code: int | None = 0, input: str | None = None):
        result = self.runner.invoke(main, [str(a) for a in args], input=input, catch_exceptions=False)
        if code is not None:
            assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
        return result


@pytest.fixture
def cli() -> Cli:
    return Cli()


def instance_doc(map_rows: list[str], start: list[int], nodes: list[tuple[str, list[int], list[list[str]]]],
                 goal: str, budget: int = 100, instance_id: str = "test/tiny") -> dict[str, Any]:
    """An instance/1 document from a compact description."""
    return {
        "eebench": "instance/1", "id": instance_id, "env": "grid_dag", "map": map_rows, "start": start,
        "nodes": [{"id": i, "pos": p, "requires": r} for i, p, r in nodes], "goal": goal, "budget": budget,
    }


def make_instance(*args: Any, **kwargs: Any) -> GridDagInstance:
    return GridDagInstance.from_document(instance_doc(*args, **kwargs))


def write_json(path: Path, doc: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc), "utf-8")
    return path


def write_jsonl(path: Path, docs: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), "utf-8")
    return path


_READER: list[duckdb.DuckDBPyConnection] = []   # one in-memory DuckDB of the test process, made at first use


def rows(db: Path, sql: str) -> list[tuple]:
    """The rows of a query over a results file, read-only (the tests' one way to look into DuckDB). The file is
    attached to one in-memory DuckDB for the query: a connection of its own builds a database instance each time
    (45-80 ms on a 2-core machine, a tenth of `make test`), an ATTACH takes 3-10 ms."""
    if not _READER:
        _READER.append(duckdb.connect())
    con = _READER[0]
    con.execute(f"ATTACH '{str(db).replace(chr(39), chr(39) * 2)}' AS results_read (READ_ONLY)")
    try:
        con.execute("USE results_read")
        return con.execute(sql).fetchall()
    finally:
        con.execute("USE memory")
        con.execute("DETACH results_read")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 13 MiB tmpfs (needs root); skipped where it cannot be mounted."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=13m", "tmpfs", str(mount)], capture_output=True)
    if made.returncode:
        pytest.skip(f"cannot mount a small tmpfs: {made.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)
