// mcp_model_bytes.mjs — how many bytes of a `toolgate serve` tools/call
// result reach the model, in each agent client's way of rendering an MCP
// result (docs/MCP.md, "What the model reads").  No SDK: raw JSON-RPC over
// stdio, so any toolgate binary (an older one too) can be measured.
//
// How the clients hand a CallToolResult to the model (read from their
// sources and issue reports; the real-clients tests confirm them):
//   Claude Code  success: JSON.stringify(structuredContent) when present,
//                else the text of content; an error (isError): the text of
//                content
//   Codex        structuredContent serialized when present (errors too),
//                else the content array serialized as JSON
//                (codex-rs FunctionCallOutputPayload from CallToolResult)
//   Gemini CLI   success: the text of each content block; an error: one
//                sentence holding the call and the whole result as JSON
//                (packages/core/src/tools/mcp-tool.ts, isMCPToolError)
//
// Cases: read_file of a one-line file (persisted), an allowed write, a
// denied read, an invalid call, and a write that needs approval (pending,
// queued: the client offers no elicitation).
//
// Owns: a temporary workspace (deleted at the end) and the servers it
// spawns.  Must not: reach the network or touch anything outside it.
//
// usage: node bench/mcp_model_bytes.mjs TOOLGATE [TOOLGATE_BEFORE]
//        prints a Markdown table (with a before column per client when a
//        second binary is given)

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';

const [after, before] = process.argv.slice(2).map((b) => resolve(b));
if (!after) {
	console.error('usage: node bench/mcp_model_bytes.mjs TOOLGATE [TOOLGATE_BEFORE]');
	process.exit(2);
}

const cases = [
	['read_file, one-line file', 'read_file', { path: 'one.txt' }],
	['write_file, allowed', 'write_file', { path: 'out/w.txt', content: 'x\n' }],
	['read_file, denied', 'read_file', { path: 'secret.txt' }],
	['read_file, invalid', 'read_file', { path: 'one.txt', limit: 'ten' }],
	['write_file, pending', 'write_file', { path: 'w.txt', content: 'x\n' }],
];

const bytes = (s) => Buffer.byteLength(s, 'utf8');
const texts = (r) => (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text);
const clients = {
	'Claude Code': (r) =>
		!r.isError && r.structuredContent != null ? bytes(JSON.stringify(r.structuredContent))
			: texts(r).reduce((n, t) => n + bytes(t), 0),
	Codex: (r) => bytes(JSON.stringify(r.structuredContent != null ? r.structuredContent : r.content ?? [])),
	'Gemini CLI': (r, name, args) =>
		!r.isError ? texts(r).reduce((n, t) => n + bytes(t), 0)
			: bytes(`MCP tool '${name}' reported tool error for function call: ` +
				`${JSON.stringify({ name, args })} with response: ` +
				`${JSON.stringify([{ functionResponse: { name, response: r } }])}`),
};

// One server on a fresh workspace, one session as the client named
// clientName (toolgate shapes _meta by it); each case's result.
async function measure(bin, clientName) {
	const ws = mkdtempSync(join(process.env.TMPDIR ?? tmpdir(), 'tg-bytes.'));
	writeFileSync(join(ws, 'one.txt'), 'hello\n');
	writeFileSync(join(ws, 'secret.txt'), 'secret\n');
	writeFileSync(join(ws, 'toolgate.yaml'), 'permissions:\n  allow: ["write_file(./out/**)"]\n' +
		'  deny: ["read_file(./secret.txt)"]\n');
	const env = { ...process.env };
	delete env.TOOLGATE_CONFIG;
	delete env.TOOLGATE_PRINCIPAL;
	const child = spawn(bin, ['serve', '--workspace', ws, '--config', join(ws, 'toolgate.yaml')],
		{ cwd: ws, env, stdio: ['pipe', 'pipe', 'ignore'] });
	const waiting = new Map();
	createInterface({ input: child.stdout }).on('line', (line) => {
		const m = JSON.parse(line);
		if (m.id !== undefined && waiting.has(m.id)) {
			waiting.get(m.id)(m);
			waiting.delete(m.id);
		}
	});
	let next = 1;
	const rpc = (method, params) => new Promise((done) => {
		const id = next++;
		waiting.set(id, done);
		child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
	});
	await rpc('initialize', { protocolVersion: '2025-11-25', capabilities: {},
		clientInfo: { name: clientName, version: '1' } });
	child.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n');
	const out = [];
	for (const [what, name, args] of cases) {
		const m = await rpc('tools/call', { name, arguments: args });
		out.push({ what, name, args, r: m.result });
	}
	child.stdin.end();
	await new Promise((done) => child.on('exit', done));
	rmSync(ws, { recursive: true, force: true });
	return out;
}

// Gemini CLI's column from a session that says it is Gemini CLI
const session = (c) => (c === 'Gemini CLI' ? 'gemini-cli-mcp-client' : 'bytes');
const run = async (bin) => ({ bytes: await measure(bin, 'bytes'),
	'gemini-cli-mcp-client': await measure(bin, 'gemini-cli-mcp-client') });
const now = await run(after);
const then = before ? await run(before) : null;
const status = (r) => (r._meta?.['toolgate/envelope'] ?? r.structuredContent ?? {}).status;
const head = ['call', 'status', ...Object.keys(clients).map((c) => (then ? `${c} (before → after)` : c))];
console.log(`| ${head.join(' | ')} |`);
console.log(`|${head.map((h, i) => (i < 2 ? '---' : '---:')).join('|')}|`);
now.bytes.forEach((c, i) => {
	const cells = Object.entries(clients).map(([who, f]) => {
		const a = f(now[session(who)][i].r, c.name, c.args);
		return then ? `${f(then[session(who)][i].r, c.name, c.args)} → ${a}` : `${a}`;
	});
	console.log(`| ${c.what} | ${status(c.r)} | ${cells.join(' | ')} |`);
});
