"""Staging rows into the outbox inside the application's own transaction (README, "The
outbox table (public contract)").

``stage(cursor, rows)`` inserts every row in one statement (the rows travel as one JSON
array, read by ``jsonb_to_recordset``) with ``ON CONFLICT (dispatch_key) DO NOTHING``: a re-issued batch is a no-op, and the
rows commit or roll back with the caller's transaction. Rows are checked before anything is
sent, so a bad row raises StageError naming its index and field, and nothing is inserted.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, fields
from typing import (TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, NamedTuple, Optional,
                    Tuple, Union)

from . import protocol

if TYPE_CHECKING:
    import psycopg

MIN_PRIORITY = 0
MAX_PRIORITY = 100
MAX_ORDINAL = 2**63 - 1
_TRACEPARENT = re.compile(r"[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}")

# One statement for any number of rows, with the rows as one JSON array parameter: psycopg
# dumps a single text, where 13 arrays of 20,000 elements took it 0.46 s of pure Python, and
# PostgreSQL reads the array with jsonb_to_recordset. Fields a row leaves out are NULL and
# take the table's defaults here (a NULL dispatch_key is filled by the table's trigger as
# workflow_id:ordinal); visible_after is an instant, or a delay after the database's now(),
# so that "not before" is judged by the clock every node uses.
STAGE_SQL = """
INSERT INTO outbox (workflow_id, ordinal, activity_type, input, namespace, task_queue, node,
                    run_id, dispatch_key, visible_after, priority, traceparent)
SELECT r.workflow_id, r.ordinal, r.activity_type, coalesce(r.input, 'null'),
       coalesce(r.namespace, 'default'), coalesce(r.task_queue, 'default'), r.node, r.run_id,
       r.dispatch_key,
       coalesce(r.visible_at, now() + r.visible_in_s * interval '1 second', now()),
       coalesce(r.priority, 0), r.traceparent
FROM jsonb_to_recordset(%s::jsonb)
     AS r(workflow_id text, ordinal bigint, activity_type text, input jsonb, namespace text,
          task_queue text, node text, run_id text, dispatch_key text, visible_at timestamptz,
          visible_in_s double precision, priority smallint, traceparent text)
ON CONFLICT (dispatch_key) DO NOTHING
"""


class StageError(ValueError):
    """A row that the outbox would refuse, or that no worker could ever run; names the row's
    index and the field."""


class StageResult(NamedTuple):
    staged: int  # rows inserted
    duplicates: int  # rows whose dispatch_key was already in the outbox (or repeated)


@dataclass(frozen=True)
class OutboxRow:
    """One row to stage; fields as the outbox table has them. Optional fields left None
    take the table's defaults (``namespace`` and ``task_queue`` "default", ``dispatch_key``
    ``workflow_id:ordinal``, ``visible_after`` now, ``priority`` 0). ``visible_after`` is
    an aware datetime, or a timedelta after the database's clock."""

    workflow_id: str
    ordinal: int
    activity_type: str
    input: Any = None
    namespace: Optional[str] = None
    task_queue: Optional[str] = None
    node: Optional[str] = None
    run_id: Optional[str] = None
    dispatch_key: Optional[str] = None
    visible_after: Optional[Union[dt.datetime, dt.timedelta]] = None
    priority: Optional[int] = None
    traceparent: Optional[str] = None


_FIELDS = tuple(f.name for f in fields(OutboxRow))
_REQUIRED = ("workflow_id", "ordinal", "activity_type")
_OPTIONAL_NAMES = ("namespace", "task_queue", "node", "run_id", "dispatch_key")
RowLike = Union[OutboxRow, Mapping[str, Any]]


def stage(cursor: "psycopg.Cursor[Any]", rows: Iterable[RowLike]) -> StageResult:
    """Inserts ``rows`` (OutboxRow objects or mappings with the same keys) through
    ``cursor``, in the transaction it is in; the caller commits. Raises StageError for a bad
    row (nothing is sent) and psycopg's errors for what the database refuses."""
    document, count = rows_document(rows)
    if count == 0:
        return StageResult(0, 0)
    cursor.execute(STAGE_SQL, (document,))
    return StageResult(cursor.rowcount, count - cursor.rowcount)


async def astage(cursor: "psycopg.AsyncCursor[Any]", rows: Iterable[RowLike]) -> StageResult:
    """``stage`` for an asyncio cursor (``psycopg.AsyncConnection``)."""
    document, count = rows_document(rows)
    if count == 0:
        return StageResult(0, 0)
    await cursor.execute(STAGE_SQL, (document,))
    return StageResult(cursor.rowcount, count - cursor.rowcount)


def rows_document(rows: Iterable[RowLike]) -> Tuple[str, int]:
    """The JSON array STAGE_SQL reads, and how many rows it holds. Each row is checked and
    written as it comes; optional fields left None are left out."""
    dumps = protocol.dumps
    objects: List[str] = []
    for index, row in enumerate(rows):
        values = _values(index, row)
        parts = [
            '{"workflow_id":', dumps(_name(index, "workflow_id", values["workflow_id"], True)),
            ',"ordinal":', str(_ordinal(index, values["ordinal"])),
            ',"activity_type":',
            dumps(_name(index, "activity_type", values["activity_type"], True)),
            ',"input":', _input(index, values["input"]),
        ]
        for name in _OPTIONAL_NAMES:
            value = _name(index, name, values[name], False)
            if value is not None:
                parts += [',"', name, '":', dumps(value)]
        at, delay = _visible_after(index, values["visible_after"])
        if at is not None:
            parts += [',"visible_at":', dumps(at.isoformat())]
        if delay is not None:
            parts += [',"visible_in_s":', repr(delay.total_seconds())]
        priority = _priority(index, values["priority"])
        if priority is not None:
            parts += [',"priority":', str(priority)]
        traceparent = _traceparent(index, values["traceparent"])
        if traceparent is not None:
            parts += [',"traceparent":"', traceparent, '"']
        parts.append("}")
        objects.append("".join(parts))
    return "[" + ",".join(objects) + "]", len(objects)


def _values(index: int, row: RowLike) -> Dict[str, Any]:
    if isinstance(row, OutboxRow):
        return {name: getattr(row, name) for name in _FIELDS}
    if not isinstance(row, Mapping):
        raise StageError(f"rows[{index}]: must be an OutboxRow or a mapping, "
                         f"got {type(row).__name__}")
    unknown = [key for key in row if key not in _FIELDS]
    if unknown:
        raise StageError(f"rows[{index}]: unknown field '{unknown[0]}' "
                         f"(fields: {', '.join(_FIELDS)})")
    for name in _REQUIRED:
        if row.get(name) is None:
            raise StageError(f"rows[{index}].{name}: is required")
    return {name: row.get(name) for name in _FIELDS}


def _name(index: int, name: str, value: Any, required: bool) -> Optional[str]:
    where = f"rows[{index}].{name}"
    if value is None:
        if required:
            raise StageError(f"{where}: is required")
        return None
    if not isinstance(value, str):
        raise StageError(f"{where}: must be a string, got {type(value).__name__}")
    if not value:
        raise StageError(f"{where}: must not be empty")
    if "\x00" in value:
        raise StageError(f"{where}: must not contain NUL (PostgreSQL text cannot hold it)")
    try:
        size = protocol.utf8_size(value)
    except UnicodeEncodeError:
        raise StageError(f"{where}: must be valid Unicode text (no lone surrogates)") from None
    if size > protocol.MAX_IDENTIFIER_BYTES:
        raise StageError(f"{where}: at most {protocol.MAX_IDENTIFIER_BYTES} bytes, got {size}")
    return value


def _ordinal(index: int, value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise StageError(f"rows[{index}].ordinal: must be an integer, got {type(value).__name__}")
    if not 0 <= value <= MAX_ORDINAL:
        raise StageError(f"rows[{index}].ordinal: must be 0..{MAX_ORDINAL}, got {value}")
    return value


def _input(index: int, value: Any) -> str:
    where = f"rows[{index}].input"
    try:
        text = protocol.dumps(value)
        protocol.utf8_size(text)
    except (TypeError, ValueError) as error:
        raise StageError(f"{where}: must be JSON (numbers finite, text valid): {error}") from None
    if protocol.text_holds_nul(value, text):
        raise StageError(f"{where}: must not contain U+0000 (jsonb cannot hold it)")
    if _nesting(value, protocol.MAX_INPUT_NESTING) > protocol.MAX_INPUT_NESTING:
        raise StageError(f"{where}: nests deeper than {protocol.MAX_INPUT_NESTING} levels, "
                         f"more than a task frame carries")
    return text


def _nesting(value: Any, limit: int) -> int:
    """Levels of arrays and objects in ``value``, counted up to ``limit + 1``."""
    depth = 0
    level = [value]
    while depth <= limit:
        containers = [item for item in level if isinstance(item, (dict, list, tuple))]
        if not containers:
            break
        depth += 1
        level = []
        for container in containers:
            level.extend(container.values() if isinstance(container, dict) else container)
    return depth


def _visible_after(index: int, value: Any) -> Tuple[Optional[dt.datetime], Optional[dt.timedelta]]:
    if value is None:
        return None, None
    if isinstance(value, dt.datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise StageError(f"rows[{index}].visible_after: must be timezone-aware "
                             f"(e.g. datetime.now(timezone.utc)), got a naive datetime")
        return value, None
    if isinstance(value, dt.timedelta):
        return None, value
    raise StageError(f"rows[{index}].visible_after: must be a datetime or a timedelta, "
                     f"got {type(value).__name__}")


def _priority(index: int, value: Any) -> Optional[int]:
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) \
            or not MIN_PRIORITY <= value <= MAX_PRIORITY:
        raise StageError(f"rows[{index}].priority: must be an integer {MIN_PRIORITY}.."
                         f"{MAX_PRIORITY}, got {value!r}")
    return value


def _traceparent(index: int, value: Any) -> Optional[str]:
    if value is None:
        return None
    where = f"rows[{index}].traceparent"
    if not isinstance(value, str) or not _TRACEPARENT.fullmatch(value):
        raise StageError(f"{where}: must be a W3C traceparent "
                         f"00-<32 hex>-<16 hex>-<2 hex>, lowercase, got {value!r}")
    if value.startswith("ff"):
        raise StageError(f"{where}: version ff is invalid")
    if value[3:35] == "0" * 32 or value[36:52] == "0" * 16:
        raise StageError(f"{where}: the trace id and parent id must not be all zeros")
    return value
