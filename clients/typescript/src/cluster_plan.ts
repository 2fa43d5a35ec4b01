// What a worker does when a node tells it the cluster's live nodes (welcome, cluster frames):
// which nodes to connect to and which connections to give up.

/** A node as `welcome.cluster` and `cluster.nodes` list it. */
export interface NodeInfo {
  node_id: string;
  url: string;
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
 * never dropped.
 */
export function planCluster(known: readonly KnownNode[], listed: readonly NodeInfo[]): ClusterPlan {
  const same = (node: KnownNode, info: NodeInfo) =>
    info.url === node.url || (node.connected && node.nodeId !== undefined && info.node_id === node.nodeId);
  const plan: ClusterPlan = { connect: [], drop: [] };
  for (const info of listed) {
    const planned = plan.connect.some((other) => other.url === info.url);
    if (!planned && !known.some((node) => same(node, info))) plan.connect.push(info);
  }
  for (const node of known) {
    if (!node.seed && !listed.some((info) => same(node, info))) plan.drop.push(node.url);
  }
  return plan;
}
