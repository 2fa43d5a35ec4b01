// Browser test of the web console on nodes that serve several databases, under
// tests/clients/with_cluster.py --nodes 2 --tokens --databases orders,shipping. Rows are
// staged into each database with SQL INSERT (README, "The outbox table"); the console must
// offer the database switcher, list every database's items tagged with their database, keep
// to the chosen database in every call and across a reload or a shared link, and send each
// call about one item to that item's database (or ask which), so that no call is refused for
// want of a database. Screenshots go to $OUTBOXD_TEST_ARTIFACTS/console-databases/.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { clickIn, env, go, page, problems, run, setValue, shot, signInWith, step, textOf, tid,
  visible, waitFor, where } from './harness.mjs';

const NODES = env('OUTBOXD_TEST_NODES').split(',');
const BASE = NODES[0];
const URLS = JSON.parse(env('OUTBOXD_TEST_DATABASE_URLS'));
const ADMIN_TOKEN = env('OUTBOXD_TEST_ADMIN_TOKEN');
const SHOTS = path.join(env('OUTBOXD_TEST_ARTIFACTS'), 'console-databases');
const NAMES = ['orders', 'shipping'];

function sql(database, query) {
  return execFileSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', URLS[database], '-c', query],
    { encoding: 'utf8' }).trim();
}

async function call(method, route) {
  const response = await fetch(BASE + route, { method, headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } });
  return { status: response.status, body: await response.json() };
}

// Rows as an application stages them, and dead letters as failed attempts leave them.
function insert(database, rows) {
  const values = rows.map((r) => `('${r.workflow_id}', ${r.ordinal}, '${r.namespace}', '${r.activity_type}',
    '${JSON.stringify(r.input ?? null)}', ${r.failed ? "'failed', 3, 'declined', now()" : "'pending', 0, NULL, NULL"},
    '2030-01-01T00:00:00Z')`);
  sql(database, `INSERT INTO outbox (workflow_id, ordinal, namespace, activity_type, input, status,
    attempt, last_error, finished_at, visible_after) VALUES ${values.join(',')}`);
}

// What a database holds, by namespace: {"ns": {pending, dead}}.
function namespacesIn(database) {
  const out = {};
  for (const line of sql(database, `SELECT namespace, count(*) FILTER (WHERE status = 'pending'),
      count(*) FILTER (WHERE status = 'failed') FROM outbox GROUP BY namespace ORDER BY namespace`)
    .split('\n').filter(Boolean)) {
    const [ns, pending, dead] = line.split('|');
    out[ns] = { pending: +pending, dead: +dead };
  }
  return out;
}

// What the namespaces view shows: {"database/ns": {pending, dead, shown}} (shown: the
// Database column's text).
function namespaceRows() {
  return page.$$eval(tid('ns-row'), (rows) => Object.fromEntries(rows.map((r) => {
    const cell = (id) => r.querySelector(`[data-testid="${id}"]`)?.textContent;
    return [`${r.dataset.database}/${r.dataset.namespace}`,
      { pending: Number(cell('ns-pending')), dead: Number(cell('ns-dead')), shown: cell('ns-database') }];
  })));
}

function expectedRows(databases) {
  const out = {};
  for (const database of databases) {
    for (const [ns, counts] of Object.entries(namespacesIn(database))) {
      out[`${database}/${ns}`] = { ...counts, shown: database };
    }
  }
  return out;
}

const sorted = (object) => JSON.stringify(Object.fromEntries(Object.entries(object).sort()));

async function rowsShown(databases) {
  const want = sorted(expectedRows(databases));
  return waitFor(`the namespaces of ${databases.join(' and ')}`, async () => {
    const shown = sorted(await namespaceRows());
    return shown === want ? shown : false;
  });
}

const letters = () => page.$$eval(tid('dl-row'), (rows) => rows.map((r) =>
  `${r.dataset.database}/${r.dataset.key}=${r.querySelector('[data-testid="dl-database"]')?.textContent}`).sort());

const chosen = () => page.$eval(tid('db-select'), (el) => el.value);
const hash = () => page.evaluate(() => location.hash);

// Every API call the page makes, and every answer that refused one for want of a database.
const calls = [];
const refusals = [];

step('stage rows into each database with SQL INSERT', async () => {
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/v1/')) calls.push(url.pathname + url.search);
  });
  page.on('response', async (response) => {
    if (response.status() !== 400) return;
    const body = await response.json().catch(() => null);
    if (body?.error?.code === 'database_required') refusals.push(response.url());
  });
  insert('orders', [
    { workflow_id: 'ord-1', ordinal: 0, namespace: 'shop', activity_type: 'charge' },
    { workflow_id: 'ord-1', ordinal: 1, namespace: 'shop', activity_type: 'email' },
    { workflow_id: 'same', ordinal: 0, namespace: 'common', activity_type: 'email' },
    { workflow_id: 'ord-dead', ordinal: 0, namespace: 'shop', activity_type: 'charge', input: { db: 'orders' }, failed: true },
  ]);
  insert('shipping', [
    ...[0, 1, 2].map((i) => ({ workflow_id: 'shp-1', ordinal: i, namespace: 'parcels', activity_type: 'ship' })),
    { workflow_id: 'same', ordinal: 0, namespace: 'common', activity_type: 'email' },
    { workflow_id: 'shp-dead', ordinal: 0, namespace: 'parcels', activity_type: 'ship', input: { db: 'shipping' }, failed: true },
  ]);
  assert.deepEqual(namespacesIn('orders'), { common: { pending: 1, dead: 0 }, shop: { pending: 2, dead: 1 } });
  assert.deepEqual(namespacesIn('shipping'), { common: { pending: 1, dead: 0 }, parcels: { pending: 3, dead: 1 } });
});

step('the header offers "All databases" and each database', async () => {
  where.phase = 'login';
  await page.goto(`${BASE}/ui/`, { waitUntil: 'load' });
  await signInWith(ADMIN_TOKEN);
  where.phase = 'signed in';
  await waitFor('the switcher', () => visible(tid('db-switch')));
  assert.deepEqual(await page.$$eval(`${tid('db-select')} option`, (options) =>
    options.map((o) => [o.value, o.textContent])), [['', 'All databases'], ['orders', 'orders'], ['shipping', 'shipping']]);
  assert.equal(await chosen(), '');
});

step('cluster view: each database ready, each node\'s databases and its shards in each', async () => {
  await go('#/cluster');
  await waitFor('both databases ready, served by both nodes, every shard owned', async () => {
    const shown = await page.$$eval(tid('cluster-database'), (rows) => rows.map((r) => [r.dataset.database,
      ...['ready', 'nodes', 'owned'].map((k) => r.querySelector(`[data-testid="cluster-database-${k}"]`).textContent)]));
    return JSON.stringify(shown) === JSON.stringify(NAMES.map((n) => [n, 'ready', '2', '1024 / 1024']));
  }, 30000);
  const { body } = await call('GET', '/v1/cluster');
  const count = (shards) => shards.reduce((sum, [lo, hi]) => sum + hi - lo + 1, 0);
  const want = Object.fromEntries(body.nodes.map((n) => [n.node_id,
    Object.fromEntries(n.databases.map((d) => [d.database, String(count(d.shards))]))]));
  assert.deepEqual(Object.keys(want).sort(), ['node-1', 'node-2']);
  await waitFor('each node\'s shards in each database, as /v1/cluster says', async () => {
    const shown = await page.$$eval(tid('cluster-node'), (rows) => Object.fromEntries(rows.map((r) => [r.dataset.nodeId,
      Object.fromEntries([...r.querySelectorAll('[data-testid="cluster-node-db"]')].map((d) =>
        [d.dataset.database, d.querySelector('[data-testid="cluster-node-db-shards"]').textContent]))])));
    return sorted(shown) === sorted(want);
  });
  assert.equal(await textOf(tid('cluster-ready-count')), '2');
  await shot('01-cluster');
});

step('every database: the namespaces of both, each row tagged with its database', async () => {
  await go('#/namespaces');
  await rowsShown(NAMES);
  assert.ok((await page.$$eval(`${tid('ns-table')} thead th`, (ths) => ths.map((th) => th.textContent))).includes('Database'));
  await shot('02-namespaces-all');
});

step('choosing a database filters the listing, is kept in the address, and every call names it', async () => {
  await page.select(tid('db-select'), 'orders');
  await waitFor('the choice in the address', async () => (await hash()) === '#/namespaces?database=orders');
  const from = calls.length;  // a call is scoped as it starts, by the address then
  await rowsShown(['orders']);
  await waitFor('two more polls', async () => calls.length > from + 1, 8000);
  const unnamed = calls.slice(from).filter((c) => !c.endsWith('database=orders'));
  assert.deepEqual(unnamed, [], 'calls without ?database=orders');
  assert.equal(await page.evaluate(() => document.title), 'Namespaces · orders · outboxd');
  // The nav links carry the choice.
  assert.equal(await page.$eval(tid('nav-dead-letters'), (a) => a.getAttribute('href')), '#/dead-letters?database=orders');
  await shot('03-namespaces-orders');
});

step('a reload keeps the choice, and so does a shared link', async () => {
  await page.reload({ waitUntil: 'load' });
  await waitFor('orders chosen after the reload', async () => (await visible(tid('db-switch'))) && (await chosen()) === 'orders');
  await rowsShown(['orders']);
  await page.goto('about:blank');
  await page.goto(`${BASE}/ui/#/namespaces?database=shipping`, { waitUntil: 'load' });
  await waitFor('shipping chosen from the link', async () => (await visible(tid('db-switch'))) && (await chosen()) === 'shipping');
  await rowsShown(['shipping']);
  await page.select(tid('db-select'), '');
  await waitFor('every database again', async () => (await hash()) === '#/namespaces');
  await rowsShown(NAMES);
});

step('dead letters of every database, each read and requeued in its own', async () => {
  await clickIn(tid('nav-dead-letters'));
  await waitFor('both letters, tagged', async () => JSON.stringify(await letters())
    === JSON.stringify(['orders/ord-dead:0=orders', 'shipping/shp-dead:0=shipping']));
  await clickIn(`tr[data-database="shipping"][data-key="shp-dead:0"] ${tid('dl-inspect')}`);
  const input = await waitFor('its input, read from shipping', async () => {
    const text = await textOf(`tr[data-database="shipping"]${tid('dl-detail')} ${tid('dl-input')}`);
    return text && JSON.parse(text);
  });
  assert.deepEqual(input, { db: 'shipping' });
  await shot('04-dead-letters-all');
  await clickIn(`tr[data-database="shipping"][data-key="shp-dead:0"] ${tid('dl-requeue')}`);
  await waitFor('the confirmation', async () => /Requeued shp-dead:0 in shipping/.test(await textOf(tid('dl-flash'))));
  assert.equal(sql('shipping', `SELECT status || '/' || attempt FROM outbox WHERE dispatch_key = 'shp-dead:0'`), 'pending/0');
  assert.equal(sql('orders', `SELECT status FROM outbox WHERE dispatch_key = 'ord-dead:0'`), 'failed');
  await waitFor('the letter gone', async () => JSON.stringify(await letters()) === JSON.stringify(['orders/ord-dead:0=orders']));
});

step('a dead letter\'s workflow opens in the letter\'s database', async () => {
  await clickIn(`tr[data-database="orders"][data-key="ord-dead:0"] td a`);
  await waitFor('the workflow in orders', async () => (await hash()) === '#/workflows/ord-dead?database=orders'
    && (await page.$$(tid('wf-row'))).length === 1);
  assert.equal(await chosen(), 'orders');
  assert.equal(await textOf(tid('wf-database')), 'orders');
});

step('a workflow with every database chosen: the view asks which, saying where it has rows', async () => {
  await page.select(tid('db-select'), '');
  await go('#/workflows/shp-1');
  await waitFor('the question, with each database\'s live rows', async () => {
    const notes = await page.$$eval(`${tid('db-chooser')} li`, (items) => items.map((li) =>
      `${li.querySelector('[data-testid="db-choice"]').dataset.database}: ${li.querySelector('[data-testid="db-choice-note"]')?.textContent}`));
    return JSON.stringify(notes) === JSON.stringify(['orders: no live rows', 'shipping: 3 live rows']);
  });
  assert.equal((await page.$$(tid('wf-row'))).length, 0);
  await shot('05-workflow-which-database');
  await clickIn(`${tid('db-choice')}[data-database="shipping"]`);
  await waitFor('its rows in shipping', async () => (await hash()) === '#/workflows/shp-1?database=shipping'
    && (await page.$$(tid('wf-row'))).length === 3);
  assert.equal(await chosen(), 'shipping');
});

step('namespace settings: a row\'s Edit edits them in its database; with every database, the form asks which', async () => {
  await page.select(tid('db-select'), '');
  await clickIn(tid('nav-namespaces'));
  await rowsShown(NAMES);
  await clickIn(`tr[data-database="shipping"][data-namespace="common"] ${tid('ns-edit-button')}`);
  await waitFor('the form of common in shipping', async () => (await hash()) === '#/namespaces/common?database=shipping'
    && (await textOf(tid('ns-edit-database'))) === 'shipping'
    && (await page.$eval(tid('ns-f-weight'), (el) => el.value)) === '1');
  await setValue(tid('ns-f-weight'), '7');
  await page.click(tid('ns-save'));
  await waitFor('saved', () => visible(tid('ns-edit-saved')));
  assert.equal(sql('shipping', `SELECT weight FROM namespaces WHERE namespace = 'common'`), '7');
  assert.equal(sql('orders', `SELECT count(*) FROM namespaces WHERE namespace = 'common'`), '0');
  await page.select(tid('db-select'), '');
  await waitFor('the question', async () => (await hash()) === '#/namespaces/common'
    && (await visible(tid('db-chooser'))) && !(await page.$(tid('ns-edit'))));
  await shot('06-namespace-which-database');
});

step('no call was refused for want of a database; no console errors, no CSP violations', async () => {
  assert.deepEqual(refusals, []);
  assert.deepEqual(problems.csp, []);
  assert.deepEqual(problems.console, []);
});

// The 401s of the first load, before the login.
function expected(message, phase) {
  const url = message.location()?.url ?? '';
  return phase === 'login' && /status of 401/.test(message.text()) && new URL(url, BASE).pathname.startsWith('/v1/');
}

await run({ shotsDir: SHOTS, expected });
