// What a worker does when a node tells it the cluster's live nodes (welcome, cluster frames):
// which nodes to connect to and which connections to give up.

/** A node as `welcome.cluster` and `cluster.nodes` list it (other fields, such as shards, aside). */
export interface NodeInfo {
  node_id: string;
  url: string;
}

/**
 * The nodes of a welcome's `cluster` or a cluster frame's `nodes`; entries that are not objects
 * with a string `node_id` and `url` are skipped, and fields beside those (`shards`, `databases`)
 * are left out.
 */
export function parseNodes(listed: unknown): NodeInfo[] {
  const nodes: NodeInfo[] = [];
  if (!Array.isArray(listed)) return nodes;
  for (const entry of listed as Array<Partial<NodeInfo> | null>) {
    if (entry !== null && typeof entry === "object" && typeof entry.url === "string" && typeof entry.node_id === "string") {
      nodes.push({ node_id: entry.node_id, url: entry.url });
    }
  }
  return nodes;
}

/** A node URL the client keeps a link to. */
export interface KnownNode {
  url: string;
  nodeId: string | undefined;
  seed: boolean;
  /** Upgraded and not lost since. */
  connected: boolean;
}

export interface ClusterPlan {
  /** Listed, not known yet. */
  connect: NodeInfo[];
  /** URLs of known non-seeds no longer listed. */
  drop: string[];
}

/**
 * A listed node counts as known when a link has its URL or, because a seed URL may name a node
 * differently from the URL it advertises, its node id while that link is connected. A link
 * known only by the node's id that is not connected is stale (the node restarted elsewhere):
 * the listed URL is connected to, and the stale link dropped unless it is a seed. Seeds are
 * never dropped. An empty list says nothing (a live node always lists itself) and changes
 * nothing.
 */
export function planCluster(known: readonly KnownNode[], listed: readonly NodeInfo[]): ClusterPlan {
  const plan: ClusterPlan = { connect: [], drop: [] };
  if (listed.length === 0) return plan;
  const same = (node: KnownNode, info: NodeInfo) =>
    info.url === node.url || (node.connected && node.nodeId !== undefined && info.node_id === node.nodeId);
  for (const info of listed) {
    const planned = plan.connect.some((other) => other.url === info.url);
    if (!planned && !known.some((node) => same(node, info))) plan.connect.push(info);
  }
  for (const node of known) {
    if (!node.seed && !listed.some((info) => same(node, info))) plan.drop.push(node.url);
  }
  return plan;
}
