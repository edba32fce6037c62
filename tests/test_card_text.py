"""The bundle card promises byte-for-byte republishing with any later eebench only for pinned versions."""

from __future__ import annotations

from eebench import __version__
from eebench.bundles import build_bundle, shipped_bundles
from eebench.suites import load_suite, shipped_suites


def card(name: str, version: str) -> str:
    return build_bundle(load_suite(shipped_suites()[name]), version, __version__).files["README.md"].decode()


def test_a_pinned_version_says_it_is_pinned() -> None:
    assert ("park2026-pasta", "1.0.0") in shipped_bundles()
    assert "writes these bytes again, with any later eebench: the shipped versions are pinned." in card(
        "park2026-pasta", "1.0.0")


def test_another_version_of_a_shipped_suite_promises_only_this_eebench() -> None:
    text = " ".join(card("park2026-pasta", "9.9.9").split())
    assert "any later eebench" not in text
    assert (f"`eebench publish park2026-pasta --version 9.9.9 --out DIR` writes these bytes again with eebench "
            f"{__version__}; a later eebench may not (only the versions `eebench bundles` lists are pinned).") in text
