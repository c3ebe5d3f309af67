// browser.mjs — the console in a real browser: the system Chromium, headless,
// driven by playwright-core, against a running `toolgate console` and real
// `toolgate call` processes on one workspace (issue 10, "Tests in a real
// browser").  What it checks:
//   - login: the printed one-use URL sets the session cookie (HttpOnly,
//     SameSite=Strict) and works once; the token form; a wrong token;
//   - Live: new calls appear without a reload, newest first, with their
//     badge; a hostile argument shows as text; the tool and status filters
//     narrow the rows (server-side and on the stream); the page reconnects
//     after the console is restarted on the same port (with the same token
//     by itself; with a new one once the browser has logged in again);
//   - Approvals: a waiting call's approval appears within 1 s without a
//     reload, with its diff; Approve lets the call finish `persisted`; Deny
//     with a reason gives `denied` with the reason in the call's message;
//   - refusals: no cookie → the login form (and 401 on /events); a POST from
//     another origin (a page on a second server) and a forged or missing
//     CSRF token are refused and the approval stays pending;
//   - no page breaks its own CSP (no console error, no page error);
//   - a screenshot of every page, in $TMPDIR's workspace and, when
//     CONSOLE_SCREENSHOTS=DIR is set, in DIR too.
//
// Owns: its workspace, consoles, calls and browser (lib.mjs cleans up).
// Must not: reach anything but 127.0.0.1, or pass without having looked.
//
// Environment: TOOLGATE, TOOLGATE_ROOT, CONSOLE_SCREENSHOTS (optional).

import { createServer } from "node:http";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  approvals,
  check,
  eq,
  finish,
  abort,
  launchBrowser,
  newContext,
  pageKind,
  sanitizerReport,
  sleep,
  startConsole,
  tempDir,
  tgcall,
  until,
  watchdog,
} from "./lib.mjs";

watchdog(420);

const ws = tempDir("tg-console.");
const shots = join(ws, "screenshots");
mkdirSync(shots);
const keepShots = process.env.CONSOLE_SCREENSHOTS || "";
if (keepShots) mkdirSync(keepShots, { recursive: true });
writeFileSync(join(ws, "a.txt"), "one\ntwo\nthree\n");
writeFileSync(
  join(ws, "service.yaml"),
  "name: greeter\nimage: registry.local/greeter:v1\nport: 8080\nreplicas: 2\nlog_level: info\n",
);

// What every page said on its console or threw: a CSP violation shows here.
const pageErrors = [];
function watchErrors(page, name) {
  page.on("console", (m) => {
    if (m.type() === "error") pageErrors.push(`${name}: ${m.text()}`);
  });
  page.on("pageerror", (e) => pageErrors.push(`${name}: ${e.message}`));
}

async function shot(page, name) {
  const file = join(shots, `${name}.png`);
  await page.screenshot({ path: file });
  if (keepShots) copyFileSync(file, join(keepShots, `${name}.png`));
  check(`screenshot of ${name}`, existsSync(file) && readFileSync(file).length > 1000);
}

const streamIs = (page, state, ms) =>
  page
    .waitForFunction((s) => document.body?.dataset.stream === s, state, { timeout: ms })
    .then(() => true)
    .catch(() => false);

// The first rows of table#calls as {op, status, tool, badge}.
const rows = (page, n = 1000) =>
  page.$$eval(
    "table#calls > tbody > tr.call",
    (trs, n) =>
      trs.slice(0, n).map((tr) => ({
        op: tr.dataset.opId,
        status: tr.dataset.status,
        tool: tr.querySelector("td.tool")?.textContent.trim(),
        badge: tr.querySelector("td.status span.badge")?.className ?? "",
        link: !!tr.querySelector(`a[href="/calls/${tr.dataset.opId}"]`),
      })),
    n,
  );

const rowShown = (page, op, ms = 5000) =>
  page
    .waitForSelector(`table#calls tr.call[data-op-id="${op}"]`, { timeout: ms })
    .then(() => true)
    .catch(() => false);

// ---- the console, and logging in -------------------------------------------

// the token from the environment (console.token_env), so that a restart
// can keep it
writeFileSync(join(ws, "toolgate.yaml"), "console: {token_env: TG_CONSOLE_TOKEN}\n");
const randomHex = () => [...crypto.getRandomValues(new Uint8Array(32))].map((b) => b.toString(16).padStart(2, "0")).join("");
const token1 = randomHex();
let con;
try {
  con = await startConsole(ws, 0, { TG_CONSOLE_TOKEN: token1 });
} catch (e) {
  await abort("toolgate console starts and prints its login URL and token", e.message);
}
// the console's own host name (tg-<hex>.localhost, on loopback): its cookie goes
// to no other server on 127.0.0.1
check("the login URL names the console's own loopback host, with a one-use code", /^http:\/\/tg-[0-9a-f]{8}\.localhost:\d+\/login\?code=\w{16,}$/.test(con.loginUrl), con.loginUrl);
eq(con.token, "(from console.token_env)", "a configured access token is not printed");

const browser = await launchBrowser();
const ctx = await newContext(browser);
const live = await ctx.newPage();
watchErrors(live, "live");

let resp = await live.goto(con.loginUrl);
eq(new URL(live.url()).pathname, "/live", "the one-use URL logs in and lands on /live");
check("the code leaves the address bar", !live.url().includes("code="), live.url());
eq(await pageKind(live), "live", "the Live page is shown after login");
const cookies = await ctx.cookies(con.origin);
const sess = cookies.find((c) => c.name === "tgc_session");
check("the session cookie is set", !!sess, cookies);
check("the session cookie is HttpOnly and SameSite=Strict", sess?.httpOnly === true && sess?.sameSite === "Strict", sess);
check("the page's script cannot read the cookie", !(await live.evaluate(() => document.cookie)).includes("tgc_session"));

// another browser, no cookie
const anon = await newContext(browser);
const stranger = await anon.newPage();
watchErrors(stranger, "stranger");
resp = await stranger.goto(con.loginUrl);
check("a second use of the login URL is refused", (await pageKind(stranger)) !== "live" && !(await anon.cookies(con.origin)).some((c) => c.name === "tgc_session"), {
  kind: await pageKind(stranger),
  status: resp?.status(),
});
for (const path of ["/live", "/approvals", "/stats", "/sessions"]) {
  await stranger.goto(con.origin + path);
  eq(await pageKind(stranger), "login", `without the cookie, ${path} shows the login form`);
}
check("the login form asks for the token", (await stranger.$("form#login input[name=token]")) !== null);
eq(
  await stranger.evaluate(() => fetch("/events").then((r) => r.status)),
  401,
  "without the cookie, /events is 401",
);
eq(
  await stranger.evaluate(() => fetch("/approvals?fragment=1").then((r) => r.status)),
  401,
  "without the cookie, the approvals fragment is 401",
);
await shot(stranger, "login");
await stranger.fill("form#login input[name=token]", "0".repeat(64));
await Promise.all([stranger.waitForNavigation(), stranger.press("form#login input[name=token]", "Enter")]);
eq(await pageKind(stranger), "login", "a wrong token keeps the login form");
check("a wrong token says so", (await stranger.$("p.error")) !== null);
await stranger.fill("form#login input[name=token]", token1);
await Promise.all([stranger.waitForURL("**/live"), stranger.press("form#login input[name=token]", "Enter")]).catch(() => {});
eq(await pageKind(stranger), "live", "the right token logs in");
await anon.close();

// ---- Live: new calls without a reload --------------------------------------

check("Live's stream opens", await streamIs(live, "open", 10000), () => live.evaluate(() => document.body.dataset.stream));
await live.evaluate(() => (window.__notReloaded = true));

const made = []; // {op, tool, status}
async function call(args, env) {
  const r = await tgcall(ws, args, env);
  const sr = sanitizerReport(r.stderr);
  check(`toolgate call ${args.join(" ").slice(0, 60)}: no sanitizer report`, !sr, sr);
  if (!r.env) {
    check(`toolgate call ${args.join(" ").slice(0, 60)} answers an envelope`, false, r.stdout + r.stderr);
    return r;
  }
  made.push({ op: r.env.op_id, tool: r.env.tool, status: r.env.status });
  return r;
}

const mix = [
  [["--session", "s-docs", "read_file", '{"path":"a.txt"}'], "persisted"],
  [["--session", "s-docs", "list_dir", '{"path":"."}'], "persisted"],
  [["--session", "s-docs", "read_file", '{"path":"missing.txt"}'], "failed"],
  [["--session", "s-docs", "read_file", "{}"], "invalid"],
  [["--session", "s-build", "read_file", '{"path":"../etc/passwd"}'], "denied"],
  [["--session", "s-build", "shell", '{"command":"ls"}'], "persisted"],
  [["--session", "s-build", "read_file", '{"path":"<img src=x onerror=window.__pwned=1>.txt"}'], "failed"],
];
for (const [args, want] of mix) {
  const r = await call(args);
  eq(r.env?.status, want, `${args.slice(2).join(" ")} ends ${want}`);
  const shown = await rowShown(live, r.env?.op_id);
  check(`its row appears on Live without a reload (${want})`, shown);
  const top = (await rows(live, 1))[0];
  eq(top?.op, r.env?.op_id, "the newest call is the first row");
  eq(top?.status, want, "the row's data-status");
  check("the row's badge says its status", top?.badge.split(/\s+/).includes(`badge-${want}`), top?.badge);
  eq(top?.tool, args[2], "the row's tool");
  check("the row links to its call", top?.link === true, top);
}
check("Live was never reloaded", await live.evaluate(() => window.__notReloaded === true));
const order = (await rows(live, made.length)).map((r) => r.op);
eq(order, made.map((m) => m.op).reverse(), "the rows are newest first");
const hostile = made[made.length - 1].op;
const summary = await live.$eval(`tr.call[data-op-id="${hostile}"] td.summary`, (td) => ({
  text: td.textContent,
  img: td.querySelector("img") !== null,
}));
check("a hostile argument shows as text", summary.text.includes("<img src=x") && !summary.img, summary);
check("a hostile argument runs nothing", await live.evaluate(() => window.__pwned === undefined));
await live.waitForTimeout(1600); // new rows' highlight fades
await shot(live, "live");

// ---- Live: the filters -----------------------------------------------------

const filtered = await ctx.newPage();
watchErrors(filtered, "filtered");
await filtered.goto(con.origin + "/live");
await filtered.fill("form#filters input[name=tool]", "list_dir");
await Promise.all([filtered.waitForURL(/tool=list_dir/), filtered.$eval("form#filters", (f) => f.requestSubmit())]);
let fr = await rows(filtered);
check("the tool filter keeps list_dir rows only", fr.length >= 1 && fr.every((r) => r.tool === "list_dir"), fr);
check("the filtered page's stream opens", await streamIs(filtered, "open", 10000));
const skipped = await call(["read_file", '{"path":"a.txt"}']);
const kept = await call(["list_dir", '{"path":"."}']);
check("a new list_dir call appears under the tool filter", await rowShown(filtered, kept.env?.op_id));
await sleep(300);
check(
  "a new read_file call does not appear under tool=list_dir",
  (await filtered.$(`tr.call[data-op-id="${skipped.env?.op_id}"]`)) === null,
);
check("the unfiltered page shows both", (await rowShown(live, skipped.env?.op_id)) && (await rowShown(live, kept.env?.op_id)));

await filtered.goto(con.origin + "/live");
await filtered.selectOption("form#filters select[name=status]", "invalid");
await Promise.all([filtered.waitForURL(/status=invalid/), filtered.$eval("form#filters", (f) => f.requestSubmit())]);
fr = await rows(filtered);
check("the status filter keeps invalid rows only", fr.length >= 1 && fr.every((r) => r.status === "invalid"), fr);
check("the status-filtered page's stream opens", await streamIs(filtered, "open", 10000));
const okCall = await call(["read_file", '{"path":"a.txt"}']);
const badCall = await call(["list_dir", '{"depth":"deep"}']);
eq(badCall.env?.status, "invalid", "a bad list_dir is invalid");
check("a new invalid call appears under status=invalid", await rowShown(filtered, badCall.env?.op_id));
await sleep(300);
check(
  "a new persisted call does not appear under status=invalid",
  (await filtered.$(`tr.call[data-op-id="${okCall.env?.op_id}"]`)) === null,
);
await filtered.goto(con.origin + "/live?session=s-build");
fr = await rows(filtered);
check("the session filter (in the query) narrows the rows", fr.length === 3, fr);
await filtered.close();

// ---- Approvals --------------------------------------------------------------

const appr = await ctx.newPage();
watchErrors(appr, "approvals");
resp = await appr.goto(con.origin + "/approvals");
eq(await pageKind(appr), "approvals", "the Approvals page");
const h = resp?.headers() ?? {};
check("the page is served with its CSP", /script-src 'self'/.test(h["content-security-policy"] ?? "") && /frame-ancestors 'none'/.test(h["content-security-policy"] ?? ""), h);
check("and nosniff, no framing, no caching", h["x-content-type-options"] === "nosniff" && /deny/i.test(h["x-frame-options"] ?? "") && /no-store/.test(h["cache-control"] ?? ""), h);
check("an empty queue says so", (await appr.$("div#approvals p.empty")) !== null);
const csrf = await appr.$eval('meta[name="csrf-token"]', (m) => m.content).catch(() => "");
check("the page carries a CSRF token", csrf.length >= 32, csrf);
// when each approval's article first appeared, by the page's clock
await appr.evaluate(() => {
  window.__notReloaded = true;
  window.__seen = {};
  const note = () => {
    for (const a of document.querySelectorAll("article.approval[data-id]"))
      if (!(a.dataset.id in window.__seen)) window.__seen[a.dataset.id] = Date.now();
  };
  new MutationObserver(note).observe(document.body, { childList: true, subtree: true });
});

// a call that waits for its approval; resolves with the approval from the ledger
async function waitingCall(args) {
  const before = new Set(approvals(ws).map((a) => a.id));
  const p = tgcall(ws, ["--wait-approval", "30", ...args]);
  const a = await until(() => approvals(ws).find((x) => !before.has(x.id) && x.state === "pending"), 10000);
  return { p, a };
}
async function appeared(a) {
  const seen = await until(() => appr.evaluate((id) => window.__seen[id], a.id), 5000);
  return seen ? seen - Date.parse(a.created) : null;
}

const newConf = "name: greeter\nimage: registry.local/greeter:v2\nport: 9090\nreplicas: 2\nlog_level: info\nhealthcheck: /healthz\n";
const w1 = await waitingCall(["--session", "s-docs", "write_file", JSON.stringify({ path: "service.yaml", content: newConf })]);
if (!w1.a) await abort("a waiting write_file queues an approval", approvals(ws, {}, true));
let ms = await appeared(w1.a);
check(`the approval appears on Approvals within 1 s (${ms} ms), no reload`, ms !== null && ms <= 1000 && (await appr.evaluate(() => window.__notReloaded === true)), ms);
const art = `article.approval[data-id="${w1.a.id}"]`;
eq(await appr.$eval(art, (a) => a.dataset.tool).catch(() => null), "write_file", "the approval's data-tool");
eq(await appr.$eval(`${art} .tool`, (e) => e.textContent.trim()).catch(() => null), "write_file", "the approval names its tool");
check("its canonical arguments are shown", ((await appr.$eval(`${art} pre.args`, (e) => e.textContent).catch(() => "")) || "").includes("service.yaml"));
const diff = await appr
  .$eval(`${art} pre.diff`, (e) => ({
    add: [...e.querySelectorAll("span.add")].map((s) => s.textContent).join("\n"),
    del: [...e.querySelectorAll("span.del")].map((s) => s.textContent).join("\n"),
  }))
  .catch(() => null);
check("write_file shows a diff: the added lines", diff?.add.includes("port: 9090") && diff?.add.includes("healthcheck: /healthz"), diff);
check("write_file shows a diff: the removed line", diff?.del.includes("port: 8080"), diff);
check("write_file's diff leaves unchanged lines alone", !diff?.add.includes("replicas") && !diff?.del.includes("replicas"), diff);
check("the approval shows who asked", ((await appr.$eval(`${art} .principal`, (e) => e.textContent).catch(() => "")) || "").includes("local"));
check("the approval shows when it expires", (await appr.$(`${art} time.expires[datetime]`)) !== null);
eq(await appr.$eval(`${art} form.approve input[name=csrf]`, (i) => i.value).catch(() => null), csrf, "the approve form carries the CSRF token");
eq(await appr.$eval(`${art} form.deny input[name=csrf]`, (i) => i.value).catch(() => null), csrf, "the deny form carries the CSRF token");
await appr.waitForTimeout(300);
await shot(appr, "approvals");

// a shell call waiting too: argv, workdir, sandbox
const w2 = await waitingCall(["--session", "s-build", "shell", '{"command":"rm -rf build && make -j2"}']);
if (!w2.a) await abort("a waiting shell call queues an approval", approvals(ws, {}, true));
ms = await appeared(w2.a);
check(`a second approval appears within 1 s (${ms} ms)`, ms !== null && ms <= 1000, ms);
const plan = await appr
  .$eval(`article.approval[data-id="${w2.a.id}"] dl.plan`, (dl) => [...dl.querySelectorAll("dt")].map((d) => d.textContent.trim().toLowerCase()))
  .catch(() => []);
check("shell shows its argv, workdir and sandbox", ["argv", "workdir", "sandbox"].every((k) => plan.some((d) => d.includes(k))), plan);
await appr.waitForTimeout(300);
await shot(appr, "approvals-shell");

// refused: a forged CSRF token, none, and a form whose token was changed
const forged = await appr.evaluate(
  ([id]) =>
    fetch(`/approvals/${id}/approve`, {
      method: "POST",
      body: new URLSearchParams({ csrf: "f".repeat(64) }),
      redirect: "manual",
    }).then((r) => r.status),
  [w1.a.id],
);
eq(forged, 403, "a POST with a forged CSRF token is 403");
const none = await appr.evaluate(
  ([id]) => fetch(`/approvals/${id}/approve`, { method: "POST", body: new URLSearchParams({}), redirect: "manual" }).then((r) => r.status),
  [w1.a.id],
);
eq(none, 403, "a POST without a CSRF token is 403");
await appr.$eval(`${art} form.approve input[name=csrf]`, (i) => (i.value = "0".repeat(64)));
const [tampered] = await Promise.all([appr.waitForNavigation(), appr.click(`${art} button.approve`)]);
eq(tampered?.status(), 403, "the approve form with a changed CSRF token is 403");
eq(await pageKind(appr), "error", "and shows the error page");
eq(approvals(ws).find((a) => a.id === w1.a.id)?.state, "pending", "after the forged tokens the approval is still pending");

// refused: a POST from another origin, by a page that even knows the CSRF token
const evil = createServer((req, res) => {
  res.writeHead(200, { "content-type": "text/html" });
  res.end(`<!doctype html><title>elsewhere</title>
<form id="f" method="POST" action="${con.origin}/approvals/${w1.a.id}/approve">
<input type="hidden" name="csrf" value="${csrf}"><button>go</button></form>
<script>document.getElementById("f").submit()</script>`);
});
await new Promise((r) => evil.listen(0, "127.0.0.1", r));
const evilUrl = `http://127.0.0.1:${evil.address().port}/`;
const [cross] = await Promise.all([
  appr
    .waitForResponse((r) => r.url().startsWith(con.origin) && r.request().method() === "POST", { timeout: 10000 })
    .catch(() => null),
  appr.goto(evilUrl),
]);
check("the other origin's page did post to the console", cross !== null);
// refused: 401 (the SameSite=Strict cookie does not go with a cross-site POST)
// or 403 (the Origin is not the console's)
check("a POST from another origin is refused", [401, 403].includes(cross?.status()), cross?.status());
evil.close();
eq(approvals(ws).find((a) => a.id === w1.a.id)?.state, "pending", "after the cross-origin POST the approval is still pending");
const stillWaiting = await Promise.race([w1.p.then(() => false), sleep(100).then(() => true)]);
check("the waiting call is still waiting", stillWaiting);

// approve
await appr.goto(con.origin + "/approvals");
await appr.waitForSelector(art);
const [approved] = await Promise.all([appr.waitForNavigation(), appr.click(`${art} button.approve`)]);
check("Approve answers with the Approvals page", approved?.ok() && (await pageKind(appr)) === "approvals", approved?.status());
check("the page says what was decided", ((await appr.$eval("div.flash", (d) => d.textContent).catch(() => "")) || "").toLowerCase().includes("approved"));
const r1 = await Promise.race([w1.p, sleep(15000).then(() => null)]);
eq(r1?.env?.status, "persisted", "the approved waiting call finishes persisted");
eq(r1?.exit, 0, "and exits 0");
eq(readFileSync(join(ws, "service.yaml"), "utf8"), newConf, "its write happened");
const rec = approvals(ws, {}, true).find((a) => a.id === w1.a.id);
eq(rec?.state === "approved" || rec?.state === "used", true, `the ledger records the approval (${rec?.state})`);
if (rec && "decided_by" in rec) eq(rec.decided_by, "console", "recorded as decided by the console");

// deny, with a reason
await appr.waitForSelector(`article.approval[data-id="${w2.a.id}"]`);
const reason = "not while the release is cut";
await appr.fill(`article.approval[data-id="${w2.a.id}"] form.deny input[name=reason]`, reason);
const [denied] = await Promise.all([appr.waitForNavigation(), appr.click(`article.approval[data-id="${w2.a.id}"] button.deny`)]);
check("Deny answers with the Approvals page", denied?.ok() && (await pageKind(appr)) === "approvals", denied?.status());
check("the page says it was denied", ((await appr.$eval("div.flash", (d) => d.textContent).catch(() => "")) || "").toLowerCase().includes("denied"));
const r2 = await Promise.race([w2.p, sleep(15000).then(() => null)]);
eq(r2?.env?.status, "denied", "the denied waiting call ends denied");
check("the call's message carries the reason", (r2?.env?.error?.message ?? "").includes(reason), r2?.env?.error);
check("the queue is empty again", (await until(() => appr.$("div#approvals p.empty"), 3000)) !== null);

// ---- the other pages ----------------------------------------------------------

const other = await ctx.newPage();
watchErrors(other, "pages");
const persisted = made.find((m) => m.tool === "read_file" && m.status === "persisted");
await other.goto(`${con.origin}/calls/${persisted.op}`);
eq(await pageKind(other), "call", "the Call page");
check("Call: h1 names the tool", ((await other.textContent("h1")) || "").includes("read_file"));
check("Call: the envelope", ((await other.textContent("section#envelope pre").catch(() => "")) || "").includes(persisted.op));
check("Call: the trace", (await other.$$("table#trace tr")).length >= 2);
check("Call: the events", (await other.$$("table#events tr")).length >= 2);
await shot(other, "call");
const deniedOp = made.find((m) => m.status === "denied");
await other.goto(`${con.origin}/calls/${deniedOp.op}`);
check("Call: the rule that decided", ((await other.textContent(".rule").catch(() => "")) || "").includes("confinement"));
await other.goto(`${con.origin}/calls/00000000-0000-7000-8000-000000000000`);
eq(await pageKind(other), "error", "an unknown call is an error page");

await other.goto(`${con.origin}/stats?window=all`);
eq(await pageKind(other), "stats", "the Stats page");
check("Stats: charts", (await other.$$("svg.chart")).length >= 1);
check("Stats: the current window is marked", ((await other.textContent("nav.windows .active").catch(() => "")) || "").toLowerCase().includes("all"));
check("Stats: read_file in the table", ((await other.textContent("table#tools").catch(() => "")) || "").includes("read_file"));
await shot(other, "stats");

await other.goto(`${con.origin}/sessions`);
eq(await pageKind(other), "sessions", "the Sessions page");
check("Sessions lists s-docs", (await other.$('table#sessions a[href="/sessions/s-docs"]')) !== null);
await shot(other, "sessions");
await other.goto(`${con.origin}/sessions/s-docs`);
eq(await pageKind(other), "session", "a session's page");
const calls = await other.$$("ol#timeline li.call");
check("the session's timeline shows its calls", calls.length >= 5, calls.length);
await shot(other, "session");
await other.close();

// ---- Live survives a restart of the console ---------------------------------

await live.goto(con.origin + "/live");
check("Live's stream is open before the restart", await streamIs(live, "open", 10000));
await live.evaluate(() => (window.__notReloaded = true));
const port = con.port;
async function restart(token, what, meanwhile = async () => {}) {
  const stopped = await con.stop();
  eq(stopped.code, 0, `the console stops cleanly on SIGTERM (${what})`);
  check(`no sanitizer report from the console (${what})`, !sanitizerReport(stopped.stderr), sanitizerReport(stopped.stderr));
  check(`Live notices the console went away (${what})`, await streamIs(live, "closed", 10000), () =>
    live.evaluate(() => document.body.dataset.stream),
  );
  await meanwhile();
  try {
    con = await startConsole(ws, port, { TG_CONSOLE_TOKEN: token });
  } catch (e) {
    await abort(`the console restarts on the same port ${port} (${what})`, e.message);
  }
}

// the same token: the session (its own proof, made with the token) holds
let down; // a call made while the console is down
await restart(token1, "same token", async () => (down = await call(["list_dir", '{"path":"."}'])));
check("with the same token, Live reconnects by itself", await streamIs(live, "open", 20000), () =>
  live.evaluate(() => document.body.dataset.stream),
);
check("the call made while the console was down appears (the stream resumes)", await rowShown(live, down?.env?.op_id));
let after = await call(["read_file", '{"path":"a.txt"}']);
check("a call made after the restart appears", await rowShown(live, after.env?.op_id));
check("without a reload", await live.evaluate(() => window.__notReloaded === true));

// another token: every session before it is void until the browser logs in again
await restart(randomHex(), "new token");
await sleep(4000); // the page's stream is refused meanwhile
eq(await live.evaluate(() => document.body.dataset.stream), "closed", "with a new token, the old session's stream is refused");
const relog = await ctx.newPage();
await relog.goto(con.origin + "/live");
eq(await pageKind(relog), "login", "with a new token, the old cookie gets the login form");
await relog.goto(con.loginUrl);
eq(await pageKind(relog), "live", "logged in to the restarted console");
// a new token is a new host name too: the new Live page streams, the old one stays refused
check("the new Live page's stream opens", await streamIs(relog, "open", 20000), () =>
  relog.evaluate(() => document.body.dataset.stream),
);
after = await call(["read_file", '{"path":"a.txt"}']);
check("a call made after the new login appears", await rowShown(relog, after.env?.op_id));
eq(await live.evaluate(() => document.body.dataset.stream), "closed", "the old page's stream stays refused");
await relog.close();

// ---- the end --------------------------------------------------------------------

const csp = pageErrors.filter((e) => !/status of 40[13]|Failed to load resource/.test(e));
check("no page logged an error (CSP, script)", csp.length === 0, csp);
const stopped = await con.stop();
eq(stopped.code, 0, "the restarted console stops cleanly");
check("no sanitizer report from the restarted console", !sanitizerReport(stopped.stderr), sanitizerReport(stopped.stderr));
console.log(`screenshots: ${keepShots || shots}`);
await finish();
