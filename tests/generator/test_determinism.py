"""Same spec and seed, same bytes: golden sha256 digests of generated instances, in this process and in fresh ones
with other hash seeds.

The golden instances were checked by eye when they were pinned (`eebench show`): e.g. low-small/seed-0 is a 7 x 6
map (ceil(4 / 0.1) = 40 cells) with 25 free cells and budget 75, its corridors 2-3 wide; high-large/seed-2 is
5 x 4 (20 cells for 8 nodes at density 0.4) with 17 free cells and budget 51, and its node 2SXQ has the OR
prerequisite (17DF and MUZ4 and K190) or (17DF and 1SHM and F8HJ). A change to these digests changes what every
published result was measured on: bump `GENERATOR` and say so. (They were re-pinned once, before any release,
when a node's comparable alternatives began to be redrawn rather than dropped.)
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eebench.documents import canonical_json, sha256_hex
from eebench.generator.instances import GENERATOR
from eebench.suites import resolve_spec

BAKERY = """\
eebench: generator/1
env: grid_dag
presets:
  bakery:
    dag: {n_nodes: 5, option_count_probs: {1: 0.5, 2: 0.5}, dependency_count_probs: {1: 0.5, 2: 0.5}}
    map: {density: 0.2, corridor_width: [1, 2], aspect_ratio: 1.5}
    names: [Flour, Eggs, Milk, Butter, Sugar, Salt, Dough, Batter]
"""

GOLDEN = {
    # (spec, seeds) -> {instance id: sha256 of its canonical JSON}
    ("park2026-main", None): {
        "park2026-main/low-small/seed-0": "eed3dee8e60cb5abf98d2edf9fd874c0b6fa9feddc61849561a4b6b3f58f81c3",
        "park2026-main/medium-medium/seed-1": "3d514cd4b8f500bccb62e8c167ca5d521053c8088ca2df952393ba702b61609f",
        "park2026-main/high-large/seed-2": "478fe8dece04cc10d7ea4f65e2a2800f721bffb650f42ae4b73230ac492a4e01",
    },
    ("park2026-8x8", None): {
        "park2026-8x8/8x8-medium-medium/seed-1": "8d7be7bba35d664d0324f1af85829815148ea9df03376308521a725a185e9a1e",
    },
    ("park2026-pasta", None): {
        "park2026-pasta/custom-202/semantic": "5694f3a69b1c6ea3b4283d0db68dd9d1292d50fea7575d7c6fc4826f8fcf129b",
        "park2026-pasta/custom-202/symbolic": "056f984cf23f42078a5494622ac81da9512f997e6d8ea7ad27a825279e8a87a3",
    },
    ("BAKERY", (2,)): {
        "bakery/seed-2": "8a66887964078002aa9abe9bb11d9a3ee0a1772a5a77aebe88d7e1e4f9b1b02a",
    },
}

# sha256 over "<id> <sha256>\n" of every instance of a whole shipped suite, in suite order
GOLDEN_SUITES = {
    "park2026-main": "42308add7578b22f8bae9746d0789c56af030dafde0f843008220fcdf0b0dbab",
    "park2026-8x8": "142b88efa677b4deac65265ac9003adeab8c244d246760660d8b683d3301a0c1",
    "park2026-pasta": "297f6e30e97f01269754e277de34d13c4a3b4a5dece85ab6160c1c84e142c40b",
}

# Computes the same digests from scratch; run in fresh interpreters with other PYTHONHASHSEEDs.
SCRIPT = """
import hashlib, json, sys
from eebench.documents import sha256_hex
from eebench.suites import resolve_spec
out = {}
for spec, seeds in json.loads(sys.argv[1]):
    digests = [(i.id, sha256_hex(i.to_document())) for i in resolve_spec(spec, seeds).instances()]
    out[spec] = [hashlib.sha256("".join(f"{a} {b}\\n" for a, b in digests).encode()).hexdigest(), dict(digests)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def bakery(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("specs") / "bakery.yaml"
    path.write_text(BAKERY, "utf-8")
    return path


def spec_path(spec: str, bakery: Path) -> str:
    return str(bakery) if spec == "BAKERY" else spec


def listing_digest(pairs: list[tuple[str, str]]) -> str:
    return hashlib.sha256("".join(f"{a} {b}\n" for a, b in pairs).encode()).hexdigest()


def test_the_generator_version_is_the_one_the_goldens_were_made_with() -> None:
    assert GENERATOR == "grid_dag/1"


@pytest.mark.parametrize("spec, seeds", list(GOLDEN))
def test_golden_instances(spec: str, seeds: tuple[int, ...] | None, bakery: Path) -> None:
    produced = {i.id: i for i in resolve_spec(spec_path(spec, bakery), list(seeds) if seeds else None).instances()}
    for instance_id, digest in GOLDEN[(spec, seeds)].items():
        document = produced[instance_id].to_document()
        assert sha256_hex(document) == digest == hashlib.sha256(canonical_json(document)).hexdigest()


@pytest.mark.parametrize("suite", GOLDEN_SUITES)
def test_golden_suites(suite: str) -> None:
    pairs = [(i.id, sha256_hex(i.to_document())) for i in resolve_spec(suite).instances()]
    assert listing_digest(pairs) == GOLDEN_SUITES[suite]


def test_canonical_json_is_sorted_compact_utf8() -> None:
    assert canonical_json({"b": [1, 2.5], "a": "Tomato Pâte", "c": {"z": None, "y": True}}) == \
        '{"a":"Tomato Pâte","b":[1,2.5],"c":{"y":true,"z":null}}'.encode()
    with pytest.raises(ValueError):
        canonical_json({"x": float("nan")})


@pytest.mark.parametrize("hash_seed", ["0", "4242"])
def test_fresh_processes_with_other_hash_seeds_make_the_same_bytes(hash_seed: str, bakery: Path) -> None:
    jobs = [[spec_path(spec, bakery), list(seeds) if seeds else None] for spec, seeds in GOLDEN]
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(jobs)], capture_output=True, text=True, env=env,
                          check=True)
    out = json.loads(proc.stdout)
    for (spec, seeds), golden in GOLDEN.items():
        digests = out[spec_path(spec, bakery)][1]
        assert {k: digests[k] for k in golden} == golden
    for suite, digest in GOLDEN_SUITES.items():
        assert out[suite][0] == digest


@pytest.mark.parametrize("alpha", ["3.0", "3.00", "3"])
def test_a_number_gives_the_same_bytes_however_it_is_written(alpha: str, tmp_path: Path) -> None:
    """budget_alpha 3.0 made other instance bytes than 3 (meta recorded the number as typed)."""
    spec = tmp_path / "g.yaml"
    spec.write_text("eebench: generator/1\nenv: grid_dag\npresets:\n  low-small: {dag: {n_nodes: 4, dependency_count_"
                    "probs: {1: 0.5, 2: 0.5}, goal_dependency_count_probs: {1: 0.5, 2: 0.5}}, map: {density: 0.1, "
                    f"corridor_width: [2, 3]}}, budget_alpha: {alpha}}}\n", "utf-8")
    (instance,) = resolve_spec(str(spec)).instances()
    (shipped,) = resolve_spec("low-small").instances()   # the same preset, shipped with `budget_alpha: 3`
    assert canonical_json(instance.to_document()) == canonical_json(shipped.to_document())
