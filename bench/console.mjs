// console.mjs — the console's benchmark (issue 10, "Measurements"): how long
// from a call's event to its row in a real browser, and the console's memory
// with ten Live pages open and streaming.
//
// One workspace, one `toolgate console`, the system Chromium (headless,
// playwright-core from tests/console/node_modules).  A Live page records,
// with a MutationObserver, the wall time (performance.timeOrigin +
// performance.now()) at which each call's row first appears.  N calls
// (`toolgate call read_file`, one at a time, each waiting for its row
// before the next) are then timed two ways:
//   - from the call's last ledger event (its `ts`, in ms) to the row;
//   - from the moment the `toolgate call` process had returned to the row
//     (this one leaves out the process's own exit, so it is the smaller).
// Then P Live pages are opened (one login, each page in a browser context of
// its own: see below), each with its stream open, 20 more calls are made and shown on every page, and the
// console's VmRSS (/proc/PID/status) and Pss (/proc/PID/smaps_rollup) are
// read; those 20 calls' times (from the return, on the first page) are
// printed too: there the ten renderers share the machine with the console.
// Targets: p50 < 100 ms, RSS < 20 MB.
//
// Owns: a temporary workspace, the console, the calls and the browser (all
// gone at the end).  Must not: reach anything but 127.0.0.1, download a
// browser, or report a figure for a call whose row never came (the run
// fails instead).
//
// usage: node bench/console.mjs [toolgate-binary] [calls] [pages]
//        (defaults: build/toolgate, $BENCH_CONSOLE_CALLS or 100, 10)
// Skips with a sentence and exit 0 when Chromium or playwright-core is
// missing (scripts/install-node-deps installs playwright-core; Debian's
// chromium package the browser).

import { existsSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const chromiumPath = process.env.CHROMIUM ?? "/usr/bin/chromium";
if (!existsSync(chromiumPath)) {
  console.log(`SKIPPED: the console benchmark needs Chromium (${chromiumPath}; Debian's chromium package); no console figures this run`);
  process.exit(0);
}
if (!existsSync(join(root, "tests/console/node_modules/playwright-core/package.json"))) {
  console.log("SKIPPED: the console benchmark needs playwright-core in tests/console/node_modules (run scripts/install-node-deps); no console figures this run");
  process.exit(0);
}

process.env.TOOLGATE = resolve(process.argv[2] || join(root, "build/toolgate"));
const calls = positive(process.argv[3] || process.env.BENCH_CONSOLE_CALLS || "100", "calls");
const pages = positive(process.argv[4] || "10", "pages");
const WARMUP = 5;
const STREAMED = 20;

function positive(s, what) {
  const n = Number(s);
  if (!Number.isInteger(n) || n < 1) fail(`"${s}" is not a positive whole number of ${what}`);
  return n;
}

function fail(msg) {
  console.error(`bench/console: ${msg}`);
  process.exit(1);
}

const lib = await import("../tests/console/lib.mjs");
const { cleanup, launchBrowser, memoryKiB, newContext, sleep, startConsole, tempDir, tgcall, toolgate } = lib;

async function die(msg) {
  await cleanup();
  fail(msg);
}

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
const ms = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
const mib = (kib) => (kib / 1024).toFixed(1);

// ---- the console and one Live page ----

const ws = tempDir("tg-bench-console.");
writeFileSync(join(ws, "a.txt"), "one\ntwo\nthree\n");
let con;
try {
  con = await startConsole(ws);
} catch (e) {
  await die(e.message);
}
const idle = memoryKiB(con.pid);
const browser = await launchBrowser();
const ctx = await newContext(browser);
const live = await ctx.newPage();
await live.goto(con.loginUrl);
const open = (page) =>
  page
    .waitForFunction(() => document.body?.dataset.stream === "open", null, { timeout: 15000 })
    .then(() => true)
    .catch(() => false);
if (!(await open(live))) await die(`the Live page's stream did not open (${live.url()})`);
await live.evaluate(() => {
  window.__rowAt = {};
  const note = () => {
    const t = performance.timeOrigin + performance.now();
    for (const tr of document.querySelectorAll("table#calls tr.call[data-op-id]"))
      if (!(tr.dataset.opId in window.__rowAt)) window.__rowAt[tr.dataset.opId] = t;
  };
  note(); // rows already there are not timed
  window.__before = new Set(Object.keys(window.__rowAt));
  new MutationObserver(note).observe(document.querySelector("table#calls"), { childList: true, subtree: true });
});

async function oneCall(page) {
  const r = await tgcall(ws, ["read_file", '{"path":"a.txt"}']);
  if (r.env?.status !== "persisted") await die(`a call did not end persisted: ${r.stdout}${r.stderr}`);
  const op = r.env.op_id;
  const at = await page
    .waitForFunction((op) => window.__rowAt[op], op, { timeout: 10000, polling: 5 })
    .then((h) => h.jsonValue())
    .catch(() => null);
  if (!at) await die(`the row of call ${op} did not appear within 10 s`);
  return { op, returned: r.ended, row: at };
}

for (let i = 0; i < WARMUP; i++) await oneCall(live);
const timed = [];
for (let i = 0; i < calls; i++) timed.push(await oneCall(live));

// each call's last ledger event
const lastEvent = new Map();
for (const line of toolgate(ws, ["log", "--json", "--limit", String(calls + WARMUP)]).split("\n")) {
  if (!line.trim()) continue;
  const c = JSON.parse(line);
  const ts = Math.max(...(c.events ?? []).map((e) => Date.parse(e.ts)));
  lastEvent.set(c.op_id ?? c.events?.[0]?.op_id, ts);
}
const fromEvent = timed.map((t) => t.row - lastEvent.get(t.op)).filter((v) => Number.isFinite(v));
const fromReturn = timed.map((t) => t.row - t.returned);
if (fromEvent.length !== timed.length) await die(`${timed.length - fromEvent.length} timed calls have no events in the ledger`);
fromEvent.sort((a, b) => a - b);
fromReturn.sort((a, b) => a - b);

// ---- P Live pages streaming ----

// Each page in a browser context of its own, with the first one's session
// cookie: a browser opens at most 6 connections to one HTTP/1.1 origin, and
// each Live page holds one open for its stream, so ten tabs of one browser
// would leave the seventh waiting.  Ten contexts are ten browsers' worth of
// connections, which is what the console has to carry.
const cookie = await ctx.cookies(con.origin);
const tabs = [live];
for (let i = 1; i < pages; i++) {
  const c = await newContext(browser);
  await c.addCookies(cookie);
  const p = await c.newPage();
  await p.goto(`${con.origin}/live`);
  tabs.push(p);
}
for (const p of tabs) if (!(await open(p))) await die("a Live page's stream did not open");
for (const p of tabs.slice(1))
  await p.evaluate(() => {
    window.__rowAt = {};
    new MutationObserver(() => {
      for (const tr of document.querySelectorAll("table#calls tr.call[data-op-id]"))
        if (!(tr.dataset.opId in window.__rowAt)) window.__rowAt[tr.dataset.opId] = 1;
    }).observe(document.querySelector("table#calls"), { childList: true, subtree: true });
  });
const streamed = [];
for (let i = 0; i < STREAMED; i++) streamed.push(await oneCall(live));
const lastOp = streamed[streamed.length - 1].op;
for (const p of tabs)
  if (!(await p.waitForFunction((op) => window.__rowAt[op], lastOp, { timeout: 10000 }).then(() => true).catch(() => false)))
    await die("a streaming page did not show the last call");
await sleep(500);
const busy = memoryKiB(con.pid);
const stopped = await con.stop();
await cleanup();

// ---- the figures ----

console.log(`chromium ${browser.version()}, ${calls} read_file calls one at a time (after ${WARMUP} unmeasured)`);
console.log(`${"event → row in the browser".padEnd(38)} ${"p50 ms".padStart(8)} ${"p90 ms".padStart(8)} ${"max ms".padStart(8)}`);
console.log(`${"  from the call's last ledger event".padEnd(38)} ${ms(pct(fromEvent, 50)).padStart(8)} ${ms(pct(fromEvent, 90)).padStart(8)} ${ms(fromEvent[fromEvent.length - 1]).padStart(8)}`);
console.log(`${"  from the call's return".padEnd(38)} ${ms(pct(fromReturn, 50)).padStart(8)} ${ms(pct(fromReturn, 90)).padStart(8)} ${ms(fromReturn[fromReturn.length - 1]).padStart(8)}`);
const slow = fromEvent.filter((v) => v >= 100).length;
console.log(`  (${slow} of ${fromEvent.length} rows took 100 ms or more from the event)`);
const busyLat = streamed.map((t) => t.row - t.returned).sort((a, b) => a - b);
console.log(`${`  ${pages} pages streaming, from the return`.padEnd(38)} ${ms(pct(busyLat, 50)).padStart(8)} ${ms(pct(busyLat, 90)).padStart(8)} ${ms(busyLat[busyLat.length - 1]).padStart(8)}   (${STREAMED} calls; the timed page is one of ${pages})`);
console.log(`console memory: idle RSS ${mib(idle.rss)} MiB (PSS ${mib(idle.pss)}); with ${pages} Live pages streaming RSS ${mib(busy.rss)} MiB (PSS ${mib(busy.pss)})`);
const p50 = pct(fromEvent, 50);
console.log(`targets: p50 < 100 ms: ${p50 < 100 ? "met" : "missed"} (${ms(p50)}); RSS < 20 MB: ${busy.rss * 1024 < 20e6 ? "met" : "missed"} (${((busy.rss * 1024) / 1e6).toFixed(1)} MB)`);
if (stopped.code !== 0) fail(`the console did not stop cleanly (${stopped.code ?? stopped.signal}): ${stopped.stderr.slice(-500)}`);
