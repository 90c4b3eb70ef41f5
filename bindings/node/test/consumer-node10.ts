// A consumer compiled under `moduleResolution: node10` (tsc's classic "node" resolution, which
// reads no `exports`): test/typescript.test.mjs type-checks it. Each subpath resolves through the
// package's `typesVersions`; without them every import below is TS2307 ("cannot find module").
// (`loopguard/langchain` is left out: LangChain's own declarations need node16 or newer.)
import { Guard } from 'loopguard';
import { protectTools } from 'loopguard/ai-sdk';
import { protectAgent } from 'loopguard/openai-agents';
import { createLoopGuardHooks } from 'loopguard/mastra';
import { refuses } from 'loopguard/common';

const guard = new Guard();
const hooks = createLoopGuardHooks({ guard });
// @ts-expect-error: the declarations were found (an unresolved module would be `any`)
hooks.noSuchHook();
void [protectTools, protectAgent, refuses];
