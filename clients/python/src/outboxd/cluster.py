"""What a worker does when a node lists the cluster's live nodes (welcome and cluster
frames): which nodes to connect to and which links to give up. Pure; the worker applies it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, List, Optional, Sequence
from urllib.parse import urlsplit


@dataclass(frozen=True)
class NodeInfo:
    """A node as a cluster list names it."""

    node_id: str
    url: str


@dataclass(frozen=True)
class KnownNode:
    """A node URL the worker keeps a link to."""

    url: str
    node_id: Optional[str] = None  # once known from a list or its welcome
    seed: bool = False
    connected: bool = False  # upgraded and not lost since


@dataclass(frozen=True)
class ClusterPlan:
    connect: List[NodeInfo] = field(default_factory=list)  # listed, not known yet
    drop: List[str] = field(default_factory=list)  # URLs of known non-seeds no longer listed


def parse_nodes(value: Any) -> List[NodeInfo]:
    """The nodes of a welcome's ``cluster`` or a cluster frame's ``nodes``; entries that are
    not objects with string ``node_id`` and ``url`` are skipped."""
    if not isinstance(value, list):
        return []
    return [
        NodeInfo(entry["node_id"], entry["url"])
        for entry in value
        if isinstance(entry, dict)
        and isinstance(entry.get("node_id"), str)
        and isinstance(entry.get("url"), str)
    ]


def plan_cluster(known: Sequence[KnownNode], listed: Sequence[NodeInfo]) -> ClusterPlan:
    """A listed node counts as known when a link has its URL or, because a seed URL may name
    a node differently from the URL it advertises, its node id while that link is connected.
    Known non-seeds that are not listed are dropped; seeds never are. An empty list says
    nothing (a live node always lists itself) and changes nothing."""
    if not listed:
        return ClusterPlan()

    def same(node: KnownNode, info: NodeInfo) -> bool:
        return info.url == node.url or (node.connected and node.node_id == info.node_id)

    plan = ClusterPlan()
    for info in listed:
        planned = any(other.url == info.url for other in plan.connect)
        if not planned and not any(same(node, info) for node in known):
            plan.connect.append(info)
    for node in known:
        if not node.seed and not any(same(node, info) for info in listed):
            plan.drop.append(node.url)
    return plan


def url_problem(url: str) -> Optional[str]:
    """Why ``url`` cannot be a node's worker URL (ws:// or wss://host[:port]/path), or None."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError when out of range or not a number
    except ValueError as error:
        return str(error)
    if parts.scheme not in ("ws", "wss"):
        return "not a ws:// or wss:// URL"
    if not parts.hostname or "@" in parts.netloc:
        return "no host (or a user part, which carries no token here)"
    if port == 0:
        return "port 0"
    return None
