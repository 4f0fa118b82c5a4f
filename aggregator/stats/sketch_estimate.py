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
  Bloom bit i, E t_hat = (n/m) B f, and f_hat = least squares over all (c, i), which for the
  full-rank B decoded here is (B'B)^-1 B' t_hat m / n.

Standard errors are the sample standard deviation of u_r over sqrt(n) (n - 1 in the variance):
for cms and rappor the products of two bits of one report, which no tally holds, enter
through their expectation (zero for cms; rappor: the share whose Bloom filter sets both).
Intervals are normal, clipped to [0, 1].

Cost (docs/statistics.md, "What decoding costs"): with W the D x D weights (M^-1, Apple's
diagonal, or m (B'B)^-1), every sum is taken at the candidates' own cells, never over the
sketch's: the first moment is W times the debiased counts gathered at each candidate's cells
(hcms: after a Walsh-Hadamard transform of each hash row's counts), and the tallied second
moment is diag(W S W') with S[d, d'] the counts' weights summed over the cells d and d' share
(hcms: H[l, a] H[l, b] = H[l, a xor b] turns it into a gather of each row's transformed
totals). Memory is candidates x (cells a candidate touches + candidates): `decoder_cells`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import bloom_bits, sketch_column

if TYPE_CHECKING:  # scipy is imported where it is used: 0.15 s at every start otherwise
    import scipy.sparse as sparse

#: Floats of the per-request [rows, D, D] overlap matrices held at once (simulated trials are
#: decoded this many cells at a time; one survey's tallies always fit).
CHUNK_CELLS = 1 << 20

#: Candidates whose Bloom bits are independent: each one's squared distance from the span of
#: those before it (a Cholesky pivot of B'B) is above this share of its own squared length.
RANK_TOLERANCE = 1e-10


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


def touched_cells(sketch: Sketch) -> int:
    """The counters one candidate is read at: one per hash function (cms, hcms), up to h Bloom
    bits in each cohort (rappor)."""
    if isinstance(sketch, RAPPOR):
        return sketch.m * sketch.h
    assert isinstance(sketch, CMS | HCMS)
    return sketch.k


def decoder_cells(sketch: Sketch, count: int) -> int:
    """The float cells a decoder of `count` candidates needs, checked against a limit before it
    is built: count x the cells each candidate touches (its incidence: k for cms and hcms,
    cohorts x hashes for rappor) plus count x count (the weights, the collision or Gram matrix,
    the overlaps of a request, RAPPOR's cross terms). Peak memory is a small multiple of 8
    bytes per cell (docs/settings.md, DENIABLE_MAX_DECODER_CELLS)."""
    return count * (touched_cells(sketch) + count)


@dataclass(frozen=True, eq=False)
class Decoder(ABC):
    """The linear map from a sketch's counters to the candidates' estimates, as W (D x D)
    applied to what the counters hold at each candidate's cells."""

    candidates: tuple[str, ...]
    weights: np.ndarray  # [D, D]: W; sum over reports of u_r = W @ gathered(counts)
    offset: np.ndarray  # [D]: f_hat = sum of u_r / n + offset
    cross: np.ndarray | None  # rappor: [D, D] cross-bit terms per unit share, per report

    @abstractmethod
    def _gathered(self, counts: np.ndarray) -> np.ndarray:
        """[rows, D]: the debiased counts read at each candidate's cells, summed."""

    @abstractmethod
    def _overlaps(self, counts: np.ndarray) -> np.ndarray:
        """[rows, D, D]: S, the second moment's weights of the cells two candidates share."""

    @abstractmethod
    def _overlap_diagonal(self, counts: np.ndarray) -> np.ndarray:
        """[rows, D]: the diagonal of S alone (all Apple's diagonal weights need)."""

    @property
    def _diagonal(self) -> bool:
        """Whether W is diagonal (Apple's estimator): then only S's diagonal is read."""
        w = self.weights
        return bool(np.array_equal(np.diag(np.diag(w)), w))

    def _squares(self, counts: np.ndarray) -> np.ndarray:
        """[rows, D]: the tallied sum of u_r^2, diag(W S W'), a chunk of rows at a time."""
        w = self.weights
        if self._diagonal:
            return np.diag(w) ** 2 * self._overlap_diagonal(counts)
        d = len(self.candidates)
        out = np.empty((counts.shape[0], d))
        step = max(1, CHUNK_CELLS // (d * d))
        for start in range(0, counts.shape[0], step):
            overlaps = self._overlaps(counts[start : start + step])
            out[start : start + step] = np.einsum("tdb,db->td", w @ overlaps, w)
        return out

    def moments(
        self, n: int, counts: np.ndarray, shares: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sum of u_r, sum of u_r^2) per candidate over the n reports whose counters are
        `counts` (leading axes allowed); RAPPOR's cross terms are weighted by `shares`, by
        default the estimates clipped at 0."""
        counts = np.asarray(counts, dtype=np.float64)
        lead, d = counts.shape[:-1], len(self.candidates)
        rows = counts.reshape(-1, counts.shape[-1])
        total = self._gathered(rows) @ self.weights.T
        squares = self._squares(rows)
        if self.cross is not None:
            if shares is None:
                shares = np.clip(total / n + self.offset, 0.0, None)
            # The expected products of two set bits: the candidates' shares times each one's
            # cross terms, summed over the n reports.
            squares = squares + n * (np.reshape(shares, (-1, d)) @ self.cross.T)
        return total.reshape(*lead, d), squares.reshape(*lead, d)

    def estimate(
        self, n: int, counts: np.ndarray, z: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(estimate, stderr, ci_low, ci_high) per candidate; counts may carry leading axes
        (simulated trials) before the counters."""
        total, squares = self.moments(n, counts)
        est = total / n + self.offset
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
        arrays = [self.weights, self.offset, self.cross, *self._parts()]
        return sum(a.nbytes for a in arrays if a is not None) + sum(map(len, self.candidates))

    def _parts(self) -> list[np.ndarray]:
        """The mechanism's own arrays, for nbytes."""
        return []


def _sparse_parts(matrix: sparse.csr_array) -> list[np.ndarray]:
    return [matrix.data, matrix.indices, matrix.indptr]


def _gram(incidence: sparse.csr_array, weights: np.ndarray | None = None) -> np.ndarray:
    """[D, D]: A' diag(weights) A (A'A without weights) of a 0/1 incidence A [cells, D], the
    sum over the cells two candidates share: only the pairs that share one are touched, a
    block of at most CHUNK_CELLS incidences at a time (no copy of the whole of A)."""
    import scipy.sparse as sparse

    cells, d = incidence.shape
    indptr = incidence.indptr
    out = np.zeros((d, d))
    start = 0
    while start < cells:
        last = int(np.searchsorted(indptr, indptr[start] + CHUNK_CELLS, side="right")) - 1
        stop = min(cells, max(last, start + 1))
        block = incidence[start:stop]
        if weights is not None:
            rows = np.repeat(np.arange(stop - start), np.diff(block.indptr))
            scaled = sparse.csr_array(
                (weights[start:stop][rows], block.indices, block.indptr), shape=block.shape
            )
        else:
            scaled = block
        out += (block.T @ scaled).toarray()
        start = stop
    return out


@dataclass(frozen=True, eq=False)
class IncidenceDecoder(Decoder):
    """cms and rappor: a report reads 0/1 cells, `groups` groups of `width` (cms: a hash
    function's m columns; rappor: a cohort's k bits), its group's report count last in the
    tally. A cell reads 1 with probability `background` unless the answer marks it."""

    incidence: sparse.csr_array  # [groups * width, D]: A[cell, d] = 1 where d is read
    groups: int
    width: int
    background: float  # P[1 | the cell is not the answer's]: cms q*, rappor's p* (unset_one)
    gap: float  # P[1 | marked] - background

    def _split(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ones [rows, cells], each cell's group's report count [rows, cells])."""
        cells = self.groups * self.width
        return counts[:, :cells], np.repeat(counts[:, cells:], self.width, axis=1)

    def _gathered(self, counts: np.ndarray) -> np.ndarray:
        ones, reports = self._split(counts)
        debiased = (ones - self.background * reports) / self.gap
        return (self.incidence.T @ debiased.T).T

    def _weights(self, counts: np.ndarray) -> np.ndarray:
        """[rows, cells]: per unit weight^2, a cell's (x - background)^2 / gap^2 over its
        reports: a 1 adds (1 - b)^2, a 0 adds b^2."""
        ones, reports = self._split(counts)
        b = self.background
        return (ones * ((1 - b) ** 2 - b**2) + reports * b**2) / self.gap**2

    def _overlaps(self, counts: np.ndarray) -> np.ndarray:
        return np.stack([_gram(self.incidence, weights) for weights in self._weights(counts)])

    def _overlap_diagonal(self, counts: np.ndarray) -> np.ndarray:
        return (self.incidence.T @ self._weights(counts).T).T

    def _parts(self) -> list[np.ndarray]:
        return _sparse_parts(self.incidence)


@dataclass(frozen=True, eq=False)
class HadamardDecoder(Decoder):
    """hcms: a report is one bit b of row l of the Hadamard code of its column under hash j,
    tallied as count(j, l, b) at 2 (j m + l) + b."""

    columns: np.ndarray  # [k, D]: each candidate's column under each hash function
    width: int  # m
    gap: float  # 2 keep - 1

    def _rows(self, counts: np.ndarray, sign: int) -> np.ndarray:
        """[rows, k, m]: H applied to each hash row's count(1) + sign count(0)."""
        split = counts.reshape(counts.shape[0], self.columns.shape[0], self.width, 2)
        per_row = split[..., 1] + sign * split[..., 0]
        return np.moveaxis(fwht(np.moveaxis(per_row, 2, 0)), 0, 2)

    def _gathered(self, counts: np.ndarray) -> np.ndarray:
        k = self.columns.shape[0]
        transformed = self._rows(counts, -1)  # H net_j
        return transformed[:, np.arange(k)[:, None], self.columns].sum(axis=1) / self.gap

    def _overlaps(self, counts: np.ndarray) -> np.ndarray:
        transformed = self._rows(counts, 1) / self.gap**2  # H tot_j
        d = len(self.candidates)
        out = np.zeros((counts.shape[0], d, d))
        for j, col in enumerate(self.columns):
            # sum_l tot_j[l] H[l, a] H[l, b] = (H tot_j)[a xor b].
            out += transformed[:, j, col[:, None] ^ col[None, :]]
        return out

    @property
    def spreads(self) -> bool:
        """Whether the second moment is cheaper one hash row at a time as the transform of W
        spread over the m columns (m log2 m < 2 D: a narrow sketch, many candidates; D^2 + D m
        log2 m a row) than through S (a D x D gather a row)."""
        m = self.width
        return m * (m.bit_length() - 1) < 2 * len(self.candidates)

    def _squares(self, counts: np.ndarray) -> np.ndarray:
        import scipy.sparse as sparse

        if self._diagonal or not self.spreads:
            return super()._squares(counts)
        k, d = self.columns.shape
        split = counts.reshape(counts.shape[0], k, self.width, 2)
        totals = split[..., 0] + split[..., 1]  # [rows, k, m]: reports per (j, l)
        out = np.zeros((counts.shape[0], d))
        transposed = np.ascontiguousarray(self.weights.T)  # read once per row, in order
        ones, pointers = np.ones(d), np.arange(d + 1)
        for j, col in enumerate(self.columns):
            # One 1 a column, at h_j(a): built as CSC directly (through COO, the construction cost
            # more than the product; 100 questions of k 1024 spent seconds there).
            one_hot = sparse.csc_array((ones, col, pointers), shape=(self.width, d))
            # wave[l, d] = sum_a W[d, a] H[l, h_j(a)]: a report (j, l, b)'s u_r, up to its sign.
            wave = fwht(one_hot @ transposed)
            out += totals[:, j, :] @ (wave * wave)
        return out / self.gap**2

    def _overlap_diagonal(self, counts: np.ndarray) -> np.ndarray:
        transformed = self._rows(counts, 1) / self.gap**2
        total = transformed[:, :, 0].sum(axis=1)  # every candidate's own column: a xor a = 0
        return np.repeat(total[:, None], len(self.candidates), axis=1)

    def _parts(self) -> list[np.ndarray]:
        return [self.columns]


def _columns(sketch: CMS | HCMS, candidates: Sequence[str]) -> np.ndarray:
    """[k, D]: each candidate's column under each hash function."""
    return np.array(
        [[sketch_column(j, d, sketch.m) for d in candidates] for j in range(sketch.k)],
        dtype=np.int64,
    )


def _column_incidence(columns: np.ndarray, m: int) -> sparse.csr_array:
    """[k m, D]: 1 at (j m + column of d under hash j, d), k ones per candidate."""
    import scipy.sparse as sparse

    k, d = columns.shape
    rows = (np.arange(k)[:, None] * m + columns).ravel()
    return sparse.csr_array((np.ones(k * d), (rows, np.tile(np.arange(d), k))), shape=(k * m, d))


def _count_mean_weights(
    sketch: CMS | HCMS, columns: np.ndarray, incidence: sparse.csr_array, joint: bool
) -> np.ndarray:
    """W: Apple's I / (1 - 1/m), or the inverse of M (joint decoding)."""
    k, d = columns.shape
    m = sketch.m
    if not joint:
        return np.eye(d) / (1.0 - 1.0 / m)
    # How many hash functions put two candidates in one column: A'A over the sparse incidence
    # (each hash row's groups of candidates sharing a column, never k x D x D booleans).
    matrix = _gram(incidence) / k - 1.0 / m
    # M is symmetric: its eigenvalues give its condition number (as np.linalg.cond's singular
    # values would) and its inverse in one decomposition.
    values, vectors = np.linalg.eigh(matrix)
    size = np.abs(values)
    if not np.all(np.isfinite(values)) or size.min() <= size.max() / 1e8:
        twins = _first_twins(columns)
        which = f": {twins} share every column" if twins else ""
        raise SketchDecodeError(
            f"the sketch cannot tell these candidates apart{which}; use more hash functions"
        )
    return (vectors / values) @ vectors.T


def _first_twins(columns: np.ndarray) -> tuple[int, int] | None:
    """The first pair (a, b), a < b, of candidates with the same column under every hash."""
    _, group = np.unique(columns.T, axis=0, return_inverse=True)
    group = group.reshape(-1)
    for a in range(columns.shape[1]):
        others = np.flatnonzero(group[a + 1 :] == group[a])
        if others.size:
            return (a, a + 1 + int(others[0]))
    return None


def _offset(weights: np.ndarray, m: int) -> np.ndarray:
    """cms and hcms: f_hat = W (a - 1/m), so the constant part is -W 1 / m."""
    return -weights.sum(axis=1) / m


def _hcms_decoder(sketch: HCMS, candidates: Sequence[str], joint: bool) -> Decoder:
    columns = _columns(sketch, candidates)
    weights = _count_mean_weights(sketch, columns, _column_incidence(columns, sketch.m), joint)
    return HadamardDecoder(
        tuple(candidates),
        weights,
        _offset(weights, sketch.m),
        None,
        columns,
        sketch.m,
        2.0 * float(sketch.keep) - 1.0,
    )


def _cms_decoder(sketch: CMS, candidates: Sequence[str], joint: bool) -> Decoder:
    columns = _columns(sketch, candidates)
    incidence = _column_incidence(columns, sketch.m)
    weights = _count_mean_weights(sketch, columns, incidence, joint)
    p, q = float(sketch.keep), 1.0 - float(sketch.keep)
    return IncidenceDecoder(
        tuple(candidates),
        weights,
        _offset(weights, sketch.m),
        None,
        incidence,
        sketch.k,
        sketch.m,
        q,
        p - q,
    )


def _bloom_incidence(sketch: RAPPOR, candidates: Sequence[str]) -> sparse.csr_array:
    """[m k, D]: B, 1 where candidate d sets bit i in cohort c (row c k + i); at most h ones
    per cohort and candidate."""
    import scipy.sparse as sparse

    k, m, h, d = sketch.k, sketch.m, sketch.h, len(candidates)
    rows = np.empty(m * d * h, dtype=np.int32)
    cols = np.empty(m * d * h, dtype=np.int32)
    filled = 0
    for c in range(m):
        for i, cand in enumerate(candidates):
            bits = bloom_bits(c, cand, h, k)
            rows[filled : filled + len(bits)] = [c * k + b for b in bits]
            cols[filled : filled + len(bits)] = i
            filled += len(bits)
    return sparse.csr_array((np.ones(filled), (rows[:filled], cols[:filled])), shape=(m * k, d))


def _independent_factor(gram: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of a Gram matrix if its vectors are linearly independent, else
    None: independent when each one's squared distance from the span of those before it (its
    squared pivot) is above RANK_TOLERANCE of its squared length; rappor_selection keeps
    candidates by the very same test."""
    try:
        factor = np.linalg.cholesky(gram)
    except np.linalg.LinAlgError:
        return None
    if np.all(np.diag(factor) ** 2 > RANK_TOLERANCE * np.diag(gram)):
        return factor
    return None


def _rappor_cross(bloom: sparse.csr_array, weights: np.ndarray, sketch: RAPPOR) -> np.ndarray:
    """[D, D]: per unit share of candidate e, per report, the expected sum over two distinct
    set bits of its Bloom filter of the products of their weights, u_r's cross terms:
    (1/m) sum_c sum_{i != i' in bits(c, e)} L[d, ci] L[d, ci'], L = W B' (W = m (B'B)^-1).
    L is read one cohort's set bits at a time, at most CHUNK_CELLS floats of it at once."""
    k, m, d = sketch.k, sketch.m, bloom.shape[1]
    cross = np.zeros((d, d))  # [e, d]: transposed at the end
    rows_at_once = max(1, CHUNK_CELLS // d)
    transposed = np.ascontiguousarray(weights.T)
    for c in range(m):
        cohort = bloom[c * k : (c + 1) * k]  # [k, D]
        used = np.flatnonzero(np.diff(cohort.indptr))  # the bits some candidate sets
        inside = np.zeros((d, d))  # [e, d]: sum of L[d, ci] over e's bits i
        squares = np.zeros((d, d))  # [e, d]: sum of L[d, ci]^2 over e's bits i
        for start in range(0, used.size, rows_at_once):
            bits = cohort[used[start : start + rows_at_once]]  # [r, D]
            block = bits @ transposed  # [r, D]: L's columns at these bits, transposed
            inside += bits.T @ block
            squares += bits.T @ (block * block)
        inside *= inside
        inside -= squares
        cross += inside
    return cross.T / m


_UNRESOLVED = "the Bloom filters cannot tell these candidates apart; use more bits or cohorts"


def _rappor_decoder(sketch: RAPPOR, candidates: Sequence[str]) -> Decoder:
    import scipy.linalg

    k, m = sketch.k, sketch.m
    if len(candidates) > m * k:  # more than B's m k rows: dependent, known before any hash
        raise SketchDecodeError(_UNRESOLVED)
    bloom = _bloom_incidence(sketch, candidates)
    gram = _gram(bloom)  # B'B: the bits two candidates share, over the cohorts
    factor = _independent_factor(gram)
    del gram
    if factor is None:
        raise SketchDecodeError(_UNRESOLVED)
    # f_hat = L t_hat with L = pinv((n/m) B) = (m/n) (B'B)^-1 B' for a full-rank B: per
    # report, u_r = W B' x_r with W = m (B'B)^-1.
    weights = scipy.linalg.cho_solve((factor, True), np.eye(len(candidates)), overwrite_b=True)
    del factor
    weights *= m
    ps, qs = float(sketch.unset_one), float(sketch.set_one)
    return IncidenceDecoder(
        tuple(candidates),
        weights,
        np.zeros(len(candidates)),
        _rappor_cross(bloom, weights, sketch),
        bloom,
        m,
        k,
        ps,
        qs - ps,
    )


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


def rappor_selection(
    sketch: RAPPOR, candidates: Sequence[str], n: int, counts: np.ndarray, *, sweeps: int = 500
) -> tuple[str, ...]:
    """RAPPOR's first step when the candidates outnumber what the Bloom bits can tell apart
    (the paper's sparse fit): non-negative least squares of the debiased bit shares on the
    candidates' Bloom bits, by coordinate descent; most coefficients land at zero. The
    candidates it keeps, strongest first, as many as the bits can resolve (each independent of
    those kept before it, by _independent_factor's test)."""
    k, m = sketch.k, sketch.m
    bloom = _bloom_incidence(sketch, candidates)
    by_candidate = bloom.tocsc()
    bits = [
        by_candidate.indices[by_candidate.indptr[j] : by_candidate.indptr[j + 1]]
        for j in range(len(candidates))
    ]
    counts = np.asarray(counts, dtype=np.float64)
    ones, per_cohort = counts[: m * k], np.repeat(counts[m * k :], k)
    gap = float(sketch.set_one - sketch.unset_one)
    target = (ones - float(sketch.unset_one) * per_cohort) / gap * m / max(n, 1)
    beta = np.zeros(len(candidates))
    residual = target.copy()
    for _ in range(sweeps):
        moved = 0.0
        for j, rows in enumerate(bits):
            if not rows.size:
                continue
            new = max(0.0, beta[j] + residual[rows].sum() / rows.size)
            if new != beta[j]:
                residual[rows] -= new - beta[j]
                moved = max(moved, abs(new - beta[j]))
                beta[j] = new
        if moved < 1e-9:
            break
    import scipy.linalg

    gram = _gram(bloom)
    kept: list[int] = []
    # The Cholesky factor of the kept candidates' Gram matrix, grown a row at a time.
    factor = np.zeros((len(candidates), len(candidates)))
    for j in np.argsort(-beta, kind="stable"):
        if beta[j] <= 0:
            break
        size = len(kept)
        shared = gram[kept, j]
        y = scipy.linalg.solve_triangular(factor[:size, :size], shared, lower=True)
        pivot = gram[j, j] - y @ y  # squared distance from the span of those kept
        if pivot > RANK_TOLERANCE * gram[j, j]:
            factor[size, :size] = y
            factor[size, size] = np.sqrt(pivot)
            kept.append(int(j))
    return tuple(candidates[j] for j in kept)
