"""Group commit: the reports of concurrent requests stored in one transaction, one fsync.

Each request thread checks and verifies its reports, then hands them to its process's
GroupCommitter and waits. The first waiting thread becomes the leader: it takes everything
queued, stores it in one `add_reports` call (one BEGIN IMMEDIATE ... COMMIT) through the
committer's one writing store, and hands each waiter its own outcomes. Threads that queue
meanwhile wait; the first of them leads next, so the group grows with the load while a lone
request commits at once. Each waiter is woken once, by its own lock (its group committed, or
it leads), never with the whole crowd: a wake-everyone condition costs a context switch per
waiting thread per commit.

Like PostgreSQL's commit_delay with commit_siblings, a leader that knows of other requests
still checking their reports (they said so with `arriving()`) waits for them up to `max_wait`
seconds: a commit costs a fixed fsync and several statements, so fewer, larger transactions
leave more CPU for verifying.

Nobody is answered before the transaction holding its reports has committed; when a group's
transaction fails, each request is retried alone, so one request's failure is never another's,
and a request whose own transaction fails gets the error (never "accepted").
"""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from deniable.aggregator.store.base import NewReport, Store, StoreError, StoreOutcome

#: Reports one leader stores at most in one transaction (bounds the write lock's hold time).
MAX_GROUP_REPORTS = 5000
#: Seconds a leader waits at most for requests still on their way (about one fsync).
MAX_WAIT = 0.002


class Arrival:
    """A request on its way to `add_reports` (see GroupCommitter.arriving)."""

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending = True


class _Ticket:
    """One request's reports, and what became of them once its transaction ended."""

    __slots__ = ("reports", "hour", "outcomes", "error", "done", "wake")

    def __init__(self, reports: list[NewReport], hour: str):
        self.reports = reports
        self.hour = hour
        self.outcomes: list[StoreOutcome] | None = None
        self.error: BaseException | None = None
        self.done = False
        #: Held until this request is woken, once: its group committed, or it leads next.
        self.wake = threading.Lock()
        self.wake.acquire()


class GroupCommitter:
    """Leader/follower group commit of `Store.add_reports` for the threads of one process."""

    def __init__(
        self,
        max_reports: int = MAX_GROUP_REPORTS,
        max_wait: float = MAX_WAIT,
        *,
        writer: Callable[[], Store] | None = None,
    ):
        self.max_reports = max_reports
        self.max_wait = max_wait
        #: Opens the one store every leader of this committer writes with (else the leader's
        #: own). One connection keeps its page cache: SQLite drops a connection's whole cache
        #: when another connection wrote since its last transaction.
        self._open_writer = writer
        self._writer: Store | None = None
        self._lock = threading.Lock()
        #: Where a leader waits for announced requests.
        self._arrivals = threading.Condition(self._lock)
        self._queue: list[_Ticket] = []
        self._leading = False
        self._arriving = 0
        #: Transactions run and tickets they carried (for tests and tuning).
        self.transactions = 0
        self.tickets = 0

    @contextmanager
    def arriving(self) -> Iterator[Arrival]:
        """Announce a request that will call `add_reports(..., arrival=...)` once its reports
        are checked, so a leader may wait for it; leaving the block without calling withdraws."""
        arrival = Arrival()
        with self._lock:
            self._arriving += 1
        try:
            yield arrival
        finally:
            if arrival.pending:
                with self._lock:
                    self._arrived(arrival)

    def _arrived(self, arrival: Arrival | None) -> None:
        """Count an announced request as arrived (or gone); the caller holds the lock."""
        if arrival is not None and arrival.pending:
            arrival.pending = False
            self._arriving -= 1
            self._arrivals.notify()

    def add_reports(
        self,
        store: Store,
        reports: Sequence[NewReport],
        received_hour: str,
        *,
        arrival: Arrival | None = None,
    ) -> list[StoreOutcome]:
        """What `store.add_reports` answers for these reports, stored with whatever other
        threads queued meanwhile; returns only after the transaction has committed."""
        ticket = _Ticket(list(reports), received_hour)
        with self._lock:
            self._arrived(arrival)
            if not reports:
                return []
            self._queue.append(ticket)
            follow = self._leading
            self._leading = True
        if follow:
            ticket.wake.acquire()  # each waiter is woken once, never the whole crowd
            if ticket.done:
                return self._answer(ticket)
        with self._lock:  # leading now
            self._wait_for_arrivals()
            group = self._take(ticket)
        try:
            self._commit(store, group, ticket)
        finally:
            with self._lock:
                if self._queue:
                    self._queue[0].wake.release()  # the next in line leads
                else:
                    self._leading = False
        return self._answer(ticket)

    def _writing_store(self, fallback: Store) -> Store:
        """The store this leader writes with (only leaders call this, one at a time)."""
        if self._open_writer is None:
            return fallback
        if self._writer is None:
            self._writer = self._open_writer()
            weakref.finalize(self, self._writer.close)
        return self._writer

    def _wait_for_arrivals(self) -> None:
        """As leader, wait up to max_wait while announced requests are still checking."""
        if self._arriving <= 0 or self.max_wait <= 0:
            return
        deadline = time.monotonic() + self.max_wait
        while self._arriving > 0 and sum(len(t.reports) for t in self._queue) < self.max_reports:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._arrivals.wait(remaining)

    def _take(self, own: _Ticket) -> list[_Ticket]:
        """The leader's group: queued tickets in order up to the size bound, its own always."""
        group, size, rest = [], 0, []
        for ticket in self._queue:
            if ticket is own or not group or size + len(ticket.reports) <= self.max_reports:
                group.append(ticket)
                size += len(ticket.reports)
            else:
                rest.append(ticket)
        self._queue = rest
        return group

    def _commit(self, leader_store: Store, group: list[_Ticket], own: _Ticket) -> None:
        """Store the group; every ticket ends done, with outcomes or an error (never left
        waiting, whatever fails, opening the writing store included)."""
        by_hour: dict[str, list[_Ticket]] = {}
        for ticket in group:
            by_hour.setdefault(ticket.hour, []).append(ticket)
        try:
            store = self._writing_store(leader_store)
            for hour, tickets in by_hour.items():
                try:
                    self._store(store, tickets, hour)
                except Exception:
                    if len(tickets) == 1:
                        raise
                    for ticket in tickets:  # alone, so a bad request fails nobody else
                        try:
                            self._store(store, [ticket], hour)
                        except Exception as exc:
                            ticket.error = exc
        except BaseException as exc:
            for ticket in group:
                if ticket.outcomes is None and ticket.error is None:
                    ticket.error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            for ticket in group:
                if ticket.outcomes is None and ticket.error is None:
                    ticket.error = RuntimeError("report not stored")
                ticket.done = True
                if ticket is not own:
                    ticket.wake.release()

    def _store(self, store: Store, tickets: list[_Ticket], hour: str) -> None:
        """One transaction for these tickets; their outcomes set only once it committed."""
        reports = [report for ticket in tickets for report in ticket.reports]
        outcomes = store.add_reports(reports, hour)
        self.transactions += 1
        self.tickets += len(tickets)
        start = 0
        for ticket in tickets:
            ticket.outcomes = outcomes[start : start + len(ticket.reports)]
            start += len(ticket.reports)

    @staticmethod
    def _answer(ticket: _Ticket) -> list[StoreOutcome]:
        if ticket.error is not None:
            error = ticket.error
            raise StoreError(
                f"the reports were not stored ({type(error).__name__}: {error}); send them again"
            ) from error
        assert ticket.outcomes is not None
        return ticket.outcomes
