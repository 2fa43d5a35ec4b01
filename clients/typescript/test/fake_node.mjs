// A scripted stand-in for an outboxd node's worker socket, for the protocol tests that need
// no database: it records every frame a worker sends and lets the test send anything back.

import { once } from "node:events";

import { WebSocketServer } from "ws";

/** A free port below the ephemeral range (this machine's rule for listening sockets). */
async function listen(server) {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = 20000 + Math.floor(Math.random() * 12000);
    try {
      await new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, "127.0.0.1", () => {
          server.off("error", reject);
          resolve();
        });
      });
      return port;
    } catch (error) {
      if (error.code !== "EADDRINUSE") throw error;
    }
  }
  throw new Error("no free port");
}

export class FakeNode {
  /** Every message received, parsed, with the connection it came on and its size. */
  messages = [];
  connections = [];
  headers = [];

  static async start(nodeId = "fake-1") {
    const node = new FakeNode(nodeId);
    const { createServer } = await import("node:http");
    node.http = createServer();
    node.port = await listen(node.http);
    node.url = `ws://127.0.0.1:${node.port}/v1/workers`;
    node.wss = new WebSocketServer({ server: node.http });
    node.wss.on("connection", (socket, request) => {
      node.connections.push(socket);
      node.headers.push(request.headers);
      socket.on("message", (data) => {
        node.messages.push({ socket, bytes: data.length, frame: JSON.parse(data.toString()) });
        node.onMessage?.();
      });
    });
    return node;
  }

  constructor(nodeId) {
    this.nodeId = nodeId;
  }

  /** Every frame received, batches unpacked, optionally of one type. */
  frames(type) {
    const all = this.messages.flatMap((m) => (m.frame.type === "batch" ? m.frame.frames : [m.frame]));
    return type === undefined ? all : all.filter((f) => f.type === type);
  }

  /** Resolves once `predicate()` holds, checked on every message. */
  async until(predicate, ms = 5000) {
    const deadline = Date.now() + ms;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error("fake node: timed out");
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  welcome(socket, extra = {}) {
    socket.send(
      JSON.stringify({
        type: "welcome",
        node_id: this.nodeId,
        session_id: "s-" + this.connections.indexOf(socket),
        cluster: [{ node_id: this.nodeId, url: this.url }],
        batch: true,
        max_frame_bytes: 1 << 20,
        max_result_bytes: 65536,
        ...extra,
      }),
    );
  }

  async close() {
    for (const socket of this.wss.clients) socket.terminate();
    this.wss.close();
    this.http.close();
    await once(this.http, "close").catch(() => {});
  }
}

export function task(id, fields = {}) {
  return {
    type: "task",
    task_id: id,
    dispatch_key: `wf-${id}:0`,
    workflow_id: `wf-${id}`,
    ordinal: 0,
    run_id: null,
    namespace: "default",
    task_queue: "default",
    node: null,
    activity_type: "noop",
    input: null,
    attempt: 1,
    timeout_ms: 30000,
    priority: 0,
    ...fields,
  };
}
