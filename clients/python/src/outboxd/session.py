"""One WebSocket connection to a node, from its hello to its close: the tasks it holds, what
its welcome said, and its write queue.

Writes never wait for each other: ``send`` queues a frame and returns; one writer coroutine
sends whatever queued up while its previous write was in flight, as a single batch frame
once the node's welcome said it reads them. So batches form only under load and a lone
answer leaves at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Deque, Dict, Optional

from websockets.exceptions import ConnectionClosed
from websockets.legacy.client import WebSocketClientProtocol

from . import protocol

if TYPE_CHECKING:
    from .task import Context

logger = logging.getLogger("outboxd.worker")


class Session:
    """Event-loop only. ``in_flight`` holds the tasks received on this connection and not
    answered yet; it is emptied when the connection ends (the node re-arms them)."""

    def __init__(self, ws: WebSocketClientProtocol, url: str) -> None:
        self.ws = ws
        self.url = url  # for log lines: no query, so no token
        self.in_flight: Dict[str, "Context"] = {}
        self.node_id: Optional[str] = None
        self.max_result_bytes = 0  # from the welcome; 0: not stated
        self.node_max_frame_bytes = 0  # the largest frame the node reads; 0: not stated
        self.batch_bytes = 0  # 0 until the welcome says the node reads batches
        self.closed = False
        self._queue: Deque[str] = deque()
        self._wake = asyncio.Event()
        self._empty = asyncio.Event()
        self._empty.set()
        self._writer = asyncio.get_running_loop().create_task(self._write_loop())

    def send(self, frame: str) -> None:
        """Queues a frame; dropped once the session is closed."""
        if self.closed:
            return
        self._queue.append(frame)
        self._empty.clear()
        self._wake.set()

    def send_heartbeat(self, context: "Context", frame: str) -> None:
        """A heartbeat goes out only while its task is in flight here."""
        if self.in_flight.get(context.task_id) is context:
            self.send(frame)

    async def flush(self, timeout: float) -> bool:
        """Waits until every queued frame was written; False on timeout or close."""
        try:
            await asyncio.wait_for(self._empty.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return not self.closed

    async def close(self, timeout: float) -> None:
        """Closes the connection (the close handshake waits at most ``timeout``)."""
        self.closed = True
        self._writer.cancel()
        self.ws.close_timeout = timeout
        try:
            await self.ws.close()
        except (ConnectionClosed, OSError):
            pass

    def _take(self) -> str:
        """The next write: the first queued frame, with as many of the following ones as fit
        one batch frame of ``batch_bytes``."""
        queue = self._queue
        first = queue.popleft()
        if not self.batch_bytes or not queue:
            return first
        size = protocol.BATCH_ENVELOPE_BYTES + protocol.utf8_size(first)
        members = [first]
        while queue:
            grown = size + protocol.utf8_size(queue[0]) + 1
            if grown > self.batch_bytes:
                break
            size = grown
            members.append(queue.popleft())
        return first if len(members) == 1 else protocol.encode_batch(members)

    async def _write_loop(self) -> None:
        queue = self._queue
        while True:
            if not queue:
                self._empty.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            text = self._take()
            try:
                await self.ws.send(text)
            except ConnectionClosed:
                self._queue.clear()
                self._empty.set()
                return
