// bridge-sdk.mjs — `toolgate serve` bridging two official MCP servers,
// @modelcontextprotocol/server-filesystem (as `fs`, trusted, on the
// workspace) and @modelcontextprotocol/server-everything (as `ev`,
// untrusted), under the official SDK Client (DESIGN §6, issue 6): their
// tools listed under the server's prefix with the contract trust allows,
// calls through one policy and one ledger, a deny rule that holds, content
// blocks passed through, and a killed child that comes back.
//
// Owns: its workspace and servers (through lib.mjs).  Must not: mock any
// of the three — official client, real toolgate, official servers.
// Run by tests/integration/mcp_bridge_sdk.sh.  One line per check; exit 0
// only when every check passed.

import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { MCP_DIR, callTool, check, eq, finish, ledger, serve, sleep, until, watchdog, workspace } from "./lib.mjs";

watchdog(180);

const FS_MAIN = join(MCP_DIR, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
const EV_MAIN = join(MCP_DIR, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const PIN_MAIN = join(MCP_DIR, "pin-server.mjs");

const ws = workspace({ "notes.txt": "bridged hello\n" });
const pinDesc = workspace({ "desc.txt": "Say hello." });
const config = `
mode: default
permissions:
  allow: ["ev__echo"]
  deny: ["fs__write_file"]
mcp_servers:
  fs:
    command: node
    args: [${JSON.stringify(FS_MAIN)}, ${JSON.stringify(ws)}]
    trusted: true
    sandbox: {read: [${JSON.stringify(MCP_DIR)}, ${JSON.stringify(ws)}]}
  ev:
    command: node
    args: [${JSON.stringify(EV_MAIN)}, stdio]
    sandbox: {read: [${JSON.stringify(MCP_DIR)}]}
  px:
    command: node
    args: [${JSON.stringify(PIN_MAIN)}, ${JSON.stringify(join(pinDesc, "desc.txt"))}]
    trusted: true
    sandbox: {read: [${JSON.stringify(MCP_DIR)}, ${JSON.stringify(pinDesc)}]}
`;
const cfg = workspace({ "toolgate.yaml": config });

// the client answers elicitations, and remembers what it was asked
const asked = [];
const s = await serve(ws, {
  args: ["--config", join(cfg, "toolgate.yaml")],
  capabilities: { elicitation: {} },
  handlers: [[ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return req.params.message.includes("px__ask") || req.params.message.includes("toolgate:")
      ? { action: "accept", content: { approve: true } }
      : { action: "accept", content: { ok: true } };
  }]],
});
const call = (name, args) => callTool(s.client, name, args);
const names = async () => (await s.client.listTools()).tools.map((t) => t.name);

// ---- the list ----
const { tools } = await s.client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
const listed = tools.map((t) => t.name);
for (const n of ["fs__read_text_file", "fs__list_directory", "ev__echo", "read_file"])
  check(`tools/list has ${n}`, n in byName, listed);
check("every bridged tool carries its server's prefix",
      listed.filter((n) => !["read_file", "list_dir", "search_files", "write_file", "apply_patch", "shell"].includes(n))
        .every((n) => n.startsWith("fs__") || n.startsWith("ev__") || n.startsWith("px__")), listed);
eq(listed.includes("fs__write_file"), false, "a bare deny rule hides fs__write_file");
eq(byName.fs__read_text_file?.annotations?.readOnlyHint, true, "trusted fs: its readOnlyHint is the contract");
eq(byName.ev__echo?.annotations?.readOnlyHint, false, "untrusted ev: its annotations are not believed");
eq(byName.ev__echo?.inputSchema?.required, ["message"], "ev__echo: the downstream input schema");

// ---- calls ----
let o = await call("fs__read_text_file", { path: join(ws, "notes.txt") });
check("fs__read_text_file: not an error", !o.isError, o.result);
check("fs__read_text_file: the file's text", o.text.includes("bridged hello"), o.text);
eq(o.sc.status, "persisted", "fs__read_text_file: persisted (read-only by trusted annotations: no ask)");
const readOp = o.sc.op_id;

// a downstream error, on a tool with an outputSchema: the SDK checks the
// error envelope against the listed schema too, so that schema must allow it
o = await call("fs__read_text_file", { path: join(ws, "missing.txt") });
check("fs__read_text_file of a missing file: a result the SDK accepts", !o.thrown, o.result);
eq([o.isError, o.sc.status, o.sc.error?.kind], [true, "failed", "tool_error"],
   "fs__read_text_file of a missing file: failed, tool_error");
check("fs__read_text_file of a missing file: the server's sentence", /missing\.txt|ENOENT|no such file/i.test(o.text), o.text);

o = await call("fs__write_file", { path: join(ws, "evil.txt"), content: "x" });
eq([o.isError, o.sc.status, o.sc.error?.kind], [true, "denied", "not_permitted"], "fs__write_file: denied by the rule");
eq(existsSync(join(ws, "evil.txt")), false, "fs__write_file: nothing written");

o = await call("ev__echo", { message: "hi there" });
eq(o.result.content, [{ type: "text", text: "Echo: hi there" }], "ev__echo: the downstream content blocks pass through");
eq(o.sc.status, "persisted", "ev__echo: persisted");

o = await call("ev__echo", { message: 7 });
eq([o.isError, o.sc.status, o.sc.error?.field], [true, "invalid", "/message"],
   "ev__echo: arguments checked against its schema before forwarding");

const rows = ledger(ws);
const row = rows.find((r) => r.op_id === readOp);
eq(row?.status, "persisted", "the bridged read is in the ledger");
eq(rows.filter((r) => r.tool === "fs__write_file").map((r) => r.status), ["denied"], "the denied write is in the ledger");

// ---- a killed child comes back ----
// A client re-lists when told the list changed (as Claude and the SDKs
// do): what it sees then must already be the new list.
const relisted = [];
s.client.setNotificationHandler(ToolListChangedNotificationSchema, async () =>
  relisted.push((await names()).includes("fs__read_text_file")),
);
const fsChild = () => childrenOf(s.pid).filter((pid) => cmdline(pid).includes(FS_MAIN));
const [before] = fsChild();
check("the fs server runs as a child of serve", before > 0, childrenOf(s.pid).map(cmdline));
process.kill(before, "SIGKILL");
// the bridge sees the child's end at once; a call in the next moment is
// refused with the reason (one racing the kill may fail otherwise first):
// the tool is unavailable until the restart
const down = await until(async () => {
  const r = await call("fs__read_text_file", { path: join(ws, "notes.txt") });
  return r.isError && /not running/.test(r.text) ? r : null;
}, 3000, 20);
check("after the kill: fs__read_text_file is refused: the server is down and coming back", !!down);
eq(down?.sc.error?.applied, "no", "after the kill: the refused call did nothing");
check("after the kill: tools/list_changed reaches the client", await until(() => relisted.length > 0, 5000));
eq(relisted[0], false, "after the kill: re-listed on list_changed, the fs tools are gone");
const back = await until(async () => {
  const r = await call("fs__read_text_file", { path: join(ws, "notes.txt") });
  return r.sc.status === "persisted" ? r : null;
}, 15000, 250);
check("within 15 s the restarted fs server answers again", !!back && back.text.includes("bridged hello"), back?.result);
const [after] = fsChild();
check("a new fs process", after > 0 && after !== before, [before, after]);
check("tools/list_changed tells the client it came back", await until(() => relisted.length > 1, 5000), relisted);
eq(relisted[relisted.length - 1], true, "re-listed on that list_changed, the fs tools are back");
check("tools/list has them again", (await names()).includes("fs__read_text_file"));

// ---- a downstream server's question reaches the client, saying who asks ----
o = await call("px__ask", {});
eq(o.sc?.status, "persisted", "px__ask: the relayed elicitation was answered and the call ran");
const relayed = asked.find((m) => m.includes("Confirm?"));
check("the relayed question names the server that asks",
      !!relayed && relayed.startsWith('[the MCP server "px" asks] '), asked);
check("px__ask: the server got the client's answer", o.text.includes('answer: accept {"ok":true}'), o.text);

const r = await s.close();
check("serve stops cleanly", r.signal !== "timeout", r);
await sleep(200);
check("the bridged servers are gone", !existsSync(`/proc/${after}`) && fsChild().length === 0);
await finish();

// ---- /proc ----

function cmdline(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ");
  } catch {
    return "";
  }
}

function childrenOf(ppid) {
  const kids = [];
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      // pid (comm) state ppid ...: comm may hold spaces, so split after ")"
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === ppid) kids.push(Number(pid));
    } catch {
      /* gone meanwhile */
    }
  }
  return kids;
}
