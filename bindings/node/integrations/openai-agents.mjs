import m from './openai-agents.cjs';

export const { loopGuardToolGuardrails, protectAgent } = m;
export default m;
