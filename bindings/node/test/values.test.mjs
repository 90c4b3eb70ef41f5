// JavaScript values: every one gets the hash OpenClaw's own serialiser gives it, or a TypeError
// naming the path. The reference below is written from the behaviour reference's description of
// OpenClaw's stableStringify (sorted keys, "[Circular]" on the recursion stack only, NaN and
// Infinity as strings, bigint digits, Error and Uint8Array shapes, lone surrogates dropped).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { Guard, EventError, toEventJson } from 'loopguard';

const LONE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const clean = (s) => s.replace(LONE, '');

function reference(v, stack = new Set()) {
  if (v === null) return 'null';
  if (v === undefined) return 'undefined';
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? JSON.stringify(v) : JSON.stringify(String(v));
    case 'bigint':
      return JSON.stringify(v.toString());
    case 'string':
      return JSON.stringify(clean(v));
    case 'boolean':
      return String(v);
    case 'function':
    case 'symbol':
      return 'null';
    default:
  }
  if (stack.has(v)) return '"[Circular]"';
  stack.add(v);
  try {
    if (Array.isArray(v)) return `[${Array.from(v, (x) => reference(x, stack)).join(',')}]`;
    if (v instanceof Error) return reference({ message: v.message, name: v.name, stack: v.stack }, stack);
    if (v instanceof Uint8Array) {
      return reference({ data: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64'), type: 'Uint8Array' }, stack);
    }
    const keys = Object.keys(v).sort();
    return `{${keys.map((k) => `${JSON.stringify(clean(k))}:${reference(v[k], stack)}`).join(',')}}`;
  } finally {
    stack.delete(v);
  }
}

const sha = (text) => createHash('sha256').update(text, 'utf8').digest('hex');
const argsHash = (tool, args) => `${tool}:${sha(reference(args))}`;

let n = 0;
const guard = new Guard();
const hashOf = (args) => guard.beforeCall(`values-${n++}`, 'tool', args).argsHash;

function cyclic() {
  const shared = { value: 1 };
  const root = { second: shared, first: shared };
  root.self = root;
  return root;
}
function cyclicArray() {
  const shared = { value: 'same' };
  const a = [shared, shared];
  a.push(a);
  return a;
}
function error() {
  const e = new Error('boom');
  e.stack = 'Error: boom\n    at test';
  return e;
}

const cases = {
  'numbers: -0, 1e21, 2^53+1, the smallest double, 1e-7': { z: -0, a: 1e21, b: 1.5, c: 2 ** 53 + 1, d: 5e-324, e: 1e-7, f: 100 },
  'NaN and the infinities': { n: NaN, i: Infinity, m: -Infinity },
  'bigint': { big: 123n, neg: -9007199254740993n },
  'Date, Map and Set (their own enumerable keys: none)': { when: new Date(0), m: new Map([[1, 2]]), s: new Set([1]) },
  'a cycle and a shared object': cyclic(),
  'an array holding itself and a shared object twice': { list: cyclicArray() },
  'Error': { e: error() },
  'Uint8Array and Buffer': { bytes: new Uint8Array([1, 2, 3]), buf: Buffer.from('hi') },
  'functions and symbols as values': { f() {}, s: Symbol('x'), arrow: () => 1 },
  'keys sorted by UTF-16 code units (emoji before U+E000)': { '\u{1F600}': 1, '\uE000': 2, a: 3, B: 4 },
  'lone surrogates dropped when hashing': { ['key\uD800']: 'name', high: 'left\uD800right', low: 'left\uDC00right', valid: 'emoji \u{1F648} ok' },
  'nested objects in any key order': { b: { d: 4, c: 3 }, a: [{ y: 1, x: 2 }, null, true, 'x'] },
  'a typed array other than Uint8Array (index keys)': { t: new Int16Array([5, -6]) },
  'an object without a prototype, symbol keys ignored': Object.assign(Object.create(null), { k: 1, [Symbol('s')]: 2 }),
  'a class instance (own fields only)': new (class P { constructor() { this.x = 1; } get y() { return 2; } })(),
  'top-level string': 'just text',
  'top-level number': 42,
  'top-level array': [3, 2, 1],
};

for (const [name, args] of Object.entries(cases)) {
  test(`argsHash as OpenClaw: ${name}`, () => {
    assert.equal(hashOf(args), argsHash('tool', args), toEventJson(args, 'args'));
  });
}

test('the golden outputs of the reference serialiser', () => {
  assert.equal(reference({ b: { d: 4, c: 3 }, a: 1 }), '{"a":1,"b":{"c":3,"d":4}}');
  assert.equal(reference(cyclic()), '{"first":{"value":1},"second":{"value":1},"self":"[Circular]"}');
  assert.equal(reference(cyclicArray()), '[{"value":"same"},{"value":"same"},"[Circular]"]');
});

test('undefined, holes, and other values JSON cannot carry are TypeErrors naming the path', () => {
  const cases = [
    [{ a: undefined }, /^args\["a"\]: undefined/],
    [{ list: [1, , 3] }, /^args\["list"\]\[1\]: a hole/], // eslint-disable-line no-sparse-arrays
    [[undefined], /^args\[0\]: undefined/],
    [undefined, /^args: undefined/],
    [{ deep: { er: { x: undefined } } }, /^args\["deep"\]\["er"\]\["x"\]/],
  ];
  for (const [args, pattern] of cases) {
    assert.throws(() => guard.beforeCall('errors', 'tool', args), (e) => e instanceof TypeError && pattern.test(e.message), String(pattern));
  }
  assert.throws(() => guard.beforeCall(1, 'tool', {}), /session: expected a string/);
  assert.throws(() => guard.beforeCall('s', null, {}), /tool: expected a string/);
  let deep = {};
  for (let i = 0; i < 3000; i++) deep = { d: deep };
  // Too deep for the engine (2048 levels): refused, whichever side notices first.
  assert.throws(() => guard.beforeCall('s', 'tool', deep), /nest(ed|ing) deeper than/);
  // No state was touched by the refused calls.
  assert.equal(guard.session('errors'), null);
});

test('thrown values are formatted as OpenClaw formats them, then hashed', () => {
  const g = new Guard();
  const errorHash = (error) => g.afterCall(`e-${n++}`, 'tool', {}, { error }).resultHash;
  assert.equal(errorHash(new Error('boom')), `error:${sha(JSON.stringify('boom'))}`);
  const unnamed = new TypeError('');
  assert.equal(errorHash(unnamed), `error:${sha(JSON.stringify('TypeError'))}`);
  assert.equal(errorHash('plain'), `error:${sha(JSON.stringify('plain'))}`);
  assert.equal(errorHash(42), `error:${sha(JSON.stringify('42'))}`);
  assert.equal(errorHash(42n), `error:${sha(JSON.stringify('42'))}`);
  assert.equal(errorHash({ code: 1, b: [2] }), `error:${sha(JSON.stringify(reference({ code: 1, b: [2] })))}`);
});

test('a result of undefined records nothing, as in OpenClaw', () => {
  const g = new Guard();
  g.beforeCall('u', 'tool', { a: 1 });
  const d = g.afterCall('u', 'tool', { a: 1 }, { result: undefined });
  assert.equal(d.action, 'recorded');
  assert.equal(d.resultHash, null);
  assert.equal(g.session('u').outcomes, 0);
  assert.throws(() => g.afterCall('u', 'tool', {}, { result: 1, error: 'x' }), /either result or error/);
});

test('a malformed event is an EventError naming the field', () => {
  assert.throws(
    () => guard.event({ type: 'outcome', tool: 'x' }),
    (e) => e instanceof EventError && e.field === 'result' && /result/.test(e.message),
  );
  assert.throws(() => guard.event({ type: 'nope' }), (e) => e instanceof EventError && e.field === 'type');
  assert.throws(() => guard.event('not json'), EventError);
});

// afterCall lets the engine reuse the digest of the guard's last beforeCall when the tool and
// the arguments' JSON are that call's (lib/index.cjs, src/lib.rs SAME_ARGS): every other case
// must hash the outcome's own arguments, as a guard that never saw the call does.
test("afterCall reuses its call's argument digest only for the same tool and arguments", () => {
  const fresh = (tool, args) => new Guard().afterCall('s', tool, args, { result: 1 }).argsHash;
  const g = new Guard();
  const h = new Guard();

  // The arguments changed between the call and the outcome (a tool that edits its input).
  const args = { path: '/a', n: 1 };
  assert.equal(g.beforeCall('s', 'read', args).argsHash, fresh('read', args));
  args.n = 2;
  const sha = (v) => createHash('sha256').update(reference(v)).digest('hex');
  assert.equal(g.afterCall('s', 'read', args, { result: 1 }).argsHash, `read:${sha(args)}`);

  // The same arguments under another tool: update_plan hashes a plan's shape, not its text.
  const plan = { plan: [{ step: 'a', status: 'pending' }] };
  g.beforeCall('s', 'read', plan);
  const planHash = g.afterCall('s', 'update_plan', plan, { result: 1 }).argsHash;
  assert.equal(planHash, fresh('update_plan', plan));
  assert.notEqual(planHash.slice('update_plan:'.length), sha(plan));

  // Another guard's call in between (one engine per guard, one cache per thread).
  g.beforeCall('s', 'read', { x: 1 });
  h.beforeCall('s', 'read', { x: 2 });
  assert.equal(g.afterCall('s', 'read', { x: 1 }, { result: 1 }).argsHash, `read:${sha({ x: 1 })}`);
  assert.equal(h.afterCall('s', 'read', { x: 2 }, { result: 1 }).argsHash, `read:${sha({ x: 2 })}`);

  // A call that failed leaves nothing to reuse; the outcome is hashed from its own arguments.
  g.beforeCall('s', 'read', { y: 1 });
  assert.throws(() => g.beforeCall('s', 'read', { y: undefined }), TypeError);
  assert.equal(g.afterCall('s', 'read', { y: 1 }, { result: 1 }).argsHash, `read:${sha({ y: 1 })}`);

  // Through a loop, the decisions are those of event objects applied one by one.
  const fast = new Guard();
  const slow = new Guard();
  const seen = new Set();
  for (let i = 0; i < 25; i++) {
    const a = { path: '/loop' };
    const before = fast.beforeCall('loop', 'read', a);
    const beforeRef = slow.event({ type: 'call', session: 'loop', tool: 'read', args: a });
    assert.equal(before.action, beforeRef.decision, `call ${i}`);
    const after = fast.afterCall('loop', 'read', a, { result: 'same' });
    const afterRef = slow.event({ type: 'outcome', session: 'loop', tool: 'read', args: a, result: 'same' });
    assert.equal(after.action, afterRef.decision, `outcome ${i}`);
    assert.equal(after.argsHash, afterRef.argsHash, `outcome ${i}`);
    seen.add(before.action).add(after.action);
  }
  assert.deepEqual([...seen].sort(), ['allow', 'block', 'ignored', 'recorded', 'warn']);
});

// afterCall does not write flat arguments to JSON again when they hold the keys and values its
// call's had (lib/convert.cjs, sameFlat): each change below must be seen, and the outcome's
// digest must be the one its own arguments give.
test('afterCall sees every change to flat arguments since beforeCall', () => {
  const fresh = (args) => new Guard().afterCall('s', 'read', args, { result: 1 }).argsHash;
  const changes = [
    ['a value changed', (a) => (a.n = 2)],
    ['a key added', (a) => (a.z = 1)],
    ['a key deleted', (a) => delete a.n],
    ['keys reordered', (a) => (delete a.path, (a.path = '/a'))],
    ['a value made an object', (a) => (a.n = { n: 1 })],
    ['a value made NaN', (a) => (a.n = NaN)],
    ['a value made -0', (a) => (a.n = -0)],
    ['a value made a string', (a) => (a.n = '1')],
    ['the prototype changed', (a) => Object.setPrototypeOf(a, { inherited: 1 })],
    ['a getter', (a) => Object.defineProperty(a, 'n', { get: () => 5, enumerable: true })],
    ['nothing', () => {}],
  ];
  for (const [what, change] of changes) {
    const g = new Guard();
    const args = { path: '/a', n: 1, ok: true, none: null };
    g.beforeCall('s', 'read', args);
    change(args);
    let expected;
    try {
      expected = fresh(args);
    } catch (e) {
      assert.throws(() => g.afterCall('s', 'read', args, { result: 1 }), e.constructor, what);
      continue;
    }
    assert.equal(g.afterCall('s', 'read', args, { result: 1 }).argsHash, expected, what);
  }
  // Another object with the same keys and values has the same JSON, and the same digest.
  const g = new Guard();
  g.beforeCall('s', 'read', { path: '/b', n: 1 });
  assert.equal(g.afterCall('s', 'read', { path: '/b', n: 1 }, { result: 1 }).argsHash, fresh({ path: '/b', n: 1 }));
});

// beforeCall and afterCall hand most lines to the addon through a buffer of 64 KiB (the inbox,
// lib/index.cjs) and longer ones as a string (src/lib.rs, decide_inbox and decide): both roads,
// and lines near the inbox's size in both encodings' worst cases, give OpenClaw's digests and
// the decisions of event objects applied one by one.
test('lines that fit the inbox and lines that do not hash alike', () => {
  const sizes = [
    ['ASCII, small', 'x', 10],
    ['ASCII, just under the inbox', 'x', 65_000],
    ['ASCII, over the inbox', 'x', 70_000],
    ['three-byte characters, under the bound of the inbox', '\u20AC', 21_000],
    ['three-byte characters, over the inbox', '\u20AC', 25_000],
    ['four-byte characters (two UTF-16 units each), around the inbox', '\u{1F600}', 16_000],
    ['a lone surrogate among three-byte characters', '\u20AC\uD800', 11_000],
  ];
  const fast = new Guard();
  const slow = new Guard();
  for (const [what, unit, n] of sizes) {
    const args = { text: unit.repeat(n), n };
    const result = { content: [{ type: 'text', text: `${unit.repeat(n)}\n` }], details: { n } };
    const before = fast.beforeCall(what, 'write', args);
    assert.equal(before.argsHash, argsHash('write', args), what);
    const beforeRef = slow.event({ type: 'call', session: what, tool: 'write', args });
    assert.equal(before.action, beforeRef.decision, what);
    const after = fast.afterCall(what, 'write', args, { result });
    const afterRef = slow.event({ type: 'outcome', session: what, tool: 'write', args, result });
    assert.deepEqual([after.argsHash, after.resultHash], [afterRef.argsHash, afterRef.resultHash], what);
  }
});

// The ids (session, tool, run, callId, agent) are written quoted as they are when nothing in
// them needs an escape, else by JSON.stringify (lib/convert.cjs, idField): each kind below must
// reach the engine as the same string an event object carries, and come back unchanged.
test('ids that need escapes and ids that do not reach the engine alike', () => {
  const ids = ['plain-id', 'a "quoted" id', 'back\\slash', 'tab\tand\nnewline', '\u0001', 'lone \uD800 high',
    'lone \uDC00 low', 'emoji \u{1F600}', 'line\u2028separator', 'caf\u00E9', ''];
  const fast = new Guard();
  const slow = new Guard();
  for (const id of ids) {
    const o = { run: id, callId: id };
    const before = fast.beforeCall(id, id || 't', { id }, o);
    const ref = slow.event({ type: 'call', session: id, tool: id || 't', run: id, callId: id, args: { id } });
    assert.deepEqual([before.session, before.tool, before.run, before.callId, before.argsHash, before.action],
      [ref.session, ref.tool, ref.run, ref.callId, ref.argsHash, ref.decision], JSON.stringify(id));
    assert.equal(before.session, id);
    const after = fast.afterCall(id, id || 't', { id }, { ...o, result: id });
    const refAfter = slow.event({ type: 'outcome', session: id, tool: id || 't', run: id, callId: id, args: { id }, result: id });
    assert.deepEqual([after.session, after.run, after.callId, after.resultHash], [refAfter.session, refAfter.run, refAfter.callId, refAfter.resultHash], JSON.stringify(id));
  }
  assert.equal(fast.session('a "quoted" id').calls, 1);
  // Two ids that differ only in a lone surrogate are two sessions (an id written unescaped
  // would reach the engine with U+FFFD in place of each, as one).
  const g = new Guard();
  g.beforeCall('x\uD800', 'read', {});
  g.beforeCall('x\uDBFF', 'read', {});
  // (sessions() names an id that is not UTF-8 by the hex of its WTF-8 bytes: x, then ED A0 80
  // for U+D800 and ED AF BF for U+DBFF.)
  assert.deepEqual(g.sessions().map((s) => s.session).sort(), ['~wtf8~78eda080', '~wtf8~78edafbf']);
});

// Two instances of the wrapper's module in one thread (a test runner's fresh module registry, a
// bundle holding its own copy) share one addon, each with its own inbox (lib/index.cjs): every
// event must reach the engine with its own line, never the other instance's last one.
test('two instances of the wrapper in one thread each reach the engine with their own lines', () => {
  const require = createRequire(import.meta.url);
  const entry = require.resolve('loopguard');
  const dir = path.dirname(entry);
  const first = require(entry).Guard;
  // A second instance of every module of the package but the addon itself (which node loads
  // once per thread).
  for (const file of Object.keys(require.cache)) {
    if (file.startsWith(dir) && !file.endsWith('.node')) delete require.cache[file];
  }
  const second = require(entry).Guard;
  assert.notEqual(first, second);
  const [a, b, ref] = [new first(), new second(), new Guard()];
  for (let i = 0; i < 30; i++) {
    for (const [g, s] of [[a, 'a'], [b, 'b'], [b, 'b'], [a, 'a']]) {
      const args = { path: `/${s}/${i % 3}` };
      const got = g.beforeCall(`${s}${i}`, 'read', args);
      const want = ref.event({ type: 'call', session: `ref-${s}${i}`, tool: 'read', args });
      assert.deepEqual([got.argsHash, got.action], [want.argsHash, want.decision], `${s} call ${i}`);
      const out = g.afterCall(`${s}${i}`, 'read', args, { result: `${s}${i}` });
      const outRef = ref.event({ type: 'outcome', session: `ref-${s}${i}`, tool: 'read', args, result: `${s}${i}` });
      assert.deepEqual([out.argsHash, out.resultHash], [outRef.argsHash, outRef.resultHash], `${s} outcome ${i}`);
    }
  }
  // Each guard holds its own 30 sessions, each with the two calls and outcomes it was given.
  for (const [g, s] of [[a, 'a'], [b, 'b']]) {
    const all = g.sessions();
    assert.equal(all.length, 30, s);
    assert.ok(all.every((x) => x.session.startsWith(s) && x.calls === 2 && x.outcomes === 2), s);
  }
});
