"""A deterministic mutation corpus: valid documents of every kind, damaged by seeded mutators.

Each `Case` is one damaged file and one command that reads it. Seeds are valid inputs built once per session
(`Seeds`); mutators work on bytes (bit flips, truncation, spliced bytes) or on the parsed value (field deletion,
type swaps, the hostile values of issue 9: NaN, huge integers, deep nesting, lone surrogates, long strings).
"""

from __future__ import annotations

import gzip
import io
import json
import random
import shutil
import struct
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eebench.archives import archive_bytes, read_archive
from eebench.bundles import publish
from eebench.documents import loads_json, parse_text
from eebench.errors import InputError
from eebench.evaluator import Bench, grade_files
from eebench.instances import write_instances
from tests.conftest import instance_doc, make_instance

REPO = Path(__file__).resolve().parents[2]
AGENT_LOGS = REPO.parent / "shared" / "data" / "agent-logs"
CORRIDOR = dict(map_rows=[".......", ".#.#..."], start=[3, 0], nodes=[("P", [0, 0], []), ("G", [6, 0], [["P"]])],
                goal="G", budget=30)

# Agent logs of several formats (relative to AGENT_LOGS) and the --from name that reads each.
LOGS = {
    "openai_chat/tau-bench_gpt-4o-airline.first7.json": "openai-chat",
    "openhands_events/openhands_trajectory.json": "openhands",
    "atif/openhands__hello-world.trajectory.json": "atif",
    "atif/terminus-2__hello-world-invalid-json.traces.json": "harbor-traces",
    "langsmith/langsmith_py_wrap_openai_reasoning.json": "langsmith",
    "otel_genai/any-agent_OPENAI_trace.json": "otel",
    "mini_swe_agent/mini-swe-agent-trajectory.json": "mini-swe-agent",
    "swe_agent/6e44b9__sweagenttestrepo-1c2844.traj": "swe-agent",
    "openai_responses/nemo-gym_openenv_example_rollouts.jsonl": "openai-responses",
    "inspect_ai/log_message_deduplication.eval": "inspect",
    "balrog/babyai_open_run_01__claude-3.5-sonnet_naive.csv": "balrog",
    "react_text/reflexion_hotpotqa_50_sample_react_reflect_correct.txt": "react",
}


@dataclass(frozen=True)
class Seed:
    """A valid input: where it sits (`name`, relative to a case folder) and the commands that read it."""

    kind: str
    name: str
    data: bytes
    commands: tuple[str, ...]
    fmt: str | None = None     # the log format, for convert
    tree: Path | None = None   # a folder copied into the case folder first (a bench or bundle the file is part of)


@dataclass(frozen=True)
class Case:
    """One damaged input and the command that reads it."""

    number: int
    seed: Seed
    mutation: str
    data: bytes
    command: str

    @property
    def id(self) -> str:
        return f"{self.number}-{self.seed.kind}-{self.command}-{self.mutation}"


def trajectory(traj_id: str, actions: list[str | None], **extra: Any) -> dict[str, Any]:
    return {"eebench": "trajectory/1", "id": traj_id, "instance": "t/corridor",
            "agent": {"name": "a", "model": "m", "prompt": "p", "harness": None},
            "steps": [{"action": a, "tokens_in": 10, "tokens_out": 3, "latency_ms": 1.5} for a in actions], **extra}


TRAJECTORIES = [trajectory("one", ["left"] * 3 + ["right"] * 6),
                trajectory("two", ["up", "down", None, "left"], meta={"note": "x"}),
                trajectory("three", ["right", "right", "right"])]


class Seeds:
    """The valid inputs of every kind, built under `root` once."""

    def __init__(self, root: Path):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        corridor = instance_doc(**CORRIDOR, instance_id="t/corridor")
        self.bench = root / "bench"
        write_instances([make_instance(**CORRIDOR, instance_id="t/corridor")], self.bench, {"kind": "test"})
        specs = root / "specs"
        specs.mkdir()
        (specs / "corridor.json").write_text(json.dumps(corridor), "utf-8")
        suite = ("eebench: suite/1\nname: t\ndescription: a corridor and a pasta map\nmembers:\n"
                 "  - {instance: corridor.json}\n  - {instance: pasta/custom-201, variants: [semantic, symbolic]}\n")
        (specs / "t.yaml").write_text(suite, "utf-8")
        self.bundle = root / "bundle"
        publish(str(specs / "t.yaml"), "1.0.0", self.bundle)
        files = {str(p.relative_to(self.bundle)): p.read_bytes() for p in sorted(self.bundle.rglob("*")) if p.is_file()}
        tar, zipped = archive_bytes(files, ".tar.gz"), archive_bytes(files, ".zip")
        runs = "".join(json.dumps(t) + "\n" for t in TRAJECTORIES).encode()
        self.runs = root / "runs.jsonl"
        self.runs.write_bytes(runs)
        self.results = root / "results.duckdb"  # graded before: a failed grade must leave its rows as they were
        grade_files([self.runs], Bench(self.bench), self.results)
        pasta = (REPO / "eebench" / "specs" / "instances" / "pasta" / "custom-201.yaml").read_bytes()
        presets = (REPO / "eebench" / "specs" / "presets" / "park2026.yaml").read_bytes()
        manifest_name = "manifest.json"
        instance_member = next(n for n in files if n.startswith("instances/") and n.endswith("corridor.json"))
        self.seeds = [
            Seed("instance", "corridor.json", json.dumps(corridor, indent=1).encode(), ("validate", "show", "play")),
            Seed("instance-in-bench", "bench/t/corridor.json", (self.bench / "t" / "corridor.json").read_bytes(),
                 ("grade-bench", "play-bench"), tree=self.bench),
            Seed("instance-yaml", "custom-201.yaml", pasta, ("validate", "show", "play")),
            Seed("suite", "specs/t.yaml", suite.encode(), ("validate", "generate", "publish"), tree=specs),
            Seed("generator", "park2026.yaml", presets, ("validate", "generate-seed")),
            Seed("index", "bench/index.json", (self.bench / "index.json").read_bytes(), ("grade-bench", "play-bench"),
                 tree=self.bench),
            Seed("trajectories", "runs.jsonl", runs, ("validate", "grade", "grade-skip")),
            Seed("trajectories-json", "runs.json", json.dumps(TRAJECTORIES).encode(), ("validate", "grade")),
            Seed("manifest", f"bundle/{manifest_name}", files[manifest_name], ("validate", "verify", "grade-bundle", "bundles"),
                 tree=self.bundle),
            Seed("bundle-instance", f"bundle/{instance_member}", files[instance_member], ("verify", "grade-bundle"),
                 tree=self.bundle),
            Seed("archive-tgz", "bundle.tar.gz", tar, ("verify", "grade-bundle", "bundles")),
            Seed("archive-zip", "bundle.zip", zipped, ("verify", "grade-bundle", "bundles")),
        ]
        if AGENT_LOGS.is_dir():
            for rel, fmt in LOGS.items():
                path = AGENT_LOGS / rel
                if path.is_file():
                    self.seeds.append(Seed(f"log-{fmt}", path.name, path.read_bytes(), ("convert", "convert-auto"),
                                           fmt=fmt))

    def place(self, case: Case, folder: Path) -> Path:
        """Write the case's damaged file (and the tree it belongs to) into `folder`; return its path."""
        seed = case.seed
        target = folder / seed.name
        if seed.tree is not None:
            shutil.copytree(seed.tree, folder / Path(seed.name).parts[0], dirs_exist_ok=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(case.data)
        return target


# -- mutators ---------------------------------------------------------------------------------------------

SPECIAL_VALUES: list[Any] = [None, True, 0, -1, 2 ** 31, 2 ** 63, -2 ** 63 - 1, 1.5, 1e308, "", "x", "up",
                             "x" * 300, [], {}, [[[]]], {"eebench": "instance/9"}, "../../etc/passwd",
                             "t/" + "x" * 300,
                             # JSON inside a string, as tool-call arguments and OTel attributes carry it: parsed
                             # again by adapters, so it must meet the same door
                             '{"direction": "\\ud800", "n": NaN, "x": 1e400, "y": ' + "9" * 5000 + "}",
                             "[" * 5000 + "]" * 5000, '{"a": ' * 2000 + "1" + "}" * 2000]
# Raw JSON text for values json.dumps cannot write, spliced in place of a placeholder string.
HOSTILE_TEXT: dict[str, str] = {
    "nan": "NaN", "infinity": "-Infinity", "overflow": "1e400", "huge-int": "9" * 5000,
    "surrogate": '"\\ud800"', "surrogate-key": '{"\\udfff": 1}', "deep-200": "[" * 200 + "]" * 200,
    "deep-40000": "[" * 40_000 + "]" * 40_000, "deep-objects": '{"a":' * 300 + "1" + "}" * 300,
    "long-string": '"' + "y" * 1_000_000 + '"', "nul-string": '"\\u0000\\u0000"',
}
PLACEHOLDER = "\x1b\x1bHOSTILE\x1b\x1b"
SPLICES = [b"\x00", b"\xff", b"\xc3", b"\n", b'"', b"[", b"{", b"}", b"]", b"\\", b",", b"\xef\xbb\xbf", b"\r\n",
           b"\x00" * 16 + b"\n", b"&a [1]", b"*a", b"<<: *a"]


def _paths(value: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path into a JSON value (keys and list indices), the value itself first."""
    yield prefix
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*prefix, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from _paths(child, (*prefix, i))


def _set(value: Any, path: tuple, new: Any, delete: bool = False) -> Any:
    if not path:
        return new
    parent = value
    for part in path[:-1]:
        parent = parent[part]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return value


def _parse(seed: Seed, data: bytes) -> list[Any] | Any | None:
    """The seed's value(s): a list of line values for JSON Lines, one value otherwise; None when unparseable."""
    try:  # eebench's own bounded door: a damaged seed may be an alias bomb, and the fuzzer must not blow up first
        if seed.name.endswith(".jsonl"):
            return [loads_json(line) for line in data.splitlines() if line.strip()]
        return parse_text(data.decode("utf-8"), seed.name, yaml_syntax=seed.name.endswith((".yaml", ".yml")))
    except (ValueError, InputError):  # not JSON or YAML (csv, text, zip, or damaged by an earlier mutation)
        return None


def _dump(seed: Seed, value: Any, hostile: str | None = None) -> bytes:
    """The value as text again (JSON, which YAML also reads), with a hostile raw text in place of PLACEHOLDER."""
    if seed.name.endswith(".jsonl"):
        text = "".join(json.dumps(v) + "\n" for v in value)
    else:
        text = json.dumps(value, indent=1)
    if hostile is not None:
        text = text.replace(json.dumps(PLACEHOLDER), HOSTILE_TEXT[hostile], 1)
    return text.encode()


def _structural(rng: random.Random, seed: Seed, data: bytes) -> tuple[str, bytes] | None:
    value = _parse(seed, data)
    if value is None:
        return None
    root = value
    if seed.name.endswith(".jsonl"):
        line = rng.randrange(len(value))
        root = value[line]
    paths = list(_paths(root))
    path = rng.choice(paths[1:] or paths)
    choice = rng.random()
    if choice < 0.3 and path:
        _set(root, path, None, delete=True)
        return f"delete-{len(path)}", _dump(seed, value)
    if choice < 0.65:
        new = rng.choice(SPECIAL_VALUES)
        if seed.name.endswith(".jsonl"):
            value[line] = _set(root, path, json.loads(json.dumps(new)))
        else:
            value = _set(root, path, json.loads(json.dumps(new)))
        return f"swap-{type(new).__name__}", _dump(seed, value)
    hostile = rng.choice(sorted(HOSTILE_TEXT))
    if seed.name.endswith(".jsonl"):
        value[line] = _set(root, path, PLACEHOLDER)
    else:
        value = _set(root, path, PLACEHOLDER)
    return f"hostile-{hostile}", _dump(seed, value, hostile)


def _bytes(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    choice = rng.random()
    if choice < 0.4 and data:
        flipped = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(flipped))
            flipped[i] ^= 1 << rng.randrange(8)
        return "bitflip", bytes(flipped)
    if choice < 0.7:
        return "truncate", data[:rng.randrange(len(data) + 1)]
    splice = rng.choice(SPLICES)
    at = rng.randrange(len(data) + 1)
    return "splice", data[:at] + splice + data[at:]


def _whole(rng: random.Random, seed: Seed, data: bytes) -> tuple[str, bytes]:
    """Replacements of the whole file: the empty file, a line of NUL bytes, YAML bombs, a BOM, CRLF."""
    options: list[tuple[str, bytes]] = [
        ("empty", b""), ("nul-line", b"\x00" * 64 + b"\n"), ("bom", b"\xef\xbb\xbf" + data),
        ("crlf", data.replace(b"\n", b"\r\n")), ("not-utf8", b"\xff\xfe" + data[:100]),
        ("deep-file", b"[" * 40_000 + b"]" * 40_000), ("scalar", b"42\n"),
    ]
    if seed.name.endswith((".yaml", ".yml")):
        laughs = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8))
        merges = "a0: &a0 {k: 1}\n" + "".join(f"a{i}: &a{i}\n  <<: [*a{i - 1}, *a{i - 1}]\n  k{i}: 1\n"
                                              for i in range(1, 45))
        options += [("alias-bomb", (data.decode("utf-8", "replace") + laughs).encode()),
                    ("merge-chain", (data.decode("utf-8", "replace") + merges).encode()),
                    ("yaml-nan", data + b"\nextra: .nan\n")]
    if seed.name.endswith(".tar.gz"):
        raw = gzip.decompress(data)
        hidden = io.BytesIO()
        with tarfile.open(fileobj=hidden, mode="w", format=tarfile.PAX_FORMAT) as archive:
            info = tarfile.TarInfo("instances/hidden.json")
            info.size = 2
            archive.addfile(info, io.BytesIO(b"{}"))
        options.append(("tar-trailing", gzip.compress(raw + hidden.getvalue())))
    if seed.name.endswith(".zip"):
        options.append(("zip-lie", _zip_lie(data)))
    if seed.name.endswith((".tar.gz", ".zip")):
        options.append(("archive-member", _archive_member_mutated(rng, seed, data)))
    return rng.choice(options)


def _zip_lie(data: bytes) -> bytes:
    """The zip with its first member's declared size set to 100 bytes (it inflates to more)."""
    out = bytearray(data)
    struct.pack_into("<I", out, 22, 100)
    central = out.find(b"PK\x01\x02")
    if central >= 0:
        struct.pack_into("<I", out, central + 24, 100)
    return bytes(out)


def _archive_member_mutated(rng: random.Random, seed: Seed, data: bytes) -> bytes:
    """The archive rebuilt with one member damaged (bytes or structure), so the damage is inside valid packing."""
    suffix = ".zip" if seed.name.endswith(".zip") else ".tar.gz"
    scratch = Path(f"/tmp/eebench-fuzz-{rng.random()}{suffix}")
    try:
        scratch.write_bytes(data)
        files = read_archive(scratch)
    finally:
        scratch.unlink(missing_ok=True)
    name = rng.choice(sorted(files))
    member = Seed("member", name, files[name], ())
    mutated = _structural(rng, member, files[name]) if rng.random() < 0.6 else None
    files[name] = mutated[1] if mutated else _bytes(rng, files[name])[1]
    return archive_bytes(files, suffix)


def mutate(rng: random.Random, seed: Seed) -> tuple[str, bytes]:
    choice = rng.random()
    if choice < 0.45:
        structural = _structural(rng, seed, seed.data)
        if structural is not None:
            return structural
    if choice < 0.85:
        return _bytes(rng, seed.data)
    return _whole(rng, seed, seed.data)


def cases(seeds: Seeds, count: int, salt: str) -> list[Case]:
    """`count` cases, round-robin over every (seed, command) pair, each mutated by its own seeded generator."""
    pairs = [(seed, command) for seed in seeds.seeds for command in seed.commands]
    out = []
    for number in range(count):
        seed, command = pairs[number % len(pairs)]
        rng = random.Random(f"{salt}:{number}")
        mutation, data = mutate(rng, seed)
        out.append(Case(number, seed, mutation, data, command))
    return out
