"""Analyses and ingestion at scale: what answer patterns buy, on either store.

    .venv/bin/python benchmarks/scale.py --reports 10000000 --store sqlite [--data-dir DIR]
    .venv/bin/python benchmarks/scale.py --reports 10000000 --store postgres --database-url URL
        [--ingest 100000] [--rounds 3] [--repeats 3] [--keep]
    .venv/bin/python benchmarks/scale.py --compare DIR/loaded.db 'postgresql://...?options=-csearch_path%3DSCHEMA'

A survey of two randomized questions (smokes: rr; party: grr over 4) and four plain ones
(region: 5; age: 18 to 67; female; education: 5) has at most 2 x 4 x 5 x 50 x 2 x 5 = 20,000
distinct answer patterns. --reports of its reports are loaded through the store's batch path
(`Store.add_reports`, 5,000 a transaction, the path of every report POST after its checks):
bodies of a stored report's real size and shape, answers drawn at random, with sequential
report ids and stand-in keys and signatures (nothing re-verifies a stored report, and signing
ten million would take hours on two cores). Then it times, as the HTTP API and the CLI run
them (the service functions of aggregator/surveys.py), a breakdown (smokes by region), a
cross-tab (smokes x party) and a regression (smokes ~ region + age + female + education), each
the median of --repeats warm runs, beside the first (cold) run.

Ingestion with and without the counts: each round makes a fresh database whose survey holds
--warm reports first (stored through the batch path: its answer patterns already seen, as a
survey's are after its first hours), then takes --ingest prepared reports through
`Store.add_reports` alone (the store's share of the cost), then --ingest real signed reports
(random report ids and keys, made with make_report) through `ingest` (checks, signature,
store), 1,000 a call; once with the store as it is and once with a store that skips the answer
patterns (the same class minus that statement). Rounds alternate, and each figure is the best
of --rounds (a shared machine slows one run or another).

--compare times the analyses of two stores kept with --keep (the SQLite file, the PostgreSQL
schema's URL), alternating, for their ratio.

Targets (docs/benchmarks.md): on 10,000,000 reports, each analysis under 2 s on both stores,
PostgreSQL within 1.5x of SQLite; ingestion with the counts within 10% of the throughput
without them.
"""

from __future__ import annotations

import os

# As deploy/gunicorn.conf.py runs the aggregator: one BLAS thread per process (analyses work on
# matrices of distinct patterns; on a busy machine OpenBLAS's spinning threads cost more).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from deniable.aggregator import surveys
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.store import NewReport, Store
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.shared import Survey, make_report
from deniable.shared.report import body_pattern
from deniable.shared.signing import generate_key

SURVEY: dict[str, Any] = {
    "id": "scale",
    "title": "Scale benchmark",
    "questions": [
        {"id": "smokes", "text": "Do you smoke?", "type": "binary", "epsilon": 1.0},
        {
            "id": "party",
            "text": "Which party?",
            "type": "categorical",
            "options": ["A", "B", "C", "D"],
            "mechanism": "grr",
            "epsilon": 2.0,
        },
        {
            "id": "region",
            "text": "Region?",
            "type": "categorical",
            "options": ["north", "south", "east", "west", "centre"],
            "mechanism": "none",
        },
        {
            "id": "age",
            "text": "Age?",
            "type": "integer",
            "min": 18,
            "max": 67,
            "mechanism": "none",
        },
        {"id": "female", "text": "Female?", "type": "binary", "mechanism": "none"},
        {
            "id": "education",
            "text": "Education?",
            "type": "categorical",
            "options": ["none", "primary", "secondary", "college", "graduate"],
            "mechanism": "none",
        },
    ],
}
FORMULA = "smokes ~ region + age + female + education"
#: The questions in the order of a body's answers (canonical JSON: sorted).
ANSWERED = ("age", "education", "female", "party", "region", "smokes")
#: Reports per transaction while loading (the store's batch path).
LOAD_BATCH = 5000
#: Reports per `ingest` call in the ingestion comparison (a batch POST).
INGEST_BATCH = 1000
HOUR = "2026-11-25T12"
TARGET_SECONDS = 2.0


class SQLiteWithoutCounts(SQLiteStore):
    """The SQLite store minus the answer patterns (for the comparison only)."""

    def _count_patterns(self, conn: Any, patterns: Any, learned: Any) -> None:
        return None


def _postgres_without_counts() -> type:
    from deniable.aggregator.store.postgres import PostgresStore

    class PostgresWithoutCounts(PostgresStore):
        """The PostgreSQL store minus the answer patterns (for the comparison only)."""

        @staticmethod
        def _pattern_args(reports: Sequence[NewReport]) -> tuple[list, list, list]:
            return [], [], []

    return PostgresWithoutCounts


# -- the stores --------------------------------------------------------------------------------


class Place:
    """Where the benchmark's databases are made: files under a folder, or PostgreSQL schemas."""

    def __init__(self, kind: str, folder: Path, url: str | None):
        self.kind, self.folder, self.url = kind, folder, url
        self.made: list[str] = []
        self.kept = ""  # the loaded PostgreSQL schema's URL

    def store(self, name: str, *, counts: bool = True) -> Store:
        """A new, migrated, empty store called `name`."""
        if self.kind == "sqlite":
            path = self.folder / f"{name}.db"
            for leftover in self.folder.glob(f"{name}.db*"):
                leftover.unlink()
            cls = SQLiteStore if counts else SQLiteWithoutCounts
            store: Store = cls(path, cache_mib=64)
        else:
            from deniable.aggregator.store.postgres import PostgresStore

            cls = PostgresStore if counts else _postgres_without_counts()
            store = cls(self._schema(name))
        store.migrate()
        return store

    def _schema(self, name: str) -> str:
        """A fresh schema of the database at --database-url, as a URL whose search_path is it."""
        import psycopg

        schema = f"scale_{name}_{os.getpid()}"
        assert self.url is not None
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.execute(f'CREATE SCHEMA "{schema}"')
        self.made.append(schema)
        joiner = "&" if "?" in self.url else "?"
        url = f"{self.url}{joiner}options=-csearch_path%3D{schema}"
        if name == "loaded":
            self.kept = url
        return url

    def drop(self, keep: bool) -> None:
        if self.kind == "postgres" and not keep:
            import psycopg

            from deniable.aggregator.store.postgres import close_pools

            close_pools()
            with psycopg.connect(self.url, autocommit=True) as conn:
                for schema in self.made:
                    conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def create(store: Store, survey: Survey) -> None:
    surveys.create_survey(store, survey.to_dict(), who=OPERATOR)


# -- loading -----------------------------------------------------------------------------------


def synthetic(
    survey: Survey, n: int, rng: np.random.Generator, *, random_ids: bool = False
) -> Iterator[list[NewReport]]:
    """n reports as the store receives them, LOAD_BATCH at a time: canonical bodies of the
    real shape (answers drawn at random: noisy smokes and party, plain region, age, female and
    education), their supports and answer patterns (cut from the body, as ingestion does)."""
    questions = survey.questions
    supports: dict[tuple[int, ...], dict[str, tuple[int, ...]]] = {}
    head = '{"answers":{"age":%d,"education":%d,"female":%d,"party":%d,"region":%d,"smokes":%d}'
    tail = (
        f',"sent_at":"{HOUR}:00:00Z","signature":"{"s" * 86}","survey":"{survey.id}",'
        f'"survey_hash":"{survey.hash}","v":1}}'
    )
    done = 0
    while done < n:
        size = min(LOAD_BATCH, n - done)
        columns = zip(
            rng.integers(18, 68, size).tolist(),
            rng.integers(0, 5, size).tolist(),
            rng.integers(0, 2, size).tolist(),
            rng.integers(0, 4, size).tolist(),
            rng.integers(0, 5, size).tolist(),
            (rng.random(size) < 0.4).astype(int).tolist(),
            strict=True,
        )
        batch = []
        for i, answers in enumerate(columns, start=done):
            support = supports.get(answers)
            if support is None:
                named = dict(zip(ANSWERED, answers, strict=True))
                support = supports[answers] = {
                    qid: tuple(questions[qid].supports(value)) for qid, value in named.items()
                }
            if random_ids:  # as devices make them
                rid = str(uuid.UUID(bytes=rng.bytes(16), version=4))
                key = rng.bytes(32).hex()[:43]
            else:  # in order: the load appends to the indexes
                rid, key = f"{i:08x}-0000-4000-8000-{i:012x}", f"{i:043d}"
            body = (head % answers) + f',"public_key":"{key}","report_id":"{rid}"' + tail
            batch.append(NewReport(rid, survey.id, key, body, support, body_pattern(body)))
        done += size
        yield batch


def load(store: Store, survey: Survey, n: int, rng: np.random.Generator) -> float:
    """Store n synthetic reports through the batch path; the seconds it took."""
    started = time.perf_counter()
    for i, batch in enumerate(synthetic(survey, n, rng)):
        outcomes = store.add_reports(batch, HOUR)
        if outcomes.count("accepted") != len(batch):
            raise RuntimeError(f"batch {i}: not every report was accepted")
        if i % 200 == 199:
            done = (i + 1) * LOAD_BATCH
            rate = done / (time.perf_counter() - started)
            print(f"  loaded {done:,} ({rate:,.0f}/s)", file=sys.stderr, flush=True)
    return time.perf_counter() - started


# -- analyses ----------------------------------------------------------------------------------


def analyses(store: Store, survey: Survey) -> dict[str, Callable[[], Any]]:
    sid = survey.id
    return {
        "breakdown (smokes by region)": lambda: surveys.breakdown(
            store, sid, "smokes", "region", who=OPERATOR
        ),
        "cross-tab (smokes x party)": lambda: surveys.crosstab(
            store, sid, "smokes", "party", who=OPERATOR
        ),
        f"regression ({FORMULA})": lambda: surveys.regression(store, sid, FORMULA, who=OPERATOR),
        "results (the tallies)": lambda: surveys.results(store, sid, who=OPERATOR),
    }


def timed(run: Callable[[], Any], repeats: int) -> tuple[float, float, Any]:
    """(first run's seconds, median of `repeats` more, the result)."""
    started = time.perf_counter()
    result = run()
    first = time.perf_counter() - started
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return first, statistics.median(times), result


def show(store: Store, survey: Survey, repeats: int, title: str) -> None:
    """Time each analysis and print its row."""
    print(
        f"\n{'analysis' + (' (' + title + ')' if title else ''):<62} {'first s':>8} {'median s':>9}  target"
    )
    for name, run in analyses(store, survey).items():
        first, median, _ = timed(run, repeats)
        verdict = "met" if median < TARGET_SECONDS else "NOT met"
        target = "" if name.startswith("results") else f"< {TARGET_SECONDS:g} s: {verdict}"
        print(f"{name:<62} {first:>8.3f} {median:>9.3f}  {target}", flush=True)


def pattern_rows(store: Store) -> str:
    """How many rows hold the counts of the survey's answer patterns (PostgreSQL's shards)."""
    with store._query() as conn:  # a benchmark's look inside
        return f"{store._run(conn, 'SELECT count(*) FROM pattern_shards').fetchone()[0]:,}"


def compare(sqlite_file: Path, postgres_url: str, rounds: int = 7) -> None:
    """Time the analyses on two kept stores (`--keep`), SQLite and PostgreSQL alternating, and
    print each one's median and the ratio (a shared machine slows both alike)."""
    from deniable.aggregator.store.postgres import PostgresStore

    survey = Survey.from_dict(SURVEY)
    stores = {"sqlite": SQLiteStore(sqlite_file), "postgres": PostgresStore(postgres_url)}
    runs = {name: analyses(store, survey) for name, store in stores.items()}
    times: dict[tuple[str, str], list[float]] = {}
    for name, named in runs.items():
        for analysis, run in named.items():
            run()  # warm
            times[name, analysis] = []
    for round_ in range(rounds):
        for name in ("sqlite", "postgres") if round_ % 2 == 0 else ("postgres", "sqlite"):
            for analysis, run in runs[name].items():
                started = time.perf_counter()
                run()
                times[name, analysis].append(time.perf_counter() - started)
    print(
        f"{'analysis (median of ' + str(rounds) + ')':<62} {'sqlite s':>9} {'postgres s':>11} {'ratio':>6}"
    )
    for analysis in runs["sqlite"]:
        a = statistics.median(times["sqlite", analysis])
        b = statistics.median(times["postgres", analysis])
        verdict = (
            ""
            if analysis.startswith("results")
            else (f"  <= 1.5: {'met' if b / a <= 1.5 else 'NOT met'}")
        )
        print(f"{analysis:<62} {a:>9.3f} {b:>11.3f} {b / a:>6.2f}{verdict}")


# -- ingestion with and without the counts -----------------------------------------------------


def signed(survey: Survey, n: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    """n real reports, each signed by a fresh key, true answers drawn at random."""
    q = survey.questions
    reports = []
    for _ in range(n):
        truth = {
            "smokes": int(rng.random() < 0.3),
            "party": q["party"].options[int(rng.integers(4))],
            "region": q["region"].options[int(rng.integers(5))],
            "age": int(rng.integers(18, 68)),
            "female": int(rng.integers(2)),
            "education": q["education"].options[int(rng.integers(5))],
        }
        reports.append(make_report(survey, truth, generate_key()))
    return reports


def ingest_rate(store: Store, reports: list[dict[str, Any]]) -> float:
    """Reports per second through `ingest`, INGEST_BATCH a call."""
    started = time.perf_counter()
    for start in range(0, len(reports), INGEST_BATCH):
        outcomes = ingest(store, reports[start : start + INGEST_BATCH])
        if any(o.result != "accepted" for o in outcomes):
            raise RuntimeError("not every report was accepted")
    return len(reports) / (time.perf_counter() - started)


def store_rate(store: Store, batches: list[list[NewReport]]) -> float:
    """Reports per second through `Store.add_reports` alone."""
    started = time.perf_counter()
    for batch in batches:
        store.add_reports(batch, HOUR)
    return sum(map(len, batches)) / (time.perf_counter() - started)


def compare_ingestion(
    place: Place, survey: Survey, n: int, warm: int, rounds: int, rng: np.random.Generator
) -> dict[str, tuple[float, float]]:
    """path -> (best rate with the counts, best rate without), rounds alternating. Each round
    is a fresh database whose survey holds `warm` reports first (its patterns seen, as a
    survey's are after its first hours), then takes n prepared reports through the store's
    batch path and n signed ones through `ingest`."""
    print(f"(signing {n:,} reports for the ingestion comparison)", file=sys.stderr, flush=True)
    reports = signed(survey, n, rng)
    seed = int(rng.integers(2**32))
    batches = [
        batch[i : i + INGEST_BATCH]
        for batch in synthetic(survey, n, np.random.default_rng(seed + 1), random_ids=True)
        for i in range(0, len(batch), INGEST_BATCH)
    ]
    found: dict[str, dict[bool, list[float]]] = {
        "ingest (checks, signature, store)": {True: [], False: []},
        "Store.add_reports alone": {True: [], False: []},
    }
    for round_ in range(rounds):
        for counts in (True, False) if round_ % 2 == 0 else (False, True):
            store = place.store(f"ingest_r{round_}{'c' if counts else 'n'}", counts=counts)
            create(store, survey)
            for batch in synthetic(survey, warm, np.random.default_rng(seed), random_ids=True):
                store.add_reports(batch, HOUR)
            found["Store.add_reports alone"][counts].append(store_rate(store, batches))
            found["ingest (checks, signature, store)"][counts].append(ingest_rate(store, reports))
            store.close()
    return {path: (max(rates[True]), max(rates[False])) for path, rates in found.items()}


# -- the run -----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--store", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--database-url", help="PostgreSQL to make the benchmark's schemas in")
    parser.add_argument("--data-dir", type=Path, help="folder for the SQLite files (a temp one)")
    parser.add_argument("--ingest", type=int, default=50_000, help="reports per ingestion round")
    parser.add_argument("--warm", type=int, default=200_000, help="reports stored before each")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the loaded database")
    parser.add_argument(
        "--compare",
        nargs=2,
        metavar=("SQLITE_FILE", "POSTGRES_URL"),
        help="only time the analyses of two kept stores, alternating (no load)",
    )
    args = parser.parse_args(argv)
    if args.compare:
        compare(Path(args.compare[0]), args.compare[1])
        return
    if args.store == "postgres" and not args.database_url:
        parser.error("--store postgres needs --database-url postgresql://...")
    survey = Survey.from_dict(SURVEY)
    rng = np.random.default_rng(38)
    folder = args.data_dir or Path(tempfile.mkdtemp(prefix="deniable-scale-"))
    folder.mkdir(parents=True, exist_ok=True)
    place = Place(args.store, folder, args.database_url)
    try:
        store = place.store("loaded")
        create(store, survey)
        seconds = load(store, survey, args.reports, rng)
        patterns = len(store.pattern_counts(survey.id))
        print(
            f"\nstore: {args.store}; reports: {args.reports:,} loaded through Store.add_reports "
            f"in {seconds:,.0f} s ({args.reports / seconds:,.0f}/s); distinct answer "
            f"patterns: {patterns:,}"
        )
        if args.store == "postgres":
            # As loaded, the counts are spread over the shards of the writers' transactions;
            # then as every serving process leaves them within the hour (the retention tick).
            show(store, survey, args.repeats, f"as loaded: {pattern_rows(store)} pattern rows")
            started = time.perf_counter()
            store.fold_patterns(survey.id)
            folded = time.perf_counter() - started
            show(
                store, survey, args.repeats, f"folded in {folded:.1f} s: {pattern_rows(store)} rows"
            )
        else:
            show(store, survey, args.repeats, "")
        store.close()
        if args.ingest:
            rates = compare_ingestion(place, survey, args.ingest, args.warm, args.rounds, rng)
            print(
                f"\n{'ingestion (reports/s, best of ' + str(args.rounds) + ')':<40} "
                f"{'with counts':>12} {'without':>10} {'ratio':>7}  target"
            )
            for path, (with_, without) in rates.items():
                ratio = with_ / without
                verdict = "met" if ratio >= 0.9 else "NOT met"
                target = f">= 0.9: {verdict}" if path.startswith("ingest") else "(its share)"
                print(f"{path:<40} {with_:>12,.0f} {without:>10,.0f} {ratio:>7.3f}  {target}")
    finally:
        place.drop(args.keep)
        if args.keep:
            kept = place.kept or str(folder / "loaded.db")
            print(f"\nkept: {kept} (for --compare)")
        if not args.keep and args.data_dir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
