"""Frozen benchmark versions: pinned digests, same bytes on every publish, every changed byte caught, immutability."""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import duckdb
import pytest

import eebench.bundles
from eebench.archives import write_archive
from eebench.bundles import (
    CARD_FILE,
    MANIFEST_FILE,
    BundleFiles,
    build_bundle,
    bundle_digest,
    bundle_problems,
    file_problems,
    find_bundles,
    load_publishable,
    manifest_problems,
    open_bench,
    publish,
    shipped_bundles,
    verify_bundle,
)
from eebench.documents import canonical_json, readable_json, schema_problems, sha256_hex
from eebench.errors import InputError
from eebench.instances import InstanceLibrary
from tests.conftest import instance_doc, write_json

# The frozen versions eebench ships. A changed digest is a changed benchmark: publish it under a new version (and
# add it to eebench/specs/bundles.yaml); never change a digest here.
PINNED = {
    ("park2026-main", "1.0.0"): "e2ce18b0532c429e8a3825e292a9bbfcf4077e34b37adffbc756d793b6720255",
    ("park2026-8x8", "1.0.0"): "ca7a7d2790fd19bebe6878716c18ca34e464f429b6b56c5d1143e76d7e77b209",
    ("park2026-pasta", "1.0.0"): "30d6f53be48d5e97932d83c9eba92ef634269febf16f047221f566f169ea50c7",
    ("grams2025-rooms", "1.0.0"): "7ad9a3aef33eecb55a1aaa4bc80490f288852c546acd5aabc7067d438c71f348",
    ("grams2025-maze", "1.0.0"): "7aae87cb552fd947706f42377b73d70166a8430a1ab437a9f18afba8db6626e4",
}

TINY = """\
eebench: suite/1
name: tiny
description: two small generated maps
members:
  - {presets: [tiny], seeds: [0, 1]}
presets:
  tiny: {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}
"""


def exactly(*lines: str) -> str:
    return "^" + re.escape("\n".join(lines)) + "$"


def sha256_hex_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def tiny(tmp_path: Path) -> Path:
    spec = tmp_path / "specs/tiny.yaml"
    spec.parent.mkdir()
    spec.write_text(TINY, "utf-8")
    return spec


# -- the shipped versions ----------------------------------------------------------------------------

def test_the_registry_lists_the_pinned_versions() -> None:
    assert {key: b.digest for key, b in shipped_bundles().items()} == PINNED
    assert {b.eebench_version for b in shipped_bundles().values()} == {"0.1.0"}


@pytest.mark.parametrize("name, version", sorted(PINNED))
def test_publishing_a_shipped_suite_gives_its_pinned_digest(name: str, version: str, tmp_path: Path) -> None:
    published = publish(name, version, tmp_path / "b")
    assert published.written and published.bundle.manifest["digest"] == PINNED[name, version]
    assert verify_bundle(tmp_path / "b").manifest["digest"] == PINNED[name, version]


def test_a_shipped_version_keeps_the_eebench_version_that_froze_it(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(eebench.bundles, "__version__", "9.9.9")
    manifest = publish("park2026-pasta", "1.0.0", tmp_path / "b").bundle.manifest
    assert manifest["eebench_version"] == "0.1.0" and manifest["digest"] == PINNED["park2026-pasta", "1.0.0"]


def test_a_spec_that_would_change_a_shipped_version_is_refused(tmp_path: Path) -> None:
    spec = tmp_path / "main.yaml"
    spec.write_text("eebench: suite/1\nname: park2026-main\nmembers:\n  - {presets: [low-small], seeds: [0]}\n",
                    "utf-8")
    digest = build_bundle(load_publishable(str(spec)), "1.0.0", "0.1.0").manifest["digest"]
    with pytest.raises(InputError, match=exactly(
            f"{spec}: park2026-main 1.0.0 is shipped with digest {PINNED['park2026-main', '1.0.0']}, but this spec "
            f"gives {digest}; a changed benchmark needs a new version")):
        publish(str(spec), "1.0.0", tmp_path / "b")
    assert not (tmp_path / "b").exists()
    assert publish(str(spec), "2.0.0", tmp_path / "b").written  # a new version is free


# -- what a bundle holds -----------------------------------------------------------------------------

def test_the_manifest_lists_every_file_and_the_digest_covers_it(tmp_path: Path) -> None:
    publish("park2026-pasta", "1.0.0", tmp_path / "b")
    files = tree(tmp_path / "b")
    manifest = json.loads(files[MANIFEST_FILE])
    assert files[MANIFEST_FILE] == readable_json(manifest)
    assert schema_problems(manifest, "manifest", MANIFEST_FILE) == []
    assert manifest["digest"] == bundle_digest(manifest) == sha256_hex({k: v for k, v in manifest.items()
                                                                         if k != "digest"})
    assert sorted(files) == sorted([MANIFEST_FILE, CARD_FILE, *(e["path"] for e in manifest["instances"])])
    for entry in manifest["instances"]:
        data = files[entry["path"]]
        assert data == canonical_json(json.loads(data)) and sha256_hex(json.loads(data)) == entry["sha256"]
        assert entry["path"] == f"instances/{entry['id']}.json"
    assert manifest["card"] == {"path": CARD_FILE, "sha256": sha256_hex_bytes(files[CARD_FILE])}
    assert (manifest["name"], manifest["version"], manifest["eebench_version"]) == ("park2026-pasta", "1.0.0", "0.1.0")
    assert manifest["source"]["kind"] == "suite" and manifest["source"]["spec"]["name"] == "park2026-pasta"
    assert manifest["counts"] == {"instances": 8, "generated": 0, "hand_made": 8, "presets": {},
                                  "names": {"semantic": 4, "symbolic": 4}}
    assert manifest["statistics"]["nodes"] == {"min": 5, "mean": 7.25, "max": 9}
    assert manifest["statistics"]["optimal_steps"] == {"min": 33, "mean": 37.5, "max": 42}
    # no time and no path of this machine: publishing elsewhere, later, gives the same bytes
    assert not any(str(tmp_path).encode() in data for data in files.values())


def test_the_card_says_what_it_holds_how_it_was_made_and_how_to_cite_it(tmp_path: Path, tiny: Path) -> None:
    card = publish("park2026-main", "1.0.0", tmp_path / "b").bundle.files[CARD_FILE].decode()
    assert card.startswith("# park2026-main 1.0.0\n\nPark et al. (2026) main suite")
    for heading in ("## What it contains", "## How it was made", "## How to check and use it", "## How to cite it"):
        assert f"\n{heading}\n" in card
    assert "- Instances: 27 generated from presets (low-small 3, low-medium 3, low-large 3," in card
    assert "| map width | 4 |" in card
    assert "`eebench publish park2026-main --version 1.0.0 --out DIR` writes these bytes again" in card
    assert card.endswith("It reproduces: Park, Kim, Jeong, Nowak, Lee, Lee (2026). Exploration and Exploitation "
                         "Errors Are Measurable for Language Model Agents. arXiv:2604.13151.\n")
    user = publish(str(tiny), "0.1.0", tmp_path / "t").bundle.files[CARD_FILE].decode()
    assert "`eebench publish SUITE.yaml --version 0.1.0 --out DIR` writes these bytes again" in user
    assert "It reproduces" not in user and "- Instances: 2 generated from presets (tiny 2).\n" in user


def test_a_rooms_bundle_has_the_rooms_statistics_and_card(tmp_path: Path) -> None:
    bundle = publish("grams2025-rooms", "1.0.0", tmp_path / "b").bundle
    manifest, card = bundle.manifest, bundle.files[CARD_FILE].decode()
    assert manifest["counts"] == {"instances": 9, "generated": 9, "hand_made": 0,
                                  "presets": {"4x4": 3, "5x5": 3, "7x7": 3}, "names": {}}
    assert list(manifest["statistics"]) == ["rooms", "doors", "balls", "reward", "door_budget", "ball_limit",
                                            "episodes", "max_return"]
    assert manifest["statistics"]["rooms"] == {"min": 16, "mean": 30.0, "max": 49}   # 16, 25 and 49 rooms, 3 each
    assert manifest["statistics"]["episodes"] == {"min": 20, "mean": 20.0, "max": 20}
    # R_max never exceeds ball_limit x the best reward (3 x 10), and the generator keeps it above 0
    assert 0 < manifest["statistics"]["max_return"]["min"] <= manifest["statistics"]["max_return"]["max"] <= 30
    assert "9 instances of the rooms world" in card and "Node ids" not in card
    assert "| best return of one episode, full knowledge (R_max) |" in card
    assert "| doors |" in card and "| map width |" not in card


def test_a_bundle_holds_one_world_kind(tmp_path: Path) -> None:
    spec = tmp_path / "mixed.yaml"
    spec.write_text("eebench: suite/1\nname: mixed\nmembers:\n  - {presets: [low-small, 4x4], seeds: [0]}\n", "utf-8")
    with pytest.raises(InputError, match=exactly("a bundle holds instances of one world kind; this suite mixes "
                                                 "grid_dag, rooms")):
        publish(str(spec), "1.0.0", tmp_path / "b")
    assert not (tmp_path / "b").exists()


# -- same bytes, immutability ------------------------------------------------------------------------

def test_publishing_twice_gives_identical_bytes(tmp_path: Path, tiny: Path) -> None:
    for suite in ("park2026-pasta", str(tiny)):
        publish(suite, "1.0.0", tmp_path / "a")
        publish(suite, "1.0.0", tmp_path / "b")
        assert tree(tmp_path / "a") == tree(tmp_path / "b")
        for suffix in (".tar.gz", ".zip"):
            publish(suite, "1.0.0", tmp_path / f"a{suffix}")
            publish(suite, "1.0.0", tmp_path / f"b{suffix}")
            assert (tmp_path / f"a{suffix}").read_bytes() == (tmp_path / f"b{suffix}").read_bytes()
            assert verify_bundle(tmp_path / f"a{suffix}").files == tree(tmp_path / "a")
            for path in tmp_path.glob("[ab].*"):
                path.unlink()
        for folder in ("a", "b"):
            for path in sorted((tmp_path / folder).rglob("*"), reverse=True):
                path.rmdir() if path.is_dir() else path.unlink()


def test_publishing_the_same_content_again_is_a_no_op(tmp_path: Path, tiny: Path, monkeypatch: Any) -> None:
    out = tmp_path / "b"
    first = publish(str(tiny), "1.0.0", out)
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    monkeypatch.setattr(eebench.bundles, "__version__", "9.9.9")  # a later eebench keeps the version that froze it
    again = publish(str(tiny), "1.0.0", out)
    assert first.written and not again.written and again.bundle.files == first.bundle.files
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    assert publish(str(tiny), "1.0.0", tmp_path / "fresh").bundle.manifest["eebench_version"] == "9.9.9"
    archive = tmp_path / "b.zip"
    publish(str(tiny), "1.0.0", archive)
    assert not publish(str(tiny), "1.0.0", archive).written


def test_the_same_name_and_version_with_other_content_names_the_first_differing_instance(
        tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b.tar.gz"
    published = publish(str(tiny), "1.0.0", out)
    archive = out.read_bytes()
    tiny.write_text(TINY.replace("n_nodes: 3", "n_nodes: 4"), "utf-8")
    changed = build_bundle(load_publishable(str(tiny)), "1.0.0", "0.1.0")
    old, new = (b.manifest["instances"][0]["sha256"][:12] for b in (published.bundle, changed))
    with pytest.raises(InputError, match=exactly(
            f"{out}: tiny 1.0.0 is already published here with other content: instance 'tiny/tiny/seed-0' differs "
            f"(sha256 {old}... there, {new}... now); a changed benchmark needs a new version")):
        publish(str(tiny), "1.0.0", out)
    tiny.write_text(TINY.replace("seeds: [0, 1]", "seeds: [0, 1, 2]"), "utf-8")
    with pytest.raises(InputError, match=exactly(
            f"{out}: tiny 1.0.0 is already published here with other content: instance 'tiny/tiny/seed-2' is not "
            "in it; a changed benchmark needs a new version")):
        publish(str(tiny), "1.0.0", out)
    tiny.write_text(TINY.replace("two small", "2 small"), "utf-8")
    with pytest.raises(InputError, match=exactly(
            f"{out}: tiny 1.0.0 is already published here with other content: README.md differs; a changed "
            "benchmark needs a new version")):
        publish(str(tiny), "1.0.0", out)
    assert out.read_bytes() == archive  # untouched


@pytest.mark.parametrize("name", ["b", "b.tar.gz", "b.zip"])
def test_a_bundle_another_publish_writes_meanwhile_is_kept_and_compared(tmp_path: Path, tiny: Path, name: str,
                                                                         monkeypatch: Any) -> None:
    """Two publishes of other content to one --out at the same moment both said "published": the one that moved
    in last replaced the other's bundle."""
    other = tmp_path / "other.yaml"
    build = eebench.bundles.build_bundle

    def while_another_publishes(out: Path) -> None:
        """The next publish finds `out` empty; then, while it builds, `other` is published to `out`."""
        def build_meanwhile(*args: Any) -> Any:
            monkeypatch.setattr(eebench.bundles, "build_bundle", build)
            publish(str(other), "1.0.0", out)
            return build(*args)
        monkeypatch.setattr(eebench.bundles, "build_bundle", build_meanwhile)

    out = tmp_path / name
    other.write_text(TINY.replace("n_nodes: 3", "n_nodes: 4"), "utf-8")
    while_another_publishes(out)
    with pytest.raises(InputError, match=re.escape(f"{out}: tiny 1.0.0 is already published here with other "
                                                   "content: instance 'tiny/tiny/seed-0' differs")):
        publish(str(tiny), "1.0.0", out)
    kept = verify_bundle(out).manifest["digest"]
    assert kept == publish(str(other), "1.0.0", tmp_path / "o").bundle.manifest["digest"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "o", "other.yaml", "specs"])
    other.write_text(TINY, "utf-8")   # the same content, written meanwhile: a no-op, as publishing it again is
    same = tmp_path / f"same-{name}"
    while_another_publishes(same)
    assert not publish(str(tiny), "1.0.0", same).written
    assert verify_bundle(same).manifest["digest"] == publish(str(tiny), "1.0.0", tmp_path / "t").bundle.manifest[
        "digest"]


@pytest.mark.parametrize("name", ["b", "b.zip"])
def test_an_out_that_is_a_link_to_nothing_or_to_an_empty_folder_is_written_through(tmp_path: Path, tiny: Path,
                                                                                  name: str) -> None:
    """Moving in only where nothing is took the link for a bundle: 'changed while this publish wrote it' (a link
    to nothing), or an error naming the temporary folder (a link to an empty folder)."""
    target = tmp_path / f"target-{name}"
    if name == "b":
        target.mkdir()
    (tmp_path / name).symlink_to(target)
    assert publish(str(tiny), "1.0.0", tmp_path / name).written
    assert (tmp_path / name).is_symlink() and verify_bundle(target).manifest == verify_bundle(tmp_path / name).manifest
    assert not publish(str(tiny), "1.0.0", tmp_path / name).written


@pytest.mark.parametrize("name", ["b", "b.zip"])
def test_an_out_that_is_a_link_loop_is_one_line_not_a_crash(tmp_path: Path, tiny: Path, cli, name: str) -> None:
    """A link to itself as --out ended publish in `RuntimeError: Symlink loop` (a traceback): one line naming
    it, exit 2, nothing written."""
    (tmp_path / name).symlink_to(tmp_path / name)
    done = cli("publish", tiny, "--version", "1.0.0", "--out", tmp_path / name, code=2)
    assert done.stderr.startswith(f"error: {tmp_path / name}: ") and len(done.stderr.splitlines()) == 1
    assert "link" in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([name, "specs"])


def test_a_bundle_or_other_data_at_out_is_never_replaced(tmp_path: Path, tiny: Path) -> None:
    publish("park2026-pasta", "1.0.0", tmp_path / "b")
    with pytest.raises(InputError, match=exactly(
            f"{tmp_path / 'b'}: holds park2026-pasta 1.0.0; a published bundle is never replaced: choose another "
            "--out")):
        publish(str(tiny), "1.0.0", tmp_path / "b")
    with pytest.raises(InputError, match=exactly(
            f"{tmp_path / 'b'}: holds park2026-pasta 1.0.0; a published bundle is never replaced: choose another "
            "--out")):
        publish("park2026-pasta", "1.0.1", tmp_path / "b")
    write_json(tmp_path / "data/mine.json", {"keep": True})
    with pytest.raises(InputError, match=exactly(
            f"{tmp_path / 'data'}: exists and is not a bundle; choose an empty or new folder")):
        publish(str(tiny), "1.0.0", tmp_path / "data")
    (tmp_path / "notes.txt").write_text("mine", "utf-8")
    with pytest.raises(InputError, match=exactly(
            f"{tmp_path / 'notes.txt'}: exists and is a file; --out is a folder or a .tar.gz, .tgz or .zip file")):
        publish(str(tiny), "1.0.0", tmp_path / "notes.txt")
    assert tree(tmp_path / "data") == {"mine.json": b'{"keep": true}'}
    (tmp_path / "empty").mkdir()
    assert publish(str(tiny), "1.0.0", tmp_path / "empty").written
    (tmp_path / "folder.zip").mkdir()
    assert publish(str(tiny), "1.0.0", tmp_path / "folder.zip").written
    assert verify_bundle(tmp_path / "folder.zip").files == tree(tmp_path / "folder.zip")


@pytest.mark.parametrize("name, suffix", [("b.tar", ".tar"), ("b.TAR.XZ", ".tar.xz"), ("b.7z", ".7z"), ("b.gz", ".gz")])
def test_an_archive_eebench_does_not_write_is_refused_not_made_a_folder(tmp_path: Path, tiny: Path, name: str,
                                                                        suffix: str) -> None:
    with pytest.raises(InputError, match=exactly(
            f"{tmp_path / name}: --out ends in {suffix!r}, an archive eebench does not write; expected a folder or an "
            "archive ending in .tar.gz, .tgz or .zip")):
        publish(str(tiny), "1.0.0", tmp_path / name)
    assert not (tmp_path / name).exists()


@pytest.mark.parametrize("version", ["1.0", "1.0.0.0", "01.0.0", "v1.0.0", "1.0.0-rc1", "", "1.a.0", "1.0.0\n"])
def test_a_version_that_is_not_x_y_z_is_refused(tmp_path: Path, version: str) -> None:
    with pytest.raises(InputError, match=exactly(
            f"--version: expected X.Y.Z, three whole numbers (e.g. 1.0.0), found {version!r}")):
        publish("park2026-pasta", version, tmp_path / "b")
    assert list(tmp_path.iterdir()) == []


def test_only_suites_are_published(tmp_path: Path) -> None:
    generator = tmp_path / "g.yaml"
    generator.write_text("eebench: generator/1\nenv: grid_dag\npresets:\n"
                         "  tiny: {dag: {n_nodes: 3}, map: {size: [5, 5], corridor_width: [1, 1]}}\n", "utf-8")
    with pytest.raises(InputError, match=exactly(f"{generator}: eebench: expected a suite document, found "
                                                 "generator/1")):
        publish(str(generator), "1.0.0", tmp_path / "b")
    with pytest.raises(InputError, match=exactly(
            "low-small: no such suite file or shipped suite (`eebench bundles` lists the shipped ones)")):
        publish("low-small", "1.0.0", tmp_path / "b")
    with pytest.raises(InputError, match=exactly(
            "park2026-mian: no such suite file or shipped suite (did you mean 'park2026-main'?) (`eebench bundles` "
            "lists the shipped ones)")):
        publish("park2026-mian", "1.0.0", tmp_path / "b")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.yaml"]


# -- verify ------------------------------------------------------------------------------------------

def test_every_single_byte_change_to_any_file_is_caught(tmp_path: Path, tiny: Path) -> None:
    files = build_bundle(load_publishable(str(tiny)), "1.0.0", "0.1.0").files
    bundle = BundleFiles(tmp_path / "b", dict(files), {})
    manifest, problems = bundle_problems(bundle)
    assert manifest is not None and problems == []
    rng = random.Random(0)
    for member, data in files.items():
        for at in range(len(data)):
            flipped = bytearray(data)
            flipped[at] ^= rng.randrange(1, 256)  # some other byte, a different one at each position
            bundle.files[member] = bytes(flipped)
            # a change to the manifest goes through the whole check; to another file, the manifest is the same
            found = bundle_problems(bundle)[1] if member == MANIFEST_FILE else file_problems(bundle, manifest)
            assert [p.file for p in found][:1] == [str(tmp_path / "b" / member)], (member, at)
        bundle.files[member] = data
    assert sum(map(len, files.values())) > 4000  # every byte of every file: the card, the manifest, the instances


def test_verify_reports_each_changed_missing_and_extra_file(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    manifest = publish(str(tiny), "1.0.0", out).bundle.manifest
    first, second = (out / e["path"] for e in manifest["instances"])
    first.unlink()
    second.write_bytes(second.read_bytes().replace(b'"budget":', b'"budget":1'))
    (out / CARD_FILE).write_text("mine\n", "utf-8")
    (out / "notes.txt").write_text("x", "utf-8")
    (out / "instances/link.json").symlink_to(second)
    found = sha256_hex_bytes(second.read_bytes())[:12]
    with pytest.raises(InputError, match=exactly(
            f"{first}: missing (listed in manifest.json)",
            f"{second}: changed (sha256 {found}..., manifest.json lists {manifest['instances'][1]['sha256'][:12]}...)",
            f"{out / CARD_FILE}: changed (sha256 {sha256_hex_bytes(b'mine' + bytes([10]))[:12]}..., manifest.json "
            f"lists {manifest['card']['sha256'][:12]}...)",
            f"{out / 'instances/link.json'}: extra (not listed in manifest.json)",
            f"{out / 'notes.txt'}: extra (not listed in manifest.json)",
            f"{out}: verification failed (5 problems)")):
        verify_bundle(out)


def test_a_listed_instance_must_be_a_valid_instance_as_publish_writes_it_even_when_its_sha256_is_listed(
        tmp_path: Path, tiny: Path) -> None:
    # a manifest whose listed sha256 and digest were made again over other bytes: grade --bench would fail on it
    def forged(name: str, edit: Any) -> tuple[Path, list[Path]]:
        out = tmp_path / name
        manifest = publish(str(tiny), "1.0.0", out).bundle.manifest
        paths = [out / e["path"] for e in manifest["instances"]]
        edit(paths)
        for entry, path in zip(manifest["instances"], paths):
            entry["sha256"] = sha256_hex_bytes(path.read_bytes())
        manifest["digest"] = bundle_digest(manifest)
        (out / MANIFEST_FILE).write_bytes(readable_json(manifest))
        return out, paths

    out, (first, _) = forged("empty", lambda paths: paths[0].write_text('{"eebench": "instance/1"}', "utf-8"))
    with pytest.raises(InputError, match=rf"{re.escape(str(first))}: env: missing required field"):
        verify_bundle(out)
    out, (first, _) = forged("indented", lambda paths: paths[0].write_text(
        json.dumps(json.loads(paths[0].read_text("utf-8")), indent=1), "utf-8"))
    with pytest.raises(InputError, match=exactly(
            f"{first}: changed (not the instance's canonical JSON, the form eebench writes)",
            f"{out}: verification failed (1 problem)")):
        verify_bundle(out)

    def swap(paths: list[Path]) -> None:
        one, two = (p.read_bytes() for p in paths)
        paths[0].write_bytes(two)
        paths[1].write_bytes(one)
    out, _ = forged("swapped", swap)
    with pytest.raises(InputError, match=r": id: expected '.+' \(as manifest.json lists it\), found '.+'"):
        verify_bundle(out)


def test_a_bundle_verified_again_checks_no_instance_file_again_but_one_changed(tmp_path: Path, tiny: Path,
                                                                               monkeypatch: Any) -> None:
    # the check of each listed instance file is kept in the record of documents that passed, by its bytes' sha256
    # and its listed id; the files are still read and their digests compared every time
    out = tmp_path / "b"
    manifest = publish(str(tiny), "1.0.0", out).bundle.manifest
    verify_bundle(out)

    def checked(data: bytes, instance_id: str, where: str) -> list[Any]:
        raise AssertionError(f"{where} checked again")
    monkeypatch.setattr(eebench.bundles, "_instance_problems", checked)
    verify_bundle(out)
    (out / CARD_FILE).write_text("edited\n", "utf-8")
    with pytest.raises(InputError, match=re.escape(f"{out / CARD_FILE}: changed (sha256 ")):
        verify_bundle(out)
    (out / CARD_FILE).write_bytes(publish(str(tiny), "1.0.0", tmp_path / "again").bundle.files[CARD_FILE])
    first = out / manifest["instances"][0]["path"]
    first.write_bytes(first.read_bytes().replace(b"}", b"} ", 1))   # other bytes, listed again: checked again
    manifest["instances"][0]["sha256"] = sha256_hex_bytes(first.read_bytes())
    manifest["digest"] = bundle_digest(manifest)
    (out / MANIFEST_FILE).write_bytes(readable_json(manifest))
    with pytest.raises(AssertionError, match=f"{re.escape(str(first))} checked again"):
        verify_bundle(out)


def test_an_instance_of_a_bundle_is_found_at_the_path_its_manifest_lists_without_a_scan(
        tmp_path: Path, tiny: Path, monkeypatch: Any) -> None:
    manifest = publish(str(tiny), "1.0.0", tmp_path / "b").bundle.manifest
    monkeypatch.setattr(InstanceLibrary, "_listed", lambda self: pytest.fail("every file read to find one"))
    library = InstanceLibrary(tmp_path / "b")
    for entry in manifest["instances"]:
        assert library.get(entry["id"]).file == str(tmp_path / "b" / entry["path"])


def test_a_link_in_place_of_a_listed_file_is_not_followed(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    (tmp_path / "copy.md").write_bytes((out / CARD_FILE).read_bytes())
    (out / CARD_FILE).unlink()
    (out / CARD_FILE).symlink_to(tmp_path / "copy.md")  # the same bytes, but outside the bundle
    with pytest.raises(InputError, match=exactly(f"{out / CARD_FILE}: changed (now a symbolic link, not a file)",
                                                 f"{out}: verification failed (1 problem)")):
        verify_bundle(out)


def test_a_linked_manifest_is_refused(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    (out / MANIFEST_FILE).rename(tmp_path / "elsewhere.json")
    (out / MANIFEST_FILE).symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(InputError, match=exactly(f"{out / MANIFEST_FILE}: is a symbolic link, not a file; refused")):
        verify_bundle(out)


def test_the_manifest_is_covered_by_its_digest_and_its_form(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    manifest = publish(str(tiny), "1.0.0", out).bundle.manifest
    path = out / MANIFEST_FILE
    original = path.read_bytes()
    path.write_bytes(original.replace(b'"version": "1.0.0"', b'"version": "1.0.1"'))
    edited = {**manifest, "version": "1.0.1"}
    with pytest.raises(InputError, match=exactly(
            f"{path}: changed (its content has digest {bundle_digest(edited)[:12]}..., it records "
            f"{manifest['digest'][:12]}...)", f"{out}: verification failed (1 problem)")):
        verify_bundle(out)
    path.write_bytes(json.dumps(manifest, indent=4, sort_keys=True).encode())  # the same content, other bytes
    with pytest.raises(InputError, match=exactly(
            f"{path}: changed (not in the form eebench writes: keys sorted, two-space indents, a final newline)",
            f"{out}: verification failed (1 problem)")):
        verify_bundle(out)
    path.write_bytes(b"{not json")
    with pytest.raises(InputError, match=exactly(
            f"{path}:1: malformed JSON: Expecting property name enclosed in double quotes (column 2)",
            f"{out}: verification failed (1 problem)")):
        verify_bundle(out)
    path.write_bytes(original)
    assert verify_bundle(out).manifest == manifest


def test_a_forged_shipped_version_and_a_cited_digest(tmp_path: Path) -> None:
    out = tmp_path / "b"
    publish("park2026-pasta", "1.0.0", out)
    cited = PINNED["park2026-pasta", "1.0.0"]
    assert verify_bundle(out, cited).manifest["digest"] == cited
    assert verify_bundle(out, cited.upper()).manifest["digest"] == cited
    with pytest.raises(InputError, match=exactly(f"{out}: digest {cited} is not the cited {'0' * 64}",
                                                 f"{out}: verification failed (1 problem)")):
        verify_bundle(out, "0" * 64)
    with pytest.raises(InputError, match=exactly("--digest: expected a bundle digest of 64 hex digits, found 'abc'")):
        verify_bundle(out, "abc")
    # a consistent forgery: an instance edited, the manifest's sha256 and digest recomputed
    manifest = json.loads((out / MANIFEST_FILE).read_bytes())
    entry = manifest["instances"][0]
    data = (out / entry["path"]).read_bytes().replace(b'"budget":99', b'"budget":999')
    (out / entry["path"]).write_bytes(data)
    entry["sha256"] = sha256_hex_bytes(data)
    manifest["digest"] = bundle_digest(manifest)
    (out / MANIFEST_FILE).write_bytes(readable_json(manifest))
    assert manifest_problems(manifest, "m") == []
    with pytest.raises(InputError, match=exactly(
            f"{out / MANIFEST_FILE}: statistics.budget: records {{\"max\":144,\"mean\":125.25,\"min\":99}}, "
            'its instances give {"max":999,"mean":237.75,"min":99}',
            f"{out}: park2026-pasta 1.0.0 is shipped with digest {cited}, this bundle records {manifest['digest']}: "
            "not the published benchmark", f"{out}: verification failed (2 problems)")):
        verify_bundle(out)


def test_what_a_manifest_derives_from_its_data_is_checked_even_when_digested_again(tmp_path: Path,
                                                                                  tiny: Path) -> None:
    """The spec's sha256, the counts, the statistics and the card: a manifest edited and digested again passed."""
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    manifest = json.loads((out / MANIFEST_FILE).read_bytes())

    def forged(edit: Any) -> dict[str, Any]:
        doc = json.loads(json.dumps(manifest))
        edit(doc)
        doc["digest"] = bundle_digest(doc)
        (out / MANIFEST_FILE).write_bytes(readable_json(doc))
        return doc

    forged(lambda doc: (doc["source"]["spec"]["members"][0].update(seeds=[7]),
                        doc["counts"].update(instances=5)))
    with pytest.raises(InputError, match=exactly(
            f"{out / MANIFEST_FILE}: source.sha256: is not the sha256 of source.spec (that is "
            f"{sha256_hex({**manifest['source']['spec'], 'members': [{'presets': ['tiny'], 'seeds': [7]}]})[:12]}"
            "...)",
            f"{out / MANIFEST_FILE}: counts.instances: records 5, its instances give 2",
            f"{out}: verification failed (2 problems)")):
        verify_bundle(out)
    card = (out / CARD_FILE).read_bytes().replace(b"two small", b"three small")
    (out / CARD_FILE).write_bytes(card)
    forged(lambda doc: doc["card"].update(sha256=sha256_hex_bytes(card)))
    with pytest.raises(InputError, match=exactly(f"{out / CARD_FILE}: changed (not the card {MANIFEST_FILE} gives)",
                                                 f"{out}: verification failed (1 problem)")):
        verify_bundle(out)
    (out / CARD_FILE).write_bytes(card.replace(b"three small", b"two small"))
    forged(lambda doc: None)
    assert verify_bundle(out).manifest == manifest


def test_a_bundle_another_eebench_version_froze_keeps_its_card_and_measurements(tmp_path: Path, tiny: Path,
                                                                                monkeypatch: Any) -> None:
    """Another version may word the card and measure otherwise: its bundles were refused once the card changed."""
    tiny.write_text(TINY.replace("two small", f"two small {random.getrandbits(64)}"), "utf-8")   # (never passed)
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    monkeypatch.setattr(eebench.bundles, "render_card", lambda *args, **kwargs: b"worded otherwise\n")
    with pytest.raises(InputError, match=re.escape(f"{out / CARD_FILE}: changed (not the card {MANIFEST_FILE} "
                                                   "gives)")):
        verify_bundle(out)
    monkeypatch.setattr(eebench.bundles, "__version__", "9.9.9")
    monkeypatch.setattr(eebench.bundles, "_statistics", lambda *args: {"budget": {"min": 0, "mean": 0, "max": 0}})
    assert verify_bundle(out).manifest["eebench_version"] != "9.9.9"


@pytest.mark.parametrize("setup, message", [
    (lambda p: p.mkdir(), "{p}: not a bundle: no manifest.json (`eebench publish` writes bundles)"),
    (lambda p: None, "{p}: no such file or folder"),
    (lambda p: p.write_text("x"), "{p}: not a bundle: expected a folder holding manifest.json or an archive of one "
                                  "(.tar.gz, .tgz or .zip)"),
])
def test_what_is_not_a_bundle(tmp_path: Path, setup: Any, message: str) -> None:
    path = tmp_path / "x"
    setup(path)
    with pytest.raises(InputError, match=exactly(message.format(p=path))):
        verify_bundle(path)


def test_an_archive_without_a_manifest_and_one_under_a_top_folder(tmp_path: Path, tiny: Path) -> None:
    write_archive(tmp_path / "e.zip", {"a.json": b"{}"})
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'e.zip'}: not a bundle: the archive holds no "
                                                 "manifest.json")):
        verify_bundle(tmp_path / "e.zip")
    files = publish(str(tiny), "1.0.0", tmp_path / "b").bundle.files
    write_archive(tmp_path / "top.tar.gz", {f"b/{name}": data for name, data in files.items()})  # tar czf b/
    assert verify_bundle(tmp_path / "top.tar.gz").files == files


def test_manifest_problems_beyond_the_schema(tmp_path: Path, tiny: Path) -> None:
    manifest = build_bundle(load_publishable(str(tiny)), "1.0.0", "0.1.0").manifest
    manifest["instances"][1] = {**manifest["instances"][1], "path": "instances/other.json"}
    manifest["instances"].append(manifest["instances"][0])
    manifest["digest"] = bundle_digest(manifest)
    assert [str(p) for p in manifest_problems(manifest, "m.json")] == [
        "m.json: instances[1].path: expected instances/tiny/tiny/seed-1.json, found 'instances/other.json'",
        "m.json: instances[2].id: 'tiny/tiny/seed-0' is listed twice",
    ]
    bad = {**manifest, "instances": [{**manifest["instances"][0], "id": "../x"}]}
    assert [str(p) for p in manifest_problems(bad, "m.json")] == [
        "m.json: instances[0].id: expected an id of letters, digits, '.', '_', '-' in '/'-separated parts (e.g. "
        "'park2026-main/low-small/seed-0'), a part at most 250 characters, 1000 in all, found \"../x\""]


# -- grading against a bundle, listing ---------------------------------------------------------------

def test_open_bench_verifies_a_bundle_and_names_it(tmp_path: Path, tiny: Path) -> None:
    manifest = publish(str(tiny), "1.0.0", tmp_path / "b").bundle.manifest
    publish(str(tiny), "1.0.0", tmp_path / "b.tar.gz")
    expected = {e["id"]: e["sha256"] for e in manifest["instances"]}
    with open_bench(tmp_path / "b") as bench:
        assert (bench.root, bench.name, bench.version, bench.digest) == (tmp_path / "b", "tiny", "1.0.0",
                                                                        manifest["digest"])
        assert bench.instances == expected and bench.where == f"bundle tiny 1.0.0 ({tmp_path / 'b'})"
    with open_bench(tmp_path / "b.tar.gz") as bench:
        root = bench.root
        assert tree(root) == tree(tmp_path / "b") and bench.digest == manifest["digest"]
        assert bench.where == f"bundle tiny 1.0.0 ({tmp_path / 'b.tar.gz'})"
    assert not root.exists()  # the archive's temporary folder is gone
    write_json(tmp_path / "plain/t.json", instance_doc(["..."], [0, 0], [("G", [2, 0], [])], "G"))
    with open_bench(tmp_path / "plain") as bench:
        assert (bench.name, bench.digest, bench.instances, bench.where) == (None, None, None, str(tmp_path / "plain"))
    (tmp_path / "b" / CARD_FILE).write_text("edited\n", "utf-8")
    with pytest.raises(InputError, match=re.escape(f"{tmp_path / 'b' / CARD_FILE}: changed (sha256 ")):
        with open_bench(tmp_path / "b"):
            pass


def test_find_bundles_in_folders_and_archives(tmp_path: Path, tiny: Path) -> None:
    publish(str(tiny), "1.0.0", tmp_path / "all/mine/tiny-1")
    publish("park2026-pasta", "1.0.0", tmp_path / "all/pasta.zip")
    publish(str(tiny), "1.0.0", tmp_path / "all/.hidden/tiny")
    write_archive(tmp_path / "all/other.tar.gz", {"a.txt": b"not a bundle"})
    write_json(tmp_path / "all/gen/index.json", {"eebench": "index/1"})
    (tmp_path / "all/broken").mkdir()
    (tmp_path / "all/broken" / MANIFEST_FILE).write_text("{}", "utf-8")
    pasta = shipped_bundles()["park2026-pasta", "1.0.0"]
    tiny_digest = verify_bundle(tmp_path / "all/mine/tiny-1").manifest["digest"]
    assert [tuple(b) for b in find_bundles(tmp_path / "all")] == [
        ("tiny", "1.0.0", 2, tiny_digest, tmp_path / "all/mine/tiny-1", None),
        ("park2026-pasta", "1.0.0", 8, pasta.digest, tmp_path / "all/pasta.zip", True),
    ]
    assert [b.path for b in find_bundles(tmp_path / "all/mine/tiny-1")] == [tmp_path / "all/mine/tiny-1"]
    with pytest.raises(InputError, match=exactly(f"{tmp_path / 'none'}: no such folder")):
        find_bundles(tmp_path / "none")


def test_a_link_in_a_published_folder_is_a_change_not_a_no_op(tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    (out / "instances" / "outside").symlink_to(tmp_path)
    with pytest.raises(InputError, match=r"is published here, but instances/outside is a symbolic link; remove it"):
        publish(str(tiny), "1.0.0", out)


def test_a_version_with_a_trailing_newline_fails_the_manifest_schema() -> None:
    problems = schema_problems({"version": "1.0.0\n"}, "manifest", "m.json")
    assert any(p.field == "version" for p in problems)


def test_grading_part_of_a_bundle_grades_the_bundle_verified(cli, tmp_path: Path, tiny: Path) -> None:
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    runs = tmp_path / "runs.jsonl"
    cli("play", out, "--agent", "oracle", "--out", runs)
    for bench in (out / "manifest.json", out / "instances"):
        db = tmp_path / f"{bench.name}.duckdb"
        cli("grade", runs, "--bench", bench, "--db", db)
        con = duckdb.connect(str(db), read_only=True)
        assert con.execute("SELECT DISTINCT bench_name, bench_version FROM trajectories").fetchall() == [
            ("tiny", "1.0.0")]
        con.close()
    victim = next((out / "instances").rglob("*.json"))
    victim.write_bytes(victim.read_bytes().replace(b'"budget"', b'"budget" '))
    result = cli("grade", runs, "--bench", out / "instances", "--db", tmp_path / "x.duckdb", code=2)
    assert "changed" in result.stderr and not (tmp_path / "x.duckdb").exists()


def test_a_file_the_manifest_does_not_list_is_extra_unread(tmp_path: Path, tiny: Path) -> None:
    """A stray file in a bundle folder (a results file put beside the instances) was read whole first: 300 MiB was
    refused as "larger than 256 MiB, the most one document may be", and 200 MiB cost a verify 228 MB. Publishing
    over such a folder said the benchmark had changed."""
    out = tmp_path / "b"
    publish(str(tiny), "1.0.0", out)
    stray = out / "results.duckdb"
    with stray.open("wb") as handle:   # (sparse: no disk is used)
        handle.truncate(300 << 20)
    with pytest.raises(InputError, match=exactly(f"{stray}: extra (not listed in manifest.json)",
                                                 f"{out}: verification failed (1 problem)")):
        verify_bundle(out)
    with pytest.raises(InputError, match=r"tiny 1\.0\.0 is published here, but results\.duckdb is a file it does "
                                         r"not list; remove it"):
        publish(str(tiny), "1.0.0", out)
