"""The worker WebSocket protocol on the wire (README, "Worker protocol"): bounds, frame
encoders and the frame reader.

Frames are built by hand from compact JSON text: every answer is encoded once, measured once
(results are bounded by the node's ``max_result_bytes``) and batched without being parsed
again. Text is written as UTF-8 (``ensure_ascii=False``), which is also how the node measures
results and progress.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

# Bounds a hello or credit frame may ask for.
MAX_CREDIT_WINDOW = 10000
# Names and ids in a hello (worker_id, namespaces, task queue, node, activity types).
MAX_IDENTIFIER_BYTES = 1024
# The smallest max_frame_bytes a hello may state.
MIN_FRAME_BYTES = 1024
# The largest heartbeat progress, as compact JSON.
MAX_PROGRESS_BYTES = 8192
# A fail's error is cut to this length by the node; the client cuts it first.
MAX_ERROR_BYTES = 4096
# A task's input may nest this deep (a frame nests 128 levels, the task object is one).
MAX_INPUT_NESTING = 127
# The largest batch frame either side writes; a single larger message still goes alone.
MAX_BATCH_BYTES = 256 * 1024
# What a batch adds around its members: {"type":"batch","frames":[…]}, and a comma each.
BATCH_ENVELOPE_BYTES = 28

# Error codes of {"type":"error"} frames that the client acts on.
RESULT_REFUSED = "result_refused"
UNKNOWN_TASK = "unknown_task"

_encoder = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))
dumps = _encoder.encode
"""Compact JSON text of ``value``, as the node measures it. Raises TypeError for values JSON
cannot hold and ValueError for NaN and infinities (PostgreSQL's jsonb refuses them)."""


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8 (``str.isascii`` is constant time in CPython). Raises
    UnicodeEncodeError for a lone surrogate, which no frame can carry."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def batch_bytes_for(peer_max_frame_bytes: int) -> int:
    """The largest batch to write to a peer that reads frames up to ``peer_max_frame_bytes``
    (0: not stated)."""
    if 0 < peer_max_frame_bytes < MAX_BATCH_BYTES:
        return peer_max_frame_bytes
    return MAX_BATCH_BYTES


def holds_nul(value: Any) -> bool:
    """Whether a JSON value holds U+0000 in a string or key (jsonb cannot store it)."""
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(holds_nul(k) or holds_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(holds_nul(v) for v in value)
    return False


def text_holds_nul(value: Any, text: str) -> bool:
    """``holds_nul(value)`` for a value whose compact JSON is ``text``: a NUL is always
    escaped as \\u0000, so a text without that sequence needs no walk."""
    return "\\u0000" in text and holds_nul(value)


def encode_hello(
    *,
    worker_id: str,
    namespaces: Sequence[str],
    task_queue: str,
    node: Optional[str],
    activity_types: Sequence[str],
    max_in_flight: int,
    batch: bool,
    max_frame_bytes: int,
) -> str:
    frame: Dict[str, Any] = {
        "type": "hello",
        "worker_id": worker_id,
        "namespaces": list(namespaces),
        "task_queue": task_queue,
        "node": node,
        "activity_types": list(activity_types),
        "max_in_flight": max_in_flight,
    }
    if batch:
        frame["batch"] = True
        frame["max_frame_bytes"] = max_frame_bytes
    return dumps(frame)


def encode_complete(task_id: str, result_text: str) -> str:
    """A complete frame; ``result_text`` is compact JSON (see ``dumps``)."""
    return '{"type":"complete","task_id":' + dumps(task_id) + ',"result":' + result_text + "}"


def encode_fail(task_id: str, error: str, retryable: bool) -> str:
    return (
        '{"type":"fail","task_id":'
        + dumps(task_id)
        + ',"error":'
        + dumps(truncate_utf8(error, MAX_ERROR_BYTES))
        + (',"retryable":true}' if retryable else ',"retryable":false}')
    )


def encode_credit(max_in_flight: int) -> str:
    return '{"type":"credit","max_in_flight":' + str(int(max_in_flight)) + "}"


def encode_heartbeat(task_id: str, progress_text: Optional[str]) -> str:
    frame = '{"type":"heartbeat","task_id":' + dumps(task_id)
    if progress_text is not None:
        frame += ',"progress":' + progress_text
    return frame + "}"


def encode_batch(frames: Sequence[str]) -> str:
    return '{"type":"batch","frames":[' + ",".join(frames) + "]}"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` as valid UTF-8 (lone surrogates become "?") of at most ``max_bytes``, never
    cut inside a character."""
    if text.isascii():
        return text[:max_bytes]
    return text.encode("utf-8", "replace")[:max_bytes].decode("utf-8", "ignore")


class FrameError(ValueError):
    """A frame from a node that is not a JSON object with a string ``type``."""


def node_messages(text: str) -> List[Dict[str, Any]]:
    """The messages of one frame from a node: the frame itself, or the members of a batch.
    Raises FrameError for a frame that is not usable."""
    try:
        frame = json.loads(text)
    except ValueError as error:
        raise FrameError(f"frame is not valid JSON: {error}") from None
    if not isinstance(frame, dict) or not isinstance(frame.get("type"), str):
        raise FrameError("frame must be a JSON object with a string 'type'")
    if frame["type"] != "batch":
        return [frame]
    members = frame.get("frames")
    if not isinstance(members, list) or not members:
        raise FrameError("'frames' of a batch frame must be a non-empty array")
    for index, member in enumerate(members):
        if not isinstance(member, dict) or not isinstance(member.get("type"), str):
            raise FrameError(f"frames[{index}] of a batch frame must be an object with a 'type'")
    return members
