"""The asyncio worker: runs activity handlers for tasks from every node of a cluster.

Given one seed URL, the worker connects to every live node it learns of from ``welcome`` and
``cluster`` frames, splits its credit window over those connections (``credit_ledger.py``),
reconnects with backoff, and answers every task it runs once: the handler's return value
completes it, an exception fails it. A node's ``drain`` frame, ``stop()``, SIGTERM and SIGINT
stop taking tasks and let the ones in flight finish.

Everything runs on the event loop of ``run()``: handlers must not block it (run blocking work
with ``asyncio.to_thread``). ``stop()`` must be called on that loop (from another thread:
``loop.call_soon_threadsafe(worker.stop)``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import logging
import random
import re
import signal
import ssl
import time
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Set, Tuple

from . import protocol
from .backoff import RetryBackoff
from .cluster import NodeInfo, KnownNode, parse_nodes, plan_cluster, url_problem
from .credit_ledger import CreditFrame, CreditLedger
from .link import NodeLink, Phase, log_url
from .options import WorkerOptions, WorkerStats
from .session import Session
from .task import ActivityError, Context, Task, TaskFrameError

logger = logging.getLogger("outboxd.worker")

Handler = Callable[[Task, Context], Awaitable[Any]]

# The task id an error frame of code result_refused names ("result of task 'X' …").
_REFUSED_TASK = re.compile(r"task '([^']{1,64})'")
_STOPPING = "worker stopping"


class Worker:
    """Register handlers with ``activity`` (a decorator) or ``register``, then
    ``await worker.run()``. Raises ValueError naming an option that cannot work."""

    def __init__(self, options: WorkerOptions, handlers: Optional[Mapping[str, Handler]] = None,
                 *, rng: Optional[random.Random] = None) -> None:
        options.validate()
        self.options = options
        self._handlers: Dict[str, Handler] = {}
        self._started = False
        for activity_type, handler in (handlers or {}).items():
            self.register(activity_type, handler)
        self._rng = rng or random.Random()
        seeds = options.seed_urls()
        # Seeded over TLS, the worker never follows a node to plain ws:// (its token and
        # tasks would leave TLS on the word of a cluster list).
        self._tls_seeded = any(url.startswith("wss://") for url in seeds)
        # Built up front, so that a CA file that cannot be loaded fails here, not on connect.
        self.tls_context: ssl.SSLContext = options.tls_context()
        self._links: List[NodeLink] = []  # seeds first, then in the order learned
        # The credit of each connection, keyed by its Session.
        self._ledger = CreditLedger(options.max_in_flight, options.rebalance_interval)
        self._settle_timer: Optional[asyncio.TimerHandle] = None
        self._settle_at: Optional[float] = None
        self._stats = WorkerStats()
        self._failure_log = RateLimitedLog(logger)
        self._runners: Set["asyncio.Task[None]"] = set()  # strong references to handler tasks
        self.stopping = False
        # Events bind to the loop that first waits on them (run's).
        self._stop_requested = asyncio.Event()
        self._hurry = asyncio.Event()  # a second stop: no more waiting for tasks
        self._idle = asyncio.Event()  # stopping and nothing in flight

    # Registration.

    def register(self, activity_type: str, handler: Handler) -> None:
        """Runs ``handler(task, context)`` for tasks of ``activity_type``. Before ``run``."""
        if self._started:
            raise RuntimeError("handlers must be registered before run()")
        if not activity_type or not isinstance(activity_type, str):
            raise ValueError(f"activity type must be a non-empty string, got {activity_type!r}")
        call = getattr(handler, "__call__", None)
        if not (inspect.iscoroutinefunction(handler) or inspect.iscoroutinefunction(call)):
            raise TypeError(f"the handler of '{activity_type}' must be an async function")
        self._handlers[activity_type] = handler

    def activity(self, activity_type: str) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``."""
        def decorate(handler: Handler) -> Handler:
            self.register(activity_type, handler)
            return handler
        return decorate

    # Lifecycle.

    async def run(self, *, handle_signals: bool = True) -> None:
        """Connects and runs tasks until ``stop()`` (or SIGTERM/SIGINT with
        ``handle_signals``), then lets tasks in flight finish within ``stop_grace``, fails
        the rest as retryable ("worker stopping") and closes every connection. Once only."""
        if self._started:
            raise RuntimeError("a Worker runs once")
        if not self._handlers:
            raise ValueError("no handlers registered: the hello needs activity types")
        self._started = True
        loop = asyncio.get_running_loop()
        signals = (signal.SIGTERM, signal.SIGINT) if handle_signals else ()
        for signum in signals:
            loop.add_signal_handler(signum, self.stop)
        rebalancer = None
        try:
            for url in self.options.seed_urls():
                self._add_link(url, seed=True)
            if self.options.rebalance_interval > 0:
                rebalancer = loop.create_task(self._rebalance_periodically())
            await self._stop_requested.wait()
            if rebalancer is not None:
                rebalancer.cancel()
            await self._shutdown()
        except asyncio.CancelledError:
            # Cancelled from outside (no graceful stop): give every connection up at once;
            # the nodes re-arm what was in flight.
            self.stopping = True
            for link in self._links:
                link.drop()
            raise
        finally:
            for signum in signals:
                loop.remove_signal_handler(signum)
            if rebalancer is not None:
                rebalancer.cancel()

    def stop(self) -> None:
        """Begins the stop (see ``run``); a second call cuts the grace short."""
        if self._stop_requested.is_set():
            logger.info("stop requested again: not waiting for tasks in flight")
            self._hurry.set()
        self._stop_requested.set()

    def stats(self) -> WorkerStats:
        """A snapshot of the counters."""
        return dataclasses.replace(
            self._stats,
            connected_nodes=sum(1 for link in self._links if link.connected),
            tasks_in_flight=self._in_flight_count())

    def connected_urls(self) -> List[str]:
        """URLs of the nodes connected right now."""
        return [link.url for link in self._links if link.connected]

    async def _shutdown(self) -> None:
        self.stopping = True
        if self._settle_timer is not None:
            self._settle_timer.cancel()
        logger.info("stopping; %d task(s) in flight", self._in_flight_count())
        for link in self._links:
            link.interrupt()
            if link.connected and link.session is not None:
                link.session.send(protocol.encode_credit(0))
        if self._in_flight_count() > 0:
            waiters = [asyncio.ensure_future(self._idle.wait()),
                       asyncio.ensure_future(self._hurry.wait())]
            await asyncio.wait(waiters, timeout=self.options.stop_grace,
                               return_when=asyncio.FIRST_COMPLETED)
            for waiter in waiters:
                waiter.cancel()
        for link in self._links:
            session = link.session
            if session is None:
                continue
            for context in list(session.in_flight.values()):
                context.answered = True
                session.send(protocol.encode_fail(context.task_id, _STOPPING, True))
                self._stats.tasks_failed += 1
                if context.runner is not None:
                    context.runner.cancel()
            session.in_flight.clear()
        sessions = [link.session for link in self._links if link.session is not None]
        timeout = self.options.close_timeout
        await asyncio.gather(*(session.flush(timeout) for session in sessions))
        await asyncio.gather(*(session.close(timeout) for session in sessions))
        for link in self._links:
            await link.wait(timeout)
        if self._runners:
            await asyncio.wait(list(self._runners), timeout=timeout)
        logger.info("stopped")

    # Links.

    def _add_link(self, url: str, seed: bool) -> Optional[NodeLink]:
        for link in self._links:
            if link.url == url:
                return link
        problem = url_problem(url)
        if problem:
            logger.warning("ignoring node URL '%s': %s", log_url(url), problem)
            return None
        if not seed and self._tls_seeded and not url.startswith("wss://"):
            logger.warning("ignoring node URL '%s': the seeds are wss://, it is not", log_url(url))
            return None
        link = NodeLink(self, url, seed, RetryBackoff(self.options.reconnect_min,
                                                      self.options.reconnect_max,
                                                      random.Random(self._rng.random())))
        self._links.append(link)
        link.start()
        return link

    def _remove_link(self, link: NodeLink) -> None:
        if link not in self._links:
            return
        logger.info("node %s left the cluster; closing", link.name)
        self._links.remove(link)
        if link.session is not None:
            # Its tasks leave the window now: the node re-arms them when the connection goes.
            self._apply_credit(self._ledger.close(link.session, time.monotonic()))
        link.drop()

    # Connection events (from NodeLink).

    def count_reconnect(self) -> None:
        self._stats.reconnects += 1

    def frame_invalid(self, link: NodeLink, why: str) -> None:
        self._stats.frames_invalid += 1
        logger.warning("unusable frame from %s: %s", link.name, why)

    def on_opened(self, link: NodeLink) -> None:
        assert link.session is not None
        # Its hello goes out once the window has room for it (often at once).
        self._apply_credit(self._ledger.open(link.session, time.monotonic()))

    def on_closed(self, link: NodeLink, session: Session, reason: str) -> None:
        drained = link.phase is Phase.DRAINING
        was_up = drained or link.phase is Phase.OPEN
        if session.in_flight:
            logger.warning("lost %s with %d task(s) unanswered; the node re-arms them",
                           link.name, len(session.in_flight))
            for context in session.in_flight.values():
                context._cancel("the connection to the node was lost")
            session.in_flight.clear()
        link.session = None
        if self.stopping or link.dropped:
            link.phase = Phase.WAITING
        elif drained and not link.seed:
            logger.info("%s drained; waiting for it to be listed again", link.name)
            link.phase = Phase.DORMANT
        elif drained:
            logger.info("seed %s drained; reconnecting after backoff", link.name)
        elif was_up:
            logger.warning("disconnected from %s: %s", link.name, reason)
        self._apply_credit(self._ledger.close(session, time.monotonic()))
        self._check_idle()

    def on_message(self, link: NodeLink, session: Session, message: Dict[str, Any]) -> None:
        """One message of a frame from ``link``'s node. A fault here ends this message only."""
        kind = message["type"]
        try:
            if kind == "task":
                self._on_task(link, session, message)
            elif kind == "cancel":
                self._on_cancel(link, session, message)
            elif kind == "welcome":
                self._on_welcome(link, session, message)
            elif kind == "cluster":
                self._on_cluster(parse_nodes(message.get("nodes")))
            elif kind == "drain":
                self._on_drain(link)
            elif kind == "error":
                self._on_error(link, session, message)
            else:
                logger.debug("ignoring a frame of type '%s' from %s", kind, link.name)
        except Exception:  # a bug must not end the connection, nor the worker
            logger.exception("could not handle a '%s' frame from %s", kind, link.name)

    # Frames from nodes.

    def _on_welcome(self, link: NodeLink, session: Session, welcome: Dict[str, Any]) -> None:
        node_id = welcome.get("node_id")
        logger.info("%s is node %s (session %s)", link.name, node_id, welcome.get("session_id"))
        link.node_id = session.node_id = node_id if isinstance(node_id, str) else None
        session.max_result_bytes = _natural(welcome.get("max_result_bytes"))
        session.node_max_frame_bytes = _natural(welcome.get("max_frame_bytes"))
        # One node, one link: a seed may name a node differently from the URL it advertises.
        # The seed stays; a learned link to the same node goes.
        for other in list(self._links):
            if other is link or other.node_id != link.node_id or link.node_id is None:
                continue
            if link.seed and not other.seed:
                self._remove_link(other)
            elif not link.seed and other.seed and other.connected:
                self._remove_link(link)
                return
        # Reset only once the node accepted the hello: one that upgrades and then refuses
        # (a draining node) must keep backing off.
        link.backoff.reset()
        link.failures = 0
        if welcome.get("batch") is True and self.options.batch_frames:
            session.batch_bytes = protocol.batch_bytes_for(session.node_max_frame_bytes)
        self._on_cluster(parse_nodes(welcome.get("cluster")))

    def _on_cluster(self, nodes: List[NodeInfo]) -> None:
        if not self.options.follow_cluster or self.stopping:
            return
        known = [KnownNode(link.url, link.node_id, link.seed, link.connected)
                 for link in self._links]
        plan = plan_cluster(known, nodes)
        for url in plan.drop:
            for link in [link for link in self._links if link.url == url]:
                self._remove_link(link)
        for info in plan.connect:
            learned = self._add_link(info.url, seed=False)
            if learned is not None:
                logger.info("learned node %s at %s", info.node_id, learned.name)
                learned.node_id = info.node_id

    def _on_drain(self, link: NodeLink) -> None:
        if link.phase is not Phase.OPEN:
            return
        logger.info("%s is draining; %d task(s) of it in flight", link.name, link.in_flight())
        self._stats.drains += 1
        link.phase = Phase.DRAINING
        if link.session is not None:
            self._apply_credit(self._ledger.drain(link.session, time.monotonic()))

    def _on_cancel(self, link: NodeLink, session: Session, frame: Dict[str, Any]) -> None:
        context = session.in_flight.get(frame.get("task_id"))  # type: ignore[arg-type]
        if context is None or context.cancelled:
            return  # answered already, or told before
        reason = frame.get("reason")
        logger.info("%s cancelled task %s: %s", link.name, context.task_id, reason)
        context._cancel(reason if isinstance(reason, str) else None)
        self._stats.tasks_cancelled += 1

    def _on_error(self, link: NodeLink, session: Session, frame: Dict[str, Any]) -> None:
        self._stats.errors_received += 1
        code, message = frame.get("code"), str(frame.get("message", ""))
        if code == protocol.UNKNOWN_TASK:
            # A late answer (a cancelled or timed-out task): it changed nothing.
            logger.debug("%s reported %s: %s", link.name, code, message)
            return
        logger.warning("%s reported %s: %s", link.name, code, message)
        if code == protocol.RESULT_REFUSED:
            # The node kept the task outstanding; the result was checked against
            # max_result_bytes before it was sent, so only a differently measured one gets
            # here. Fail it for good rather than let it time out and come back.
            match = _REFUSED_TASK.search(message)
            if match:
                session.send(protocol.encode_fail(
                    match.group(1), "the node refused the worker's result: " + message, False))

    def _on_task(self, link: NodeLink, session: Session, frame: Dict[str, Any]) -> None:
        self._stats.tasks_received += 1
        task_id = frame.get("task_id")
        if not isinstance(task_id, str):
            self.frame_invalid(link, "a task frame without a task_id")
            return
        try:
            task = Task.from_frame(frame)
        except TaskFrameError as error:
            self._stats.tasks_failed += 1
            session.send(protocol.encode_fail(task_id, f"worker could not read it: {error}", False))
            return
        if self.stopping:
            # Sent before our credit 0 arrived: hand it straight back.
            self._stats.tasks_failed += 1
            session.send(protocol.encode_fail(task_id, _STOPPING, True))
            return
        handler = self._handlers.get(task.activity_type)
        if handler is None:
            self._stats.tasks_failed += 1
            session.send(protocol.encode_fail(
                task_id, f"no handler for activity type '{task.activity_type}'", True))
            return
        self._ledger.received(session, time.monotonic())
        context = Context(task_id, session)
        session.in_flight[task_id] = context
        runner = asyncio.get_running_loop().create_task(
            self._execute(handler, task, context, link, session))
        context.runner = runner
        self._runners.add(runner)
        runner.add_done_callback(self._runners.discard)

    # Tasks.

    async def _execute(self, handler: Handler, task: Task, context: Context, link: NodeLink,
                       session: Session) -> None:
        try:
            result = await handler(task, context)
        except ActivityError as error:
            frame = protocol.encode_fail(task.task_id, str(error), error.retryable)
            completed = False
        except asyncio.CancelledError:
            if context.answered:
                raise  # stopping: the task was failed already
            frame = protocol.encode_fail(task.task_id, "the handler was cancelled", True)
            completed = False
        except Exception as error:
            self._failure_log.warning("task %s (%s) failed: %s: %s", task.task_id,
                                      task.activity_type, type(error).__name__, error,
                                      exc_info=logger.isEnabledFor(logging.DEBUG))
            frame = protocol.encode_fail(task.task_id, f"{type(error).__name__}: {error}", True)
            completed = False
        else:
            frame, completed = self._complete_frame(task.task_id, result, session)
        self._deliver(context, link, session, frame, completed)

    def _complete_frame(self, task_id: str, result: Any, session: Session) -> Tuple[str, bool]:
        """The complete frame of ``result``, or a non-retryable fail when the node could not
        keep it (as the node measures it: compact JSON, U+0000 refused)."""
        try:
            text = protocol.dumps(result)
            size = protocol.utf8_size(text)
        except (TypeError, ValueError) as error:
            return self._refuse(task_id, f"is not JSON ({error})"), False
        if text != "null":
            limit = session.max_result_bytes
            if limit and size > limit:
                return self._refuse(task_id, f"is {size} bytes, more than the node keeps "
                                             f"({limit})"), False
            if protocol.text_holds_nul(result, text):
                return self._refuse(task_id, "contains U+0000, which the node cannot store"), False
        frame = protocol.encode_complete(task_id, text)
        frame_limit = session.node_max_frame_bytes
        if frame_limit and len(frame) - len(text) + size > frame_limit:
            return self._refuse(task_id, f"makes a frame larger than the node reads "
                                         f"({frame_limit} bytes)"), False
        return frame, True

    @staticmethod
    def _refuse(task_id: str, why: str) -> str:
        logger.error("task %s completed with a result that %s", task_id, why)
        return protocol.encode_fail(task_id, "worker produced a result that " + why, False)

    def _deliver(self, context: Context, link: NodeLink, session: Session, frame: str,
                 completed: bool) -> None:
        if context.answered:
            return
        context.answered = True
        if session.closed or session.in_flight.get(context.task_id) is not context:
            # The connection it came on is gone; the node re-arms the task itself.
            self._stats.answers_dropped += 1
            return
        del session.in_flight[context.task_id]
        session.send(frame)
        if completed:
            self._stats.tasks_completed += 1
        else:
            self._stats.tasks_failed += 1
        # After the answer: a credit frame it makes room for goes out behind it.
        self._apply_credit(self._ledger.answered(session, time.monotonic()))
        if self.stopping:
            self._check_idle()

    def _in_flight_count(self) -> int:
        return sum(link.in_flight() for link in self._links)

    def _check_idle(self) -> None:
        if self.stopping and self._in_flight_count() == 0:
            self._idle.set()

    # Credit.

    async def _rebalance_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.options.rebalance_interval)
            self._apply_credit(self._ledger.tick(time.monotonic()))

    def _apply_credit(self, frames: List[CreditFrame]) -> None:
        """Sends what the ledger decided: hellos and credit frames."""
        if self.stopping:
            return
        for frame in frames:
            session = frame.connection
            if frame.hello:
                options = self.options
                session.send(protocol.encode_hello(
                    worker_id=options.worker_id, namespaces=options.namespaces,
                    task_queue=options.task_queue, node=options.node,
                    activity_types=list(self._handlers), max_in_flight=frame.credit,
                    batch=options.batch_frames, max_frame_bytes=options.max_frame_bytes))
            else:
                logger.debug("credit for %s: %d", session.url, frame.credit)
                session.send(protocol.encode_credit(frame.credit))
        self._arm_settle()

    def _arm_settle(self) -> None:
        """Keeps a timer for the earliest lowered credit the ledger will release."""
        due = self._ledger.settle_due()
        if due is None or (self._settle_at is not None and self._settle_at <= due):
            return
        if self._settle_timer is not None:
            self._settle_timer.cancel()
        self._settle_at = due
        self._settle_timer = asyncio.get_running_loop().call_later(
            max(due - time.monotonic(), 0.0), self._on_settle)

    def _on_settle(self) -> None:
        self._settle_timer = None
        self._settle_at = None
        self._apply_credit(self._ledger.settle(time.monotonic()))


class RateLimitedLog:
    """Warnings of the task path (a handler that raises on every task would otherwise log a
    line per task): at most ``burst`` lines per ``period`` seconds, then one line saying how
    many were left out."""

    def __init__(self, target: logging.Logger, burst: int = 10, period: float = 10.0) -> None:
        self._target = target
        self._burst = burst
        self._period = period
        self._window_start = -period
        self._logged = 0
        self._suppressed = 0

    def warning(self, message: str, *args: Any, exc_info: bool = False) -> None:
        now = time.monotonic()
        if now - self._window_start >= self._period:
            if self._suppressed:
                self._target.warning("%d more such line(s) left out in the last %.0f s",
                                     self._suppressed, self._period)
            self._window_start, self._logged, self._suppressed = now, 0, 0
        if self._logged < self._burst:
            self._logged += 1
            self._target.warning(message, *args, exc_info=exc_info)
        else:
            self._suppressed += 1


def _natural(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
