// loopguard/langchain with the real `langchain` package: createAgent with LangChain's own
// FakeToolCallingModel scripted to call the same tool with the same arguments 25 times. The real
// tool runs 20 times; the model gets the warning with result 11 and the block (a ToolMessage with
// status "error") from result 21 on; an abort ends the agent. The model is a real LangChain chat
// model class (BaseChatModel) answering from a script, as LangChain's own FakeToolCallingModel
// does (that one repeats the whole conversation in every answer, which 25 steps cannot afford).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, createAgent, tool, ToolMessage } from 'langchain';
import { Guard } from 'loopguard';
import { createLoopGuardMiddleware } from 'loopguard/langchain';
import * as z from 'zod';

class ScriptedChatModel extends BaseChatModel {
  constructor(calls) {
    super({});
    this.calls = calls;
    this.step = 0;
    this.seen = [];
  }
  _llmType() {
    return 'scripted-tool-calling';
  }
  bindTools() {
    return this;
  }
  async _generate(messages) {
    const last = messages.at(-1);
    if (ToolMessage.isInstance(last)) this.seen.push(last);
    this.step += 1;
    const message =
      this.step > this.calls
        ? new AIMessage({ content: 'giving up' })
        : new AIMessage({ content: '', tool_calls: [{ name: 'read', args: { path: '/same.txt' }, id: `call-${this.step}`, type: 'tool_call' }] });
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

const script = (calls) => new ScriptedChatModel(calls);

function readTool(counter) {
  return tool(
    async ({ path }) => {
      counter.runs += 1;
      return `contents of ${path}`;
    },
    { name: 'read', description: 'Reads a file', schema: z.object({ path: z.string() }) },
  );
}

const toolMessages = (result) => result.messages.filter((m) => ToolMessage.isInstance(m));

test('25 identical calls: the tool runs 20 times, warning with result 11, block from result 21', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  const model = script(25);
  const agent = createAgent({ model, tools: [readTool(counter)], middleware: [createLoopGuardMiddleware({ guard })] });
  const result = await agent.invoke(
    { messages: [{ role: 'user', content: 'read the file until it changes' }] },
    { configurable: { thread_id: 'lc-25' }, recursionLimit: 200 },
  );
  assert.equal(counter.runs, 20);
  const results = toolMessages(result);
  assert.equal(results.length, 25);
  // What the model was given back after each call is what the agent's state holds.
  assert.deepEqual(model.seen.map((m) => m.content), results.map((m) => m.content));
  results.forEach((m, i) => {
    const n = i + 1;
    if (n === 11) assert.match(m.content, /^contents of \/same.txt\n\nWARNING: You have called read 10 times with identical arguments/);
    else if (n <= 20) assert.equal(m.content, 'contents of /same.txt', `result ${n}`);
    if (n >= 21) {
      assert.equal(m.status, 'error', `result ${n}`);
      assert.match(m.content, /^CRITICAL: Called read with identical arguments and identical outcomes 20 times/);
    }
  });
  assert.equal(guard.session('lc-25').blocks, 5);
});

test('an abort (a loop surviving a compaction) ends the agent', async () => {
  const guard = new Guard();
  const counter = { runs: 0 };
  guard.onCompaction('lc-abort', { run: 'r1' });
  const agent = createAgent({
    model: script(25),
    tools: [readTool(counter)],
    middleware: [createLoopGuardMiddleware({ guard, run: 'r1' })],
  });
  const result = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, { configurable: { thread_id: 'lc-abort' }, recursionLimit: 200 });
  assert.equal(counter.runs, 3);
  const results = toolMessages(result);
  assert.equal(results.length, 3);
  assert.equal(results[2].status, 'error');
  assert.match(results[2].content, /compaction/i);
  assert.equal(guard.session('lc-abort').aborts, 1);
});
