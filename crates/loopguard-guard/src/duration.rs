//! Durations as the command lines and configs of every front end spell them.

use std::time::Duration;

/// Parses a duration such as `7d`, `12h`, `30m`, `90s` or `500ms` (a bare number is
/// seconds).
///
/// ```
/// use loopguard_guard::parse_duration;
/// use std::time::Duration;
/// assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86400)));
/// assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
/// assert!(parse_duration("soon").is_err());
/// ```
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("`{s}` is not a duration like 7d, 12h, 30m, 90s or 500ms"))?;
    let ms = match unit {
        "ms" => Some(n),
        "" | "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => None,
    }
    .ok_or_else(|| format!("`{s}` is not a duration like 7d, 12h, 30m, 90s or 500ms"))?;
    Ok(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("30m"), Ok(Duration::from_secs(1800)));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5w").is_err());
        assert!(parse_duration("99999999999999999999d").is_err());
    }
}
