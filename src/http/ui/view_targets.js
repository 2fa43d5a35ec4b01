// Targets: every destination the credential reads (GET /v1/targets) — HTTP endpoints, NATS
// JetStream subjects, RabbitMQ exchanges — with the route each serves, where it points (never
// a secret: the node strips them), its recent state as the nodes report it (last error, last
// success) and what this node makes of it: connected, its share of max_in_flight, the tasks
// out now, or why it refuses the target. Read-only: targets are set through the API.

import { api } from './api.js';
import * as databases from './databases.js';
import { ago, badge, fill, h, time } from './dom.js';

export function create(_route, _ctx) {
  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'targets-table' },
    h('thead', {}, h('tr', {}, databases.header(),
      h('th', {}, 'Target'), h('th', {}, 'Kind'), h('th', {}, 'Route'), h('th', {}, 'Where'),
      h('th', {}, 'This node'), h('th', { class: 'num' }, 'Share'),
      h('th', { class: 'num' }, 'In flight'), h('th', {}, 'Last success'),
      h('th', { class: 'wide' }, 'Last error'))),
    body);
  const empty = h('p', { class: 'muted', hidden: true, testid: 'targets-empty' },
    'No target is set. PUT /v1/targets/{name} sets one (README, "HTTP push" and "Broker targets").');
  const el = h('section', { class: 'view', testid: 'view-targets' },
    h('h1', {}, 'Targets'), table, empty);

  async function refresh() {
    const data = await api('GET', '/v1/targets');
    const list = data.targets ?? [];
    empty.hidden = list.length > 0;
    fill(body, list.map(row));
  }

  return { title: 'Targets', reads: 'targets', el, refresh };
}

// Where a target points: the URL as the node shows it, and the subject, exchange and routing
// key of a broker target.
function where(t) {
  const parts = [t.url];
  if (t.subject) parts.push(`subject ${t.subject}`);
  if (t.exchange !== undefined) parts.push(`exchange ${t.exchange || '(default)'}`);
  if (t.routing_key) parts.push(`key ${t.routing_key}`);
  return parts.join(' · ');
}

function row(t) {
  const node = t.node ?? {};
  const state = node.refused ? 'refused' : node.connected ? 'connected' : 'not-connected';
  const error = node.refused ?? node.last_error ?? t.last_error ?? '';
  return h('tr', { testid: 'target-row', 'data-target': t.name, 'data-database': databases.of(t) },
    databases.cell(t, 'target-database'),
    h('td', { class: 'mono', testid: 'target-name' }, t.name),
    h('td', { testid: 'target-kind' }, t.kind),
    h('td', { testid: 'target-route' },
      `${t.namespace} · ${t.task_queue} · ${(t.activity_types ?? []).join(', ') || 'any type'}`),
    h('td', { class: 'mono', testid: 'target-where' }, where(t)),
    h('td', { testid: 'target-state' }, badge(state)),
    h('td', { class: 'num', testid: 'target-share' }, String(node.share ?? 0)),
    h('td', { class: 'num', testid: 'target-in-flight' }, String(node.in_flight ?? 0)),
    h('td', { class: 'nowrap', testid: 'target-success', title: t.last_success_at ? ago(t.last_success_at) : '' },
      t.last_success_at ? time(t.last_success_at) : '—'),
    h('td', { class: `wide${error ? ' bad' : ''}`, testid: 'target-error' }, error));
}
