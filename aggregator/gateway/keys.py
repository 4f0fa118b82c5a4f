"""The OHTTP gateway's keys (docs/anonymity.md#keys-and-rotation): made by `init-db`, rotated by
`rotate-ohttp-key`, a rotated key still accepted for an overlap; a survey naming a relay is
pinned to the current key when it is created. No Flask and no HTTP here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from deniable.aggregator.store import Store, SurveyRecord
from deniable.aggregator.store.gateway import StoredKey
from deniable.shared import ohttp
from deniable.shared.errors import SurveyError
from deniable.shared.route import KEYS_FIELD, RELAY_FIELD

#: How long a rotated key is still accepted, by default (`rotate-ohttp-key --overlap DAYS`).
DEFAULT_OVERLAP_DAYS = 30


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _text(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _gateway_key(stored: StoredKey) -> ohttp.GatewayKey:
    return ohttp.GatewayKey(stored.key_id, bytes.fromhex(stored.private_key))


def ensure_key(store: Store) -> None:
    """Give the gateway its first key if it has none (init-db, and a database made before)."""
    if not store.ohttp_keys(_text(_now())):
        store.add_first_ohttp_key(ohttp.new_gateway_key(0).private_key.hex(), _text(_now()))


def accepted_keys(store: Store) -> dict[int, ohttp.GatewayKey]:
    """The keys a request may be sealed to now, by key id (the current and those retiring)."""
    return {k.key_id: _gateway_key(k) for k in store.ohttp_keys(_text(_now()))}


def current_key(store: Store) -> ohttp.GatewayKey:
    """The key new surveys are pinned to (made first if there is none)."""
    ensure_key(store)
    found = store.ohttp_keys(_text(_now()))
    return _gateway_key(found[0])


def keys_document(store: Store) -> bytes:
    """GET /.well-known/ohttp-keys: the current key's configuration (application/ohttp-keys)."""
    return ohttp.encode_key_configs([current_key(store).config])


def current_keys_text(store: Store) -> str:
    """A survey's `ohttp_keys` for the current key (base64 of the keys document)."""
    return ohttp.keys_text([current_key(store).config])


def pin(store: Store, doc: Any) -> Any:
    """A survey document as the aggregator creates it: one naming a relay without `ohttp_keys`
    gets the current key; one naming `ohttp_keys` must name this gateway's current key (or be
    the survey already stored, unchanged). SurveyError says what is wrong."""
    if not isinstance(doc, dict) or doc.get(RELAY_FIELD) is None:
        return doc
    if doc.get(KEYS_FIELD) is None:
        return {**doc, KEYS_FIELD: current_keys_text(store)}
    try:
        named = ohttp.parse_keys_text(doc[KEYS_FIELD])
    except ohttp.OHTTPError as exc:
        raise SurveyError(f"{KEYS_FIELD}: {exc}") from None
    if named == current_key(store).config:
        return doc
    existing = store.get_survey(doc["id"]) if isinstance(doc.get("id"), str) else None
    if existing is not None and existing.resolved.get(KEYS_FIELD) == doc[KEYS_FIELD]:
        return doc  # the survey as it was created (the same document again)
    raise SurveyError(
        f"{KEYS_FIELD}: key {named.key_id} is not this aggregator's current key; leave "
        f"{KEYS_FIELD} out and the current one is filled in"
    )


@dataclass(frozen=True)
class Rotation:
    """A rotation: the new current key, the keys still accepted until they retire, and the
    open surveys pinned to a retiring key (they take no relayed report after it retires)."""

    current: ohttp.GatewayKey
    retiring: tuple[StoredKey, ...]
    stranded: tuple[tuple[SurveyRecord, StoredKey], ...]


def pinned_open_surveys(
    store: Store, keys: list[StoredKey]
) -> list[tuple[SurveyRecord, StoredKey]]:
    """The surveys still open whose `ohttp_keys` names one of `keys`, and which key."""
    by_id = {k.key_id: k for k in keys}
    found = []
    for record in store.list_surveys():
        text = record.resolved.get(KEYS_FIELD)
        if record.closed or not isinstance(text, str):
            continue
        try:
            config = ohttp.parse_keys_text(text)
        except ohttp.OHTTPError:
            continue
        key = by_id.get(config.key_id)
        if key is not None and _gateway_key(key).config == config:
            closes = record.resolved.get("closes_at")
            if not isinstance(closes, str) or key.retires_at is None or closes > key.retires_at:
                found.append((record, key))
    return found


def rotate(store: Store, overlap_days: float, *, force: bool = False) -> Rotation:
    """A new current key; the current one is accepted for `overlap_days` more. Refused
    (SurveyError naming them) when open surveys pinned to it would outlive the overlap,
    unless `force`."""
    if not 0 <= overlap_days <= 3650:
        raise SurveyError(f"--overlap must be 0 to 3650 days, got {overlap_days:g}")
    ensure_key(store)
    now = _now()
    retires = _text(now + timedelta(days=overlap_days))
    current = store.ohttp_keys(_text(now))[0]
    outliving = pinned_open_surveys(
        store, [StoredKey(current.key_id, current.private_key, current.created_at, retires)]
    )
    if outliving and not force:
        names = ", ".join(record.id for record, _ in outliving[:10])
        raise SurveyError(
            f"open surveys pinned to key {current.key_id} would take no relayed report after "
            f"{retires}: {names}; close them first, give a longer --overlap, or --force"
        )
    after = store.rotate_ohttp_key(ohttp.new_gateway_key(0).private_key.hex(), _text(now), retires)
    retiring = tuple(k for k in after if k.retires_at is not None)
    return Rotation(
        _gateway_key(after[0]), retiring, tuple(pinned_open_surveys(store, list(retiring)))
    )
