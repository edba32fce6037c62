"""The shared action reader: every way a model names a move, what is not a move, room objects, a user's regex."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from eebench.adapters.actions import ActionReader, grid_move, render_call, room_object

GRID = ActionReader("grid")


@pytest.mark.parametrize(("text", "expected"), [
    ("up", "up"),
    ("UP", "up"),
    ("  Down\n", "down"),
    ("North", "up"),
    ("move up", "up"),
    ("Go west.", "left"),
    ("I will move right.", "right"),
    ("<action>Down</action>", "down"),
    ("<ACTION> Left </ACTION>", "left"),
    ('{"action": "North"}', "up"),
    ('Let me think.\n```json\n{"move": "east"}\n```', "right"),
    ('{"thought": "the key is up there", "action": {"direction": "down"}}', "down"),
    ('move(direction="up")', "up"),
    ("move('left')", "left"),
    ("move_right()", "right"),
    ("Thought: the corridor continues.\nAction: move down", "down"),
    ("<think>up or left?</think><|ACTION|>right<|END|>", "right"),
    ("```\nleft\n```", "left"),
    ("u", "up"),
    ("The corridor goes on to the east and north.\nNorth", "up"),   # the answer alone on the last line
    # the last answer of the strongest kind wins: models reason first and answer last
    ("<action>up</action> ... on second thought <action>down</action>", "down"),
    ('Action: left\n{"action": "right"}', "right"),
])
def test_reads_grid_moves(text: str, expected: str) -> None:
    assert GRID.from_text(text) == expected


@pytest.mark.parametrize("text", [
    "",
    "   ",
    "I cannot go up, so left",        # two moves named: guessing would grade a move the agent may not have made
    "up or left",
    "Let me look at the map first and think about where the key could be hidden.",
    "<action>jump</action>",
    '{"action": "wait"}',
    "Thank you (Mia)",
    "n't",
    "the upper left corner",
])
def test_prose_without_one_clear_move_is_unreadable(text: str) -> None:
    assert GRID.from_text(text) is None


def test_reads_structured_tool_calls() -> None:
    assert GRID.from_call("move", '{"direction": "up"}') == "up"
    assert GRID.from_call("move", {"dir": "West"}) == "left"
    assert GRID.from_call("move_down", {}) == "down"
    assert GRID.from_call("functions.go", '"south"') == "down"
    assert GRID.from_call("search", {"query": "weather"}) is None
    assert GRID.from_call("move", "{not json") is None


def test_normalizes_actions_a_log_already_parsed() -> None:
    assert GRID.normalize("North") == "up"
    assert GRID.normalize("jump") is None
    assert ActionReader("text").normalize("  turn left ") == "turn left"


def test_room_objects_after_grams_et_al() -> None:
    rooms = ActionReader("rooms")
    assert rooms.from_text("I will try <tangerine door>.") == "tangerine door"
    assert rooms.from_text(">dodger\\_blue door") == "dodger_blue door"
    assert rooms.from_text("Action: interact with the Red Ball") == "red ball"
    assert rooms.from_call("interact", {"object": "khaki ball"}) == "khaki ball"
    assert rooms.from_text("<think>maybe the door</think> nothing yet") is None
    assert room_object("rosewood   BALL") == "rosewood ball"
    assert room_object("a sofa") is None
    # what a model says before the object: it was kept, a door no instance has, and not counted as unread
    assert room_object("I will go through the dark_gray door.") == "dark_gray door"
    assert room_object("walk to gray door") == room_object("Let me walk through the gray door") == "gray door"
    assert room_object("I'll pick up the red ball") == "red ball"


def test_open_text_keeps_what_the_model_wrote() -> None:
    text = ActionReader("text")
    assert text.from_text("Search[Milhouse]") == "Search[Milhouse]"
    assert text.from_text("<action>Push box</action> because it is near") == "Push box"
    assert text.from_call("bash", {"command": "ls -la"}) == 'bash({"command": "ls -la"})'
    assert text.from_text("Thank you (Mia)") == "Thank you (Mia)"   # prose is not read as a call
    terminus = '{\n  "analysis": "Done.",\n  "plan": "Stop.",\n  "commands": [],\n  "task_complete": true\n}'
    assert text.from_text(terminus) == terminus   # its closing brace is not the answer on the last line


def test_a_json_object_in_open_text_names_the_action_only_by_an_action_key() -> None:
    # LangChain's ReAct text: the arguments' one string value was read as the action, before the `Action:` line
    text = ActionReader("text")
    react = 'Thought: t\nAction: search\nAction Input: {"query": "paris", "limit": 3}'
    assert text.from_text(react) == 'search'
    assert text.from_text('I will open {"path": "/etc/x"} now') == 'I will open {"path": "/etc/x"} now'
    assert text.from_text('{"action": "open door", "why": "it is there"}') == "open door"
    # a move word in a closed vocabulary still reads from any one-string object
    assert ActionReader("grid").from_text('{"way": "north"}') == "up"


def test_user_regex_comes_first_and_the_built_in_rules_stay() -> None:
    named = ActionReader("grid", re.compile(r"MOVE=(?P<action>\w+)"))
    assert named.from_text("MOVE=north ... MOVE=west") == "left"
    assert named.from_text("<action>up</action>") == "up"        # another answer style still reads
    assert named.from_text("<action>up</action> MOVE=west") == "left"  # the user's pattern wins over the tag
    assert named.from_text("MOVE=west MOVE=zz") == "left"        # the last match that names a move
    numbered = ActionReader("grid", re.compile(r"dir:(\w+)"))
    assert numbered.from_text("dir:S") == "down"
    whole = ActionReader("grid", re.compile(r"\b(?:north|south)\b"))
    assert whole.from_text("I go south") == "down"


@pytest.mark.parametrize(("text", "action"), [
    ("I think going up is bad. Action: left", "left"),
    ("Going up is bad, so my final answer: Right.", "right"),
    ("Up looked open. Move = down", "down"),
    ("my move: maybe up", None),          # a hedge is not a move
    ("the move-count: 3", None),
])
def test_an_inline_action_label_reads(text: str, action: str | None) -> None:
    assert ActionReader("grid").from_text(text) == action


def test_inline_labels_are_not_read_in_open_text() -> None:
    # a logged environment's prose is kept whole: `answer: yes` inside a sentence is not its action
    assert ActionReader("text").from_text("They said the answer: yes") == "They said the answer: yes"


def test_render_call() -> None:
    assert render_call("finish", None) == "finish()"
    assert render_call("move", '{"d": 1}') == 'move({"d": 1})'


SYNONYMS = {"up": ["up", "north"], "down": ["down", "south"], "left": ["left", "west"], "right": ["right", "east"]}
WRAPPERS = ["{}", "move {}", "go {}.", "<action>{}</action>", '{{"action": "{}"}}', 'move(direction="{}")',
            "Thought: hmm.\nAction: {}", "```\n{}\n```", "<|ACTION|>{}<|END|>"]


@given(move=st.sampled_from(sorted(SYNONYMS)), synonym=st.integers(0, 1), wrapper=st.sampled_from(WRAPPERS),
       case=st.sampled_from([str.lower, str.upper, str.title]), prose=st.sampled_from(["", "I think.\n", "Ok!\n"]))
def test_any_wrapped_synonym_reads_as_its_move(move: str, synonym: int, wrapper: str, case, prose: str) -> None:
    word = case(SYNONYMS[move][synonym])
    assert GRID.from_text(prose + wrapper.format(word)) == move


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=200))
def test_reader_never_fails_and_only_returns_moves(text: str) -> None:
    assert GRID.from_text(text) in (None, "up", "down", "left", "right")
    assert grid_move(text) in (None, "up", "down", "left", "right")


def test_padding_does_not_hide_a_move_and_a_paragraph_is_none() -> None:
    assert grid_move(" " * 100 + "North\n" + " " * 100) == "up"
    assert grid_move("up " + "and then some more words " * 5) is None
