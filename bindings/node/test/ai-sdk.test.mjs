// loopguard/ai-sdk with the real `ai` package: a scripted MockLanguageModelV4 calls the same tool
// with the same arguments 25 times. The real tool runs 20 times; the model sees the warning with
// result 11 and the block message (as the tool's error) from result 21 on.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Guard, RunEndedError } from 'loopguard';
import { protectTools, runVerdict, stopWhen } from 'loopguard/ai-sdk';

const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };

/** A model that asks for `read {path}` `calls` times, one call a step, and notes what it saw. */
function scriptedModel(calls, seen) {
  let step = 0;
  return new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last?.role === 'tool') seen.push(last.content[0].output);
      step += 1;
      if (step > calls) {
        return { content: [{ type: 'text', text: 'giving up' }], finishReason: { unified: 'stop', raw: 'stop' }, usage, warnings: [] };
      }
      return {
        content: [{ type: 'tool-call', toolCallId: `call-${step}`, toolName: 'read', input: JSON.stringify({ path: '/same.txt' }) }],
        finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
        usage,
        warnings: [],
      };
    },
  });
}

function readTool(counter) {
  return tool({
    description: 'Reads a file',
    inputSchema: jsonSchema({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] }),
    execute: async ({ path }) => {
      counter.runs += 1;
      return { content: [{ type: 'text', text: `contents of ${path}` }] };
    },
  });
}

const text = (output) => JSON.stringify(output.value);

test('25 identical calls: the tool runs 20 times, warning with result 11, block from result 21', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const seen = [];
  const opts = { guard, session: 'ai-sdk-25' };
  const result = await generateText({
    model: scriptedModel(25, seen),
    prompt: 'read the file until it changes',
    tools: protectTools({ read: readTool(counter) }, opts),
    stopWhen: [stepCountIs(40), stopWhen(opts)],
  });
  assert.equal(counter.runs, 20);
  assert.equal(seen.length, 25);
  seen.forEach((output, i) => {
    const n = i + 1;
    if (n <= 20) assert.equal(output.type, 'json', `result ${n} is the tool's`);
    if (n === 11) assert.match(text(output), /WARNING: You have called read 10 times with identical arguments/);
    if (n !== 11 && n <= 20) assert.doesNotMatch(text(output), /WARNING|CRITICAL/, `result ${n}`);
    if (n >= 21) {
      assert.equal(output.type, 'error-text', `result ${n} is an error`);
      assert.match(output.value, /^CRITICAL: Called read with identical arguments and identical outcomes 20 times/);
    }
  });
  assert.equal(result.text, 'giving up');
  const stats = guard.session('ai-sdk-25');
  assert.equal(stats.blocks, 5);
});

test('an abort (a loop surviving a compaction) stops the loop through stopWhen', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const seen = [];
  const opts = { guard, session: 'ai-sdk-abort', run: 'r1' };
  guard.onCompaction('ai-sdk-abort', { run: 'r1' });
  const result = await generateText({
    model: scriptedModel(25, seen),
    prompt: 'go',
    tools: protectTools({ read: readTool(counter) }, opts),
    stopWhen: [stepCountIs(40), stopWhen(opts)],
  });
  // The post-compaction guard (window 3) aborts on the third identical outcome.
  assert.equal(counter.runs, 3);
  assert.equal(result.steps.length, 3);
  assert.equal(stopWhen(opts)({ steps: result.steps }), true);
  assert.equal(guard.session('ai-sdk-abort').aborts, 1);
});

test('onCritical "ask" cannot ask here: call 21 is refused, call 22 ends the run with a typed verdict', async () => {
  const guard = new Guard({ config: { tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: 'ask' } } });
  const counter = { runs: 0 };
  const seen = [];
  const opts = { guard, session: 'ai-sdk-ask', run: 'r1' };
  const thrown = [];
  const tools = protectTools({ read: readTool(counter) }, opts);
  const execute = tools.read.execute;
  tools.read.execute = async (...args) => {
    try {
      return await execute(...args);
    } catch (e) {
      thrown.push(e);
      throw e;
    }
  };
  const result = await generateText({
    model: scriptedModel(25, seen),
    prompt: 'go',
    tools,
    stopWhen: [stepCountIs(40), stopWhen(opts)],
  });
  assert.equal(counter.runs, 20);
  // Call 21 is the ask, refused (nobody to ask); call 22 ends the run and the loop stops there.
  assert.equal(result.steps.length, 22);
  assert.equal(thrown.length, 2);
  assert.ok(!(thrown[0] instanceof RunEndedError));
  assert.match(thrown[0].message, /^CRITICAL: Called read with identical arguments and identical outcomes 20 times/);
  assert.ok(thrown[1] instanceof RunEndedError, `${thrown[1]}`);
  const verdict = thrown[1].verdict;
  assert.deepEqual(
    [verdict.session, verdict.run, verdict.tool, verdict.detector, verdict.effect, verdict.callId],
    ['ai-sdk-ask', 'r1', 'read', 'generic_repeat', 'end_run', 'call-22'],
  );
  assert.equal(thrown[1].message, verdict.message);
  assert.match(verdict.message, /^CRITICAL: /);
  assert.deepEqual(runVerdict(opts), verdict);
  assert.equal(runVerdict({ guard, session: 'another' }), null);
});
