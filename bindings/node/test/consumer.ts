// A small TypeScript program using the package as a user would: test/typescript.test.mjs
// type-checks it with `tsc --noEmit --strict` against the declarations the package ships. Each
// `@ts-expect-error` line is a misuse the declarations must refuse (tsc fails on one they accept).
import loopguard, { Guard, RemoteGuard, EventError, RunEndedError, toEventJson, verdictOf } from 'loopguard';
import type { CallDecision, OutcomeDecision, SessionInfo, GuardOptions, Effect, Verdict } from 'loopguard';
import { protectTools, runVerdict, stopWhen, LoopGuardBlockedError } from 'loopguard/ai-sdk';
import { createLoopGuardMiddleware } from 'loopguard/langchain';
import { loopGuardToolGuardrails, protectAgent } from 'loopguard/openai-agents';
import { createLoopGuardHooks } from 'loopguard/mastra';

const options: GuardOptions = { config: { tools: { loopDetection: { enabled: true } } }, mode: 'observe' };
const guard = new Guard(options);
const call: CallDecision = guard.beforeCall('s', 'read', { path: '/a' }, { run: 'r1', callId: 'c1' });
if (call.action === 'block' || call.action === 'abort') {
  const told: string | undefined = call.message;
  void told;
}
const effect: Effect = call.effect;
const refused: boolean = effect === 'refuse' || effect === 'end_run';
// @ts-expect-error: not an effect
const notAnEffect: Effect = 'stop';
void [refused, notAnEffect];
const after: OutcomeDecision = guard.afterCall('s', 'read', { path: '/a' }, { result: 'text', callId: 'c1' });
const hash: string | null | undefined = after.resultHash;
guard.afterCall('s', 'read', {}, { error: new Error('boom') });
guard.onCompaction('s', { run: 'r1' });
const record = guard.event({ type: 'call', tool: 'read', args: {} });
const word: 'allow' | 'warn' | 'block' | 'recorded' | 'ignored' | 'abort' | 'armed' = record.decision;
const info: SessionInfo | null = guard.session('s');
const all: SessionInfo[] = guard.sessions();
const forgotten: boolean = guard.forget('s');
const same: Guard = Guard.attach(guard.share());
same.close();
same[Symbol.dispose]();
const text: string = toEventJson({ a: 1 }, 'args');
const isEventError = (e: unknown): boolean => e instanceof EventError && e.field !== undefined;
void [hash, word, info, all, forgotten, same, text, isEventError, loopguard.Guard];

async function remote(): Promise<void> {
  const r: RemoteGuard = Guard.remote('http://127.0.0.1:1', { token: 't', timeout: 1 });
  const d: CallDecision = await r.beforeCall('s', 'read', {});
  const o: OutcomeDecision = await r.afterCall('s', 'read', {}, { result: 1 });
  const again: RemoteGuard = Guard.attach(r.share());
  void [d, o, again];
}
void remote;

const verdict: Verdict = verdictOf(call);
const ended = RunEndedError.of(call);
const endedBy: [string | null, string, Verdict | null] = [ended.verdict.tool, new RunEndedError(verdict).message, runVerdict({ guard })];
// @ts-expect-error a verdict's count is a number or null
const countText: string = verdict.count;
void [endedBy, countText];

const tools = protectTools({ read: { execute: async () => 'x' } }, { guard, session: 's' });
const stop: (state: unknown) => boolean = stopWhen({ guard });
const blocked = (e: unknown): CallDecision | null => (e instanceof LoopGuardBlockedError ? e.decision : null);
const middleware = createLoopGuardMiddleware({ guard });
const named: string = middleware.name;
// @ts-expect-error: the middleware is typed (not `any`)
middleware.noSuchHook();
void named;
void [tools, stop, blocked, createLoopGuardMiddleware, loopGuardToolGuardrails, protectAgent, createLoopGuardHooks];

// Misuses the declarations refuse.
// @ts-expect-error the session is a string
guard.beforeCall(1, 'read', {});
// @ts-expect-error an outcome is { result } or { error }, not both
guard.afterCall('s', 'read', {}, { result: 1, error: 'x' });
// @ts-expect-error no such mode
new Guard({ mode: 'strict' });
// @ts-expect-error a local guard answers synchronously, not with a promise
const notAPromise: Promise<CallDecision> = guard.beforeCall('s', 'read', {});
void notAPromise;
