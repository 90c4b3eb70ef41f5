//! The OpenClaw call-stream JSON.
