//! Claude Code session JSONL.
