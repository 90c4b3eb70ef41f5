//! `--max-body`'s value: a number of bytes, with an optional K or M suffix.

/// Why a `--max-body` value was refused.
#[derive(Debug, thiserror::Error)]
pub enum MaxBodyError {
    /// It does not start with a number.
    #[error("--max-body {text:?}: expected a number of bytes, e.g. 1048576 or 4M")]
    NotANumber {
        /// The value given.
        text: String,
        /// Why its digits are not a number.
        source: std::num::ParseIntError,
    },
    /// Its suffix is neither K nor M.
    #[error("--max-body {text:?}: unknown unit {unit:?} (use K or M)")]
    Unit {
        /// The value given.
        text: String,
        /// The suffix.
        unit: String,
    },
    /// It does not fit in memory's address space.
    #[error("--max-body {text:?} is too large")]
    TooLarge {
        /// The value given.
        text: String,
    },
    /// It is zero.
    #[error("--max-body must be positive")]
    Zero,
}

/// Reads a `--max-body` value: bytes, or KiB and MiB with a `K` or `M` suffix (`KB`,
/// `KiB`, `MB`, `MiB` too, in any case; `B` for bytes). Spaces around the number and the
/// unit are allowed; zero is refused.
///
/// ```
/// use loopguard_serve::parse_max_body;
/// assert_eq!(parse_max_body("4M")?, 4 << 20);
/// assert_eq!(parse_max_body("64 KiB")?, 64 << 10);
/// assert_eq!(parse_max_body("4G").unwrap_err().to_string(), r#"--max-body "4G": unknown unit "G" (use K or M)"#);
/// # Ok::<(), loopguard_serve::MaxBodyError>(())
/// ```
pub fn parse_max_body(text: &str) -> Result<usize, MaxBodyError> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], t[i..].trim()),
        None => (t, ""),
    };
    let n: usize = digits.parse().map_err(|source| MaxBodyError::NotANumber {
        text: text.to_string(),
        source,
    })?;
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        _ => {
            return Err(MaxBodyError::Unit {
                text: text.to_string(),
                unit: unit.to_string(),
            })
        }
    };
    let bytes = n.checked_mul(mult).ok_or_else(|| MaxBodyError::TooLarge {
        text: text.to_string(),
    })?;
    if bytes == 0 {
        return Err(MaxBodyError::Zero);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_max_body("1048576").unwrap(), 1 << 20);
        assert_eq!(parse_max_body("4M").unwrap(), 4 << 20);
        assert_eq!(parse_max_body("64k").unwrap(), 64 << 10);
        assert_eq!(parse_max_body(" 2 mib ").unwrap(), 2 << 20);
        assert_eq!(parse_max_body("10b").unwrap(), 10);
    }

    #[test]
    fn refusals_name_the_value() {
        let e = parse_max_body("x").unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"--max-body "x": expected a number of bytes, e.g. 1048576 or 4M"#
        );
        assert_eq!(
            std::error::Error::source(&e).map(|s| s.to_string()),
            Some("cannot parse integer from empty string".to_string())
        );
        assert_eq!(
            parse_max_body("1.5M").unwrap_err().to_string(),
            r#"--max-body "1.5M": unknown unit ".5M" (use K or M)"#
        );
        assert_eq!(
            parse_max_body("18014398509481984M")
                .unwrap_err()
                .to_string(),
            r#"--max-body "18014398509481984M" is too large"#
        );
        assert_eq!(
            parse_max_body("0").unwrap_err().to_string(),
            "--max-body must be positive"
        );
    }
}
