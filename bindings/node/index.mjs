// The ESM entry point: the same objects as the CommonJS one (one module instance).
import loopguard from './lib/index.cjs';

export const { Guard, RemoteGuard, LoopguardError, EventError, ConfigError, StoreError, RunEndedError, verdictOf, toEventJson } =
  loopguard;
export default loopguard;
