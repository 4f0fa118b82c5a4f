"""Answer patterns: analyses of stored reports read the counts of distinct answer patterns kept
in the reports' transactions, never the reports, and give what the same analysis of the reports
themselves gives (docs/architecture.md, "The path of one answer"). On both stores: a property
over random surveys (every question type, skip logic, split ballots, designs) and reports; the
migration that counts the patterns of reports stored before it; purge, verify and repair.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deniable.aggregator import analyze, breakdown, crosstab, regress
from deniable.aggregator.access import OPERATOR
from deniable.aggregator.ingest import ingest
from deniable.aggregator.stats import AnalysisError
from deniable.aggregator.stats.analyze import StoredAnswers, tally
from deniable.aggregator.stats.simulate import default_truth, draw_answers
from deniable.aggregator.store import NewReport, Store, recount, sqlite
from deniable.aggregator.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from deniable.aggregator.store.sqlite import SQLiteStore
from deniable.aggregator.surveys import create_survey, results
from deniable.shared import Survey, make_report
from deniable.shared.canonical import parse_json
from deniable.shared.report import answer_pattern, body_pattern
from deniable.shared.signing import generate_key

try:
    from deniable.aggregator.store import postgres
    from deniable.aggregator.store.postgres import PostgresStore
except ImportError:  # psycopg is an extra: the SQLite half runs without it
    postgres = PostgresStore = None  # type: ignore[assignment]

#: A randomized question of each kind and mechanism (its id and text added).
RANDOMIZED: dict[str, dict[str, Any]] = {
    "rr": {"type": "binary", "epsilon": 1.0},
    "coins": {"type": "binary", "mechanism": "coins", "coins": {"truth": "1/2", "yes": "1/2"}},
    "grr": {"type": "categorical", "options": ["x", "y", "z"], "mechanism": "grr", "epsilon": 2.0},
    "oue": {"type": "categorical", "options": ["x", "y", "z"], "mechanism": "oue", "epsilon": 2.0},
    "onebit": {"type": "integer", "min": 0, "max": 3, "epsilon": 1.0},
    "multi": {"type": "multi", "options": ["m1", "m2", "m3"], "epsilon": 2.0},
}
TEXT = {
    "id": "t",
    "text": "Which city?",
    "type": "text",
    "mechanism": "cms",
    "epsilon": 2.0,
    "cms": {"k": 4, "m": 16},
    "candidates": ["Lagos", "Kano"],
}
PLAIN: list[dict[str, Any]] = [
    {"id": "g", "text": "G?", "type": "binary", "mechanism": "none"},
    {"id": "r", "text": "R?", "type": "categorical", "options": ["n", "s"], "mechanism": "none"},
    {"id": "a", "text": "A?", "type": "integer", "min": 18, "max": 21, "mechanism": "none"},
]
DESIGNS: list[dict[str, Any] | None] = [
    None,
    {"strata": "r", "population": {"n": 600, "s": 400}},
    {"rake": {"g": {"no": 0.4, "yes": 0.6}}},
    {"strata": "r", "clusters": "g"},
]
_ids = itertools.count()


@st.composite
def surveys(draw: st.DrawFn) -> dict[str, Any]:
    """A survey document: three plain questions, two to four randomized ones of any kind (some
    asked only when g is yes, some split ballots), maybe a text question, maybe a design."""
    questions = [dict(q) for q in PLAIN]
    for i, kind in enumerate(
        draw(st.lists(st.sampled_from(sorted(RANDOMIZED)), min_size=2, max_size=4))
    ):
        question = {"id": f"q{i}", "text": f"Q{i}?", **RANDOMIZED[kind]}
        if draw(st.booleans()):
            question["relevant"] = "g == 'yes'"
        if draw(st.integers(0, 2)) == 0:
            question["direct_share"] = "1/3"
        questions.append(question)
    if draw(st.booleans()):
        questions.append(dict(TEXT))
    doc: dict[str, Any] = {"id": f"p{next(_ids)}", "title": "Patterns", "questions": questions}
    design = draw(st.sampled_from(DESIGNS))
    if design is not None:
        doc["design"] = design
    return doc


def _outcome(run: Callable[[], Any]) -> Any:
    """An analysis's JSON, or the words of its refusal."""
    try:
        return run().to_dict()
    except AnalysisError as exc:
        return ("refused", str(exc))


#: Keys whose floats are square roots of variances, compared as the variances: the two sums'
#: order differs by ~1e-16 in a variance, which a root makes 1e-8 when the variance is 0.
ROOTS = {"stderr", "se"}


def same(a: Any, b: Any, key: str = "") -> bool:
    """Equal JSON, floats to 1e-9 (the database and this process sum in another order)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k], k) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y, key) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        if key in ROOTS:
            return a * a == pytest.approx(b * b, rel=1e-9, abs=1e-12, nan_ok=True)
        return a == pytest.approx(b, rel=1e-9, abs=1e-12, nan_ok=True)
    return type(a) is type(b) and bool(a == b)


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Where two JSON values differ (for the assertion's message)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d for k in a.keys() | b.keys() for d in differences(a.get(k), b.get(k), f"{where}.{k}")
        ]
    if isinstance(a, list | tuple) and isinstance(b, list | tuple) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in differences(x, y, f"{where}[{i}]")
        ]
    return [] if same(a, b, where.rsplit(".", 1)[-1]) else [f"{where}: {a!r} != {b!r}"]


Analysis = Callable[[Any, bool], Any]


def _analyses(survey: Survey) -> list[tuple[str, Analysis]]:
    """Every analysis of the survey's randomized questions, as functions of (the reports or
    the stored answers, verify): breakdowns, regressions (a randomized outcome, a split ballot's
    arm, a randomized predictor) and cross-tabs, weighted when the survey has a design."""
    runs: list[tuple[str, Analysis]] = []
    randomized = [q for q in survey.questions.values() if not q.plain and q.id != TEXT["id"]]
    for q in randomized:
        for by in ("r", "g"):
            runs.append(
                (
                    f"breakdown {q.id} by {by}",
                    lambda d, v, q=q.id, by=by: breakdown(survey, d, q, by, verify=v),
                )
            )
        formulas = []
        if q.kind.outcome_row is not None:
            formulas.append(f"{q.id} ~ r + a")
            formulas.append(f"g ~ a + {q.id}")  # a randomized yes/no predictor (unweighted)
        elif q.kind.not_an_outcome is None:
            formulas.append(f"{q.id}[{q.options[1]}] ~ r + a")
        if survey.split:
            formulas += [f"{f} + {survey.split[0]}_arm" for f in formulas[:1]]
        for formula in formulas:
            runs.append(
                (f"regress {formula}", lambda d, v, f=formula: regress(survey, d, f, verify=v))
            )
            runs.append(
                (
                    f"regress {formula}, unweighted",
                    lambda d, v, f=formula: regress(survey, d, f, verify=v, weighted=False),
                )
            )
    crossing = [q for q in randomized if q.kind.crosses] + [survey.questions["r"]]
    for a, b in itertools.combinations(crossing, 2):
        runs.append(
            (
                f"crosstab {a.id} {b.id}",
                lambda d, v, a=a.id, b=b.id: crosstab(survey, d, a, b, verify=v),
            )
        )
    return runs


def _reports(survey: Survey, n: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    truth = default_truth(survey)
    return [make_report(survey, draw_answers(survey, truth, rng), generate_key()) for _ in range(n)]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(doc=surveys(), n=st.integers(10, 50), seed=st.integers(0, 2**32 - 1))
def test_every_analysis_from_the_counts_equals_the_same_from_the_reports(
    store: Store, doc: dict[str, Any], n: int, seed: int
) -> None:
    record, _ = create_survey(store, doc, who=OPERATOR)
    survey = Survey.from_stored(record.resolved)
    reports = _reports(survey, n, seed)
    assert {o.result for o in ingest(store, reports)} == {"accepted"}
    stored = StoredAnswers(store, survey.id)
    for name, run in _analyses(survey):
        from_counts = _outcome(lambda run=run: run(stored, False))
        from_reports = _outcome(lambda run=run: run(reports, True))
        assert same(from_counts, from_reports), (name, differences(from_counts, from_reports))
    # Results: the tallies, weighted from the counts when the survey has a design.
    assert same(
        results(store, survey.id, who=OPERATOR).to_dict(), analyze(survey, reports).to_dict()
    )
    # The counts are exactly the reports' patterns, text answers left out.
    expected: dict[str, int] = {}
    for report in reports:
        pattern = answer_pattern(survey, report["answers"], report.get("arms"))
        expected[pattern] = expected.get(pattern, 0) + 1
        assert '"t"' not in pattern
    assert store.pattern_counts(survey.id) == expected
    # Cut from the stored bodies, the patterns are the same (what ingestion and the migration
    # do for a survey without text questions).
    if TEXT["id"] not in survey.questions:
        cut: dict[str, int] = {}
        for body in store.iter_report_bodies(survey.id):
            cut[body_pattern(body)] = cut.get(body_pattern(body), 0) + 1
        assert cut == expected


#: Two surveys for the deterministic tests: one with skip logic, a split ballot and a text
#: question (patterns parsed from the answers), one without (patterns cut from the bodies).
MIXED: dict[str, Any] = {
    "id": "mixed",
    "title": "Mixed",
    "questions": [
        *PLAIN,
        {"id": "q0", "text": "Q0?", **RANDOMIZED["rr"], "relevant": "g == 'yes'"},
        {"id": "q1", "text": "Q1?", **RANDOMIZED["grr"], "direct_share": "1/3"},
        {"id": "q2", "text": "Q2?", **RANDOMIZED["multi"]},
        TEXT,
    ],
}
SIMPLE: dict[str, Any] = {
    "id": "simple",
    "title": "Simple",
    "questions": [*PLAIN, {"id": "q0", "text": "Q0?", **RANDOMIZED["onebit"]}],
}


def _stored(store: Store, doc: dict[str, Any], n: int, seed: int) -> tuple[Survey, list[Any]]:
    """The survey created in `store`, and n of its reports ingested."""
    record, _ = create_survey(store, doc, who=OPERATOR)
    survey = Survey.from_stored(record.resolved)
    reports = _reports(survey, n, seed)
    assert {o.result for o in ingest(store, reports)} == {"accepted"}
    return survey, reports


def _before_the_patterns(source: Store, tmp_path: Path, database_url: str | None) -> Store:
    """A new database at the schema before answer patterns, holding `source`'s surveys,
    reports and tallies."""
    if database_url is None:
        target: Store = SQLiteStore(tmp_path / "old.db")
        older = SQLITE_MIGRATIONS[: SQLITE_MIGRATIONS.index(sqlite._schema_5)]
        with target._write():
            for step in older:
                step(target.db)
            target.conn.execute(f"PRAGMA user_version = {len(older)}")
    else:
        target = PostgresStore(database_url)
        steps = postgres.MIGRATIONS[: postgres.MIGRATIONS.index(postgres._SCHEMA_7)]
        with target._tx() as conn:
            conn.execute("CREATE TABLE schema_version (version integer NOT NULL)")
            conn.execute("INSERT INTO schema_version (version) VALUES (%s)", (len(steps),))
            for statements in steps:
                for statement in statements:
                    conn.execute(statement)
    surveys = [
        (r.id, r.resolved_json, r.hash, r.created_at, r.closed_at, r.report_count)
        for r in source.list_surveys()
    ]
    tallies = [
        (sid, qid, option, value)
        for sid, *_ in surveys
        for qid, counts in source.tallies(sid)[1].items()
        for option, value in enumerate(counts)
    ]
    reports = "seq, report_id, survey_id, public_key, body, received_hour"
    with source._query() as read:
        rows = source._run(read, f"SELECT {reports} FROM reports").fetchall()
    with target._write() as write:
        target._executemany(
            write,
            "INSERT INTO surveys (id, resolved, hash, created_at, closed_at, report_count) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            surveys,
        )
        target._executemany(
            write,
            "INSERT INTO tallies (survey_id, question_id, option_index, support) "
            "VALUES (?, ?, ?, ?)",
            tallies,
        )
        target._executemany(
            write, f"INSERT INTO reports ({reports}) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
    return target


def test_the_migration_counts_the_patterns_of_the_reports_stored_before_it(
    store: Store, tmp_path: Path, database_url: str | None, request: pytest.FixtureRequest
) -> None:
    stored = [_stored(store, doc, 60, seed) for seed, doc in enumerate((MIXED, SIMPLE))]
    fresh = {survey.id: store.pattern_counts(survey.id) for survey, _ in stored}
    assert all(fresh.values())
    other = request.getfixturevalue("postgres_cluster").database() if database_url else None
    old = _before_the_patterns(store, tmp_path, other)
    old.migrate()
    assert {survey.id: old.pattern_counts(survey.id) for survey, _ in stored} == fresh
    for survey, reports in stored:  # the analyses read them as the fresh store's
        found = breakdown(survey, StoredAnswers(old, survey.id), "q0", "r").to_dict()
        assert same(found, breakdown(survey, reports, "q0", "r").to_dict())
        assert recount.verify(old, survey.id, tally).consistent
    old.close()


def test_a_purge_takes_its_reports_patterns_and_verify_checks_and_repairs_them(
    store: Store,
) -> None:
    survey, reports = _stored(store, MIXED, 40, 7)
    later = _reports(survey, 30, 8)
    assert {o.result for o in ingest(store, later)} == {"accepted"}
    assert recount.verify(store, survey.id, tally).consistent
    # Purge the first 40 (the 30 later ones marked as received later): the analyses then read
    # the 30 kept reports, as their export gives them.
    _set_hour(store, later, "9999-01-01T00")
    counter = recount.counter(store, survey.id, tally)
    assert store.purge_reports(survey.id, "9000-01-01T00", counter) == 40
    kept = [parse_json(body) for body in store.iter_report_bodies(survey.id)]
    assert len(kept) == 30
    # Nothing of the purged reports' answers stays: the only patterns stored are the kept's.
    with store._query() as conn:
        texts = store._run(
            conn, "SELECT count(*) FROM answer_patterns WHERE survey_id = ?", (survey.id,)
        ).fetchone()[0]
    assert (
        texts
        == len(store.pattern_counts(survey.id))
        == len({answer_pattern(survey, r["answers"], r.get("arms")) for r in kept})
    )
    stored = StoredAnswers(store, survey.id)
    assert same(
        crosstab(survey, stored, "q1", "q2", verify=False).to_dict(),
        crosstab(survey, kept, "q1", "q2").to_dict(),
    )
    assert recount.verify(store, survey.id, tally).consistent
    # A count changed behind the store's back: verify names the pattern, repair restores it.
    counts = (  # SQLite keeps the counts apart from the patterns' text (store/sqlite.py)
        "UPDATE pattern_counts SET reports = reports + 5 WHERE pattern IN "
        "(SELECT id FROM answer_patterns WHERE survey_id = ?)"
        if isinstance(store, SQLiteStore)
        else "UPDATE pattern_shards SET reports = reports + 5 WHERE survey_id = ?"
    )
    with store._write() as conn:
        store._run(conn, counts, (survey.id,))
    found = recount.verify(store, survey.id, tally)
    assert not found.consistent
    assert any(line.startswith("answer pattern {") for line in recount.differences(found))
    recount.verify(store, survey.id, tally, repair=True)
    assert recount.verify(store, survey.id, tally).consistent
    assert same(
        crosstab(survey, stored, "q1", "q2", verify=False).to_dict(),
        crosstab(survey, kept, "q1", "q2").to_dict(),
    )


def _set_hour(store: Store, reports: list[dict[str, Any]], hour: str) -> None:
    """Mark these reports as received at `hour` (a purge takes those received before a time)."""
    with store._write() as conn:
        for report in reports:
            store._run(
                conn,
                "UPDATE reports SET received_hour = ? WHERE report_id = ?",
                (hour, report["report_id"]),
            )


def test_a_crosstab_of_a_split_ballot_leaves_its_direct_arm_out() -> None:
    """The direct arm's answers are not the randomized question's: a cross-tab reads the
    randomized arm only (it used to fail on the direct arm's missing answers)."""
    survey = Survey.from_dict(MIXED)
    reports = _reports(survey, 60, 3)
    found = crosstab(survey, reports, "q1", "q2").to_dict()
    randomized = sum(1 for r in reports if r["arms"].get("q1") == "randomized")
    assert 0 < randomized < 60 and found["n"] == randomized


def test_a_batch_rolled_back_after_its_patterns_teaches_the_store_no_pattern_id(tmp_path):
    """SQLite remembers pattern ids, which never change once committed: a batch rolled back
    after its new pattern got a row must not leave its id behind (another pattern gets it)."""

    class FailingOnce(SQLiteStore):
        fail = True

        def _count_patterns(self, conn: Any, patterns: Any, learned: Any) -> None:
            super()._count_patterns(conn, patterns, learned)
            if self.fail:
                raise RuntimeError("after the patterns")

    store = FailingOnce(tmp_path / "ids.db")
    store.migrate()
    store.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    first, second = '{"answers":{"q":0}}', '{"answers":{"q":1}}'

    def report(rid: str, pattern: str) -> NewReport:
        return NewReport(rid, "s", rid, f"body-{rid}", {"q": (0,)}, pattern)

    with pytest.raises(RuntimeError):
        store.add_reports([report("a", first)], "h")
    store.fail = False
    assert store.add_reports([report("b", second)], "h") == ["accepted"]
    assert store.add_reports([report("c", first)], "h") == ["accepted"]
    assert store.pattern_counts("s") == {first: 1, second: 1}
    store.close()


def test_a_writer_forgets_the_pattern_ids_a_purge_elsewhere_deleted(tmp_path):
    """Two SQLite connections (two workers) on one file: one remembers pattern ids; the other
    purges, deleting those patterns (their ids then go to other patterns); the first's next
    report still counts in its own pattern (it sees the survey's patterns_generation move)."""
    path = tmp_path / "two.db"
    first, second = SQLiteStore(path), SQLiteStore(path)
    first.migrate()
    first.create_survey("s", "{}", "h" * 64, {"q": 2}, "2026-01-01T00:00:00Z")
    one, two = '{"answers":{"q":0}}', '{"answers":{"q":1}}'

    def report(rid: str, pattern: str) -> NewReport:
        return NewReport(rid, "s", rid, f"body-{rid}", {"q": (0,)}, pattern)

    first.add_reports([report("a", one), report("b", two)], "2026-01-01T00")
    purged = second.purge_reports(
        "s", "2026-01-02T00", lambda bodies: (len(list(bodies)), {}, {one: 1, two: 1})
    )
    assert purged == 2 and second.pattern_counts("s") == {}
    second.add_reports([report("c", two)], "2026-01-03T00")  # takes the freed ids
    first.add_reports([report("d", one)], "2026-01-03T00")
    assert first.pattern_counts("s") == {one: 1, two: 1}
    first.close()
    second.close()
