#!/usr/bin/env node
// A tap on the MCP traffic between a client and toolgate (test-only; the
// client tests put it in the path when CLIENTS_TRACE=1, to see what each
// client sends: capabilities, _meta, answers to elicitation/create).
//
//   node tap.mjs --log FILE -- COMMAND ARGS...       stdio: runs COMMAND, passes
//                                                    each line both ways
//   node tap.mjs --log FILE --target URL             HTTP: a reverse proxy on a
//                                                    free loopback port (printed
//                                                    as "tap: listening on URL")
//
// Each JSON-RPC message is one JSON line in FILE: {t, dir: "c2s"|"s2c", msg}
// (HTTP: also the method, status and headers of each exchange).  Bytes pass
// through unchanged, whatever they are.
//
// Owns: the child's pipes, its listening socket, FILE.  Must not: change a
// byte of the traffic, or listen anywhere but loopback.
import fs from 'node:fs';
import http from 'node:http';
import { spawn } from 'node:child_process';

const argv = process.argv.slice(2);
const opt = {};
while (argv.length && argv[0] !== '--') { const k = argv.shift().replace(/^--/, ''); opt[k] = argv.shift(); }
argv.shift();
const log = (o) => fs.appendFileSync(opt.log, JSON.stringify({ t: Date.now(), ...o }) + '\n');
const logLine = (dir, line) => {
  if (!line.trim()) return;
  let msg; try { msg = JSON.parse(line); } catch { msg = { raw: line }; }
  log({ dir, msg });
};
// splits a stream into lines, calling f on each complete one
function lines(f) {
  let buf = '';
  return (chunk) => {
    buf += chunk.toString('utf8');
    let i;
    while ((i = buf.indexOf('\n')) >= 0) { f(buf.slice(0, i)); buf = buf.slice(i + 1); }
  };
}

if (!opt.target) {
  const child = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  process.stdin.on('data', lines((l) => logLine('c2s', l)));
  process.stdin.pipe(child.stdin);
  child.stdout.on('data', lines((l) => logLine('s2c', l)));
  child.stdout.pipe(process.stdout);
  child.on('exit', (code, sig) => { log({ exit: code, signal: sig }); process.exit(code ?? 1); });
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(s, () => child.kill(s));
} else {
  const target = new URL(opt.target);
  const server = http.createServer((req, res) => {
    const body = [];
    req.on('data', (c) => body.push(c));
    req.on('end', () => {
      const b = Buffer.concat(body);
      const hdr = { ...req.headers };
      if (hdr.authorization) hdr.authorization = hdr.authorization.replace(/ .*/, ' «token»');
      log({ dir: 'c2s', http: req.method, headers: hdr });
      if (b.length) logLine('c2s', b.toString('utf8'));
      const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method,
        headers: { ...req.headers, host: target.host } }, (ur) => {
        log({ dir: 's2c', status: ur.statusCode, headers: ur.headers });
        res.writeHead(ur.statusCode, ur.rawHeaders);
        const sse = /event-stream/.test(ur.headers['content-type'] ?? '');
        ur.on('data', sse ? lines((l) => { if (l.startsWith('data:')) logLine('s2c', l.slice(5)); })
          : (() => { const all = []; ur.on('end', () => logLine('s2c', Buffer.concat(all).toString('utf8'))); return (c) => all.push(c); })());
        ur.pipe(res);
      });
      up.on('error', (e) => { log({ error: String(e) }); res.writeHead(502); res.end(); });
      up.end(b);
    });
  });
  server.listen(0, '127.0.0.1', () => console.log(`tap: listening on http://127.0.0.1:${server.address().port}`));
  const parent = process.ppid;
  setInterval(() => { if (process.ppid !== parent) process.exit(0); }, 1000).unref();
  process.on('SIGTERM', () => process.exit(0));
}
