// lib.mjs — what the console's browser test (browser.mjs) and its benchmark
// (bench/console.mjs) share: one line per check and a closing count, as
// tests/integration/lib.sh prints them; `toolgate console` started on a
// workspace with its login URL and token read from its stderr; `toolgate
// call` processes; the system Chromium driven by playwright-core.
//
// Owns: the toolgate processes, the browser and the temporary directories
// it starts or makes (all gone when the process exits, whatever happened)
// and the watchdog that fails a test that hangs.  Must not: assert anything
// itself (the callers say what they expect), download a browser, or reach
// anything but 127.0.0.1.
//
// Environment: TOOLGATE (the program, required), TOOLGATE_ROOT (the tree),
// CHROMIUM (the browser, default /usr/bin/chromium).

import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const TG = process.env.TOOLGATE;
if (!TG) {
  console.error("TOOLGATE must point at the toolgate binary");
  process.exit(2);
}
export const ROOT = process.env.TOOLGATE_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "../..");
export const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
// exactly the flags the issue names; nothing that talks to the network
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

// ---- checks ----

let checks = 0;
let failed = 0;

// check WHAT COND [DETAIL]: one line; DETAIL (a value or a function making
// one) is printed only when COND is false.
export function check(what, cond, detail) {
  checks++;
  if (cond) {
    console.log(`ok    ${what}`);
    return true;
  }
  failed++;
  const d = typeof detail === "function" ? detail() : detail;
  console.log(`FAIL  ${what}${d === undefined ? "" : `: ${clip(d)}`}`);
  return false;
}

// eq ACTUAL EXPECTED WHAT: strict equality of JSON values
export function eq(actual, expected, what) {
  const a = JSON.stringify(actual);
  const e = JSON.stringify(expected);
  return check(what, a === e, () => `expected ${e}, got ${a}`);
}

function clip(v) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s && s.length > 800 ? `${s.slice(0, 800)}...` : s;
}

// Print the count, clean up, exit 0 only when every check passed.
export async function finish() {
  await cleanup();
  console.log(`${checks} checks, ${failed} failed`);
  process.exit(failed === 0 && checks > 0 ? 0 : 1);
}

// A failure that ends the test at once (a step the rest depends on).
export async function abort(what, detail) {
  check(what, false, detail);
  await finish();
}

// Fail the whole test if it runs longer than `seconds`.
export function watchdog(seconds) {
  setTimeout(async () => {
    console.log(`FAIL  the test did not finish within ${seconds} s`);
    failed++;
    await finish();
  }, seconds * 1000).unref();
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Poll fn until it returns a truthy value or ms pass; its last value.
export async function until(fn, ms, every = 50) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(every);
  }
}

// Sanitizer reports in a program's stderr, or "".
export function sanitizerReport(text) {
  const m = /ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer/.exec(text);
  return m ? text.slice(Math.max(0, m.index - 200), m.index + 2000) : "";
}

// ---- workspaces, processes ----

const dirs = [];
const children = new Set();
let browsers = [];

// A fresh temporary directory (removed at exit unless keep).
export function tempDir(prefix, keep = false) {
  const d = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), prefix));
  if (!keep) dirs.push(d);
  return d;
}

// The environment toolgate runs in: ours, without a config or principal
// that could leak in from the caller's, plus `extra`.
export function gateEnv(extra = {}) {
  const env = { ...process.env, ...extra };
  delete env.TOOLGATE_PRINCIPAL;
  delete env.TOOLGATE_TOKEN;
  if (!("TOOLGATE_CONFIG" in extra)) delete env.TOOLGATE_CONFIG;
  return env;
}

// `toolgate ARGS...` in ws, stdout as text (throws on a non-zero exit).
export function toolgate(ws, args, env = {}) {
  return execFileSync(TG, args, {
    cwd: ws,
    env: gateEnv(env),
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

// The open approvals of ws's ledger (`toolgate approvals list --json`), or
// every one with all.
export function approvals(ws, env = {}, all = false) {
  return JSON.parse(toolgate(ws, ["approvals", "list", "--json", ...(all ? ["--all"] : [])], env));
}

/*
 * `toolgate call --json ARGS...` in ws as a child process.  Resolves, when
 * it exits, to {exit, env (the envelope, or null), stdout, stderr, ended
 * (Date.now() at exit)}; `.child` on the returned promise is the process.
 */
export function tgcall(ws, args, env = {}) {
  const child = spawn(TG, ["call", "--json", ...args], {
    cwd: ws,
    env: gateEnv(env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let out = "";
  let err = "";
  child.stdout.on("data", (d) => (out += d));
  child.stderr.on("data", (d) => (err += d));
  const p = new Promise((resolve) => {
    child.on("close", (code) => {
      const ended = Date.now();
      children.delete(child);
      let envelope = null;
      try {
        envelope = JSON.parse(out);
      } catch {
        /* not JSON: the caller's checks say so */
      }
      resolve({ exit: code, env: envelope, stdout: out, stderr: err, ended });
    });
  });
  p.child = child;
  return p;
}

/*
 * `toolgate console --http 127.0.0.1:PORT` (PORT 0: any free one) in ws.
 * Resolves once it prints its login URL and token to {loginUrl, token,
 * origin ("http://127.0.0.1:PORT"), port, pid, stderr(), stop()}; stop()
 * sends SIGTERM and resolves to {code, signal, stderr}.  Rejects with its
 * stderr when it exits or says nothing within 30 s.
 */
export async function startConsole(ws, port = 0, env = {}, extraArgs = []) {
  const child = spawn(TG, ["console", "--http", `127.0.0.1:${port}`, ...extraArgs], {
    cwd: ws,
    env: gateEnv(env),
    stdio: ["ignore", "ignore", "pipe"],
  });
  children.add(child);
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise((resolve) =>
    child.on("exit", (code, signal) => {
      children.delete(child);
      resolve({ code, signal });
    }),
  );
  const ready = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`toolgate console printed no login URL within 30 s: ${err}`)), 30000);
    const look = () => {
      const u = /(http:\/\/(tg-[0-9a-f]+\.localhost):(\d+)\/login\?code=[^\s"']+)/.exec(err);
      const t = /token: ([^\n]+)\n/.exec(err);
      if (u && t) {
        clearTimeout(timer);
        resolve({ loginUrl: u[1], host: u[2], port: Number(u[3]), token: t[1] });
      }
    };
    child.stderr.on("data", look);
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`toolgate console exited (${code ?? signal}) before it was ready: ${err}`));
    });
  });
  return {
    ...ready,
    origin: `http://${ready.host}:${ready.port}`,
    pid: child.pid,
    stderr: () => err,
    async stop() {
      child.kill("SIGTERM");
      const r = await Promise.race([exited, sleep(15000).then(() => null)]);
      if (!r) {
        child.kill("SIGKILL");
        return { code: null, signal: "timeout", stderr: err };
      }
      await sleep(20);
      return { ...r, stderr: err };
    },
  };
}

// ---- the browser ----

// The system Chromium, headless, driven by playwright-core.
export async function launchBrowser() {
  const b = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    timeout: 60000,
  });
  browsers.push(b);
  return b;
}

// A new browser context (its own cookies) with the viewport screenshots use.
export function newContext(browser) {
  return browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
}

// body[data-page] of page (null when there is none).
export function pageKind(page) {
  return page.evaluate(() => document.body?.dataset?.page ?? null);
}

// Memory of a live process, in KiB: VmRSS from /proc/PID/status, Pss from
// /proc/PID/smaps_rollup.
export function memoryKiB(pid) {
  const field = (text, name) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) : NaN;
  };
  return {
    rss: field(readFileSync(`/proc/${pid}/status`, "utf8"), "VmRSS"),
    pss: field(readFileSync(`/proc/${pid}/smaps_rollup`, "utf8"), "Pss"),
  };
}

// Close the browsers, end the processes, remove the directories.
export async function cleanup() {
  for (const b of browsers) await b.close().catch(() => {});
  browsers = [];
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true, maxRetries: 3 });
}
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
