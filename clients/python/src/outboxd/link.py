"""One node URL a worker keeps a connection to, across reconnects: the connection of the
moment and the reconnect schedule (its credit is the worker's ledger's).

The link runs one coroutine: connect, read frames until the connection ends, then back off
and connect again, until the worker stops, drops the link (the node left the cluster) or the
node drained (a learned node then waits to be listed again).
"""

from __future__ import annotations

import asyncio
import enum
import logging
from typing import TYPE_CHECKING, Any, Dict, Optional
from urllib.parse import urlsplit, urlunsplit

from websockets.exceptions import ConnectionClosed, InvalidStatusCode, WebSocketException
from websockets.legacy.client import connect

from . import protocol
from .backoff import RetryBackoff
from .session import Session

if TYPE_CHECKING:
    from .worker import Worker

logger = logging.getLogger("outboxd.worker")

# A node that stays unreachable is reported on the first failure, then once every this many.
CONNECT_FAILURES_PER_WARNING = 20
USER_AGENT = "outboxd-python"


class Phase(enum.Enum):
    WAITING = "waiting"  # no connection; the next attempt is scheduled
    CONNECTING = "connecting"  # connection started, not upgraded yet
    OPEN = "open"  # upgraded: takes part in the credit split (its hello waits for room)
    DRAINING = "draining"  # the node said drain: answer what it sent, expect nothing new
    DORMANT = "dormant"  # drained and gone; a learned node waits to be listed again


def log_url(url: str) -> str:
    """``url`` without its query, which may hold a token."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class NodeLink:
    """Event-loop only; the Worker drives it through ``start`` and ``drop``."""

    def __init__(self, worker: "Worker", url: str, seed: bool, backoff: RetryBackoff) -> None:
        self.worker = worker
        self.url = url
        self.name = log_url(url)
        self.tls = url.startswith("wss://")
        self.seed = seed
        self.node_id: Optional[str] = None
        self.phase = Phase.WAITING
        self.session: Optional[Session] = None
        self.backoff = backoff
        self.attempts = 0  # connections started
        self.failures = 0  # attempts in a row that failed before the upgrade
        self.dropped = False
        self._runner: Optional["asyncio.Task[None]"] = None

    @property
    def connected(self) -> bool:
        return self.phase in (Phase.OPEN, Phase.DRAINING)

    def in_flight(self) -> int:
        return len(self.session.in_flight) if self.session else 0

    def start(self) -> None:
        self._runner = asyncio.get_running_loop().create_task(self._run())

    def drop(self) -> None:
        """Gives the link up: a pending attempt is abandoned, an open connection closed (its
        tasks stay unanswered; the node re-arms them)."""
        self.dropped = True
        self.interrupt()

    def interrupt(self) -> None:
        """Ends a connection attempt or a wait for the next one; an open connection is
        closed when dropped, left alone otherwise (stopping closes it after its answers)."""
        if self._runner is None:
            return
        if self.phase in (Phase.WAITING, Phase.CONNECTING, Phase.DORMANT):
            self._runner.cancel()
        elif self.dropped and self.session is not None:
            session = self.session
            session.closed = True  # nothing more goes out, nor is read, from here on
            asyncio.get_running_loop().create_task(
                session.close(self.worker.options.close_timeout))

    async def wait(self, timeout: float) -> None:
        if self._runner is not None:
            await asyncio.wait([self._runner], timeout=timeout)

    async def _run(self) -> None:
        try:
            while not self.dropped and not self.worker.stopping:
                session = await self._connect()
                if session is None:
                    await self._back_off()
                    continue
                reason = await self._serve(session)
                await session.close(self.worker.options.close_timeout)
                self.worker.on_closed(self, session, reason)
                if self.phase is Phase.DORMANT or self.dropped or self.worker.stopping:
                    return
                await self._back_off()
        except asyncio.CancelledError:
            pass

    async def _back_off(self) -> None:
        self.phase = Phase.WAITING
        delay = self.backoff.next()
        logger.debug("reconnecting to %s in %.0f ms", self.name, delay * 1000)
        await asyncio.sleep(delay)

    def _connect_arguments(self) -> Dict[str, Any]:
        options = self.worker.options
        half_idle = options.idle_timeout / 2 if options.idle_timeout > 0 else None
        arguments: Dict[str, Any] = {
            "open_timeout": options.connect_timeout,
            "ping_interval": half_idle,
            "ping_timeout": half_idle,
            "close_timeout": options.close_timeout,
            "max_size": options.max_frame_bytes,
            "compression": None,  # frames are small JSON; deflate costs more than it saves
            "user_agent_header": USER_AGENT,
        }
        if options.token is not None:
            arguments["extra_headers"] = {"Authorization": "Bearer " + options.token}
        if self.tls:
            arguments["ssl"] = self.worker.tls_context
        return arguments

    async def _connect(self) -> Optional[Session]:
        self.phase = Phase.CONNECTING
        if self.attempts > 0:
            self.worker.count_reconnect()
        self.attempts += 1
        try:
            ws = await connect(self.url, **self._connect_arguments())
        except (OSError, asyncio.TimeoutError, WebSocketException) as error:
            self.failures += 1
            if isinstance(error, InvalidStatusCode) and error.status_code == 401:
                description = "401 unauthorized (check the worker token)"
            else:
                description = str(error) or type(error).__name__
            if self.failures % CONNECT_FAILURES_PER_WARNING == 1:
                logger.warning("cannot connect to %s (%d attempt(s) so far): %s", self.name,
                               self.failures, description)
            else:
                logger.debug("cannot connect to %s: %s", self.name, description)
            return None
        session = Session(ws, self.name)
        self.session = session
        self.phase = Phase.OPEN
        logger.info("connected to %s", self.name)
        self.worker.on_opened(self)
        return session

    async def _serve(self, session: Session) -> str:
        """Reads frames until the connection ends; returns why it ended."""
        worker = self.worker
        try:
            async for text in session.ws:
                if not isinstance(text, str):
                    worker.frame_invalid(self, "a binary frame")
                    continue
                try:
                    messages = protocol.node_messages(text)
                except protocol.FrameError as error:
                    worker.frame_invalid(self, str(error))
                    continue
                for message in messages:
                    if session.closed:
                        break
                    worker.on_message(self, session, message)
        except ConnectionClosed as closed:
            return f"connection closed ({closed.code} {closed.reason})".rstrip()
        except OSError as error:
            return str(error)
        code = session.ws.close_code
        return f"closed by the node ({code})"
