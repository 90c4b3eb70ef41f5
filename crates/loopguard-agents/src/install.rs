//! Installing loopguard's hook into each agent's settings (see below).
