"""The text decoders (stats/sketch_estimate.py) give the very estimates, standard errors and
intervals of the dense formulas they replace, on random counters with leading axes, for cms,
hcms (joint and Apple's, both ways of its second moment) and rappor (with its cross terms and
its selection); and their size follows candidates x (cells read + candidates), not the sketch.

The reference below is the dense decoder written out from docs/statistics.md: per report
u_r = first @ x_r (a [D, counters] map), the tallied sum of u_r^2 = second @ counts, RAPPOR's
least squares by np.linalg.pinv of the [m k, D] Bloom matrix.
"""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

from deniable.aggregator.stats.sketch_estimate import (
    HadamardDecoder,
    SketchDecodeError,
    decoder,
    decoder_cells,
    rappor_selection,
)
from deniable.aggregator.stats.sketch_simulate import simulate_counts, zipf
from deniable.shared.sketches import CMS, HCMS, RAPPOR, Sketch
from deniable.shared.text import bloom_bits, sketch_column

Z = 1.959963984540054


def dense_columns(sk: CMS | HCMS, words: list[str]) -> np.ndarray:
    return np.array([[sketch_column(j, w, sk.m) for w in words] for j in range(sk.k)])


def dense_weights(sk: CMS | HCMS, cols: np.ndarray, joint: bool) -> np.ndarray:
    k, d = cols.shape
    if not joint:
        return np.eye(d) / (1 - 1 / sk.m)
    shared = sum((row[:, None] == row[None, :]).astype(float) for row in cols)
    return np.linalg.inv(shared / k - 1 / sk.m)


def dense_cms(sk: CMS, words: list[str], joint: bool):
    cols = dense_columns(sk, words)
    w = dense_weights(sk, cols, joint)
    k, m, d = sk.k, sk.m, len(words)
    q = 1 - float(sk.keep)
    gap = float(sk.keep) - q
    first, second = np.zeros((d, sk.slots)), np.zeros((d, sk.slots))
    for j in range(k):
        u = np.zeros((d, m))
        for a in range(d):
            u[:, cols[j, a]] += w[:, a]  # u[d, c]: W summed over the candidates in column c
        first[:, j * m : (j + 1) * m] = u / gap
        first[:, k * m + j] = -q * u.sum(axis=1) / gap
        second[:, j * m : (j + 1) * m] = u * u * ((1 - q) ** 2 - q**2) / gap**2
        second[:, k * m + j] = (u * u).sum(axis=1) * q**2 / gap**2
    return first, second, -w.sum(axis=1) / m, None


def dense_hcms(sk: HCMS, words: list[str], joint: bool):
    cols = dense_columns(sk, words)
    w = dense_weights(sk, cols, joint)
    k, m, d = sk.k, sk.m, len(words)
    gap = 2 * float(sk.keep) - 1
    hadamard = np.array([[(-1) ** bin(a & b).count("1") for b in range(m)] for a in range(m)])
    first, second = np.zeros((d, sk.slots)), np.zeros((d, sk.slots))
    for j in range(k):
        v = w @ hadamard[:, cols[j]].T / gap  # [D, m]: u_r of a report (j, l, 1)
        for row in range(m):
            first[:, 2 * (j * m + row)] = -v[:, row]
            first[:, 2 * (j * m + row) + 1] = v[:, row]
            second[:, 2 * (j * m + row)] = second[:, 2 * (j * m + row) + 1] = v[:, row] ** 2
    return first, second, -w.sum(axis=1) / m, None


def dense_bloom(sk: RAPPOR, words: list[str]) -> np.ndarray:
    bloom = np.zeros((sk.m * sk.k, len(words)))
    for c in range(sk.m):
        for i, word in enumerate(words):
            for b in bloom_bits(c, word, sk.h, sk.k):
                bloom[c * sk.k + b, i] = 1
    return bloom


def dense_rappor(sk: RAPPOR, words: list[str]):
    k, m, d = sk.k, sk.m, len(words)
    bloom = dense_bloom(sk, words)
    lsq = m * np.linalg.pinv(bloom)
    ps, qs = float(sk.unset_one), float(sk.set_one)
    gap = qs - ps
    first, second = np.zeros((d, sk.slots)), np.zeros((d, sk.slots))
    first[:, : m * k] = lsq / gap
    second[:, : m * k] = lsq * lsq * ((1 - ps) ** 2 - ps**2) / gap**2
    cross = np.zeros((d, d))
    for c in range(m):
        block = lsq[:, c * k : (c + 1) * k]
        first[:, m * k + c] = -ps * block.sum(axis=1) / gap
        second[:, m * k + c] = (block * block).sum(axis=1) * ps**2 / gap**2
        bits = bloom[c * k : (c + 1) * k]
        inside = block @ bits
        cross += (inside * inside - (block * block) @ bits) / m
    return first, second, np.zeros(d), cross


def dense_estimate(maps, n: int, counts: np.ndarray):
    first, second, offset, cross = maps
    total = counts @ first.T
    est = total / n + offset
    squares = counts @ second.T
    if cross is not None:
        squares = squares + n * (np.clip(est, 0.0, None) @ cross.T)
    variance = np.maximum(squares - total * total / n, 0.0) / (n - 1.0)
    stderr = np.sqrt(variance / n)
    return est, stderr, np.clip(est - Z * stderr, 0, 1), np.clip(est + Z * stderr, 0, 1)


def dense(sk: Sketch, words: list[str], joint: bool = True):
    if isinstance(sk, HCMS):
        return dense_hcms(sk, words, joint)
    if isinstance(sk, CMS):
        return dense_cms(sk, words, joint)
    assert isinstance(sk, RAPPOR)
    return dense_rappor(sk, words)


CASES = {
    "cms k=16 m=64": (CMS.from_epsilon(k=16, m=64, epsilon=4.0), 30),
    "cms k=4 m=8": (CMS.from_epsilon(k=4, m=8, epsilon=1.0), 6),
    "hcms k=16 m=64": (HCMS.from_epsilon(k=16, m=64, epsilon=4.0), 30),
    "hcms k=16 m=16": (HCMS.from_epsilon(k=16, m=16, epsilon=2.0), 40),
    "hcms k=8 m=4": (HCMS.from_epsilon(k=8, m=4, epsilon=2.0), 10),
    "rappor k=32 h=2 m=16": (RAPPOR(k=32, h=2, m=16, f=F(1, 2), p=F(1, 2), q=F(3, 4)), 25),
    "rappor k=16 h=3 m=4": (RAPPOR(k=16, h=3, m=4, f=F(1, 4), p=F(1, 4), q=F(3, 4)), 20),
}


def close(ours, reference) -> None:
    for a, b in zip(ours, reference, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


#: Joint decoding and Apple's estimator for cms and hcms; RAPPOR has one decoder (its regression).
DECODERS = [
    (name, joint)
    for name in sorted(CASES)
    for joint in (True, False)
    if joint or not isinstance(CASES[name][0], RAPPOR)
]


@pytest.mark.parametrize(("name", "joint"), DECODERS)
def test_the_decoder_equals_the_dense_formulas_on_random_counts(name: str, joint: bool) -> None:
    sk, size = CASES[name]
    words = [f"{name} word {i}" for i in range(size)]
    rng = np.random.default_rng(sorted(CASES).index(name))
    counts = rng.integers(0, 400, size=(2, 3, sk.slots)).astype(np.float64)
    ours = decoder(sk, words, joint=joint)
    close(ours.estimate(5000, counts, Z), dense_estimate(dense(sk, words, joint), 5000, counts))
    # One survey's counters (no leading axes), as the service passes them.
    close(
        ours.estimate(5000, counts[1, 2], Z),
        dense_estimate(dense(sk, words, joint), 5000, counts[1, 2]),
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_decoder_equals_the_dense_formulas_on_simulated_surveys(name: str) -> None:
    sk, size = CASES[name]
    words = [f"{name} word {i}" for i in range(size)]
    counts = simulate_counts(sk, words, zipf(size), 4000, 5, seed=3)
    close(
        decoder(sk, words).estimate(4000, counts, Z), dense_estimate(dense(sk, words), 4000, counts)
    )


def test_both_ways_of_the_hadamard_second_moment_are_exercised() -> None:
    narrow = decoder(CASES["hcms k=16 m=16"][0], [f"hcms k=16 m=16 word {i}" for i in range(40)])
    wide = decoder(CASES["hcms k=16 m=64"][0], [f"hcms k=16 m=64 word {i}" for i in range(30)])
    assert isinstance(narrow, HadamardDecoder) and isinstance(wide, HadamardDecoder)
    assert narrow.spreads and not wide.spreads


def test_rappor_cross_terms_equal_the_dense_ones() -> None:
    sk, size = CASES["rappor k=16 h=3 m=4"]
    words = [f"rappor k=16 h=3 m=4 word {i}" for i in range(size)]
    ours = decoder(sk, words)
    assert ours.cross is not None
    np.testing.assert_allclose(ours.cross, dense_rappor(sk, words)[3], rtol=1e-9, atol=1e-9)


def dense_selection(sk: RAPPOR, words: list[str], n: int, counts: np.ndarray) -> tuple[str, ...]:
    """The paper's sparse fit on the dense Bloom matrix, then the greedy rank check of
    np.linalg.matrix_rank."""
    k, m = sk.k, sk.m
    bloom = dense_bloom(sk, words)
    ones, per_cohort = counts[: m * k], np.repeat(counts[m * k :], k)
    gap = float(sk.set_one - sk.unset_one)
    residual = (ones - float(sk.unset_one) * per_cohort) / gap * m / n
    beta = np.zeros(len(words))
    norms = (bloom * bloom).sum(axis=0)
    for _ in range(500):
        moved = 0.0
        for j in range(len(words)):
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
    return tuple(words[j] for j in kept)


@pytest.mark.parametrize("seed", range(4))
def test_rappor_selection_keeps_what_the_dense_fit_keeps(seed: int) -> None:
    # 24 candidates on 2 cohorts of 8 bits: more than the 16 Bloom bits can tell apart.
    sk = RAPPOR(k=8, h=2, m=2, f=F(1, 4), p=F(1, 4), q=F(3, 4))
    words = [f"seed {seed} word {i}" for i in range(24)]
    with pytest.raises(SketchDecodeError, match="cannot tell these candidates apart"):
        decoder(sk, words)
    counts = simulate_counts(sk, words, zipf(24), 3000, 1, seed=seed)[0]
    kept = rappor_selection(sk, words, 3000, counts)
    assert kept == dense_selection(sk, words, 3000, counts)
    assert 0 < len(kept) <= 16
    decoder(sk, list(kept))  # the kept ones are told apart


def test_the_decoder_does_not_grow_with_the_sketch() -> None:
    # The same 45 candidates on a 64-column and a 4,096-column hcms sketch of 16 hash functions
    # (2,048 and 131,072 counters): the same arrays, candidates x (16 + 45) cells.
    words = [f"city {i}" for i in range(45)]
    small = decoder(HCMS.from_epsilon(k=16, m=64, epsilon=2.0), words)
    large = decoder(HCMS.from_epsilon(k=16, m=4096, epsilon=2.0), words)
    assert small.nbytes == large.nbytes
    assert large.nbytes <= 2 * 8 * decoder_cells(HCMS.from_epsilon(k=16, m=4096, epsilon=2.0), 45)
    # RAPPOR holds its Bloom incidence (at most h bits a cohort) and the D x D matrices.
    rappor = RAPPOR(k=64, h=2, m=8, f=F(1, 2), p=F(1, 2), q=F(3, 4))
    found = decoder(rappor, words)
    assert decoder_cells(rappor, 45) == 45 * (8 * 2 + 45)
    assert found.nbytes <= 8 * 3 * decoder_cells(rappor, 45) + 4 * (rappor.m * rappor.k + 1)
