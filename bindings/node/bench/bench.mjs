// The cost of loop protection per tool call in Node: a Guard's beforeCall + afterCall pair with
// small arguments and result, against a minimal pure-JavaScript pass over the same data (sorted-key
// JSON of the arguments and of the result, and a SHA-256 of each with node:crypto), measured in
// the same process. Timing is not a test: scripts/bench-node.sh runs this and prints the figures.
//
//   node bench.mjs [--quick] [--against PACKAGE_DIR]
//
// --against loads another build of the package (a directory holding its index.cjs, e.g. an
// earlier version's installed node_modules/loopguard) and times its pair in the same rounds,
// so two builds are compared under the same load.
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { Guard } from 'loopguard';

const quick = process.argv.includes('--quick');
const N = quick ? 2_000 : 20_000;
const ROUNDS = quick ? 3 : 9;
const againstAt = process.argv.indexOf('--against');
const againstDir = againstAt > 0 ? process.argv[againstAt + 1] : undefined;
if (againstAt > 0 && !againstDir) throw new Error('--against needs a package directory');
const Other = againstDir
  ? createRequire(import.meta.url)(path.resolve(againstDir, 'index.cjs')).Guard
  : undefined;

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

const guardedBy = (G) => () => {
  const guard = new G();
  const start = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const session = `s${i % 64}`;
    const args = argsOf(i);
    guard.beforeCall(session, 'read', args);
    guard.afterCall(session, 'read', args, { result: resultOf(i) });
  }
  return Number(process.hrtime.bigint() - start) / N;
};
const guarded = guardedBy(Guard);
const other = Other && guardedBy(Other);

// Rounds alternate between the two so both see the same load; each round is timed by the
// process's CPU time (user + system, which time spent waiting for a core does not inflate) and
// by the wall clock. The ratio is of the medians, and also per round pair.
const timed = (f) => {
  const cpu0 = process.cpuUsage();
  const wall = f();
  const cpu = process.cpuUsage(cpu0);
  return { cpu: ((cpu.user + cpu.system) * 1000) / N, wall };
};
baseline();
guarded(); // warm up each
other?.();
const rounds = [];
const runs = { base: baseline, pair: guarded, other };
for (let r = 0; r < ROUNDS; r++) {
  // Every other round in the reverse order, so no build always runs first.
  const order = other ? ['base', 'pair', 'other'] : ['base', 'pair'];
  if (r % 2) order.reverse();
  const round = {};
  for (const k of order) round[k] = timed(runs[k]);
  rounds.push(round);
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const us = (ns) => (ns / 1000).toFixed(2);
const med = (k, t) => median(rounds.map((r) => r[k][t]));
const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
console.log(`${os.cpus()[0]?.model ?? 'unknown CPU'} x ${os.cpus().length}, load average ${load}`);
console.log(`node ${process.version}, ${N} calls x ${ROUNDS} rounds, interleaved; medians (CPU time / wall clock)`);
console.log(`pure-JS sorted JSON + sha256 of args and result: ${us(med('base', 'cpu'))} / ${us(med('base', 'wall'))} us/call`);
console.log(`Guard beforeCall + afterCall:                    ${us(med('pair', 'cpu'))} / ${us(med('pair', 'wall'))} us/call`);
const perRound = rounds.map((r) => (r.pair.cpu / r.base.cpu).toFixed(2)).join(' ');
console.log(`ratio guard / baseline: ${(med('pair', 'cpu') / med('base', 'cpu')).toFixed(2)} (CPU), ${(med('pair', 'wall') / med('base', 'wall')).toFixed(2)} (wall); per round (CPU): ${perRound}`);
if (other) {
  const vs = rounds.map((r) => (r.pair.cpu / r.other.cpu).toFixed(2)).join(' ');
  console.log(`the other build (${againstDir}):               ${us(med('other', 'cpu'))} / ${us(med('other', 'wall'))} us/call`);
  console.log(`ratio this build / the other: ${(med('pair', 'cpu') / med('other', 'cpu')).toFixed(3)} (CPU); per round: ${vs}`);
}
