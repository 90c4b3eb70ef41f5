//! OpenClaw / pi session JSONL (versions 1 to 3; 4 and unknown entry types tolerated).
