// The opencode plugin (plugins/opencode/loopguard.js) through the hook signatures of opencode's
// published plugin types (@opencode-ai/plugin: `tool.execute.before(input, output)` with
// output.args, `tool.execute.after(input, output)` with output.output, `event({ event })` with
// session.compacted), with the loop below playing opencode's part (a call runs unless the
// before-hook throws). opencode-e2e.test.mjs runs the same plugin inside the real opencode.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Guard } from 'loopguard';
import { createLoopGuardPlugin } from './opencode-plugin/loopguard.js';

const here = path.dirname(fileURLToPath(import.meta.url));

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

// opencode restarted: a new node process loads the plugin on the same store and calls the tool
// once in `session`; its output (or the error the plugin threw) is what the process prints.
function restartedOpencode(store, session) {
  const code = `
    import { createLoopGuardPlugin } from './opencode-plugin/loopguard.js';
    process.env.LOOPGUARD_STORE = ${JSON.stringify(store)};
    const hooks = await createLoopGuardPlugin()({});
    const input = { tool: 'read', sessionID: ${JSON.stringify(session)}, callID: 'after_restart' };
    try {
      await hooks['tool.execute.before'](input, { args: { filePath: '/same.txt' } });
      console.log('ran');
    } catch (e) {
      console.log('error: ' + e.message);
    }`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: here, encoding: 'utf8' }).trim();
}

test('a stopped session stays stopped when opencode restarts on a persistent (SQLite) store', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-opencode-'));
  try {
    for (const [store, persistent] of [[`sqlite:${path.join(dir, 'state.sqlite3')}`, true], ['memory', false]]) {
      const hooks = await createLoopGuardPlugin({ guard: new Guard({ store }) })({});
      await hooks.event({ event: { type: 'session.compacted', properties: { sessionID: 'ses_r' } } });
      const { runs, seen } = await drive(hooks, 4, 'ses_r');
      assert.equal(runs, 3, store);
      assert.match(seen[3], /^error: loopguard stopped this session/, store);
      // The memory store forgets with the process: the check that the stop came from the store.
      const answer = restartedOpencode(store, 'ses_r');
      if (persistent) assert.match(answer, /^error: loopguard stopped this session/);
      else assert.equal(answer, 'ran');
      assert.equal(restartedOpencode(store, 'ses_other'), 'ran', `${store}: another session runs`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
