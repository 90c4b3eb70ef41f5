// The cost of loop protection per tool call in Node: a Guard's beforeCall + afterCall pair with
// small arguments and result, against a minimal pure-JavaScript pass over the same data (sorted-key
// JSON of the arguments and of the result, and a SHA-256 of each with node:crypto), measured in
// the same process. Timing is not a test: scripts/bench-node.sh runs this and prints the figures.
//
//   node bench.mjs [--quick]
import { createHash } from 'node:crypto';
import { Guard } from 'loopguard';

const quick = process.argv.includes('--quick');
const N = quick ? 2_000 : 50_000;
const ROUNDS = quick ? 2 : 5;

function sortedJson(v) {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(sortedJson).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${sortedJson(v[k])}`)
    .join(',')}}`;
}
const sha = (text) => createHash('sha256').update(text).digest('hex');

// Varied arguments (no loop fires), the size of a typical file read.
const argsOf = (i) => ({ path: `/src/module_${i % 997}.ts`, offset: i % 50, limit: 200 });
const resultOf = (i) => ({ content: [{ type: 'text', text: `line ${i}\n`.repeat(4) }], details: { ok: true, bytes: 40 } });

function baseline() {
  let sink = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    sink += sha(sortedJson(argsOf(i))).length + sha(sortedJson(resultOf(i))).length;
  }
  if (sink === 0) throw new Error('unreachable');
  return Number(process.hrtime.bigint() - start) / N;
}

function guarded() {
  const guard = new Guard();
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const session = `s${i % 64}`;
    const args = argsOf(i);
    guard.beforeCall(session, 'read', args);
    guard.afterCall(session, 'read', args, { result: resultOf(i) });
  }
  return Number(process.hrtime.bigint() - start) / N;
}

const best = (f) => Math.min(...Array.from({ length: ROUNDS }, f));
baseline();
guarded(); // warm up both
const base = best(baseline);
const pair = best(guarded);
console.log(`node ${process.version}, ${N} calls x ${ROUNDS} rounds (best round)`);
console.log(`pure-JS sorted JSON + sha256 of args and result: ${(base / 1000).toFixed(2)} us/call`);
console.log(`Guard beforeCall + afterCall:                    ${(pair / 1000).toFixed(2)} us/call`);
console.log(`ratio guard / baseline: ${(pair / base).toFixed(2)}`);
