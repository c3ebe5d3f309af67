// pin-server.mjs — a tiny MCP server (stdio, the official SDK) for the
// bridge's tests: its `greet` tool's description is read from the file
// named by its first argument at every tools/list, so a test can change
// the description under a running bridge (description pinning), and a
// few tools reach the bridge's other paths.
//
//   greet {name}           "hello NAME" (the description under test)
//   reload {}              send notifications/tools/list_changed (the next
//                          tools/list reads the description again)
//   fail {}                a result with isError: true
//   slow {ms}              sleeps ms, sending progress when asked for it
//   ask {}                 relays an elicitation/create to the bridge's client
//   tell {text}            logs text (notifications/message), then returns it
//
// Owns: nothing outside its process.  Must not: read or write anything
// but the description file.
import { readFileSync } from "node:fs";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
	CallToolRequestSchema,
	ListToolsRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";

const descFile = process.argv[2];
if (!descFile) {
	process.stderr.write("usage: pin-server.mjs DESCRIPTION_FILE\n");
	process.exit(2);
}

const server = new Server(
	{ name: "pin-server", version: "1.0.0" },
	{ capabilities: { tools: { listChanged: true }, logging: {} } },
);

const obj = (properties, required = []) => ({ type: "object", properties, required });

server.setRequestHandler(ListToolsRequestSchema, async () => ({
	tools: [
		{
			name: "greet",
			description: readFileSync(descFile, "utf8").trim(),
			inputSchema: obj({ name: { type: "string" } }, ["name"]),
			annotations: { readOnlyHint: true },
		},
		{ name: "reload", description: "Announce that the tool list changed.", inputSchema: obj({}) },
		{ name: "fail", description: "Fail with a tool error.", inputSchema: obj({}) },
		{
			name: "slow",
			description: "Sleep, reporting progress.",
			inputSchema: obj({ ms: { type: "integer", minimum: 0, maximum: 60000 } }, ["ms"]),
		},
		{ name: "ask", description: "Ask the user to confirm.", inputSchema: obj({}) },
		{ name: "tell", description: "Log a line.", inputSchema: obj({ text: { type: "string" } }, ["text"]) },
	],
}));

const text = (t, isError = false) => ({ content: [{ type: "text", text: t }], isError });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
	const args = req.params.arguments ?? {};
	switch (req.params.name) {
	case "greet":
		return text(`hello ${args.name}`);
	case "reload":
		await server.sendToolListChanged();
		return text("reloaded");
	case "fail":
		return text("the pin server failed on purpose", true);
	case "slow": {
		const token = req.params._meta?.progressToken;
		const steps = 4;
		for (let i = 1; i <= steps; i++) {
			await sleep(args.ms / steps);
			if (extra.signal.aborted)
				return text("cancelled", true);
			if (token !== undefined)
				await extra.sendNotification({
					method: "notifications/progress",
					params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
				});
		}
		return text(`slept ${args.ms} ms`);
	}
	case "ask": {
		const r = await server.elicitInput({
			message: "Confirm?",
			requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
		});
		return text(`answer: ${r.action}${r.content ? " " + JSON.stringify(r.content) : ""}`);
	}
	case "tell":
		await server.sendLoggingMessage({ level: "info", logger: "pin-server", data: args.text });
		return text(args.text);
	default:
		return text(`no tool ${req.params.name}`, true);
	}
});

await server.connect(new StdioServerTransport());
