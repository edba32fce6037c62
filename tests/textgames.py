"""Where the real text-game logs are for tests (../shared/data/text-games), and a fixture that skips without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def text_games_root() -> Path | None:
    """$EEBENCH_TEXT_GAMES, or shared/data/text-games beside the repository; None when absent."""
    root = Path(os.environ.get("EEBENCH_TEXT_GAMES", REPO.parent / "shared" / "data" / "text-games"))
    return root if root.is_dir() else None


@pytest.fixture
def text_games() -> Path:
    root = text_games_root()
    if root is None:
        pytest.skip("the real text-game logs (../shared/data/text-games or $EEBENCH_TEXT_GAMES) are not here")
    return root
