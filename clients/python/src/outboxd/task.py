"""What a handler gets: the task as the node sent it, and a context to heartbeat and to
learn of a cancel through."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, Optional

from . import protocol

if TYPE_CHECKING:
    from .session import Session

logger = logging.getLogger("outboxd.worker")


class ActivityError(Exception):
    """Raise from a handler to fail its task with this message. ``retryable`` (default
    True) retries it after the backoff; False dead-letters it at once. Any other exception
    fails the task as retryable, with the exception's type and message as the error."""

    def __init__(self, message: str, *, retryable: bool = True) -> None:
        super().__init__(message)
        self.retryable = retryable


class NonRetryableError(ActivityError):
    """A failure that no retry can mend (bad input, a declined card): dead-letters the task."""

    def __init__(self, message: str) -> None:
        super().__init__(message, retryable=False)


# The database of a task frame that names none.
DEFAULT_DATABASE = "default"


class TaskFrameError(ValueError):
    """A task frame without a field the protocol requires."""


@dataclass(frozen=True)
class Task:
    """One delivery of an outbox row (README, "Worker protocol"). Delivery is at least once, so
    make the effect idempotent on ``dispatch_key``. ``delivery`` counts this row's deliveries,
    this one included (1: the first; it grows on every redelivery, whatever its cause; 0 from
    nodes too old to say); ``attempt`` counts tries, growing only when one failed.
    ``database`` names the outbox database the row is in ("default" on a node with one
    database, and from nodes too old to say)."""

    __slots__ = (
        "task_id", "dispatch_key", "workflow_id", "ordinal", "run_id", "namespace",
        "task_queue", "node", "activity_type", "input", "attempt", "timeout_ms", "priority",
        "heartbeat_timeout_ms", "traceparent", "database", "delivery",
    )

    task_id: str
    dispatch_key: str
    workflow_id: str
    ordinal: int
    run_id: Optional[str]
    namespace: str
    task_queue: str
    node: Optional[str]
    activity_type: str
    input: Any
    attempt: int
    timeout_ms: int  # 0: no total limit (a heartbeating task)
    priority: int
    heartbeat_timeout_ms: Optional[int]  # heartbeat at least this often, when set
    traceparent: Optional[str]  # W3C trace context of the request that staged the row
    database: str  # the outbox database of the row
    delivery: int  # one-based count of the row's deliveries; 0 from nodes too old to say

    @property
    def trace_id(self) -> Optional[str]:
        """The 32-hex trace id of ``traceparent``, when there is one."""
        return self.traceparent[3:35] if self.traceparent else None

    @classmethod
    def from_frame(cls, frame: Dict[str, Any]) -> "Task":
        """Raises TaskFrameError naming a required field the frame lacks."""
        get = frame.get
        try:
            return cls(
                frame["task_id"], frame["dispatch_key"], frame["workflow_id"], frame["ordinal"],
                get("run_id"), frame["namespace"], frame["task_queue"], get("node"),
                frame["activity_type"], get("input"), frame["attempt"], get("timeout_ms", 0),
                get("priority", 0), get("heartbeat_timeout_ms"), get("traceparent"),
                _database(get("database")), _delivery(get("delivery")),
            )
        except KeyError as missing:
            raise TaskFrameError(f"task frame has no {missing}") from None


def _delivery(value: Any) -> int:
    """A task frame's delivery count; older nodes leave it out (0: unknown)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _database(value: Any) -> str:
    """A task frame's database; older nodes leave it out: theirs is the default one."""
    return value if isinstance(value, str) and value else DEFAULT_DATABASE


class Context:
    """A task's link back to its node, for the handler. Valid while the task runs; every
    method is a no-op once the task is answered."""

    __slots__ = ("task_id", "_session", "answered", "_cancelled", "_cancel_reason", "_event",
                 "runner")

    def __init__(self, task_id: str, session: "Session") -> None:
        self.task_id = task_id
        self._session = session
        self.answered = False  # set once: the one answer is decided
        self._cancelled = False
        self._cancel_reason: Optional[str] = None
        # Made on first use only: most tasks never wait for a cancel.
        self._event: Optional[asyncio.Event] = None
        self.runner: Optional["asyncio.Task[None]"] = None  # the asyncio task running the handler

    @property
    def cancelled(self) -> bool:
        """Whether the node cancelled the task (its workflow was cancelled, or the task is no
        longer outstanding): stop, and answer as you like, the answer changes nothing."""
        return self._cancelled

    @property
    def cancel_reason(self) -> Optional[str]:
        return self._cancel_reason

    @property
    def node_id(self) -> Optional[str]:
        """The node that sent the task (from its welcome)."""
        return self._session.node_id

    @property
    def cancel_event(self) -> asyncio.Event:
        """An event set when the task is cancelled, e.g. for ``asyncio.wait``."""
        if self._event is None:
            self._event = asyncio.Event()
            if self._cancelled:
                self._event.set()
        return self._event

    async def wait_cancelled(self) -> None:
        """Returns once the task is cancelled."""
        await self.cancel_event.wait()

    def heartbeat(self, progress: Any = None) -> None:
        """Keeps a long task alive (README, "Task policy and heartbeats"): call it well
        within the task's ``heartbeat_timeout_ms``. ``progress``, any JSON value of at most
        8 KiB compact, is shown by ``GET /v1/outbox/{key}``; progress that cannot be sent
        (not JSON, too large, holding U+0000) is left out and logged, the heartbeat still
        counts. Returns at once: the frame is queued."""
        if self.answered:
            return
        progress_text = None
        if progress is not None:
            progress_text = _progress_text(self.task_id, progress)
        self._session.send_heartbeat(self, protocol.encode_heartbeat(self.task_id, progress_text))

    def _cancel(self, reason: Optional[str]) -> None:
        if self._cancelled:
            return
        self._cancelled = True
        self._cancel_reason = reason
        if self._event is not None:
            self._event.set()


def _progress_text(task_id: str, progress: Any) -> Optional[str]:
    try:
        text = protocol.dumps(progress)
        size = protocol.utf8_size(text)
    except (TypeError, ValueError) as error:
        logger.warning("heartbeat of task %s sent without its progress: not JSON: %s",
                       task_id, error)
        return None
    if size > protocol.MAX_PROGRESS_BYTES:
        logger.warning("heartbeat of task %s sent without its progress: %d bytes, at most %d",
                       task_id, size, protocol.MAX_PROGRESS_BYTES)
        return None
    if protocol.text_holds_nul(progress, text):
        logger.warning("heartbeat of task %s sent without its progress: it holds U+0000",
                       task_id)
        return None
    return text
