//! OpenClaw's SQLite transcript store (`transcript_events`).
