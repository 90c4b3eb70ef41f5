import type { AgentMiddleware } from 'langchain';
import type { Guard, RemoteGuard } from '../index';

/** Options of the LangChain.js middleware. */
export interface LoopGuardMiddlewareOptions {
  guard: Guard | RemoteGuard;
  /** The session; the LangGraph thread id ("default" without one) when absent. */
  session?: string;
  run?: string;
  agent?: string;
  logger?: { warn(message: string): void };
}

/** The loopguard middleware for LangChain's `createAgent` (`wrapToolCall`, `beforeModel`). */
export declare function createLoopGuardMiddleware(options: LoopGuardMiddlewareOptions): AgentMiddleware;
