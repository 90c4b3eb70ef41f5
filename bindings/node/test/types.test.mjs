// The hand-written declarations (index.d.ts, integrations/*.d.ts) match what the package exports,
// and the ESM and CommonJS entry points give the same objects.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import * as esm from 'loopguard';

const require = createRequire(import.meta.url);
const root = path.dirname(require.resolve('loopguard/package.json'));

function declared(file) {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const names = new Set([...text.matchAll(/^export declare (?:class|function) (\w+)/gm)].map((m) => m[1]));
  const methods = {};
  for (const m of text.matchAll(/^export declare class (\w+)[^{]*\{([\s\S]*?)^\}/gm)) {
    methods[m[1]] = new Set([...m[2].matchAll(/^\s+(static )?(\w+)\(/gm)].map((x) => (x[1] ? `static ${x[2]}` : x[2])).filter((x) => x !== 'constructor'));
  }
  return { names, methods };
}

function actualMethods(cls) {
  const own = Object.getOwnPropertyNames(cls.prototype).filter((n) => n !== 'constructor' && typeof cls.prototype[n] === 'function');
  const statics = Object.getOwnPropertyNames(cls).filter((n) => typeof cls[n] === 'function').map((n) => `static ${n}`);
  return new Set([...own, ...statics]);
}

// The LangChain entry points build the middleware with their own copy of `langchain` (ESM or
// CommonJS), so their functions differ between the two; the others are the same objects.
for (const [spec, dts, same] of [
  ['loopguard', 'index.d.ts', true],
  ['loopguard/ai-sdk', 'integrations/ai-sdk.d.ts', true],
  ['loopguard/langchain', 'integrations/langchain.d.ts', false],
  ['loopguard/openai-agents', 'integrations/openai-agents.d.ts', true],
  ['loopguard/mastra', 'integrations/mastra.d.ts', true],
]) {
  test(`${dts} declares exactly what ${spec} exports`, async () => {
    const cjs = require(spec);
    const mjs = await import(spec);
    const { names, methods } = declared(dts);
    const exported = new Set(Object.keys(cjs).filter((k) => typeof cjs[k] === 'function'));
    assert.deepEqual([...names].sort(), [...exported].sort());
    for (const name of names) {
      if (same) assert.equal(mjs[name], cjs[name], `${name}: ESM and CommonJS give the same object`);
      else assert.equal(typeof mjs[name], typeof cjs[name], `${name}: in ESM too`);
      if (methods[name] && !(cjs[name].prototype instanceof Error)) {
        assert.deepEqual([...methods[name]].sort(), [...actualMethods(cjs[name])].sort(), `${name}'s methods`);
      }
    }
  });
}

test('the default export is the CommonJS module', () => {
  assert.equal(esm.default, require('loopguard'));
});
