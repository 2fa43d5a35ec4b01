#!/usr/bin/python3
"""A minimal outboxd worker in Python (Debian: python3-websockets).

Connects to one node, says hello, runs `charge` tasks and answers each one.
Usage: docs/examples/minimal_worker.py ws://127.0.0.1:8080/v1/workers
"""
import asyncio, json, sys

import websockets


async def main(url):
    async with websockets.connect(url) as ws:
        await ws.send(json.dumps({"type": "hello", "worker_id": "py-1",
                                  "activity_types": ["charge"], "max_in_flight": 8}))
        async for frame in ws:
            msg = json.loads(frame)
            if msg["type"] == "task":
                # Deduplicate on (dispatch_key, attempt): delivery is at least once.
                print("charging", msg["dispatch_key"], msg["input"], flush=True)
                await ws.send(json.dumps({"type": "complete", "task_id": msg["task_id"],
                                          "result": {"ok": True}}))
            elif msg["type"] == "drain":
                print("node is draining", flush=True)


asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ws://127.0.0.1:8080/v1/workers"))
