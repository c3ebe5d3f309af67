// count.mjs — make bench: the tool definitions' size per profile and API,
// toolgate's token estimate (toolgate eval --sizes) beside the counts of
// OpenAI's BPE tokenizers (o200k_base, cl100k_base; gpt-tokenizer).
//
//   node count.mjs TOOLGATE
import { execFileSync } from 'node:child_process';
import { countTokens as o200k } from 'gpt-tokenizer/encoding/o200k_base';
import { countTokens as cl100k } from 'gpt-tokenizer/encoding/cl100k_base';

const bin = process.argv[2];
const run = (args) => execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
const sizes = JSON.parse(run(['eval', '--sizes', '--format', 'json']));
const pad = (s, n) => String(s).padStart(n);
console.log(`${'profile'.padEnd(10)} ${'api'.padEnd(17)} ${pad('tools', 5)} ${pad('chars', 7)} ` +
            `${pad('estimate', 8)} ${pad('o200k', 7)} ${pad('cl100k', 7)} ${pad('est/o200k', 9)}`);
for (const row of sizes) {
	if (!row.tools)
		continue;
	for (const [api, s] of Object.entries(row.apis)) {
		const text = JSON.stringify(JSON.parse(run(['tools', '--profile', row.profile, '--format', api])));
		const a = o200k(text), b = cl100k(text);
		console.log(`${row.profile.padEnd(10)} ${api.padEnd(17)} ${pad(row.tools, 5)} ${pad(s.chars, 7)} ` +
		            `${pad(s.tokens_est, 8)} ${pad(a, 7)} ${pad(b, 7)} ${pad((s.tokens_est / a).toFixed(2), 9)}`);
	}
}
