//! The `--tokens` file: one `TENANT TOKEN` pair a line.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// Bearer tokens and the tenant each one authenticates.
///
/// The file has one `TENANT TOKEN` pair a line, separated by spaces or tabs; blank lines
/// and lines starting with `#` are ignored. A tenant may have several tokens (rotation);
/// a token belongs to one tenant.
///
/// ```
/// use loopguard_serve::Tokens;
/// # fn main() -> Result<(), loopguard_serve::TokensError> {
/// let tokens = Tokens::parse("# team tokens\nacme s3cret-1\nglobex s3cret-2\n")?;
/// assert_eq!(tokens.tenant("s3cret-2").as_deref(), Some("globex"));
/// assert_eq!(tokens.tenant("nope"), None);
/// assert!(Tokens::parse("acme").is_err()); // no token
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug, Default)]
pub struct Tokens {
    by_token: HashMap<String, Arc<str>>,
}

/// A `--tokens` file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{source_name}:{line}: {message}")]
pub struct TokensError {
    /// The file (or `<text>`).
    pub source_name: String,
    /// 1-based line, 0 when the file could not be read.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl Tokens {
    /// Reads a tokens file.
    pub fn load(path: &Path) -> Result<Tokens, TokensError> {
        let text = std::fs::read_to_string(path).map_err(|e| TokensError {
            source_name: path.display().to_string(),
            line: 0,
            message: format!("cannot read the tokens file: {e}"),
        })?;
        Self::parse_named(&text, &path.display().to_string())
    }

    /// Parses the text of a tokens file.
    pub fn parse(text: &str) -> Result<Tokens, TokensError> {
        Self::parse_named(text, "<text>")
    }

    fn parse_named(text: &str, name: &str) -> Result<Tokens, TokensError> {
        let mut by_token: HashMap<String, Arc<str>> = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |message: String| TokensError {
                source_name: name.to_string(),
                line: i + 1,
                message,
            };
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split_whitespace();
            let (Some(tenant), Some(token), None) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(err(
                    "expected `TENANT TOKEN` (two words separated by spaces)".to_string(),
                ));
            };
            if tenant.contains('/') {
                return Err(err(format!(
                    "tenant {tenant:?} contains `/`, which separates tenant and session in store keys"
                )));
            }
            if let Some(other) = by_token.get(token) {
                if &**other != tenant {
                    return Err(err(format!(
                        "this token is already given to tenant {other:?}; a token names one tenant"
                    )));
                }
            }
            by_token.insert(token.to_string(), Arc::from(tenant));
        }
        if by_token.is_empty() {
            return Err(TokensError {
                source_name: name.to_string(),
                line: 0,
                message: "no `TENANT TOKEN` line: nobody could use the server".to_string(),
            });
        }
        Ok(Tokens { by_token })
    }

    /// The tenant a token authenticates.
    pub fn tenant(&self, token: &str) -> Option<Arc<str>> {
        self.by_token.get(token).cloned()
    }

    /// How many tokens there are.
    pub fn len(&self) -> usize {
        self.by_token.len()
    }

    /// `true` when there are no tokens.
    pub fn is_empty(&self) -> bool {
        self.by_token.is_empty()
    }
}
