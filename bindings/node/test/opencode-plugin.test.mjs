// The opencode plugin (plugins/opencode/loopguard.js) through the hook signatures of opencode's
// published plugin types (@opencode-ai/plugin: `tool.execute.before(input, output)` with
// output.args, `tool.execute.after(input, output)` with output.output, `event({ event })` with
// session.compacted), with the loop below playing opencode's part (a call runs unless the
// before-hook throws). opencode-e2e.test.mjs runs the same plugin inside the real opencode.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Guard } from 'loopguard';
import { createLoopGuardPlugin } from './opencode-plugin/loopguard.js';

async function drive(hooks, calls, sessionID = 'ses_1') {
  let runs = 0;
  const seen = [];
  for (let i = 1; i <= calls; i++) {
    const input = { tool: 'read', sessionID, callID: `call_${i}` };
    const args = { filePath: '/same.txt' };
    try {
      await hooks['tool.execute.before'](input, { args });
    } catch (e) {
      seen.push(`error: ${e.message}`);
      continue;
    }
    runs += 1;
    const output = { title: 'read', output: 'same contents', metadata: {} };
    await hooks['tool.execute.after']({ ...input, args }, output);
    seen.push(output.output);
  }
  return { runs, seen };
}

test('25 identical calls: the tool runs 20 times, warning with result 11, block from result 21', async () => {
  const guard = new Guard();
  const hooks = await createLoopGuardPlugin({ guard })({});
  const { runs, seen } = await drive(hooks, 25);
  assert.equal(runs, 20);
  assert.match(seen[10], /^same contents\n\nWARNING: You have called read 10 times/);
  assert.equal(seen[9], 'same contents');
  for (const s of seen.slice(20)) assert.match(s, /^error: CRITICAL: Called read with identical arguments/);
});

test('session.compacted arms the guard: the third identical outcome aborts, later calls are refused', async () => {
  const guard = new Guard();
  const hooks = await createLoopGuardPlugin({ guard })({});
  await hooks.event({ event: { type: 'session.compacted', properties: { sessionID: 'ses_c' } } });
  const { runs, seen } = await drive(hooks, 5, 'ses_c');
  assert.equal(runs, 3);
  assert.match(seen[2], /compaction/i);
  assert.match(seen[3], /^error: loopguard stopped this session/);
});
