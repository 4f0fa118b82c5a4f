"""`deniable-relay --gateway URL --batch N --max-delay S`: run the relay (docs/anonymity.md).

Exit codes: 0 stopped, 1 a failure the operator can act on (one line on stderr), 2 usage.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence
from types import FrameType

from deniable.relay.batches import Batcher
from deniable.relay.forward import Forwarder
from deniable.relay.server import RelayServer

DEFAULT_BATCH = 100
DEFAULT_MAX_DELAY = 10.0
DEFAULT_QUEUE_LIMIT = 1000
DEFAULT_MAX_BODY = 64 * 1024
DEFAULT_CONNECTIONS = 4


def _positive(kind: type) -> object:
    def parse(text: str) -> object:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
        return value

    return parse


def parser() -> argparse.ArgumentParser:
    """The command's arguments."""
    found = argparse.ArgumentParser(
        prog="deniable-relay",
        description=(
            "An Oblivious HTTP relay for deniable surveys: forwards encapsulated reports to the "
            "gateway in batches, shuffled, without the senders' addresses or headers."
        ),
    )
    found.add_argument("--gateway", required=True, help="The gateway: https://AGGREGATOR/ohttp.")
    found.add_argument(
        "--batch",
        type=_positive(int),
        default=DEFAULT_BATCH,
        help=f"Requests per batch (default {DEFAULT_BATCH}).",
    )
    found.add_argument(
        "--max-delay",
        type=_positive(float),
        default=DEFAULT_MAX_DELAY,
        metavar="S",
        help=f"Seconds the oldest request waits for its batch to fill (default {DEFAULT_MAX_DELAY:g}).",
    )
    found.add_argument("--host", default="127.0.0.1", help="Interface (default 127.0.0.1).")
    found.add_argument("--port", type=int, default=8080, help="Port (default 8080; 0: any free).")
    found.add_argument(
        "--queue-limit",
        type=_positive(int),
        default=DEFAULT_QUEUE_LIMIT,
        help="Requests held at most; more get 503 with Retry-After "
        f"(default {DEFAULT_QUEUE_LIMIT}; at least --batch).",
    )
    found.add_argument(
        "--connections",
        type=_positive(int),
        default=DEFAULT_CONNECTIONS,
        help=f"Connections to the gateway a batch is sent over (default {DEFAULT_CONNECTIONS}).",
    )
    found.add_argument(
        "--max-body",
        type=_positive(int),
        default=DEFAULT_MAX_BODY,
        help=f"Bytes per request at most (default {DEFAULT_MAX_BODY}).",
    )
    return found


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point: serve until SIGINT or SIGTERM, then send what is held and stop."""
    args = parser().parse_args(argv)
    if args.queue_limit < args.batch:
        print("error: --queue-limit must be at least --batch", file=sys.stderr)
        sys.exit(2)
    try:
        forwarder = Forwarder(args.gateway, connections=args.connections)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    batcher = Batcher(
        forwarder.send, batch=args.batch, max_delay=args.max_delay, queue_limit=args.queue_limit
    )
    try:
        server = RelayServer((args.host, args.port), batcher, max_body=args.max_body)
    except OSError as exc:
        batcher.close()
        print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror}", file=sys.stderr)
        sys.exit(1)

    def stop(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(
        f"deniable relay on http://{args.host}:{server.port} -> {args.gateway} "
        f"(batches of {args.batch}, at most {args.max_delay:g} s)",
        file=sys.stderr,
        flush=True,
    )
    try:
        server.serve_forever()
    finally:
        server.server_close()  # sends what is held first
