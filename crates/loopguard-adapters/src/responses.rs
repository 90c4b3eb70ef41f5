//! OpenAI Responses items and Codex CLI rollouts.
