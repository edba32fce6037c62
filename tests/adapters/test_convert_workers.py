"""`convert --workers`: a large JSON Lines log converted in pieces, in parallel, gives one process's output,
summary and first problem."""

from __future__ import annotations

import json
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from eebench.adapters import ConvertOptions, convert_files
from eebench.adapters import convert as convert_module
from eebench.adapters.base import Episode
from eebench.adapters.formats.openai_chat import OpenAIChatAdapter
from eebench.errors import InputError
from eebench.pieces import Span
from tests.adapters.test_convert import chat_episode


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pieces of a few hundred bytes, cut from files of any size: most lines land in a piece of their own."""
    monkeypatch.setattr(convert_module, "PIECE_BYTES", 300)
    monkeypatch.setattr(convert_module, "PARALLEL_FROM_BYTES", 0)


def outcome(files: list[Path], out: Path, workers: int, **options) -> tuple[bytes, object] | str:
    """The output and the report of a run, or its error's message."""
    try:
        report = convert_files(files, "openai-chat", out, ConvertOptions(**options), workers=workers)
    except InputError as exc:
        return str(exc)
    return out.read_bytes(), report


LINE = st.one_of(
    st.builds(lambda task, outputs: json.dumps(chat_episode(task, outputs)),
              st.sampled_from(["park2026-main/low-small/seed-0", "unknown/one", "park2026-main/nope"]),
              st.lists(st.sampled_from(["up", "<action>left</action>", "hmm", {"direction": "down"}]), max_size=5)),
    st.builds(lambda k: json.dumps({**chat_episode("unknown/two", ["up"]), "id": f"same-{k}"}), st.integers(0, 1)),
    st.sampled_from(["{not json", "", "   ", '{"messages": "none"}', json.dumps({"model": "m", "messages": []}),
                     json.dumps({"messages": [{"content": "no role"}]})]),
)


@settings(max_examples=8, deadline=None)
@given(files=st.lists(st.lists(LINE, min_size=1, max_size=14), min_size=1, max_size=2), skip_invalid=st.booleans(),
       field=st.booleans(), bom=st.booleans())
@example(files=[["", json.dumps({**chat_episode("unknown/two", ["up"]), "id": "same-0"}),
                 json.dumps(chat_episode("park2026-main/low-small/seed-0", []))]], skip_invalid=False, field=False,
         bom=True)   # (the mark, then a blank line: the pieces counted that line a record, one process did not)
def test_any_log_converts_in_pieces_as_in_one_process(tmp_path_factory, files: list[list[str]], skip_invalid: bool,
                                                      field: bool, bom: bool) -> None:
    """Random logs of good, bad, blank and repeated records, perhaps after a byte order mark (the first piece's
    bytes are counted with it): the same bytes and summary, or the same error."""
    tmp = tmp_path_factory.mktemp("pieces")
    paths = []
    for k, lines in enumerate(files):
        path = tmp / f"log{k}.jsonl"
        path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + ("\n".join(lines) + "\n").encode())
        paths.append(path)
    options = {"skip_invalid": skip_invalid, "instance_field": "task_id" if field else None}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(convert_module, "PIECE_BYTES", 300)
        patch.setattr(convert_module, "PARALLEL_FROM_BYTES", 0)
        assert outcome(paths, tmp / "two.jsonl", 2, **options) == outcome(paths, tmp / "one.jsonl", 1, **options)


def test_a_large_log_is_cut_into_pieces_and_converted_alike(tmp_path: Path, small_pieces) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(chat_episode("park2026-main/low-small/seed-0", ["up", "hmm", {"direction": k}]))
                           + "\n" for k in ("down", "left") * 20))
    assert len(list(convert_module._Pool(None, 2).pieces(log, OpenAIChatAdapter()))) >= 20   # type: ignore[arg-type]
    seen: list[int] = []
    report = convert_files([log], "openai-chat", tmp_path / "two.jsonl", ConvertOptions(), progress=seen.append,
                           workers=2)
    assert report == convert_files([log], "openai-chat", tmp_path / "one.jsonl", ConvertOptions(), workers=1)
    assert (tmp_path / "two.jsonl").read_bytes() == (tmp_path / "one.jsonl").read_bytes()
    assert len(seen) > 1 and sum(seen) == log.stat().st_size   # progress piece by piece, in bytes


def test_a_small_log_or_one_worker_is_converted_by_this_process(tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text(json.dumps(chat_episode("t", ["up"])) + "\n")
    pool = convert_module._Pool(None, 2)   # type: ignore[arg-type]
    assert pool.pieces(log, OpenAIChatAdapter()) is None   # below PARALLEL_FROM_BYTES
    assert convert_module._Pool(None, 1).pieces(log, OpenAIChatAdapter()) is None   # type: ignore[arg-type]


class _CutShort(OpenAIChatAdapter):
    """openai-chat whose reading of a file ends at a line holding CUT, as a line too long to hold ends it."""

    def episodes(self, path: Path) -> Iterator[Episode | InputError]:
        return self._cut(super().episodes(path))

    def line_episodes(self, path: Path, span: Span) -> Iterator[Episode | InputError]:
        return self._cut(super().line_episodes(path, span))

    @staticmethod
    def _cut(items: Iterator[Episode | InputError]) -> Iterator[Episode | InputError]:
        for item in items:
            if isinstance(item, Episode) and item.fields.get("task_id") == "CUT":
                raise InputError.at("log", "cut short here", line=item.line)
            yield item


@pytest.mark.parametrize("skip_invalid", [False, True])
def test_a_problem_that_ends_a_file_drops_the_pieces_after_it(tmp_path: Path, small_pieces,
                                                              monkeypatch: pytest.MonkeyPatch,
                                                              skip_invalid: bool) -> None:
    """Workers as threads here, so that the adapter patched in is theirs too."""
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(chat_episode(task, ["up"])) + "\n" for task in ("a", "b", "CUT", "c", "d")))
    monkeypatch.setattr(convert_module, "get_adapter", lambda name: _CutShort())
    options = {"skip_invalid": skip_invalid}
    one = outcome([log], tmp_path / "one.jsonl", 1, **options)
    monkeypatch.setattr(convert_module._Pool, "_started", lambda self: ThreadPoolExecutor(2))
    two = outcome([log], tmp_path / "two.jsonl", 2, **options)
    assert two == one
    if skip_invalid:
        data, report = one   # type: ignore[misc]
        assert report.trajectories == 2 and [p.message for p in report.skipped] == ["cut short here"]
    else:
        assert one == "log:3: cut short here"


def test_workers_option(cli, tmp_path: Path, small_pieces) -> None:
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(chat_episode("t", ["up", "hmm"])) + "\n" for _ in range(6)).replace(
        '"task_id": "t"', '"task_id": "t", "id": "x"', 1))
    for workers in ("1", "2", "auto"):
        cli("convert", str(log), "--instance", "park2026-main/low-small/seed-0", "--workers", workers,
            "--out", str(tmp_path / f"out-{workers}.jsonl"))
    assert (tmp_path / "out-2.jsonl").read_bytes() == (tmp_path / "out-1.jsonl").read_bytes()
    assert (tmp_path / "out-auto.jsonl").read_bytes() == (tmp_path / "out-1.jsonl").read_bytes()
    bad = cli("convert", str(log), "--workers", "many", "--out", str(tmp_path / "x.jsonl"), code=2)
    assert "'many' is not a count of processes" in bad.stderr
