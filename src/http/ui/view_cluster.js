// Cluster: the live nodes (GET /v1/cluster), their shard ranges on a 1024-shard map, and the
// nodes seen earlier in this tab that are no longer live. On a node of several databases:
// each database, whether it is ready on this node (GET /readyz, databases.js), the nodes
// serving it and its shards owned; and per node, the databases it serves, its shards in each.

import { api } from './api.js';
import * as databases from './databases.js';
import { clock, fill, h } from './dom.js';

const SHARDS = 1024;

// Nodes seen since the page was opened, by id: {node, lastSeen}. Kept across views, so that a
// node that leaves while another view is open is still shown as gone.
const seen = new Map();

export function create(_route, _ctx) {
  const several = databases.several();
  const summary = h('p', { class: 'summary', testid: 'cluster-summary' }, 'Loading…');
  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'cluster-nodes' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Node'), h('th', {}, 'State'),
      several ? h('th', { class: 'wide' }, 'Databases: shards and map')
        : [h('th', { class: 'num' }, 'Shards'), h('th', {}, 'Ranges'), h('th', { class: 'wide' }, 'Shard map')],
      h('th', {}, 'Worker URL'))),
    body);
  const dbBody = h('tbody');
  const dbTable = several ? h('table', { class: 'grid', testid: 'cluster-databases' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Database'), h('th', {}, 'On this node'), h('th', { class: 'num' }, 'Nodes serving it'),
      h('th', { class: 'num' }, 'Shards owned'))),
    dbBody) : null;
  const el = h('section', { class: 'view', testid: 'view-cluster' },
    h('h1', {}, 'Cluster'), summary,
    several ? [h('h2', {}, 'Databases'), dbTable, h('h2', {}, 'Nodes')] : null,
    table,
    h('p', { class: 'muted small' },
      'Live nodes hold leases on near-equal shares of the 1024 shards' +
      (several ? ', in each database they serve' : '') + '; a node that stops heartbeating ' +
      'leaves the list once its lease expires and its shards are taken over.'));

  async function refresh() {
    const data = await api('GET', '/v1/cluster', undefined, { database: null });
    const now = new Date();
    const live = new Set();
    for (const node of data.nodes ?? []) {
      live.add(node.node_id);
      seen.set(node.node_id, { node, lastSeen: now });
    }
    const draining = (data.nodes ?? []).filter((n) => n.draining).length;
    fill(summary,
      h('strong', { testid: 'cluster-live-count' }, String(live.size)),
      ` live node${live.size === 1 ? '' : 's'}`,
      draining ? ` (${draining} draining)` : '',
      ' · ',
      several ? databasesSummary(data.nodes ?? []) : shardsSummary(data.nodes ?? []));
    const rows = [...seen.values()].sort((a, b) => a.node.node_id.localeCompare(b.node.node_id));
    fill(body, rows.map(({ node, lastSeen }) => nodeRow(node, live.has(node.node_id), lastSeen, several)));
    if (several) fill(dbBody, databases.list().map((name) => databaseRow(name, data.nodes ?? [])));
  }

  return { title: 'Cluster', reads: 'the cluster', el, refresh };
}

function shardsSummary(nodes) {
  const owned = nodes.reduce((sum, n) => sum + shardCount(n.shards), 0);
  return [h('strong', { testid: 'cluster-owned' }, `${owned} / ${SHARDS}`), ' shards owned',
    owned < SHARDS ? h('span', { class: 'warn' }, ' — some shards have no owner right now') : ''];
}

function databasesSummary(nodes) {
  const names = databases.list();
  const ready = names.filter((name) => databases.ready(name)).length;
  const unowned = names.filter((name) => ownedIn(name, nodes) < SHARDS);
  return [h('strong', { testid: 'cluster-database-count' }, String(names.length)), ' databases, ',
    h('strong', { testid: 'cluster-ready-count' }, String(ready)), ' ready on this node',
    unowned.length ? h('span', { class: 'warn' }, ` — some shards of ${unowned.join(', ')} have no owner right now`) : ''];
}

function nodeRow(node, live, lastSeen, several) {
  const state = !live ? 'gone' : node.draining ? 'draining' : 'live';
  const here = isThisNode(node.url);
  return h('tr', { testid: 'cluster-node', 'data-node-id': node.node_id, class: live ? '' : 'gone' },
    h('td', { testid: 'cluster-node-id' }, node.node_id, here ? h('span', { class: 'tag' }, 'this node') : null),
    h('td', {}, h('span', { class: `badge badge-${state}`, testid: 'cluster-node-state' }, state),
      live ? null : h('small', { class: 'muted' }, ` last seen ${clock(lastSeen)}`)),
    several ? h('td', { class: 'wide' }, live ? nodeDatabases(node) : '—') : [
      h('td', { class: 'num', testid: 'cluster-node-shards' }, live ? String(shardCount(node.shards)) : '—'),
      h('td', { testid: 'cluster-node-ranges' }, live ? rangesText(node.shards) : '—'),
      h('td', { class: 'wide' }, live ? shardMap(node.shards) : null)],
    h('td', { class: 'mono small' }, node.url ?? ''));
}

// Each database the node serves: its name, its shards there and their map.
function nodeDatabases(node) {
  const served = node.databases ?? [];
  if (!served.length) return h('span', { class: 'muted' }, 'none');
  return h('dl', { class: 'node-dbs', testid: 'cluster-node-databases' }, served.flatMap(({ database, shards }) => [
    h('dt', { class: 'mono' }, database),
    h('dd', { testid: 'cluster-node-db', 'data-database': database },
      h('span', { class: 'num', testid: 'cluster-node-db-shards', title: rangesText(shards) },
        String(shardCount(shards))),
      shardMap(shards))]));
}

// A database: ready on this node or not, how many live nodes serve it, its shards owned.
function databaseRow(name, nodes) {
  const serving = nodes.filter((n) => shardsIn(n, name) !== null);
  const owned = ownedIn(name, nodes);
  const ready = databases.ready(name) ? 'ready' : 'not ready';
  return h('tr', { testid: 'cluster-database', 'data-database': name },
    h('td', { class: 'mono' }, name),
    h('td', {}, h('span', { class: `badge badge-${ready.replace(' ', '-')}`, testid: 'cluster-database-ready' }, ready)),
    h('td', { class: 'num', testid: 'cluster-database-nodes' }, String(serving.length)),
    h('td', { class: `num${owned < SHARDS ? ' warn' : ''}`, testid: 'cluster-database-owned' }, `${owned} / ${SHARDS}`));
}

// A node's shard ranges in database `name`, or null when it does not serve it.
function shardsIn(node, name) {
  return (node.databases ?? []).find((d) => d.database === name)?.shards ?? null;
}

function ownedIn(name, nodes) {
  return nodes.reduce((sum, n) => sum + shardCount(shardsIn(n, name)), 0);
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
