// The node's API, as this page calls it: the credential from sessionStorage on every request,
// the chosen database as `?database=` (databases.js), a timeout, and errors sorted into the
// kinds the views handle differently.

import { chosen, scoped } from './databases.js';

const TOKEN_KEY = 'outboxd.credential';
const TIMEOUT_MS = 8000;

// The node answered with an error ({"error":{"code","message"}}).
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

// The node did not answer (refused, reset, offline, or no answer within TIMEOUT_MS).
export class Unreachable extends Error {}

// The node wants a (valid) credential: none was sent, or it is unknown, expired or revoked.
export class Unauthorized extends ApiError {}

// The credential is valid but lacks the role the call needs (the message names it).
export class Forbidden extends ApiError {}

export function storedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function storeToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

// Whether the node answers at all, for the header: listeners get
// {reachable, since (Date of the change), lastAnswer (Date), problem (text or null)}.
const link = { reachable: true, since: new Date(), lastAnswer: null, problem: null };
const listeners = new Set();

export function onLinkChange(listener) {
  listeners.add(listener);
  listener({ ...link });
}

function report(reachable, problem = null) {
  const changed = reachable !== link.reachable || problem !== link.problem;
  if (reachable !== link.reachable) link.since = new Date();
  link.reachable = reachable;
  link.problem = problem;
  if (reachable) link.lastAnswer = new Date();
  if (changed || reachable) for (const listener of listeners) listener({ ...link });
}

// Encodes one path segment (a dispatch key or workflow id may hold '/', '?', '#', spaces).
export function seg(text) {
  return encodeURIComponent(text);
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (value !== null && value !== undefined && value !== '') q.set(key, value);
  }
  const text = q.toString();
  return text ? `?${text}` : '';
}

// Calls the API; resolves with the parsed JSON body, or throws ApiError / Unauthorized /
// Forbidden / Unreachable. Every 5xx but the database's own refusals counts as the node in
// trouble. The call goes to `options.database` when the options name one (an item's own
// database), else to the chosen database, if any (every database when none is chosen).
export async function api(method, path, body, options = {}) {
  const url = scoped(path, options.database === undefined ? chosen() : options.database);
  const headers = { Accept: 'application/json' };
  const token = storedToken();
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
      signal: AbortSignal.timeout(TIMEOUT_MS),
    });
  } catch (error) {
    const why = error.name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000} s`
      : 'the connection failed';
    report(false, why);
    throw new Unreachable(why);
  }
  const text = await response.text().catch(() => '');
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (response.ok) {
    report(true);
    return data;
  }
  const code = data?.error?.code ?? `http_${response.status}`;
  const message = data?.error?.message ?? `${response.status} ${response.statusText}`;
  if (response.status >= 500) report(true, message);
  else report(true);
  if (response.status === 401) throw new Unauthorized(401, code, message);
  if (response.status === 403) throw new Forbidden(403, code, message);
  throw new ApiError(response.status, code, message);
}
