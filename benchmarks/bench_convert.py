"""Converting logs: `convert_files` on JSON Lines chat logs, against a plain JSON round trip of the same lines.

Targets: 50 MB/s or more on JSONL chat logs, and memory flat in the input size (issue 4); 100 MB/s (issue 13). The
baselines are the floor any converter pays: `json.loads` and `json.dumps` of every line, and the same round trip by
orjson (issue 13's yardstick), so the ratios say what reading actions, joining observations and building
trajectories cost on top of it. convert's default (`--workers auto`) cuts a large log into pieces converted by one
process per core; the same in one process is measured beside it, against the one-process round trip. A line
measures openai-chat's exact path alone (its fast reader off): what the fast path earns. Every figure is the median
of REPEATS runs, interleaved, in one process.
"""

from __future__ import annotations

import contextlib
import json
import random
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson

from benchmarks import Result, peak_rss_of, timed
from eebench.adapters import ConvertOptions, convert_files
from eebench.adapters.formats.openai_chat import OpenAIChatAdapter
from eebench.pieces import resolve_workers

REPEATS = 3   # each figure is the median of this many runs

OUTPUTS = ["<action>{}</action>", "I should look around first. Action: move {}", '{{"action": "{}"}}',
           "The corridor continues; the node must be further. {}", "Hmm, not sure where to go."]
WORDS = ("up", "down", "left", "right", "North", "South")


REASONING = ("I am at the corridor's end. The map so far shows free cells to the east and an unexplored area to "
             "the south; the pending node needs its prerequisite first, so I should explore before exploiting. ")


def _write_chat_log(path: Path, megabytes: float, seed: int = 0, verbose: bool = False) -> int:
    """JSON Lines of chat episodes (40 turns, text and tool-call actions, observations as the user); its size.

    Terse: outputs of a few words (the densest case: most steps per byte). Verbose: each output reasons for a few
    sentences first and each observation describes the surroundings, as LLM agents' logs usually do.
    """
    rng = random.Random(seed)
    prefix = REASONING * 2 if verbose else ""
    scene = (" Around you: a wall to the north, free cells east and south, nothing known to the west."
             " Pending nodes: none visible. Steps left: 37.") * (2 if verbose else 0)
    size = 0
    with path.open("w") as handle:
        k = 0
        while size < megabytes * 1e6:
            messages = [{"role": "system", "content": "You explore a grid. " * 20},
                        {"role": "user", "content": "You are at [0, 0]. Admissible moves: down, right."}]
            for t in range(40):
                word = rng.choice(WORDS)
                if t % 4 == 3:
                    messages.append({"role": "assistant", "content": "Moving on.", "tool_calls": [
                        {"id": f"c{t}", "type": "function",
                         "function": {"name": "move", "arguments": json.dumps({"direction": word})}}]})
                    messages.append({"role": "tool", "tool_call_id": f"c{t}", "content": f"You are at [{t}, 3]."})
                else:
                    messages.append({"role": "assistant", "content": prefix + rng.choice(OUTPUTS).format(word),
                                     "usage": {"prompt_tokens": 900 + t, "completion_tokens": 30}})
                    messages.append({"role": "user", "content": f"You are at [{t}, 2]. Admissible moves: up, left. "
                                                                "No node here." + scene})
            line = json.dumps({"task_id": f"park2026-main/low-small/seed-{k % 3}", "model": "bench-model",
                               "messages": messages}) + "\n"
            handle.write(line)
            size += len(line)
            k += 1
    return size


def _baseline(source: Path, out: Path) -> None:
    with source.open("rb") as lines, out.open("w") as handle:
        for line in lines:
            handle.write(json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")) + "\n")


def _orjson_round_trip(source: Path, out: Path) -> None:
    with source.open("rb") as lines, out.open("wb") as handle:
        for line in lines:
            handle.write(orjson.dumps(orjson.loads(line)) + b"\n")


def _peak_rss_converting(source: Path, out: Path) -> float:
    """Peak RSS (MB) of a conversion with the default workers, summed over this process and its workers."""
    return peak_rss_of("from pathlib import Path; from eebench.adapters import ConvertOptions, convert_files; "
                       f"convert_files([Path({str(source)!r})], 'openai-chat', Path({str(out)!r}), "
                       "ConvertOptions(instance_field='task_id'))", children=resolve_workers(0))


def _median(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    return statistics.median(timed(fn)[0] for _ in range(repeats))


@contextlib.contextmanager
def _exact_path_only() -> Iterator[None]:
    """openai-chat without its fast reader: every record through the exact door and chat rules."""
    saved = vars(OpenAIChatAdapter)["fast_reader"]   # the staticmethod itself, to put back as it was
    OpenAIChatAdapter.fast_reader = None
    try:
        yield
    finally:
        OpenAIChatAdapter.fast_reader = saved


def run() -> list[Result]:
    results = []
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        options = ConvertOptions(instance_field="task_id")
        for verbose in (False, True):
            source = tmp / "chat.jsonl"
            size = _write_chat_log(source, 100, verbose=verbose) / 1e6
            steps = convert_files([source], "openai-chat", tmp / "out.jsonl", options).steps

            def convert(workers: int = 0) -> None:
                convert_files([source], "openai-chat", tmp / "out.jsonl", options, workers=workers)

            # interleaved, median of REPEATS each: the machine is shared, so only same-run ratios mean much
            seconds, one_seconds, base_seconds, fast_seconds = (statistics.median(t) for t in zip(*(
                (timed(convert)[0], timed(lambda: convert(1))[0],
                 timed(lambda: _baseline(source, tmp / "baseline.jsonl"))[0],
                 timed(lambda: _orjson_round_trip(source, tmp / "orjson.jsonl"))[0]) for _ in range(REPEATS))))
            with _exact_path_only():
                exact_seconds = _median(lambda: convert(1))
            command = [sys.executable, "-m", "eebench", "convert", str(source), "--from", "openai-chat",
                       "--instance-field", "task_id", "--out", str(tmp / "out.jsonl")]
            command_seconds, command_one_seconds = (statistics.median(t) for t in zip(*(
                (timed(lambda: subprocess.run(command, capture_output=True, check=True))[0],
                 timed(lambda: subprocess.run([*command, "--workers", "1"], capture_output=True, check=True))[0])
                for _ in range(REPEATS))))
            kind = "verbose" if verbose else "terse"
            cores = resolve_workers(0)
            results.append(Result(f"convert JSONL chat logs, {kind}, {size:.0f} MB ({steps:,} steps)",
                                  size / seconds, "MB/s", size / base_seconds, ">= 50 MB/s",
                                  f"--workers auto ({cores} here); baseline: json.loads + json.dumps per line"))
            results.append(Result("  the same against an orjson round trip", size / seconds, "MB/s",
                                  size / fast_seconds, ">= 100 MB/s"))
            results.append(Result("  the same in one process (--workers 1) against the orjson round trip",
                                  size / one_seconds, "MB/s", size / fast_seconds, note="both one process"))
            results.append(Result("  one process against the exact path alone", size / one_seconds, "MB/s",
                                  size / exact_seconds, note="openai-chat's fast reader off"))
            results.append(Result("  the same as `eebench convert`, a fresh process end to end", size / command_seconds,
                                  "MB/s", target=">= 100 MB/s", note="the interpreter's start and every import "
                                                                     "included"))
            results.append(Result("  `eebench convert --workers 1`, end to end", size / command_one_seconds, "MB/s"))
        for megabytes in (20, 200):
            sized = tmp / f"chat{megabytes}.jsonl"
            _write_chat_log(sized, megabytes, seed=megabytes)
            results.append(Result(f"peak RSS converting {megabytes} MB of JSONL chat logs, summed over the workers",
                                  _peak_rss_converting(sized, tmp / "rss.jsonl"), "MB",
                                  target="flat in the input size"))
            sized.unlink()
    return results
