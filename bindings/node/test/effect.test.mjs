// `effect`: what each decision tells the agent to do, computed by the engine in the guard's mode
// (docs/events.md, "Output: decisions" and "Enforce and observe").
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard } from 'loopguard';

const LOOP = { tools: { loopDetection: { enabled: true } } }; // OpenClaw's thresholds: 10 and 20

/** The same call with the same result, `n` times: each call's [action, emitted, effect]. */
function loop(guard, session, n, tool = 'read') {
  const seen = [];
  for (let i = 0; i < n; i++) {
    const d = guard.beforeCall(session, tool, { path: '/a' }, { callId: `c${i}` });
    seen.push([d.action, d.emitted, d.effect]);
    const o = guard.afterCall(session, tool, { path: '/a' }, { result: 'same', callId: `c${i}` });
    assert.equal(o.effect, 'proceed', `outcome ${i}: ${JSON.stringify(o)}`);
  }
  return seen;
}

test('enforce: allow proceeds, an emitted warning is a notice, a block refuses', () => {
  const seen = loop(new Guard({ config: LOOP }), 's', 21);
  // The 11th identical call warns (shown once per bucket of ten), the 21st is blocked.
  assert.deepEqual(seen.slice(0, 10), Array(10).fill(['allow', undefined, 'proceed']));
  assert.deepEqual(seen[10], ['warn', true, 'notice']);
  assert.deepEqual(seen.slice(11, 20), Array(9).fill(['warn', false, 'proceed']));
  assert.deepEqual(seen[20], ['block', true, 'refuse']);
});

test('observe: the same decisions, and every effect is proceed', () => {
  const seen = loop(new Guard({ config: LOOP, mode: 'observe' }), 's', 22);
  assert.ok(seen.some(([a]) => a === 'warn') && seen.some(([a]) => a === 'block'), JSON.stringify(seen));
  assert.ok(seen.every(([, , e]) => e === 'proceed'), JSON.stringify(seen));
});

test("strict profile: the run's second critical loop ends the run", () => {
  const guard = new Guard({ config: { ...LOOP, loopguard: { profile: 'strict' } } });
  const effects = [];
  for (let i = 0; i < 12 && !effects.includes('end_run'); i++) {
    const d = guard.beforeCall('s', 'exec', { command: 'make' }, { run: 'r1', callId: `c${i}` });
    effects.push(d.effect);
    if (d.effect === 'end_run') {
      assert.equal(d.action, 'abort');
      assert.equal(d.detector, 'second_critical_abort');
    }
    if (d.effect === 'proceed' || d.effect === 'notice') {
      guard.afterCall('s', 'exec', { command: 'make' }, { error: 'make: *** [all] Error 2', run: 'r1', callId: `c${i}` });
    }
  }
  assert.ok(effects.includes('refuse') && effects.at(-1) === 'end_run', effects.join(' '));
  // The engine refuses the rest of the run too.
  assert.equal(guard.beforeCall('s', 'other', {}, { run: 'r1' }).effect, 'end_run');
});

test('a compaction arms the guard and proceeds; a loop that survives it ends the run', () => {
  const guard = new Guard({ config: LOOP });
  assert.equal(guard.onCompaction('s', { run: 'r' }).effect, 'proceed');
  let last;
  for (let i = 0; i < 3; i++) {
    guard.beforeCall('s', 'read', { path: '/a' }, { run: 'r', callId: `c${i}` });
    last = guard.afterCall('s', 'read', { path: '/a' }, { result: 'same', run: 'r', callId: `c${i}` });
  }
  assert.equal(last.action, 'abort');
  assert.equal(last.effect, 'end_run');
});
