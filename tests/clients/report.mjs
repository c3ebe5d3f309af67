#!/usr/bin/env node
// What the model received, from model.mjs's request log (test-only).
//
//   node report.mjs results LOG        one JSON line per tool result the model
//                                      got: {step, tool, name, args, bytes,
//                                      is_error, text}, each joined to the call
//                                      it answers (by call id, else by position)
//   node report.mjs table LABEL=LOG... a Markdown table of the bytes the model
//                                      received per call, one column per log
//
// "bytes" is what the client put in the model request as the call's result:
// the UTF-8 length of the text when the API carries text (Anthropic
// tool_result content, Responses function_call_output output), the length
// of the JSON when it carries an object (Gemini functionResponse.response).
import fs from 'node:fs';

function results(file) {
  const out = [];
  let last = [];
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const e = JSON.parse(line);
    (e.results ?? []).forEach((r, i) => {
      const c = last.find((x) => x.id && x.id === r.id) ?? last[i] ?? {};
      if (c.tool === 'ToolSearch') return;
      out.push({ step: e.step === null ? null : e.step - 1, tool: c.tool ?? r.name, name: r.name ?? c.name,
        args: c.args ?? null, bytes: r.bytes, is_error: r.is_error ?? null, text: r.text });
    });
    if ((e.calls ?? []).length) last = e.calls;
  }
  return out;
}

const [cmd, ...args] = process.argv.slice(2);
if (cmd === 'results') {
  for (const r of results(args[0])) console.log(JSON.stringify(r));
} else if (cmd === 'table') {
  const cols = args.map((a) => { const i = a.indexOf('='); return [a.slice(0, i), results(a.slice(i + 1))]; });
  const key = (r) => `${r.tool} ${JSON.stringify(r.args?.path ?? r.args?.command ?? '')}`;
  const rows = [];
  for (const [, rs] of cols) for (const r of rs) {
    const k = `${r.step}. ${key(r)}`;
    if (!rows.includes(k)) rows.push(k);
  }
  rows.sort((a, b) => parseInt(a) - parseInt(b));
  console.log(`| call | ${cols.map(([l]) => l).join(' | ')} |`);
  console.log(`|---|${cols.map(() => '---:').join('|')}|`);
  for (const k of rows) {
    const cells = cols.map(([, rs]) => {
      const hits = rs.filter((r) => `${r.step}. ${key(r)}` === k).map((r) => r.bytes);
      return hits.length ? hits.join(', ') : '—';
    });
    console.log(`| ${k} | ${cells.join(' | ')} |`);
  }
} else {
  console.error('usage: report.mjs results LOG | table LABEL=LOG...');
  process.exit(2);
}
