// The reference figure for bench/validate.c: ajv 8 + ajv-formats on the same
// fixtures, formats asserted, compiled once; validate-only (already parsed)
// and JSON.parse + validate; median of rounds.  Run by scripts/bench.
//   node bench.js SCHEMA VALID INVALID
'use strict';
const fs = require('fs');
const Ajv2020 = require('ajv/dist/2020');
const addFormats = require('ajv-formats');
const [schemaPath, validPath, invalidPath] = process.argv.slice(2);
const seconds = Number(process.env.BENCH_SECONDS || 2);
const rounds = Number(process.env.BENCH_ROUNDS || 5);

const ajv = new Ajv2020({strict: false});
addFormats(ajv);
const validate = ajv.compile(JSON.parse(fs.readFileSync(schemaPath, 'utf8')));
const text = fs.readFileSync(validPath, 'utf8');
const valid = JSON.parse(text);
if (!validate(valid)) throw new Error('the valid document fails: ' + JSON.stringify(validate.errors));
if (validate(JSON.parse(fs.readFileSync(invalidPath, 'utf8')))) throw new Error('the invalid document passes');

function run(parse) {
  let done = 0, ok = 0, t;
  const t0 = process.hrtime.bigint();
  do {
    for (let i = 0; i < 1024; i++) ok += parse ? validate(JSON.parse(text)) : validate(valid);
    done += 1024;
    t = Number(process.hrtime.bigint() - t0) / 1e9;
  } while (t < seconds);
  if (ok !== done) throw new Error('a valid document failed');
  return done / t;
}
const median = (v) => v.sort((a, b) => a - b)[v.length >> 1];
const only = [], both = [];
for (let r = 0; r < rounds; r++) { only.push(run(false)); both.push(run(true)); }
console.log('ajv_validate_only_per_s ' + Math.round(median(only)));
console.log('ajv_parse_validate_per_s ' + Math.round(median(both)));
