// The OpenClaw plugin (plugins/openclaw) driven through the plugin API's shape as OpenClaw's
// documentation and types describe it (api.on(hook, handler), before_tool_call answering
// { block, blockReason }, after_tool_call with result/error, after_compaction), with the loop
// below playing OpenClaw's part (a call runs unless a before-hook blocks it): the configurations
// and the compaction path. openclaw-e2e.test.mjs loads the plugin in the real OpenClaw.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import plugin, { configFor, profileForHost, withoutNote } from './openclaw-plugin/index.mjs';
import { recordingLogger } from './helpers.mjs';

function load(pluginConfig, version) {
  const hooks = {};
  const middleware = [];
  const logger = recordingLogger();
  const api = { pluginConfig, logger, on: (name, fn) => (hooks[name] = fn) };
  if (version !== undefined) {
    api.runtime = { version };
    api.registerAgentToolResultMiddleware = (fn, opts) => middleware.push({ fn, opts });
  }
  plugin.register(api);
  return { hooks, logger, middleware };
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

test('the manifest names the plugin and its entry registers its hooks', async () => {
  const { hooks } = load(undefined);
  assert.deepEqual(Object.keys(hooks).sort(), [
    'after_compaction',
    'after_tool_call',
    'before_tool_call',
    'subagent_spawned',
  ]);
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

test("the host's era: 2026.9.6 and later get openclaw-2026.9.6, older hosts and unknown versions the documented profile", () => {
  assert.equal(profileForHost('2026.9.6'), 'openclaw-2026.9.6');
  assert.equal(profileForHost('2026.9.7-beta.1'), 'openclaw-2026.9.6');
  assert.equal(profileForHost('2026.10.1'), 'openclaw-2026.9.6');
  assert.equal(profileForHost('2027.1.1'), 'openclaw-2026.9.6');
  assert.equal(profileForHost('2026.9.5'), 'openclaw');
  assert.equal(profileForHost('2026.8.30'), 'openclaw');
  assert.equal(profileForHost('2025.12.1'), 'openclaw');
  assert.equal(profileForHost(undefined), null);
  assert.equal(profileForHost('dev'), null);
  // The config's own profile wins over the host's era; the shipped era is switched on.
  assert.equal(configFor({ loopguard: { profile: 'strict' } }, '2026.9.6').profile, 'strict');
  const shipped = configFor({ store: 'memory' }, '2026.9.6');
  assert.deepEqual(shipped.config, { tools: { loopDetection: { enabled: true } }, loopguard: { profile: 'openclaw-2026.9.6' } });
  assert.equal(configFor({ tools: { loopDetection: { enabled: false } } }, '2026.9.6').config.tools.loopDetection.enabled, false);
  assert.deepEqual(configFor(undefined, '2026.9.1'), {
    config: { tools: { loopDetection: { enabled: true } } },
    store: 'memory',
    profile: 'openclaw',
    why: 'the era of OpenClaw 2026.9.1',
  });
  assert.deepEqual(configFor({ loopguard: { profile: 'strict' } }, '2026.9.6').config, {
    loopguard: { profile: 'strict' },
    tools: { loopDetection: { enabled: true } },
  });
  assert.equal(configFor(undefined, undefined).profile, 'openclaw');
});

test('under the 2026.9.6 era: the note at 11 goes through the tool-result middleware, the release texts at 21 and 22, then the run is refused', async () => {
  const { hooks, middleware, logger } = load(undefined, '2026.9.6');
  assert.equal(middleware.length, 1);
  assert.deepEqual(middleware[0].opts, { runtimes: ['openclaw'] });
  const ctx = { sessionKey: 'era', agentId: 'main' };
  const seen = [];
  let runs = 0;
  for (let i = 1; i <= 24; i++) {
    const event = { toolName: 'read', params: { path: '/same.txt' }, toolCallId: `e${i}`, runId: 'r' };
    const answer = await hooks.before_tool_call(event, ctx);
    if (answer?.block) {
      seen.push(answer.blockReason);
      continue;
    }
    runs += 1;
    const raw = { content: [{ type: 'text', text: 'same' }], details: {} };
    // OpenClaw runs the middleware on the result first, then after_tool_call with what it made.
    const changed = await middleware[0].fn({ toolCallId: event.toolCallId, toolName: 'read', args: event.params, result: raw }, { runtime: 'openclaw', sessionKey: 'era', runId: 'r' });
    const result = changed?.result ?? raw;
    seen.push(result.content.map((c) => c.text).join('\n'));
    await hooks.after_tool_call({ ...event, result, durationMs: 1 }, ctx);
  }
  assert.equal(runs, 20);
  assert.equal(seen[9], 'same');
  assert.equal(seen[10], 'same\n[System note: Tool-loop warning after 10 repeated calls. Change your approach or stop if you are not making progress.]');
  assert.equal(seen[11], 'same', 'one note per bucket of ten');
  assert.match(seen[20], /^CRITICAL: Called read with identical outcomes 20 times\. .*\n\nDo not repeat this exact tool action\./s);
  assert.match(seen[21], /^CRITICAL: Called read with identical outcomes 21 times\. .*\n\nCritical tool-loop recovery failed .* This run is stopping now\.$/s);
  assert.match(seen[22], /^loopguard stopped this run/);
  assert.ok(logger.lines.some((l) => /WARNING: You have called read 10 times/.test(l)));
});

test('the note the plugin appended is taken off before the outcome is recorded', () => {
  const note = '[System note: x]';
  const result = { content: [{ type: 'text', text: 'a' }, { type: 'text', text: note }], details: { ok: true } };
  assert.deepEqual(withoutNote(result, note), { content: [{ type: 'text', text: 'a' }], details: { ok: true } });
  assert.equal(withoutNote(result, undefined), result);
  assert.equal(withoutNote({ content: [{ type: 'text', text: 'a' }] }, note).content.length, 1);
});

test('a sub-agent spawned with sessions_spawn keeps its own loop state, and its calls count at its requester', async () => {
  const config = { tools: { loopDetection: { enabled: true } }, loopguard: { budgets: { callsPerSession: 24 } } };
  const { hooks } = load(config);
  // OpenClaw's subagent_spawned: the child's session key, and the requester's in the context.
  hooks.subagent_spawned(
    { childSessionKey: 'agent:main:subagent:s1', runId: 'r-sub' },
    { requesterSessionKey: 'agent:main:main', childSessionKey: 'agent:main:subagent:s1' },
  );
  // The sub-agent loops: its 21st identical call is blocked, in its own session.
  const sub = await drive(hooks, { calls: 22, session: 'agent:main:subagent:s1', runId: 'r-sub' });
  assert.equal(sub.runs, 20);
  // The requester reads the same file itself: not the sub-agent's loop, but its session's
  // budget counted the sub-agent's 20 calls (21 of 24 warns, 25 is past the cap).
  const parent = await drive(hooks, { calls: 5, session: 'agent:main:main', runId: 'r-main' });
  assert.equal(parent.runs, 4);
  assert.match(parent.seen[4], /budget/);
});
