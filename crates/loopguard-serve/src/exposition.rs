//! `GET /metrics`: who may read it, and in which text format.
//!
//! The registry renders OpenMetrics 1.0. A scraper that asks for it (`Accept:
//! application/openmetrics-text`, as Prometheus does by default) gets it; any other
//! (`text/plain;version=0.0.4`, `*/*`, no `Accept`) gets the Prometheus text format 0.0.4,
//! in which a counter's family is named with its `_total` suffix (a 0.0.4 parser reading
//! OpenMetrics types every `_total` series `unknown`).
//!
//! Access: with `--metrics-token`, that bearer token reads every series. With `--tokens`, a
//! tenant's token reads only its own tenant's series (the families labelled by tenant,
//! [`PER_TENANT`]), so tenants never see each other's agents and services; the server-wide
//! families need the metrics token. Without either, `/metrics` is open, as `/healthz` is.

use axum::http::{header, HeaderMap, StatusCode};

use crate::error::ApiError;
use crate::metrics::PER_TENANT;
use crate::state::AppState;

/// The content type of each format.
pub(crate) const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
pub(crate) const TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What the caller may read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// Every series.
    All,
    /// The per-tenant series of one tenant.
    Tenant(std::sync::Arc<str>),
}

/// Who is asking: the metrics token reads all; with `--tokens`, a tenant's token reads its
/// own series; without tokens and without a metrics token, anyone reads all.
pub(crate) fn view(state: &AppState, headers: &HeaderMap) -> Result<View, ApiError> {
    let presented = bearer(headers);
    if let (Some(want), Some(got)) = (state.metrics_token.as_deref(), presented) {
        if constant_time_eq(want.as_bytes(), got.as_bytes()) {
            return Ok(View::All);
        }
    }
    if state.tokens.is_some() {
        // A tenant's token, or 401 (the same answers as every other route).
        return match state.authenticate(headers)? {
            Some(tenant) => Ok(View::Tenant(tenant)),
            None => Ok(View::All),
        };
    }
    if state.metrics_token.is_some() {
        let message = if presented.is_some() {
            "unknown bearer token (GET /metrics needs the --metrics-token token)"
        } else {
            "missing `Authorization: Bearer TOKEN` header (GET /metrics needs the --metrics-token token)"
        };
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            message,
            Some("authorization"),
        ));
    }
    Ok(View::All)
}

fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = v.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// Compares without stopping at the first difference, so the time taken says nothing
/// about how much of a guessed token was right.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `true` when the `Accept` header prefers OpenMetrics to the 0.0.4 text format (by
/// quality; a tie goes to OpenMetrics, which the scraper named).
pub(crate) fn wants_openmetrics(headers: &HeaderMap) -> bool {
    let Some(accept) = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let mut openmetrics: Option<f32> = None;
    let mut text: Option<f32> = None;
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let mime = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let mut q = 1.0f32;
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    q = v.trim().parse().unwrap_or(0.0);
                }
            }
        }
        let slot = match mime.as_str() {
            "application/openmetrics-text" => &mut openmetrics,
            "text/plain" | "text/*" | "*/*" => &mut text,
            _ => continue,
        };
        *slot = Some(slot.map_or(q, |old: f32| old.max(q)));
    }
    match (openmetrics, text) {
        (Some(om), Some(t)) => om > 0.0 && om >= t,
        (Some(om), None) => om > 0.0,
        _ => false,
    }
}

/// The OpenMetrics text the registry renders, for `view`, in the format asked for.
pub(crate) fn render(openmetrics_text: &str, view: &View, openmetrics: bool) -> String {
    let mut out = String::with_capacity(openmetrics_text.len());
    let tenant_prefix = match view {
        View::All => None,
        View::Tenant(t) => Some(format!("{{tenant=\"{}\"", escape_label(t))),
    };
    // The family being read, and whether its lines are kept.
    let mut keep = true;
    // 0.0.4: a counter's HELP line waits for its TYPE line, which says it is a counter.
    let mut help: Option<&str> = None;
    for line in openmetrics_text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let family = rest.split(' ').next().unwrap_or("");
            keep = tenant_prefix.is_none() || PER_TENANT.contains(&family);
            if keep {
                if openmetrics {
                    push_line(&mut out, line);
                } else {
                    help = Some(rest);
                }
            }
            continue;
        }
        if !keep {
            continue;
        }
        if line == "# EOF" {
            if openmetrics {
                push_line(&mut out, line);
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            if openmetrics {
                push_line(&mut out, line);
                continue;
            }
            let mut words = rest.split(' ');
            let (family, kind) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let suffix = if kind == "counter" { "_total" } else { "" };
            if let Some(h) = help.take() {
                let text = h.split_once(' ').map_or("", |(_, t)| t);
                out.push_str(&format!("# HELP {family}{suffix} {text}\n"));
            }
            out.push_str(&format!("# TYPE {family}{suffix} {kind}\n"));
            continue;
        }
        if line.starts_with("# UNIT ") && !openmetrics {
            continue;
        }
        if line.starts_with('#') {
            push_line(&mut out, line);
            continue;
        }
        // A sample: a tenant sees its own (the tenant label comes first).
        if let Some(prefix) = &tenant_prefix {
            let labels = line.find('{').map(|i| &line[i..]);
            let own = labels.is_some_and(|l| {
                l.starts_with(prefix.as_str())
                    && matches!(l.as_bytes().get(prefix.len()), Some(b',' | b'}'))
            });
            if !own {
                continue;
            }
        }
        push_line(&mut out, line);
    }
    out
}

fn push_line(out: &mut String, line: &str) {
    out.push_str(line);
    out.push('\n');
}

/// A label value as the text formats escape it.
fn escape_label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).expect("a header"));
        h
    }

    #[test]
    fn negotiation_follows_the_scrapers_preference() {
        assert!(!wants_openmetrics(&HeaderMap::new()));
        assert!(!wants_openmetrics(&accept("*/*")));
        assert!(!wants_openmetrics(&accept("text/plain;version=0.0.4")));
        assert!(!wants_openmetrics(&accept(
            "text/plain;version=0.0.4;q=1,application/openmetrics-text;version=1.0.0;q=0.5"
        )));
        assert!(wants_openmetrics(&accept("application/openmetrics-text")));
        // Prometheus's default.
        assert!(wants_openmetrics(&accept("application/openmetrics-text;version=1.0.0;q=0.5,application/openmetrics-text;version=0.0.1;q=0.4,text/plain;version=0.0.4;q=0.3,*/*;q=0.2")));
        assert!(!wants_openmetrics(&accept(
            "application/openmetrics-text;q=0"
        )));
    }

    const SAMPLE: &str = "# HELP loopguard_decisions Decisions made.\n# TYPE loopguard_decisions counter\nloopguard_decisions_total{tenant=\"acme\",decision=\"block\"} 2\nloopguard_decisions_total{tenant=\"acme-2\",decision=\"block\"} 5\n# HELP loopguard_sessions Sessions.\n# TYPE loopguard_sessions gauge\nloopguard_sessions 7\n# EOF\n";

    #[test]
    fn text_004_names_counters_with_total_and_has_no_eof() {
        let text = render(SAMPLE, &View::All, false);
        assert!(text.contains("# HELP loopguard_decisions_total Decisions made.\n# TYPE loopguard_decisions_total counter\n"), "{text}");
        assert!(
            text.contains("# TYPE loopguard_sessions gauge\nloopguard_sessions 7\n"),
            "{text}"
        );
        assert!(!text.contains("# EOF"), "{text}");
        assert_eq!(render(SAMPLE, &View::All, true), SAMPLE);
    }

    #[test]
    fn a_tenant_sees_only_its_own_series() {
        let text = render(SAMPLE, &View::Tenant("acme".into()), true);
        assert!(
            text.contains("{tenant=\"acme\",decision=\"block\"} 2"),
            "{text}"
        );
        assert!(!text.contains("acme-2"), "{text}");
        assert!(!text.contains("loopguard_sessions"), "{text}");
    }
}
