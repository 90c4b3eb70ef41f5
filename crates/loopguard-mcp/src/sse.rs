//! Server-sent events as MCP's streamable HTTP transport uses them: split a byte stream into
//! events, keeping each event's bytes, so only an event whose message the relay rewrites is
//! re-framed.

/// Splits a byte stream into complete events (each with its terminating blank line).
#[derive(Debug, Default)]
pub(crate) struct SseSplitter {
    buf: Vec<u8>,
}

impl SseSplitter {
    /// Adds bytes; returns the events completed by them.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = event_end(&self.buf) {
            let rest = self.buf.split_off(end);
            events.push(std::mem::replace(&mut self.buf, rest));
        }
        events
    }

    /// What is left when the stream ends (an event without its blank line).
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        (!self.buf.is_empty()).then(|| std::mem::take(&mut self.buf))
    }
}

/// The end of the first event: after the first blank line (`\n\n`, `\r\n\r\n`, `\r\r`).
fn event_end(buf: &[u8]) -> Option<usize> {
    let mut i = 0;
    let mut line_start = 0;
    while i < buf.len() {
        let eol = match buf[i] {
            b'\n' => 1,
            b'\r' if buf.get(i + 1) == Some(&b'\n') => 2,
            b'\r' if i + 1 < buf.len() => 1,
            b'\r' => return None, // a `\r` at the end may be followed by `\n`
            _ => {
                i += 1;
                continue;
            }
        };
        if i == line_start {
            return Some(i + eol);
        }
        i += eol;
        line_start = i;
    }
    None
}

fn lines(block: &[u8]) -> impl Iterator<Item = &[u8]> {
    block
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .filter(|l| !l.is_empty())
}

/// The event's data: its `data` lines joined with `\n`; `None` without any.
pub(crate) fn data(block: &[u8]) -> Option<Vec<u8>> {
    let mut out: Option<Vec<u8>> = None;
    for line in lines(block) {
        let Some(value) = line.strip_prefix(b"data") else {
            continue;
        };
        let value = match value.first() {
            Some(b':') => value[1..].strip_prefix(b" ").unwrap_or(&value[1..]),
            None => value,
            _ => continue, // a field named e.g. `datax`
        };
        match &mut out {
            Some(o) => {
                o.push(b'\n');
                o.extend_from_slice(value);
            }
            None => out = Some(value.to_vec()),
        }
    }
    out
}

/// The same event with its data replaced (other fields kept in place of the first data line).
pub(crate) fn with_data(block: &[u8], new_data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(block.len() + new_data.len());
    let mut written = false;
    for line in lines(block) {
        let is_data = line
            .strip_prefix(b"data")
            .is_some_and(|v| v.is_empty() || v[0] == b':');
        if is_data {
            if !written {
                out.extend_from_slice(b"data: ");
                out.extend_from_slice(new_data);
                out.push(b'\n');
                written = true;
            }
        } else {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
    }
    out.push(b'\n');
    out
}

/// One event carrying one JSON-RPC message.
pub(crate) fn message_event(message: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(message.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_across_chunks_and_line_endings() {
        let mut s = SseSplitter::default();
        assert!(s.feed(b"id: 1\nevent: message\ndata: {\"a\"").is_empty());
        let events = s.feed(b":1}\n\nid: 2\r\ndata: x\r\n\r\n: ping\n\n");
        assert_eq!(events.len(), 3);
        assert_eq!(data(&events[0]).as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(data(&events[1]).as_deref(), Some(&b"x"[..]));
        assert_eq!(data(&events[2]), None);
        assert_eq!(
            events.concat(),
            b"id: 1\nevent: message\ndata: {\"a\":1}\n\nid: 2\r\ndata: x\r\n\r\n: ping\n\n"
        );
        assert_eq!(s.finish(), None);
    }

    #[test]
    fn replaces_data_keeping_id_and_event() {
        let out = with_data(b"id: 7\nevent: message\ndata: old\n\n", b"new");
        assert_eq!(out, b"id: 7\nevent: message\ndata: new\n\n");
    }
}
