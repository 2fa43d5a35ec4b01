// Dead letters: listed newest first with the filters of GET /v1/dead-letters, paged with its
// cursor; a row opens to its input and last error (GET /v1/outbox/{key}); requeue one, or
// every letter the filter matches (POST /v1/dead-letters/requeue, after a confirmation).
// Requeue is offered for a letter of a namespace the credential operates; the bulk requeue
// for the filter's namespace, or with none, when it operates some (the node then keeps the
// bulk to those). On a node of several databases with every database chosen, the list and the
// bulk requeue span them all, and a letter is read and requeued in the database it is tagged
// with.

import { may, mayEverywhere, maySomewhere, namespacesFor } from './access.js';
import { api, query, seg } from './api.js';
import * as databases from './databases.js';
import { ago, confirmIn, field, fill, h, pretty, time, withheld } from './dom.js';

const PAGE_SIZES = [20, 50, 100, 500];
const BULK_LIMIT = 1000;   // letters per bulk call; repeated until one answers 0
const BULK_CALLS = 1000;   // at most a million letters per confirmation

export function create({ params, database }, ctx) {
  const filter = {
    namespace: params.namespace ?? '',
    activity_type: params.activity_type ?? '',
    error: params.error ?? '',
    older_than_s: params.older_than_s ?? '',
  };
  const asked = Number(params.limit);
  const limit = Number.isInteger(asked) && asked >= 1 && asked <= 1000 ? asked : 50;
  const sizes = PAGE_SIZES.includes(limit) ? PAGE_SIZES : [...PAGE_SIZES, limit].sort((a, b) => a - b);
  const cursors = [null];  // the `after` of each page visited; cursors[0] is the first page
  let page = 0;
  let next = null;
  // `${database}\0${dispatch_key}` → the row from GET /v1/outbox/{key}, or null (loading);
  // a key may stand in several databases.
  const expanded = new Map();
  const id = (letter) => `${databases.of(letter)}\u0000${letter.dispatch_key}`;

  const inputs = {
    namespace: h('input', { type: 'text', value: filter.namespace, testid: 'dl-f-namespace', spellcheck: 'false' }),
    activity_type: h('input', { type: 'text', value: filter.activity_type, testid: 'dl-f-activity', spellcheck: 'false' }),
    error: h('input', { type: 'text', value: filter.error, testid: 'dl-f-error', spellcheck: 'false' }),
    older_than_s: h('input', { type: 'text', inputmode: 'numeric', value: filter.older_than_s, testid: 'dl-f-older', spellcheck: 'false' }),
    limit: h('select', { testid: 'dl-f-limit' },
      sizes.map((n) => h('option', { value: n, selected: n === limit }, `${n} a page`))),
  };
  const filterForm = h('form', { class: 'filters', novalidate: true, testid: 'dl-filter', onsubmit: (e) => {
    e.preventDefault();
    const chosen = Object.fromEntries(Object.entries(inputs).map(([k, input]) => [k, input.value.trim()]));
    if (chosen.limit === '50') chosen.limit = '';
    ctx.navigate(`#/dead-letters${query(chosen)}`);
  } },
  field('Namespace', inputs.namespace), field('Activity type', inputs.activity_type),
  field('Error contains', inputs.error), field('Failed at least (s) ago', inputs.older_than_s),
  field('Page', inputs.limit),
  h('div', { class: 'actions' },
    h('button', { type: 'submit', class: 'primary', testid: 'dl-apply' }, 'Apply'),
    h('button', { type: 'button', testid: 'dl-clear', onclick: () => ctx.navigate('#/dead-letters') }, 'Clear')));

  const flash = h('p', { class: 'flash', role: 'status', testid: 'dl-flash', hidden: true });
  const confirmBox = h('div', { hidden: true });
  const bulkButton = (filter.namespace ? may('operator', filter.namespace) : maySomewhere('operator'))
    ? h('button', { type: 'button', class: 'danger', testid: 'dl-bulk', onclick: bulk }, 'Requeue all matching…')
    : null;
  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'dl-table' },
    h('thead', {}, h('tr', {}, databases.header(),
      h('th', {}, 'Dispatch key'), h('th', {}, 'Workflow'), h('th', {}, 'Namespace / queue'),
      h('th', {}, 'Activity'), h('th', { class: 'num' }, 'Attempts'), h('th', {}, 'Failed'),
      h('th', { class: 'wide' }, 'Last error'), h('th', {}, ''))),
    body);
  const empty = h('p', { class: 'muted', testid: 'dl-empty', hidden: true });
  const pageLabel = h('span', { testid: 'dl-page' });
  const first = h('button', { type: 'button', testid: 'dl-first', onclick: () => go(0) }, '« Newest');
  const prev = h('button', { type: 'button', testid: 'dl-prev', onclick: () => go(page - 1) }, '‹ Newer');
  const older = h('button', { type: 'button', testid: 'dl-next', onclick: () => {
    cursors[page + 1] = next;
    go(page + 1);
  } }, 'Older ›');

  const el = h('section', { class: 'view', testid: 'view-dead-letters' },
    h('div', { class: 'heading' }, h('h1', {}, 'Dead letters'), bulkButton),
    filterForm, confirmBox, flash, table, empty,
    h('div', { class: 'pager' }, first, prev, pageLabel, older));

  function go(to) {
    page = Math.max(0, to);
    cursors.length = page + 1;
    ctx.refresh();
  }

  function show(text, kind = 'ok') {
    flash.hidden = false;
    flash.className = `flash ${kind}`;
    flash.textContent = text;
  }

  async function refresh() {
    const data = await api('GET', `/v1/dead-letters${query({
      namespace: filter.namespace, activity_type: filter.activity_type, error: filter.error,
      older_than_s: filter.older_than_s, limit, after: cursors[page] })}`);
    const letters = data.dead_letters ?? [];
    next = data.next ?? null;
    fill(body, letters.flatMap((letter) => {
      const rows = [letterRow(letter)];
      if (expanded.has(id(letter))) rows.push(detailRow(letter, expanded.get(id(letter))));
      return rows;
    }));
    empty.hidden = letters.length > 0;
    empty.textContent = page > 0 ? 'No dead letters on this page any more.'
      : `No dead letters${database ? ` in ${database}` : ''}${describe(filter) ? ` match ${describe(filter)}` : ''}.`;
    pageLabel.textContent = `page ${page + 1}${letters.length ? ` · ${letters.length} shown` : ''}`;
    first.disabled = page === 0;
    prev.disabled = page === 0;
    older.disabled = !next;
  }

  function letterRow(letter) {
    const key = letter.dispatch_key;
    const where = databases.of(letter);
    const open = expanded.has(id(letter));
    return h('tr', { testid: 'dl-row', 'data-key': key, 'data-database': where, class: open ? 'open' : '' },
      databases.cell(letter, 'dl-database'),
      h('td', { class: 'mono', testid: 'dl-key' }, key),
      h('td', { class: 'mono' }, h('a', { href: ctx.href(`#/workflows/${seg(letter.workflow_id)}`, where) },
        letter.workflow_id)),
      h('td', {}, letter.namespace, h('small', { class: 'muted' }, ` / ${letter.task_queue}`)),
      h('td', { testid: 'dl-activity' }, letter.activity_type),
      h('td', { class: 'num' }, String(letter.attempt)),
      h('td', { title: time(letter.failed_at) }, ago(letter.failed_at)),
      h('td', { class: 'wide error-text', testid: 'dl-error', title: letter.last_error ?? '' },
        clip(letter.last_error ?? '', 160)),
      h('td', { class: 'nowrap' },
        h('button', { type: 'button', class: 'quiet', testid: 'dl-inspect', 'aria-expanded': String(open),
          onclick: () => inspect(letter) }, open ? 'Close' : 'Inspect'),
        may('operator', letter.namespace)
          ? h('button', { type: 'button', testid: 'dl-requeue', onclick: (e) => requeue(letter, e.currentTarget) },
            'Requeue')
          : null));
  }

  function detailRow(letter, row) {
    const content = row === null ? h('p', { class: 'muted' }, 'Loading…')
      : h('div', { class: 'detail-grid' },
        h('div', {},
          h('h3', {}, 'Input'),
          row.payloads_hidden ? withheld('dl-input') : h('pre', { testid: 'dl-input' }, pretty(row.input)),
          row.progress !== null && row.progress !== undefined
            ? [h('h3', {}, 'Last progress'), h('pre', {}, pretty(row.progress))] : null),
        h('div', {},
          h('h3', {}, 'Last error'), h('pre', { class: 'error-text', testid: 'dl-last-error' }, row.last_error ?? ''),
          h('dl', {},
            h('dt', {}, 'Status'), h('dd', { testid: 'dl-status' }, row.status),
            h('dt', {}, 'Created'), h('dd', {}, time(row.created_at)),
            h('dt', {}, 'Failed'), h('dd', {}, time(row.finished_at ?? letter.failed_at)),
            h('dt', {}, 'Ordinal'), h('dd', {}, String(row.ordinal)),
            h('dt', {}, 'Priority'), h('dd', {}, String(row.priority)),
            row.run_id ? [h('dt', {}, 'Run'), h('dd', { class: 'mono' }, row.run_id)] : null,
            row.node ? [h('dt', {}, 'Node label'), h('dd', {}, row.node)] : null,
            row.traceparent ? [h('dt', {}, 'Trace'), h('dd', { class: 'mono small' }, row.traceparent)] : null)));
    return h('tr', { class: 'detail', testid: 'dl-detail', 'data-key': letter.dispatch_key,
      'data-database': databases.of(letter) },
    h('td', { colspan: databases.several() ? 9 : 8 }, content));
  }

  // A letter is read and requeued in the database the listing tagged it with.
  async function inspect(letter) {
    const key = letter.dispatch_key;
    const which = id(letter);
    if (expanded.has(which)) {
      expanded.delete(which);
      return ctx.refresh();
    }
    expanded.set(which, null);
    ctx.refresh();
    try {
      const row = await api('GET', `/v1/outbox/${seg(key)}`, undefined, { database: databases.of(letter) });
      if (expanded.has(which)) expanded.set(which, row);
    } catch (failure) {
      expanded.delete(which);
      show(`Could not read ${key}: ${ctx.explain(failure)}`, 'bad');
    }
    ctx.refresh();
  }

  async function requeue(letter, button) {
    const key = letter.dispatch_key;
    const where = databases.of(letter);
    button.disabled = true;
    try {
      await api('POST', `/v1/dead-letters/${seg(key)}/requeue`, undefined, { database: where });
      expanded.delete(id(letter));
      show(`Requeued ${key}${where && !database ? ` in ${where}` : ''}: pending again, attempt 0.`);
    } catch (failure) {
      show(`Could not requeue ${key}: ${ctx.explain(failure)}`, 'bad');
    } finally {
      button.disabled = false;
    }
    ctx.refresh();
  }

  async function bulk() {
    const what = describe(filter);
    // Without a namespace in the filter, the node keeps the bulk to the credential's own.
    const own = filter.namespace || mayEverywhere('operator') ? null
      : namespacesFor('operator').map((ns) => `“${ns}”`).join(', ');
    const where = !databases.several() ? '' : database ? `, in database ${database}` : ', in every database';
    const question = what
      ? `Requeue every dead letter matching ${what}${own ? ` in ${own}` : ''}${where}? They become pending again with attempt 0.`
      : `No filter is applied: requeue EVERY dead letter of ${own ?? 'every namespace'}${where}? They become pending again with attempt 0.`;
    bulkButton.disabled = true;
    const yes = await confirmIn(confirmBox, question, 'Requeue them', 'dl-bulk-confirm');
    if (!yes) {
      bulkButton.disabled = false;
      return;
    }
    const body = { limit: BULK_LIMIT };
    if (filter.namespace) body.namespace = filter.namespace;
    if (filter.activity_type) body.activity_type = filter.activity_type;
    if (filter.error) body.error_contains = filter.error;
    if (filter.older_than_s !== '') {
      // As typed when it is no number, so that the node names what is wrong with it.
      body.older_than_s = /^\d+$/.test(filter.older_than_s) ? Number(filter.older_than_s) : filter.older_than_s;
    }
    let total = 0;
    const byDatabase = new Map();  // across every database: how many each gave
    try {
      for (let call = 0; call < BULK_CALLS; call += 1) {
        const answer = await api('POST', '/v1/dead-letters/requeue', body);
        total += answer.requeued;
        for (const [name, n] of Object.entries(answer.by_database ?? {})) {
          byDatabase.set(name, (byDatabase.get(name) ?? 0) + n);
        }
        if (answer.requeued === 0) break;
        show(`Requeued ${total} so far…`);
      }
      const parts = databases.several() && !database
        ? [...byDatabase].filter(([, n]) => n > 0).map(([name, n]) => `${name} ${n}`) : [];
      show(`Requeued ${total} dead letter${total === 1 ? '' : 's'}${parts.length ? ` (${parts.join(', ')})` : ''}.`);
    } catch (failure) {
      show(`Requeued ${total}, then: ${ctx.explain(failure)}`, 'bad');
    } finally {
      bulkButton.disabled = false;
    }
    expanded.clear();
    go(0);
  }

  return { title: 'Dead letters', reads: 'dead letters', el, refresh };
}

function describe(filter) {
  const parts = [];
  if (filter.namespace) parts.push(`namespace “${filter.namespace}”`);
  if (filter.activity_type) parts.push(`activity type “${filter.activity_type}”`);
  if (filter.error) parts.push(`error containing “${filter.error}”`);
  if (filter.older_than_s !== '') parts.push(`failed at least ${filter.older_than_s} s ago`);
  return parts.join(', ');
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
