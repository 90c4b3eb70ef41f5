import type { Guard, RemoteGuard } from '../index';

/** Where the hooks report. */
export interface LoopGuardHooksOptions {
  guard: Guard | RemoteGuard;
  /** The session (a thread); "default" when absent. */
  session?: string;
  run?: string;
  agent?: string;
  logger?: { warn(message: string): void };
}

/** Mastra tool hooks (`new Agent({ hooks })`) and a stop condition for `generate`/`stream`. */
export declare function createLoopGuardHooks(options: LoopGuardHooksOptions): {
  beforeToolCall(context: { toolName: string; input: unknown; context?: unknown }): Promise<{ proceed: false; output: string } | undefined>;
  afterToolCall(context: { toolName: string; input: unknown; context?: unknown; output?: unknown; error?: unknown }): Promise<void>;
  stopWhen(state?: unknown): boolean;
};
