"""A TCP proxy that holds every request for a fixed time before the server sees it: the latency of a
distant object store, on loopback. It counts requests and bytes, whoever the client is.

The proxy sends what it receives at once (``TCP_NODELAY`` on both of its connections) and
acknowledges the server's bytes at once (``TCP_QUICKACK``), so the delay is the only one the proxy
adds: without the first, Nagle's algorithm held a response's last segment until the client's
delayed acknowledgment, 40 ms on Linux, once or twice in every lookup probed at 20 ms
(bench/results/data-lake-object-store/stalls.txt).

A request is what a client sends after the server last spoke (or on a new connection): HTTP/1.1
clients, as object-store clients are, send one request at a time on a connection, so a request
whose body spans several reads is held once.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from dataclasses import dataclass


@dataclass
class Counts:
    requests: int = 0
    bytes_up: int = 0
    bytes_down: int = 0


class LatencyProxy:
    """Listens on a free loopback port and forwards to ``127.0.0.1:target_port``, each request held ``delay_ms``."""

    def __init__(self, target_port: int, delay_ms: float) -> None:
        self.target_port = target_port
        self.delay = delay_ms / 1000.0
        self.counts = Counts()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self._sock = sock
        self._thread = threading.Thread(target=self._run, name="latency-proxy", daemon=True)
        self._started = threading.Event()
        self._thread.start()
        self._started.wait(10)

    def snapshot(self) -> Counts:
        with self._lock:
            return Counts(self.counts.requests, self.counts.bytes_up, self.counts.bytes_down)

    def close(self) -> None:
        async def shutdown() -> None:
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def serve() -> None:
            server = await asyncio.start_server(self._handle, sock=self._sock, backlog=1024)
            self._started.set()
            async with server:
                await server.serve_forever()

        self._loop.create_task(serve())
        self._loop.run_forever()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_w.close()
            return
        for w in (client_w, server_w):
            w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        server_spoke = [True]  # a new connection's first bytes begin a request

        async def upstream() -> None:
            while data := await client_r.read(1 << 16):
                if server_spoke[0]:
                    server_spoke[0] = False
                    with self._lock:
                        self.counts.requests += 1
                    await asyncio.sleep(self.delay)
                with self._lock:
                    self.counts.bytes_up += len(data)
                server_w.write(data)
                await server_w.drain()
            server_w.close()

        upstream_socket = server_w.get_extra_info("socket")

        async def downstream() -> None:
            while data := await server_r.read(1 << 16):
                # Acknowledge at once: a server that leaves Nagle's algorithm on (s3s-fs) would
                # otherwise hold the rest of a response for the delayed acknowledgment, 40 ms on
                # Linux, a stall of loopback's that a distant store's TCP stack does not have.
                upstream_socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 1)
                server_spoke[0] = True
                with self._lock:
                    self.counts.bytes_down += len(data)
                client_w.write(data)
                await client_w.drain()
            client_w.close()

        try:
            await asyncio.gather(upstream(), downstream())
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (client_w, server_w):
                w.close()
