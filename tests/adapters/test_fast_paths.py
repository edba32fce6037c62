"""The fast paths of `convert` against the exact ones they stand in for: the same verdicts, the same bytes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from eebench.documents import MAX_DEPTH, DepthGauge, too_deep

# text around the depth limit made of what the depth rule looks at: brackets, quotes, runs of backslashes
_noise = st.text(alphabet='[]{}"\\\\a', max_size=40)


@settings(max_examples=400)
@given(st.integers(MAX_DEPTH - 3, MAX_DEPTH + 3), _noise, _noise, st.sampled_from("[{"), st.booleans())
def test_too_deep_judges_as_the_depth_gauge_on_any_bytes(opened: int, before: str, inside: str, bracket: str,
                                                         in_string: bool) -> None:
    middle = f'"{inside}"' if in_string else inside
    data = (before + bracket * opened + middle + "]" * opened).encode()
    assert too_deep(data) == (not DepthGauge().feed(data))


def test_too_deep_reads_escaped_quotes_and_brackets_in_strings() -> None:
    deep = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    assert too_deep(deep.encode())
    assert not too_deep(f'["{deep}"]'.encode())                       # all inside a string
    assert not too_deep(f'["\\"{deep}\\""]'.encode())                 # escaped quotes keep it inside
    assert too_deep(f'["\\\\", {deep}]'.encode())                      # an escaped backslash ends the string
    assert not too_deep(("[" * MAX_DEPTH + '"\\"[x"' + "]" * MAX_DEPTH).encode())
