"""Fixtures of the Python API tests: the main suite's instances, published once as a bundle."""

from __future__ import annotations

from pathlib import Path

import pytest

import eebench
from eebench.bundles import publish


@pytest.fixture(scope="session")
def main_suite() -> eebench.Instances:
    return eebench.load("park2026-main")


@pytest.fixture(scope="session")
def main_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "park2026-main-1.0.0"
    publish("park2026-main", "1.0.0", out)
    return out
