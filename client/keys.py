"""Per-survey Ed25519 keys, stored raw in files only this user can read (mode 0600)."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from deniable.client.errors import ClientError
from deniable.shared import signing

KEY_BYTES = 32


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 if missing; return it."""
    if not path.is_dir():
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return path


class KeyStore:
    """A fresh key per (server, survey), so reports to different surveys are not linkable."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)

    def path_for(self, server: str, survey_id: str) -> Path:
        """The key file of one survey on one server."""
        digest = hashlib.sha256(server.encode("utf-8")).hexdigest()[:16]
        return self.directory / f"{survey_id}.{digest}.key"

    def existing_key(self, server: str, survey_id: str) -> Ed25519PrivateKey | None:
        """The survey's key if this device has one (never a new one)."""
        try:
            return self._load(self.path_for(server, survey_id))
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ClientError(
                f"cannot read the survey's key {exc.filename}: {exc.strerror}"
            ) from None

    def key_for(self, server: str, survey_id: str) -> Ed25519PrivateKey:
        """The survey's key, created on first use (atomically, so concurrent callers agree)."""
        try:
            return self._key_for(server, survey_id)
        except OSError as exc:
            where = exc.filename or self.directory
            raise ClientError(f"cannot keep the survey's key in {where}: {exc.strerror}") from None

    def _key_for(self, server: str, survey_id: str) -> Ed25519PrivateKey:
        path = self.path_for(server, survey_id)
        try:
            return self._load(path)
        except FileNotFoundError:
            pass
        ensure_private_dir(self.directory)
        key = signing.generate_key()
        temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(signing.private_key_bytes(key))
                handle.flush()
                os.fsync(handle.fileno())
            os.link(temp, path)  # fails if another process got there first: use its key
        except FileExistsError:
            return self._load(path)
        finally:
            temp.unlink(missing_ok=True)
        return key

    @staticmethod
    def _load(path: Path) -> Ed25519PrivateKey:
        if path.stat().st_mode & 0o077:  # copied or restored readable by others: not any more
            os.chmod(path, 0o600)
        raw = path.read_bytes()
        if len(raw) != KEY_BYTES:
            raise ClientError(
                f"key file {path} is damaged ({len(raw)} bytes, expected {KEY_BYTES})"
            )
        return signing.load_private_key(raw)
