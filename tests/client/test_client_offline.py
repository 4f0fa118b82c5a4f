"""Client behaviour that needs no server: defaults, configuration and answer validation."""

from __future__ import annotations

from pathlib import Path

import pytest

from deniable.client import Client, ClientError, NetworkError, check_true_answers
from deniable.shared import DeniableError, Survey


@pytest.fixture
def survey() -> Survey:
    return Survey.from_dict(
        {
            "id": "s",
            "title": "S",
            "enrollment": "open",
            "questions": [
                {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
                {
                    "id": "party",
                    "text": "Party?",
                    "type": "categorical",
                    "options": ["A", "B", "C"],
                    "epsilon": 1.0,
                },
            ],
        }
    )


def test_defaults_come_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DENIABLE_HOME", str(tmp_path / "h"))
    monkeypatch.setenv("DENIABLE_EPSILON_CAP", "4.5")
    client = Client("http://127.0.0.1:8000/")
    assert client.data_dir == tmp_path / "h"
    assert client.epsilon_cap == 4.5
    assert client.url == "http://127.0.0.1:8000"
    monkeypatch.delenv("DENIABLE_EPSILON_CAP")
    assert Client("http://x", tmp_path).epsilon_cap == 10
    assert Client("http://x", tmp_path, epsilon_cap=2).epsilon_cap == 2


def test_bad_configuration_is_a_client_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DENIABLE_EPSILON_CAP", "lots")
    with pytest.raises(ClientError, match="DENIABLE_EPSILON_CAP"):
        Client("http://x", tmp_path)
    with pytest.raises(ClientError, match="positive"):
        Client("http://x", tmp_path, epsilon_cap=-1)
    with pytest.raises(ClientError, match="server address"):
        Client("127.0.0.1:8000", tmp_path, epsilon_cap=1)


def test_client_error_is_a_deniable_error() -> None:
    assert issubclass(ClientError, DeniableError)
    assert issubclass(NetworkError, ClientError)


def test_answers_are_checked_with_clear_messages(survey: Survey) -> None:
    assert check_true_answers(survey, {"smokes": "yes", "party": "C"}) == {"smokes": 1, "party": 2}
    assert check_true_answers(survey, {"smokes": False, "party": 0}) == {"smokes": 0, "party": 0}
    with pytest.raises(ClientError, match=r"'party' .*has no answer.*'A', 'B', 'C'"):
        check_true_answers(survey, {"smokes": "yes"})
    with pytest.raises(
        ClientError, match=r"'party': 'E' is not an answer; give one of 'A', 'B', 'C'"
    ):
        check_true_answers(survey, {"smokes": "yes", "party": "E"})
    with pytest.raises(ClientError, match="no question 'age'"):
        check_true_answers(survey, {"smokes": "yes", "party": "A", "age": 3})


def test_unreachable_server_is_a_network_error(tmp_path: Path) -> None:
    client = Client("http://127.0.0.1:9", tmp_path, timeout=2)
    with pytest.raises(
        NetworkError, match=r"could not reach http://127.0.0.1:9: connection refused"
    ):
        client.answer("s", {"smokes": "yes"})
    assert client.status().surveys_answered == 0


def test_status_and_sync_of_an_empty_ledger(tmp_path: Path) -> None:
    client = Client(data_dir=tmp_path)
    state = client.status()
    assert (state.surveys_answered, state.epsilon_spent, state.pending) == (0, 0, 0)
    assert client.sync() == []
