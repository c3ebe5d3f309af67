// mcp.mjs — the MCP benchmark: `toolgate serve` against the reference
// filesystem server (@modelcontextprotocol/server-filesystem), both driven
// over stdio by the same official SDK client in the same run.
//
// For each server and round: spawn → initialized, the server's idle RSS,
// N sequential reads of the same small file (calls/s, p50, p99), the RSS
// after that load; and, to say where the time goes, the CPU the server and
// the client each spent per call and the client's floor (ping round trips).
// Medians across rounds, then the ratios against the issue's targets.  The
// workspace (and so toolgate's ledger) is kept across rounds: the first
// round creates the ledger, later ones open it, as a restarted client would.
//
// Owns: a temporary workspace (deleted at the end) and the server processes
// it spawns (each closed before the next starts).  Must not: touch anything
// outside that workspace, reach the network, or hide a failed call: every
// toolgate result must say `persisted`, every reference result must carry
// the file's bytes, or the run fails.
//
// usage: node bench/mcp.mjs [toolgate-binary] [rounds] [calls]
//        (defaults: build/toolgate, $BENCH_MCP_ROUNDS or 5, $BENCH_MCP_CALLS or 1000)
// Skips with a message and exit 0 when the npm packages are not installed
// (scripts/install-node-deps puts them in tests/mcp/node_modules).

import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const modules = join(root, 'tests/mcp/node_modules');
const sdkDir = join(modules, '@modelcontextprotocol/sdk');
const fsDir = join(modules, '@modelcontextprotocol/server-filesystem');

if (!existsSync(join(sdkDir, 'package.json')) || !existsSync(join(fsDir, 'package.json'))) {
	console.log('SKIPPED: the MCP benchmark needs @modelcontextprotocol/sdk and ' +
		'@modelcontextprotocol/server-filesystem in tests/mcp/node_modules ' +
		'(run scripts/install-node-deps); no MCP figures this run');
	process.exit(0);
}

const require = createRequire(join(modules, 'bench.cjs'));
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport, getDefaultEnvironment } =
	require('@modelcontextprotocol/sdk/client/stdio.js');

const toolgate = resolve(process.argv[2] || join(root, 'build/toolgate'));
const rounds = positive(process.argv[3] || process.env.BENCH_MCP_ROUNDS || '5', 'rounds');
const calls = positive(process.argv[4] || process.env.BENCH_MCP_CALLS || '1000', 'calls');
const PINGS = 200;
const STDERR_CAP = 16384;

function positive(s, what) {
	const n = Number(s);
	if (!Number.isInteger(n) || n < 1)
		fail(`"${s}" is not a positive whole number of ${what}`);
	return n;
}

function fail(msg) {
	console.error(`bench/mcp: ${msg}`);
	process.exit(1);
}

function version(dir) {
	return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version;
}

/* A memory figure of a live process (VmRSS, RssAnon, ...), in MiB (Linux /proc). */
function memMiB(pid, field) {
	const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
	if (!m)
		throw new Error(`process ${pid} has no ${field}`);
	return Number(m[1]) / 1024;
}

/* CPU time (user + system, every thread, live or ended) a live process has
 * used, in ms; /proc counts it in USER_HZ ticks, which Linux fixes at 100. */
function cpuMs(pid) {
	const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
	const f = stat.slice(stat.lastIndexOf(')') + 2).split(' '); /* f[0] is field 3 */
	return (Number(f[11]) + Number(f[12])) * 10;
}

function percentile(sorted, p) {
	return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
}

function median(xs) {
	const s = [...xs].sort((a, b) => a - b);
	const m = s.length >> 1;
	return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/* ---- the workspace: one small file, the same bytes for both servers ---- */

const ws = mkdtempSync(join(tmpdir(), 'toolgate-bench-mcp-'));
const lines = [];
for (let i = 1; i <= 20; i++)
	lines.push(`line ${i} of a small file read through the gate`);
const smallText = lines.join('\n') + '\n';
writeFileSync(join(ws, 'small.txt'), smallText);
/* The same read a thousand times in one session is exactly what loop
 * detection stops (at the 5th); everything else stays at its default. */
writeFileSync(join(ws, 'toolgate.yaml'), 'loop_detection: {enabled: false}\n');

/* Both children get the SDK's default environment (PATH, HOME, ...) and run
 * in the workspace; toolgate reads the toolgate.yaml there: built-in
 * defaults (profile coding, mode default: read_file is allowed) but for
 * loop detection. */
const servers = [
	{
		name: 'toolgate serve',
		command: toolgate,
		args: ['serve', '--workspace', ws, '--config', join(ws, 'toolgate.yaml')],
		tool: 'read_file',
		arguments: { path: 'small.txt' },
		/* the gate's own time for the call (decode up to the ledger write), from the envelope */
		serverMs: (r) => r._meta['toolgate/envelope'].duration_ms,
		check(r) {
			const env = r._meta && r._meta['toolgate/envelope'];
			const status = env && env.status;
			if (r.isError || status !== 'persisted')
				return `status ${JSON.stringify(status)}${r.isError ? ', isError' : ''}`;
			const text = r.content && r.content[0] && r.content[0].text;
			if (typeof text !== 'string' || !text.includes(lines[19]))
				return 'the content does not hold the file\'s last line';
			return null;
		},
	},
	{
		name: `server-filesystem ${version(fsDir)}`,
		command: process.execPath,
		args: [join(fsDir, 'dist/index.js'), ws],
		tool: 'read_text_file',
		arguments: { path: join(ws, 'small.txt') },
		check(r) {
			const text = r.content && r.content[0] && r.content[0].text;
			if (r.isError)
				return 'isError';
			if (text !== smallText)
				return 'the content is not the file\'s bytes';
			return null;
		},
	},
];

/* One round against one server: spawn, measure, close.  Returns the figures. */
async function measure(s) {
	const env = getDefaultEnvironment();
	delete env.TOOLGATE_CONFIG;
	const transport = new StdioClientTransport({
		command: s.command, args: s.args, cwd: ws, env, stderr: 'pipe',
	});
	let stderr = '';
	transport.stderr.on('data', (d) => {
		if (stderr.length < STDERR_CAP)
			stderr += d.toString('utf8').slice(0, STDERR_CAP - stderr.length);
	});
	const client = new Client({ name: 'toolgate-bench', version: '1.0.0' }, { capabilities: {} });
	const why = (e) => `${s.name}: ${e.message || e}${stderr ? `\n  its stderr: ${stderr.trim()}` : ''}`;

	try {
		const t0 = performance.now();
		await client.connect(transport);
		const startMs = performance.now() - t0;
		const pid = transport.pid;
		const idleMiB = memMiB(pid, 'VmRSS');

		const { tools } = await client.listTools();
		if (!tools.some((t) => t.name === s.tool))
			throw new Error(`tools/list has no "${s.tool}"`);

		const lat = new Float64Array(calls);
		const own = s.serverMs ? new Float64Array(calls) : null;
		const l0 = performance.now();
		const serverCpu0 = cpuMs(pid);
		const clientCpu0 = process.cpuUsage();
		for (let i = 0; i < calls; i++) {
			const t = performance.now();
			const r = await client.callTool({ name: s.tool, arguments: s.arguments });
			lat[i] = performance.now() - t;
			const bad = s.check(r);
			if (bad)
				throw new Error(`call ${i + 1} of ${s.tool}: ${bad}`);
			if (own)
				own[i] = s.serverMs(r);
		}
		const loadMs = performance.now() - l0;
		const serverCpu = cpuMs(pid) - serverCpu0;
		const clientCpu = process.cpuUsage(clientCpu0);
		const loadMiB = memMiB(pid, 'VmRSS');
		const anonMiB = memMiB(pid, 'RssAnon');

		const pings = new Float64Array(PINGS);
		for (let i = 0; i < PINGS; i++) {
			const t = performance.now();
			await client.ping();
			pings[i] = performance.now() - t;
		}
		lat.sort();
		pings.sort();
		own?.sort();
		return {
			startMs,
			idleMiB,
			loadMiB,
			anonMiB,
			rate: calls / (loadMs / 1000),
			p50: percentile(lat, 0.50),
			p99: percentile(lat, 0.99),
			ping: percentile(pings, 0.50),
			serverCpu: serverCpu / calls,
			clientCpu: (clientCpu.user + clientCpu.system) / 1000 / calls,
			own: own ? percentile(own, 0.50) : undefined,
		};
	} catch (e) {
		throw new Error(why(e));
	} finally {
		await client.close(); /* closes stdin, then SIGTERM, then SIGKILL; waits for the exit */
	}
}

/* ---- the run: rounds alternate which server goes first ---- */

const results = servers.map(() => []);
try {
	for (let r = 0; r < rounds; r++) {
		const order = r % 2 ? [1, 0] : [0, 1];
		for (const i of order)
			results[i].push(await measure(servers[i]));
	}
} catch (e) {
	rmSync(ws, { recursive: true, force: true });
	fail(e.message);
}
rmSync(ws, { recursive: true, force: true });

/* ---- report ---- */

const rows = [
	['spawn → initialized, ms', 'startMs', 1],
	[`calls/s (${calls} sequential)`, 'rate', 0],
	['p50 per call, ms', 'p50', 3],
	['p99 per call, ms', 'p99', 3],
	['server CPU per call, ms', 'serverCpu', 3],
	['  gate\'s duration_ms p50', 'own', 3],
	['client CPU per call, ms', 'clientCpu', 3],
	['ping round trip p50, ms', 'ping', 3],
	['idle RSS, MiB', 'idleMiB', 1],
	['RSS after the calls, MiB', 'loadMiB', 1],
	['  of which anonymous, MiB', 'anonMiB', 1],
];
const fmt = (x, d) => x.toLocaleString('en-US', { minimumFractionDigits: d, maximumFractionDigits: d });
const cell = (rs, key, d) => {
	const xs = rs.map((x) => x[key]);
	if (xs.some((x) => x === undefined))
		return '—';
	return `${fmt(median(xs), d)} [${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)}]`;
};
const med = (i, key) => median(results[i].map((x) => x[key]));

console.log(`${rounds} rounds × ${calls} calls, stdio, same client: @modelcontextprotocol/sdk ` +
	`${version(sdkDir)} on node ${process.version}; medians [min–max]`);
console.log(`toolgate: ${servers[0].tool} ${JSON.stringify(servers[0].arguments)}; ` +
	`reference: ${servers[1].tool} on the same file, run as node dist/index.js`);
const w0 = Math.max(...rows.map((r) => r[0].length));
const cells = rows.map(([, key, d]) => results.map((rs) => cell(rs, key, d)));
const w1 = Math.max(servers[0].name.length, ...cells.map((c) => c[0].length));
console.log(`${''.padEnd(w0)}  ${servers[0].name.padEnd(w1)}  ${servers[1].name}`);
rows.forEach(([label], j) => console.log(`${label.padEnd(w0)}  ${cells[j][0].padEnd(w1)}  ${cells[j][1]}`));

/* a "more is better" ratio as N×, a "less is better" one as 1/N */
const times = (x) => `${x.toFixed(2)}×`;
const fraction = (x) => `1/${(1 / x).toFixed(1)}`;
const targets = [
	['calls/s', med(0, 'rate') / med(1, 'rate'), times, (x) => x >= 5, '≥ 5×'],
	['start time', med(0, 'startMs') / med(1, 'startMs'), fraction, (x) => x <= 1 / 20, '≤ 1/20'],
	['idle RSS', med(0, 'idleMiB') / med(1, 'idleMiB'), fraction, (x) => x <= 1 / 10, '≤ 1/10'],
	['RSS after the calls', med(0, 'loadMiB') / med(1, 'loadMiB'), fraction, (x) => x <= 1 / 10, '≤ 1/10'],
];
console.log('\ntoolgate against the reference, from the medians:');
for (const [what, x, show, ok, target] of targets)
	console.log(`  ${what.padEnd(20)} ${show(x).padStart(7)}   target ${target}: ${ok(x) ? 'met' : 'MISSED'}`);
