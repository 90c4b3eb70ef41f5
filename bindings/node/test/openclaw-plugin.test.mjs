// The OpenClaw plugin (plugins/openclaw) driven through the plugin API's shape as OpenClaw's
// documentation and types describe it (api.on(hook, handler), before_tool_call answering
// { block, blockReason }, after_tool_call with result/error, after_compaction), with the loop
// below playing OpenClaw's part (a call runs unless a before-hook blocks it): the configurations
// and the compaction path. openclaw-e2e.test.mjs loads the plugin in the real OpenClaw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import plugin from './openclaw-plugin/index.mjs';
import { recordingLogger } from './helpers.mjs';

function load(pluginConfig) {
  const hooks = {};
  const logger = recordingLogger();
  plugin.register({ pluginConfig, logger, on: (name, fn) => (hooks[name] = fn) });
  return { hooks, logger };
}

async function drive(hooks, { calls, session = 's', agentId, runId }) {
  let runs = 0;
  const seen = [];
  for (let i = 1; i <= calls; i++) {
    const event = { toolName: 'read', params: { path: '/same.txt' }, toolCallId: `c${i}`, runId };
    const ctx = { sessionKey: session, agentId };
    const answer = await hooks.before_tool_call(event, ctx);
    if (answer?.block) {
      seen.push(`[Tool call blocked] ${answer.blockReason}`);
      continue;
    }
    runs += 1;
    const result = { content: [{ type: 'text', text: 'same' }], details: {} };
    seen.push('same');
    await hooks.after_tool_call({ ...event, result, durationMs: 1 }, ctx);
  }
  return { runs, seen };
}

test('the manifest names the plugin and its entry registers the three hooks', async () => {
  const { hooks } = load(undefined);
  assert.deepEqual(Object.keys(hooks).sort(), ['after_compaction', 'after_tool_call', 'before_tool_call']);
  assert.equal(plugin.id, 'loopguard');
});

test('OpenClaw defaults: 25 identical calls run 20 times, warning logged at 11, block from 21', async () => {
  const { hooks, logger } = load(undefined);
  const { runs, seen } = await drive(hooks, { calls: 25 });
  assert.equal(runs, 20);
  assert.match(seen[20], /CRITICAL: Called read with identical arguments and identical outcomes 20 times/);
  assert.match(logger.lines[0], /WARNING: You have called read 10 times/);
});

test('the numeric settings OpenClaw retired work again, per agent', async () => {
  const config = {
    tools: { loopDetection: { enabled: true, warningThreshold: 3, criticalThreshold: 5 } },
    agents: { list: [{ id: 'ops', tools: { loopDetection: { criticalThreshold: 8 } } }] },
  };
  const { hooks } = load(config);
  assert.equal((await drive(hooks, { calls: 10, session: 'main' })).runs, 5);
  assert.equal((await drive(hooks, { calls: 10, session: 'ops-session', agentId: 'ops' })).runs, 8);
});

test('after a compaction, the third identical outcome aborts and later calls are refused', async () => {
  const { hooks, logger } = load(undefined);
  await hooks.after_compaction({}, { sessionKey: 'c', runId: 'r1' });
  const { runs, seen } = await drive(hooks, { calls: 6, session: 'c', runId: 'r1' });
  assert.equal(runs, 3);
  assert.match(seen[3], /loopguard stopped this run/);
  assert.ok(logger.lines.some((l) => /compaction/i.test(l)));
});

test("loopguard's strict profile through the plugin config: identical failures block at the 7th call", async () => {
  const { hooks } = load({ tools: { loopDetection: { enabled: true } }, loopguard: { profile: 'strict' } });
  let runs = 0;
  let blocked = null;
  for (let i = 1; i <= 12 && !blocked; i++) {
    const event = { toolName: 'exec', params: { command: 'npm test' }, toolCallId: `x${i}` };
    const answer = await hooks.before_tool_call(event, { sessionKey: 'strict' });
    if (answer?.block) blocked = answer.blockReason;
    else {
      runs += 1;
      await hooks.after_tool_call({ ...event, error: 'Exit code 1' }, { sessionKey: 'strict' });
    }
  }
  assert.equal(runs, 6);
  assert.match(blocked, /^CRITICAL: exec failed the same way 6 times in a row/);
});
