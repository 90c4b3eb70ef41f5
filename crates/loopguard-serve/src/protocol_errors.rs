//! JSON bodies for the errors hyper answers by itself.
//!
//! A request hyper cannot parse never reaches the router: hyper writes a bodiless
//! `400 Bad Request` (a garbage request line, a malformed header, a duplicate
//! `Content-Length`), `414 URI Too Long` or `431 Request Header Fields Too Large` (a head
//! over its buffer) and closes the connection. It has no hook for that answer, so the
//! connection's writes pass through [`JsonProtocolErrors`], which recognises exactly that
//! answer (one of those statuses, `content-length: 0`, nothing after the head; every answer
//! of the router to an error carries a JSON body) and writes it with the JSON body every
//! other error has (the `Error` schema of `/openapi.json`).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::error::ApiError;

/// A connection whose bodiless protocol-error answers are rewritten with a JSON body.
pub(crate) struct JsonProtocolErrors<S> {
    inner: S,
    /// A rewritten answer being written: its bytes, how many are written, and the length of
    /// hyper's original (reported as written once all of the rewrite is).
    pending: Option<(Vec<u8>, usize, usize)>,
}

impl<S> JsonProtocolErrors<S> {
    pub(crate) fn new(inner: S) -> Self {
        JsonProtocolErrors {
            inner,
            pending: None,
        }
    }
}

impl<S: AsyncWrite + Unpin> JsonProtocolErrors<S> {
    /// Writes the pending rewrite; `Ready(Ok(n))` with hyper's length once all is written.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some((bytes, written, original)) = self.pending.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while *written < bytes.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &bytes[*written..]) {
                Poll::Ready(Ok(0)) => {
                    self.pending = None;
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => *written += n,
                Poll::Ready(Err(e)) => {
                    self.pending = None;
                    return Poll::Ready(Err(e));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
        let n = *original;
        self.pending = None;
        Poll::Ready(Ok(n))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for JsonProtocolErrors<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for JsonProtocolErrors<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let me = &mut *self;
        if me.pending.is_none() {
            match rewrite(buf) {
                Some(bytes) => me.pending = Some((bytes, 0, buf.len())),
                None => return Pin::new(&mut me.inner).poll_write(cx, buf),
            }
        }
        me.drive(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let me = &mut *self;
        if me.pending.is_none() {
            // hyper writes an answer without a body as one slice: its head.
            let mut filled = bufs.iter().filter(|b| !b.is_empty());
            match (filled.next(), filled.next()) {
                (Some(only), None) => match rewrite(only) {
                    Some(bytes) => me.pending = Some((bytes, 0, only.len())),
                    None => return Pin::new(&mut me.inner).poll_write_vectored(cx, bufs),
                },
                _ => return Pin::new(&mut me.inner).poll_write_vectored(cx, bufs),
            }
        }
        me.drive(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// hyper's own answer to a request it could not parse, with a JSON body; `None` for
/// anything else.
fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    let rest = head
        .strip_prefix(b"HTTP/1.1 ")
        .or_else(|| head.strip_prefix(b"HTTP/1.0 "))?;
    let code: u16 = std::str::from_utf8(rest.get(..3)?).ok()?.parse().ok()?;
    let status = StatusCode::from_u16(code).ok()?;
    let error = match status {
        StatusCode::BAD_REQUEST => {
            "the request is not valid HTTP/1.1 (its request line, a header, or its framing, such as a duplicate or invalid Content-Length); see GET /openapi.json"
        }
        StatusCode::URI_TOO_LONG => "the request target (path and query) is too long",
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "the request line and headers are larger than the server reads (about 400 KiB)"
        }
        _ => return None,
    };
    let text = std::str::from_utf8(head).ok()?;
    let head_text = text.strip_suffix("\r\n\r\n")?;
    let mut lines = head_text.split("\r\n");
    let status_line = lines.next()?;
    let mut headers = Vec::new();
    let mut bodiless = false;
    for line in lines {
        let (name, value) = line.split_once(':')?;
        let name = name.trim();
        if name.eq_ignore_ascii_case("content-length") {
            // An answer of the router always has a body here: this one is hyper's.
            if value.trim() != "0" {
                return None;
            }
            bodiless = true;
        } else if name.eq_ignore_ascii_case("transfer-encoding")
            || name.eq_ignore_ascii_case("content-type")
        {
            return None;
        } else if !name.eq_ignore_ascii_case("connection") {
            headers.push(line);
        }
    }
    if !bodiless {
        return None;
    }
    let body = ApiError::new(status, error, None).body();
    let mut out = String::with_capacity(head.len() + body.len() + 96);
    out.push_str(status_line);
    out.push_str("\r\n");
    for h in headers {
        out.push_str(h);
        out.push_str("\r\n");
    }
    // hyper closes the connection after this answer.
    out.push_str("content-type: application/json\r\nconnection: close\r\n");
    out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    out.push_str(&body);
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::rewrite;

    #[test]
    fn hypers_bodiless_parse_errors_get_a_json_body() {
        let head = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 07 Dec 2026 20:00:00 GMT\r\n\r\n";
        let out = String::from_utf8(rewrite(head).expect("rewritten")).expect("UTF-8");
        let (head, body) = out.split_once("\r\n\r\n").expect("a head");
        assert!(head.starts_with("HTTP/1.1 431 Request Header Fields Too Large\r\n"));
        assert!(head.contains("\r\ndate: Mon, 07 Dec 2026 20:00:00 GMT"));
        assert!(head.contains("\r\ncontent-type: application/json"));
        assert!(head.contains(&format!("\r\ncontent-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).expect("JSON");
        assert!(v["error"].as_str().expect("error").contains("headers"));
    }

    #[test]
    fn other_answers_pass_unchanged() {
        // The router's own errors carry a body; a 200 or a 404 is never rewritten.
        for head in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 20\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 20\r\n\r\n",
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n",
        ] {
            assert_eq!(rewrite(head), None, "{}", String::from_utf8_lossy(head));
        }
    }
}
