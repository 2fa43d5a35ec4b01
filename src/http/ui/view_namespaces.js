// Namespaces: the live rows, dead letters and last minute's outcomes of every namespace the
// credential reads (GET /v1/namespaces), and a form that replaces one namespace's settings
// (PUT /v1/namespaces/{ns}; the node's 400 message is shown as it is) — read-only where the
// credential is not its operator. On a node of several databases a namespace's settings and
// figures are each database's own: the listing has a row per database and namespace, and the
// form edits the namespace in the database of its row, or asks which when every database is
// chosen.

import { may, maySomewhere } from './access.js';
import { api, seg } from './api.js';
import * as databases from './databases.js';
import { clock, field, fill, h, pretty } from './dom.js';

// Last values by database, namespace and column, to mark what changed since the previous poll.
const previous = new Map();

export function create({ path, database }, ctx) {
  const editing = path[0] ?? null;
  const body = h('tbody');
  const foot = h('tfoot');
  const table = h('table', { class: 'grid', testid: 'ns-table' },
    h('thead', {}, h('tr', {}, databases.header(),
      h('th', {}, 'Namespace'), h('th', { class: 'num' }, 'Pending'),
      h('th', { class: 'num' }, 'Claimed'), h('th', {}, 'Claimed / max in flight'),
      h('th', { class: 'num' }, 'Dead letters'), h('th', { class: 'num' }, 'Done / min'),
      h('th', { class: 'num' }, 'Failed / min'), h('th', { class: 'num' }, 'Cancelled / min'),
      h('th', {}, 'Settings'), h('th', {}, ''))),
    body, foot);
  const empty = h('p', { class: 'muted', hidden: true, testid: 'ns-empty' },
    'No namespace has settings, live rows, dead letters or rows finished in the last minute.');

  const openName = h('input', { type: 'text', placeholder: 'namespace', testid: 'ns-open-name',
    spellcheck: 'false' });
  const opener = maySomewhere('operator') ? h('form', { class: 'inline', novalidate: true, onsubmit: (e) => {
    e.preventDefault();
    const name = openName.value.trim();
    if (name) ctx.navigate(`#/namespaces/${seg(name)}`);
  } }, openName, h('button', { type: 'submit', testid: 'ns-open' }, 'Edit settings')) : null;

  // Settings belong to one database: with every database chosen, the form asks which.
  const editor = !editing ? null
    : databases.several() && !database ? settingsChooser(editing)
      : editForm(editing, databases.several() ? database : null, ctx);
  const el = h('section', { class: 'view', testid: 'view-namespaces' },
    h('div', { class: 'heading' }, h('h1', {}, 'Namespaces'), opener),
    table, empty, editor?.el);

  async function refresh() {
    const data = await api('GET', '/v1/namespaces');
    const list = data.namespaces ?? [];
    empty.hidden = list.length > 0;
    fill(body, list.map((ns) => row(ns, ns.namespace === editing
      && (!databases.several() || ns.database === database), ctx)));
    fill(foot, totals(list));
  }

  return { title: 'Namespaces', reads: 'namespaces', el, refresh: async () => {
    await Promise.all([refresh(), editor?.load()]);
  } };
}

function row(ns, selected, ctx) {
  const name = ns.namespace;
  const where = databases.of(ns);
  const s = ns.settings ?? {};
  const done = ns.finished_last_minute ?? {};
  const cell = (testid, value, extra = {}) => {
    const key = `${where}\u0000${name}\u0000${testid}`;
    const changed = previous.has(key) && previous.get(key) !== value;
    previous.set(key, value);
    return h('td', { class: `num${changed ? ' changed' : ''}`, testid, ...extra }, String(value));
  };
  const dead = ns.dead_letters > 0
    ? h('a', { href: ctx.href(`#/dead-letters?namespace=${encodeURIComponent(name)}`, where) }, String(ns.dead_letters))
    : '0';
  const deadCell = cell('ns-dead', ns.dead_letters);
  fill(deadCell, dead);
  if (ns.dead_letters > 0) deadCell.classList.add('bad');
  return h('tr', { testid: 'ns-row', 'data-namespace': name, 'data-database': where,
    class: selected ? 'selected' : '' },
    databases.cell(ns, 'ns-database'),
    h('td', { testid: 'ns-name', class: 'mono' }, name),
    cell('ns-pending', ns.pending),
    cell('ns-claimed', ns.claimed),
    h('td', {}, meter(ns.claimed, s.effective_max_in_flight)),
    deadCell,
    cell('ns-done-rate', done.done ?? 0),
    cell('ns-failed-rate', done.failed ?? 0),
    cell('ns-cancelled-rate', done.cancelled ?? 0),
    h('td', { testid: 'ns-settings', class: 'small' }, summary(s)),
    h('td', {}, may('operator', name)
      ? h('button', { type: 'button', class: 'quiet', testid: 'ns-edit-button',
        onclick: () => ctx.navigate(`#/namespaces/${seg(name)}`, where) }, 'Edit')
      : h('button', { type: 'button', class: 'quiet', testid: 'ns-view-button',
        onclick: () => ctx.navigate(`#/namespaces/${seg(name)}`, where) }, 'Settings')));
}

function totals(list) {
  const sum = (pick) => list.reduce((total, ns) => total + (pick(ns) ?? 0), 0);
  return h('tr', { testid: 'ns-totals' },
    databases.several() ? h('th') : null,
    h('th', {}, `${list.length} namespace${list.length === 1 ? '' : 's'}`),
    h('td', { class: 'num', testid: 'ns-total-pending' }, String(sum((n) => n.pending))),
    h('td', { class: 'num', testid: 'ns-total-claimed' }, String(sum((n) => n.claimed))),
    h('td'),
    h('td', { class: 'num', testid: 'ns-total-dead' }, String(sum((n) => n.dead_letters))),
    h('td', { class: 'num' }, String(sum((n) => n.finished_last_minute?.done))),
    h('td', { class: 'num' }, String(sum((n) => n.finished_last_minute?.failed))),
    h('td', { class: 'num' }, String(sum((n) => n.finished_last_minute?.cancelled))),
    h('td'), h('td'));
}

function meter(value, max) {
  const bar = h('span', { class: 'meter', title: `${value} of ${max}` }, h('span'));
  bar.firstChild.style.width = `${max > 0 ? Math.min(100, (value / max) * 100) : 0}%`;
  return h('span', { class: 'meter-box' }, bar, h('small', { class: 'muted' }, ` of ${max}`));
}

function summary(s) {
  const parts = [];
  parts.push(s.max_in_flight === null || s.max_in_flight === undefined
    ? `max ${s.effective_max_in_flight} (default)` : `max ${s.max_in_flight}`);
  parts.push(`weight ${s.weight}`);
  if (s.ordering === 'workflow') parts.push(`ordered, dead letter ${s.on_dead_letter}s`);
  if (s.rate_limit) parts.push(`${s.rate_limit.per_second}/s burst ${s.rate_limit.burst}`);
  if (s.placement && s.placement.mode !== 'unplaced') {
    parts.push(`${s.placement.mode} ${s.placement.nodes.join(', ')}`);
  }
  if (s.keep_results === false) parts.push('results dropped');
  const types = Object.keys(s.activities ?? {}).length;
  if (types) parts.push(`${types} activity polic${types === 1 ? 'y' : 'ies'}`);
  if (!s.configured) parts.push('defaults');
  return parts.join(' · ');
}

// ---- the edit form -------------------------------------------------------------------------

function settingsChooser(name) {
  const { el } = databases.chooser(`Each database keeps its own settings of “${name}”. Which database?`,
    () => `#/namespaces/${seg(name)}`);
  return { el, load: async () => {} };
}

// The settings of namespace `name` in `database` (null: the node's only one).
function editForm(name, database, ctx) {
  const editable = may('operator', name);
  const text = (testid, placeholder = '') => h('input', { type: 'text', inputmode: 'decimal',
    testid, placeholder, spellcheck: 'false' });
  const select = (testid, options) => h('select', { testid },
    options.map(([value, label]) => h('option', { value }, label)));
  const inputs = {
    max_in_flight: text('ns-f-max-in-flight'),
    weight: text('ns-f-weight', '1'),
    keep_results: h('input', { type: 'checkbox', testid: 'ns-f-keep-results' }),
    ordering: select('ns-f-ordering', [['none', 'none'], ['workflow', 'workflow (one row at a time per workflow)']]),
    on_dead_letter: select('ns-f-on-dead-letter', [['block', 'block the workflow'], ['skip', 'skip to the next row']]),
    rate: text('ns-f-rate', 'no limit'),
    burst: text('ns-f-burst', 'a second’s worth'),
    placement: select('ns-f-placement', [['unplaced', 'unplaced (any worker)'],
      ['prefer', 'prefer nodes'], ['pinned', 'pinned to nodes']]),
    nodes: h('input', { type: 'text', testid: 'ns-f-nodes', placeholder: 'eu-1, eu-2', spellcheck: 'false' }),
    activities: h('textarea', { rows: 6, testid: 'ns-f-activities', spellcheck: 'false' }),
  };
  const error = h('p', { class: 'error', role: 'alert', testid: 'ns-edit-error', hidden: true });
  const saved = h('p', { class: 'ok', testid: 'ns-edit-saved', hidden: true });
  const save = editable ? h('button', { type: 'submit', class: 'primary', testid: 'ns-save' }, 'Save settings') : null;
  const form = h('form', { class: 'edit', novalidate: true, testid: 'ns-edit', onsubmit: submit },
    h('h2', {}, 'Settings of ', h('span', { class: 'mono', testid: 'ns-edit-name' }, name),
      database ? [' in ', h('span', { class: 'mono', testid: 'ns-edit-database' }, database)] : null),
    editable
      ? h('p', { class: 'muted small' }, 'Saving replaces the namespace’s settings whole; ' +
        'every node applies them within its quota cache TTL.')
      : h('p', { class: 'muted small', testid: 'ns-edit-readonly' }, 'This credential may read these ' +
        `settings but not change them: it is not operator of “${name}”.`),
    h('fieldset', { class: 'plain', disabled: !editable }, h('div', { class: 'form-grid' },
        field('Max in flight', inputs.max_in_flight, 'claimed rows, cluster-wide; empty: the node default'),
        field('Weight', inputs.weight, '1..1000, share of each claim round'),
        field('Ordering', inputs.ordering),
        field('On dead letter', inputs.on_dead_letter, 'for ordered namespaces'),
        field('Rate limit (rows/s)', inputs.rate, 'empty: none'),
        field('Burst', inputs.burst),
        field('Placement', inputs.placement),
        field('Placement nodes', inputs.nodes, 'comma-separated node labels'),
        h('label', { class: 'field check' }, inputs.keep_results, h('span', {}, 'Keep results'))),
      field('Activity policies (JSON)', inputs.activities,
        'per activity type, e.g. {"charge": {"max_in_flight": 5}, "email": {"rate_limit": {"per_second": 20}}}')),
    error, saved,
    h('div', { class: 'actions' }, save,
      h('button', { type: 'button', testid: 'ns-edit-close',
        onclick: () => ctx.navigate('#/namespaces') }, 'Close')));

  function populate(s) {
    inputs.max_in_flight.value = s.max_in_flight ?? '';
    inputs.max_in_flight.placeholder = `default (${s.effective_max_in_flight})`;
    inputs.weight.value = s.weight ?? 1;
    inputs.keep_results.checked = s.keep_results !== false;
    inputs.ordering.value = s.ordering ?? 'none';
    inputs.on_dead_letter.value = s.on_dead_letter ?? 'block';
    inputs.rate.value = s.rate_limit?.per_second ?? '';
    inputs.burst.value = s.rate_limit?.burst ?? '';
    inputs.placement.value = s.placement?.mode ?? 'unplaced';
    inputs.nodes.value = (s.placement?.nodes ?? []).join(', ');
    const activities = withoutNulls(s.activities ?? {});
    inputs.activities.value = Object.keys(activities).length ? pretty(activities) : '';
  }

  async function submit(event) {
    event.preventDefault();
    if (!editable) return;
    error.hidden = true;
    saved.hidden = true;
    let body;
    try {
      body = requestBody(inputs);
    } catch (problem) {
      error.hidden = false;
      error.textContent = problem.message;
      return;
    }
    save.disabled = true;
    try {
      const settings = await api('PUT', `/v1/namespaces/${seg(name)}`, body, { database });
      populate(settings);
      saved.hidden = false;
      saved.textContent = `Saved at ${clock()}.`;
      ctx.refresh();
    } catch (failure) {
      error.hidden = false;
      error.textContent = ctx.explain(failure);
    } finally {
      save.disabled = false;
    }
  }

  // Loaded once: the poll must not overwrite what is being typed.
  let loaded = false;
  async function load() {
    if (loaded) return;
    populate(await api('GET', `/v1/namespaces/${seg(name)}`, undefined, { database }));
    loaded = true;
  }
  return { el: form, load };
}

// A number as typed, or the text itself, so that the node names what is wrong with it.
function number(text) {
  const t = String(text).trim();
  if (t === '') return null;
  return /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(t) ? Number(t) : t;
}

function requestBody(inputs) {
  let activities = {};
  const activitiesText = inputs.activities.value.trim();
  if (activitiesText) {
    try {
      activities = JSON.parse(activitiesText);
    } catch (problem) {
      throw new Error(`Activity policies are not valid JSON: ${problem.message}`);
    }
  }
  const perSecond = number(inputs.rate.value);
  const burst = number(inputs.burst.value);
  const rate = perSecond === null && burst === null ? null
    : burst === null ? { per_second: perSecond } : { per_second: perSecond, burst };
  const nodes = inputs.nodes.value.split(',').map((n) => n.trim()).filter((n) => n !== '');
  return {
    max_in_flight: number(inputs.max_in_flight.value),
    weight: number(inputs.weight.value),
    keep_results: inputs.keep_results.checked,
    ordering: inputs.ordering.value,
    on_dead_letter: inputs.on_dead_letter.value,
    rate_limit: rate,
    placement: { mode: inputs.placement.value, nodes },
    activities,
  };
}

// GET returns every policy field, null when unset; PUT takes only the fields that are set.
function withoutNulls(value) {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (value === null || typeof value !== 'object') return value;
  const out = {};
  for (const [key, inner] of Object.entries(value)) {
    if (inner !== null) out[key] = withoutNulls(inner);
  }
  return out;
}
