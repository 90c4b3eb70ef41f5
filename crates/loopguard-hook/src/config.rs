//! Which config the hook runs with.
//!
//! The first that exists wins:
//!
//! 1. `--config FILE`;
//! 2. `.loopguard.json5` in the project (`$CLAUDE_PROJECT_DIR`, else the payload's `cwd`),
//!    or in one of its parent directories;
//! 3. `config.json5` in the user's config directory (`~/.config/loopguard/`).
//!
//! The file has OpenClaw's format, read exactly as `loopguard replay --config` reads it:
//! `tools.loopDetection` and `agents.list[].tools.loopDetection`, with OpenClaw's defaults.
//! In particular `enabled` defaults to `false` there, so a config file should say
//! `enabled: true`. **Without any config file** the hook runs with `enabled: true` and every
//! other default: installing the hook is the user's opt-in.
//!
//! The file is read with the engine's run-time loader
//! ([`loopguard_core::OpenClawConfig::load_for_run`]): a numeric value that is not a
//! positive integer falls back to its default (a warning in [`HookConfig::warnings`]), as
//! in OpenClaw. A config OpenClaw would reject (unknown keys, a switch that is not a
//! boolean, not JSON5) is an error; the hook then fails open (the call is allowed, and the
//! error is reported).
//!
//! ```
//! use loopguard_hook::config::{HookConfig, ConfigSource};
//! let c = HookConfig::builtin();
//! assert_eq!(c.source, ConfigSource::Builtin);
//! assert!(c.policy_for(None).resolved.enabled);
//! ```

use std::path::{Path, PathBuf};

use loopguard_core::{Diagnostic, OpenClawConfig, Policy};

use crate::paths::{find_project_config, Env};

/// Where the config came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// `--config FILE`.
    Flag(PathBuf),
    /// A `.loopguard.json5` in the project.
    Project(PathBuf),
    /// The user's config file.
    User(PathBuf),
    /// No file: detection on with every default.
    Builtin,
}

impl ConfigSource {
    /// The file, if there is one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigSource::Flag(p) | ConfigSource::Project(p) | ConfigSource::User(p) => Some(p),
            ConfigSource::Builtin => None,
        }
    }
}

impl std::fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigSource::Flag(p) => write!(f, "{} (--config)", p.display()),
            ConfigSource::Project(p) => write!(f, "{} (project)", p.display()),
            ConfigSource::User(p) => write!(f, "{} (user)", p.display()),
            ConfigSource::Builtin => {
                f.write_str("built-in (no config file: enabled with defaults)")
            }
        }
    }
}

/// Why the config could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not JSON5, or OpenClaw would reject it.
    #[error("bad config {}: {message}; run `loopguard config check {}`", path.display(), path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// The first problem (and how many more).
        message: String,
    },
}

/// The config the hook runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct HookConfig {
    /// Where it came from.
    pub source: ConfigSource,
    /// The parsed file (empty for [`ConfigSource::Builtin`]).
    pub config: OpenClawConfig,
    /// Problems OpenClaw tolerates at run time (fallbacks applied).
    pub warnings: Vec<Diagnostic>,
}

impl HookConfig {
    /// The config used when there is no file.
    pub fn builtin() -> HookConfig {
        HookConfig {
            source: ConfigSource::Builtin,
            config: OpenClawConfig::default(),
            warnings: Vec::new(),
        }
    }

    /// Reads one file.
    pub fn load(path: &Path, source: ConfigSource) -> Result<HookConfig, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Read {
            path: path.to_path_buf(),
            source: e,
        })?;
        // The engine's run-time loader: numeric values that are not positive integers fall
        // back to their defaults (reported in `warnings`); unknown keys are errors.
        let loaded = OpenClawConfig::load_for_run(&text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        Ok(HookConfig {
            source,
            config: loaded.config,
            warnings: loaded.diagnostics,
        })
    }

    /// Finds and reads the config (see the module documentation).
    pub fn discover(
        explicit: Option<&Path>,
        cwd: Option<&Path>,
        env: &Env,
    ) -> Result<HookConfig, ConfigError> {
        if let Some(p) = explicit {
            return HookConfig::load(p, ConfigSource::Flag(p.to_path_buf()));
        }
        let start = env.project_dir.as_deref().or(cwd);
        if let Some(p) = start.and_then(find_project_config) {
            return HookConfig::load(&p, ConfigSource::Project(p.clone()));
        }
        if let Some(p) = env.user_config().filter(|p| p.is_file()) {
            return HookConfig::load(&p, ConfigSource::User(p.clone()));
        }
        Ok(HookConfig::builtin())
    }

    /// The config the guard runs with: the file's, or `enabled: true` without one.
    pub fn openclaw(&self) -> OpenClawConfig {
        match self.source {
            ConfigSource::Builtin => loopguard_guard::enabled_config(),
            _ => self.config.clone(),
        }
    }

    /// The policy for an agent (`agents.list[]` id; `None` for the main agent).
    pub fn policy_for(&self, agent: Option<&str>) -> Policy {
        match self.source {
            ConfigSource::Builtin => Policy::enabled(),
            _ => self.config.policy_for(agent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_then_project_then_user_then_builtin() {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        let sub = project.join("src");
        let config_home = dir.path().join("config");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(config_home.join("loopguard")).unwrap();
        let env = Env {
            config_home: Some(config_home.clone()),
            ..Env::default()
        };
        let found = |env: &Env| HookConfig::discover(None, Some(&sub), env).unwrap().source;
        assert_eq!(found(&env), ConfigSource::Builtin);

        let user = config_home.join("loopguard/config.json5");
        std::fs::write(
            &user,
            "{ tools: { loopDetection: { enabled: true, warningThreshold: 4 } } }",
        )
        .unwrap();
        assert_eq!(found(&env), ConfigSource::User(user.clone()));

        let proj = project.join(".loopguard.json5");
        std::fs::write(&proj, "{ tools: { loopDetection: { enabled: true } } }").unwrap();
        assert_eq!(found(&env), ConfigSource::Project(proj.clone()));

        // CLAUDE_PROJECT_DIR wins over the payload's cwd.
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        let with_project_dir = Env {
            project_dir: Some(other.clone()),
            ..env.clone()
        };
        assert_eq!(found(&with_project_dir), ConfigSource::User(user.clone()));

        let flag = HookConfig::discover(Some(&user), Some(&sub), &env).unwrap();
        assert_eq!(flag.source, ConfigSource::Flag(user.clone()));
        assert_eq!(flag.policy_for(None).resolved.warning_threshold, 4.0);
    }

    #[test]
    fn a_file_without_enabled_follows_openclaw_and_builtin_is_on() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json5");
        std::fs::write(&p, "{ tools: { loopDetection: { warningThreshold: 4 } } }").unwrap();
        let c = HookConfig::load(&p, ConfigSource::Flag(p.clone())).unwrap();
        assert!(!c.policy_for(None).resolved.enabled);
        assert!(c.policy_for(None).guard.enabled);
        assert!(HookConfig::builtin().policy_for(Some("x")).resolved.enabled);
    }

    #[test]
    fn bad_configs_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json5");
        std::fs::write(&p, "{ tools: { loopDetection: { enabeld: true } } }").unwrap();
        let e = HookConfig::load(&p, ConfigSource::Flag(p.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.json5") && e.contains("enabeld"), "{e}");
        std::fs::write(&p, "{ nope").unwrap();
        assert!(HookConfig::load(&p, ConfigSource::Flag(p.clone())).is_err());
        let missing = dir.path().join("missing.json5");
        let e = HookConfig::discover(Some(&missing), None, &Env::default()).unwrap_err();
        assert!(matches!(e, ConfigError::Read { .. }));
    }
}
