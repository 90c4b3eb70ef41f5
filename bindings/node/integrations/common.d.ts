// `loopguard/common`: what the integrations and the agent plugins share (integrations/common.cjs).
import type { CallDecision, CallOptions, Guard, OutcomeDecision, RemoteGuard, Verdict } from '../index';

type AnyDecision = { effect: string; action?: string; type?: string; message?: string; count?: number; emitted?: boolean } | null | undefined;

/** Where the checks go: the guard, the session ("default" when absent), the run and agent. */
export interface Context {
  guard: Guard | RemoteGuard;
  session?: string;
  run?: string;
  agent?: string;
  logger?: { warn(message: string): void };
}

/** The before-call decision, or null when the store is unreachable (failing open, with a warning). */
export declare function before(ctx: Context, tool: string, args: unknown, callId?: string): Promise<CallDecision | null>;
/** The after-call decision (null when not recorded); a decision that ends the run stops it (`markStopped`). */
export declare function after(
  ctx: Context,
  tool: string,
  args: unknown,
  callId: string | undefined,
  outcome: { result?: unknown; error?: unknown },
): Promise<OutcomeDecision | null>;
/** True when the session's run was stopped: in the guard's store (a local guard), or in this process. */
export declare function isStopped(guard: Guard | RemoteGuard, session: string, run?: string | null, logger?: Context['logger']): boolean;
/**
 * Marks the session's run stopped: in the guard's store (a local guard) and in this process,
 * with the loop's verdict (`runVerdict` gives it back; a plain one from `message` when absent).
 */
export declare function markStopped(
  guard: Guard | RemoteGuard,
  session: string,
  run?: string | null,
  message?: string,
  logger?: Context['logger'],
  verdict?: Verdict,
): void;
/** The verdict of the session's run stopped in this process (`markStopped`), or null. */
export declare function runVerdict(guard: Guard | RemoteGuard, session: string, run?: string | null): Verdict | null;
/** Keeps the message of a decision whose effect is 'notice' until `takeNotice(guard, id)`. */
export declare function keepNotice(guard: Guard | RemoteGuard, id: string, decision: AnyDecision): void;
/** The notice kept for `id` (forgotten once taken), or undefined. */
export declare function takeNotice(guard: Guard | RemoteGuard, id: string): string | undefined;
/** True when the call must not run (effect 'refuse', 'ask' or 'end_run'). */
export declare function refuses(decision: AnyDecision): boolean;
/** True when the decision ends the run (effect 'end_run'). */
export declare function endsRun(decision: AnyDecision): boolean;
/** True when the model should be shown the decision's message with the result (effect 'notice'). */
export declare function notices(decision: AnyDecision): boolean;
/** `result` with a warning the model should see (appended to a string, a `loopguard` field otherwise). */
export declare function withWarning(result: unknown, message: string): unknown;
/**
 * What the `openclaw` release 2026.9.6 shows the model for a call's decision under the
 * `openclaw-2026.9.6` profile: the tool result given instead of a vetoed call (`block`, or
 * `abort` ending the run), or the note appended to the tool result after an emitted warning.
 */
export declare function openclawShown(decision: AnyDecision): string | undefined;
/** The profile of the OpenClaw release `version`: `openclaw-2026.9.6` for it and later ones, `openclaw` for older ones, null for no version. */
export declare function openclawProfileFor(version: unknown): 'openclaw' | 'openclaw-2026.9.6' | null;
/** The value as the model receives it: its JSON. */
export declare function modelView(value: unknown): unknown;
/** Throws a TypeError naming `who` unless `ctx` holds a guard (and a string session, if any). */
export declare function checkContext(ctx: unknown, who: string): void;
export type { CallOptions };
