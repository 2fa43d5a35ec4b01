// What the signed-in credential may reach: its grant as GET /v1/whoami answers it
// ({credential_id, scopes: [{namespace, roles}], nodes, expires_at}), and the node's rules
// for reading it (README, "Security"). The views hide what the grant does not allow; the node
// still decides every call. tests/vectors/grant_may.json holds cases that these functions and
// the node's own (auth::Grant) both pass.

const ALL = '*';

let current = null;

export function setGrant(grant) {
  current = grant;
}

export function grant() {
  return current;
}

// Whether a scope's roles hold `role`, itself or through a role that implies it: admin
// implies every role, operator implies reader (not read_payloads).
export function holds(roles, role) {
  return roles.includes(role) || roles.includes('admin')
    || (role === 'reader' && roles.includes('operator'));
}

// Whether `g` holds `role` over namespace `ns` ('*': over every namespace).
export function grantMay(g, role, ns) {
  return (g?.scopes ?? []).some((s) => (s.namespace === ALL || s.namespace === ns)
    && holds(s.roles ?? [], role));
}

// Whether `g` holds `role` over some namespace.
export function grantMaySomewhere(g, role) {
  return (g?.scopes ?? []).some((s) => holds(s.roles ?? [], role));
}

// The same, of the signed-in credential.
export const may = (role, ns) => grantMay(current, role, ns);
export const maySomewhere = (role) => grantMaySomewhere(current, role);
export const mayEverywhere = (role) => grantMay(current, role, ALL);

// The namespaces it holds `role` over; null: every namespace.
export function namespacesFor(role) {
  if (mayEverywhere(role)) return null;
  const names = (current?.scopes ?? []).filter((s) => holds(s.roles ?? [], role)).map((s) => s.namespace);
  return [...new Set(names)];
}

// Whether it holds `role` over each of `namespaces` (none: over every namespace, since what
// an empty list stands for is not known).
export function mayEach(role, namespaces) {
  return namespaces.length ? namespaces.every((ns) => may(role, ns)) : mayEverywhere(role);
}

// "cred_1 · reader of billing, ops · operator of billing" — for the header.
export function describe(g) {
  if (!g) return '';
  const byRoles = new Map();
  for (const s of g.scopes ?? []) {
    const roles = (s.roles ?? []).join(', ');
    const name = s.namespace === ALL ? 'every namespace' : s.namespace;
    byRoles.set(roles, [...(byRoles.get(roles) ?? []), name]);
  }
  const parts = [...byRoles].map(([roles, names]) => `${roles || 'no role'} of ${names.join(', ')}`);
  return [g.credential_id, ...parts].join(' · ');
}
