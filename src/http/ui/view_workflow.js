// Workflow: one workflow's rows in every state (GET /v1/workflows/{id}?all=true), whether it
// is paused, cancelled or blocked, and its pause, resume and cancel buttons — offered to an
// operator of every namespace its rows (those the credential sees) are in. A workflow lives in
// one database: on a node of several with every database chosen, the view asks which, saying
// how many live rows of it each one holds.

import { mayEach, maySomewhere } from './access.js';
import { api, seg, Unauthorized } from './api.js';
import * as databases from './databases.js';
import { ago, badge, confirmIn, fill, h, pretty, time, withheld } from './dom.js';

const RECENT_KEY = 'outboxd.recent_workflows';
const RECENT_MAX = 8;
const ROW_CAP = 1000;  // what the route returns at most
const LIVE = new Set(['pending', 'claimed']);

export function create({ path, database }, ctx) {
  const id = path[0] ?? null;
  const idInput = h('input', { type: 'text', value: id ?? '', placeholder: 'workflow id',
    testid: 'wf-id', spellcheck: 'false' });
  const opener = h('form', { class: 'inline', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const wanted = idInput.value.trim();
    if (wanted) ctx.navigate(`#/workflows/${seg(wanted)}`);
  } }, idInput, h('button', { type: 'submit', class: 'primary', testid: 'wf-open' }, 'Open'));

  if (!id) {
    const recent = recentIds();
    const el = h('section', { class: 'view', testid: 'view-workflows' },
      h('div', { class: 'heading' }, h('h1', {}, 'Workflows'), opener),
      recent.length ? [h('h2', {}, 'Opened recently'), h('ul', { class: 'recent' },
        recent.map((r) => h('li', {}, h('a', { class: 'mono', href: ctx.href(`#/workflows/${seg(r.id)}`, r.database ?? undefined) },
          r.id), r.database && databases.several() ? h('small', { class: 'muted' }, ` in ${r.database}`) : null)))]
        : h('p', { class: 'muted' }, maySomewhere('operator')
          ? 'Enter a workflow id to see its rows and pause, resume or cancel it.'
          : 'Enter a workflow id to see its rows.'));
    return { title: 'Workflows', reads: 'workflows', el, refresh: async () => {} };
  }
  if (databases.several() && !database) return whichDatabase(id, opener);
  remember(id, database);

  const state = h('span', { testid: 'wf-state' });
  const blocked = h('span', { testid: 'wf-blocked' });
  const summary = h('p', { class: 'summary', testid: 'wf-summary' });
  const flash = h('p', { class: 'flash', role: 'status', testid: 'wf-flash', hidden: true });
  const confirmBox = h('div', { hidden: true });
  // Hidden until the rows say whether the credential may change the workflow.
  const pause = h('button', { type: 'button', testid: 'wf-pause', hidden: true, onclick: () => act('pause') }, 'Pause');
  const resume = h('button', { type: 'button', testid: 'wf-resume', hidden: true, onclick: () => act('resume') }, 'Resume');
  const cancel = h('button', { type: 'button', class: 'danger', testid: 'wf-cancel', hidden: true, onclick: cancelAll }, 'Cancel…');
  const body = h('tbody');
  const expanded = new Set();
  const table = h('table', { class: 'grid', testid: 'wf-rows' },
    h('thead', {}, h('tr', {},
      h('th', {}, 'Dispatch key'), h('th', { class: 'num' }, 'Ordinal'), h('th', {}, 'Status'),
      h('th', {}, 'Namespace / queue'), h('th', {}, 'Activity'), h('th', { class: 'num' }, 'Attempts'),
      h('th', {}, 'Due'), h('th', {}, 'Claimed by'), h('th', {}, 'Finished'),
      h('th', { class: 'wide' }, 'Last error'), h('th', {}, ''))),
    body);
  let current = null;

  const el = h('section', { class: 'view', testid: 'view-workflow' },
    h('div', { class: 'heading' },
      h('h1', {}, 'Workflow ', h('span', { class: 'mono', testid: 'wf-title' }, id),
        database ? h('span', { class: 'tag', testid: 'wf-database' }, database) : null), opener),
    h('div', { class: 'toolbar' }, state, blocked, h('span', { class: 'spacer' }), pause, resume, cancel),
    confirmBox, flash, summary, table);

  // ?all=true reads the table (no index covers finished rows by workflow), so the poll reads
  // the cheap live view and fetches every row only when that view moved; it redraws either way.
  let liveSignature = null;
  async function refresh() {
    const liveView = await api('GET', `/v1/workflows/${seg(id)}`);
    const signature = JSON.stringify([liveView.paused, liveView.cancelled, liveView.blocked_by,
      (liveView.rows ?? []).map((r) => [r.dispatch_key, r.status, r.attempt])]);
    if (!current || signature !== liveSignature) {
      liveSignature = signature;
      current = await api('GET', `/v1/workflows/${seg(id)}?all=true`);
    }
    const rows = current.rows ?? [];
    const live = rows.some((r) => LIVE.has(r.status));
    const word = current.cancelled ? 'cancelled' : current.paused ? 'paused'
      : !rows.length ? 'no rows' : live ? 'active' : 'finished';
    fill(state, badge(word, 'wf-state-badge'));
    state.dataset.state = word;
    fill(blocked, current.blocked_by
      ? ['blocked by the dead letter ', h('a', { class: 'mono', href: ctx.href(`#/dead-letters?namespace=${encodeURIComponent(rows.find((r) => r.dispatch_key === current.blocked_by)?.namespace ?? '')}`) }, current.blocked_by)]
      : '');
    const operable = mayEach('operator', [...new Set(rows.map((r) => r.namespace))]);
    for (const button of [pause, resume, cancel]) button.hidden = !operable;
    pause.disabled = current.paused || current.cancelled;
    resume.disabled = !current.paused;
    cancel.disabled = current.cancelled || !live;
    const counts = new Map();
    for (const r of rows) counts.set(r.status, (counts.get(r.status) ?? 0) + 1);
    fill(summary, rows.length
      ? [`${rows.length}${rows.length >= ROW_CAP ? ' (the first ' + ROW_CAP + ')' : ''} row${rows.length === 1 ? '' : 's'}: `,
        [...counts].map(([status, n], i) => [i ? ', ' : '', h('span', { 'data-status': status }, `${n} ${status}`)])]
      : 'No rows of this workflow are in the outbox (finished rows are removed by retention).');
    fill(body, rows.flatMap((r) => (expanded.has(r.dispatch_key) ? [row(r), detail(r)] : [row(r)])));
  }

  function row(r) {
    const open = expanded.has(r.dispatch_key);
    return h('tr', { testid: 'wf-row', 'data-key': r.dispatch_key, 'data-status': r.status },
      h('td', { class: 'mono' }, r.dispatch_key),
      h('td', { class: 'num' }, String(r.ordinal)),
      h('td', {}, badge(r.status, 'wf-status'), r.waiting ? h('small', { class: 'muted' }, ' waiting') : null),
      h('td', {}, r.namespace, h('small', { class: 'muted' }, ` / ${r.task_queue}`)),
      h('td', {}, r.activity_type),
      h('td', { class: 'num' }, String(r.attempt)),
      h('td', { class: 'nowrap', title: time(r.visible_after) }, r.status === 'pending' ? ago(r.visible_after) : ''),
      h('td', { class: 'mono small' }, r.claimed_by ?? ''),
      h('td', { class: 'nowrap', title: time(r.finished_at) }, r.finished_at ? ago(r.finished_at) : ''),
      h('td', { class: 'wide error-text', title: r.last_error ?? '' }, clip(r.last_error ?? '', 120)),
      h('td', {}, h('button', { type: 'button', class: 'quiet', testid: 'wf-inspect', onclick: () => {
        if (open) expanded.delete(r.dispatch_key); else expanded.add(r.dispatch_key);
        ctx.refresh();
      } }, open ? 'Close' : 'Inspect')));
  }

  function detail(r) {
    const block = (title, value, testid, raw = false) => (value === null || value === undefined ? null
      : h('div', {}, h('h3', {}, title), h('pre', { testid }, raw ? value : pretty(value))));
    const payload = (title, value, testid) => (r.payloads_hidden
      ? h('div', {}, h('h3', {}, title), withheld(testid)) : block(title, value, testid));
    return h('tr', { class: 'detail', testid: 'wf-detail', 'data-key': r.dispatch_key },
      h('td', { colspan: 11 }, h('div', { class: 'detail-grid' },
        payload('Input', r.input, 'wf-input'), payload('Result', r.result, 'wf-result'),
        payload('Progress', r.progress, 'wf-progress'), block('Last error', r.last_error, 'wf-last-error', true),
        h('dl', {},
          h('dt', {}, 'Created'), h('dd', {}, time(r.created_at)),
          h('dt', {}, 'Due'), h('dd', {}, time(r.visible_after)),
          h('dt', {}, 'Priority'), h('dd', {}, String(r.priority)),
          h('dt', {}, 'Shard'), h('dd', {}, String(r.shard)),
          r.run_id ? [h('dt', {}, 'Run'), h('dd', { class: 'mono' }, r.run_id)] : null,
          r.traceparent ? [h('dt', {}, 'Trace'), h('dd', { class: 'mono small' }, r.traceparent)] : null))));
  }

  function show(text, kind = 'ok') {
    flash.hidden = false;
    flash.className = `flash ${kind}`;
    flash.textContent = text;
  }

  async function act(action) {
    const button = action === 'pause' ? pause : resume;
    button.disabled = true;
    try {
      const answer = await api('POST', `/v1/workflows/${seg(id)}/${action}`);
      show(answer.changed === false ? `Already ${action === 'pause' ? 'paused' : 'running'}.`
        : action === 'pause' ? 'Paused: its pending rows stay untouched until it is resumed.'
          : 'Resumed: its rows are claimed again.');
    } catch (failure) {
      show(`Could not ${action}: ${ctx.explain(failure)}`, 'bad');
    }
    ctx.refresh();
  }

  async function cancelAll() {
    cancel.disabled = true;
    const yes = await confirmIn(confirmBox,
      `Cancel workflow “${id}”? Its pending and claimed rows are cancelled, workers running them get a cancel, and rows staged for it later are cancelled too.`,
      'Cancel the workflow', 'wf-cancel-confirm');
    if (!yes) {
      ctx.refresh();
      return;
    }
    try {
      const answer = await api('POST', `/v1/workflows/${seg(id)}/cancel`);
      const n = answer.cancelled?.length ?? 0;
      show(`Cancelled ${n} row${n === 1 ? '' : 's'}.`);
    } catch (failure) {
      show(`Could not cancel: ${ctx.explain(failure)}`, 'bad');
    }
    ctx.refresh();
  }

  return { title: `Workflow ${id}`, reads: 'this workflow', el, refresh };
}

// With every database chosen on a node of several: which database's workflow `id`? Each
// choice says how many live rows of it that database holds (its cheap live view).
function whichDatabase(id, opener) {
  const counts = new Map();  // database → live rows, or the reason it could not be read
  const chooser = databases.chooser(`A workflow lives in one database. Which database holds “${id}”?`,
    () => `#/workflows/${seg(id)}`, (name) => (counts.has(name)
      ? h('small', { class: 'muted', testid: 'db-choice-note' }, counts.get(name)) : null));
  const el = h('section', { class: 'view', testid: 'view-workflow' },
    h('div', { class: 'heading' },
      h('h1', {}, 'Workflow ', h('span', { class: 'mono', testid: 'wf-title' }, id)), opener),
    chooser.el);
  async function refresh() {
    await Promise.all(databases.list().map(async (name) => {
      try {
        const n = (await api('GET', `/v1/workflows/${seg(id)}`, undefined, { database: name })).rows?.length ?? 0;
        counts.set(name, n ? `${n} live row${n === 1 ? '' : 's'}` : 'no live rows');
      } catch (failure) {
        if (failure instanceof Unauthorized) throw failure;
        counts.set(name, `not read: ${failure.message}`);
      }
    }));
    chooser.update();
  }
  return { title: `Workflow ${id}`, reads: 'this workflow', el, refresh };
}

// Workflows opened in this tab, newest first: [{id, database}] (database null on a node of
// one database).
function recentIds() {
  try {
    const list = JSON.parse(sessionStorage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(list) ? list.filter((x) => typeof x?.id === 'string')
      .map(({ id, database }) => ({ id, database: typeof database === 'string' ? database : null })) : [];
  } catch {
    return [];
  }
}

function remember(id, database) {
  const list = [{ id, database }, ...recentIds().filter((x) => x.id !== id || x.database !== database)]
    .slice(0, RECENT_MAX);
  sessionStorage.setItem(RECENT_KEY, JSON.stringify(list));
}

function clip(text, max) {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
