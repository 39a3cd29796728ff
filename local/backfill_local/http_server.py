"""A ThreadingHTTPServer in a daemon thread: the lifecycle every local double shares."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class BackgroundHTTPServer:
    """Serve `handler` on host:port (port 0: the OS picks) until `stop()`."""

    def __init__(
        self, handler: type[BaseHTTPRequestHandler], *, host: str = "127.0.0.1", port: int = 0, name: str
    ):
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)
