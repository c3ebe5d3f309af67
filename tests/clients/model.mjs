#!/usr/bin/env node
// A scripted model server for the client tests (test-only): speaks the model
// APIs the real agent clients call, streaming included, and answers each
// turn with the tool calls a scenario names.
//
//   Anthropic Messages   POST /v1/messages (SSE or JSON), /v1/messages/count_tokens,
//                        GET /v1/models
//   OpenAI Responses     POST /v1/responses (SSE or JSON), GET /v1/models
//   Gemini               POST /v1beta/models/M:streamGenerateContent?alt=sse,
//                        :generateContent, :countTokens
//   anything else        404 in the API's own error shape, recorded
//
//   node model.mjs --scenario FILE --log FILE [--dump DIR] [--approve CMD]
//
// Prints "model: listening on http://127.0.0.1:PORT" once it listens (port 0:
// a free one).  Stops on SIGTERM, or when the process that started it is gone.
//
// The scenario (read again for every request, so a test may change it
// between sessions) is JSON: {"steps": [STEP, ...], "final": "text"}.  A
// STEP is {"calls": [{"tool": "read_file", "args": {...}}, ...]} and may
// carry "approve": true; a call may carry "if_offered": {ARG: VALUE}, added
// to its arguments when the client's schema for the tool has ARG.  Which step a request is at is the number of model
// turns with tool calls already in the conversation it sends, so the client's
// own side requests (titles, quota checks, classifiers: requests that offer
// none of the gate's tools) never move the script.  Past the last step the
// model answers the "final" text.  The tool named in a step is found among
// the tools the client offered: the name itself, or the one that ends in
// "__NAME" or "_NAME" and names toolgate (mcp__toolgate__read_file,
// mcp_toolgate_read_file, ...).
//
// "approve": before answering that step, CMD (--approve) runs with the text
// of the tool results the model just got on its stdin: the operator
// approving what the previous step asked for while the model waits.
//
// Every request is recorded as one JSON line in the --log file: the API, the
// step, whether it was a side request, the tools offered, and the tool
// results the model received in that request (per call: the tool, the text,
// its bytes, is_error).  --dump keeps each request's body as req-N.json.
//
// Owns: its listening socket, the log and dump files.  Must not: reach
// anything but loopback, or judge what the client did (the tests do).
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';

const opt = { port: 0 };
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i].replace(/^--/, ''), v = process.argv[i + 1];
  if (v === undefined) { console.error(`model: ${process.argv[i]} needs a value`); process.exit(2); }
  opt[k] = v;
}
if (!opt.scenario || !opt.log) {
  console.error('usage: model.mjs --scenario FILE --log FILE [--dump DIR] [--approve CMD] [--port N]');
  process.exit(2);
}
let nreq = 0;

const id = (p) => p + crypto.randomBytes(12).toString('hex');
const bytes = (v) => (typeof v === 'string' ? Buffer.byteLength(v) : Buffer.byteLength(JSON.stringify(v) ?? ''));

function scenario() {
  try { return JSON.parse(fs.readFileSync(opt.scenario, 'utf8')); }
  catch (e) { return { steps: [], final: `no scenario: ${e.message}` }; }
}

// the offered tool that stands for the gate's tool NAME (one that names
// toolgate: mcp__toolgate__read_file, mcp_toolgate_read_file, ...), or null;
// never a client's own tool of the same name (Gemini CLI has a read_file and
// a write_file of its own)
function pick(offered, name) {
  return offered.find((t) => /toolgate/.test(t) && (t.endsWith(`__${name}`) || t.endsWith(`_${name}`))) ?? null;
}
const GATE_TOOLS = ['read_file', 'write_file', 'list_dir', 'search_files', 'apply_patch', 'shell'];
const isGate = (name) => /toolgate/.test(name ?? '') || GATE_TOOLS.includes(name);

// what this request should be answered with: {side, step, calls, text}.
// offered: the tools the request defines; turns: the model turns with calls
// to the gate so far; results: the tool results it just got; deferred: the
// gate's tools the client only names (Claude Code's tool search: it lists
// MCP tools by name and loads their schemas through its ToolSearch tool).
function plan(offered, turns, results, deferred = [], props = {}) {
  const sc = scenario();
  const gate = offered.filter(isGate);
  const search = offered.includes('ToolSearch') && deferred.length > 0;
  if (gate.length === 0 && !search) return { side: true, step: null, calls: [], text: sc.side_text ?? 'ok' };
  const step = sc.steps?.[turns];
  if (!step) return { side: false, step: turns, calls: [], text: sc.final ?? 'done' };
  const missing = [...new Set(step.calls.map((c) => c.tool).filter((t) => !pick(offered, t)))];
  if (missing.length && search) { // load their schemas first, as a model would
    const names = missing.map((t) => pick(deferred, t)).filter(Boolean);
    return { side: false, step: turns, text: null, search: true,
      calls: [{ id: null, tool: 'ToolSearch', name: 'ToolSearch', args: { query: `select:${names.join(',')}` } }] };
  }
  let approved = null;
  if (step.approve && opt.approve) {
    const r = spawnSync('/bin/sh', ['-c', opt.approve], {
      input: results.map((x) => x.text).join('\n'), encoding: 'utf8', timeout: 30000,
    });
    approved = { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
  const calls = step.calls.map((c) => {
    // not offered: a name no client has, which the client refuses
    const name = pick(offered, c.tool) ?? `not_offered__toolgate__${c.tool}`, args = { ...(c.args ?? {}) };
    // "if_offered": arguments a model adds when the client's schema for the
    // tool has them (Gemini CLI adds wait_for_previous to every tool)
    for (const [k, v] of Object.entries(c.if_offered ?? {})) if (props[name]?.includes(k)) args[k] = v;
    return { id: null, tool: c.tool, name, args };
  });
  return { side: false, step: turns, calls, text: null, approved };
}

function record(entry, body) {
  fs.appendFileSync(opt.log, JSON.stringify(entry) + '\n');
  if (opt.dump) fs.writeFileSync(path.join(opt.dump, `req-${entry.n}.json`), body);
}

// ---- Anthropic Messages
function anthropicText(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content ?? '');
  return content.map((b) => (b.type === 'text' ? b.text : JSON.stringify(b))).join('');
}
function anthropic(req, res, body, json) {
  const offered = (json.tools ?? []).map((t) => t.name).filter(Boolean);
  const props = Object.fromEntries((json.tools ?? []).map((t) => [t.name, Object.keys(t.input_schema?.properties ?? {})]));
  const msgs = json.messages ?? [];
  const turns = msgs.filter((m) => m.role === 'assistant' && Array.isArray(m.content) &&
    m.content.some((b) => b.type === 'tool_use' && isGate(b.name))).length;
  const names = {};
  for (const m of msgs) if (m.role === 'assistant' && Array.isArray(m.content))
    for (const b of m.content) if (b.type === 'tool_use') names[b.id] = b.name;
  const last = msgs[msgs.length - 1];
  const results = [];
  if (last?.role === 'user' && Array.isArray(last.content))
    for (const b of last.content) if (b.type === 'tool_result')
      results.push({ id: b.tool_use_id, name: names[b.tool_use_id], text: anthropicText(b.content),
        bytes: bytes(typeof b.content === 'string' ? b.content : anthropicText(b.content)),
        is_error: !!b.is_error, raw: b.content });
  const deferred = [...new Set(body.match(/mcp__toolgate__\w+/g) ?? [])];
  const p = plan(offered, turns, results, deferred, props);
  for (const c of p.calls) c.id = id('toolu_');
  const entry = { n: ++nreq, api: 'anthropic', path: req.url, model: json.model, stream: !!json.stream,
    side: p.side, step: p.step, search: p.search, tools: offered, results, calls: p.calls, approved: p.approved };
  record(entry, body);
  const content = p.calls.length
    ? p.calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: c.args }))
    : [{ type: 'text', text: p.text }];
  const stop = p.calls.length ? 'tool_use' : 'end_turn';
  const usage = { input_tokens: Math.ceil(body.length / 4), output_tokens: 10,
    cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
  const msg = { id: id('msg_'), type: 'message', role: 'assistant', model: json.model, content,
    stop_reason: stop, stop_sequence: null, usage };
  if (!json.stream) return send(res, 200, msg);
  sse(res);
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  ev('message_start', { message: { ...msg, content: [], stop_reason: null, usage: { ...usage, output_tokens: 1 } } });
  ev('ping', {});
  content.forEach((b, index) => {
    if (b.type === 'text') {
      ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
    } else {
      ev('content_block_start', { index, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
      const j = JSON.stringify(b.input), cut = Math.floor(j.length / 2);
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: j.slice(0, cut) } });
      ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: j.slice(cut) } });
    }
    ev('content_block_stop', { index });
  });
  ev('message_delta', { delta: { stop_reason: stop, stop_sequence: null }, usage: { output_tokens: 10 } });
  ev('message_stop', {});
  res.end();
}

// ---- OpenAI Responses
function responsesText(out) {
  if (typeof out === 'string') return out;
  if (Array.isArray(out)) return out.map((p) => p.text ?? JSON.stringify(p)).join('');
  return JSON.stringify(out ?? '');
}
// the function tools a Responses request offers, those inside a namespace
// ({"type": "namespace", "name": "mcp__toolgate", "tools": [...]}, as Codex
// sends MCP tools) named NAMESPACE__TOOL; nsOf maps such a name to its parts
function toolNames(tools, nsOf = {}, props = {}) {
  const out = [];
  for (const t of tools ?? []) {
    if (t.type === 'namespace' && Array.isArray(t.tools)) {
      for (const u of t.tools) if (u.name) {
        const full = `${t.name}__${u.name}`;
        nsOf[full] = { namespace: t.name, name: u.name };
        props[full] = Object.keys(u.parameters?.properties ?? {});
        out.push(full);
      }
    } else if (t.name) {
      props[t.name] = Object.keys(t.parameters?.properties ?? {});
      out.push(t.name);
    }
  }
  return out;
}
function responses(req, res, body, json) {
  const nsOf = {}, props = {};
  const offered = toolNames(json.tools, nsOf, props);
  const input = Array.isArray(json.input) ? json.input : [];
  let turns = 0, inTurn = false;
  const names = {};
  for (const it of input) {
    const model = it.type === 'function_call' || it.type === 'reasoning' ||
      (it.type === 'message' && it.role === 'assistant');
    if (it.type === 'function_call') {
      if (it.namespace) it.name = `${it.namespace}__${it.name}`;
      names[it.call_id] = it.name;
      if (!inTurn && isGate(it.name)) turns++;
    }
    inTurn = model && (inTurn || (it.type === 'function_call' && isGate(it.name)));
    if (!model) inTurn = false;
  }
  const results = [];
  for (let i = input.length - 1; i >= 0 && input[i].type === 'function_call_output'; i--) {
    const o = input[i];
    results.unshift({ id: o.call_id, name: names[o.call_id], text: responsesText(o.output),
      bytes: bytes(typeof o.output === 'string' ? o.output : responsesText(o.output)), raw: o.output });
  }
  const p = plan(offered, turns, results, [], props);
  for (const c of p.calls) c.id = id('call_');
  const entry = { n: ++nreq, api: 'responses', path: req.url, model: json.model, stream: json.stream !== false,
    side: p.side, step: p.step, tools: offered, results, calls: p.calls, approved: p.approved };
  record(entry, body);
  const output = p.calls.length
    ? p.calls.map((c) => ({ type: 'function_call', id: id('fc_'), call_id: c.id,
      ...(nsOf[c.name] ?? { name: c.name }), arguments: JSON.stringify(c.args), status: 'completed' }))
    : [{ type: 'message', id: id('msg_'), role: 'assistant', status: 'completed',
      content: [{ type: 'output_text', text: p.text, annotations: [] }] }];
  const rid = id('resp_'), created = Math.floor(Date.now() / 1000);
  const base = { id: rid, object: 'response', created_at: created, model: json.model, output: [],
    parallel_tool_calls: true, tool_choice: 'auto', tools: [], error: null, incomplete_details: null };
  const usage = { input_tokens: Math.ceil(body.length / 4), input_tokens_details: { cached_tokens: 0 },
    output_tokens: 10, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: Math.ceil(body.length / 4) + 10 };
  const done = { ...base, status: 'completed', output, usage };
  if (json.stream === false) return send(res, 200, done);
  sse(res);
  let seq = 0;
  const ev = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`);
  ev('response.created', { response: { ...base, status: 'in_progress' } });
  ev('response.in_progress', { response: { ...base, status: 'in_progress' } });
  output.forEach((item, output_index) => {
    if (item.type === 'function_call') {
      ev('response.output_item.added', { output_index, item: { ...item, arguments: '', status: 'in_progress' } });
      ev('response.function_call_arguments.delta', { item_id: item.id, output_index, delta: item.arguments });
      ev('response.function_call_arguments.done', { item_id: item.id, output_index, arguments: item.arguments });
    } else {
      const text = item.content[0].text;
      ev('response.output_item.added', { output_index, item: { ...item, status: 'in_progress', content: [] } });
      ev('response.content_part.added', { item_id: item.id, output_index, content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] } });
      ev('response.output_text.delta', { item_id: item.id, output_index, content_index: 0, delta: text });
      ev('response.output_text.done', { item_id: item.id, output_index, content_index: 0, text });
      ev('response.content_part.done', { item_id: item.id, output_index, content_index: 0,
        part: { type: 'output_text', text, annotations: [] } });
    }
    ev('response.output_item.done', { output_index, item });
  });
  ev('response.completed', { response: done });
  res.end();
}

// ---- Gemini
function geminiSchemaFill(s) { // a value that fits a (small) response schema
  if (!s || typeof s !== 'object') return 'ok';
  if (s.enum) return s.enum.includes('user') ? 'user' : s.enum[0];
  const type = String(s.type ?? '').toLowerCase();
  if (type === 'object' || s.properties) {
    const o = {};
    for (const [k, v] of Object.entries(s.properties ?? {})) o[k] = geminiSchemaFill(v);
    return o;
  }
  if (type === 'array') return [];
  if (type === 'boolean') return false;
  if (type === 'number' || type === 'integer') return 0;
  return 'ok';
}
function gemini(req, res, body, json, model, method) {
  if (method === 'countTokens') {
    const entry = { n: ++nreq, api: 'gemini', path: req.url, side: true, method };
    record(entry, body);
    return send(res, 200, { totalTokens: Math.ceil(body.length / 4) });
  }
  const offered = [], props = {};
  for (const t of json.tools ?? []) for (const f of t.functionDeclarations ?? []) {
    offered.push(f.name);
    props[f.name] = Object.keys((f.parametersJsonSchema ?? f.parameters)?.properties ?? {});
  }
  const contents = json.contents ?? [];
  const turns = contents.filter((c) => c.role === 'model' &&
    (c.parts ?? []).some((p) => p.functionCall && isGate(p.functionCall.name))).length;
  const last = contents[contents.length - 1];
  const results = [];
  if (last?.role === 'user')
    for (const p of last.parts ?? []) if (p.functionResponse) {
      const r = p.functionResponse;
      results.push({ id: r.id, name: r.name, text: JSON.stringify(r.response ?? null),
        bytes: bytes(r.response ?? null), raw: r.response, parts: r.parts });
    }
  const gc = json.generationConfig ?? {};
  const schema = gc.responseJsonSchema ?? gc.responseSchema;
  let p;
  if (schema) p = { side: true, step: null, calls: [], text: JSON.stringify(geminiSchemaFill(schema)) };
  else p = plan(offered, turns, results, [], props);
  for (const c of p.calls) c.id = id('call_');
  const entry = { n: ++nreq, api: 'gemini', path: req.url, model, method, side: p.side, step: p.step,
    tools: offered, results, calls: p.calls, approved: p.approved };
  record(entry, body);
  const parts = p.calls.length
    ? p.calls.map((c) => ({ functionCall: { name: c.name, args: c.args } }))
    : [{ text: p.text }];
  const promptTokenCount = Math.ceil(body.length / 4);
  const chunk = (parts, finish) => ({
    candidates: [{ content: { parts, role: 'model' }, index: 0, ...(finish ? { finishReason: 'STOP' } : {}) }],
    usageMetadata: { promptTokenCount, candidatesTokenCount: 10, totalTokenCount: promptTokenCount + 10 },
    modelVersion: model, responseId: id(''),
  });
  if (method === 'generateContent') return send(res, 200, chunk(parts, true));
  sse(res);
  res.write(`data: ${JSON.stringify(chunk(parts, true))}\r\n\r\n`);
  res.end();
}

// ---- the server
function sse(res) {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', Connection: 'keep-alive' });
}
function send(res, status, obj) {
  const b = JSON.stringify(obj);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) });
  res.end(b);
}
function notFound(req, res, body) {
  record({ n: ++nreq, api: 'unknown', method: req.method, path: req.url, side: true,
    headers: { 'user-agent': req.headers['user-agent'] } }, body);
  const msg = `${req.method} ${req.url.split('?')[0]} is not served here`;
  if (req.url.startsWith('/v1beta') || req.url.startsWith('/v1alpha'))
    return send(res, 404, { error: { code: 404, message: msg, status: 'NOT_FOUND' } });
  if (req.headers['anthropic-version'] || req.headers['x-api-key'])
    return send(res, 404, { type: 'error', error: { type: 'not_found_error', message: msg } });
  return send(res, 404, { error: { message: msg, type: 'invalid_request_error', param: null, code: 'not_found' } });
}
function models(req, res, body) {
  record({ n: ++nreq, api: 'models', path: req.url, side: true }, body);
  if (req.headers['anthropic-version'] || req.headers['x-api-key'])
    return send(res, 200, { data: [{ type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5',
      created_at: '2025-09-29T00:00:00Z' }], has_more: false, first_id: 'claude-sonnet-4-5', last_id: 'claude-sonnet-4-5' });
  return send(res, 200, { object: 'list', data: [{ id: 'gpt-5', object: 'model', created: 1754000000, owned_by: 'openai' }] });
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8');
    let json = {};
    try { if (body) json = JSON.parse(body); } catch { /* not JSON: refused below */ }
    const u = new URL(req.url, 'http://x');
    try {
      if (req.method === 'GET' && /\/models\/?$/.test(u.pathname)) return models(req, res, body);
      if (req.method === 'POST' && u.pathname.endsWith('/messages/count_tokens')) {
        record({ n: ++nreq, api: 'anthropic', path: req.url, side: true }, body);
        return send(res, 200, { input_tokens: Math.ceil(body.length / 4) });
      }
      if (req.method === 'POST' && u.pathname.endsWith('/messages')) return anthropic(req, res, body, json);
      if (req.method === 'POST' && u.pathname.endsWith('/responses')) return responses(req, res, body, json);
      const g = u.pathname.match(/\/models\/([^/:]+):(streamGenerateContent|generateContent|countTokens)$/);
      if (req.method === 'POST' && g) return gemini(req, res, body, json, g[1], g[2]);
      return notFound(req, res, body);
    } catch (e) {
      console.error(`model: ${req.method} ${req.url}: ${e.stack}`);
      if (!res.headersSent) send(res, 500, { error: { message: String(e) } });
      else res.end();
    }
  });
});
server.listen(Number(opt.port), '127.0.0.1', () => {
  console.log(`model: listening on http://127.0.0.1:${server.address().port}`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
// the test that started it is gone (killed before its trap ran): stop too
const parent = process.ppid;
setInterval(() => { if (process.ppid !== parent) stop(); }, 1000).unref();
