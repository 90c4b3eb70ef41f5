import m from './mastra.cjs';

export const { createLoopGuardHooks } = m;
export default m;
