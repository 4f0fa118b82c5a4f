"""Words others supplied, printed on a terminal: what a terminal acts on is shown as an escape,
ordinary text of every script (joiners and direction marks included) is left as it is."""

from __future__ import annotations

import json

import pytest
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


def test_a_refused_prompt_answer_shows_the_surveys_labels_as_escapes():
    # click.prompt prints a refused answer's BadParameter itself, past the CLI's echo: the
    # labels it lists reached the terminal raw.
    import click
    import pytest

    from deniable.client.cli import option_of
    from deniable.shared import Survey

    survey = Survey.from_dict(
        {
            "id": "s",
            "title": "T",
            "questions": [
                {
                    "id": "q",
                    "text": "Q?",
                    "type": "categorical",
                    "options": ["\u202eA", "B"],
                    "epsilon": 1,
                }
            ],
        }
    )
    with pytest.raises(click.BadParameter) as refused:
        option_of(survey.questions["q"], "neither")
    assert "\u202e" not in refused.value.format_message()
    assert "\\u202eA, B" in refused.value.format_message()


def test_json_keeps_its_document_and_shows_what_a_terminal_acts_on_as_json_escapes():
    import json as json_module

    from deniable.shared.terminal import shown_json

    doc = {"title": "T\u202e", "text": "a\u2066b\U000f0000", "plain": "مرحبا\u200c"}
    text = shown_json(json_module.dumps(doc, indent=2, ensure_ascii=False))
    assert json_module.loads(text) == doc  # the same document, astral characters included
    assert text.isascii() is False and "\u202e" not in text and "\U000f0000" not in text
    assert "\\u202e" in text and "\\udb80\\udc00" in text and "مرحبا\u200c" in text


def test_the_operators_cli_shows_an_unexpected_errors_words_as_escapes(monkeypatch, capsys):
    """The last line of defence in `deniable-aggregator` escapes what it prints too."""
    from deniable.aggregator.cli import core

    def hostile(*args, **kwargs):
        raise RuntimeError("bad \u202eword\x1b[2J")

    monkeypatch.setattr(core.cli, "main", hostile)
    with pytest.raises(SystemExit):
        core.main(["--help"])
    err = capsys.readouterr().err
    assert "\u202e" not in err and "\x1b" not in err
    assert "bad \\u202eword\\u001b[2J" in err
