// Cluster: the live nodes (GET /v1/cluster), their shard ranges on a 1024-shard map, and the
// nodes seen earlier in this tab that are no longer live.

import { api } from './api.js';
import { clock, fill, h } from './dom.js';

const SHARDS = 1024;

// Nodes seen since the page was opened, by id: {node, lastSeen}. Kept across views, so that a
// node that leaves while another view is open is still shown as gone.
const seen = new Map();

export function create(_route, _ctx) {
  const summary = h('p', { class: 'summary', testid: 'cluster-summary' }, 'Loading…');
  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'cluster-nodes' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Node'), h('th', {}, 'State'), h('th', { class: 'num' }, 'Shards'),
      h('th', {}, 'Ranges'), h('th', { class: 'wide' }, 'Shard map'), h('th', {}, 'Worker URL'))),
    body);
  const el = h('section', { class: 'view', testid: 'view-cluster' },
    h('h1', {}, 'Cluster'), summary, table,
    h('p', { class: 'muted small' },
      'Live nodes hold leases on contiguous shard ranges; a node that stops heartbeating ' +
      'leaves the list once its lease expires and its shards are taken over.'));

  async function refresh() {
    const data = await api('GET', '/v1/cluster');
    const now = new Date();
    const live = new Set();
    for (const node of data.nodes ?? []) {
      live.add(node.node_id);
      seen.set(node.node_id, { node, lastSeen: now });
    }
    const owned = (data.nodes ?? []).reduce((sum, n) => sum + shardCount(n.shards), 0);
    const draining = (data.nodes ?? []).filter((n) => n.draining).length;
    fill(summary,
      h('strong', { testid: 'cluster-live-count' }, String(live.size)),
      ` live node${live.size === 1 ? '' : 's'}`,
      draining ? ` (${draining} draining)` : '',
      ' · ',
      h('strong', { testid: 'cluster-owned' }, `${owned} / ${SHARDS}`), ' shards owned',
      owned < SHARDS ? h('span', { class: 'warn' }, ' — some shards have no owner right now') : '');
    const rows = [...seen.values()].sort((a, b) => a.node.node_id.localeCompare(b.node.node_id));
    fill(body, rows.map(({ node, lastSeen }) => nodeRow(node, live.has(node.node_id), lastSeen)));
  }

  return { title: 'Cluster', reads: 'the cluster', el, refresh };
}

function nodeRow(node, live, lastSeen) {
  const state = !live ? 'gone' : node.draining ? 'draining' : 'live';
  const here = isThisNode(node.url);
  return h('tr', { testid: 'cluster-node', 'data-node-id': node.node_id, class: live ? '' : 'gone' },
    h('td', { testid: 'cluster-node-id' }, node.node_id, here ? h('span', { class: 'tag' }, 'this node') : null),
    h('td', {}, h('span', { class: `badge badge-${state}`, testid: 'cluster-node-state' }, state),
      live ? null : h('small', { class: 'muted' }, ` last seen ${clock(lastSeen)}`)),
    h('td', { class: 'num', testid: 'cluster-node-shards' }, live ? String(shardCount(node.shards)) : '—'),
    h('td', { testid: 'cluster-node-ranges' }, live ? rangesText(node.shards) : '—'),
    h('td', { class: 'wide' }, live ? shardMap(node.shards) : null),
    h('td', { class: 'mono small' }, node.url ?? ''));
}

function shardCount(ranges) {
  return (ranges ?? []).reduce((sum, [lo, hi]) => sum + (hi - lo + 1), 0);
}

function rangesText(ranges) {
  if (!ranges?.length) return 'none';
  return ranges.map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo}–${hi}`)).join(', ');
}

// A bar of the 1024 shards with this node's ranges filled in (CSSOM geometry, which the
// page's Content-Security-Policy allows, unlike style attributes).
function shardMap(ranges) {
  const bar = h('div', { class: 'shardmap', title: rangesText(ranges) });
  for (const [lo, hi] of ranges ?? []) {
    const part = h('span');
    part.style.left = `${(lo / SHARDS) * 100}%`;
    part.style.width = `${((hi - lo + 1) / SHARDS) * 100}%`;
    bar.append(part);
  }
  return bar;
}

function isThisNode(url) {
  try {
    return new URL(url).host === location.host;
  } catch {
    return false;
  }
}
