// The pi extension (plugins/pi/loopguard.js) loaded by the real pi CLI from npm
// (@mariozechner/pi-coding-agent, installed by scripts/setup-node-agents.sh), headless (`pi -p`)
// and offline (PI_OFFLINE=1), against a scripted OpenAI-compatible model on 127.0.0.1 that asks
// for the same `bash` call 25 times: the command runs 20 times, the model sees the warning with
// result 11 and the block from result 21.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { agentsDir, runProgram } from './helpers.mjs';
import { startScriptedModel, toolResultsSeen } from './scripted-model.mjs';

/**
 * Runs pi headless against a scripted model asking for the same `bash` call 25 times, with the
 * extension loaded the way `place` sets up in the work directory (it returns pi's extra
 * arguments); checks the command ran 20 times, the warning at 11 and the block from 21.
 */
async function runPi(t, place) {
  const cli = path.join(agentsDir(), 'agents/node_modules/@mariozechner/pi-coding-agent/dist/cli.js');
  assert.ok(fs.existsSync(cli), `${cli} is missing: run scripts/setup-node-agents.sh`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-pi-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const runs = path.join(work, 'runs.log');
  const model = await startScriptedModel({ tool: 'bash', args: { command: `echo run >> ${runs} && echo same` }, calls: 25 });
  t.after(() => model.close());

  const agentDir = path.join(work, 'agent');
  fs.mkdirSync(agentDir);
  fs.writeFileSync(
    path.join(agentDir, 'models.json'),
    JSON.stringify({
      providers: {
        scripted: {
          baseUrl: model.baseUrl,
          api: 'openai-completions',
          apiKey: 'scripted',
          compat: { supportsDeveloperRole: false, supportsReasoningEffort: false },
          models: [{ id: 'scripted', reasoning: false, contextWindow: 128000, maxTokens: 4096 }],
        },
      },
    }),
  );
  const extensionArgs = place(work);
  const env = { ...process.env, HOME: work, PI_CODING_AGENT_DIR: agentDir, PI_OFFLINE: '1', PI_TELEMETRY: '0' };
  const out = await runProgram(
    process.execPath,
    [cli, '--provider', 'scripted', '--model', 'scripted', '--no-session', ...extensionArgs,
      '--no-skills', '--no-prompt-templates', '--no-themes', '--no-context-files', '--tools', 'bash',
      '-p', 'Run the command.'],
    { cwd: work, env },
  );
  const seen = toolResultsSeen(model.requests);
  const why = `pi exited ${out.code} (${out.signal ?? 'no signal'}); stderr:\n${out.stderr}\nstdout:\n${out.stdout}`;
  assert.equal(out.code, 0, why);
  assert.equal(seen.length, 25, why);
  assert.equal(fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean).length, 20, `the command ran 20 times; ${why}`);
  for (const s of seen.slice(0, 10)) assert.doesNotMatch(s, /WARNING|CRITICAL/);
  assert.match(seen[10], /WARNING: You have called bash 10 times/);
  for (const s of seen.slice(11, 20)) assert.doesNotMatch(s, /CRITICAL/);
  for (const s of seen.slice(20)) assert.match(s, /CRITICAL: Called bash with identical arguments/);
}

test('pi runs the extension given with -e: 25 identical bash calls, 20 run, warning at 11, block from 21', async (t) => {
  await runPi(t, () => ['--no-extensions', '-e', path.resolve('pi-extension/loopguard.js')]);
});

test('pi loads the extension from the documented folder .pi/extensions/ (the file as shipped)', async (t) => {
  await runPi(t, (work) => {
    const dir = path.join(work, '.pi', 'extensions');
    fs.mkdirSync(dir, { recursive: true });
    fs.copyFileSync(path.resolve('pi-extension/loopguard.js'), path.join(dir, 'loopguard.js'));
    // `loopguard` installed where the extension resolves it: the project's node_modules.
    fs.symlinkSync(path.resolve('node_modules'), path.join(work, 'node_modules'), 'dir');
    return [];
  });
});
