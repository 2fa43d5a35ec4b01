// Audit: every change made through the API (GET /v1/audit, admin of every namespace), newest
// first, a page at a time with its `next` cursor. The nav link shows only to such an admin.
// The log is the control database's and records changes in every database, each with its
// database's name (shown on a node of several).

import { api, query } from './api.js';
import * as databases from './databases.js';
import { ago, fill, h, time } from './dom.js';

const PAGE_DEFAULT = 50;
const PAGE_MAX = 1000;  // what the route returns at most

export function create({ params }, ctx) {
  const asked = Number(params.limit);
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= PAGE_MAX ? asked : PAGE_DEFAULT;
  const cursors = [null];  // the `after` of each page visited; cursors[0] is the first page
  let page = 0;
  let next = null;

  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'audit-table' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'At'), databases.header(), h('th', {}, 'Credential'), h('th', {}, 'Method'), h('th', {}, 'Route'),
      h('th', {}, 'Namespace'), h('th', { class: 'wide' }, 'Change'))),
    body);
  const empty = h('p', { class: 'muted', testid: 'audit-empty', hidden: true });
  const pageLabel = h('span', { testid: 'audit-page' });
  const first = h('button', { type: 'button', testid: 'audit-first', onclick: () => go(0) }, '« Newest');
  const prev = h('button', { type: 'button', testid: 'audit-prev', onclick: () => go(page - 1) }, '‹ Newer');
  const older = h('button', { type: 'button', testid: 'audit-next', onclick: () => {
    cursors[page + 1] = next;
    go(page + 1);
  } }, 'Older ›');

  const el = h('section', { class: 'view', testid: 'view-audit' },
    h('h1', {}, 'Audit log'),
    h('p', { class: 'muted small' }, 'Every change made through the API — settings, pause, ' +
      'resume, cancel, requeue, purge, credentials, HTTP targets, schedules — with the ' +
      'credential that made it. Secrets in a change are recorded as "[redacted]".' +
      (databases.several() ? ' One log for every database: each change names the database it changed.' : '')),
    table, empty,
    h('div', { class: 'pager' }, first, prev, pageLabel, older));

  function go(to) {
    page = Math.max(0, to);
    cursors.length = page + 1;
    ctx.refresh();
  }

  async function refresh() {
    const data = await api('GET', `/v1/audit${query({ limit, after: cursors[page] })}`);
    const entries = data.audit ?? [];
    next = data.next ?? null;
    fill(body, entries.map(entryRow));
    empty.hidden = entries.length > 0;
    empty.textContent = page > 0 ? 'No entries on this page.' : 'No change has been recorded yet.';
    pageLabel.textContent = `page ${page + 1}${entries.length ? ` · ${entries.length} shown` : ''}`;
    first.disabled = page === 0;
    prev.disabled = page === 0;
    older.disabled = !next;
  }

  return { title: 'Audit', reads: 'the audit log', el, refresh };
}

function entryRow(e) {
  return h('tr', { testid: 'audit-row', 'data-id': String(e.id) },
    h('td', { class: 'nowrap', testid: 'audit-at', title: ago(e.at), 'data-at': e.at }, time(e.at)),
    databases.cell(e, 'audit-database'),
    h('td', { class: 'mono', testid: 'audit-credential' }, e.credential_id),
    h('td', { testid: 'audit-method' }, e.method),
    h('td', { class: 'mono', testid: 'audit-route' }, e.route),
    h('td', { testid: 'audit-namespace' }, e.namespace ?? ''),
    h('td', { class: 'wide change', testid: 'audit-change' }, JSON.stringify(e.change)));
}
