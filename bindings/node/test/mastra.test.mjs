// loopguard/mastra with the real Mastra (@mastra/core): an Agent whose model is the AI SDK's
// MockLanguageModelV4, scripted to call the same tool with the same arguments 25 times. The real
// tool runs 20 times; the model gets the warning with result 11 and the block from result 21 on.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Guard } from 'loopguard';
import { createLoopGuardHooks } from 'loopguard/mastra';
import * as z from 'zod';
import { agentsDir, runProgram } from './helpers.mjs';

const require = createRequire(import.meta.url);

const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };

function scriptedModel(calls, seen) {
  let step = 0;
  const respond = async ({ prompt }) => {
    const last = prompt.at(-1);
    if (last?.role === 'tool') seen.push(last.content.find((p) => p.type === 'tool-result')?.output);
    step += 1;
    if (step > calls) return { content: [{ type: 'text', text: 'giving up' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
    return {
      content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName: 'read', input: JSON.stringify({ path: '/same.txt' }) }],
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage,
      warnings: [],
    };
  };
  return new MockLanguageModelV4({
    doGenerate: respond,
    doStream: async (options) => {
      const r = await respond(options);
      const parts = [{ type: 'stream-start', warnings: [] }];
      for (const c of r.content) {
        if (c.type === 'text') parts.push({ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: c.text }, { type: 'text-end', id: 't' });
        else parts.push(c);
      }
      parts.push({ type: 'finish', finishReason: r.finishReason, usage });
      return { stream: new ReadableStream({ start: (ctl) => { parts.forEach((p) => ctl.enqueue(p)); ctl.close(); } }) };
    },
  });
}

function readTool(counter) {
  return createTool({
    id: 'read',
    description: 'Reads a file',
    inputSchema: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      counter.runs += 1;
      return { text: `contents of ${path}` };
    },
  });
}

const show = (output) => JSON.stringify(output);

test('25 identical calls: the tool runs 20 times, warning with result 11, block from result 21', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const seen = [];
  const hooks = createLoopGuardHooks({ guard, session: 'mastra-25' });
  const agent = new Agent({ id: 'reader', name: 'reader', instructions: 'read', model: scriptedModel(25, seen), tools: { read: readTool(counter) }, hooks });
  const result = await agent.generate('read the file until it changes', { stopWhen: [stepCountIs(40), hooks.stopWhen] });
  assert.equal(counter.runs, 20);
  assert.equal(seen.length, 25);
  seen.forEach((output, i) => {
    const n = i + 1;
    if (n === 11) assert.match(show(output), /WARNING: You have called read 10 times with identical arguments/);
    else if (n <= 20) assert.doesNotMatch(show(output), /WARNING|CRITICAL/, `result ${n}`);
    if (n >= 21) assert.match(show(output), /CRITICAL: Called read with identical arguments and identical outcomes 20 times/, `result ${n}`);
  });
  assert.equal(result.text, 'giving up');
  assert.equal(guard.session('mastra-25').blocks, 5);
});

test('an abort (a loop surviving a compaction) ends the loop through hooks.stopWhen', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const seen = [];
  guard.onCompaction('mastra-abort', { run: 'r1' });
  const hooks = createLoopGuardHooks({ guard, session: 'mastra-abort', run: 'r1' });
  const agent = new Agent({ id: 'reader', name: 'reader', instructions: 'read', model: scriptedModel(25, seen), tools: { read: readTool(counter) }, hooks });
  await agent.generate('go', { stopWhen: [stepCountIs(40), hooks.stopWhen] });
  assert.equal(counter.runs, 3);
  assert.equal(guard.session('mastra-abort').aborts, 1);
  assert.equal(hooks.stopWhen(), true);
});

test('a Mastra that ignores tool hooks (@mastra/core 0.24, what npm installs on Node 20) is refused at wrap time', async () => {
  // The real 0.24.9 package, installed by scripts/setup-node-agents.sh into its own project; the
  // program runs there, as a user's would.
  const project = path.join(agentsDir(), 'mastra-0');
  const pkg = path.join(project, 'node_modules/@mastra/core/package.json');
  assert.ok(fs.existsSync(pkg), `${pkg} is missing: run scripts/setup-node-agents.sh`);
  const program = [
    `const { Guard } = require(${JSON.stringify(require.resolve('loopguard'))});`,
    `const { createLoopGuardHooks } = require(${JSON.stringify(require.resolve('loopguard/mastra'))});`,
    "try { createLoopGuardHooks({ guard: new Guard() }); console.log('accepted'); } catch (e) { console.log(e.message); }",
  ].join('\n');
  const out = await runProgram(process.execPath, ['-e', program], { cwd: project });
  assert.equal(out.code, 0, out.stderr);
  assert.match(out.stdout, /@mastra\/core 0\.24\.9 ignores an agent's tool hooks/);
  assert.match(out.stdout, /install @mastra\/core 1\.x/);
  // The same program in the tested project (1.71.0) is accepted.
  const ok = await runProgram(process.execPath, ['-e', program], { cwd: path.dirname(fileURLToPath(import.meta.url)) });
  assert.equal(ok.stdout.trim(), 'accepted', ok.stderr);
});
