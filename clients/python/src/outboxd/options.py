"""The settings of a Worker, validated once, and the counters it publishes."""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple, Union

from . import protocol
from .cluster import url_problem


@dataclass(frozen=True)
class WorkerOptions:
    """How a worker connects and what it asks for. Times are in seconds.

    ``urls`` are seed URLs (``ws://host:port/v1/workers`` or ``wss://…``); with
    ``follow_cluster`` the worker also connects to every node the seeds list. The credit
    window ``max_in_flight`` is the total over all node connections.
    """

    urls: Union[str, Sequence[str]]
    worker_id: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    namespaces: Sequence[str] = ("default",)
    task_queue: str = "default"
    node: Optional[str] = None  # this worker's node label (rows with this `node` only)
    max_in_flight: int = 16
    token: Optional[str] = None  # worker token, sent as Authorization: Bearer
    # wss:// verification: an SSL context of your own, or a PEM CA file; neither: the
    # system's trust store. The node's certificate must name the host of its URL.
    ssl_context: Optional[ssl.SSLContext] = None
    ca_file: Optional[str] = None
    follow_cluster: bool = True
    batch_frames: bool = True  # ask for batch frames and send answers batched
    max_frame_bytes: int = 1 << 20  # the largest frame read from a node
    reconnect_min: float = 0.1
    reconnect_max: float = 5.0
    connect_timeout: float = 5.0
    # A node silent this long (no pong) is dropped; pinged every half of it. 0: never.
    idle_timeout: float = 30.0
    close_timeout: float = 1.0  # the longest wait for a close handshake when stopping
    stop_grace: float = 30.0  # how long stop() lets in-flight tasks finish
    # Every rebalance_interval the window is re-split towards nodes that keep their credit
    # full (a backlog), away from idle ones. 0: always the even split.
    rebalance_interval: float = 0.5

    def seed_urls(self) -> Tuple[str, ...]:
        return (self.urls,) if isinstance(self.urls, str) else tuple(self.urls)

    def validate(self) -> None:
        """Raises ValueError naming the first option that cannot work."""
        seeds = self.seed_urls()
        if not seeds:
            raise ValueError("urls: at least one node URL is required")
        for url in seeds:
            problem = url_problem(url)
            if problem:
                raise ValueError(f"urls: '{url}' is not usable: {problem}")
        _identifier("worker_id", self.worker_id)
        if isinstance(self.namespaces, str) or not self.namespaces:
            raise ValueError("namespaces: a non-empty sequence of names is required")
        for name in self.namespaces:
            _identifier("namespaces", name)
        _identifier("task_queue", self.task_queue)
        if self.node is not None:
            _identifier("node", self.node)
        if not 1 <= self.max_in_flight <= protocol.MAX_CREDIT_WINDOW:
            raise ValueError(f"max_in_flight: must be 1..{protocol.MAX_CREDIT_WINDOW}, "
                             f"got {self.max_in_flight}")
        if self.token is not None and (not self.token or any(c in self.token for c in "\r\n")):
            raise ValueError("token: must be non-empty, on one line")
        if self.max_frame_bytes < protocol.MIN_FRAME_BYTES:
            raise ValueError(f"max_frame_bytes: at least {protocol.MIN_FRAME_BYTES}")
        if not 0 < self.reconnect_min <= self.reconnect_max:
            raise ValueError("reconnect_min, reconnect_max: need 0 < reconnect_min <= reconnect_max")
        for name in ("connect_timeout", "close_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}: must be positive")
        for name in ("idle_timeout", "stop_grace", "rebalance_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must not be negative")
        if self.ca_file is not None and self.ssl_context is not None:
            raise ValueError("ca_file, ssl_context: give one or the other")
        if self.ca_file is not None and not os.path.isfile(self.ca_file):
            raise ValueError(f"ca_file: no such file '{self.ca_file}'")

    def tls_context(self) -> ssl.SSLContext:
        """The context wss:// connections verify their node with."""
        if self.ssl_context is not None:
            return self.ssl_context
        try:
            context = ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as error:
            raise ValueError(f"ca_file: cannot load PEM certificates from "
                             f"'{self.ca_file}': {error}") from None
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        return context


def _identifier(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{name}: must be a non-empty string, got {value!r}")
    if "\x00" in value:
        raise ValueError(f"{name}: must not contain NUL")
    try:
        size = protocol.utf8_size(value)
    except UnicodeEncodeError:
        raise ValueError(f"{name}: must be valid UTF-8 text") from None
    if size > protocol.MAX_IDENTIFIER_BYTES:
        raise ValueError(f"{name}: at most {protocol.MAX_IDENTIFIER_BYTES} bytes, got {size}")


@dataclass
class WorkerStats:
    """Counters of one Worker since it started (a snapshot: ``Worker.stats()``)."""

    connected_nodes: int = 0
    tasks_received: int = 0
    tasks_completed: int = 0
    tasks_failed: int = 0
    tasks_in_flight: int = 0
    tasks_cancelled: int = 0  # cancel frames for tasks in flight
    errors_received: int = 0  # error frames from nodes
    answers_dropped: int = 0  # answers whose connection was gone (the node re-arms the task)
    frames_invalid: int = 0  # frames from nodes that could not be read
    reconnects: int = 0  # connection attempts after the first one per node
    drains: int = 0  # drain frames: a node began to shut down
