"""A plain static file server (python's http.server) of one directory on a free port: any
static host, for the tests of pages hosted elsewhere than the aggregator."""

from __future__ import annotations

import functools
import http.server
import threading
from pathlib import Path


class StaticHost:
    """Serves `root` at `url` until `close()`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
        handler.log_message = lambda *args: None  # type: ignore[attr-defined]
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(10)
