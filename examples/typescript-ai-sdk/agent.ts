// loopguard with the Vercel AI SDK (docs/typescript.md): `protectTools` puts the guard in
// front of each tool's `execute`, `stopWhen` ends the loop if the guard ends the run. The
// model is the AI SDK's scripted MockLanguageModelV4 (no network, no API key): like a stuck
// model, it asks to read the same file 25 times. The tool runs 20 times; its 11th result
// carries the guard's warning for the model; calls 21 to 25 are refused (the model gets the
// block message as the tool's error) and the tool does not run.
//
// Run it in a project with the package, the AI SDK (ai 7) and TypeScript installed:
//   scripts/build-node.sh     # prints the tarball, target/npm/loopguard-0.1.0.tgz
//   npm install /path/to/loopguard-0.1.0.tgz ai@7 typescript
//   npx tsc --strict --skipLibCheck --module nodenext --target es2022 agent.ts && node agent.js
// (scripts/test-node.sh runs it: bindings/node/test/examples.test.mjs.)
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { Guard } from 'loopguard';
import { protectTools, stopWhen } from 'loopguard/ai-sdk';

const tokens = { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0, text: 1, reasoning: 0 };
const usage = { inputTokens: tokens, outputTokens: tokens };
let turns = 0;
const model = new MockLanguageModelV4({
  doGenerate: async () => {
    turns += 1;
    if (turns > 25) {
      const content = [{ type: 'text' as const, text: 'I could not find the port.' }];
      return { content, finishReason: { unified: 'stop' as const, raw: 'stop' }, usage, warnings: [] };
    }
    const input = JSON.stringify({ path: '/srv/app/config.yaml' });
    const content = [{ type: 'tool-call' as const, toolCallId: `call-${turns}`, toolName: 'readFile', input }];
    return { content, finishReason: { unified: 'tool-calls' as const, raw: 'tool_calls' }, usage, warnings: [] };
  },
});

let toolRuns = 0;
const readFile = tool({
  description: 'Reads a file',
  inputSchema: jsonSchema<{ path: string }>({
    type: 'object', properties: { path: { type: 'string' } }, required: ['path'],
  }),
  execute: async () => {
    toolRuns += 1;
    return 'port: 8080';
  },
});

// The guard: loop detection on, OpenClaw's default thresholds, sessions in memory.
const guard = new Guard();
const where = { guard, session: 'chat-1' };
const result = await generateText({
  model,
  prompt: 'Which port does the app use?',
  tools: protectTools({ readFile }, where),
  stopWhen: [stepCountIs(40), stopWhen(where)],
});

// What the model was given back for each of its calls.
let n = 0;
for (const part of result.steps.flatMap((step) => step.content)) {
  if (part.type === 'tool-result') console.log(`call ${++n}: result: ${JSON.stringify(part.output)}`);
  if (part.type === 'tool-error') console.log(`call ${++n}: error: ${JSON.stringify(String(part.error))}`);
}
console.log(`readFile ran ${toolRuns} times; the agent answered: ${result.text}`);
