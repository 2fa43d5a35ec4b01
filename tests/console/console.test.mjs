// Browser test of the web console (src/http/ui) against real outboxd nodes, under
// tests/clients/with_cluster.py --nodes 2 --tokens. Drives Debian's Chromium headless with
// puppeteer-core: the login, every view, and each action checked against the database (psql);
// then scoped credentials (a reader and an operator of one namespace, made with the admin
// token) see only their namespace and are offered only what they may do, and the admin reads
// the audit log. Screenshots go to $OUTBOXD_TEST_ARTIFACTS/console/. Exits non-zero at the
// first failed step.

import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { clickIn, env, go, page, problems, run, setValue, shot, signInWith, sleep, step, textOf,
  tid, visible, waitFor, where } from './harness.mjs';

const NODES = env('OUTBOXD_TEST_NODES').split(',');
const BASE = NODES[0];
const DATABASE = env('OUTBOXD_TEST_DATABASE_URL');
const ADMIN_TOKEN = env('OUTBOXD_TEST_ADMIN_TOKEN');
const WORKER_TOKEN = env('OUTBOXD_TEST_WORKER_TOKEN');
const BIN = env('OUTBOXD_TEST_BIN_DIR');
const SHOTS = path.join(env('OUTBOXD_TEST_ARTIFACTS'), 'console');
const FUTURE = '2030-01-01T00:00:00Z';
const XSS = '<img src=x onerror="window.__xss=1">';
const GRANT_VECTORS = new URL('../vectors/grant_may.json', import.meta.url);
// Every button that changes something; a reader is offered none of them.
const ACTIONS = ['wf-pause', 'wf-resume', 'wf-cancel', 'dl-requeue', 'dl-bulk', 'ns-edit-button',
  'ns-open', 'ns-save'];

// ---- helpers -------------------------------------------------------------------------------

function sql(query) {
  return execFileSync('psql', ['-X', '-q', '-At', '-v', 'ON_ERROR_STOP=1', DATABASE, '-c', query],
    { encoding: 'utf8' }).trim();
}

async function call(method, route, body, token = ADMIN_TOKEN) {
  const response = await fetch(BASE + route, {
    method,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function stage(rows) {
  const { status, body } = await call('POST', '/v1/outbox', { rows });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.staged, rows.length);
}

// The example worker, advertising `charge` (which it does not implement: every charge task
// fails for good, a genuine dead letter) and `echo` (done at once), in the namespaces given.
function startWorker(namespaces = 'billing') {
  const urls = NODES.map((n) => `${n.replace(/^http/, 'ws')}/v1/workers`).join(',');
  const child = spawn(path.join(BIN, 'outboxd-worker'), ['--url', urls, '--token', WORKER_TOKEN,
    '--namespaces', namespaces, '--activity-types', 'charge,echo', '--worker-id', 'console-test',
    '--log-level', 'warn'], { stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  return {
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

// ---- the run -------------------------------------------------------------------------------

let worker;

// The action buttons (ACTIONS) rendered on the page.
const actionsShown = () => page.evaluate((ids) => ids.filter((id) =>
  [...document.querySelectorAll(`[data-testid="${id}"]`)].some((el) => el.checkVisibility())), ACTIONS);

// The view's error line, once it says `pattern`; the login stays closed (a 403 is no 401).
async function refusedWith(pattern) {
  const text = await waitFor(`the view to say ${pattern}`, async () => {
    const shown = (await visible(tid('view-error'))) && (await textOf(tid('view-error')));
    return shown && pattern.test(shown) && shown;
  });
  assert.equal(await visible(tid('login')), false, 'a 403 asked for the login');
  return text;
}

async function credential(name, roles) {
  const { status, body } = await call('POST', '/v1/credentials', { name, namespaces: ['billing'], roles });
  assert.equal(status, 201, JSON.stringify(body));
  return body;
}

const deadLetterKeys = () => page.$$eval(tid('dl-row'), (rows) => rows.map((r) => r.dataset.key).sort());

function namespaceRows() {
  return page.$$eval('[data-testid="ns-row"]', (rows) => Object.fromEntries(rows.map((r) => {
    const cell = (id) => Number(r.querySelector(`[data-testid="${id}"]`).textContent);
    return [r.dataset.namespace, { pending: cell('ns-pending'), claimed: cell('ns-claimed'),
      dead: cell('ns-dead'), done: cell('ns-done-rate') }];
  })));
}

function databaseNamespaces() {
  const out = {};
  const text = sql(`SELECT namespace, count(*) FILTER (WHERE status = 'pending'),
      count(*) FILTER (WHERE status = 'claimed'), count(*) FILTER (WHERE status = 'failed'),
      count(*) FILTER (WHERE status = 'done' AND finished_at > now() - interval '1 minute')
    FROM outbox GROUP BY namespace ORDER BY namespace`);
  for (const line of text.split('\n').filter(Boolean)) {
    const [ns, pending, claimed, dead, done] = line.split('|');
    out[ns] = { pending: +pending, claimed: +claimed, dead: +dead, done: +done };
  }
  return out;
}

step('stage rows and produce genuine dead letters with outboxd-worker', async () => {
  await stage([
    ...['dl-a', 'dl-b', 'dl-c'].map((w, i) => ({ workflow_id: w, ordinal: 0, activity_type: 'charge',
      namespace: 'billing', input: { order: i, note: XSS } })),
    ...[1, 2, 3, 4].map((i) => ({ workflow_id: `done-${i}`, ordinal: 0, activity_type: 'echo',
      namespace: 'billing', input: { i } })),
    { workflow_id: 'wf-mixed', ordinal: 0, activity_type: 'echo', namespace: 'billing', input: { step: 'first' } },
    { workflow_id: 'wf-mixed', ordinal: 1, activity_type: 'email', namespace: 'billing', visible_after: FUTURE },
    ...[1, 2, 3].map((i) => ({ workflow_id: `later-${i}`, ordinal: 0, activity_type: 'email',
      namespace: 'billing', visible_after: FUTURE })),
    ...[0, 1].map((i) => ({ workflow_id: 'wf-cancel', ordinal: i, activity_type: 'email',
      namespace: 'ops', visible_after: FUTURE })),
  ]);
  worker = startWorker();
  await waitFor('3 dead letters and 5 done rows', () => sql(`SELECT
      count(*) FILTER (WHERE status = 'failed') || '/' || count(*) FILTER (WHERE status = 'done')
    FROM outbox WHERE namespace = 'billing'`) === '3/5', 30000);
  await worker.stop();
  worker = null;
  assert.equal(sql(`SELECT DISTINCT last_error FROM outbox WHERE status = 'failed'`),
    "unknown activity type 'charge'");
});

step('the page is served with its CSP and asks for a credential', async () => {
  where.phase = 'login';
  const response = await page.goto(`${BASE}/ui`, { waitUntil: 'load' });
  assert.equal(new URL(response.url()).pathname, '/ui/');
  assert.match(response.headers()['content-security-policy'] ?? '', /script-src 'self'/);
  await page.waitForSelector(tid('login'), { visible: true, timeout: 10000 });
  assert.equal(await textOf(tid('login-reason')), 'This node asks for a credential.');
  assert.equal(await visible(tid('forget-token')), false);
  await shot('01-login');
});

step('a wrong credential is refused; the worker token sees the cluster only; the admin token signs in', async () => {
  for (const wrong of ['not-the-token', `${ADMIN_TOKEN}x`]) {
    await setValue(tid('login-token'), wrong);
    await page.click(tid('login-submit'));  // hides the previous refusal at once
    await waitFor('the refusal', async () => (await visible(tid('login-error')))
      && /refused/.test(await textOf(tid('login-error')))
      && !(await page.$eval(tid('login-submit'), (el) => el.disabled)));
    assert.equal(await page.evaluate(() => sessionStorage.length), 0);
  }
  // Any valid credential signs in; what it may not read, the view says so.
  where.phase = 'scoped';
  await signInWith(WORKER_TOKEN);
  assert.match(await textOf(tid('whoami')), /^bootstrap:worker · worker of every namespace$/);
  await go('#/cluster');
  await waitFor('both nodes', async () => (await page.$$(tid('cluster-node'))).length === 2);
  await go('#/namespaces');
  await refusedWith(/^This credential may not read namespaces: this credential is not reader of any namespace\.$/);
  assert.deepEqual(await actionsShown(), []);
  assert.equal(await visible(tid('nav-audit')), false);
  where.phase = 'signed in';
  await signInWith(ADMIN_TOKEN);
  assert.equal(await page.evaluate(() => sessionStorage.getItem('outboxd.credential')), ADMIN_TOKEN);
  assert.equal(await visible(tid('forget-token')), true);
  assert.equal(await visible(tid('nav-audit')), true);
  assert.equal(await visible(tid('view-error')), false);
});

step('the console decides by the shared grant vectors (tests/vectors/grant_may.json)', async () => {
  const { cases } = JSON.parse(readFileSync(GRANT_VECTORS, 'utf8'));
  const failures = await page.evaluate(async (all) => {
    const access = await import(new URL('access.js', location.href).href);
    const wrong = [];
    for (const c of all) {
      const grant = { credential_id: 'vector', scopes: c.scopes };
      for (const check of c.checks) {
        const may = check.namespace === null ? access.grantMaySomewhere(grant, check.role)
          : access.grantMay(grant, check.role, check.namespace);
        if (may !== check.may) wrong.push(`${c.name}: ${JSON.stringify(check)}`);
      }
    }
    return wrong;
  }, cases);
  assert.deepEqual(failures, []);
});

step('cluster view: both nodes, their shard ranges, live', async () => {
  await go('#/cluster');
  const { body } = await call('GET', '/v1/cluster');
  const expected = Object.fromEntries(body.nodes.map((n) => [n.node_id,
    n.shards.map(([lo, hi]) => (lo === hi ? `${lo}` : `${lo}–${hi}`)).join(', ')]));
  assert.deepEqual(Object.keys(expected).sort(), ['node-1', 'node-2']);
  await waitFor('both nodes on the page', async () => {
    const rows = await page.$$eval(tid('cluster-node'), (trs) => trs.map((tr) => ({
      id: tr.dataset.nodeId,
      state: tr.querySelector('[data-testid="cluster-node-state"]').textContent,
      ranges: tr.querySelector('[data-testid="cluster-node-ranges"]').textContent,
    })));
    return rows.length === 2 && rows.every((r) => r.state === 'live' && r.ranges === expected[r.id]);
  });
  assert.equal(await textOf(tid('cluster-owned')), '1024 / 1024');
  assert.equal(await textOf(tid('cluster-live-count')), '2');
  await shot('02-cluster');
});

step('namespaces view: the numbers the database holds', async () => {
  await go('#/namespaces');
  const db = databaseNamespaces();
  assert.deepEqual(db.billing, { pending: 4, claimed: 0, dead: 3, done: 5 });
  assert.deepEqual(db.ops, { pending: 2, claimed: 0, dead: 0, done: 0 });
  await waitFor('the page to match the database', async () => {
    const shown = await namespaceRows();
    const now = databaseNamespaces();
    return JSON.stringify(shown) === JSON.stringify(now) ? shown : false;
  });
});

step('one database: no switcher, no Database column, no ?database= on any call', async () => {
  const calls = [];
  const onRequest = (request) => {
    const url = new URL(request.url());
    if (url.pathname.startsWith('/v1/')) calls.push(url.pathname + url.search);
  };
  page.on('request', onRequest);
  // Ends on the namespaces, where the next step starts.
  for (const [hash, table] of [['#/cluster', 'cluster-nodes'], ['#/dead-letters', 'dl-table'], ['#/namespaces', 'ns-table']]) {
    await go(hash);
    await waitFor(`the ${table} filled`, async () => (await page.$$(`${tid(table)} tbody tr`)).length > 0);
    assert.equal(await visible(tid('db-switch')), false);
    assert.deepEqual(await page.$$eval(`${tid(table)} thead th`, (ths) => ths.map((th) => th.textContent)
      .filter((t) => /database/i.test(t))), []);
    if (table === 'cluster-nodes') assert.equal(await page.$(tid('cluster-databases')), null);
  }
  page.off('request', onRequest);
  assert.ok(calls.length >= 3, JSON.stringify(calls));
  assert.deepEqual(calls.filter((c) => /[?&]database=/.test(c)), []);
  await waitFor('the billing row', async () => (await namespaceRows()).billing);
});

step('live updates: newly staged rows show up without a reload', async () => {
  await page.evaluate(() => { window.__sameDocument = true; });
  const before = (await namespaceRows()).billing.pending;
  await stage([1, 2, 3].map((i) => ({ workflow_id: `live-${i}`, ordinal: 0, activity_type: 'email',
    namespace: 'billing', visible_after: FUTURE })));
  await waitFor('the pending count to grow by 3', async () =>
    (await namespaceRows()).billing.pending === before + 3, 8000);
  assert.equal(databaseNamespaces().billing.pending, before + 3);
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page was reloaded');
});

step('a bad namespace edit shows the node\'s 400 message; a good one is saved', async () => {
  const reference = await call('PUT', '/v1/namespaces/console-reference', { weight: 0 });
  assert.equal(reference.status, 400);
  await clickIn(`tr[data-namespace="billing"] ${tid('ns-edit-button')}`);
  await waitFor('the edit form', async () => (await textOf(tid('ns-edit-name'))) === 'billing'
    && (await page.$eval(tid('ns-f-weight'), (el) => el.value)) === '1');
  where.phase = 'bad edit';
  await setValue(tid('ns-f-weight'), '0');
  await page.click(tid('ns-save'));
  await waitFor('the error message', async () => (await visible(tid('ns-edit-error')))
    && (await textOf(tid('ns-edit-error'))) === reference.body.error.message);
  assert.equal(sql(`SELECT count(*) FROM namespaces WHERE namespace = 'billing'`), '0');
  where.phase = 'signed in';
  await setValue(tid('ns-f-weight'), '3');
  await setValue(tid('ns-f-max-in-flight'), '50');
  await setValue(tid('ns-f-rate'), '20');
  await setValue(tid('ns-f-activities'), '{"charge": {"max_in_flight": 5, "max_attempts": 4}}');
  await page.click(tid('ns-save'));
  await waitFor('saved', () => visible(tid('ns-edit-saved')));
  assert.equal(await visible(tid('ns-edit-error')), false);
  const stored = `SELECT weight || '/' || max_in_flight || '/' || keep_results || '/' || rate_per_second
    || '/' || rate_burst || '/' || (activities -> 'charge' ->> 'max_in_flight') FROM namespaces
    WHERE namespace = 'billing'`;
  assert.equal(sql(stored), '3/50/true/20/20/5');
  // The form now holds what the node answered (unset policy fields dropped): saving it again
  // changes nothing.
  await page.$eval(tid('ns-edit-saved'), (el) => { el.hidden = true; });
  await page.click(tid('ns-save'));
  await waitFor('saved again', () => visible(tid('ns-edit-saved')));
  assert.equal(await visible(tid('ns-edit-error')), false);
  assert.equal(sql(stored), '3/50/true/20/20/5');
  await waitFor('the summary to show the settings', async () =>
    /max 50 · weight 3 · 20\/s burst 20 · 1 activity policy/.test(await textOf(`tr[data-namespace="billing"] ${tid('ns-settings')}`)));
  await shot('03-namespaces');
});

step('dead letters: filter, pages, inspect, requeue one', async () => {
  await go('#/dead-letters');
  await setValue(tid('dl-f-namespace'), 'billing');
  await setValue(tid('dl-f-activity'), 'charge');
  await page.click(tid('dl-apply'));
  await waitFor('the filter in the address', () => page.evaluate(() =>
    location.hash === '#/dead-letters?namespace=billing&activity_type=charge'));
  await waitFor('3 letters', async () => (await page.$$(tid('dl-row'))).length === 3);
  // Two a page: the cursor leads to the third and back.
  await go('#/dead-letters?namespace=billing&activity_type=charge&limit=2');
  const keysShown = () => page.$$eval(tid('dl-row'), (rows) => rows.map((r) => r.dataset.key));
  const first = await waitFor('page 1 of 2 letters', async () => {
    const keys = await keysShown();
    return keys.length === 2 && (await textOf(tid('dl-page'))).startsWith('page 1') && keys;
  });
  await clickIn(tid('dl-next'));
  const second = await waitFor('page 2 with 1 letter', async () => {
    const keys = await keysShown();
    return keys.length === 1 && (await textOf(tid('dl-page'))).startsWith('page 2') && keys;
  });
  assert.equal(await page.$eval(tid('dl-next'), (el) => el.disabled), true);
  assert.deepEqual([...first, ...second].sort(), ['dl-a:0', 'dl-b:0', 'dl-c:0']);
  await clickIn(tid('dl-prev'));
  await waitFor('page 1 again', async () => JSON.stringify(await keysShown()) === JSON.stringify(first));

  await go('#/dead-letters?namespace=billing');
  await clickIn(`tr[data-key="dl-a:0"] ${tid('dl-inspect')}`);
  const input = await waitFor('the input', async () => {
    const text = await textOf(`tr[data-key="dl-a:0"]${tid('dl-detail')} ${tid('dl-input')}`);
    return text && JSON.parse(text);
  });
  assert.deepEqual(input, { order: 0, note: XSS });
  assert.equal(await textOf(`tr[data-key="dl-a:0"]${tid('dl-detail')} ${tid('dl-last-error')}`),
    sql(`SELECT last_error FROM outbox WHERE dispatch_key = 'dl-a:0'`));
  assert.equal(await page.$$eval('main img', (imgs) => imgs.length), 0, 'row data was parsed as HTML');
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  await shot('04-dead-letters');

  await clickIn(`tr[data-key="dl-a:0"] ${tid('dl-requeue')}`);
  await waitFor('the confirmation of the requeue', async () => /Requeued dl-a:0/.test(await textOf(tid('dl-flash'))));
  assert.equal(sql(`SELECT status || '/' || attempt FROM outbox WHERE dispatch_key = 'dl-a:0'`), 'pending/0');
  await waitFor('the row to leave the list', async () => (await page.$$(tid('dl-row'))).length === 2);
});

step('dead letters: bulk requeue by the filter, after a confirmation', async () => {
  await clickIn(tid('dl-bulk'));
  await waitFor('the question', async () => /namespace “billing”/.test(await textOf(tid('dl-bulk-confirm-text'))));
  await clickIn(tid('dl-bulk-confirm-no'));
  await sleep(300);
  assert.equal(sql(`SELECT count(*) FROM outbox WHERE status = 'failed'`), '2', 'cancel requeued');
  await clickIn(tid('dl-bulk'));
  await clickIn(tid('dl-bulk-confirm-yes'));
  await waitFor('the count', async () => (await textOf(tid('dl-flash'))) === 'Requeued 2 dead letters.');
  assert.equal(sql(`SELECT string_agg(dispatch_key || '=' || status || '/' || attempt, ',' ORDER BY dispatch_key)
    FROM outbox WHERE workflow_id LIKE 'dl-%'`), 'dl-a:0=pending/0,dl-b:0=pending/0,dl-c:0=pending/0');
  await waitFor('an empty list', () => visible(tid('dl-empty')));
});

step('workflow view: every row with ?all=true, pause and resume', async () => {
  await go('#/workflows');
  await setValue(tid('wf-id'), 'wf-mixed');
  await page.click(tid('wf-open'));
  await waitFor('its rows', async () => {
    const rows = await page.$$eval(tid('wf-row'), (trs) => trs.map((tr) => `${tr.dataset.key}=${tr.dataset.status}`));
    return rows.join(',') === 'wf-mixed:0=done,wf-mixed:1=pending';
  });
  assert.equal(await page.evaluate(() => location.hash), '#/workflows/wf-mixed');
  const state = () => page.$eval(tid('wf-state'), (el) => el.dataset.state);
  await waitFor('active', async () => (await state()) === 'active');

  await clickIn(tid('wf-pause'));
  await waitFor('paused in the database', () => sql(`SELECT count(*) FROM paused_workflows
    WHERE workflow_id = 'wf-mixed'`) === '1');
  await waitFor('paused on the page', async () => (await state()) === 'paused'
    && (await page.$eval(tid('wf-pause'), (el) => el.disabled))
    && !(await page.$eval(tid('wf-resume'), (el) => el.disabled)));
  await clickIn(`tr[data-key="wf-mixed:0"] ${tid('wf-inspect')}`);
  await waitFor('the result of the done row', async () =>
    (await textOf(`tr[data-key="wf-mixed:0"]${tid('wf-detail')} ${tid('wf-result')}`))?.includes('"first"'));
  await shot('05-workflow-paused');

  await clickIn(tid('wf-resume'));
  await waitFor('resumed in the database', () => sql(`SELECT count(*) FROM paused_workflows
    WHERE workflow_id = 'wf-mixed'`) === '0');
  await waitFor('active on the page', async () => (await state()) === 'active');
});

step('workflow view: cancel, after a confirmation', async () => {
  await go('#/workflows/wf-cancel');
  await waitFor('its rows', async () => (await page.$$(tid('wf-row'))).length === 2);
  await clickIn(tid('wf-cancel'));
  await clickIn(tid('wf-cancel-confirm-yes'));
  await waitFor('cancelled in the database', () => sql(`SELECT string_agg(DISTINCT status, ',')
    FROM outbox WHERE workflow_id = 'wf-cancel'`) === 'cancelled');
  await waitFor('cancelled on the page', async () =>
    (await page.$eval(tid('wf-state'), (el) => el.dataset.state)) === 'cancelled');
});

step('an unreachable node is shown, and the page recovers', async () => {
  await go('#/namespaces');
  await waitFor('the table', async () => (await page.$$(tid('ns-row'))).length > 0);
  where.phase = 'offline';
  await page.setOfflineMode(true);
  await waitFor('the banner', async () => (await visible(tid('unreachable')))
    && (await textOf(tid('conn-status'))) === 'unreachable', 10000);
  assert.ok((await page.$$(tid('ns-row'))).length > 0, 'the last figures stay on the page');
  await shot('06-unreachable');
  await page.setOfflineMode(false);
  await waitFor('the banner to go', async () => !(await visible(tid('unreachable')))
    && (await textOf(tid('conn-status'))) === 'live', 10000);
  where.phase = 'signed in';
});

step('a hidden tab makes no API calls; shown again, it refreshes at once', async () => {
  await go('#/namespaces');
  await waitFor('the table', async () => (await page.$$(tid('ns-row'))).length > 0);
  const calls = [];
  const onRequest = (request) => {
    if (new URL(request.url()).pathname.startsWith('/v1/')) calls.push(Date.now());
  };
  // What a browser does when the tab goes to the background (headless tabs never do).
  await page.evaluate(() => {
    Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  // A refresh already under way finishes: wait for a second without calls (a loaded CI
  // machine may take longer than that for one), then count for two and a half intervals.
  page.on('request', onRequest);
  const hidden = Date.now();
  await waitFor('a second without API calls', async () =>
    Date.now() - Math.max(hidden, calls.at(-1) ?? 0) > 1000, 10000);
  calls.length = 0;
  await sleep(5000);
  assert.deepEqual(calls, [], 'API calls while the tab was hidden');
  const before = (await namespaceRows()).billing.pending;
  await stage([{ workflow_id: 'hidden-1', ordinal: 0, activity_type: 'email', namespace: 'billing',
    visible_after: FUTURE }]);
  const shown = Date.now();
  await page.evaluate(() => {
    delete document.visibilityState;  // the prototype's getter again: 'visible'
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await waitFor('the new row on the page', async () =>
    (await namespaceRows()).billing.pending === before + 1, 5000);
  page.off('request', onRequest);
  assert.ok(calls.length > 0 && calls[0] - shown < 1500,
    `the first call came ${calls.length ? calls[0] - shown : 'never'} ms after the tab was shown, not at once`);
});

// ---- scoped credentials and the audit log ---------------------------------------------------

let reader;
let operator;

step('rows and dead letters in two namespaces; a reader and an operator of billing', async () => {
  await stage([
    { workflow_id: 'tenant-ops', ordinal: 0, activity_type: 'charge', namespace: 'ops', input: { ops: 'only' } },
    { workflow_id: 'tenant-ops-later', ordinal: 0, activity_type: 'email', namespace: 'ops', visible_after: FUTURE },
  ]);
  // dl-a..c (billing, requeued above) fail again, and tenant-ops:0 in ops.
  worker = startWorker('billing,ops');
  await waitFor('dead letters in both namespaces', () => sql(`SELECT string_agg(namespace || '=' || n, ',' ORDER BY namespace)
    FROM (SELECT namespace, count(*) n FROM outbox WHERE status = 'failed' GROUP BY namespace) f`) === 'billing=3,ops=1', 30000);
  await worker.stop();
  worker = null;
  reader = await credential('console-reader', ['reader']);
  operator = await credential('console-operator', ['operator']);
});

step('a reader of billing: its namespace only, payloads hidden, no action buttons', async () => {
  where.phase = 'scoped';
  await signInWith(reader.secret);
  assert.equal(await textOf(tid('whoami')), `${reader.id} · reader of billing`);
  assert.equal(await visible(tid('nav-audit')), false);

  await go('#/namespaces');
  await waitFor('billing alone, as the database counts it', async () => {
    const shown = await namespaceRows();
    return JSON.stringify(shown) === JSON.stringify({ billing: databaseNamespaces().billing });
  });
  assert.deepEqual(await actionsShown(), []);
  await clickIn(`tr[data-namespace="billing"] ${tid('ns-view-button')}`);
  await waitFor('its settings, read-only', async () => (await visible(tid('ns-edit-readonly')))
    && (await page.$eval(tid('ns-f-weight'), (el) => el.value)) === '3');
  assert.equal(await page.$eval(tid('ns-f-weight'), (el) => el.matches(':disabled')), true);
  assert.deepEqual(await actionsShown(), []);
  await go('#/namespaces/ops');
  await refusedWith(/^This credential may not read namespaces: this credential is not reader of namespace 'ops'\.$/);

  await go('#/dead-letters');
  await waitFor('the dead letters of billing only', async () =>
    JSON.stringify(await deadLetterKeys()) === JSON.stringify(['dl-a:0', 'dl-b:0', 'dl-c:0']));
  assert.deepEqual(await actionsShown(), []);
  await clickIn(`tr[data-key="dl-a:0"] ${tid('dl-inspect')}`);
  await waitFor('its input, hidden', async () =>
    (await textOf(`tr[data-key="dl-a:0"]${tid('dl-detail')} ${tid('dl-input')}`)) === 'hidden');
  await shot('07-reader-dead-letters');
  await go('#/dead-letters?namespace=ops');
  await refusedWith(/^This credential may not read dead letters: this credential is not reader of namespace 'ops'\.$/);

  await go('#/workflows/wf-mixed');
  await waitFor('its rows', async () => (await page.$$(tid('wf-row'))).length === 2);
  await clickIn(`tr[data-key="wf-mixed:0"] ${tid('wf-inspect')}`);
  const detail = `tr[data-key="wf-mixed:0"]${tid('wf-detail')}`;
  await waitFor('input and result, hidden', async () => (await textOf(`${detail} ${tid('wf-input')}`)) === 'hidden'
    && (await textOf(`${detail} ${tid('wf-result')}`)) === 'hidden');
  assert.deepEqual(await actionsShown(), []);
  await go('#/workflows/tenant-ops');
  await waitFor('a workflow of ops: no rows', async () =>
    (await page.$eval(tid('wf-state'), (el) => el.dataset.state)) === 'no rows');
  assert.equal((await page.$$(tid('wf-row'))).length, 0);
  assert.deepEqual(await actionsShown(), []);

  await go('#/audit');
  await refusedWith(/^This credential may not read the audit log: this credential is not admin of every namespace\.$/);
  assert.equal(await page.evaluate(() => document.body.innerText.includes('"only"')), false);
});

step('an operator of billing: its actions, on its namespace only', async () => {
  await signInWith(operator.secret);
  assert.equal(await textOf(tid('whoami')), `${operator.id} · operator of billing`);
  assert.equal(await visible(tid('nav-audit')), false);

  await go('#/namespaces');
  await waitFor('billing alone', async () => JSON.stringify(Object.keys(await namespaceRows())) === '["billing"]');
  await clickIn(`tr[data-namespace="billing"] ${tid('ns-edit-button')}`);
  await waitFor('the edit form', async () => (await page.$eval(tid('ns-f-weight'), (el) => el.value)) === '3');
  await setValue(tid('ns-f-weight'), '4');
  await page.click(tid('ns-save'));
  await waitFor('saved', () => visible(tid('ns-edit-saved')));
  assert.equal(sql(`SELECT weight || '/' || max_in_flight FROM namespaces WHERE namespace = 'billing'`), '4/50');

  await go('#/dead-letters');
  await waitFor('the dead letters of billing, each with its requeue', async () =>
    JSON.stringify(await deadLetterKeys()) === JSON.stringify(['dl-a:0', 'dl-b:0', 'dl-c:0'])
    && (await page.$$(tid('dl-requeue'))).length === 3);
  await clickIn(tid('dl-bulk'));
  await waitFor('the question names its namespace', async () =>
    /EVERY dead letter of “billing”\?/.test(await textOf(tid('dl-bulk-confirm-text'))));
  await clickIn(tid('dl-bulk-confirm-no'));
  await clickIn(`tr[data-key="dl-b:0"] ${tid('dl-requeue')}`);
  await waitFor('the confirmation of the requeue', async () => /Requeued dl-b:0/.test(await textOf(tid('dl-flash'))));
  assert.equal(sql(`SELECT status || '/' || attempt FROM outbox WHERE dispatch_key = 'dl-b:0'`), 'pending/0');
  assert.equal(sql(`SELECT status FROM outbox WHERE dispatch_key = 'tenant-ops:0'`), 'failed');

  await go('#/workflows/wf-mixed');
  await clickIn(tid('wf-pause'));
  await waitFor('paused in the database', () => sql(`SELECT count(*) FROM paused_workflows
    WHERE workflow_id = 'wf-mixed'`) === '1');
  await waitFor('paused on the page', async () =>
    (await page.$eval(tid('wf-state'), (el) => el.dataset.state)) === 'paused');
  await clickIn(tid('wf-resume'));
  await waitFor('resumed in the database', () => sql(`SELECT count(*) FROM paused_workflows
    WHERE workflow_id = 'wf-mixed'`) === '0');
  await shot('08-operator-workflow');
  await go('#/workflows/tenant-ops');
  await waitFor('a workflow of ops: no rows', async () =>
    (await page.$eval(tid('wf-state'), (el) => el.dataset.state)) === 'no rows');
  assert.deepEqual(await actionsShown(), []);
  await go('#/audit');
  await refusedWith(/^This credential may not read the audit log: /);
  where.phase = 'signed in';
});

step('an admin reads the audit log: the changes above, newest first, a page at a time', async () => {
  // A change whose record holds markup: shown as text.
  const marked = await call('POST', '/v1/dead-letters/requeue', { namespace: 'ops', error_contains: XSS, limit: 10 });
  assert.equal(marked.status, 200, JSON.stringify(marked.body));
  await signInWith(ADMIN_TOKEN);
  await clickIn(tid('nav-audit'));
  await waitFor('the audit view', async () => (await page.evaluate(() => location.hash)) === '#/audit'
    && (await page.$$(tid('audit-row'))).length > 0);
  const { body } = await call('GET', '/v1/audit?limit=50');
  const [newest, resume, pause, requeue] = body.audit;
  assert.equal(newest.credential_id, 'bootstrap:admin');
  assert.equal(newest.route, '/v1/dead-letters/requeue');
  assert.deepEqual([resume, pause, requeue].map((e) => `${e.credential_id} ${e.method} ${e.route}`), [
    `${operator.id} POST /v1/workflows/{id}/resume`, `${operator.id} POST /v1/workflows/{id}/pause`,
    `${operator.id} POST /v1/dead-letters/{key}/requeue`]);
  const rowsShown = () => page.$$eval(tid('audit-row'), (trs) => trs.map((tr) => {
    const cell = (id) => tr.querySelector(`[data-testid="${id}"]`).textContent;
    return [Number(tr.dataset.id), tr.querySelector('[data-testid="audit-at"]').dataset.at,
      cell('audit-credential'), cell('audit-method'), cell('audit-route'), cell('audit-namespace'),
      cell('audit-change')];
  }));
  const expected = body.audit.map((e) => [e.id, e.at, e.credential_id, e.method, e.route,
    e.namespace ?? '', JSON.stringify(e.change)]);
  await waitFor('the page to show what the node records', async () =>
    JSON.stringify(await rowsShown()) === JSON.stringify(expected));
  assert.equal(newest.change.body.error_contains, XSS);
  assert.equal(await page.$$eval('main img', (imgs) => imgs.length), 0, 'an audit change was parsed as HTML');
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  await shot('09-audit');

  // Two a page: the cursor leads on and back.
  await go('#/audit?limit=2');
  const ids = () => page.$$eval(tid('audit-row'), (trs) => trs.map((tr) => Number(tr.dataset.id)));
  await waitFor('page 1', async () => JSON.stringify(await ids()) === JSON.stringify(expected.slice(0, 2).map((e) => e[0])));
  await clickIn(tid('audit-next'));
  await waitFor('page 2', async () => JSON.stringify(await ids()) === JSON.stringify(expected.slice(2, 4).map((e) => e[0]))
    && (await textOf(tid('audit-page'))).startsWith('page 2'));
  await clickIn(tid('audit-prev'));
  await waitFor('page 1 again', async () => JSON.stringify(await ids()) === JSON.stringify(expected.slice(0, 2).map((e) => e[0])));
});

step('targets view: every kind, its route, this node\'s state, never a secret', async () => {
  // Documentation addresses (TEST-NET-3): public, so allowed, and never answering.
  const hook = await call('PUT', '/v1/targets/console-hook', { namespace: 'billing',
    activity_types: ['charge'], url: 'https://203.0.113.10/hook?token=console-query-token',
    signing_secret: 'console-signing-secret' });
  assert.equal(hook.status, 200, JSON.stringify(hook.body));
  const events = await call('PUT', '/v1/targets/console-events', { kind: 'nats', namespace: 'billing',
    activity_types: ['charge'], url: 'nats://console:console-nats-password@203.0.113.11:4222',
    subject: 'billing.{activity_type}' });
  assert.equal(events.status, 200, JSON.stringify(events.body));
  await clickIn(tid('nav-targets'));
  const rows = () => page.$$eval(tid('target-row'), (trs) => Object.fromEntries(trs.map((tr) => {
    const cell = (id) => tr.querySelector(`[data-testid="${id}"]`).textContent;
    return [tr.dataset.target, { kind: cell('target-kind'), route: cell('target-route'),
      where: cell('target-where'), state: cell('target-state') }];
  })));
  const shown = await waitFor('both targets', async () => {
    const now = await rows();
    return now['console-hook']?.state === 'connected' && now['console-events'] && now;
  });
  assert.deepEqual(shown['console-hook'], { kind: 'http', route: 'billing · default · charge',
    where: 'https://203.0.113.10/hook?…', state: 'connected' });
  assert.deepEqual(shown['console-events'], { kind: 'nats', route: 'billing · default · charge',
    where: 'nats://203.0.113.11:4222 · subject billing.{activity_type}', state: 'not-connected' });
  const html = await page.content();
  for (const secret of ['console-signing-secret', 'console-nats-password', 'console-query-token']) {
    assert.ok(!html.includes(secret), `the page shows ${secret}`);
  }
  await shot('10-targets');
  for (const name of ['console-hook', 'console-events']) {
    assert.equal((await call('DELETE', `/v1/targets/${name}`)).status, 200);
  }
  await waitFor('no target', async () => visible(tid('targets-empty')));
});

step('forget the credential: the login again, also after a reload', async () => {
  where.phase = 'login';
  await clickIn(tid('forget-token'));
  await page.waitForSelector(tid('login'), { visible: true, timeout: 5000 });
  assert.equal(await page.evaluate(() => sessionStorage.getItem('outboxd.credential')), null);
  assert.equal(await visible(tid('nav-audit')), false);
  await page.reload({ waitUntil: 'load' });
  await page.waitForSelector(tid('login'), { visible: true, timeout: 10000 });
});

step('no console errors and no CSP violations', async () => {
  assert.deepEqual(problems.csp, []);
  assert.deepEqual(problems.console, []);
});

// Failed loads the test provokes: 401s before the login, 403s of scoped credentials, the bad
// edit's 400, offline.
function expected(message, phase) {
  const text = message.text();
  const url = message.location()?.url ?? '';
  if (phase === 'login' && /status of 401/.test(text) && new URL(url, BASE).pathname.startsWith('/v1/')) return true;
  if (phase === 'scoped' && /status of 403/.test(text) && new URL(url, BASE).pathname.startsWith('/v1/')) return true;
  if (phase === 'bad edit' && /status of 400/.test(text) && url === `${BASE}/v1/namespaces/billing`) return true;
  if (phase === 'offline' && /net::ERR_INTERNET_DISCONNECTED/.test(text)) return true;
  return false;
}

await run({ shotsDir: SHOTS, expected, cleanup: async () => { await worker?.stop(); } });
