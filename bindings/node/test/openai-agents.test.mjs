// loopguard/openai-agents with the real OpenAI Agents SDK (@openai/agents-core, which
// @openai/agents re-exports): a custom Model scripted to call the same tool with the same
// arguments 25 times. The real tool runs 20 times; the model gets the warning with result 11 and
// the block message from result 21 on; an abort ends the run with the SDK's tripwire error.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Agent, run, tool, Usage } from '@openai/agents-core';
import { Guard } from 'loopguard';
import { protectAgent } from 'loopguard/openai-agents';
import * as z from 'zod';

class ScriptedModel {
  constructor(calls) {
    this.calls = calls;
    this.step = 0;
    this.seen = [];
  }
  async getResponse(request) {
    const last = Array.isArray(request.input) ? request.input.at(-1) : null;
    if (last?.type === 'function_call_result') this.seen.push(last.output);
    this.step += 1;
    const output =
      this.step > this.calls
        ? [{ type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'giving up' }] }]
        : [{ type: 'function_call', callId: `call-${this.step}`, name: 'read', arguments: JSON.stringify({ path: '/same.txt' }), status: 'completed' }];
    return { usage: new Usage(), output, responseId: `r-${this.step}` };
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse() {
    throw new Error('not streamed in this test');
  }
}

function readTool(counter) {
  return tool({
    name: 'read',
    description: 'Reads a file',
    parameters: z.object({ path: z.string() }),
    execute: async ({ path }) => {
      counter.runs += 1;
      return `contents of ${path}`;
    },
  });
}

const text = (output) => (typeof output === 'string' ? output : output?.text ?? JSON.stringify(output));

test('25 identical calls: the tool runs 20 times, warning with result 11, block from result 21', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const model = new ScriptedModel(25);
  const agent = protectAgent(new Agent({ name: 'reader', instructions: 'read', model, tools: [readTool(counter)] }), { guard, session: 'oa-25' });
  const result = await run(agent, 'read the file until it changes', { maxTurns: 40, tracingDisabled: true });
  assert.equal(counter.runs, 20);
  assert.equal(model.seen.length, 25);
  model.seen.forEach((output, i) => {
    const n = i + 1;
    if (n === 11) assert.match(text(output), /^contents of \/same.txt\n\nWARNING: You have called read 10 times with identical arguments/);
    else if (n <= 20) assert.equal(text(output), 'contents of /same.txt', `result ${n}`);
    if (n >= 21) assert.match(text(output), /^CRITICAL: Called read with identical arguments and identical outcomes 20 times/, `result ${n}`);
  });
  assert.equal(result.finalOutput, 'giving up');
  assert.equal(guard.session('oa-25').blocks, 5);
});

test('an abort (a loop surviving a compaction) ends the run', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  guard.onCompaction('oa-abort', { run: 'r1' });
  const agent = protectAgent(new Agent({ name: 'reader', model: new ScriptedModel(25), tools: [readTool(counter)] }), {
    guard,
    session: 'oa-abort',
    run: 'r1',
  });
  await assert.rejects(run(agent, 'go', { maxTurns: 40, tracingDisabled: true }), (e) => /guardrail/i.test(`${e.name} ${e.message}`));
  assert.equal(counter.runs, 3);
  assert.equal(guard.session('oa-abort').aborts, 1);
});

test('onCritical "end-run": the run ends at the first critical with the verdict as the tripwire\'s outputInfo', async () => {
  const guard = new Guard({ config: { tools: { loopDetection: { enabled: true } }, loopguard: { onCritical: 'end-run' } } });
  const counter = { runs: 0 };
  const agent = protectAgent(new Agent({ name: 'reader', model: new ScriptedModel(25), tools: [readTool(counter)] }), {
    guard,
    session: 'oa-end',
    run: 'r1',
  });
  let error;
  await assert.rejects(run(agent, 'go', { maxTurns: 40, tracingDisabled: true }), (e) => {
    error = e;
    return /guardrail/i.test(`${e.name} ${e.message}`);
  });
  assert.equal(counter.runs, 20);
  // run() rejects with the SDK's ToolCallError, whose `error` is the guardrail's tripwire.
  const tripwire = error.error;
  assert.equal(tripwire?.constructor?.name, 'ToolInputGuardrailTripwireTriggered', `${error.name}: ${error.message}`);
  const verdict = tripwire.result.output.outputInfo;
  assert.deepEqual(
    [verdict.session, verdict.run, verdict.tool, verdict.detector, verdict.count, verdict.effect],
    ['oa-end', 'r1', 'read', 'generic_repeat', 20, 'end_run'],
  );
  assert.match(verdict.message, /^CRITICAL: Called read with identical arguments and identical outcomes 20 times/);
});
