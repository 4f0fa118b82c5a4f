"""Words others supplied, printed on a terminal: what a terminal acts on is shown as an escape,
ordinary text of every script (joiners and direction marks included) is left as it is."""

from __future__ import annotations

import json

from click.testing import CliRunner

from deniable.client.cli import cli
from deniable.shared.terminal import shown


def test_bidi_overrides_and_controls_are_escaped():
    assert shown("yes\u202eon") == "yes\\u202eon"
    assert shown("a\u2066b\u2069") == "a\\u2066b\\u2069"
    assert shown("a\x1b[2Jb\x9b") == "a\\u001b[2Jb\\u009b"
    assert shown("one\ntwo") == "one\\u000atwo"


def test_ordinary_text_of_every_script_is_kept():
    persian = "می\u200cخواهم"  # a zero-width non-joiner inside a Persian word
    assert shown(persian) == persian
    marked = "\u200fمرحبا\u200e ok"
    assert shown(marked) == marked
    assert shown("plain text") == "plain text"


def test_lines_keep_their_newlines_and_escape_the_rest():
    assert shown("one\ntwo\u202e\tthree", lines=True) == "one\ntwo\\u202e\\u0009three"


def test_the_respondents_cli_shows_a_surveys_bidi_override_as_an_escape(tmp_path):
    survey = {
        "id": "s",
        "title": "Survey \u202eemit",
        "enrollment": "open",
        "questions": [{"id": "q", "text": "Do you \u202eon?", "type": "binary", "epsilon": 1}],
    }
    path = tmp_path / "s.json"
    path.write_text(json.dumps(survey), "utf-8")
    result = CliRunner().invoke(cli, ["explain", str(path)])
    assert result.exit_code == 0, result.output
    assert "\u202e" not in result.output
    assert "Do you \\u202eon?" in result.output
