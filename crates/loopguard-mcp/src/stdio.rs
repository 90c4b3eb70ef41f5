//! `loopguard mcp -- COMMAND`: the server runs as a child; the client speaks to the proxy's
//! own stdin and stdout, one JSON-RPC message per line (MCP's stdio transport).

use std::ffi::OsString;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::relay::{FromClient, Relay};
use crate::McpError;

/// How long a server may take to exit after its stdin was closed before it is terminated
/// (MCP's stdio shutdown: close stdin, wait, SIGTERM, wait, SIGKILL).
const GRACE: Duration = Duration::from_secs(2);

/// Starts the server command with its stdin and stdout piped and its stderr on ours.
pub(crate) fn spawn_server(command: &[OsString]) -> Result<Child, McpError> {
    let (program, args) = command.split_first().ok_or(McpError::NoCommand)?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| McpError::Spawn(program.to_string_lossy().into_owned(), e))
}

/// Relays one client connection (`client_in` / `client_out`) to a started server until one
/// side goes away; returns the server's exit status (`None`: the proxy had to end it after
/// the client left).
pub(crate) async fn relay_stdio<R, W>(
    relay: Arc<Relay>,
    mut child: Child,
    client_in: R,
    client_out: W,
) -> Result<Option<ExitStatus>, McpError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server_in = child.stdin.take().ok_or(McpError::Pipe("stdin"))?;
    // Shared with the asks waiting for the user's answer, which forward their call later.
    let server_in = Arc::new(tokio::sync::Mutex::new(server_in));
    let server_out = child.stdout.take().ok_or(McpError::Pipe("stdout"))?;
    let (to_client, mut outbox) = mpsc::unbounded_channel::<Vec<u8>>();

    // The only writer of the client's stdout.
    let writer = tokio::spawn(async move {
        let mut out = client_out;
        while let Some(message) = outbox.recv().await {
            if out.write_all(&message).await.is_err() {
                break;
            }
            if outbox.is_empty() && out.flush().await.is_err() {
                break;
            }
        }
        let _ = out.flush().await;
    });

    // Client -> server.
    let client_relay = relay.clone();
    let replies = to_client.clone();
    let mut client_task = tokio::spawn(async move {
        let mut lines = BufReader::new(client_in);
        let mut line = Vec::with_capacity(4096);
        // Calls waiting for the user's answer; aborted when the client goes away.
        let mut asks = tokio::task::JoinSet::new();
        while read_line(&mut lines, &mut line, "the client").await {
            let message = trim_line(&line);
            if message.is_empty() {
                continue;
            }
            match client_relay.client_message(message) {
                FromClient::Forward => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    if write_server(&server_in, &line).await.is_err() {
                        break;
                    }
                }
                FromClient::Reply(mut reply) => {
                    reply.push(b'\n');
                    let _ = replies.send(reply);
                }
                FromClient::Ask(ask) => {
                    // The client's answer comes in on this loop: wait for it elsewhere.
                    let (relay, to_client, server_in) =
                        (client_relay.clone(), replies.clone(), server_in.clone());
                    let mut call = message.to_vec();
                    call.push(b'\n');
                    asks.spawn(async move {
                        let send = |mut m: Vec<u8>| {
                            m.push(b'\n');
                            let _ = to_client.send(m);
                        };
                        match relay.settle(ask, send).await {
                            FromClient::Forward => {
                                if let Err(e) = write_server(&server_in, &call).await {
                                    tracing::error!(target: "loopguard::mcp", error = %e, "cannot forward the call the user let run");
                                }
                            }
                            FromClient::Reply(mut reply) => {
                                reply.push(b'\n');
                                let _ = to_client.send(reply);
                            }
                            FromClient::Ask(_) | FromClient::Consumed => {}
                        }
                    });
                }
                FromClient::Consumed => {}
            }
            while asks.try_join_next().is_some() {}
        }
        // Dropping server_in (once the asks are aborted) closes the server's stdin: the first
        // step of its shutdown.
        asks.shutdown().await;
    });

    // Server -> client.
    let server_relay = relay.clone();
    let forward = to_client.clone();
    let mut server_task = tokio::spawn(async move {
        let mut lines = BufReader::new(server_out);
        let mut line = Vec::with_capacity(4096);
        while read_line(&mut lines, &mut line, "the server").await {
            let out = match server_relay.server_message(trim_line(&line)) {
                Some(mut rewritten) => {
                    rewritten.push(b'\n');
                    rewritten
                }
                None => {
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    std::mem::take(&mut line)
                }
            };
            if forward.send(out).is_err() {
                break;
            }
        }
    });

    let status = tokio::select! {
        _ = &mut server_task => {
            // The server closed its stdout: it exited (or is about to).
            let status = child.wait().await.map_err(McpError::Wait)?;
            let reason = format!("the MCP server exited ({status}) before answering");
            for error in relay.abandon(&reason) {
                let mut error = error;
                error.push(b'\n');
                let _ = to_client.send(error);
            }
            client_task.abort();
            Some(status)
        }
        _ = &mut client_task => {
            // The client went away; its stdin is closed, so the server's is too.
            let status = match tokio::time::timeout(GRACE, child.wait()).await {
                Ok(status) => Some(status.map_err(McpError::Wait)?),
                Err(_) => {
                    terminate(&mut child).await?;
                    None
                }
            };
            let _ = tokio::time::timeout(GRACE, &mut server_task).await;
            status
        }
    };
    drop(to_client);
    let _ = tokio::time::timeout(GRACE, writer).await;
    Ok(status)
}

/// Writes one message (with its line ending) to the server's stdin.
async fn write_server(
    server_in: &tokio::sync::Mutex<tokio::process::ChildStdin>,
    line: &[u8],
) -> std::io::Result<()> {
    let mut server_in = server_in.lock().await;
    server_in.write_all(line).await?;
    server_in.flush().await
}

/// SIGTERM, then SIGKILL after the grace period.
async fn terminate(child: &mut Child) -> Result<(), McpError> {
    if let Some(pid) = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32))
    {
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        if tokio::time::timeout(GRACE, child.wait()).await.is_ok() {
            return Ok(());
        }
    }
    let _ = child.start_kill();
    child.wait().await.map_err(McpError::Wait)?;
    Ok(())
}

/// The message without its line ending.
/// Reads one newline-delimited message, line ending included (forwarded bytes stay as they
/// were), into `line`; `false` at the end of the stream. A read error ends the stream too, and
/// is said on stderr, naming `from`, rather than passed over.
pub(crate) async fn read_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    from: &str,
) -> bool {
    line.clear();
    match reader.read_until(b'\n', line).await {
        Ok(0) => false,
        Ok(_) => true,
        Err(e) => {
            eprintln!("loopguard mcp: reading from {from}: {e}; that side is treated as closed");
            false
        }
    }
}

/// A message without its line ending.
pub(crate) fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The exit code that reports a server's status: its code, or 128 + the signal that
/// ended it, as shells report it.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

/// `loopguard mcp -- COMMAND`: the whole proxy on this process's stdin and stdout.
pub(crate) async fn run(relay: Relay, command: &[OsString]) -> Result<i32, McpError> {
    let child = spawn_server(command)?;
    let status = relay_stdio(
        Arc::new(relay),
        child,
        tokio::io::stdin(),
        tokio::io::stdout(),
    )
    .await?;
    Ok(status.map_or(0, exit_code))
}
