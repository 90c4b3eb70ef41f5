// The pi extension (plugins/pi/loopguard.js) through pi's documented extension events
// (`tool_call` answering { block, reason }, `tool_result` answering { content }, `session_compact`),
// with a stand-in `pi` object recording the handlers; the loop below plays pi's part (a call runs
// unless tool_call blocks it). pi-e2e.test.mjs runs the same extension inside the real pi.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Guard } from 'loopguard';
import { createLoopGuardExtension } from './pi-extension/loopguard.js';

const here = path.dirname(fileURLToPath(import.meta.url));

function load() {
  const handlers = {};
  createLoopGuardExtension({ guard: new Guard() })({ on: (name, fn) => (handlers[name] = fn) });
  return handlers;
}

const ctxFor = (id) => ({ sessionManager: { getSessionId: () => id } });

async function drive(h, calls, session = 'pi-1') {
  let runs = 0;
  const seen = [];
  for (let i = 1; i <= calls; i++) {
    const event = { toolName: 'read', toolCallId: `t${i}`, input: { path: '/same.txt' } };
    const answer = await h.tool_call(event, ctxFor(session));
    if (answer?.block) {
      seen.push(`blocked: ${answer.reason}`);
      continue;
    }
    runs += 1;
    const content = [{ type: 'text', text: 'same contents' }];
    const changed = await h.tool_result({ ...event, content, details: {}, isError: false }, ctxFor(session));
    seen.push((changed?.content ?? content).map((b) => b.text).join('\n'));
  }
  return { runs, seen };
}

test('25 identical calls: the tool runs 20 times, warning with result 11, block from 21', async () => {
  const h = load();
  assert.deepEqual(Object.keys(h).sort(), ['session_compact', 'tool_call', 'tool_result']);
  const { runs, seen } = await drive(h, 25);
  assert.equal(runs, 20);
  assert.equal(seen[9], 'same contents');
  assert.match(seen[10], /^same contents\nWARNING: You have called read 10 times/);
  for (const s of seen.slice(20)) assert.match(s, /^blocked: CRITICAL: Called read with identical arguments/);
});

test('session_compact arms the guard: the third identical outcome aborts, later calls are blocked', async () => {
  const h = load();
  await h.session_compact({}, ctxFor('pi-c'));
  const { runs, seen } = await drive(h, 5, 'pi-c');
  assert.equal(runs, 3);
  assert.match(seen[2], /compaction/i);
  assert.match(seen[3], /^blocked: loopguard stopped this session/);
});

// pi restarted: a new node process loads the extension on the same store and asks for one call
// in `session`; what it prints is whether the call ran or the reason it was blocked.
function restartedPi(store, session) {
  const code = `
    import { createLoopGuardExtension } from './pi-extension/loopguard.js';
    process.env.LOOPGUARD_STORE = ${JSON.stringify(store)};
    const h = {};
    createLoopGuardExtension()({ on: (name, fn) => (h[name] = fn) });
    const ctx = { sessionManager: { getSessionId: () => ${JSON.stringify(session)} } };
    const answer = await h.tool_call({ toolName: 'read', toolCallId: 'after_restart', input: { path: '/same.txt' } }, ctx);
    console.log(answer?.block ? 'blocked: ' + answer.reason : 'ran');`;
  return execFileSync(process.execPath, ['--input-type=module', '-e', code], { cwd: here, encoding: 'utf8' }).trim();
}

test('a stopped session stays stopped when pi restarts on a persistent (SQLite) store', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-pi-'));
  try {
    for (const [store, persistent] of [[`sqlite:${path.join(dir, 'state.sqlite3')}`, true], ['memory', false]]) {
      const h = {};
      createLoopGuardExtension({ guard: new Guard({ store }) })({ on: (name, fn) => (h[name] = fn) });
      await h.session_compact({}, ctxFor('pi-r'));
      const { runs, seen } = await drive(h, 4, 'pi-r');
      assert.equal(runs, 3, store);
      assert.match(seen[3], /^blocked: loopguard stopped this session/, store);
      // The memory store forgets with the process: the check that the stop came from the store.
      const answer = restartedPi(store, 'pi-r');
      if (persistent) assert.match(answer, /^blocked: loopguard stopped this session/);
      else assert.equal(answer, 'ran');
      assert.equal(restartedPi(store, 'pi-other'), 'ran', `${store}: another session runs`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
