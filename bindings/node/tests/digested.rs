//! The tests of the addon's line reader (`src/digested.rs`), which includes nothing of the
//! addon itself: the addon cannot be a Rust test binary, as its Node-API symbols resolve only
//! inside a running `node`.

#[path = "../src/digested.rs"]
#[allow(dead_code)]
mod digested;
