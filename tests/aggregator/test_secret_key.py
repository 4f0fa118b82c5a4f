"""The data directory's session key: created once, whoever asks for it first and at once."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

from deniable.aggregator.web.app import SECRET_KEY_FILE, load_or_create_secret_key


def race(data_dir: Path, threads: int) -> list[str | BaseException]:
    """load_or_create_secret_key from `threads` threads released at the same moment."""
    start = threading.Barrier(threads)
    found: list[str | BaseException] = []

    def ask() -> None:
        start.wait()
        try:
            found.append(load_or_create_secret_key(data_dir))
        except BaseException as exc:  # the test reports whatever was raised
            found.append(exc)

    workers = [threading.Thread(target=ask, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(30)
    return found


def test_threads_racing_on_a_fresh_data_dir_share_one_key(tmp_path: Path) -> None:
    for attempt in range(40):
        data_dir = tmp_path / f"data{attempt}"
        found = race(data_dir, threads=8)
        assert len(found) == 8
        assert not [f for f in found if isinstance(f, BaseException)], found
        key = (data_dir / SECRET_KEY_FILE).read_text("ascii").strip()
        assert set(found) == {key}
        assert len(key) >= 40
        assert stat.S_IMODE((data_dir / SECRET_KEY_FILE).stat().st_mode) == 0o600
        assert [p.name for p in data_dir.iterdir()] == [SECRET_KEY_FILE]


def test_an_existing_key_is_kept(tmp_path: Path) -> None:
    (tmp_path / SECRET_KEY_FILE).write_text("kept-key\n", "ascii")
    assert load_or_create_secret_key(tmp_path) == "kept-key"
