// The opencode plugin (plugins/opencode/loopguard.js) loaded by the real opencode from npm
// (opencode-ai, its native binary from the platform package; scripts/setup-node-agents.sh),
// headless (`opencode run`), with the model fetch, default plugins, autoupdate, LSP downloads and
// sharing turned off, against a scripted OpenAI-compatible model on 127.0.0.1 (the
// @ai-sdk/openai-compatible provider opencode bundles) asking for the same `bash` call 25 times:
// the command runs 20 times, the model sees the warning with result 11 and the block from 21.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { agentsDir, runProgram } from './helpers.mjs';
import { startScriptedModel, toolResultsSeen } from './scripted-model.mjs';

test('opencode runs the plugin: 25 identical bash calls, 20 run, warning at 11, block from 21', async (t) => {
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
  const env = {
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
});
