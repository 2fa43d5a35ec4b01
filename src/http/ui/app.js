// The outboxd console: hash routes, the 2-second poll while the tab is visible, the login
// with any credential (what it reaches comes from GET /v1/whoami, see access.js), the
// database switcher of a node of several databases (databases.js) and the node's
// reachability in the header. Each view lives in view_*.js and exports
// create({path, params, database}, ctx) → {title, reads, el, refresh()}; refresh() fetches
// and redraws what changes; `reads` names what it reads, for "this credential may not read …".
// The chosen database is part of the address ("#/namespaces?database=orders"), so that a
// reload or a shared link keeps it: every link and navigation of a view goes through
// ctx.href() / ctx.navigate(), which carry it.

import { describe, grant, grantMaySomewhere, mayEverywhere, setGrant } from './access.js';
import { api, ApiError, Forbidden, forgetToken, onLinkChange, storedToken, storeToken,
  Unauthorized, Unreachable } from './api.js';
import * as databases from './databases.js';
import { clock, fill, h } from './dom.js';
import * as audit from './view_audit.js';
import * as cluster from './view_cluster.js';
import * as namespaces from './view_namespaces.js';
import * as deadLetters from './view_dead_letters.js';
import * as targets from './view_targets.js';
import * as workflows from './view_workflow.js';

const POLL_MS = 2000;
const ROUTES = { cluster, namespaces, 'dead-letters': deadLetters, workflows, targets, audit };

const $ = (testid) => document.querySelector(`[data-testid="${testid}"]`);

let current = null;      // {name, view}
let loginShown = false;
let lastSuccess = null;

// ---- routing -------------------------------------------------------------------------------

// "#/dead-letters?namespace=a" → {name: 'dead-letters', path: [], params: {namespace: 'a'}};
// "#/workflows/a%2Fb?database=orders" → {name: 'workflows', path: ['a/b'], params: {}}, the
// database being databases.chosen()'s.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [pathPart, queryPart = ''] = raw.split('?', 2);
  const parts = pathPart.split('/').filter((p) => p !== '').map((p) => {
    try { return decodeURIComponent(p); } catch { return p; }
  });
  const params = Object.fromEntries(new URLSearchParams(queryPart));
  delete params.database;
  return { name: parts[0] ?? '', path: parts.slice(1), params };
}

// `hash` in `database` (default: the chosen one; null: every database), on a node of several.
function href(hash, database = databases.chosen()) {
  return databases.several() ? databases.withChoice(hash, database) : hash;
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  render();
  poller.kick();
}

// Builds the view the address names; the views read the grant as they are built.
function render() {
  const { name, path, params } = parseHash();
  if (!ROUTES[name]) {
    history.replaceState(null, '', href('#/cluster'));
    return render();
  }
  for (const link of document.querySelectorAll('nav a')) {
    const active = link.dataset.route === name;
    link.classList.toggle('active', active);
    if (active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
    link.setAttribute('href', href(`#/${link.dataset.route}`));
  }
  document.querySelector('.brand').setAttribute('href', href('#/cluster'));
  showSwitcher();
  const database = databases.chosen();
  const view = ROUTES[name].create({ path, params, database }, context);
  current = { name, view };
  document.title = [view.title, database, 'outboxd'].filter(Boolean).join(' · ');
  fill(document.getElementById('view'), view.el);
  showViewError(null);
  return view;
}

// ---- what views may ask of the app ---------------------------------------------------------

const context = {
  // The address of a view (a hash) in `database` (default: the chosen one; null: every
  // database), and going there.
  href,
  navigate: (hash, database) => navigate(href(hash, database)),
  refresh: () => poller.kick(),
  // An action failed (a button's request): the login on 401, else the message, for the view
  // to show beside the action (a 403's names the role the credential lacks).
  explain(error) {
    if (error instanceof Unauthorized) {
      signedOut('The node refused the credential.');
      return 'Sign in first.';
    }
    if (error instanceof Unreachable) return `The node did not answer: ${error.message}.`;
    if (error instanceof ApiError) return error.message;
    console.warn('console: unexpected error', error);
    return String(error?.message ?? error);
  },
};

// ---- the database switcher -----------------------------------------------------------------

// Shown on a node of several databases: "All databases" and each name (one the address names
// that the node does not serve too, so that the switcher shows what the views are asked for).
// Rebuilt only when what it lists changes, so that a poll does not close it while open.
let switcherShows = null;
function showSwitcher() {
  const box = $('db-switch');
  box.hidden = !databases.several();
  const chosen = databases.chosen() ?? '';
  const names = databases.list();
  const options = [['', 'All databases'], ...names.map((n) => [n, databases.ready(n) ? n : `${n} (not ready)`])];
  if (chosen && !names.includes(chosen)) options.push([chosen, `${chosen} (not served here)`]);
  const shows = JSON.stringify([options, chosen]);
  if (box.hidden || shows === switcherShows) return;
  switcherShows = shows;
  fill($('db-select'), options.map(([value, label]) => h('option', { value, selected: value === chosen }, label)));
}

function switchDatabase() {
  navigate(databases.withChoice(location.hash || '#/cluster', $('db-select').value || null));
}

function showViewError(text) {
  const box = $('view-error');
  box.hidden = !text;
  box.textContent = text ?? '';
}

// ---- polling -------------------------------------------------------------------------------

// One refresh at a time: a kick during a refresh runs another right after it. Nothing is
// scheduled while the tab is hidden or the login is up; visibilitychange and the login kick.
const poller = {
  timer: 0,
  busy: false,
  again: false,
  kick() {
    clearTimeout(this.timer);
    if (this.busy) {
      this.again = true;
      return;
    }
    this.run();
  },
  async run() {
    if (document.visibilityState !== 'visible' || loginShown || !current) return;
    this.busy = true;
    let view = current.view;
    try {
      // A database added or gone changes the columns and questions of the views.
      let rebuild = await databases.load();
      if (!grant()) {
        await loadGrant();
        rebuild = true;
      }
      if (rebuild) view = render();
      else showSwitcher();
      await view.refresh();
      if (view === current.view) {
        lastSuccess = new Date();
        $('last-update').textContent = `updated ${clock(lastSuccess)}`;
        showViewError(null);
      }
    } catch (error) {
      if (error instanceof Unauthorized) signedOut(storedToken()
        ? 'The node refused the stored credential.' : 'This node asks for a credential.');
      else if (error instanceof Forbidden && view === current.view) {
        showViewError(`This credential may not read ${view.reads}: ${error.message}.`);
      } else if (!(error instanceof Unreachable) && view === current.view) {
        showViewError(context.explain(error));
      }
    } finally {
      this.busy = false;
    }
    if (this.again) {
      this.again = false;
      this.run();
      return;
    }
    if (document.visibilityState === 'visible' && !loginShown) {
      this.timer = setTimeout(() => this.kick(), POLL_MS);
    }
  },
};

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible') poller.kick();
  else clearTimeout(poller.timer);
});

// ---- reachability --------------------------------------------------------------------------

onLinkChange(({ reachable, since, problem }) => {
  const status = $('conn-status');
  const banner = $('unreachable');
  document.body.classList.toggle('stale', !reachable);
  if (!reachable) {
    status.className = 'conn down';
    status.textContent = 'unreachable';
    banner.hidden = false;
    banner.textContent = `The node at ${location.host} does not answer (${problem}) since ` +
      `${clock(since)}. Retrying every ${POLL_MS / 1000} s` +
      (lastSuccess ? `; what is shown is from ${clock(lastSuccess)}.` : '.');
  } else if (problem) {
    status.className = 'conn degraded';
    status.textContent = 'degraded';
    banner.hidden = false;
    banner.textContent = `The node answers, but: ${problem}`;
  } else {
    status.className = 'conn ok';
    status.textContent = 'live';
    banner.hidden = true;
    banner.textContent = '';
  }
});

// ---- the credential ------------------------------------------------------------------------

// Asks the node what the stored credential reaches (none stored: what it grants anyone) and
// keeps it. Without a credential, a node that lets anyone do no more than a worker (only
// OUTBOXD_ADMIN_TOKEN set) asks for one. Throws like api().
async function loadGrant() {
  const reached = await api('GET', '/v1/whoami', undefined, { database: null });
  if (!storedToken() && !grantMaySomewhere(reached, 'reader')) {
    throw new Unauthorized(401, 'unauthorized', 'a credential is required');
  }
  setGrant(reached);
  showGrant();
}

function showGrant() {
  const reached = grant();
  $('whoami').textContent = describe(reached);
  $('whoami').title = describe(reached);
  $('whoami').hidden = !reached;
  $('nav-audit').hidden = !mayEverywhere('admin');
}

// The credential was refused, or forgotten: nothing is shown as allowed until the next one.
function signedOut(reason) {
  setGrant(null);
  showGrant();
  showLogin(reason);
}

function showLogin(reason) {
  loginShown = true;
  clearTimeout(poller.timer);
  const box = $('login');
  $('login-reason').textContent = reason;
  box.hidden = false;
  $('login-token').focus();
  updateForget();
}

function hideLogin() {
  loginShown = false;
  $('login').hidden = true;
  $('login-error').hidden = true;
  $('login-token').value = '';
  updateForget();
}

function updateForget() {
  $('forget-token').hidden = !storedToken();
}

async function signIn(event) {
  event.preventDefault();
  const token = $('login-token').value.trim();
  const error = $('login-error');
  error.hidden = true;
  if (!token) {
    error.hidden = false;
    error.textContent = 'Enter a credential.';
    return;
  }
  storeToken(token);
  $('login-submit').disabled = true;
  try {
    await loadGrant();
    hideLogin();
    route();
  } catch (failure) {
    forgetToken();
    error.hidden = false;
    error.textContent = failure instanceof Unauthorized
      ? 'The node refused this credential (unknown, expired or revoked).'
      : context.explain(failure);
  } finally {
    $('login-submit').disabled = false;
  }
}

function forget() {
  forgetToken();
  signedOut('Credential forgotten. Sign in again to continue.');
}

// ---- start ---------------------------------------------------------------------------------

document.querySelector('#login form').addEventListener('submit', signIn);
$('forget-token').addEventListener('click', forget);
$('db-select').addEventListener('change', switchDatabase);
window.addEventListener('hashchange', route);
updateForget();
await databases.load();
route();
