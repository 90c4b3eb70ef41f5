// A consumer compiled under `moduleResolution: node10` (tsc's classic "node" resolution, which
// reads no `exports`): test/typescript.test.mjs type-checks it. Each subpath resolves through the
// package's `typesVersions`; without them every import below is TS2307 ("cannot find module").
import { Guard } from 'loopguard';
import { protectTools } from 'loopguard/ai-sdk';
import { createLoopGuardMiddleware } from 'loopguard/langchain';
import { protectAgent } from 'loopguard/openai-agents';
import { createLoopGuardHooks } from 'loopguard/mastra';
import { refuses } from 'loopguard/common';

const guard = new Guard();
const hooks = createLoopGuardHooks({ guard });
// @ts-expect-error: the declarations were found (an unresolved module would be `any`)
hooks.noSuchHook();
void [protectTools, createLoopGuardMiddleware, protectAgent, refuses];
