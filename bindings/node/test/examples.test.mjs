// The repository's TypeScript example (examples/typescript-ai-sdk/agent.ts) compiles with the
// pinned TypeScript (--strict) against the installed package and AI SDK, runs, and prints what
// it teaches: the 11th identical call warned, the 21st and later refused, the tool run 20 times.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { REPO } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

const WARNING_11 =
  'WARNING: You have called readFile 10 times with identical arguments. If this is not making progress, stop retrying and report the task as failed.';
const BLOCK_21 =
  'CRITICAL: Called readFile with identical arguments and identical outcomes 20 times. Session execution blocked to prevent runaway loops.';

test('examples/typescript-ai-sdk: the 11th identical call is warned, the 21st refused', () => {
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc');
  } catch {
    assert.fail('typescript is not installed in the test project: run scripts/test-node.sh (it installs bindings/node/test/package.json)');
  }
  // Inside the test project, so that `loopguard` and `ai` resolve from its node_modules.
  const dir = fs.mkdtempSync(path.join(here, 'example-'));
  try {
    fs.copyFileSync(path.join(REPO, 'examples', 'typescript-ai-sdk', 'agent.ts'), path.join(dir, 'agent.ts'));
    const flags = ['--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022'];
    try {
      execFileSync(process.execPath, [tsc, ...flags, path.join(dir, 'agent.ts')], { cwd: dir, encoding: 'utf8', stdio: 'pipe', timeout: 180_000 });
    } catch (e) {
      assert.fail(`tsc found errors in the example:\n${e.stdout}${e.stderr}`);
    }
    const out = execFileSync(process.execPath, [path.join(dir, 'agent.js')], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
    const expected = [];
    for (let n = 1; n <= 25; n++) {
      if (n === 11) expected.push(`call 11: result: ${JSON.stringify(`port: 8080\n\n${WARNING_11}`)}`);
      else if (n <= 20) expected.push(`call ${n}: result: "port: 8080"`);
      else expected.push(`call ${n}: error: ${JSON.stringify(BLOCK_21)}`);
    }
    expected.push('readFile ran 20 times; the agent answered: I could not find the port.');
    assert.deepEqual(out.trimEnd().split('\n'), expected);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
