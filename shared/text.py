"""Text answers from large domains: the normalization and the hash every client shares.

docs/surveys.md fixes both, so a sketch built by one client (Python, the browser's module, another
language) is read by the aggregator with the same buckets: text is NFKC-normalized, its runs
of white space become one space, it is lower-cased; the hash is the first 8 bytes of the
sha256 of the UTF-8 text, as a big-endian integer.
"""

from __future__ import annotations

import hashlib
import unicodedata

#: The longest normalized text a respondent may give (characters).
MAX_TEXT_ANSWER = 200


def normalize_text(text: str) -> str:
    """docs/surveys.md's normalization: NFKC, white space collapsed and trimmed, lower case."""
    return " ".join(unicodedata.normalize("NFKC", text).split()).lower()


def text_hash(text: str) -> int:
    """H(s): the first 8 bytes of sha256(s as UTF-8) as a big-endian unsigned integer."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def sketch_column(j: int, text: str, width: int) -> int:
    """The column of `text` under hash function j of a count-mean sketch: H(f"{j}:{text}") mod m."""
    return text_hash(f"{j}:{text}") % width


def bloom_bits(cohort: int, text: str, hashes: int, bits: int) -> frozenset[int]:
    """RAPPOR's Bloom filter bits of `text` in `cohort`: H(f"{c}:{i}:{text}") mod k, i < h."""
    return frozenset(text_hash(f"{cohort}:{i}:{text}") % bits for i in range(hashes))
