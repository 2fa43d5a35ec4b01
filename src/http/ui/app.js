// The outboxd console: hash routes, the 2-second poll while the tab is visible, the admin
// token login and the node's reachability in the header. Each view lives in view_*.js and
// exports create(params, ctx) → {el, refresh()}; refresh() fetches and redraws what changes.

import { api, ApiError, forgetToken, onLinkChange, storedToken, storeToken, Unauthorized,
  Unreachable } from './api.js';
import { clock, fill } from './dom.js';
import * as cluster from './view_cluster.js';
import * as namespaces from './view_namespaces.js';
import * as deadLetters from './view_dead_letters.js';
import * as workflows from './view_workflow.js';

const POLL_MS = 2000;
const ROUTES = { cluster, namespaces, 'dead-letters': deadLetters, workflows };

const $ = (testid) => document.querySelector(`[data-testid="${testid}"]`);

let current = null;      // {name, view}
let loginShown = false;
let lastSuccess = null;

// ---- routing -------------------------------------------------------------------------------

// "#/dead-letters?namespace=a" → {name: 'dead-letters', path: [], params: {namespace: 'a'}};
// "#/workflows/a%2Fb" → {name: 'workflows', path: ['a/b'], params: {}}.
function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [pathPart, queryPart = ''] = raw.split('?', 2);
  const parts = pathPart.split('/').filter((p) => p !== '').map((p) => {
    try { return decodeURIComponent(p); } catch { return p; }
  });
  const params = Object.fromEntries(new URLSearchParams(queryPart));
  return { name: parts[0] ?? '', path: parts.slice(1), params };
}

function navigate(hash) {
  if (location.hash === hash) route();
  else location.hash = hash;
}

function route() {
  const { name, path, params } = parseHash();
  if (!ROUTES[name]) {
    history.replaceState(null, '', '#/cluster');
    return route();
  }
  for (const link of document.querySelectorAll('nav a')) {
    const active = link.dataset.route === name;
    link.classList.toggle('active', active);
    if (active) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  const view = ROUTES[name].create({ path, params }, context);
  current = { name, view };
  document.title = `${view.title} · outboxd`;
  fill(document.getElementById('view'), view.el);
  showViewError(null);
  poller.kick();
}

// ---- what views may ask of the app ---------------------------------------------------------

const context = {
  navigate,
  refresh: () => poller.kick(),
  // An action failed (a button's request): the login on 401, else the message, for the view
  // to show beside the action.
  explain(error) {
    if (error instanceof Unauthorized) {
      showLogin('The node asks for the admin token.');
      return 'Sign in first.';
    }
    if (error instanceof Unreachable) return `The node did not answer: ${error.message}.`;
    if (error instanceof ApiError) return error.message;
    console.warn('console: unexpected error', error);
    return String(error?.message ?? error);
  },
};

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
    const view = current.view;
    try {
      await view.refresh();
      if (view === current.view) {
        lastSuccess = new Date();
        $('last-update').textContent = `updated ${clock(lastSuccess)}`;
        showViewError(null);
      }
    } catch (error) {
      if (error instanceof Unauthorized) showLogin(storedToken()
        ? 'The node refused the stored token.' : 'This node asks for the admin token.');
      else if (!(error instanceof Unreachable) && view === current.view) {
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

// ---- the admin token -----------------------------------------------------------------------

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
    error.textContent = 'Enter the admin token.';
    return;
  }
  storeToken(token);
  $('login-submit').disabled = true;
  try {
    await api('GET', '/v1/namespaces');  // an admin route: the worker token is not enough
    hideLogin();
    poller.kick();
  } catch (failure) {
    forgetToken();
    error.hidden = false;
    error.textContent = failure instanceof Unauthorized
      ? 'The node refused this token (it needs the admin token).'
      : context.explain(failure);
  } finally {
    $('login-submit').disabled = false;
  }
}

function forget() {
  forgetToken();
  showLogin('Token forgotten. Sign in again to continue.');
}

// ---- start ---------------------------------------------------------------------------------

document.querySelector('#login form').addEventListener('submit', signIn);
$('forget-token').addEventListener('click', forget);
window.addEventListener('hashchange', route);
updateForget();
route();
