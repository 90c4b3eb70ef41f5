// The opencode plugin (plugins/opencode/loopguard.js) loaded by the real opencode from npm
// (opencode-ai, its native binary from the platform package; scripts/setup-node-agents.sh),
// headless (`opencode run`), with the model fetch, default plugins, autoupdate, LSP downloads and
// sharing turned off, against a scripted OpenAI-compatible model on 127.0.0.1 (the
// @ai-sdk/openai-compatible provider opencode bundles) asking for the same `bash` call 25 times:
// the command runs 20 times, the model sees the warning with result 11 and the block from 21.
// Then `loopguard replay` reads the session from the SQLite database opencode wrote in the same
// run and must decide every call as the plugin did live: what the model was sent after each call
// (the block, the warning appended to the output, or the bare output), and the plugin's own
// decision log (its guard's store, LOOPGUARD_STORE=sqlite:…, read by `loopguard status`).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { agentsDir, runProgram } from './helpers.mjs';
import { startScriptedModel, toolResultsSeen } from './scripted-model.mjs';

test('opencode runs the plugin: 25 identical bash calls, 20 run, warning at 11, block from 21; replay of its database decides as the plugin did', async (t) => {
  const bin = path.join(agentsDir(), 'agents/node_modules/opencode-linux-x64/bin/opencode');
  assert.ok(fs.existsSync(bin), `${bin} is missing: run scripts/setup-node-agents.sh`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-opencode-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const project = path.join(work, 'project');
  fs.mkdirSync(project);
  const runs = path.join(work, 'runs.log');
  const model = await startScriptedModel({
    tool: 'bash',
    args: { command: `echo run >> ${runs} && echo same`, description: 'Repeat the command' },
    calls: 25,
  });
  t.after(() => model.close());

  const plugin = path.resolve('opencode-plugin/loopguard.js');
  const config = {
    $schema: 'https://opencode.ai/config.json',
    model: 'scripted/scripted',
    small_model: 'scripted/scripted',
    autoupdate: false,
    share: 'disabled',
    permission: { bash: 'allow' },
    plugin: [`file://${plugin}`],
    provider: {
      scripted: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Scripted',
        options: { baseURL: model.baseUrl, apiKey: 'scripted' },
        models: { scripted: { name: 'Scripted', tool_call: true, limit: { context: 128000, output: 4096 } } },
      },
    },
  };
  const home = path.join(work, 'home');
  const store = path.join(work, 'plugin-state.sqlite3');
  const env = {
    LOOPGUARD_STORE: `sqlite:${store}`,
    ...process.env,
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, 'config'),
    XDG_DATA_HOME: path.join(home, 'data'),
    XDG_CACHE_HOME: path.join(home, 'cache'),
    XDG_STATE_HOME: path.join(home, 'state'),
    OPENCODE_CONFIG_CONTENT: JSON.stringify(config),
    OPENCODE_DISABLE_MODELS_FETCH: '1',
    OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
    OPENCODE_DISABLE_AUTOUPDATE: '1',
    OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
    OPENCODE_DISABLE_SHARE: '1',
    OPENCODE_DISABLE_CLAUDE_CODE: '1',
  };
  const out = await runProgram(bin, ['run', '--print-logs', '--log-level', 'WARN', '--model', 'scripted/scripted', 'Run the command.'], {
    cwd: project,
    env,
  });
  const seen = toolResultsSeen(model.requests);
  const why = `opencode exited ${out.code} (${out.signal ?? 'no signal'}); stderr:\n${out.stderr.slice(-4000)}\nstdout:\n${out.stdout.slice(-4000)}`;
  assert.equal(out.code, 0, why);
  assert.equal(seen.length, 25, why);
  assert.equal(fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean).length, 20, `the command ran 20 times; ${why}`);
  for (const s of seen.slice(0, 10)) assert.doesNotMatch(s, /WARNING|CRITICAL/);
  assert.match(seen[10], /WARNING: You have called bash 10 times/);
  for (const s of seen.slice(11, 20)) assert.doesNotMatch(s, /CRITICAL/);
  for (const s of seen.slice(20)) assert.match(s, /CRITICAL: Called bash with identical arguments/);

  // Replay of the database opencode wrote, recognised from its content.
  const loopguard = process.env.LOOPGUARD_SERVE_BIN;
  assert.ok(loopguard, 'LOOPGUARD_SERVE_BIN is not set: run the tests with scripts/test-node.sh');
  const db = path.join(home, 'data', 'opencode', 'opencode.db');
  assert.ok(fs.existsSync(db), `opencode wrote no database at ${db}`);
  const replayed = execFileSync(loopguard, ['replay', '--json', db], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((d) => d.type === 'call');
  assert.equal(replayed.length, seen.length, JSON.stringify(replayed));
  replayed.forEach((d, i) => {
    // What the plugin did live, as the model saw it.
    const live = /CRITICAL:/.test(seen[i]) ? 'block' : /WARNING:/.test(seen[i]) ? 'warn' : 'quiet';
    const word = d.decision === 'warn' && d.emitted === false ? 'quiet' : d.decision === 'allow' ? 'quiet' : d.decision;
    assert.equal(word, live, `call ${i + 1}: replay ${JSON.stringify(d)}, the model saw ${seen[i]}`);
  });
  assert.equal(replayed[10].decision, 'warn');
  assert.deepEqual(
    replayed.slice(11, 20).map((d) => d.decision),
    Array(9).fill('warn'),
    'the warnings the model was not shown are warnings in replay too',
  );
  // The plugin's own log of the session (its last decisions), call for call.
  const status = JSON.parse(execFileSync(loopguard, ['status', '--json', '--state', store], { encoding: 'utf8' }));
  assert.equal(status.sessions.length, 1, JSON.stringify(status));
  const id = status.sessions[0].sessionId;
  const session = JSON.parse(
    execFileSync(loopguard, ['status', '--json', '--events', '100', '--state', store, id], { encoding: 'utf8' }),
  );
  const byCall = new Map(replayed.map((d) => [d.callId, d]));
  const logged = session.events.filter((e) => ['allow', 'warn', 'warn-quiet', 'block'].includes(e.decision));
  assert.ok(logged.length >= 5, JSON.stringify(session.events));
  for (const e of logged) {
    const d = byCall.get(e.toolUseId);
    assert.ok(d, `the plugin decided on ${e.toolUseId}, which replay did not read`);
    const word = d.decision === 'warn' && d.emitted === false ? 'warn-quiet' : d.decision;
    assert.equal(word, e.decision, `${e.toolUseId}: replay ${JSON.stringify(d)}, live ${JSON.stringify(e)}`);
    if (e.decision !== 'allow') assert.equal(d.count, e.count, `${e.toolUseId}`);
  }
});
