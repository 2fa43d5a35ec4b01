// DOM helpers. Everything the console shows is built with createElement and textContent, so
// data from the API is never parsed as HTML.

// h('td', {class: 'num', testid: 'ns-pending'}, 12) → <td class="num" data-testid="ns-pending">12</td>
// Attributes: class, testid (data-testid), on<event> handlers, hidden/disabled/checked/value as
// properties, anything else through setAttribute. Children: nodes, strings, numbers; null,
// undefined and false are skipped; arrays are flattened.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'testid') el.dataset.testid = value;
    else if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (['hidden', 'disabled', 'checked', 'value', 'selected'].includes(key)) el[key] = value;
    else if (key === 'style') throw new Error('inline style attributes are refused by the CSP');
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

// Replaces the children of el.
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

export function time(iso) {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toLocaleString(undefined, { hour12: false });
}

export function ago(iso) {
  if (!iso) return '';
  const s = Math.round((Date.now() - new Date(iso).getTime()) / 1000);
  if (!Number.isFinite(s)) return '';
  if (s < -1) return `in ${duration(-s)}`;
  return `${duration(Math.max(s, 0))} ago`;
}

function duration(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.round(s / 60)} min`;
  if (s < 86400) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} d`;
}

export function pretty(value) {
  return value === undefined ? '' : JSON.stringify(value, null, 2);
}

export function clock(date = new Date()) {
  return date.toLocaleTimeString(undefined, { hour12: false });
}

// A labelled form field: <label><span>text</span>control</label>.
export function field(text, control, hint) {
  return h('label', { class: 'field' }, h('span', {}, text), control,
    hint ? h('small', {}, hint) : null);
}

// A status badge whose class names the state (styled in app.css).
export function badge(state, testid) {
  return h('span', { class: `badge badge-${String(state).replace(/[^a-z_-]/gi, '')}`, testid },
    state);
}

// An inline confirmation: replaces `holder`'s children with the question and two buttons;
// resolves true or false.
export function confirmIn(holder, question, yesText, testid) {
  return new Promise((resolve) => {
    const done = (answer) => { holder.replaceChildren(); holder.hidden = true; resolve(answer); };
    holder.hidden = false;
    fill(holder, h('div', { class: 'confirm', role: 'alertdialog', testid },
      h('p', { testid: `${testid}-text` }, question),
      h('button', { class: 'danger', testid: `${testid}-yes`, onclick: () => done(true) }, yesText),
      h('button', { testid: `${testid}-no`, onclick: () => done(false) }, 'Cancel')));
  });
}

// A payload (input, result, progress) the credential may not read: the node sent null and
// "payloads_hidden": true.
export function withheld(testid) {
  return h('pre', { class: 'withheld', testid, 'data-withheld': 'true',
    title: 'This credential may not read payloads here (it is not read_payloads of this namespace).' },
  'hidden');
}
