// What the browser tests of the web console share: Debian's Chromium headless through
// puppeteer-core, steps run in order until the first failure (a screenshot of it kept), the
// page's console errors and CSP violations collected for a last check, and the helpers that
// find, click and read what the console draws. A test module builds its steps with step()
// and calls run(); `page` is the tab, once run() has opened it.

import { mkdirSync } from 'node:fs';
import path from 'node:path';
import puppeteer from 'puppeteer-core';

const CHROMIUM = process.env.OUTBOXD_TEST_CHROMIUM ?? '/usr/bin/chromium';

export function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (run under tests/clients/with_cluster.py --tokens)`);
  return value;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

export async function waitFor(what, probe, timeoutMs = 10000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await sleep(100);
  }
}

export const tid = (id) => `[data-testid="${id}"]`;

// ---- the run -------------------------------------------------------------------------------

export let page;
let browser;
let shots;
const steps = [];
// What the test is doing, for telling the console errors it provokes from the others.
export const where = { phase: 'start' };
export const problems = { console: [], csp: [] };

export const step = (name, fn) => steps.push({ name, fn });

export async function shot(name) {
  await page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });
}

// Runs the steps; `expected(message, phase)` says which console messages the test provokes;
// `cleanup()` stops what the test started. Exits the process with 0 when every step passed.
export async function run({ shotsDir, expected, cleanup = async () => {} }) {
  shots = shotsDir;
  const stop = async () => {
    await cleanup().catch(() => {});
    await browser?.close().catch(() => {});
  };
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.once(signal, () => stop().finally(() => process.exit(1)));
  }
  let status = 1;
  try {
    status = await runSteps(expected);
  } catch (error) {
    console.error(error);
  } finally {
    await stop();
  }
  process.exit(status);
}

async function runSteps(expected) {
  mkdirSync(shots, { recursive: true });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,  // --headless=new
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 860 });
  page.on('console', (message) => {
    if (!['error', 'warn', 'warning', 'assert'].includes(message.type())) return;
    if (expected(message, where.phase)) return;
    problems.console.push(`${where.phase}: ${message.type()}: ${message.text()} (${message.location()?.url ?? ''})`);
  });
  page.on('pageerror', (error) => problems.console.push(`${where.phase}: page error: ${error.message}`));
  await page.exposeFunction('__reportCsp', (v) => problems.csp.push(v));
  await page.evaluateOnNewDocument(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__reportCsp(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  const started = Date.now();
  for (const { name, fn } of steps) {
    const t0 = Date.now();
    try {
      await fn();
      console.log(`ok - ${name} (${Date.now() - t0} ms)`);
    } catch (error) {
      console.log(`not ok - ${name}`);
      console.error(error);
      await shot('failure').catch(() => {});
      return 1;
    }
  }
  console.log(`# all ${steps.length} steps passed in ${((Date.now() - started) / 1000).toFixed(1)} s; screenshots in ${shots}`);
  return 0;
}

// ---- reading and driving the page ----------------------------------------------------------

export async function go(hash) {
  await page.evaluate((h) => { location.hash = h; }, hash);
}

// Clicks inside tables the poll redraws: found and clicked in one evaluation, so that a
// redraw between finding and clicking cannot detach the element.
export async function clickIn(selector) {
  await waitFor(`a clickable ${selector}`, () => page.evaluate((sel) => {
    const el = document.querySelector(sel);
    if (!el || el.disabled || !el.checkVisibility()) return false;
    el.click();
    return true;
  }, selector));
}

export async function setValue(selector, value) {
  await page.waitForSelector(selector, { visible: true, timeout: 10000 });
  await page.$eval(selector, (el, v) => { el.value = v; }, value);
}

// Rendered (not hidden, nor inside anything hidden). offsetParent would not do: it is null
// for the fixed login overlay.
export const visible = (selector) => page.evaluate((sel) => {
  const el = document.querySelector(sel);
  return !!el && el.checkVisibility();
}, selector);

export const textOf = (selector) => page.evaluate((sel) => document.querySelector(sel)?.textContent ?? null, selector);

// Forgets the credential signed in, if any, and signs in with `token`.
export async function signInWith(token) {
  if (await visible(tid('forget-token'))) await clickIn(tid('forget-token'));
  await page.waitForSelector(tid('login'), { visible: true, timeout: 10000 });
  await setValue(tid('login-token'), token);
  await page.click(tid('login-submit'));
  await waitFor('the login to close', async () => !(await visible(tid('login'))));
}
