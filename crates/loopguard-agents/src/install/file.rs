//! What every installer shares: the one [`Change`] type, the one error type, the one backup
//! rule ([`backup_path`]) and the one atomic write that keeps symlinks as symlinks.

use std::path::{Path, PathBuf};

/// What a change did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The file already said what it should; nothing was written.
    Unchanged,
    /// The file was written; `backup` holds it as it was before loopguard first touched
    /// it (none for a file loopguard created).
    Written {
        /// `FILE.loopguard-backup`, if there is one.
        backup: Option<PathBuf>,
    },
    /// The file (or, for Cline, the hook scripts) loopguard had created were deleted.
    Removed,
}

impl Change {
    /// One line saying what happened to `path`: `what` names the change
    /// (`loopguard's codex hooks installed`).
    ///
    /// ```
    /// use loopguard_agents::install::Change;
    /// use std::path::Path;
    /// let line = Change::Unchanged.describe(Path::new("/h/.codex/hooks.json"), "loopguard's codex hooks installed");
    /// assert_eq!(line, "/h/.codex/hooks.json already loopguard's codex hooks installed; nothing changed");
    /// ```
    pub fn describe(&self, path: &Path, what: &str) -> String {
        match self {
            Change::Unchanged => format!("{} already {what}; nothing changed", path.display()),
            Change::Written { backup: Some(b) } => format!(
                "{what} in {}, edited in place (the file as it was before loopguard first touched it: {})",
                path.display(),
                b.display()
            ),
            Change::Written { backup: None } => format!("{what} in {} (new file)", path.display()),
            Change::Removed => format!(
                "{what}: loopguard had created {}, so it was deleted",
                path.display()
            ),
        }
    }
}

/// Why a settings file could not be changed. Nothing was written.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// Reading or writing failed (the OS error is part of the message, once).
    #[error("{}: {error}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: std::io::Error,
    },
    /// The file is not the JSON(C) or TOML the program reads, or a field has an
    /// unexpected type.
    #[error("{}: {message}; fix it by hand, nothing was changed", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong, and where.
        message: String,
    },
    /// There is no default settings file for this agent and scope.
    #[error("{0}")]
    NoDefault(String),
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |error| InstallError::Io {
        path: path.to_path_buf(),
        error,
    }
}

/// Where a file is kept as it was before loopguard first touched it: `FILE.loopguard-backup`,
/// written before loopguard's first write and never overwritten.
///
/// ```
/// use loopguard_agents::install::backup_path;
/// use std::path::Path;
/// assert_eq!(backup_path(Path::new("/h/.claude/settings.json")), Path::new("/h/.claude/settings.json.loopguard-backup"));
/// ```
pub fn backup_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".loopguard-backup");
    path.with_file_name(name)
}

/// Quotes a word for the shell that agents run hook commands with.
///
/// ```
/// use loopguard_agents::install::shell_quote;
/// assert_eq!(shell_quote("/usr/bin/loopguard"), "/usr/bin/loopguard");
/// assert_eq!(shell_quote("/opt/my tools/it's"), r"'/opt/my tools/it'\''s'");
/// ```
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:=,@%".contains(&b));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The file's text; `None` when it does not exist.
pub(crate) fn read(path: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read(path) {
        Ok(b) => String::from_utf8(b)
            .map(Some)
            .map_err(|_| InstallError::Invalid {
                path: path.to_path_buf(),
                message: "not UTF-8 text".into(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(path)(e)),
    }
}

/// Writes `text` over `path`: first `old` to the backup file if there is none yet (the
/// one backup rule), then a temporary file in the target's directory, with the target's
/// permissions, renamed over it. A symlinked file is written through the link, so the link
/// stays a link.
pub(crate) fn write(path: &Path, old: Option<&str>, text: &str) -> Result<Change, InstallError> {
    let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if let Some(dir) = target.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io(dir))?;
    }
    let backup_file = backup_path(path);
    if let Some(old) = old {
        if !backup_file.exists() {
            std::fs::write(&backup_file, old).map_err(io(&backup_file))?;
        }
    }
    let tmp = target.with_file_name(format!(
        ".{}.loopguard-tmp-{}",
        target.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, text).map_err(io(&tmp))?;
    if let Ok(meta) = std::fs::metadata(&target) {
        if let Err(e) = std::fs::set_permissions(&tmp, meta.permissions()) {
            let _ = std::fs::remove_file(&tmp);
            return Err(io(&tmp)(e));
        }
    }
    if let Err(e) = std::fs::rename(&tmp, &target) {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(&target)(e));
    }
    Ok(Change::Written {
        backup: backup_file.exists().then_some(backup_file),
    })
}

/// Deletes a file loopguard created.
pub(crate) fn remove(path: &Path) -> Result<Change, InstallError> {
    std::fs::remove_file(path).map_err(io(path))?;
    Ok(Change::Removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_symlink_stays_a_link_and_the_file_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        std::fs::write(&real, "{}").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let c = write(&link, Some("{}"), "{\"a\":1}").unwrap();
        assert_eq!(
            c,
            Change::Written {
                backup: Some(backup_path(&link))
            }
        );
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "{\"a\":1}");
        assert_eq!(
            std::fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
        // The backup is written once, never overwritten.
        write(&link, Some("{\"a\":1}"), "{\"a\":2}").unwrap();
        assert_eq!(std::fs::read_to_string(backup_path(&link)).unwrap(), "{}");
        // No temporary file is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 3);
    }
}
