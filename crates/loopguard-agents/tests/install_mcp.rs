//! `install` / `uninstall` on real-looking config files of each client: only the server
//! entries change, a second install changes nothing, and uninstall gives back the file byte
//! for byte.

use std::path::{Path, PathBuf};

use loopguard_agents::install::mcp::{ChangeKind, Client, Installer};

const LOOPGUARD: &str = "/opt/loopguard/bin/loopguard";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/clients")
        .join(name)
}

fn copy(dir: &Path, name: &str) -> (PathBuf, String) {
    let original = std::fs::read_to_string(fixture(name)).expect("fixture");
    let path = dir.join(name);
    std::fs::write(&path, &original).expect("copy");
    (path, original)
}

/// Installs, checks idempotence and the backup, uninstalls, checks the exact round trip;
/// returns the installed text and the report's changes.
fn round_trip(client: Client, name: &str) -> (String, Vec<(String, ChangeKind)>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, original) = copy(dir.path(), name);
    let installer = Installer::new(client, &path).loopguard_command(LOOPGUARD);
    let report = installer.install().expect("install");
    assert!(report.changed(), "{name}: install changed the file");
    let installed = std::fs::read_to_string(&path).expect("read");
    assert_ne!(installed, original);
    let backup = report.backup().expect("backup").to_path_buf();
    assert_eq!(
        std::fs::read_to_string(&backup).expect("backup"),
        original,
        "{name}: the backup is the previous file"
    );

    let again = installer.install().expect("second install");
    assert!(!again.changed(), "{name}: a second install changes nothing");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), installed);
    assert!(again.changes.iter().all(|c| !matches!(
        c.kind,
        ChangeKind::WrappedCommand(_) | ChangeKind::WrappedUrl(_)
    )));

    let undo = installer.uninstall().expect("uninstall");
    assert!(undo.changed());
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        original,
        "{name}: uninstall restores every byte"
    );
    assert!(
        !dir.path()
            .join(format!("{name}.loopguard-mcp.json"))
            .exists(),
        "the install record is gone"
    );
    let undo_again = installer.uninstall().expect("second uninstall");
    assert!(!undo_again.changed());
    let changes = report
        .changes
        .into_iter()
        .map(|c| (c.entry, c.kind))
        .collect();
    (installed, changes)
}

fn parse(text: &str) -> serde_json::Value {
    // The installed JSON files stay plain JSON.
    serde_json::from_str(text).expect("valid JSON")
}

#[test]
fn claude_desktop() {
    let (installed, changes) = round_trip(Client::ClaudeDesktop, "claude_desktop_config.json");
    let v = parse(&installed);
    let fs = &v["mcpServers"]["filesystem"];
    assert_eq!(fs["command"], LOOPGUARD);
    assert_eq!(
        fs["args"],
        serde_json::json!([
            "mcp",
            "--name",
            "filesystem",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/Users/ana/Desktop",
            "/Users/ana/Downloads"
        ])
    );
    assert_eq!(
        v["mcpServers"]["github"]["env"]["GITHUB_PERSONAL_ACCESS_TOKEN"],
        "<token>"
    );
    assert_eq!(v["globalShortcut"], "Ctrl+Space");
    // Key order and the untouched lines are kept.
    assert!(installed.ends_with(
        "  \"globalShortcut\": \"Ctrl+Space\",\n  \"preferences\": {\"menuBarEnabled\": true}\n}\n"
    ));
    assert_eq!(changes.len(), 3);
    assert!(changes
        .iter()
        .all(|(_, k)| matches!(k, ChangeKind::WrappedCommand(_))));
}

#[test]
fn claude_code_user_and_project_servers_and_url_entries() {
    let (installed, changes) = round_trip(Client::ClaudeCode, "claude.json");
    let v = parse(&installed);
    assert_eq!(v["mcpServers"]["memory"]["type"], "stdio");
    assert_eq!(v["mcpServers"]["memory"]["args"][4], "npx");
    let sentry = &v["mcpServers"]["sentry"];
    assert_eq!(sentry["type"], "stdio");
    assert_eq!(sentry["command"], LOOPGUARD);
    assert_eq!(
        sentry["args"],
        serde_json::json!([
            "mcp",
            "--name",
            "sentry",
            "--upstream",
            "https://mcp.sentry.dev/mcp",
            "--header",
            "Authorization: Bearer sk-test"
        ])
    );
    assert!(sentry.get("url").is_none() && sentry.get("headers").is_none());
    assert_eq!(
        v["projects"]["/home/ana/site"]["mcpServers"]["playwright"]["command"],
        LOOPGUARD
    );
    assert_eq!(v["numStartups"], 42);
    let sse = changes
        .iter()
        .find(|(e, _)| e == "mcpServers.legacy-sse")
        .expect("reported");
    assert!(matches!(&sse.1, ChangeKind::Skipped(why) if why.contains("sse")));
    assert_eq!(
        v["mcpServers"]["legacy-sse"]["url"],
        "https://example.com/sse"
    );
}

#[test]
fn cursor() {
    let (installed, changes) = round_trip(Client::Cursor, "cursor-mcp.json");
    let v = parse(&installed);
    assert_eq!(
        v["mcpServers"]["bare"]["args"],
        serde_json::json!(["mcp", "--name", "bare", "--", "my-mcp-server"])
    );
    assert_eq!(
        v["mcpServers"]["remote"]["args"][4],
        "https://mcp.example.com/mcp"
    );
    assert_eq!(v["mcpServers"]["web-search"]["env"]["API_KEY"], "value");
    assert_eq!(changes.len(), 4);
}

#[test]
fn vscode_jsonc_keeps_comments_and_trailing_commas() {
    let (installed, changes) = round_trip(Client::VsCode, "vscode-mcp.json");
    for kept in [
        "// VS Code MCP servers (JSONC: comments and trailing commas are allowed)",
        "// A local server",
        "/* A remote one */",
        "// the npm package",
        "\"PERPLEXITY_API_KEY\": \"${input:perplexity-key}\"\n\t\t\t},\n\t\t},",
    ] {
        assert!(installed.contains(kept), "kept: {kept}");
    }
    assert!(installed.contains(
        "\"args\": [\"mcp\", \"--name\", \"perplexity\", \"--\", \"npx\", \"-y\", \"server-perplexity-ask\"], // the npm package"
    ));
    assert!(installed.contains("\"type\": \"stdio\",\n\t\t\t\"command\": \"/opt/loopguard/bin/loopguard\", \"args\": [\"mcp\", \"--name\", \"github\", \"--upstream\", \"https://api.githubcopilot.com/mcp/\"]"));
    assert_eq!(changes.len(), 3);
}

#[test]
fn an_entry_edited_after_install_is_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = copy(dir.path(), "cursor-mcp.json");
    let installer = Installer::new(Client::Cursor, &path).loopguard_command(LOOPGUARD);
    installer.install().expect("install");
    let text = std::fs::read_to_string(&path).expect("read");
    let edited = text.replacen("\"my-mcp-server\"]", "\"my-mcp-server\", \"--verbose\"]", 1);
    assert_ne!(edited, text);
    std::fs::write(&path, &edited).expect("write");
    let report = installer.uninstall().expect("uninstall");
    let bare = report
        .changes
        .iter()
        .find(|c| c.entry == "mcpServers.bare")
        .expect("bare");
    assert_eq!(bare.kind, ChangeKind::EditedSinceInstall);
    let after = std::fs::read_to_string(&path).expect("read");
    assert!(after.contains("\"my-mcp-server\", \"--verbose\"]"));
    assert!(
        after.contains("\"command\": \"python3\""),
        "the others are restored"
    );
}

#[test]
fn bad_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("mcp.json");
    std::fs::write(&path, "{ \"mcpServers\": { \"x\": ").expect("write");
    let err = Installer::new(Client::Cursor, &path)
        .install()
        .expect_err("broken JSON");
    assert!(err.to_string().contains("mcp.json"), "{err}");
    let missing = Installer::new(Client::Cursor, dir.path().join("none.json"))
        .install()
        .expect_err("missing");
    assert!(missing.to_string().contains("none.json"), "{missing}");
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{ \"mcpServers\": { \"x\": "
    );
}

/// The installers' shared rules hold for MCP configs too: a symlinked config stays a link (the
/// file it points to is edited, with its permissions), and the backup holds the file as it was
/// before loopguard first touched it, whatever was written since.
#[cfg(unix)]
#[test]
fn a_symlinked_config_stays_a_link_and_the_first_backup_stays() {
    use loopguard_agents::install::backup_path;
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let (real, original) = copy(dir.path(), "vscode-mcp.json");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = dir.path().join("mcp-link.json");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let installer = Installer::new(Client::VsCode, &link).loopguard_command(LOOPGUARD);
    let report = installer.install().expect("install");
    assert_eq!(report.backup(), Some(backup_path(&link).as_path()));
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
    let installed = std::fs::read_to_string(&real).expect("read");
    assert!(installed.contains(LOOPGUARD));
    assert_eq!(
        std::fs::metadata(&real).expect("meta").permissions().mode() & 0o777,
        0o600
    );
    // Uninstall, install again: the backup is still the file before the first install.
    installer.uninstall().expect("uninstall");
    assert_eq!(std::fs::read_to_string(&real).expect("read"), original);
    installer.install().expect("install again");
    installer.uninstall().expect("uninstall again");
    assert_eq!(
        std::fs::read_to_string(backup_path(&link)).expect("backup"),
        original
    );
    assert_eq!(std::fs::read_to_string(&real).expect("read"), original);
    assert!(std::fs::symlink_metadata(&link)
        .expect("link")
        .file_type()
        .is_symlink());
}
