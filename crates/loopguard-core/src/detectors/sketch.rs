//! Normalised sketches of calls and outcomes for the strict profile's drift detectors
//! ([`super::near_repeat`], [`super::no_progress_cycle`], [`super::changing_error`]).
//!
//! A call's **arguments** are reduced to tokens: object keys in sorted order, then every
//! string split into words (ASCII letters and non-ASCII bytes), lowercased, with every run
//! of digits turned into `#`; punctuation, whitespace and quoting are dropped. Fields that
//! only describe a call ([`BOOKKEEPING_KEYS`]: Cline's `task_progress`, exec's `title`,
//! descriptions, attempt counters, …) are left out. From the tokens come a **shape** (a
//! hash of the whole token sequence: two calls with the same shape differ only in case,
//! spacing, punctuation, quoting, numbers or bookkeeping) and a **token set** (hashes of
//! the distinct tokens, so word order does not matter) for Jaccard similarity.
//!
//! An **outcome** is reduced to a hash of its text lowercased, whitespace collapsed, the
//! nonce of OpenClaw's `<<<EXTERNAL_UNTRUSTED_CONTENT id=…>>>` wrappers dropped, and the
//! numbers that change without meaning anything replaced by `#`: decimals (durations),
//! times of day, and runs of four digits or more (timestamps, pids, ports). Small integers
//! stay (line numbers, counts, file names such as `file3.txt`): they tell pages, files and
//! progress apart.

use crate::detectors::known_poll::is_known_poll_call;
use crate::outcome::{extract_text, format_error, Outcome, ResultHash};
use crate::value::Value;

/// Argument keys that only describe a call, whatever the tool (compared with `_` and `-`
/// removed, case-insensitively): Cline's `task_progress` checklist, attempt and retry
/// counters, request ids. Fields that describe the call only for some tools (a shell
/// command's `description`, exec's `title`) are in [`tool_bookkeeping_keys`]: for another
/// tool a `title` or a `description` can be the content itself (an issue's title).
pub const BOOKKEEPING_KEYS: [&str; 8] = [
    "taskprogress",
    "attempt",
    "attemptnumber",
    "attemptcount",
    "retrycount",
    "retryattempt",
    "requestid",
    "timestamp",
];

/// Per tool profile: top-level argument keys that only describe the call for these tools
/// (compared like [`BOOKKEEPING_KEYS`]; tool names case-insensitively). They come from
/// the agents' tool schemas: OpenClaw's `exec` `title` (OpenClaw's newest hashing drops
/// it too), the `description` / `explanation` / `summary` / `justification` that
/// Claude Code, Gemini CLI, Qwen Code, Copilot, Cursor, Kiro and Codex ask the model to
/// write beside a shell command or an edit, Cursor's one-line `instructions` of an edit,
/// Cline's `requires_approval`, Factory Droid's risk level, OpenHands' `security_risk`.
pub const TOOL_BOOKKEEPING: &[(&[&str], &[&str])] = &[
    (&["exec"], &["title", "description"]),
    (
        &[
            "bash",
            "shell",
            "local_shell",
            "exec_command",
            "run_shell_command",
            "execute_command",
            "execute_bash",
            "run_terminal_cmd",
            "run_command",
            "powershell",
            "execute",
            "execute_cmd",
            "container.exec",
            "beforeshellexecution",
        ],
        &[
            "description",
            "explanation",
            "summary",
            "justification",
            "requiresapproval",
            "risklevel",
            "risklevelreason",
            "securityrisk",
            "title",
        ],
    ),
    (
        &[
            "edit",
            "multiedit",
            "write",
            "edit_file",
            "write_file",
            "write_to_file",
            "replace_in_file",
            "replace",
            "create_file",
            "fs_write",
            "str_replace_editor",
            "str_replace_based_edit_tool",
            "apply_patch",
            "text_editor",
        ],
        &[
            "description",
            "explanation",
            "summary",
            "instructions",
            "securityrisk",
        ],
    ),
    (
        &[
            "read",
            "read_file",
            "fs_read",
            "list_dir",
            "list_files",
            "grep",
            "grep_search",
            "search_files",
            "file_search",
            "codebase_search",
            "glob",
            "delete_file",
        ],
        &["explanation", "description", "summary"],
    ),
];

/// The top-level keys that only describe a call of `tool`, lower-cased without `_` and `-`
/// (the strict profile's per-tool bookkeeping list: the free-text labels of shell, edit,
/// read and search tools); empty for a tool the list does not name. Tool names are compared
/// case-insensitively.
///
/// ```
/// use loopguard_core::detection::tool_bookkeeping_keys;
/// assert!(tool_bookkeeping_keys(b"Bash").contains(&"description"));
/// assert!(tool_bookkeeping_keys(b"my_tool").is_empty());
/// ```
pub fn tool_bookkeeping_keys(tool: &[u8]) -> &'static [&'static str] {
    TOOL_BOOKKEEPING
        .iter()
        .find(|(tools, _)| {
            tools
                .iter()
                .any(|t| t.as_bytes().eq_ignore_ascii_case(tool))
        })
        .map_or(&[], |(_, keys)| keys)
}

/// Outcome texts longer than this (bytes) have only their first KiB normalised; the exact
/// result hash stands for the rest. Up to it, the first and last KiB are normalised and the
/// middle hashed as it is.
pub const MAX_NORMALISED: usize = 64 * 1024;

/// Bytes normalised at each end of a longer outcome. 1 KiB holds the header and the summary
/// of a command's output (timings, counts, pids); 2 KiB gave the same decisions on the
/// calibration set (`crates/loopguard/tests/strict_eval.rs`) at twice the cost per call.
const NORMALISED_ENDS: usize = 1024;

/// The most token hashes kept per call.
const MAX_TOKENS: usize = 256;

/// Flag: the call only prints its own literal text (`echo`, `printf`, `true`, `:`).
pub const ECHO_ONLY: u8 = 1;
/// Flag: the call waits on something running (a poll).
pub const POLL: u8 = 2;
/// Flag: the outcome carries no text at all (an empty success).
pub const EMPTY_OUTCOME: u8 = 4;
/// Flag: the call was blocked and never ran; the ledger counts it as one more repeat of
/// the outcome it was blocked for (`countVetoes`).
pub const VETOED: u8 = 8;
/// Flag: the call searches or lists (a search tool, or a shell command that is `find`,
/// `grep`, `rg`, `ls`, … after any `cd DIR &&`): its empty answer means "not found".
pub const SEARCH: u8 = 16;
/// Flag: the outcome is the shell refusing the command itself (`command not found`, a
/// syntax error): what prose sent as a command gets back.
pub const SHELL_ERROR: u8 = 32;
/// Flag: a short outcome saying nothing was found (`No matches found`, `No files found`,
/// `0 results`, …): a search tool's way of answering empty.
pub const NO_MATCH: u8 = 64;
/// Flag: the call changes something in a way that adds up when it is made again: a write
/// (its arguments hold a content key and a target, [`ArgsSketch::target`]), or a shell
/// command that appends (`>>`, `tee -a`), edits in place (`sed -i`, `perl -i`) or applies
/// a patch (`patch`, `git apply`). See [`is_mutating_command`].
pub const MUTATES: u8 = 128;

/// The normalised arguments of a call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgsSketch {
    /// Hash of the normalised token sequence.
    pub shape: u64,
    /// Sorted, de-duplicated hashes of the tokens (at most 256).
    pub tokens: Vec<u32>,
    /// Bit 1: output-only confirmation; bit 2: a poll (see [`is_echo_only`], [`is_wait_call`]);
    /// [`SEARCH`]; [`MUTATES`].
    pub flags: u8,
    /// Hash of the numbers the arguments hold, in order (the digit runs the shape writes as
    /// `#`): two calls of one shape whose numbers differ count *up* (`ls 3` after `ls 2`,
    /// `file7.txt` after `file6.txt`, another page), a progression rather than a repeat.
    pub numbers: u64,
    /// For a write (the arguments hold a content key: `content`, `file_text`, `new_str`,
    /// …), the hash of its target path; 0 for any other call. A write that succeeds on a
    /// new target is progress, whatever it writes.
    pub target: u64,
}

impl ArgsSketch {
    /// Whether a successful earlier call `earlier` and this one are steps of a progression:
    /// the same shape with other numbers (counting arguments, paging, new operands), or
    /// writes to different targets.
    pub fn progresses_from(&self, earlier: &ArgsSketch) -> bool {
        self.numbers != earlier.numbers || (self.target != earlier.target && self.target != 0)
    }
}

/// A call with its outcome, as the ledger keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sketch {
    /// The arguments.
    pub args: ArgsSketch,
    /// Hash of the normalised outcome (failure or not included).
    pub outcome: u64,
    /// The argument flags plus bit 4: the outcome was empty.
    pub flags: u8,
    /// For a call that [mutates](MUTATES), the hash of its outcome normalised as
    /// [`Sketch::outcome`] with **every** number masked (counts, counters, line numbers):
    /// two answers with the same `counts` differ at most in their numbers. 0 for any other
    /// call, and in sketches saved by earlier versions (never equal to a real one).
    pub counts: u64,
}

impl Sketch {
    /// Whether the call only echoed its own text.
    pub fn echo_only(&self) -> bool {
        self.flags & ECHO_ONLY != 0
    }
    /// Whether the call was a poll.
    pub fn poll(&self) -> bool {
        self.flags & POLL != 0
    }
    /// Whether the outcome was empty.
    pub fn empty_outcome(&self) -> bool {
        self.flags & EMPTY_OUTCOME != 0
    }
    /// Whether the call was blocked, its outcome copied from the one it repeats.
    pub fn vetoed(&self) -> bool {
        self.flags & VETOED != 0
    }
    /// Whether the call changes something that adds up when it is made again ([`MUTATES`]).
    pub fn mutates(&self) -> bool {
        self.flags & MUTATES != 0
    }
    /// Whether the call was a search or listing ([`SEARCH`]).
    pub fn search(&self) -> bool {
        self.flags & SEARCH != 0
    }
    /// Whether the outcome was empty or said that nothing was found ([`NO_MATCH`]).
    pub fn nothing_found(&self) -> bool {
        self.flags & (EMPTY_OUTCOME | NO_MATCH) != 0
    }
    /// Whether the outcome was the shell refusing the command ([`SHELL_ERROR`]).
    pub fn shell_error(&self) -> bool {
        self.flags & SHELL_ERROR != 0
    }
}

const FNV64: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x100_0000_01b3;

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// `key` equals `name` with `_` and `-` removed, ASCII case ignored (no allocation).
fn key_is(key: &[u8], name: &str) -> bool {
    let mut it = key.iter().filter(|b| !matches!(b, b'_' | b'-'));
    let mut want = name.bytes();
    loop {
        match (it.next(), want.next()) {
            (None, None) => return true,
            (Some(k), Some(w)) if k.to_ascii_lowercase() == w => {}
            _ => return false,
        }
    }
}

/// Whether `key` only describes the call: a general bookkeeping key anywhere, or one of
/// the tool's own (`tool_keys`) at the top level.
fn is_bookkeeping(key: &[u8], tool_keys: &[&str]) -> bool {
    // Most keys (`path`, `command`, `limit`) are told apart by their first letter.
    let Some(first) = key
        .iter()
        .find(|b| !matches!(b, b'_' | b'-'))
        .map(u8::to_ascii_lowercase)
    else {
        return false;
    };
    let maybe = |b: &str| b.as_bytes().first() == Some(&first) && key_is(key, b);
    let general = first.is_ascii_lowercase() && BOOKKEEPING_FIRSTS & (1 << (first - b'a')) != 0;
    (general && BOOKKEEPING_KEYS.iter().any(|b| maybe(b))) || tool_keys.iter().any(|b| maybe(b))
}

/// The bit of an ASCII letter (either case) in [`BOOKKEEPING_FIRSTS`]; 0 for other bytes.
#[inline]
fn letter_bit(b: u8) -> u32 {
    let b = b.to_ascii_lowercase();
    if b.is_ascii_lowercase() {
        1 << (b - b'a')
    } else {
        0
    }
}

/// The first letters of [`BOOKKEEPING_KEYS`], one bit each: most keys need no comparison.
const BOOKKEEPING_FIRSTS: u32 = {
    let mut mask = 0u32;
    let mut i = 0;
    while i < BOOKKEEPING_KEYS.len() {
        let b = BOOKKEEPING_KEYS[i].as_bytes()[0];
        assert!(b.is_ascii_lowercase());
        mask |= 1 << (b - b'a');
        i += 1;
    }
    mask
};

/// [`WORD_BYTES`]: a byte that ends a word.
const SEPARATOR: u8 = 0;
/// [`WORD_BYTES`]: a digit.
const DIGIT: u8 = 1;
/// The class of each byte in an argument's text: [`SEPARATOR`], [`DIGIT`], or the byte as
/// it goes into a word (ASCII letters lowercased, `_` and every non-ASCII byte as they are).
const WORD_BYTES: [u8; 256] = {
    let mut t = [SEPARATOR; 256];
    let mut i = 0;
    while i < 256 {
        let b = i as u8;
        t[i] = if b.is_ascii_digit() {
            DIGIT
        } else if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 {
            b.to_ascii_lowercase()
        } else {
            SEPARATOR
        };
        i += 1;
    }
    t
};

struct Tokens {
    shape: u64,
    /// The numbers met, in order (see [`ArgsSketch::numbers`]).
    numbers: u64,
    set: TokenSet,
    /// The short numbers met on the way (see [`Echoed`]).
    echoed: Echoed,
}

/// Token hashes as they are met: on the stack for the usual few dozen, in a vector past
/// that.
struct TokenSet {
    inline: [u32; 64],
    len: usize,
    spilled: Vec<u32>,
}

impl Default for TokenSet {
    fn default() -> Self {
        TokenSet {
            inline: [0; 64],
            len: 0,
            spilled: Vec::new(),
        }
    }
}

impl TokenSet {
    #[inline]
    fn push(&mut self, h: u32) {
        if self.spilled.is_empty() {
            if let Some(slot) = self.inline.get_mut(self.len) {
                *slot = h;
                self.len += 1;
                return;
            }
            self.spilled.extend_from_slice(&self.inline);
        }
        self.spilled.push(h);
    }

    /// Sorted, de-duplicated, at most [`MAX_TOKENS`], into `out` (its allocation reused).
    fn finish_into(&mut self, out: &mut Vec<u32>) {
        let v: &mut [u32] = if self.spilled.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spilled
        };
        v.sort_unstable();
        let mut k = 0;
        for i in 0..v.len() {
            if k == 0 || v[i] != v[k - 1] {
                v[k] = v[i];
                k += 1;
            }
        }
        out.clear();
        out.extend_from_slice(&v[..k.min(MAX_TOKENS)]);
    }
}

/// FNV-1a of one token being read, byte by byte: the same values as hashing the whole
/// token at once, without buffering it (the reference tokeniser of the tests).
#[cfg(test)]
struct Word {
    shape: u64,
    token: u64,
    len: usize,
}

#[cfg(test)]
impl Word {
    #[inline]
    fn feed(&mut self, b: u8) {
        self.shape = (self.shape ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        self.token = (self.token ^ u64::from(b)).wrapping_mul(FNV_PRIME);
        self.len += 1;
    }
}

impl Tokens {
    /// Notes a number (its digit count and value; a JSON number as its bits) in
    /// [`Tokens::numbers`].
    #[inline]
    fn number(&mut self, digits: u64, value: u64) {
        self.numbers = mix_lane(self.numbers ^ digits, value);
    }

    fn push(&mut self, token: &[u8]) {
        self.shape = fnv(fnv(self.shape, token), b"\0");
        self.set.push(fnv(FNV64, token) as u32);
    }

    #[cfg(test)]
    fn start(&self) -> Word {
        Word {
            shape: self.shape,
            token: FNV64,
            len: 0,
        }
    }

    /// Ends the word `w` (nothing when it is empty): `push` of its bytes.
    #[cfg(test)]
    fn flush(&mut self, w: &mut Word) {
        if w.len > 0 {
            self.shape = fnv(w.shape, b"\0");
            self.set.push(w.token as u32);
        }
        *w = self.start();
    }

    /// A string's tokens: runs of word bytes (lowercased), and each run of digits as `#`
    /// (its value noted when it has one to three digits); everything else separates.
    fn text(&mut self, s: &[u8]) {
        let mut i = 0;
        while i < s.len() {
            let c = WORD_BYTES[usize::from(s[i])];
            if c > DIGIT {
                // A word, hashed in a tight loop (`push` of its bytes).
                let (mut shape, mut token) = (self.shape, FNV64);
                while i < s.len() {
                    let c = WORD_BYTES[usize::from(s[i])];
                    if c <= DIGIT {
                        break;
                    }
                    shape = (shape ^ u64::from(c)).wrapping_mul(FNV_PRIME);
                    token = (token ^ u64::from(c)).wrapping_mul(FNV_PRIME);
                    i += 1;
                }
                self.shape = fnv(shape, b"\0");
                self.set.push(token as u32);
            } else if c == DIGIT {
                let start = i;
                // The value matters only for one to three digits (wraps harmlessly past that).
                let mut value = 0u64;
                while i < s.len() && s[i].is_ascii_digit() {
                    value = value.wrapping_mul(10).wrapping_add(u64::from(s[i] - b'0'));
                    i += 1;
                }
                let digits = (i - start) as u64;
                if digits <= 3 {
                    self.echoed.set(digits, value);
                }
                self.number(digits, value);
                self.push(b"#");
            } else {
                i += 1;
            }
        }
    }

    /// A key's token: `k:` and the key, lowercased.
    fn key(&mut self, k: &[u8]) {
        let (mut shape, mut token) = (fnv(self.shape, b"k:"), fnv(FNV64, b"k:"));
        for &b in k {
            let b = u64::from(b.to_ascii_lowercase());
            shape = (shape ^ b).wrapping_mul(FNV_PRIME);
            token = (token ^ b).wrapping_mul(FNV_PRIME);
        }
        self.shape = fnv(shape, b"\0");
        self.set.push(token as u32);
    }

    /// `tool_keys`: the tool's own bookkeeping keys, left out at the top level only.
    fn value(&mut self, v: &Value<'_>, tool_keys: &[&str]) {
        match v {
            Value::Null => self.push(b"null"),
            Value::Bool(b) => self.push(if *b { b"true" } else { b"false" }),
            Value::Number(n) => {
                // An integral number below 1000 (without a call to `trunc`).
                let a = n.abs();
                if a < 1000.0 && (a as u64) as f64 == a {
                    self.echoed.number(a as u64);
                }
                self.number(0, n.to_bits());
                self.push(b"#")
            }
            Value::String(s) => self.text(s.as_wtf8()),
            Value::Array(items) => items.iter().for_each(|x| self.value(x, &[])),
            Value::Object(o) => self.object(o, tool_keys),
        }
    }

    /// An object's fields, keys in sorted order (apart from `value`: its frame, with the
    /// sorting buffer, is set up only for objects).
    #[inline(never)]
    fn object(&mut self, o: &crate::value::Object<'_>, tool_keys: &[&str]) {
        // Keys in sorted order; small objects (nearly all) sorted on the stack.
        const SMALL: usize = 8;
        static NULL: Value<'static> = Value::Null;
        let mut small: [(&[u8], &Value<'_>); SMALL] = [(&[], &NULL); SMALL];
        let mut large: Vec<(&[u8], &Value<'_>)> = Vec::new();
        let mut n = 0;
        // The first letters of every bookkeeping key that can apply here, one bit each:
        // a key starting with another letter (nearly all) needs no comparison.
        let firsts = tool_keys
            .iter()
            .filter_map(|k| k.as_bytes().first())
            .fold(BOOKKEEPING_FIRSTS, |m, b| m | letter_bit(*b));
        for (k, x) in o.iter() {
            let k = k.as_wtf8();
            let surely_not = match k.first() {
                Some(b) if b.is_ascii_alphabetic() => letter_bit(*b) & firsts == 0,
                Some(b'_' | b'-') => false,
                // Not a letter: no bookkeeping key starts so.
                _ => true,
            };
            if !surely_not && is_bookkeeping(k, tool_keys) {
                continue;
            }
            if n < SMALL {
                small[n] = (k, x);
            } else {
                if large.is_empty() {
                    large.extend_from_slice(&small);
                }
                large.push((k, x));
            }
            n += 1;
        }
        let pairs = if n > SMALL {
            &mut large[..]
        } else {
            &mut small[..n]
        };
        pairs.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (k, x) in pairs.iter() {
            self.key(k);
            self.value(x, &[]);
        }
    }
}

/// The shell command a call runs, when its arguments hold one (`command`, `cmd`,
/// `script`; a string, or an argv array whose last item is the script).
fn shell_command<'v>(args: &'v Value<'_>) -> Option<&'v [u8]> {
    const KEYS: [&str; 3] = ["command", "cmd", "script"];
    // Most calls have none of these keys: one look at each key says so.
    let Value::Object(o) = args else { return None };
    if !o.iter().any(|(k, _)| {
        let k = k.as_wtf8();
        // Every one of `KEYS` starts with `c` or `s`.
        matches!(k.first(), Some(b'c' | b's')) && KEYS.iter().any(|w| w.as_bytes() == k)
    }) {
        return None;
    }
    for key in KEYS {
        match args.get(key) {
            Some(Value::String(s)) => return Some(s.as_wtf8()),
            Some(Value::Array(items)) => {
                if let Some(Value::String(s)) = items.last() {
                    return Some(s.as_wtf8());
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether a shell command only prints literal text: every statement (split at newlines,
/// `;`, `&&`, `||`) is `echo`, `printf`, `true` or `:`, with no redirection, pipe or
/// command substitution. Such a call has no effect beyond its own output, whatever it says.
pub fn is_echo_only(command: &[u8]) -> bool {
    let text = String::from_utf8_lossy(command);
    // Statements split at newlines, `;`, `&&`, `||` outside quotes; any redirection,
    // pipe, background job or substitution outside single quotes is an effect.
    let mut stmts: Vec<String> = vec![String::new()];
    let (mut single, mut double) = (false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if !single && (c == '`' || (c == '$' && chars.peek() == Some(&'('))) {
            return false;
        }
        match c {
            '\'' if !double => single = !single,
            '"' if !single => double = !double,
            _ if single || double => {}
            '>' | '<' => return false,
            '|' | '&' => {
                if chars.peek() == Some(&c) {
                    chars.next();
                    stmts.push(String::new());
                    continue;
                }
                return false;
            }
            '\n' | ';' => {
                stmts.push(String::new());
                continue;
            }
            _ => {}
        }
        if let Some(last) = stmts.last_mut() {
            last.push(c);
        }
    }
    if single || double {
        return false;
    }
    let mut any = false;
    for stmt in &stmts {
        let stmt = stmt.trim();
        if stmt.is_empty() {
            continue;
        }
        any = true;
        let word = stmt.split_whitespace().next().unwrap_or("");
        if !matches!(word, "echo" | "printf" | "true" | ":") {
            return false;
        }
    }
    any
}

/// Whether a call waits on something already running: OpenClaw's known polls
/// (`command_status`, `process` poll/log), Claude Code's `BashOutput` / `TaskOutput`,
/// Codex's `write_stdin` with empty `chars` (also inside a code-mode `exec` script), and
/// status checks of sub-agents or jobs (a tool whose name ends in `status`).
///
/// ```
/// use loopguard_core::{detection::is_wait_call, Value};
/// let empty = Value::parse(br#"{"session_id":3,"chars":""}"#)?;
/// assert!(is_wait_call(b"write_stdin", &empty));
/// let typing = Value::parse(br#"{"session_id":3,"chars":"y\n"}"#)?;
/// assert!(!is_wait_call(b"write_stdin", &typing));
/// assert!(is_wait_call(b"BashOutput", &Value::Null));
/// # Ok::<(), loopguard_core::json::ParseError>(())
/// ```
pub fn is_wait_call(tool: &[u8], args: &Value<'_>) -> bool {
    if is_known_poll_call(tool, args) {
        return true;
    }
    let is = |name: &[u8]| tool.eq_ignore_ascii_case(name);
    if is(b"bashoutput") || is(b"bash_output") || is(b"taskoutput") || is(b"task_output") {
        return true;
    }
    if tool == b"write_stdin" {
        return match args.get("chars") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.as_wtf8().is_empty(),
            _ => false,
        };
    }
    if tool.len() >= 6 && tool[tool.len() - 6..].eq_ignore_ascii_case(b"status") {
        return true;
    }
    // Codex code mode: a script calling `write_stdin` with empty `chars` only.
    if tool == b"exec" {
        if let Some(code) = ["code", "script", "source"]
            .iter()
            .find_map(|k| args.get(k).and_then(Value::as_str))
        {
            let squeezed: String = code.chars().filter(|c| !c.is_whitespace()).collect();
            let polls = squeezed.contains("write_stdin(");
            let empty = squeezed.contains("chars:\"\"")
                || squeezed.contains("chars:''")
                || squeezed.contains("\"chars\":\"\"")
                || squeezed.contains("chars=\"\"")
                || squeezed.contains("chars=''");
            return polls && empty && !squeezed.contains("chars:\"\\");
        }
    }
    false
}

/// The sketch of a call's arguments.
pub fn args_sketch(tool: &[u8], args: &Value<'_>) -> ArgsSketch {
    args_sketch_and_numbers(tool, args).0
}

/// [`args_sketch`] and the call's short numbers ([`args_sketch_and_numbers`]), in one walk.
pub(crate) fn args_sketch_and_numbers(tool: &[u8], args: &Value<'_>) -> (ArgsSketch, Echoed) {
    args_sketch_reusing(tool, args, Vec::new())
}

/// [`args_sketch_and_numbers`], the token hashes written into `tokens` (cleared first: the
/// allocation of a sketch the ledger let go).
pub(crate) fn args_sketch_reusing(
    tool: &[u8],
    args: &Value<'_>,
    mut tokens: Vec<u32>,
) -> (ArgsSketch, Echoed) {
    let mut t = Tokens {
        shape: FNV64,
        numbers: FNV64,
        set: TokenSet::default(),
        echoed: Echoed::none(),
    };
    t.value(args, tool_bookkeeping_keys(tool));
    // In place: the token set is a few hundred bytes.
    t.set.finish_into(&mut tokens);
    let (shape, numbers, echoed) = (t.shape, t.numbers, t.echoed);
    let target = write_target(args);
    let mut flags = 0;
    if shell_command(args).is_some_and(is_echo_only) {
        flags |= ECHO_ONLY;
    }
    if is_wait_call(tool, args) {
        flags |= POLL;
    }
    if is_search_call(tool, args) {
        flags |= SEARCH;
    }
    if target != 0 || shell_command(args).is_some_and(is_mutating_command) {
        flags |= MUTATES;
    }
    (
        ArgsSketch {
            shape,
            tokens,
            flags,
            numbers,
            target,
        },
        echoed,
    )
}

/// Tools that search or list, by name (lowercase, `_`/`-` ignored): OpenClaw's and the
/// coding agents' search, glob, grep and listing tools.
const SEARCH_TOOLS: [&str; 14] = [
    "grep",
    "glob",
    "find",
    "search",
    "ls",
    "listfiles",
    "listdir",
    "listdirectory",
    "findfiles",
    "searchfiles",
    "filesearch",
    "grepsearch",
    "codebasesearch",
    "searchfilecontent",
];

/// Programs whose empty answer means "not found", as the first word of a shell command.
const SEARCH_PROGRAMS: [&[u8]; 11] = [
    b"find", b"grep", b"egrep", b"fgrep", b"rg", b"ag", b"ack", b"fd", b"locate", b"ls", b"which",
];

/// Whether a call searches or lists ([`SEARCH`]): a search tool by name, or a shell
/// command whose first program (after `cd DIR &&` and `2>/dev/null`-style noise) is one of
/// [`SEARCH_PROGRAMS`]. `find.` (a typo the shell cannot run, hidden by `2>/dev/null`)
/// counts as `find`: its answer is just as empty.
pub fn is_search_call(tool: &[u8], args: &Value<'_>) -> bool {
    if SEARCH_TOOLS.iter().any(|n| key_is(tool, n)) {
        return true;
    }
    let Some(cmd) = shell_command(args) else {
        return false;
    };
    let mut rest = cmd;
    // Skip leading `cd DIR &&` (or `;`) statements.
    loop {
        let trimmed = trim_start(rest);
        if trimmed.starts_with(b"cd ") {
            let end = trimmed
                .windows(2)
                .position(|w| w == b"&&")
                .map(|i| i + 2)
                .or_else(|| trimmed.iter().position(|&b| b == b';').map(|i| i + 1));
            match end {
                Some(i) => rest = &trimmed[i..],
                None => return false,
            }
        } else {
            rest = trimmed;
            break;
        }
    }
    let word_end = rest
        .iter()
        .position(|b| !b.is_ascii_alphanumeric() && *b != b'_' && *b != b'-')
        .unwrap_or(rest.len());
    let word = &rest[..word_end];
    if word == b"git" {
        return trim_start(&rest[word_end..]).starts_with(b"grep");
    }
    SEARCH_PROGRAMS.contains(&word)
}

/// Whether a shell command changes something in a way that adds up when it is run again
/// ([`MUTATES`]): an append (`>>`, not to `/dev/null`; `tee -a`), an in-place edit (`sed -i`,
/// `perl -i`/`-pi`, `--in-place`) or a patch (`patch`, `git apply`, `git am`), in any
/// statement (split at newlines, `;`, `&&`, `||`, `|`), outside quotes. A `>` that truncates
/// is not counted: writing the same text again leaves the same file.
pub fn is_mutating_command(command: &[u8]) -> bool {
    // Most commands hold none of the signs: a few searches say so.
    let has = |w: &[u8]| memchr::memmem::find(command, w).is_some();
    if memchr::memchr(b'>', command).is_none()
        && !has(b"sed")
        && !has(b"perl")
        && !has(b"tee")
        && !has(b"patch")
        && !has(b"git")
    {
        return false;
    }
    let b = command;
    let mut words: Vec<&[u8]> = Vec::new();
    let (mut single, mut double) = (false, false);
    let mut start: Option<usize> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if single {
            single = c != b'\'';
            i += 1;
            continue;
        }
        if double {
            if c == b'\\' {
                i += 2;
                continue;
            }
            double = c != b'"';
            i += 1;
            continue;
        }
        let separator = matches!(
            c,
            b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'>'
        );
        if separator {
            if let Some(s) = start.take() {
                words.push(&b[s..i]);
            }
        }
        match c {
            b'\'' => {
                single = true;
                start.get_or_insert(i);
            }
            b'"' => {
                double = true;
                start.get_or_insert(i);
            }
            b'>' if b.get(i + 1) == Some(&b'>') => {
                let rest = trim_start(&b[i + 2..]);
                if !rest.starts_with(b"/dev/null") {
                    return true;
                }
                i += 1;
            }
            b'\n' | b';' | b'&' | b'|' | b'(' | b')' => {
                if statement_mutates(&words) {
                    return true;
                }
                words.clear();
            }
            _ if separator => {}
            _ => {
                start.get_or_insert(i);
            }
        }
        i += 1;
    }
    if let Some(s) = start {
        words.push(&b[s..]);
    }
    statement_mutates(&words)
}

/// [`is_mutating_command`] for one statement's words.
fn statement_mutates(words: &[&[u8]]) -> bool {
    let mut it = words
        .iter()
        .copied()
        .skip_while(|w| w.contains(&b'=') || *w == b"sudo" || *w == b"env");
    let Some(program) = it.next() else {
        return false;
    };
    let program = program.rsplit(|&c| c == b'/').next().unwrap_or(program);
    // A cluster of short options (`-i`, `-pi`, `-i.bak`, `-Ei`) holding `letter`.
    let short = |w: &[u8], letter: u8| {
        w.len() >= 2
            && w[0] == b'-'
            && w[1] != b'-'
            && !matches!(w[1], b'I' | b'M' | b'm')
            && w[1..].split(|&c| c == b'.').next().is_some_and(|f| {
                f.len() <= 4 && f.iter().all(u8::is_ascii_alphabetic) && f.contains(&letter)
            })
    };
    match program {
        b"sed" | b"perl" => it.any(|w| short(w, b'i') || w.starts_with(b"--in-place")),
        b"tee" => it.any(|w| short(w, b'a') || w == b"--append"),
        b"patch" => true,
        b"git" => it.next().is_some_and(|w| w == b"apply" || w == b"am"),
        _ => false,
    }
}

fn trim_start(b: &[u8]) -> &[u8] {
    let n = b.iter().take_while(|c| c.is_ascii_whitespace()).count();
    &b[n..]
}

/// Whether a failure's text is the shell refusing the command itself ([`SHELL_ERROR`]):
/// `command not found`, a syntax error, an unexpected token or end of file. Only the first
/// 512 bytes are looked at (where the shell puts it).
pub fn is_shell_error(text: &[u8]) -> bool {
    const SIGNS: [&[u8]; 5] = [
        b"command not found",
        b"syntax error",
        b"unexpected token",
        b"unexpected end of file",
        b"unexpected eof",
    ];
    let head = &text[..text.len().min(512)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    SIGNS
        .iter()
        .any(|s| lower.windows(s.len()).any(|w| w == *s))
}

/// Keys whose value is what a write puts in its target (OpenClaw's `write`, Claude Code's
/// `Write`/`Edit`, `str_replace_editor`, Gemini CLI's `write_file`/`replace`, Cline's
/// `write_to_file`/`replace_in_file`, …), compared without `_`/`-` and case.
const CONTENT_KEYS: [&str; 8] = [
    "content",
    "contents",
    "filetext",
    "newstr",
    "newstring",
    "newtext",
    "diff",
    "edits",
];

/// Keys naming a write's target.
const TARGET_KEYS: [&str; 6] = [
    "path",
    "filepath",
    "file",
    "targetfile",
    "filename",
    "absolutepath",
];

/// The hash of a write's target path (see [`ArgsSketch::target`]); 0 when the arguments
/// are not a write.
fn write_target(args: &Value<'_>) -> u64 {
    let Value::Object(o) = args else { return 0 };
    let mut content = false;
    let mut target = None;
    for (k, v) in o.iter() {
        let k = k.as_wtf8();
        // Most keys start with another letter: no comparison.
        let first = k.first().map(u8::to_ascii_lowercase);
        if !matches!(
            first,
            Some(b'a' | b'c' | b'd' | b'e' | b'f' | b'n' | b'p' | b't')
        ) {
            continue;
        }
        if CONTENT_KEYS.iter().any(|n| key_is(k, n)) {
            content = true;
        } else if target.is_none() && TARGET_KEYS.iter().any(|n| key_is(k, n)) {
            if let Value::String(s) = v {
                target = Some(fnv(FNV64 ^ 0x7a, s.as_wtf8()) | 1);
            }
        }
    }
    if content {
        target.unwrap_or(0)
    } else {
        0
    }
}

/// The short numbers (one to three digits) written in a call's arguments: digit runs of
/// strings and integral numbers, bookkeeping fields left out. Only these matter in an
/// outcome: decimals and numbers of four digits or more are normalised anyway. Each is
/// kept as (digits, value), so `07` and `7` stay apart: the first few in a small array
/// (no allocation), a bit set past that.
#[derive(Clone, Debug, Default)]
pub(crate) struct Echoed {
    /// `digits * 1000 + value`, distinct, the first `len` used.
    few: [u16; Echoed::FEW],
    len: u8,
    /// Every number, once there are more than [`Echoed::FEW`].
    many: Option<Box<[u64; 63]>>,
    /// Every number counts as echoed: all are masked ([`Sketch::counts`]).
    all: bool,
}

impl Echoed {
    const FEW: usize = 15;

    /// Every number masked, whatever the call holds ([`Sketch::counts`]).
    const ALL: Echoed = Echoed {
        few: [0; Echoed::FEW],
        len: 0,
        many: None,
        all: true,
    };

    /// No numbers.
    pub(crate) fn none() -> Echoed {
        Echoed::default()
    }

    /// An integral number below 1000, as JavaScript writes it.
    fn number(&mut self, x: u64) {
        let len = if x >= 100 {
            3
        } else if x >= 10 {
            2
        } else {
            1
        };
        self.set(len, x);
    }

    fn set(&mut self, len: u64, x: u64) {
        let key = (len * 1000 + x) as u16;
        if let Some(bits) = &mut self.many {
            bits[usize::from(key) / 64] |= 1 << (key % 64);
            return;
        }
        let few = &mut self.few[..usize::from(self.len)];
        if few.contains(&key) {
            return;
        }
        if few.len() < Echoed::FEW {
            self.few[few.len()] = key;
            self.len += 1;
            return;
        }
        let mut bits = Box::new([0u64; 63]);
        for k in self.few.iter().copied().chain([key]) {
            bits[usize::from(k) / 64] |= 1 << (k % 64);
        }
        self.many = Some(bits);
    }

    /// Whether the digit run `num` was written in the arguments.
    #[cfg(test)]
    fn has(&self, num: &[u8]) -> bool {
        if num.is_empty() || num.len() > 3 {
            return false;
        }
        let x = num
            .iter()
            .fold(0u64, |x, &b| x * 10 + u64::from(b.wrapping_sub(b'0')));
        self.has_number(num.len() as u64, x)
    }

    /// Whether the number of `digits` (one to three) digits and value `x` was written in
    /// the arguments.
    #[inline]
    fn has_number(&self, digits: u64, x: u64) -> bool {
        if self.all {
            return true;
        }
        let key = (digits * 1000 + x) as u16;
        match &self.many {
            Some(bits) => bits[usize::from(key) / 64] & (1 << (key % 64)) != 0,
            None => self.few[..usize::from(self.len)].contains(&key),
        }
    }
}

/// A fast streaming hash of normalised outcome bytes: 8 bytes at a time, the words dealt
/// in turn to four independent lanes (so the multiplications overlap).
struct OutHash {
    lanes: [u64; 4],
    buf: u64,
    n: u32,
    /// Words mixed so far (the next one goes to lane `words % 4`).
    words: usize,
    len: usize,
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn mix_lane(lane: u64, word: u64) -> u64 {
    (lane ^ word).rotate_left(5).wrapping_mul(MIX)
}

impl OutHash {
    fn new(seed: u64) -> Self {
        OutHash {
            lanes: [
                seed,
                seed ^ 0x243f_6a88_85a3_08d3,
                seed ^ 0x1319_8a2e_0370_7344,
                seed ^ 0xa409_3822_299f_31d0,
            ],
            buf: 0,
            n: 0,
            words: 0,
            len: 0,
        }
    }

    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf |= u64::from(b) << (8 * self.n);
        self.n += 1;
        self.len += 1;
        if self.n == 8 {
            self.mix();
        }
    }

    #[inline]
    fn word(&mut self, w: u64) {
        let lane = &mut self.lanes[self.words % 4];
        *lane = mix_lane(*lane, w);
        self.words += 1;
    }

    /// Mixes the pending bytes (zero-padded) as one word.
    #[inline]
    fn mix(&mut self) {
        self.word(self.buf);
        self.buf = 0;
        self.n = 0;
    }

    /// Whole little-endian words (byte k at bits 8k, as `byte` puts it), four at a time
    /// once the lanes line up. Returns what is left (fewer than 8 bytes).
    #[inline]
    fn words<'b>(&mut self, b: &'b [u8]) -> &'b [u8] {
        let word = |c: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            u64::from_le_bytes(w)
        };
        let mut b = b;
        while !self.words.is_multiple_of(4) && b.len() >= 8 {
            self.word(word(&b[..8]));
            b = &b[8..];
        }
        let mut blocks = b.chunks_exact(32);
        let [mut l0, mut l1, mut l2, mut l3] = self.lanes;
        for c in &mut blocks {
            l0 = mix_lane(l0, word(&c[..8]));
            l1 = mix_lane(l1, word(&c[8..16]));
            l2 = mix_lane(l2, word(&c[16..24]));
            l3 = mix_lane(l3, word(&c[24..]));
        }
        self.lanes = [l0, l1, l2, l3];
        let done = b.len() - blocks.remainder().len();
        self.words += done / 8;
        let mut b = blocks.remainder();
        while b.len() >= 8 {
            self.word(word(&b[..8]));
            b = &b[8..];
        }
        b
    }

    /// The same as `byte` for each of `b`, eight at a time where it can.
    fn bytes(&mut self, b: &[u8]) {
        let mut b = b;
        while self.n > 0 && !b.is_empty() {
            self.byte(b[0]);
            b = &b[1..];
        }
        let before = b.len();
        let rest = self.words(b);
        self.len += before - rest.len();
        rest.iter().for_each(|&x| self.byte(x));
    }

    /// `text` normalised ([`normalize_into`]), through a buffer on the stack.
    fn normalized(&mut self, text: &[u8], echoed: &Echoed) {
        let mut buf = [0u8; 512];
        let n = normalize_into(text, echoed, &mut buf, |full| self.bytes(full));
        self.bytes(&buf[..n]);
    }

    /// Raw bytes, eight at a time (no normalisation).
    fn raw(&mut self, b: &[u8]) {
        if self.n > 0 {
            self.mix();
        }
        let rest = self.words(b);
        self.len += b.len() - rest.len();
        self.bytes(rest);
    }

    fn finish(mut self) -> u64 {
        if self.n > 0 {
            self.mix();
        }
        let [l0, l1, l2, l3] = self.lanes;
        let h = mix_lane(mix_lane(mix_lane(l0, l1), l2), l3);
        (h ^ self.len as u64).wrapping_mul(0xff51_afd7_ed55_8ccd)
    }
}

/// The normalised outcome marker (see [`normalize_into`]).
const NONCE: &[u8] = b"external_untrusted_content id=";

/// The most bytes one step of [`normalize_into`] writes (a space, eight plain bytes and a
/// nonce marker): the room kept free in its buffer.
const STEP: usize = 40;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Per byte of a little-endian word whose high bits are clear (`y`): `0x80` where the
/// byte is in `lo..=hi` (`hi < 0x80`). Exact per byte: no carry crosses a byte.
#[inline]
fn in_range(y: u64, lo: u8, hi: u8) -> u64 {
    let from_lo = y.wrapping_add(ONES * (0x80 - u64::from(lo)));
    let above_hi = y.wrapping_add(ONES * (0x7f - u64::from(hi)));
    from_lo & !above_hi & HIGHS
}

/// The classes of a word's bytes for [`normalize_into`], `0x80` per byte: (spaces, bytes
/// that need the byte-at-a-time path: digits, and control bytes such as tabs and
/// newlines). The rest are copied lowercased.
#[inline]
fn classes(w: u64) -> (u64, u64) {
    let ascii = !w & HIGHS;
    let y = w & !HIGHS;
    let space = ascii & in_range(y, b' ', b' ');
    let control = ascii & in_range(y, 0, 0x1f);
    let digit = ascii & in_range(y, b'0', b'9');
    // A space before a control byte may start a run of whitespace.
    (space, control | digit | (space & (control >> 8)))
}

/// The bytes of a little-endian word, ASCII letters lowercased (as `to_ascii_lowercase`).
#[inline]
fn lowercase_word(w: u64) -> u64 {
    let upper = !w & in_range(w & !HIGHS, b'A', b'Z');
    w | (upper >> 2)
}

/// The first untrusted-content marker at or after `from` (`text.len()` when none): the
/// place where [`normalize_into`] drops a nonce.
fn next_nonce(text: &[u8], from: usize) -> usize {
    let mut at = from + 1;
    while at < text.len() {
        let Some(x) = memchr::memchr2(b'x', b'X', &text[at..]) else {
            break;
        };
        let e = at + x - 1;
        if text.len() - e >= NONCE.len() && text[e..e + NONCE.len()].eq_ignore_ascii_case(NONCE) {
            return e;
        }
        at += x + 1;
    }
    text.len()
}

/// The number that starts at `start` (digits, with a decimal part and time separators):
/// where it ends, and whether it normalises to `#` (dotted, four digits or more, or one the
/// call's own arguments echo). Shared by the word-at-a-time normaliser and its reference.
#[inline(always)]
fn number_run(b: &[u8], start: usize, echoed: &Echoed) -> (usize, bool) {
    let mut i = start;
    let (mut digits, mut dotted, mut x) = (0u64, false, 0u64);
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_digit() {
            digits += 1;
            // The value matters only for one to three digits (wraps harmlessly past that).
            x = x.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
        } else if (c == b'.' || c == b':') && i + 1 < b.len() && b[i + 1].is_ascii_digit() {
            dotted = true;
        } else {
            break;
        }
        i += 1;
    }
    (i, dotted || digits >= 4 || echoed.has_number(digits, x))
}

/// Normalises an outcome text into `out`, handing each full buffer to `flush`, and
/// returns the length of the last, partial one: ASCII lowercase, whitespace runs as one
/// space (none at the ends), untrusted-content nonces dropped; decimals, times, numbers of
/// four digits or more, and numbers the call's own arguments hold (`echoed`: a message
/// that repeats them back) as `#`. Plain bytes go eight at a time.
fn normalize_into<const N: usize>(
    text: &[u8],
    echoed: &Echoed,
    out: &mut [u8; N],
    mut flush: impl FnMut(&[u8]),
) -> usize {
    const { assert!(N > 2 * STEP) };
    let b = text;
    let (mut i, mut n) = (0, 0);
    let mut pending_space = false;
    let mut wrote = false;
    let mut nonce = next_nonce(b, 0);
    while i < b.len() {
        if n > N - STEP {
            flush(&out[..n]);
            n = 0;
        }
        // Eight bytes at a time up to the first one that needs more: plain bytes are
        // lowercased, and a space between two of them stays.
        if i + 8 <= nonce {
            let mut word = [0u8; 8];
            word.copy_from_slice(&b[i..i + 8]);
            let w = u64::from_le_bytes(word);
            let (ws, mut slow) = classes(w);
            // A space next to another, the last one (what follows is unknown), or the first
            // one when it would not be written (nothing written yet, or a run of whitespace
            // going on).
            slow |= ws & ((ws << 8) | (ws >> 8) | (0x80 << 56));
            if !wrote || pending_space {
                slow |= ws & 0x80;
            }
            let k = if slow == 0 {
                8
            } else {
                slow.trailing_zeros() as usize / 8
            };
            if k > 0 {
                if pending_space {
                    out[n] = b' ';
                    n += 1;
                    pending_space = false;
                }
                wrote = true;
                out[n..n + 8].copy_from_slice(&lowercase_word(w).to_le_bytes());
                n += k;
                i += k;
                if k == 8 {
                    continue;
                }
            }
        }
        let c = b[i];
        if c.is_ascii_whitespace() {
            pending_space = wrote;
            i += 1;
            continue;
        }
        if pending_space {
            out[n] = b' ';
            n += 1;
            pending_space = false;
        }
        wrote = true;
        if i == nonce {
            out[n..n + NONCE.len()].copy_from_slice(NONCE);
            n += NONCE.len();
            i += NONCE.len();
            while i < b.len() && b[i] != b'>' && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            nonce = next_nonce(b, i);
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            let hashed;
            (i, hashed) = number_run(b, i, echoed);
            let num = &b[start..i];
            if hashed {
                out[n] = b'#';
                n += 1;
            } else {
                // One to three digits.
                out[n..n + num.len()].copy_from_slice(num);
                n += num.len();
            }
            continue;
        }
        out[n] = c.to_ascii_lowercase();
        n += 1;
        i += 1;
    }
    n
}

/// The byte-at-a-time normalisation [`normalize_into`] replaced, kept to check that the
/// two agree.
#[cfg(test)]
fn normalize_reference(text: &[u8], echoed: &Echoed, mut sink: impl FnMut(u8)) {
    /// Bytes written as they are (lowercased): not whitespace, not a digit, and not an
    /// `e` (which may start a nonce marker).
    const PLAIN: [bool; 256] = {
        let mut t = [true; 256];
        let mut i = 0;
        while i < 256 {
            let c = i as u8;
            t[i] = !(c.is_ascii_whitespace() || c.is_ascii_digit() || c == b'e' || c == b'E');
            i += 1;
        }
        t
    };
    let b = text;
    let mut i = 0;
    let mut pending_space = false;
    let mut wrote = false;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            pending_space = wrote;
            i += 1;
            continue;
        }
        if pending_space {
            sink(b' ');
            pending_space = false;
        }
        wrote = true;
        if PLAIN[usize::from(c)] {
            // A run of plain bytes, the common case, in a tight loop.
            sink(c.to_ascii_lowercase());
            i += 1;
            while i < b.len() && PLAIN[usize::from(b[i])] {
                sink(b[i].to_ascii_lowercase());
                i += 1;
            }
            continue;
        }
        if (c == b'e' || c == b'E')
            && b.len() - i >= NONCE.len()
            // Most `e`s start another word: one byte tells.
            && b[i + 1].eq_ignore_ascii_case(&b'x')
            && b[i..i + NONCE.len()].eq_ignore_ascii_case(NONCE)
        {
            NONCE.iter().for_each(|&x| sink(x));
            i += NONCE.len();
            while i < b.len() && b[i] != b'>' && !b[i].is_ascii_whitespace() {
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() {
            let start = i;
            let hashed;
            (i, hashed) = number_run(b, i, echoed);
            let num = &b[start..i];
            if hashed {
                sink(b'#');
            } else {
                num.iter().for_each(|&x| sink(x));
            }
            continue;
        }
        sink(c.to_ascii_lowercase());
        i += 1;
    }
}

#[cfg(test)]
fn normalize_outcome(text: &str, echoed: &Echoed) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 96];
    let n = normalize_into(text.as_bytes(), echoed, &mut buf, |full| {
        out.extend_from_slice(full)
    });
    out.extend_from_slice(&buf[..n]);
    String::from_utf8_lossy(&out).into_owned()
}

/// A result's text, as [`extract_text`] gives it: the one text part of its `content`
/// found by comparing the few bytes of each key in place (the usual case), anything else
/// by `extract_text` itself.
fn result_text<'v>(r: &'v Value<'_>) -> crate::value::JsString<'v> {
    fn field<'v>(v: &'v Value<'_>, key: &[u8]) -> Option<&'v Value<'v>> {
        let Value::Object(o) = v else { return None };
        o.iter()
            .find(|(k, _)| super::ledger::same_bytes(k.as_wtf8(), key))
            .map(|(_, v)| v)
    }
    if let Some(Value::Array(content)) = field(r, b"content") {
        let mut parts =
            content
                .iter()
                .filter_map(|e| match (field(e, b"type"), field(e, b"text")) {
                    (Some(Value::String(_)), Some(Value::String(t))) => Some(t),
                    _ => None,
                });
        if let (Some(first), None) = (parts.next(), parts.next()) {
            return first.trim();
        }
    }
    extract_text(r)
}

/// The sketch of a call with its outcome.
///
/// `echoed` are the numbers of the call's arguments ([`args_sketch_and_numbers`]): in the
/// outcome they count as an echo of the call, not as information.
pub fn sketch(
    args: ArgsSketch,
    echoed: &Echoed,
    outcome: Outcome<'_, '_>,
    result: &ResultHash,
) -> Sketch {
    let (text, failed) = match outcome {
        Outcome::Error(e) => (format_error(e), true),
        Outcome::Result(r) => {
            let t = result_text(r);
            let t = if t.as_wtf8().is_empty() {
                r.get("details")
                    .and_then(|d| d.get("aggregated"))
                    .and_then(|v| match v {
                        Value::String(s) => Some(s.reborrow()),
                        _ => None,
                    })
                    .unwrap_or(t)
            } else {
                t
            };
            (t, result.is_error)
        }
        Outcome::Undefined => (crate::value::JsString::from(""), false),
    };
    let text = text.as_wtf8();
    // A long outcome: its head is normalised and the exact result decides the rest, so
    // the cost stays bounded (the result is hashed anyway) and nothing in the tail is lost.
    let long = text.len() > MAX_NORMALISED;
    let mut h = OutHash::new(if failed { 0x46 } else { 0x53 });
    if long || (text.is_empty() && !matches!(outcome, Outcome::Undefined)) {
        // No text, or more than is normalised: the exact result decides.
        h.bytes(&result.digest);
    }
    let mut flags = args.flags;
    // Only a failure (or a result marked as an error) can be the shell refusing a command;
    // mini-swe-agent's observation of exit code 127 (`command not found`) or 2 too.
    if (failed || contains_returncode_failure(text)) && is_shell_error(text) {
        flags |= SHELL_ERROR;
    }
    if text.len() < 64 {
        // Normalising never lengthens a text: it fits on the stack, never flushed.
        let mut buf = [0u8; 64 + 2 * STEP];
        let n = normalize_into(text, echoed, &mut buf, |_| {});
        let small = &buf[..n];
        let empty = if small.contains(&b'<') {
            // mini-swe-agent's wrapper around an empty output.
            String::from_utf8_lossy(small)
                .replace("<returncode>0</returncode>", "")
                .replace("<output>", "")
                .replace("</output>", "")
                .trim()
                .is_empty()
        } else {
            String::from_utf8_lossy(small).trim().is_empty()
        };
        if empty {
            flags |= EMPTY_OUTCOME;
        } else if says_nothing_found(small) {
            flags |= NO_MATCH;
        }
        h.bytes(small);
    } else if text.len() <= 2 * NORMALISED_ENDS {
        h.normalized(text, echoed);
    } else {
        // The first and last KiB normalised (where durations, timestamps and summaries
        // are), the middle hashed as it is: a difference there makes two outcomes differ,
        // which can only miss a loop, never invent one.
        // Cut at whitespace near the boundaries (at most 64 bytes on), so a number is not
        // split between a normalised end and the raw middle.
        let cut = |from: usize| {
            let limit = (from + 64).min(text.len());
            (from..limit)
                .find(|&i| text[i].is_ascii_whitespace())
                .unwrap_or(limit)
        };
        let head_end = cut(NORMALISED_ENDS);
        let tail_start = cut((text.len() - NORMALISED_ENDS).max(head_end));
        let middle_end = if long { head_end } else { tail_start };
        h.normalized(&text[..head_end], echoed);
        h.raw(&text[head_end..middle_end]);
        if !long {
            h.normalized(&text[tail_start..], echoed);
        }
    }
    // Only a call that adds something up each time needs its answer with every number
    // masked (`same_call_changing_counts`): the cost stays off reads, searches and polls.
    let counts = if args.flags & MUTATES != 0 && !failed {
        let mut c = OutHash::new(0x43);
        if text.len() > MAX_NORMALISED || text.is_empty() {
            c.bytes(&result.digest);
        } else {
            c.normalized(text, &Echoed::ALL);
        }
        c.finish() | 1
    } else {
        0
    };
    Sketch {
        args,
        outcome: h.finish(),
        flags,
        counts,
    }
}

/// Whether a short normalised outcome says that nothing was found.
fn says_nothing_found(text: &[u8]) -> bool {
    const SIGNS: [&[u8]; 6] = [
        b"no match",
        b"no files found",
        b"no results",
        b"not found",
        b"found 0 ",
        b"# matches",
    ];
    SIGNS.iter().any(|s| text.windows(s.len()).any(|w| w == *s))
        || text.starts_with(b"0 match")
        || text.starts_with(b"0 result")
        || text.starts_with(b"0 files")
}

/// Whether a text opens with mini-swe-agent's `<returncode>N</returncode>` and N is not 0.
fn contains_returncode_failure(text: &[u8]) -> bool {
    let t = trim_start(text);
    t.starts_with(b"<returncode>") && !t[12..].starts_with(b"0<")
}

/// Jaccard similarity of two sorted token sets, in percent.
pub fn similarity_pct(a: &[u32], b: &[u32]) -> u64 {
    if a.is_empty() && b.is_empty() {
        return 100;
    }
    let (mut i, mut j, mut common) = (0, 0, 0u64);
    // A merge without branches on the values (token hashes compare at random): the
    // smaller side moves on, both on a match.
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        common += u64::from(x == y);
        i += usize::from(x <= y);
        j += usize::from(y <= x);
    }
    let union = (a.len() + b.len()) as u64 - common;
    common * 100 / union.max(1)
}

/// A short preview of a call's arguments for messages (the shell command, or the first
/// string argument), at most 80 characters.
pub(crate) fn preview(tool: &[u8], args: &Value<'_>) -> String {
    let text = shell_command(args)
        .map(|c| String::from_utf8_lossy(c).into_owned())
        .or_else(|| match args {
            Value::Object(o) => o
                .iter()
                .filter(|(k, _)| !is_bookkeeping(k.as_wtf8(), tool_bookkeeping_keys(tool)))
                .find_map(|(_, v)| v.as_str().map(str::to_string)),
            _ => None,
        })
        .unwrap_or_default();
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out: String = one_line.chars().take(80).collect();
    if one_line.chars().count() > 80 {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Outcome, Value};

    #[test]
    /// The example that documented `tool_bookkeeping_keys` before it became crate-private.
    fn example_tool_bookkeeping_keys() {
        assert!(tool_bookkeeping_keys(b"Bash").contains(&"description"));
        assert!(tool_bookkeeping_keys(b"create_issue").is_empty());
    }

    #[test]
    /// The example that documented `is_echo_only` before it became crate-private.
    fn example_is_echo_only() {
        assert!(is_echo_only(b"echo 'All checks passed.'"));
        assert!(is_echo_only(b"printf 'Final: done\\n' && true"));
        assert!(!is_echo_only(b"echo done > status.txt"));
        assert!(!is_echo_only(b"echo $(git rev-parse HEAD)"));
        assert!(!is_echo_only(b"echo ok && pytest"));
    }

    #[test]
    /// The example that documented `args_sketch` before it became crate-private.
    fn example_args_sketch() -> Result<(), crate::json::ParseError> {
        let a = Value::parse(br#"{"command":"grep -n 'Foo'  src/a.py","description":"look"}"#)?;
        let b = Value::parse(br#"{"command":"grep -n \"foo\" src/a.py","description":"again"}"#)?;
        assert_eq!(
            args_sketch(b"bash", &a).shape,
            args_sketch(b"bash", &b).shape
        );
        Ok(())
    }

    fn sk(json: &str) -> ArgsSketch {
        args_sketch(b"bash", &Value::parse(json.as_bytes()).unwrap())
    }

    #[test]
    fn normalisation_ignores_case_space_punctuation_quotes_numbers_and_bookkeeping() {
        let a = sk(r#"{"command":"sed -n '10,20p' a.py","task_progress":"- [x] one"}"#);
        let b = sk(r#"{"command":"SED  -n \"30,45p\" a.py","task_progress":"- [x] two"}"#);
        assert_eq!(a.shape, b.shape);
        let c = sk(r#"{"command":"sed -n '10,20p' b.py"}"#);
        assert_ne!(a.shape, c.shape);
        assert!(similarity_pct(&a.tokens, &c.tokens) < 100);
        assert_eq!(similarity_pct(&a.tokens, &b.tokens), 100);
    }

    #[test]
    fn key_order_does_not_matter_but_key_names_do() {
        let a = sk(r#"{"path":"a","limit":3}"#);
        let b = sk(r#"{"limit":4,"path":"a"}"#);
        assert_eq!(a.shape, b.shape);
        let c = sk(r#"{"file":"a","limit":3}"#);
        assert_ne!(a.shape, c.shape);
    }

    #[test]
    fn echo_only_needs_every_statement_to_print_literal_text() {
        assert!(is_echo_only(
            b"echo \"Verification complete: all checks passed\""
        ));
        assert!(is_echo_only(b": ; true\necho done"));
        assert!(!is_echo_only(b""));
        assert!(!is_echo_only(b"echo a || rm -rf build"));
        assert!(!is_echo_only(b"cat README"));
        assert!(is_echo_only(
            b"printf 'Final: checks passed; no changes > none\\n'"
        ));
        assert!(!is_echo_only(b"echo 'unterminated"));
        assert!(!is_echo_only(b"echo hi & rm x"));
        assert_eq!(sk(r#"{"command":"echo ok"}"#).flags & ECHO_ONLY, ECHO_ONLY);
    }

    #[test]
    fn waits_are_recognised_in_every_format() {
        let v = |s: &str| Value::parse(s.as_bytes()).unwrap().into_owned();
        assert!(is_wait_call(
            b"process",
            &v(r#"{"action":"poll","sessionId":"x"}"#)
        ));
        assert!(is_wait_call(b"TaskOutput", &v("{}")));
        assert!(is_wait_call(b"write_stdin", &v(r#"{"session_id":1}"#)));
        assert!(is_wait_call(
            b"exec",
            &v(r#"{"code":"await tools.write_stdin({session_id: 4, chars: \"\"})"}"#)
        ));
        assert!(!is_wait_call(
            b"exec",
            &v(r#"{"code":"await tools.write_stdin({session_id: 4, chars: \"q\"})"}"#)
        ));
        assert!(is_wait_call(b"get_subagent_status", &v("{}")));
        assert!(!is_wait_call(b"exec", &v(r#"{"command":"ls"}"#)));
    }

    fn normalize_outcome_(s: &str) -> String {
        normalize_outcome(s, &Echoed::none())
    }

    #[test]
    fn long_outcomes_normalise_their_ends_and_keep_their_middle() {
        let args = args_sketch(b"bash", &Value::Null);
        let r = ResultHash {
            is_error: false,
            digest: [0; 32],
        };
        let of = |t: &str| {
            let v = Value::from(t.to_string());
            let json = Value::parse(
                format!(
                    r#"{{"content":[{{"type":"text","text":{}}}]}}"#,
                    crate::canonical::to_canonical_string(&v)
                )
                .as_bytes(),
            )
            .unwrap()
            .into_owned();
            assert_eq!(result_text(&json), extract_text(&json));
            sketch(args.clone(), &Echoed::none(), Outcome::Result(&json), &r).outcome
        };
        let body = "PASSED test_case ok\n".repeat(600);
        let a = of(&format!("started 10:01:02\n{body}== 12 passed in 3.41s =="));
        let b = of(&format!("started 10:07:55\n{body}== 12 passed in 2.98s =="));
        assert_eq!(a, b);
        // One word changed in the middle, far from both normalised ends.
        let mid = format!("{}FAILED{}", &body[..6000], &body[6006..]);
        let c = of(&format!("started 10:01:02\n{mid}== 12 passed in 3.41s =="));
        assert_ne!(a, c);
    }

    #[test]
    fn hashing_in_words_equals_hashing_byte_by_byte() {
        let text: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for split in [0, 1, 5, 8, 13, 299] {
            let mut a = OutHash::new(7);
            text.iter().for_each(|&b| a.byte(b));
            let mut b = OutHash::new(7);
            b.bytes(&text[..split]);
            b.bytes(&text[split..]);
            assert_eq!(a.finish(), b.finish(), "split at {split}");
        }
        // Through the stack buffer: the same as normalising into a vector first.
        let long = "Done in 0.52s, PID 4411\n".repeat(40);
        let mut a = OutHash::new(1);
        a.bytes(normalize_outcome(&long, &Echoed::none()).as_bytes());
        let mut b = OutHash::new(1);
        b.normalized(long.as_bytes(), &Echoed::none());
        assert_eq!(a.finish(), b.finish());
    }

    #[test]
    fn bookkeeping_is_per_tool_and_general() {
        let edit = |d: &str| {
            let v = Value::parse(
                format!(
                    r#"{{"path":"a.py","old_str":"x = 1","new_str":"x = 2","description":"{d}"}}"#
                )
                .as_bytes(),
            )
            .unwrap()
            .into_owned();
            args_sketch(b"str_replace_editor", &v)
        };
        // An edit whose description changes is the same call.
        assert_eq!(edit("fix the value"), edit("set x to two, second try"));
        // A tool whose title is the content itself: a different title is a different call.
        let issue = |t: &str| {
            let v = Value::parse(format!(r#"{{"repo":"a/b","title":"{t}"}}"#).as_bytes())
                .unwrap()
                .into_owned();
            args_sketch(b"create_issue", &v)
        };
        assert_ne!(issue("Crash on start").shape, issue("Login fails").shape);
        assert!(
            similarity_pct(
                &issue("Crash on start").tokens,
                &issue("Login fails").tokens
            ) < 100
        );
        // exec's title is bookkeeping (OpenClaw's newest hashing drops it too).
        let exec = |t: &str| {
            let v = Value::parse(format!(r#"{{"command":"make test","title":"{t}"}}"#).as_bytes())
                .unwrap()
                .into_owned();
            args_sketch(b"exec", &v)
        };
        assert_eq!(exec("Run tests"), exec("Run the tests again"));
        // The general list applies to every tool, at any depth; per-tool keys only at the top.
        let any = |p: &str, nested: &str| {
            let v = Value::parse(
                format!(r#"{{"q":"x","task_progress":"{p}","opts":{{"description":"{nested}"}}}}"#)
                    .as_bytes(),
            )
            .unwrap()
            .into_owned();
            args_sketch(b"read_file", &v).shape
        };
        assert_eq!(any("- [x] a", "same"), any("- [x] a; - [ ] b", "same"));
        assert_ne!(any("p", "one thing"), any("p", "another thing"));
        assert!(is_bookkeeping(b"Task-Progress", &[]));
        assert!(is_bookkeeping(b"retry_count", &[]));
        assert!(!is_bookkeeping(b"title", &[]));
        assert!(is_bookkeeping(b"title", tool_bookkeeping_keys(b"EXEC")));
    }

    #[test]
    fn numbers_the_call_wrote_are_an_echo() {
        let args = Value::parse(br#"{"path":"a.py","view_range":[10, 20]}"#).unwrap();
        let echoed = args_sketch_and_numbers(b"str_replace_editor", &args).1;
        assert!(echoed.has(b"10") && echoed.has(b"20") && !echoed.has(b"2"));
        let other = Value::parse(br#"{"path":"a.py","view_range":"30:45"}"#).unwrap();
        assert_eq!(
            normalize_outcome("invalid range 10-20", &echoed),
            normalize_outcome(
                "invalid range 30-45",
                &args_sketch_and_numbers(b"str_replace_editor", &other).1
            )
        );
    }

    fn reference(text: &[u8], echoed: &Echoed) -> Vec<u8> {
        let mut out = Vec::new();
        normalize_reference(text, echoed, |b| out.push(b));
        out
    }

    fn word_at_a_time(text: &[u8], echoed: &Echoed) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 96];
        let n = normalize_into(text, echoed, &mut buf, |full| out.extend_from_slice(full));
        out.extend_from_slice(&buf[..n]);
        out
    }

    #[test]
    fn word_at_a_time_normalisation_equals_the_byte_at_a_time_one() {
        let echoed = args_sketch_and_numbers(
            b"bash",
            &Value::parse(br#"{"command":"sed -n 10,20p a.py"}"#).unwrap(),
        )
        .1;
        let cases: &[&[u8]] = &[
            b"",
            b"   ",
            b"Done in 0.52s\n\n(pid 4411) EXIT 10-20",
            b"<<<EXTERNAL_UNTRUSTED_CONTENT id=a9f3c>>> Hello\tWORLD\x0b\x01 ",
            b"exexternal_untrusted_content id=1 external_untrusted_content id=external_untrusted_content id=2>x",
            b"trailing external_untrusted_content id=",
            b"words a \tb and\t c, ab \n cd efghij \r\n klmnopq  rs",
            b"external_untrusted_content id",
            "caf\u{e9} \u{c9}T\u{c9} 12:04:55 1.5.6 v2 ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`@".as_bytes(),
            &[0x80, 0x41, 0xff, 0x5a, 0x5b, 0x40, 0x60, 0x7b, 0x20, 0x0c, 0x0d, 0x09, 0x0a, 0x2f, 0x3a],
        ];
        for t in cases {
            assert_eq!(word_at_a_time(t, &echoed), reference(t, &echoed), "{t:?}");
        }
        // Every split point around a word boundary and a long text through many flushes.
        let long = "Test Result: ok. 42 passed; 0 FAILED; finished in 0.12s\n".repeat(50);
        for cut in 0..64 {
            let t = &long.as_bytes()[cut..];
            assert_eq!(word_at_a_time(t, &echoed), reference(t, &echoed));
        }
    }

    proptest::proptest! {
        #[test]
        fn normalisations_agree_on_any_text(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::string::bytes_regex(r"(?s-u)[a-zA-Z0-9 .:\t\n\x0b\x00-\x1f<>#eExX_=\x80-\xff]{0,12}").unwrap(),
                    proptest::strategy::Just(b"<<<EXTERNAL_UNTRUSTED_CONTENT id=".to_vec()),
                    proptest::strategy::Just(b"external_untrusted_content id=".to_vec()),
                ],
                0..24,
            )
        ) {
            let text = parts.concat();
            let echoed = Echoed::none();
            proptest::prop_assert_eq!(word_at_a_time(&text, &echoed), reference(&text, &echoed));
            let mut a = OutHash::new(3);
            a.bytes(&reference(&text, &echoed));
            let mut b = OutHash::new(3);
            b.normalized(&text, &echoed);
            proptest::prop_assert_eq!(a.finish(), b.finish());
        }
    }

    /// The byte-at-a-time tokeniser `Tokens::text` replaced (same shape, token hashes and
    /// numbers), kept to check that the two agree: saved sessions hold these hashes.
    fn text_reference(t: &mut Tokens, s: &[u8]) {
        let mut w = t.start();
        let mut digits = false;
        let (mut dlen, mut dval) = (0u64, 0u64);
        for &b in s {
            if b.is_ascii_digit() {
                if !digits {
                    t.flush(&mut w);
                    w.feed(b'#');
                    digits = true;
                }
                dlen += 1;
                dval = (dval * 10 + u64::from(b - b'0')) % 1000;
                continue;
            }
            if digits {
                t.flush(&mut w);
                digits = false;
                if dlen <= 3 {
                    t.echoed.set(dlen, dval);
                }
                (dlen, dval) = (0, 0);
            }
            if b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 {
                w.feed(b.to_ascii_lowercase());
            } else {
                t.flush(&mut w);
            }
        }
        if digits && dlen <= 3 {
            t.echoed.set(dlen, dval);
        }
        t.flush(&mut w);
    }

    /// (shape, sorted token hashes, numbers written) of `s` by each tokeniser.
    fn tokenised(s: &[u8], reference: bool) -> (u64, Vec<u32>, Vec<u16>) {
        let mut t = Tokens {
            shape: FNV64,
            numbers: FNV64,
            set: TokenSet::default(),
            echoed: Echoed::none(),
        };
        if reference {
            text_reference(&mut t, s);
        } else {
            t.text(s);
        }
        let mut tokens = Vec::new();
        t.set.finish_into(&mut tokens);
        let numbers = t.echoed.few[..usize::from(t.echoed.len)].to_vec();
        (t.shape, tokens, numbers)
    }

    #[test]
    fn word_runs_tokenise_as_the_byte_at_a_time_tokeniser() {
        for s in [
            &b""[..],
            b"/repo/src/module_ab.rs",
            b"sed -n 10,20p a.py && echo DONE_1",
            b"abc123def 0007 1234 9 x_y-Z\x80\xff",
            "caf\u{e9} \u{c9}T\u{c9} 12:04:55 1.5.6 v2".as_bytes(),
            b"12",
            b"a",
            b"__ 1 22 333 4444",
        ] {
            assert_eq!(tokenised(s, false), tokenised(s, true), "{s:?}");
        }
        // A value the shape had before word runs were hashed in a loop of their own.
        assert_eq!(tokenised(b"", false).0, FNV64);
        // Keys: `k:` and the key lowercased, as one token.
        for k in [&b"path"[..], b"Old_String", b"", b"x-1"] {
            let fresh = || Tokens {
                shape: 7,
                numbers: FNV64,
                set: TokenSet::default(),
                echoed: Echoed::none(),
            };
            let (mut a, mut b) = (fresh(), fresh());
            a.key(k);
            let mut w = b.start();
            w.feed(b'k');
            w.feed(b':');
            k.iter().for_each(|&x| w.feed(x.to_ascii_lowercase()));
            b.flush(&mut w);
            assert_eq!((a.shape, a.set.inline[0]), (b.shape, b.set.inline[0]));
        }
    }

    proptest::proptest! {
        #[test]
        fn tokenisers_agree_on_any_text(
            s in proptest::string::bytes_regex(r"(?s-u)[a-zA-Z0-9 ._/:\-\t\n\x00-\x1f\x80-\xff]{0,80}").unwrap()
        ) {
            proptest::prop_assert_eq!(tokenised(&s, false), tokenised(&s, true));
        }
    }

    #[test]
    fn result_text_is_extract_text() {
        for json in [
            &br#"{"content":[{"type":"text","text":"  one part \n"}],"details":{}}"#[..],
            br#"{"content":[{"type":"text","text":"a"},{"type":"text","text":"b "}]}"#,
            br#"{"content":[{"type":"image","data":"x"},{"type":"text","text":" t"}]}"#,
            br#"{"content":[{"type":1,"text":"no type"}]}"#,
            br#"{"content":"not an array"}"#,
            br#"{"details":{"aggregated":"out"}}"#,
            br#"{"content":[]}"#,
            br#""a string""#,
            br#"{"content":[{"text":"\u00a0\ufeffjs trim\u2028"}],"x":1}"#,
            br#"{"content":[{"type":"text","text":"\u00a0\ufeffjs trim\u2028"}]}"#,
        ] {
            let v = Value::parse(json).unwrap();
            assert_eq!(
                result_text(&v),
                extract_text(&v),
                "{}",
                String::from_utf8_lossy(json)
            );
        }
    }

    #[test]
    fn echoed_numbers_past_the_first_few_are_kept_too() {
        let mut e = Echoed::none();
        for x in (0..40).map(|i| i * 7) {
            e.number(x);
        }
        e.set(2, 7); // "07"
        for x in (0..40).map(|i| i * 7) {
            assert!(e.has(x.to_string().as_bytes()), "{x}");
        }
        assert!(e.has(b"07") && !e.has(b"007") && !e.has(b"8") && !e.has(b"1000"));
        let mut few = Echoed::none();
        few.number(12);
        few.number(12);
        assert!(few.has(b"12") && !few.has(b"012") && !few.has(b"1"));
        assert_eq!(few.len, 1);
    }

    #[test]
    fn outcomes_ignore_numbers_spacing_and_nonces() {
        assert_eq!(
            normalize_outcome_("Done in 0.52s\n\n(pid 4411)"),
            normalize_outcome_("done in 1.07s (pid 5120)")
        );
        assert_eq!(
            normalize_outcome_("<<<EXTERNAL_UNTRUSTED_CONTENT id=a9f3c>>> hi"),
            normalize_outcome_("<<<EXTERNAL_UNTRUSTED_CONTENT id=ffe01>>> hi")
        );
        assert_ne!(
            normalize_outcome_("3 passed"),
            normalize_outcome_("3 failed")
        );
        // Small integers tell pages and files apart.
        assert_ne!(
            normalize_outcome_("file1.txt"),
            normalize_outcome_("file2.txt")
        );
        assert_eq!(
            normalize_outcome_("at 12:04:55 pid 48811"),
            normalize_outcome_("at 12:05:02 pid 48930")
        );
    }

    #[test]
    fn mutating_commands_append_edit_in_place_or_patch() {
        for yes in [
            &b"echo 'import os' >> app.py && wc -l app.py"[..],
            b"cd /repo && sed -i '5i import os' app.py && grep -c 'import os' app.py",
            b"sed -Ei.bak 's/a/a\\nb/' x.py",
            b"perl -pi -e 's/x/y/' a.txt",
            b"printf 'row\\n' | tee -a data.csv",
            b"git apply fix.diff",
            b"patch -p1 < fix.diff",
            b"cat >> notes.md <<'EOF'\nmore\nEOF",
        ] {
            assert!(is_mutating_command(yes), "{}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b"sed -n '1,20p' app.py"[..],
            b"sleep 5 && tail -n 20 build.log",
            b"echo 'a >> b'",
            b"wc -l data.csv",
            b"python run.py > out.txt 2>&1",
            b"make 2>> /dev/null",
            b"perl -ne 'print if /x/i' a.txt",
            b"git status",
            b"ls -la",
        ] {
            assert!(!is_mutating_command(no), "{}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn counts_mask_every_number_of_a_mutating_call_only() {
        let hash = ResultHash {
            is_error: false,
            digest: [0; 32],
        };
        let text = |t: &str| {
            Value::parse(format!(r#"{{"content":[{{"type":"text","text":{t:?}}}]}}"#).as_bytes())
                .unwrap()
                .into_owned()
        };
        let args = Value::parse(br#"{"command":"echo x >> a.py && wc -l a.py"}"#).unwrap();
        let (a, echoed) = args_sketch_and_numbers(b"bash", &args);
        assert!(a.flags & MUTATES != 0);
        let one = sketch(a.clone(), &echoed, Outcome::Result(&text("12 a.py")), &hash);
        let two = sketch(a.clone(), &echoed, Outcome::Result(&text("13 a.py")), &hash);
        let other = sketch(a, &echoed, Outcome::Result(&text("13 b.py")), &hash);
        assert_ne!(one.outcome, two.outcome);
        assert_eq!(one.counts, two.counts);
        assert_ne!(one.counts, 0);
        assert_ne!(two.counts, other.counts);
        // A read gets no counts hash at all (no cost off writes).
        let read = Value::parse(br#"{"command":"wc -l a.py"}"#).unwrap();
        let (r, echoed) = args_sketch_and_numbers(b"bash", &read);
        assert_eq!(r.flags & MUTATES, 0);
        assert_eq!(
            sketch(r, &echoed, Outcome::Result(&text("12 a.py")), &hash).counts,
            0
        );
        // A write tool is a mutating call by its content key and target.
        let write = Value::parse(br#"{"path":"a.py","new_str":"import os"}"#).unwrap();
        assert!(args_sketch(b"str_replace_editor", &write).flags & MUTATES != 0);
    }
}
