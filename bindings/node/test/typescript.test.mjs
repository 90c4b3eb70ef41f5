// The declarations the package ships type-check a small consumer program (consumer.ts) with the
// TypeScript compiler pinned in package.json, under --strict, resolving `loopguard` and its
// subpaths through the package's `exports` as a user's project does. consumer.ts also holds
// misuses marked @ts-expect-error: tsc fails ("Unused '@ts-expect-error' directive") if the
// declarations accept one of them, so the check cannot pass on declarations that are too loose
// (an `any`), nor on a package tsc cannot resolve (TS2307).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

test('the shipped declarations type-check a consumer program (tsc --strict)', () => {
  let tsc;
  try {
    tsc = require.resolve('typescript/bin/tsc');
  } catch {
    assert.fail('typescript is not installed in the test project: run scripts/test-node.sh (it installs bindings/node/test/package.json)');
  }
  const consumer = path.join(here, 'consumer.ts');
  assert.ok(fs.existsSync(consumer), `${consumer}: scripts/test-node.sh copies it beside the tests`);
  const args = [
    tsc,
    '--noEmit',
    '--strict',
    '--module', 'nodenext',
    '--moduleResolution', 'nodenext',
    '--target', 'es2022',
    // LangChain's declarations (the middleware's type) need the DOM's and `using`'s globals.
    '--lib', 'es2022,esnext.disposable,dom',
    '--skipLibCheck', 'false',
    consumer,
  ];
  let out = '';
  try {
    out = execFileSync(process.execPath, args, { cwd: here, encoding: 'utf8', stdio: 'pipe', timeout: 180_000 });
  } catch (e) {
    assert.fail(`tsc found errors:\n${e.stdout}${e.stderr}`);
  }
  assert.equal(out.trim(), '');
});

test('the subpaths type-check under moduleResolution node10 too (typesVersions)', () => {
  const tsc = require.resolve('typescript/bin/tsc');
  const consumer = path.join(here, 'consumer-node10.ts');
  assert.ok(fs.existsSync(consumer), `${consumer}: scripts/test-node.sh copies it beside the tests`);
  const args = [
    tsc,
    '--noEmit',
    '--strict',
    '--module', 'commonjs',
    '--moduleResolution', 'node10',
    '--target', 'es2022',
    '--lib', 'es2022,esnext.disposable,dom',
    '--esModuleInterop',
    '--skipLibCheck', 'false',
    consumer,
  ];
  try {
    execFileSync(process.execPath, args, { cwd: here, encoding: 'utf8', stdio: 'pipe', timeout: 180_000 });
  } catch (e) {
    assert.fail(`tsc found errors:\n${e.stdout}${e.stderr}`);
  }
});
