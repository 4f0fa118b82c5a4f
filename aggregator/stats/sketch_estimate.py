"""Frequencies of candidate strings from a text question's sketch tallies (cms, hcms, rappor).

Every estimator here is linear in the reports: f_hat = mean over reports of u_r + c, with u_r
a vector (one entry per candidate) that depends only on the report's answer. The tallies are
the counts of each counter, so the mean of u_r and (for the standard error) the mean of u_r^2
come straight from them, without re-reading a report:

- `cms` / `hcms`, Apple's estimator (`joint=False`): f_hat(d) = (a_d - 1/m) / (1 - 1/m),
  a_d the mean over reports of the unbiased indicator that the report's column under its hash
  j is d's. Unbiased only on average over random hash functions: a frequent word sharing a
  column with d lifts d.
- `cms` / `hcms`, joint decoding (`joint=True`, the default): the aggregator knows every
  candidate's columns, so E[a] - 1/m = M f with M[d, d'] = (1/k) #{j: h_j(d) = h_j(d')} - 1/m,
  and f_hat = M^-1 (a - 1/m) is unbiased whenever the candidates hold the answers given (other
  answers spread evenly over the columns).
- `rappor`: the paper's decoding by regression over the candidates' Bloom bits per cohort:
  t_hat[c, i] = (Y[c, i] - p* N_c) / (q* - p*) estimates how many respondents of cohort c have
  Bloom bit i, E t_hat = (n/m) B f, and f_hat = least squares over all (c, i).

Standard errors are the sample standard deviation of u_r over sqrt(n) (n - 1 in the variance):
for cms and rappor the products of two bits of one report, which no tally holds, enter
through their expectation (zero for cms; rappor: the share whose Bloom filter sets both).
Intervals are normal, clipped to [0, 1].
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import bloom_bits, sketch_column

#: Candidates decoded at once when building the per-counter weights (bounds the memory).
CHUNK = 128


class SketchDecodeError(ValueError):
    """The candidates cannot be told apart by this sketch (a singular system); says which."""


def fwht(x: np.ndarray) -> np.ndarray:
    """The Walsh-Hadamard transform along axis 0 (length a power of two), unnormalized:
    out[l] = sum_c (-1)^popcount(l & c) x[c]."""
    out = np.array(x, dtype=np.float64, copy=True)
    m = out.shape[0]
    h = 1
    while h < m:
        view = out.reshape(m // (2 * h), 2, h, *out.shape[1:])
        a, b = view[:, 0].copy(), view[:, 1].copy()
        view[:, 0], view[:, 1] = a + b, a - b
        h *= 2
    return out


@dataclass(frozen=True)
class Decoder:
    """The linear maps from a sketch's counters to the candidates' estimates."""

    candidates: tuple[str, ...]
    first: np.ndarray  # [D, slots]: sum over reports of u_r = first @ counts
    second: np.ndarray  # [D, slots]: sum of u_r^2 (tallied part) = second @ counts
    offset: np.ndarray  # [D]: f_hat = first @ counts / n + offset
    cross: np.ndarray | None  # rappor: [D, D] cross-bit terms per unit share, per report

    def estimate(
        self, n: int, counts: np.ndarray, z: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, stderr, ci_low, ci_high) per candidate; counts may carry leading axes
        (simulated trials) before the counters."""
        counts = np.asarray(counts, dtype=np.float64)
        total = counts @ self.first.T
        est = total / n + self.offset
        squares = counts @ self.second.T
        if self.cross is not None:
            # The expected products of two set bits: the candidates' shares (clipped) times
            # each one's cross terms, summed over the n reports.
            squares = squares + n * (np.clip(est, 0.0, None) @ self.cross.T)
        with np.errstate(divide="ignore", invalid="ignore"):
            variance = np.maximum(squares - total * total / n, 0.0) / (n - 1.0)
            stderr = np.sqrt(variance / n)
        if n < 2:
            stderr = np.full_like(est, np.nan)
        low = np.clip(est - z * stderr, 0.0, 1.0)
        high = np.clip(est + z * stderr, 0.0, 1.0)
        return est, stderr, low, high

    @property
    def nbytes(self) -> int:
        """The bytes its arrays hold (what the decoder cache counts)."""
        arrays = (self.first, self.second, self.offset, self.cross)
        return sum(a.nbytes for a in arrays if a is not None) + sum(map(len, self.candidates))


def decoder_cells(sketch: Sketch, count: int) -> int:
    """The float cells a decoder of `count` candidates needs, checked against a limit before it
    is built: count x the sketch's counters (its two maps; RAPPOR's Bloom matrix and its
    pseudo-inverse) plus count x count (the collision matrix and its inverse, RAPPOR's cross
    terms). Peak memory is a small multiple of 8 bytes per cell (docs/operations.md)."""
    return count * (sketch.slots + count)


def _columns(sketch: CMS | HCMS, candidates: Sequence[str]) -> np.ndarray:
    """[k, D]: each candidate's column under each hash function."""
    return np.array(
        [[sketch_column(j, d, sketch.m) for d in candidates] for j in range(sketch.k)],
        dtype=np.int64,
    )


def _count_mean_weights(sketch: CMS | HCMS, columns: np.ndarray, joint: bool) -> np.ndarray:
    """W: Apple's I / (1 - 1/m), or the inverse of M (joint decoding)."""
    k, d = columns.shape
    m = sketch.m
    if not joint:
        return np.eye(d) / (1.0 - 1.0 / m)
    # The share of hash functions under which two candidates share a column, one function at a
    # time (k x D x D booleans at once would dwarf the decoder itself).
    shared = np.zeros((d, d), dtype=np.int64)
    for row in columns:
        shared += row[:, None] == row[None, :]
    matrix = shared / k - 1.0 / m
    try:
        weights = np.linalg.inv(matrix)
    except np.linalg.LinAlgError:
        weights = None
    if weights is None or not np.all(np.isfinite(weights)) or np.linalg.cond(matrix) > 1e8:
        twins = _first_twins(columns)
        which = f": {twins} share every column" if twins else ""
        raise SketchDecodeError(
            f"the sketch cannot tell these candidates apart{which}; use more hash functions"
        )
    return weights


def _first_twins(columns: np.ndarray) -> tuple[int, int] | None:
    """The first pair (a, b), a < b, of candidates with the same column under every hash."""
    _, group = np.unique(columns.T, axis=0, return_inverse=True)
    group = group.reshape(-1)
    for a in range(columns.shape[1]):
        others = np.flatnonzero(group[a + 1 :] == group[a])
        if others.size:
            return (a, a + 1 + int(others[0]))
    return None


def _hcms_decoder(sketch: HCMS, candidates: Sequence[str], joint: bool) -> Decoder:
    columns = _columns(sketch, candidates)
    weights = _count_mean_weights(sketch, columns, joint)
    k, m, d = sketch.k, sketch.m, len(candidates)
    gap = 2.0 * float(sketch.keep) - 1.0
    first = np.zeros((d, 2 * k * m))
    second = np.zeros((d, 2 * k * m))
    for start in range(0, d, CHUNK):
        rows = weights[start : start + CHUNK]  # [c, D]
        for j in range(k):
            # U[col, c] = sum of W[c, d'] over candidates d' in column col; V = H U.
            spread = np.zeros((m, rows.shape[0]))
            np.add.at(spread, columns[j], rows.T)
            v = fwht(spread) / gap  # [m, c]: u_r for a report (j, l, b=1); b=0 is its negative
            block = slice(2 * j * m, 2 * (j + 1) * m)
            first[start : start + CHUNK, block] = np.stack([-v, v], axis=1).reshape(2 * m, -1).T
            second[start : start + CHUNK, block] = np.repeat(v * v, 2, axis=0).T
    offset = -weights.sum(axis=1) / m
    return Decoder(tuple(candidates), first, second, offset, None)


def _cms_decoder(sketch: CMS, candidates: Sequence[str], joint: bool) -> Decoder:
    columns = _columns(sketch, candidates)
    weights = _count_mean_weights(sketch, columns, joint)
    k, m, d = sketch.k, sketch.m, len(candidates)
    p, q = float(sketch.keep), 1.0 - float(sketch.keep)
    gap = p - q
    slots = k * m + k
    first = np.zeros((d, slots))
    second = np.zeros((d, slots))
    for j in range(k):
        spread = np.zeros((m, d))
        np.add.at(spread, columns[j], weights.T)  # U[col, d] = sum of W[d, d'] in col
        u = spread.T  # [D, m]
        first[:, j * m : (j + 1) * m] = u / gap
        first[:, k * m + j] = -q * u.sum(axis=1) / gap
        # A bit of 1 contributes ((1 - q)/gap)^2, a bit of 0 (q/gap)^2, per unit weight^2.
        second[:, j * m : (j + 1) * m] = (u * u) * ((1 - q) ** 2 - q**2) / gap**2
        second[:, k * m + j] = (u * u).sum(axis=1) * q**2 / gap**2
    offset = -weights.sum(axis=1) / m
    return Decoder(tuple(candidates), first, second, offset, None)


def _full_rank_pinv(bloom: np.ndarray) -> np.ndarray:
    """np.linalg.pinv(bloom), the very floats, after checking its columns are independent as
    np.linalg.matrix_rank would: one singular value decomposition instead of two."""
    u, s, vt = np.linalg.svd(bloom, full_matrices=False)
    top = s.max(initial=0.0)
    if np.count_nonzero(s > top * max(bloom.shape) * np.finfo(s.dtype).eps) < bloom.shape[1]:
        raise SketchDecodeError(
            "the Bloom filters cannot tell these candidates apart; use more bits or cohorts"
        )
    large = s > 1e-15 * top  # pinv's default cutoff
    s = np.divide(1, s, where=large, out=s)
    s[~large] = 0
    return np.matmul(vt.T, s[:, None] * u.T)


def _rappor_decoder(sketch: RAPPOR, candidates: Sequence[str]) -> Decoder:
    k, m, d = sketch.k, sketch.m, len(candidates)
    bloom = _bloom_matrix(sketch, candidates)
    # f_hat = L t_hat with L = pinv((n/m) B): per report, u_r = m pinv(B) x_r.
    lsq = m * _full_rank_pinv(bloom)  # [D, m k]
    ps, qs = float(sketch.unset_one), float(sketch.set_one)
    gap = qs - ps
    first = np.zeros((d, m * k + m))
    second = np.zeros((d, m * k + m))
    # In place: no [D, m k] temporaries beside lsq and the two maps.
    np.divide(lsq, gap, out=first[:, : m * k])
    np.multiply(lsq, lsq, out=second[:, : m * k])
    second[:, : m * k] *= (1 - ps) ** 2 - ps**2
    second[:, : m * k] /= gap**2
    cross = np.zeros((d, d))
    for c in range(m):
        block = lsq[:, c * k : (c + 1) * k]
        squares = block * block
        first[:, m * k + c] = -ps * block.sum(axis=1) / gap
        second[:, m * k + c] = squares.sum(axis=1) * ps**2 / gap**2
        # Two set bits of one report: x_a x_b has expectation 1 when both are in the truth's
        # Bloom filter; the cohort holds 1/m of the reports. Column i: the sums over the bits
        # candidate i sets (its Bloom column), for every candidate at once.
        bits = bloom[c * k : (c + 1) * k]  # [k, D] of 0/1
        inside = block @ bits
        cross += (inside * inside - squares @ bits) / m
    return Decoder(tuple(candidates), first, second, np.zeros(d), cross)


def decoder(sketch: Sketch, candidates: Sequence[str], *, joint: bool = True) -> Decoder:
    """The decoder of `sketch` for these (normalized, distinct) candidate strings."""
    if not candidates:
        raise SketchDecodeError("give at least one candidate string to estimate")
    if len(set(candidates)) != len(candidates):
        raise SketchDecodeError("candidates must be distinct")
    if isinstance(sketch, HCMS):
        return _hcms_decoder(sketch, candidates, joint)
    if isinstance(sketch, CMS):
        return _cms_decoder(sketch, candidates, joint)
    if isinstance(sketch, RAPPOR):
        return _rappor_decoder(sketch, candidates)
    raise TypeError(f"no decoder for {type(sketch).__name__}")


class DecoderCache:
    """Decoders kept between requests within a budget in bytes, the least recently used dropped
    first; a decoder larger than the whole budget is built for its request and not kept.
    Thread-safe (a threaded server shares one)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[tuple[Sketch, tuple[str, ...]], Decoder] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._building = threading.Lock()

    @property
    def nbytes(self) -> int:
        """The bytes of the decoders kept now."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._kept)

    def get(self, sketch: Sketch, candidates: tuple[str, ...], budget: int) -> Decoder:
        """The decoder of these candidates, kept or built (then kept if it fits `budget`)."""
        key = (sketch, candidates)
        with self._lock:
            found = self._kept.get(key)
            if found is not None:
                self._kept.move_to_end(key)
                return found
        # One build at a time in a process: concurrent requests cannot multiply the memory a
        # build takes, and a request waiting for the same decoder finds it built.
        with self._building:
            with self._lock:
                found = self._kept.get(key)
                if found is not None:
                    self._kept.move_to_end(key)
                    return found
            built = decoder(sketch, candidates)
        with self._lock:
            if key not in self._kept and built.nbytes <= budget:
                self._kept[key] = built
                self._bytes += built.nbytes
            while self._bytes > budget:
                _, dropped = self._kept.popitem(last=False)
                self._bytes -= dropped.nbytes
        return built

    def clear(self) -> None:
        """Drop every kept decoder."""
        with self._lock:
            self._kept.clear()
            self._bytes = 0


#: The process's decoders (results requests of every survey share the budget).
DECODERS = DecoderCache()


def _bloom_matrix(sketch: RAPPOR, candidates: Sequence[str]) -> np.ndarray:
    """[m k, D]: 1 where candidate d sets bit i in cohort c (row c k + i)."""
    k, m = sketch.k, sketch.m
    bloom = np.zeros((m * k, len(candidates)))
    for c in range(m):
        for i, cand in enumerate(candidates):
            bloom[[c * k + b for b in bloom_bits(c, cand, sketch.h, k)], i] = 1.0
    return bloom


def rappor_selection(
    sketch: RAPPOR, candidates: Sequence[str], n: int, counts: np.ndarray, *, sweeps: int = 500
) -> tuple[str, ...]:
    """RAPPOR's first step when the candidates outnumber what the Bloom bits can tell apart
    (the paper's sparse fit): non-negative least squares of the debiased bit shares on the
    candidates' Bloom bits, by coordinate descent; most coefficients land at zero. The
    candidates it keeps, strongest first, as many as the bits can resolve."""
    k, m = sketch.k, sketch.m
    bloom = _bloom_matrix(sketch, candidates)
    counts = np.asarray(counts, dtype=np.float64)
    ones, per_cohort = counts[: m * k], np.repeat(counts[m * k :], k)
    gap = float(sketch.set_one - sketch.unset_one)
    target = (ones - float(sketch.unset_one) * per_cohort) / gap * m / max(n, 1)
    beta = np.zeros(len(candidates))
    residual = target.copy()
    norms = (bloom * bloom).sum(axis=0)
    for _ in range(sweeps):
        moved = 0.0
        for j in range(len(candidates)):
            if norms[j] == 0:
                continue
            new = max(0.0, beta[j] + bloom[:, j] @ residual / norms[j])
            if new != beta[j]:
                residual -= bloom[:, j] * (new - beta[j])
                moved = max(moved, abs(new - beta[j]))
                beta[j] = new
        if moved < 1e-9:
            break
    kept: list[int] = []
    for j in np.argsort(-beta, kind="stable"):
        if beta[j] <= 0:
            break
        if np.linalg.matrix_rank(bloom[:, [*kept, j]]) == len(kept) + 1:
            kept.append(int(j))
    return tuple(candidates[j] for j in kept)
