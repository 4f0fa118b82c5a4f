"""Per-survey keys: 0600 files in a 0700 directory, one key per (server, survey)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from deniable.client import ClientError
from deniable.client.keys import KeyStore
from deniable.shared import signing


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_key_file_is_0600_and_directory_0700(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "home" / "keys")
    store.key_for("http://127.0.0.1:8000", "health-2026")
    path = store.path_for("http://127.0.0.1:8000", "health-2026")
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert len(path.read_bytes()) == 32


def test_same_survey_same_key_other_survey_other_key(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    first = signing.public_key_text(store.key_for("http://a", "s1"))
    again = signing.public_key_text(KeyStore(tmp_path / "keys").key_for("http://a", "s1"))
    other_survey = signing.public_key_text(store.key_for("http://a", "s2"))
    other_server = signing.public_key_text(store.key_for("http://b", "s1"))
    assert first == again
    assert len({first, other_survey, other_server}) == 3
    assert not [p for p in (tmp_path / "keys").iterdir() if p.name.startswith(".")]


def test_a_key_file_readable_by_others_is_made_private_on_use(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    key = store.key_for("http://h", "s")
    path = store.path_for("http://h", "s")
    path.chmod(0o644)
    again = store.key_for("http://h", "s")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert signing.public_key_text(again) == signing.public_key_text(key)


def test_a_key_path_that_is_a_directory_is_a_client_error(tmp_path: Path) -> None:
    store = KeyStore(tmp_path / "keys")
    store.path_for("http://h", "s").mkdir(parents=True)
    with pytest.raises(ClientError, match="cannot keep the survey's key"):
        store.key_for("http://h", "s")
