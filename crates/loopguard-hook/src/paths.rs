//! Where things live: the state database, the log file, config files, Claude Code settings.
//!
//! | what | where |
//! |------|-------|
//! | state database | `--state PATH`, else `$XDG_STATE_HOME/loopguard/state.sqlite3` (default `~/.local/state/…`; the platform's local data dir where XDG does not apply), shared by every agent's hook; a `claude-code.sqlite3` left there by an earlier loopguard is taken over (renamed) on first use |
//! | alert spool | `state.sqlite3.alerts/` beside the database: alerts waiting for delivery ([`alert_spool_for`]) |
//! | log file | `loopguard.log` beside the database; when that directory cannot be created, `$XDG_STATE_HOME/loopguard/loopguard.log`, else `loopguard.log` in the temporary directory ([`log_candidates`]) |
//! | project config | `.loopguard.json5` in `$CLAUDE_PROJECT_DIR`, else in the payload's `cwd`, or in one of their parent directories |
//! | user config | `$XDG_CONFIG_HOME/loopguard/config.json5` (default `~/.config/…`) |
//! | Claude Code settings | `~/.claude/settings.json` (user) or `<project>/.claude/settings.json` (project) |
//!
//! Everything is resolved from an [`Env`], which the binary takes from the process
//! environment and tests build by hand.
//!
//! ```
//! use loopguard_hook::paths::Env;
//! use std::path::PathBuf;
//! let env = Env { state_home: Some(PathBuf::from("/s")), ..Env::default() };
//! assert_eq!(env.default_state_db().unwrap(), PathBuf::from("/s/loopguard/state.sqlite3"));
//! ```

use std::path::{Path, PathBuf};

/// The file name of the state database inside the state directory: one database for every
/// agent's hook.
pub const STATE_FILE: &str = "state.sqlite3";
/// The name the state database had when only Claude Code's hook used it: taken over by
/// [`Env::default_state_db`] when [`STATE_FILE`] does not exist yet.
pub const LEGACY_STATE_FILE: &str = "claude-code.sqlite3";
/// The file name of the log, beside the database.
pub const LOG_FILE: &str = "loopguard.log";
/// The project config file name.
pub const PROJECT_CONFIG: &str = ".loopguard.json5";

/// The environment the hook resolves paths from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Env {
    /// The user's home directory.
    pub home: Option<PathBuf>,
    /// The base directory for state (`$XDG_STATE_HOME` or the platform's equivalent).
    pub state_home: Option<PathBuf>,
    /// The base directory for config (`$XDG_CONFIG_HOME` or the platform's equivalent).
    pub config_home: Option<PathBuf>,
    /// `$CLAUDE_PROJECT_DIR`, which Claude Code sets for hook commands.
    pub project_dir: Option<PathBuf>,
    /// `$PATH`, where `hook install --project` looks for `loopguard` (`None`: not looked
    /// for, as if it were there).
    pub path: Option<std::ffi::OsString>,
}

fn abs_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

impl Env {
    /// The process environment (`HOME`, `XDG_STATE_HOME`, `XDG_CONFIG_HOME`,
    /// `CLAUDE_PROJECT_DIR`, with the platform's defaults).
    pub fn from_process() -> Env {
        let home = abs_env("HOME").or_else(dirs::home_dir);
        let state_home = abs_env("XDG_STATE_HOME")
            .or_else(dirs::state_dir)
            .or_else(dirs::data_local_dir)
            .or_else(|| home.as_ref().map(|h| h.join(".local/state")));
        let config_home = abs_env("XDG_CONFIG_HOME")
            .or_else(dirs::config_dir)
            .or_else(|| home.as_ref().map(|h| h.join(".config")));
        Env {
            home,
            state_home,
            config_home,
            project_dir: abs_env("CLAUDE_PROJECT_DIR"),
            path: Some(std::env::var_os("PATH").unwrap_or_default()),
        }
    }

    /// The default database path. When it does not exist yet but the database of an
    /// earlier loopguard ([`LEGACY_STATE_FILE`]) does, that one is renamed to it first,
    /// with its write-ahead log and shared-memory files (the log before the database, so
    /// nothing committed is ever left behind); should the rename fail, the old database
    /// keeps being used.
    pub fn default_state_db(&self) -> Option<PathBuf> {
        let dir = self.state_home.as_ref()?.join("loopguard");
        let db = dir.join(STATE_FILE);
        let legacy = dir.join(LEGACY_STATE_FILE);
        if !db.exists() && legacy.is_file() {
            for suffix in ["-wal", "-shm"] {
                let from = sidecar(&legacy, suffix);
                if from.exists() && std::fs::rename(&from, sidecar(&db, suffix)).is_err() {
                    return Some(legacy);
                }
            }
            if std::fs::rename(&legacy, &db).is_err() && !db.exists() {
                return Some(legacy);
            }
        }
        Some(db)
    }

    /// The user config file path.
    pub fn user_config(&self) -> Option<PathBuf> {
        self.config_home
            .as_ref()
            .map(|c| c.join("loopguard").join("config.json5"))
    }
}

/// `db` with `suffix` appended to its file name (SQLite's `-wal` and `-shm` files).
fn sidecar(db: &Path, suffix: &str) -> PathBuf {
    let mut name = db.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

/// The alert spool that belongs to a database: the directory `DB.alerts` beside it
/// (`state.sqlite3.alerts/`), one file per alert waiting for delivery
/// ([`crate::alerts`]).
pub fn alert_spool_for(db: &Path) -> PathBuf {
    sidecar(db, ".alerts")
}

/// The log file that belongs to a database.
pub fn log_file_for(db: &Path) -> PathBuf {
    match db.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.join(LOG_FILE),
        _ => PathBuf::from(LOG_FILE),
    }
}

/// Where the log may be, in order: beside the database, in the default state directory,
/// in the temporary directory. The hook writes to the first one it can open; `loopguard
/// status` reads the first one that exists.
///
/// ```
/// use loopguard_hook::paths::{log_candidates, Env};
/// use std::path::{Path, PathBuf};
/// let env = Env { state_home: Some(PathBuf::from("/s")), ..Env::default() };
/// let c = log_candidates(Some(Path::new("/proc/nope/x.db")), &env);
/// assert_eq!(c[0], Path::new("/proc/nope/loopguard.log"));
/// assert_eq!(c[1], Path::new("/s/loopguard/loopguard.log"));
/// assert_eq!(c[2], std::env::temp_dir().join("loopguard.log"));
/// ```
pub fn log_candidates(db: Option<&Path>, env: &Env) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    let candidates = [
        db.map(log_file_for),
        env.state_home
            .as_ref()
            .map(|s| s.join("loopguard").join(LOG_FILE)),
        Some(std::env::temp_dir().join(LOG_FILE)),
    ];
    for c in candidates.into_iter().flatten() {
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

/// The log file `loopguard status` reads: the first of [`log_candidates`] that exists.
///
/// ```
/// use loopguard_hook::paths::{existing_log, Env};
/// let dir = tempfile::tempdir()?;
/// let env = Env { state_home: Some(dir.path().to_path_buf()), ..Env::default() };
/// std::fs::create_dir_all(dir.path().join("loopguard"))?;
/// std::fs::write(dir.path().join("loopguard/loopguard.log"), "")?;
/// let db = std::path::Path::new("/proc/nope/x.db");
/// assert_eq!(existing_log(Some(db), &env), Some(dir.path().join("loopguard/loopguard.log")));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn existing_log(db: Option<&Path>, env: &Env) -> Option<PathBuf> {
    log_candidates(db, env).into_iter().find(|p| p.is_file())
}

/// The nearest `.loopguard.json5` in `start` or one of its ancestors.
pub fn find_project_config(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|d| d.join(PROJECT_CONFIG))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_config_is_found_in_ancestors() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(find_project_config(&deep), None);
        std::fs::write(dir.path().join("a").join(PROJECT_CONFIG), "{}").unwrap();
        assert_eq!(
            find_project_config(&deep),
            Some(dir.path().join("a").join(PROJECT_CONFIG))
        );
    }

    #[test]
    fn log_sits_beside_the_database() {
        assert_eq!(
            log_file_for(Path::new("/x/y/db.sqlite")),
            PathBuf::from("/x/y/loopguard.log")
        );
        assert_eq!(
            log_file_for(Path::new("db")),
            PathBuf::from("loopguard.log")
        );
    }

    #[test]
    fn an_earlier_database_is_taken_over_with_its_log() {
        let dir = tempfile::tempdir().unwrap();
        let env = Env {
            state_home: Some(dir.path().to_path_buf()),
            ..Env::default()
        };
        let state = dir.path().join("loopguard");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(state.join(LEGACY_STATE_FILE), b"db").unwrap();
        std::fs::write(state.join("claude-code.sqlite3-wal"), b"wal").unwrap();
        let db = env.default_state_db().unwrap();
        assert_eq!(db, state.join(STATE_FILE));
        assert_eq!(std::fs::read(&db).unwrap(), b"db");
        assert_eq!(
            std::fs::read(state.join("state.sqlite3-wal")).unwrap(),
            b"wal"
        );
        assert!(!state.join(LEGACY_STATE_FILE).exists());
        // Once taken over, a new file of the old name is left alone.
        std::fs::write(state.join(LEGACY_STATE_FILE), b"other").unwrap();
        assert_eq!(env.default_state_db().unwrap(), db);
        assert_eq!(std::fs::read(&db).unwrap(), b"db");
    }
}
