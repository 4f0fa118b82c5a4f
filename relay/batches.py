"""The relay's queue: requests held until a batch is full or has waited long enough, then sent
on in a uniformly random order (a Fisher-Yates shuffle on the OS's secure source), tagged with
a fresh random batch id. Memory is bounded: at most `queue_limit` requests wait or are being
sent at once; one more is refused (QueueFull) before its body is kept.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

_SHUFFLE = secrets.SystemRandom()


@dataclass(frozen=True)
class Forwarded:
    """The gateway's answer to one request, as the relay passes it back: status, content type,
    Retry-After (if any) and body."""

    status: int
    content_type: str
    body: bytes
    retry_after: str | None = None


class QueueFull(Exception):
    """The relay holds `queue_limit` requests already: answer 503 with Retry-After."""


class _Waiting:
    """One request in the queue, and where its answer arrives."""

    __slots__ = ("body", "done", "answer", "arrived")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.done = threading.Event()
        self.answer: Forwarded | None = None
        self.arrived = time.monotonic()


#: Sends one batch (bodies in the order to send them, the batch id); one answer per body.
Sender = Callable[[Sequence[bytes], str], list[Forwarded]]


class Batcher:
    """Holds requests until `batch` have arrived or the oldest has waited `max_delay` seconds,
    then sends them, shuffled and tagged, with `send` (on its own thread, one batch at a time)."""

    def __init__(self, send: Sender, *, batch: int, max_delay: float, queue_limit: int) -> None:
        if batch < 1 or max_delay <= 0 or queue_limit < batch:
            raise ValueError("need batch >= 1, max_delay > 0 and queue_limit >= batch")
        self.send = send
        self.batch = batch
        self.max_delay = max_delay
        self.queue_limit = queue_limit
        self._held: list[_Waiting] = []
        self._in_flight = 0
        self._closed = False
        self._cond = threading.Condition()
        self.batches_sent = 0
        self._thread = threading.Thread(target=self._run, name="relay-batches", daemon=True)
        self._thread.start()

    @property
    def waiting(self) -> int:
        """Requests held or being sent now."""
        with self._cond:
            return len(self._held) + self._in_flight

    def admit(self) -> None:
        """Raise QueueFull when no request may join now (checked before a body is read)."""
        with self._cond:
            if self._closed or len(self._held) + self._in_flight >= self.queue_limit:
                raise QueueFull()

    def submit(self, body: bytes, timeout: float) -> Forwarded | None:
        """Queue one encapsulated request and wait for the gateway's answer (None: none came
        within `timeout` seconds). QueueFull when the queue is full."""
        waiting = _Waiting(body)
        with self._cond:
            if self._closed or len(self._held) + self._in_flight >= self.queue_limit:
                raise QueueFull()
            self._held.append(waiting)
            self._cond.notify_all()
        waiting.done.wait(timeout)
        return waiting.answer

    def retry_after(self) -> int:
        """Seconds a refused sender should wait: about when the queue has room again."""
        return max(1, int(self.max_delay + 0.999))

    def close(self) -> None:
        """Send what is held now, take nothing more, and wait for the sender to finish."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout=60)

    def _take(self) -> list[_Waiting] | None:
        """The next batch, when it is due (None once closed and empty)."""
        with self._cond:
            while True:
                if self._held and (
                    len(self._held) >= self.batch
                    or self._closed
                    or time.monotonic() - self._held[0].arrived >= self.max_delay
                ):
                    taken, self._held = self._held[: self.batch], self._held[self.batch :]
                    self._in_flight += len(taken)
                    return taken
                if self._closed and not self._held:
                    return None
                wait = None
                if self._held:
                    wait = max(0.0, self.max_delay - (time.monotonic() - self._held[0].arrived))
                self._cond.wait(wait)

    def _run(self) -> None:
        while (taken := self._take()) is not None:
            _SHUFFLE.shuffle(taken)  # uniformly random order: Fisher-Yates on secrets
            tag = secrets.token_hex(16)
            try:
                answers = self.send([w.body for w in taken], tag)
            except Exception:  # the sender's own failure: every request of the batch hears it
                answers = [Forwarded(502, "text/plain; charset=utf-8", b"the relay failed")] * len(
                    taken
                )
            for waiting, answer in zip(taken, answers, strict=True):
                waiting.answer = answer
                waiting.done.set()
            with self._cond:
                self._in_flight -= len(taken)
                self.batches_sent += 1
