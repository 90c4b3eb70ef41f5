//! The contract of `loopguard serve`: Schemathesis (installed by
//! `scripts/setup-schemathesis.sh` into `target/schemathesis-venv`, or
//! `$LOOPGUARD_SCHEMATHESIS_VENV`) generates requests from `GET /openapi.json`, valid and
//! invalid, and runs every check it has (`--checks all`: no 5xx, answers that match their
//! documented status, content type, headers and schema, valid data accepted, invalid data
//! rejected, authentication enforced). A finding fails the test. Bounded: a fixed number of
//! examples per operation and a fixed seed, run once without `--tokens` and once with.
//!
//! Left out: the operations in [`STREAMING`], whose answer never ends by itself (the
//! dashboard's server-sent events; the document marks them `x-streaming`), so a generated
//! request would wait for its body forever. `serve_dashboard.rs` tests them.

mod serve_support;

use std::path::PathBuf;
use std::process::Command;

use serve_support::*;

fn root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root")
}

/// Schemathesis's command line; fails the test, naming the setup script, when it is missing.
fn st() -> PathBuf {
    let venv = std::env::var_os("LOOPGUARD_SCHEMATHESIS_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/schemathesis-venv"));
    let st = venv.join("bin/st");
    let ok = Command::new(&st)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "Schemathesis is not installed at {}: run scripts/setup-schemathesis.sh",
        st.display()
    );
    st
}

/// Operations Schemathesis leaves out: their answers are streams that stay open.
const STREAMING: [&str; 1] = ["dashboardStream"];

/// Runs Schemathesis against `server`, with `token` as the bearer token when given.
fn schemathesis(server: &Serve, token: Option<&str>) {
    let mut cmd = Command::new(st());
    cmd.arg("run")
        .arg(server.url("/openapi.json"))
        .args(["--url", &server.url("")])
        .args(["--checks", "all"])
        .args(["--max-examples", "40"])
        .args(["--seed", "20261207"])
        .arg("--no-color")
        .args(
            STREAMING
                .iter()
                .flat_map(|id| ["--exclude-operation-id", id]),
        )
        // Its own files (the cassettes it may write, its config lookup) stay out of the
        // repository.
        .current_dir(std::env::temp_dir())
        .env("NO_COLOR", "1");
    if let Some(t) = token {
        cmd.args(["--header", &format!("Authorization: Bearer {t}")]);
    }
    let out = cmd.output().expect("run schemathesis");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "Schemathesis found problems ({:?}):\n{stdout}\n{stderr}\nserve:\n{}",
        out.status,
        server.stderr.lock().expect("the log")
    );
    // It tested every operation it found in the document, and it found them all (a
    // document it cannot read would select fewer).
    let field = |name: &str| -> Option<&str> {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(name))
            .map(str::trim)
    };
    let selected = field("Selected:").unwrap_or_else(|| panic!("no Selected line:\n{stdout}"));
    let tested = field("Tested:").unwrap_or_else(|| panic!("no Tested line:\n{stdout}"));
    let (n, total) = selected.split_once('/').expect("Selected: N/M");
    let total: usize = total.trim().parse().expect("a count");
    assert_eq!(
        n.trim().parse::<usize>().expect("a count") + STREAMING.len(),
        total,
        "operations skipped beyond the streaming ones:\n{stdout}"
    );
    assert_eq!(tested, n, "operations not tested:\n{stdout}");
    let n: usize = n.parse().expect("a count");
    assert!(n >= 17, "only {n} operations in /openapi.json:\n{stdout}");
    assert!(stdout.contains("No issues found"), "{stdout}");
}

#[test]
fn the_server_keeps_its_openapi_contract() {
    let server = Serve::start(&[]);
    schemathesis(&server, None);
}

#[test]
fn the_server_keeps_its_openapi_contract_with_tokens() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "acme tok-acme\n").expect("the tokens file");
    let server = Serve::start(&["--tokens", tokens.to_str().expect("UTF-8")]);
    schemathesis(&server, Some("tok-acme"));
}
