"""Python client of outboxd: stage rows into the outbox from your own transactions, and run
activity handlers for the tasks outboxd dispatches.

    import outboxd
    with conn.transaction():
        outboxd.stage(conn.cursor(), [outboxd.OutboxRow("order-42", 0, "charge", {"amount": 99})])

    worker = outboxd.Worker(outboxd.WorkerOptions(urls="ws://127.0.0.1:8080/v1/workers"))

    @worker.activity("charge")
    async def charge(task: outboxd.Task, context: outboxd.Context) -> dict:
        return {"charged": task.input["amount"]}

    asyncio.run(worker.run())
"""

from .options import WorkerOptions, WorkerStats
from .staging import OutboxRow, StageError, StageResult, astage, stage
from .task import ActivityError, Context, NonRetryableError, Task
from .worker import Handler, Worker

__version__ = "0.1.0"

__all__ = [
    "ActivityError", "Context", "Handler", "NonRetryableError", "OutboxRow", "StageError",
    "StageResult", "Task", "Worker", "WorkerOptions", "WorkerStats", "astage", "stage",
    "__version__",
]
