// lib.mjs — what the MCP client tests (sdk-client.mjs, bridge-client.mjs)
// share: one line per check and a closing count, as tests/integration/lib.sh
// prints them; `toolgate serve` started over stdio or Streamable HTTP with an
// official SDK Client connected to it; temporary workspaces; the ledger read
// through `toolgate log`.
//
// Owns: the toolgate processes and workspaces the tests make (all of them
// are gone when the test exits, whatever happened) and the watchdog that
// fails a test that hangs.  Must not: assert anything itself (the tests
// say what they expect) or reach anything but 127.0.0.1.
//
// Environment: TOOLGATE (the program, required), TOOLGATE_ROOT (the tree).

import { spawn, execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

export const TG = process.env.TOOLGATE;
if (!TG) {
  console.error("TOOLGATE must point at the toolgate binary");
  process.exit(2);
}
export const ROOT = process.env.TOOLGATE_ROOT ?? join(dirname(fileURLToPath(import.meta.url)), "../..");
export const MCP_DIR = join(ROOT, "tests/mcp");

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

// rejects PROMISE WHAT: resolves to the error, or undefined (and a failed
// check) when the promise fulfilled.
export async function rejects(promise, what) {
  try {
    const v = await promise;
    check(what, false, () => `no error; got ${JSON.stringify(v)}`);
    return undefined;
  } catch (e) {
    return e;
  }
}

function clip(v) {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return s && s.length > 600 ? `${s.slice(0, 600)}...` : s;
}

// Print the count, clean up, exit 0 only when every check passed.
export async function finish() {
  await cleanup();
  console.log(`${checks} checks, ${failed} failed`);
  process.exit(failed === 0 && checks > 0 ? 0 : 1);
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
export async function until(fn, ms, every = 100) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() >= end) return v;
    await sleep(every);
  }
}

// ---- workspaces and the ledger ----

const workspaces = [];
const children = new Set();

// A fresh workspace holding `files` ({relative path: content}).
export function workspace(files = {}) {
  const ws = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), "tg-mcp."));
  workspaces.push(ws);
  for (const [path, content] of Object.entries(files)) {
    const full = join(ws, path);
    mkdirSync(dirname(full), { recursive: true });
    writeFileSync(full, content);
  }
  return ws;
}

// `toolgate ARGS...` in ws, stdout as text (throws on a non-zero exit).
export function toolgate(ws, ...args) {
  return execFileSync(TG, args, { cwd: ws, env: gateEnv(), encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

// Every call in the ledger of ws, oldest first (`toolgate log --json`).
export function ledger(ws) {
  return toolgate(ws, "log", "--json", "--workspace", ws)
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

// The environment toolgate runs in: ours, without a config or principal
// that could leak in from the caller's.
export function gateEnv() {
  const env = { ...process.env };
  delete env.TOOLGATE_CONFIG;
  delete env.TOOLGATE_PRINCIPAL;
  delete env.TOOLGATE_TOKEN;
  return env;
}

// Sanitizer reports in a program's stderr, or "".
export function sanitizerReport(text) {
  const m = /ERROR: (Address|Leak)Sanitizer|runtime error:|ThreadSanitizer/.exec(text);
  return m ? text.slice(Math.max(0, m.index - 200), m.index + 2000) : "";
}

// Processes running program `name` (any directory) with exactly `args`,
// read from /proc.
export function processesRunning(name, ...args) {
  const pids = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    let argv;
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    } catch {
      continue; /* gone meanwhile */
    }
    if (argv[argv.length - 1] === "") argv.pop();
    if (basename(argv[0] ?? "") === name && argv.slice(1).join("\0") === args.join("\0"))
      pids.push(Number(pid));
  }
  return pids;
}

// ---- toolgate serve with an SDK client on it ----

// A client of the official SDK.  capabilities: what it declares (e.g.
// {elicitation: {}}); handlers: [[RequestSchema, fn], ...].
function sdkClient(capabilities, handlers) {
  const client = new Client({ name: "toolgate-tests", version: "1.0.0" }, { capabilities });
  for (const [schema, fn] of handlers) client.setRequestHandler(schema, fn);
  return client;
}

// Record the protocol revision the client negotiates (the SDK hands it to
// transports that take one; stdio's does not, so it gets a setter).
function recordVersion(transport, session) {
  const set = transport.setProtocolVersion?.bind(transport);
  transport.setProtocolVersion = (v) => {
    session.protocolVersion = v;
    set?.(v);
  };
}

/*
 * Start `toolgate serve` on ws and connect an SDK client.
 *   opts.http:          true for Streamable HTTP on 127.0.0.1:0, else stdio
 *   opts.args:          more serve arguments (--config F, --page-size N, ...)
 *   opts.capabilities:  the client's capabilities
 *   opts.handlers:      [[RequestSchema, fn], ...] for the server's requests
 * Returns {client, transport, url (HTTP), pid, stderr(), protocolVersion,
 * close()}: close() ends the session and the server (stdin closed for stdio,
 * SIGTERM for HTTP) and resolves to {code, signal, stderr} of the server.
 */
export async function serve(ws, opts = {}) {
  const http = opts.http ? ["--http", "127.0.0.1:0"] : [];
  const args = ["serve", ...http, "--workspace", ws, ...(opts.args ?? [])];
  const session = { protocolVersion: null };
  const client = sdkClient(opts.capabilities ?? {}, opts.handlers ?? []);
  let err = "";
  let transport;
  let exited;
  if (opts.http) {
    // stdin stays open (a pipe we never write): only SIGTERM ends it
    const child = spawn(TG, args, { cwd: ws, env: gateEnv(), stdio: ["pipe", "ignore", "pipe"] });
    children.add(child);
    child.stderr.on("data", (d) => (err += d));
    exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
    session.url = await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "serving MCP on" line within 60 s: ${err}`)), 60000);
      const look = () => {
        const m = /serving MCP on (http:\/\/\S+)/.exec(err);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      };
      child.stderr.on("data", look);
      child.on("exit", (code) => reject(new Error(`toolgate serve exited (${code}): ${err}`)));
    });
    session.pid = child.pid;
    transport = new StreamableHTTPClientTransport(new URL(session.url));
    session.child = child;
  } else {
    transport = new StdioClientTransport({
      command: TG,
      args,
      cwd: ws,
      env: gateEnv(),
      stderr: "pipe",
    });
    transport.stderr.on("data", (d) => (err += d));
  }
  recordVersion(transport, session);
  await client.connect(transport);
  if (!opts.http) {
    session.pid = transport.pid;
    const pid = transport.pid;
    // the process is not ours to wait for (the SDK spawned it): poll /proc
    exited = new Promise((resolve) => {
      const t = setInterval(() => {
        let state = "";
        try {
          state = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.[0] ?? "";
        } catch {
          /* reaped */
        }
        if (state === "" || state === "Z") {
          clearInterval(t);
          resolve({ code: null, signal: null });
        }
      }, 50);
    });
  }
  return {
    ...session,
    client,
    transport,
    stderr: () => err,
    async close() {
      if (opts.http) {
        // DELETE the session, then stop the server
        await transport.terminateSession().catch(() => {});
        await client.close().catch(() => {});
        session.child.kill("SIGTERM");
      } else {
        await client.close().catch(() => {});
      }
      const r = await Promise.race([exited, sleep(15000).then(() => null)]);
      if (opts.http) children.delete(session.child);
      if (!r) {
        try {
          process.kill(session.pid, "SIGKILL");
        } catch {
          /* gone */
        }
        return { code: null, signal: "timeout", stderr: err };
      }
      // let the last stderr bytes arrive
      await sleep(50);
      return { ...r, stderr: err };
    },
  };
}

// tools/call through the SDK (which also checks structuredContent against
// the tool's listed outputSchema); its outcome.  A call the SDK rejects
// (an McpError, a timeout) comes back as an outcome with `thrown` set, so
// that the checks on it fail and say why instead of ending the test.
export async function callTool(client, name, args, options) {
  try {
    return outcome(await client.callTool({ name, arguments: args }, undefined, options));
  } catch (e) {
    return { isError: true, text: "", sc: {}, thrown: e, result: `the SDK threw: ${e?.message ?? e}` };
  }
}

// The _meta key of toolgate's envelope in a tools/call result.
export const ENVELOPE = "toolgate/envelope";

// The parts of a tools/call result: {isError, text (the content's text),
// sc (the envelope, from _meta), structured (structuredContent: what Claude
// Code and Codex give the model), result}.
export function outcome(result) {
  const text = (result.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("\n");
  return {
    isError: result.isError === true,
    text,
    sc: result._meta?.[ENVELOPE] ?? {},
    structured: result.structuredContent,
    result,
  };
}

async function cleanup() {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
  for (const ws of workspaces.splice(0))
    rmSync(ws, { recursive: true, force: true, maxRetries: 3 });
}
process.on("exit", () => {
  for (const child of children) child.kill("SIGKILL");
  for (const ws of workspaces) rmSync(ws, { recursive: true, force: true });
});
