"""Server addresses: one key per server however it is spelled, so a survey is answered once."""

from __future__ import annotations

from pathlib import Path

import pytest
from client_support import TRUTH, FakeAggregator
from test_ledger import report

from deniable.client import Client, ClientError
from deniable.client.ledger import Ledger
from deniable.client.urls import normalize_url, same_server


@pytest.mark.parametrize(
    ("spelled", "key"),
    [
        ("HTTP://Example.ORG:80/", "http://example.org"),
        ("https://example.org:443", "https://example.org"),
        ("https://example.org:80", "https://example.org:80"),
        ("http://example.org:0080/api/", "http://example.org/api"),
        ("http://127.0.0.1:08000", "http://127.0.0.1:8000"),
        ("http://[::1]:80", "http://[::1]"),
        ("http://[::1]:8000/", "http://[::1]:8000"),
        (" http://user@Host:8000 ", "http://user@host:8000"),
    ],
)
def test_one_server_has_one_key(spelled: str, key: str) -> None:
    assert normalize_url(spelled) == key
    assert normalize_url(key) == key


@pytest.mark.parametrize("url", ["example.org", "ftp://example.org", "http://", "http://x:0"])
def test_what_is_no_server_address_is_a_client_error(url: str) -> None:
    with pytest.raises(ClientError):
        normalize_url(url)


def test_same_server_reads_addresses_stored_by_older_versions() -> None:
    assert same_server("http://example.org:80", "http://example.org")
    assert same_server("http://example.org:80/", "HTTP://EXAMPLE.ORG")
    assert not same_server("http://example.org:8080", "http://example.org")
    assert not same_server("not a url", "http://example.org")


def test_the_ledger_finds_a_report_stored_under_another_spelling(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path)
    with ledger.transaction() as tx:
        tx.insert("http://example.org:80", "One", 1.0, report("one"))  # as stored before
    found = ledger.get("http://example.org", "one")
    assert found is not None and found.entry.survey == "one"
    with ledger.transaction() as tx:
        assert tx.get("http://example.org", "one") is not None
    assert ledger.get("http://example.org:8080", "one") is None


def test_answering_again_by_another_spelling_gives_the_stored_report(home: Path) -> None:
    """Else the second spelling would send a second randomization, to average with the first."""
    with FakeAggregator({}) as fake:
        port = fake.url.rsplit(":", 1)[1]
        first = Client(fake.url, home).answer("fake", TRUTH)
        again = Client(f"HTTP://127.0.0.1:0{port}/", home).answer("fake", TRUTH)
    assert again.report_id == first.report_id
    assert again.answers == first.answers
    assert len(Ledger(home).entries()) == 1
