// sdk-client.mjs — `toolgate serve` under the official TypeScript SDK
// Client, over stdio and over Streamable HTTP (DESIGN §6, issue 6): the
// handshake, tools/list as the contract and the policy say (titles,
// annotations, schemas, pages, hidden denials), each built-in tool called
// with its output as structuredContent and its envelope in _meta, every way
// a call can stop (denied, invalid, unknown tool, malformed request, queued
// for approval), a tool with an output schema (the SDK checks
// structuredContent against it, on errors too), the arguments a client adds
// on its own (Gemini CLI's wait_for_previous), elicitation (accepted with
// nothing filled in, declined, cancelled: queued; approvals via the queue),
// progress, and cancellation that kills the running command and is recorded
// in the ledger.
//
// Owns: its workspaces and servers (through lib.mjs).  Must not: mock
// either side — the official SDK Client talks to the real toolgate binary.
// Run by tests/integration/mcp_sdk.sh.  One line per check; exit 0 only when
// every check passed.

import { readFileSync, existsSync } from "node:fs";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { join } from "node:path";
import {
  CallToolResultSchema,
  ElicitRequestSchema,
  EmptyResultSchema,
  ErrorCode,
  McpError,
} from "@modelcontextprotocol/sdk/types.js";
import {
  TG,
  callTool,
  check,
  eq,
  finish,
  gateEnv,
  ledger,
  processesRunning,
  rejects,
  sanitizerReport,
  serve,
  sleep,
  toolgate,
  until,
  watchdog,
  workspace,
} from "./lib.mjs";

watchdog(300);

const BUILTINS = ["read_file", "list_dir", "search_files", "write_file", "apply_patch", "shell"];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const FILES = {
  "hello.txt": "hello world\nsecond line\n",
  "secret.txt": "TOP-SECRET\n",
  "src/a.c": "int main(void) { return 0; }\n",
};
// default mode: reads run, other calls ask unless a rule allows them
const CONFIG = `
mode: default
permissions:
  allow: ["write_file(./out/**)", "apply_patch", "shell", typed]
  deny: ["read_file(./secret.txt)", "typed(n=13)"]
tools:
  typed:
    description: Echo the call, with an output schema.
    input_schema: {type: object, properties: {n: {type: integer}}, additionalProperties: false}
    output_schema:
      type: object
      properties: {tool: {type: string}, args: {$ref: "#/$defs/args"}}
      required: [tool, args]
      additionalProperties: true
      $defs: {args: {type: object, properties: {n: {type: integer}}, required: [n]}}
    command: [cat]
    read_only: true
`;

// A workspace with FILES and CONFIG as toolgate.yaml; the serve arguments
// that use it.
function setup() {
  const ws = workspace({ ...FILES, "toolgate.yaml": CONFIG });
  return { ws, args: ["--config", join(ws, "toolgate.yaml")] };
}

// Call a tool; the outcome (see lib.mjs), with the SDK's call options.
const call = (s, name, args, options) => callTool(s.client, name, args, options);

// The JSON-RPC error code of a rejected request, or what it was instead.
function codeOf(e) {
  return e instanceof McpError ? e.code : `${e?.name}: ${e?.message}`;
}

// A clean end: the server stops (stdio: by itself when stdin closes, before
// the SDK would send SIGTERM 2 s later; HTTP: on SIGTERM, exit status 0) and
// writes no sanitizer report.
async function stop(s, tag) {
  const t0 = Date.now();
  const r = await s.close();
  if (s.url) eq(r.code, 0, `${tag} serve exits 0 on SIGTERM`);
  else check(`${tag} serve exits when its stdin closes`, Date.now() - t0 < 1900, `${Date.now() - t0} ms`);
  check(`${tag} no sanitizer report from serve`, !sanitizerReport(r.stderr), () => sanitizerReport(r.stderr));
}

// ---- the handshake and the list ------------------------------------------

async function handshake(s, tag) {
  eq(s.client.getServerVersion()?.name, "toolgate", `${tag} initialize: serverInfo.name`);
  eq(s.protocolVersion, "2025-11-25", `${tag} initialize: protocol 2025-11-25 negotiated`);
  const caps = s.client.getServerCapabilities() ?? {};
  eq(caps.tools?.listChanged, true, `${tag} initialize: capabilities.tools.listChanged`);
  check(`${tag} initialize: capabilities.logging`, typeof caps.logging === "object", caps);
  eq(await s.client.ping(), {}, `${tag} ping answers {}`);
  eq(await s.client.setLoggingLevel("warning"), {}, `${tag} logging/setLevel answers {}`);
  const e = await rejects(
    s.client.request({ method: "server/discover", params: {} }, EmptyResultSchema),
    `${tag} an unknown method is an error`,
  );
  if (e) eq(codeOf(e), ErrorCode.MethodNotFound, `${tag} an unknown method gets -32601`);
}

const HINTS = ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"];
const hints = (a) => Object.fromEntries(HINTS.map((h) => [h, a?.[h]]));

async function listing(s, tag, ws, args) {
  const { tools, nextCursor } = await s.client.listTools();
  eq(tools.map((t) => t.name).filter((n) => BUILTINS.includes(n)), BUILTINS, `${tag} tools/list: the built-in tools`);
  eq(nextCursor ?? null, null, `${tag} tools/list: one page by default`);
  // the contract as `toolgate tools` prints it, for the same configuration
  const cli = Object.fromEntries(JSON.parse(toolgate(ws, "tools", "--workspace", ws, ...args)).map((t) => [t.name, t]));
  for (const t of tools.filter((x) => BUILTINS.includes(x.name))) {
    const want = cli[t.name];
    check(`${tag} ${t.name}: a title`, typeof t.title === "string" && t.title.length > 0, t.title);
    eq(t.description, want.description, `${tag} ${t.name}: the description`);
    eq(t.inputSchema, want.input_schema, `${tag} ${t.name}: inputSchema is the tool's schema`);
    eq(hints(t.annotations), hints(want.annotations), `${tag} ${t.name}: annotations from the contract`);
    eq(t.outputSchema ?? null, want.output_schema ?? null, `${tag} ${t.name}: outputSchema when it has one`);
  }
  const ro = Object.fromEntries(tools.map((t) => [t.name, t.annotations?.readOnlyHint]));
  eq([ro.read_file, ro.list_dir, ro.search_files, ro.write_file, ro.apply_patch, ro.shell],
     [true, true, true, false, false, false], `${tag} readOnlyHint: reads yes, writes and shell no`);
  eq(tools.find((t) => t.name === "shell")?.annotations?.destructiveHint, true, `${tag} shell is destructive`);
  return tools;
}

// ---- calls -----------------------------------------------------------------

// Each built-in tool once, allowed: its output as text, its envelope as
// structuredContent, persisted, and in the ledger.
async function builtins(s, tag, ws) {
  const cases = [
    ["read_file", { path: "hello.txt" }, (o) => o.text.includes("hello world") && o.sc.output?.total_lines === 2 &&
      o.structured?.total_lines === 2],
    ["list_dir", { path: "." }, (o) => o.text.includes("hello.txt") && o.text.includes("src")],
    ["search_files", { pattern: "sec.nd" }, (o) => o.text.includes("hello.txt") && o.text.includes("second line")],
    ["write_file", { path: "out/w.txt", content: "written\n" }, () => readIf(ws, "out/w.txt") === "written\n"],
    ["apply_patch", { patch: "*** Begin Patch\n*** Add File: out/p.txt\n+patched line\n*** End Patch\n" },
     () => readIf(ws, "out/p.txt") === "patched line\n"],
    ["shell", { command: "echo hi-from-shell" }, (o) => o.text.includes("hi-from-shell")],
  ];
  const ops = {};
  for (const [name, args, works] of cases) {
    const o = await call(s, name, args);
    const what = `${tag} ${name}`;
    check(`${what}: not an error`, !o.isError, o.result);
    eq(o.sc.status, "persisted", `${what}: the envelope (in _meta), persisted`);
    eq(o.structured?.op_id, undefined, `${what}: structuredContent is not the envelope`);
    if (o.structured !== undefined)
      eq(JSON.parse(o.text), o.structured, `${what}: content is structuredContent's serialization`);
    eq(o.sc.tool, name, `${what}: envelope names the tool`);
    check(`${what}: envelope has a UUIDv7 op_id`, UUID.test(o.sc.op_id ?? ""), o.sc.op_id);
    check(`${what}: the content text and the effect`, works(o), o.result);
    ops[o.sc.op_id] = name;
  }
  const rows = ledger(ws).filter((r) => r.op_id in ops);
  eq(rows.map((r) => [r.tool, r.status]), Object.values(ops).map((n) => [n, "persisted"]),
     `${tag} every call is in the ledger as persisted`);
}

function readIf(ws, path) {
  const p = join(ws, path);
  return existsSync(p) ? readFileSync(p, "utf8") : null;
}

async function refusals(s, tag, ws) {
  let o = await call(s, "read_file", { path: "secret.txt" });
  check(`${tag} denied: isError`, o.isError, o.result);
  eq(o.sc.status, "denied", `${tag} denied: status denied`);
  eq(o.sc.error?.kind, "not_permitted", `${tag} denied: error.kind not_permitted`);
  check(`${tag} denied: a sentence, and nothing of the file`, o.text.length > 0 && !o.text.includes("TOP-SECRET"), o.text);
  eq(Object.keys(o.structured ?? {}), ["status", "error"], `${tag} denied: structuredContent is the status and the error`);
  eq(o.structured?.error?.kind, "not_permitted", `${tag} denied: ... the error's kind`);

  o = await call(s, "read_file", { path: 5 });
  check(`${tag} invalid: isError`, o.isError, o.result);
  eq(o.sc.status, "invalid", `${tag} invalid: status invalid`);
  eq(o.sc.error?.kind, "invalid_input", `${tag} invalid: error.kind invalid_input`);
  eq(o.sc.error?.field, "/path", `${tag} invalid: error.field points at the argument`);

  o = await call(s, "no_such_tool", {});
  check(`${tag} unknown tool: an isError result, not a JSON-RPC error`, o.isError, o.result);
  check(`${tag} unknown tool: the sentence names it`, o.text.includes("no_such_tool"), o.text);
  eq(o.sc.error?.kind, "unknown_tool", `${tag} unknown tool: error.kind unknown_tool`);

  const malformed = [
    ["no name", { arguments: {} }],
    ["a name that is not a string", { name: 42, arguments: {} }],
    ["arguments that are not an object", { name: "read_file", arguments: "hello.txt" }],
  ];
  for (const [what, params] of malformed) {
    const e = await rejects(
      s.client.request({ method: "tools/call", params }, CallToolResultSchema),
      `${tag} malformed tools/call (${what}) is a JSON-RPC error`,
    );
    if (e) eq(codeOf(e), ErrorCode.InvalidParams, `${tag} malformed tools/call (${what}) gets -32602`);
  }
  const before = ledger(ws).length;
  await s.client.ping();
  eq(ledger(ws).length, before, `${tag} malformed requests leave no ledger row`);
}

// An ask with no elicitation capability: queued, pending with the id and
// the command that approves it; approved from the CLI, the same call runs.
async function queued(s, tag, ws) {
  const args = { path: "notes/q.txt", content: "queued\n" };
  let o = await call(s, "write_file", args);
  check(`${tag} ask without elicitation: isError`, o.isError, o.result);
  eq(o.sc.status, "pending", `${tag} ask without elicitation: pending`);
  const id = o.sc.error?.approval_id;
  check(`${tag} pending: an approval_id`, typeof id === "string" && id.length > 0, o.sc.error);
  check(`${tag} pending: the message gives the command that approves it`,
        o.text.includes(`toolgate approvals approve ${id}`), o.text);
  eq([o.structured?.status, o.structured?.error?.approval_id], ["pending", id],
     `${tag} pending: structuredContent has the status and the approval id`);
  eq(readIf(ws, "notes/q.txt"), null, `${tag} pending: nothing written`);
  toolgate(ws, "approvals", "approve", id, "--workspace", ws);
  o = await call(s, "write_file", args);
  eq(o.sc.status, "persisted", `${tag} approved from the CLI, the same call runs`);
  eq(readIf(ws, "notes/q.txt"), "queued\n", `${tag} the approved write happened`);
}

// A 1 s shell call with a progress token: heartbeats (every 200 ms here)
// arrive before the result, increasing.
async function progress(s, tag) {
  const seen = [];
  const o = await call(s, "shell", { command: "sleep 1" }, { onprogress: (p) => seen.push(p.progress) });
  eq(o.sc.status, "persisted", `${tag} progress: the call completes`);
  check(`${tag} progress: notifications before the result`, seen.length >= 1, seen);
  check(`${tag} progress: increasing`, seen.every((v, i) => i === 0 || v > seen[i - 1]), seen);
}

// Abort a 30 s shell call: the request ends, the command's process is
// killed, the ledger says failed with applied unknown, the session goes on.
async function cancellation(s, tag, ws) {
  const secs = tag.includes("http") ? "30.4218" : "30.4217"; // a sleep of our own to find
  const ac = new AbortController();
  const pending = s.client.callTool({ name: "shell", arguments: { command: `sleep ${secs}` } }, undefined, {
    signal: ac.signal,
  });
  const running = await until(() => processesRunning("sleep", secs).length > 0, 15000);
  check(`${tag} cancel: the command is running`, running);
  const t0 = Date.now();
  ac.abort(new Error("the test cancels"));
  await rejects(pending, `${tag} cancel: the request rejects`);
  check(`${tag} cancel: at once`, Date.now() - t0 < 2000, `${Date.now() - t0} ms`);
  const gone = await until(() => processesRunning("sleep", secs).length === 0, 5000);
  check(`${tag} cancel: the command's process is gone`, gone, () => processesRunning("sleep", secs));
  const row = await until(() => {
    const shells = ledger(ws).filter((r) => r.tool === "shell");
    const last = shells[shells.length - 1];
    return last && last.status !== "persisted" ? last : null;
  }, 5000);
  eq(row?.status, "failed", `${tag} cancel: the ledger says failed`);
  eq(row?.envelope?.error?.applied, "unknown", `${tag} cancel: applied unknown (a shell command may have acted)`);
  eq(await s.client.ping(), {}, `${tag} cancel: the session goes on`);
}

// A tool with an output schema: the SDK checks every structuredContent
// against the listed outputSchema (the tool's, or the status object's), so
// none of these calls may throw.
async function typedOutput(s, tag) {
  const { tools } = await s.client.listTools();
  const os = tools.find((t) => t.name === "typed")?.outputSchema;
  eq(os?.anyOf?.length, 2, `${tag} typed: outputSchema is the tool's or the status object's`);
  eq(Object.keys(os?.$defs ?? {}), ["args"], `${tag} typed: the tool's $defs at the top, where its refs point`);
  let o = await call(s, "typed", { n: 1 });
  check(`${tag} typed: the SDK accepts the output`, !o.thrown, o.result);
  eq([o.sc.status, o.structured?.args?.n, o.structured?.status], ["persisted", 1, undefined],
     `${tag} typed: structuredContent is the output`);
  o = await call(s, "typed", { n: 13 });
  check(`${tag} typed, denied: the SDK accepts the status object`, !o.thrown, o.result);
  eq([o.isError, o.structured?.status], [true, "denied"], `${tag} typed, denied: the status object`);
  o = await call(s, "typed", { n: "x" });
  check(`${tag} typed, invalid: the SDK accepts the status object`, !o.thrown, o.result);
  eq([o.isError, o.structured?.status, o.structured?.error?.field], [true, "invalid", "/n"],
     `${tag} typed, invalid: the status object with the field`);
}

// Gemini CLI adds wait_for_previous to every tool's schema and passes it on:
// it is removed before validation (which would refuse it), and the trace
// says so.
async function clientArgs(s, tag, ws) {
  const o = await call(s, "read_file", { path: "hello.txt", wait_for_previous: true });
  eq(o.sc.status, "persisted", `${tag} wait_for_previous: the call runs`);
  const rec = (o.sc.stages ?? []).find((x) => x.stage === "client_args");
  eq(rec?.removed, ["wait_for_previous"], `${tag} wait_for_previous: the trace says it was removed`);
  const row = ledger(ws).find((r) => r.op_id === o.sc.op_id);
  eq((row?.envelope?.stages ?? []).find((x) => x.stage === "client_args")?.removed, ["wait_for_previous"],
     `${tag} wait_for_previous: the ledger row says so`);
}

// ---- elicitation -------------------------------------------------------------

// A client that declares elicitation and answers with `answer` ("accept",
// "decline", "cancel"), accepting with `content` (as a person who only
// presses Accept: nothing filled in); the requests it got in `asked`.
function elicitingClient() {
  const state = { answer: "accept", content: {}, asked: [] };
  const handler = async (req) => {
    state.asked.push(req.params);
    if (state.answer !== "accept") return { action: state.answer };
    return { action: "accept", content: state.content };
  };
  return { state, opts: { capabilities: { elicitation: {} }, handlers: [[ElicitRequestSchema, handler]] } };
}

async function elicitation(http, tag) {
  const { ws, args } = setup();
  const { state, opts } = elicitingClient();
  const s = await serve(ws, { http, args, ...opts });
  const w = { path: "notes/e.txt", content: "elicited\n" };

  let o = await call(s, "write_file", w);
  eq(state.asked.length, 1, `${tag} elicit: an ask becomes one elicitation/create`);
  const p = state.asked[0] ?? {};
  check(`${tag} elicit: form mode`, (p.mode ?? "form") === "form", p);
  check(`${tag} elicit: the message names the tool and its arguments`,
        /write_file/.test(p.message) && p.message.includes("notes/e.txt"), p.message);
  eq(Object.entries(p.requestedSchema?.properties ?? {}).map(([k, v]) => [k, v.type]), [["reason", "string"]],
     `${tag} elicit: the form asks for an optional reason only`);
  eq(p.requestedSchema?.required ?? [], [], `${tag} elicit: nothing required`);
  eq(o.sc.status, "persisted", `${tag} elicit: Accept with nothing filled in approves`);
  eq(readIf(ws, "notes/e.txt"), "elicited\n", `${tag} elicit: accepted, the file is written`);

  state.content = { reason: "release day" };
  o = await call(s, "write_file", { path: "notes/r.txt", content: "r\n" });
  eq(o.sc.status, "persisted", `${tag} elicit: accepted with a reason`);
  const row = ledger(ws).find((r) => r.op_id === o.sc.op_id);
  check(`${tag} elicit: the reason is in the ledger`,
        JSON.stringify(row?.events ?? []).includes("release day"), row?.events);

  state.answer = "decline";
  o = await call(s, "write_file", { path: "notes/decline.txt", content: "no\n" });
  eq([o.isError, o.sc.status], [true, "denied"], `${tag} elicit: declined, denied`);
  eq(readIf(ws, "notes/decline.txt"), null, `${tag} elicit: declined, nothing written`);

  // a client that cancels (claude -p answers every question so): the owner decides
  state.answer = "cancel";
  o = await call(s, "write_file", { path: "notes/cancel.txt", content: "later\n" });
  eq([o.isError, o.sc.status], [true, "pending"], `${tag} elicit: cancelled, queued for the owner`);
  const id = o.sc.error?.approval_id;
  check(`${tag} elicit: cancelled: the command that approves it`, o.text.includes(`toolgate approvals approve ${id}`), o.text);
  toolgate(ws, "approvals", "approve", id, "--workspace", ws);
  o = await call(s, "write_file", { path: "notes/cancel.txt", content: "later\n" });
  eq(o.sc.status, "persisted", `${tag} elicit: approved from the CLI, the same call runs`);
  eq(readIf(ws, "notes/cancel.txt"), "later\n", `${tag} elicit: the approved write happened`);

  // reads are allowed: no elicitation for them
  state.asked.length = 0;
  o = await call(s, "read_file", { path: "hello.txt" });
  eq([o.sc.status, state.asked.length], ["persisted", 0], `${tag} elicit: a read asks nobody`);
  await stop(s, tag);

  // --approvals-via queue: a client that declines every question (codex
  // exec) still reaches the owner
  const q = setup();
  const qc = elicitingClient();
  qc.state.answer = "decline";
  const s2 = await serve(q.ws, { http, args: [...q.args, "--approvals-via", "queue"], ...qc.opts });
  o = await call(s2, "write_file", { path: "notes/q.txt", content: "q\n" });
  eq([o.sc.status, qc.state.asked.length], ["pending", 0], `${tag} --approvals-via queue: queued, nobody asked`);
  await stop(s2, tag);
}

// ---- pages and hidden tools -----------------------------------------------------

async function pagination(http, tag, full) {
  const { ws, args } = setup();
  const s = await serve(ws, { http, args: [...args, "--page-size", "2"] });
  const first = await s.client.listTools();
  eq(first.tools.length, 2, `${tag} --page-size 2: the first page has 2 tools`);
  check(`${tag} --page-size 2: and a nextCursor`, typeof first.nextCursor === "string", first);
  const all = [...first.tools];
  let cursor = first.nextCursor;
  let pages = 1;
  while (cursor && pages < 50) {
    const page = await s.client.listTools({ cursor });
    check(`${tag} page ${++pages}: at most 2 tools`, page.tools.length <= 2 && page.tools.length > 0, page);
    all.push(...page.tools);
    cursor = page.nextCursor;
  }
  eq(all, full, `${tag} the pages together are the one big page`);
  const e = await rejects(s.client.listTools({ cursor: "not-a-cursor" }), `${tag} a bad cursor is an error`);
  if (e) eq(codeOf(e), ErrorCode.InvalidParams, `${tag} a bad cursor gets -32602`);
  await stop(s, tag);
}

async function hiddenDenials(http, tag) {
  const deny = "permissions:\n  deny: [shell]\n";
  for (const [extra, listed] of [["", false], ["hide_denied: false\n", true]]) {
    const ws = workspace({ ...FILES, "toolgate.yaml": deny + extra });
    const s = await serve(ws, { http, args: ["--config", join(ws, "toolgate.yaml")] });
    const { tools } = await s.client.listTools();
    const names = tools.map((t) => t.name);
    const what = listed ? "with hide_denied: false" : "by default";
    eq(names.includes("shell"), listed, `${tag} a bare deny rule ${listed ? "shows" : "hides"} the tool ${what}`);
    check(`${tag} the other tools stay listed ${what}`, names.includes("read_file") && names.includes("write_file"), names);
    const o = await call(s, "shell", { command: "echo no" });
    eq([o.isError, o.sc.status, o.sc.error?.kind], [true, "denied", "not_permitted"],
       `${tag} the denied tool is still refused when called ${what}`);
    await stop(s, tag);
  }
  const ws = workspace(FILES);
  const s = await serve(ws, { http, args: ["--profile", "minimal"] });
  eq((await s.client.listTools()).tools.map((t) => t.name), ["read_file", "list_dir", "search_files"],
     `${tag} --profile minimal lists the read-only file tools only`);
  await stop(s, tag);
}

// ---- protocol revisions, raw ------------------------------------------------------

// initialize asking for `version`, as the first message of a new session:
// a POST to url, else a `toolgate serve` of its own on ws over stdio.  The
// revision the server answers.
async function initializeAs(url, ws, version) {
  const msg = {
    jsonrpc: "2.0",
    id: 1,
    method: "initialize",
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "0" } },
  };
  if (url) {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
      body: JSON.stringify(msg),
    });
    const body = await res.text();
    const json = res.headers.get("content-type")?.includes("text/event-stream")
      ? body.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).filter(Boolean).pop()
      : body;
    return JSON.parse(json).result?.protocolVersion;
  }
  const child = spawn(TG, ["serve", "--workspace", ws], { cwd: ws, env: gateEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let err = "";
  child.stderr.on("data", (d) => (err += d));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const lines = createInterface({ input: child.stdout });
  const first = new Promise((resolve) => lines.once("line", resolve));
  child.stdin.write(`${JSON.stringify(msg)}\n`);
  const line = await Promise.race([first, sleep(30000).then(() => "{}")]);
  child.stdin.end();
  await Promise.race([exited, sleep(10000).then(() => child.kill("SIGKILL"))]);
  check(`[stdio] no sanitizer report from serve (initialize ${version})`, !sanitizerReport(err), () => sanitizerReport(err));
  return JSON.parse(line).result?.protocolVersion;
}

async function revisions(url, tag, ws) {
  for (const [asked, answered] of [
    ["2025-11-25", "2025-11-25"],
    ["2025-06-18", "2025-06-18"],
    ["2025-03-26", "2025-03-26"],
    ["2099-01-01", "2025-11-25"],
  ])
    eq(await initializeAs(url, ws, asked), answered, `${tag} initialize asking ${asked} gets ${answered}`);
}

// ---- run -------------------------------------------------------------------------

for (const http of [false, true]) {
  const tag = http ? "[http]" : "[stdio]";
  const { ws, args } = setup();
  const s = await serve(ws, { http, args: [...args, "--progress-ms", "200"] });
  if (http) check(`${tag} the session has an Mcp-Session-Id`, !!s.transport.sessionId, s.transport.sessionId);
  await handshake(s, tag);
  const tools = await listing(s, tag, ws, args);
  await builtins(s, tag, ws);
  await refusals(s, tag, ws);
  await queued(s, tag, ws);
  await typedOutput(s, tag);
  await clientArgs(s, tag, ws);
  await progress(s, tag);
  await cancellation(s, tag, ws);
  await revisions(s.url, tag, ws);
  await stop(s, tag);
  await elicitation(http, tag);
  await pagination(http, tag, tools);
  await hiddenDenials(http, tag);
}
await finish();
