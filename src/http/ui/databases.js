// The outbox databases this node serves (README, "Several databases"), as GET /readyz lists
// them (it needs no credential), each one's readiness on this node, and the one the address
// chooses: `database=<name>` in the hash's query, none for every database. The choice counts
// only on a node of several databases; on a node of one the console never names it, so such
// a node sees the console it always did.

import { fill, h } from './dom.js';

const PARAM = 'database';
const TIMEOUT_MS = 8000;

let names = [];      // in the node's order
let readiness = {};  // name → whether it is ready on this node

// Reads /readyz again (a node none of whose databases is ready answers 503 with the same
// body). Resolves true when the list of names changed, so that the views are built again;
// a node that does not answer keeps the last list (the views' own calls report it).
export async function load() {
  let body;
  try {
    const response = await fetch('/readyz', { cache: 'no-store', credentials: 'omit',
      headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
    body = await response.json();
  } catch {
    return false;
  }
  const listed = body?.databases && typeof body.databases === 'object' ? body.databases : {};
  const before = names.join('\u0000');
  names = Object.keys(listed);
  readiness = Object.fromEntries(names.map((name) => [name, listed[name]?.ready === true]));
  return names.join('\u0000') !== before;
}

export const list = () => [...names];
export const several = () => names.length > 1;
export const ready = (name) => readiness[name] === true;

// The database the address names (null: every database), on a node of several only.
export function chosen() {
  if (!several()) return null;
  return new URLSearchParams(location.hash.split('?', 2)[1] ?? '').get(PARAM) || null;
}

// The database a call about `item` goes to: the one a listing tagged it with, else the
// chosen one (null on a node of one database).
export function of(item) {
  if (!several()) return null;
  return item?.database ?? chosen();
}

// `hash` ("#/view/path?query") with its database set to `database` (null: removed).
export function withChoice(hash, database) {
  const [path, queryPart = ''] = hash.split('?', 2);
  const q = new URLSearchParams(queryPart);
  if (database) q.set(PARAM, database);
  else q.delete(PARAM);
  const text = q.toString();
  return text ? `${path}?${text}` : path;
}

// `path` of the API with `?database=` added when `database` is set.
export function scoped(path, database) {
  if (!database) return path;
  return `${path}${path.includes('?') ? '&' : '?'}${PARAM}=${encodeURIComponent(database)}`;
}

// A table cell naming an item's database, for listings on a node of several databases.
export function cell(item, testid) {
  return several() ? h('td', { class: 'mono', testid }, item.database ?? '') : null;
}

export function header() {
  return several() ? h('th', {}, 'Database') : null;
}

// For a view that needs one database while every database is chosen: the question, and a link
// per database to the same view in it; `note(name)` may add a word about each (a node, an
// element, or null). Returns {el, update()}; update() redraws the notes.
export function chooser(question, hashFor, note = () => null) {
  const items = h('ul', { class: 'db-choices' });
  const el = h('div', { class: 'db-chooser', testid: 'db-chooser' },
    h('p', { testid: 'db-chooser-question' }, question), items);
  function update() {
    fill(items, names.map((name) => h('li', {},
      h('a', { class: 'mono', href: withChoice(hashFor(name), name), testid: 'db-choice',
        'data-database': name }, name),
      ' ', note(name))));
  }
  update();
  return { el, update };
}
