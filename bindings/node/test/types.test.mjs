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
  ['loopguard/common', 'integrations/common.d.ts', true],
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

test('native.d.ts, generated from the addon by napi-rs, declares exactly what the addon exports', () => {
  const addon = require(path.join(root, 'loopguard.linux-x64-gnu.node'));
  const { names, methods } = declared('native.d.ts');
  names.delete('ExternalObject'); // the declaration of napi-rs's external values, not an export
  const exported = Object.keys(addon).filter((k) => typeof addon[k] === 'function');
  assert.deepEqual([...names].sort(), exported.sort());
  assert.ok(names.has('NativeGuard') && names.has('decide'), [...names].join(', '));
  assert.deepEqual([...methods.NativeGuard].sort(), [...actualMethods(addon.NativeGuard)].sort());
  // What the JavaScript half calls on the addon is declared there.
  const lib = ['index.cjs', 'remote.cjs'].map((f) => fs.readFileSync(path.join(root, 'lib', f), 'utf8')).join('\n');
  // Calls on the addon's guard: `this.#native.X(` and, on a guard not closed, `this.#live().X(`.
  const used = new Set([...lib.matchAll(/#(?:native|live\(\))\.(\w+)\(/g)].map((m) => m[1]));
  for (const m of [...lib.matchAll(/NativeGuard\.(\w+)\(/g)]) used.add(`static ${m[1]}`);
  assert.ok(used.size >= 5, [...used].join(', '));
  for (const m of used) assert.ok(methods.NativeGuard.has(m), `lib/ calls NativeGuard ${m}, which native.d.ts declares`);
  for (const m of [...lib.matchAll(/addon\.(\w+)\(/g)]) assert.ok(names.has(m[1]), `lib/ calls addon.${m[1]}`);
});

test('the default export is the CommonJS module', () => {
  assert.equal(esm.default, require('loopguard'));
});
