"""The gateway's records on both stores (store/gateway.py): keys and their rotation, relay
batches counted per survey and plain answers."""

from __future__ import annotations

from typing import Any

import pytest

from deniable.aggregator.store.base import StoreError

T0, T1, T2, LATER = (
    "2026-01-01T00:00:00Z",
    "2026-01-02T00:00:00Z",
    "2026-01-03T00:00:00Z",
    "2026-02-01T00:00:00Z",
)


def test_keys_first_rotated_and_retired(store: Any) -> None:
    assert store.ohttp_keys(T0) == []
    assert store.add_first_ohttp_key("aa" * 32, T0)
    assert not store.add_first_ohttp_key("bb" * 32, T0)  # one first key, whoever races
    (first,) = store.ohttp_keys(T0)
    assert (first.key_id, first.private_key, first.retires_at) == (0, "aa" * 32, None)
    after = store.rotate_ohttp_key("cc" * 32, T1, T2)
    assert [(k.key_id, k.retires_at) for k in after] == [(1, None), (0, T2)]  # current first
    assert [k.key_id for k in store.ohttp_keys(T2)] == [1]  # retired at its time
    later = store.rotate_ohttp_key("dd" * 32, LATER, LATER)
    assert [k.key_id for k in later] == [2]  # key 0 deleted, key 1 retires at once


def test_all_key_ids_taken_is_refused(store: Any) -> None:
    store.add_first_ohttp_key("00" * 32, T0)
    for i in range(255):
        store.rotate_ohttp_key(f"{i:02x}" * 32, T0, LATER)
    with pytest.raises(StoreError, match="all 256"):
        store.rotate_ohttp_key("ff" * 32, T0, LATER)


def test_batches_are_counted_per_survey_and_plain_answers(store: Any) -> None:
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, T0)
    store.create_survey("t", "{}", "g" * 64, {"q": 2}, T0)
    assert store.smallest_batch("s") == 0
    for _ in range(3):
        store.count_in_batch("s", "a" * 32, "")
    store.count_in_batch("s", "a" * 32, "p1")
    store.count_in_batch("t", "a" * 32, "")
    assert store.smallest_batch("s") == 1  # the one report with plain answers p1
    assert store.smallest_batch("t") == 1
    store.count_in_batch("s", "a" * 32, "p1")
    assert store.smallest_batch("s") == 2
