//! `POST /v1/traces` and `POST /v1/logs`: an OTLP/HTTP receiver of traces and of the log
//! events some agents record their tool calls as (Codex's `codex.tool_result`).
//!
//! Accepts `ExportTraceServiceRequest` bodies as protobuf (`application/x-protobuf`) or
//! JSON (`application/json`), optionally gzip-compressed (`Content-Encoding: gzip`), from an
//! OpenTelemetry Collector's `otlphttp` exporter or an SDK's OTLP/HTTP exporter. Tool spans
//! (see [`loopguard_adapters::spans`]) become `call` / `outcome` events applied in observe
//! mode (the calls already ran): loops show in `/metrics` and in the session API.
//!
//! Spans of one trace may arrive out of order and in several batches, so spans are buffered
//! per trace (and tenant): a trace is applied once no span of it arrived for the wait
//! (`--trace-wait`, default [`DEFAULT_TRACE_WAIT`](crate::DEFAULT_TRACE_WAIT)) and no span
//! of it names a parent that has not arrived (an agent's span ends after its tool calls),
//! or at the latest [`MAX_HOLD_FACTOR`](crate::MAX_HOLD_FACTOR) waits after its first span, its tool calls sorted by start time. A span arriving for a
//! trace already applied is late: it is buffered again and applied, with the other late
//! spans of that trace, after the spans already applied (counted in
//! `loopguard_trace_late_spans_total`). When more than [`MAX_BUFFERED_SPANS`](crate::MAX_BUFFERED_SPANS) spans wait,
//! the oldest traces are applied at once. On shutdown every buffered trace is applied.
//!
//! `POST /v1/logs` takes `ExportLogsServiceRequest` bodies the same ways; each log record is
//! read as a span ([`loopguard_adapters::otlp::log_record_span`]) and buffered with the
//! others. A record outside any trace (Codex's) is buffered under its `conversation.id`.

use std::io::Read;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use loopguard_adapters::spans::{Span, SpanCall, SpanSet};
use loopguard_core::{JsString, Object, Value};
use loopguard_events::Action;
use loopguard_guard::Input;
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;

use crate::error::ApiError;
use crate::state::{json_response, read_body, AppState};

/// What a request carries.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Signal {
    Traces,
    Logs,
}

/// `POST /v1/traces`
pub(crate) async fn post_traces(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    receive(state, headers, body, Signal::Traces).await
}

/// `POST /v1/logs`
pub(crate) async fn post_logs(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    receive(state, headers, body, Signal::Logs).await
}

async fn receive(
    state: Arc<AppState>,
    headers: HeaderMap,
    body: Body,
    signal: Signal,
) -> Result<Response, ApiError> {
    let tenant = state.authenticate(&headers)?;
    // The body is read before the content type is judged, as `/v1/events` does: an answer
    // sent with the body unread closes the connection under a keep-alive client.
    let raw = read_body(&state, &headers, body).await?;
    let protobuf = match content_type(&headers).as_str() {
        "application/x-protobuf" | "application/protobuf" => true,
        "application/json" | "" => false,
        other => {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                "content type {other:?}: send OTLP as application/x-protobuf or application/json"
            ),
                Some("content-type"),
            ))
        }
    };
    let bytes = decompress(&headers, &raw, state.max_body)?;
    let (spans, problems) = if protobuf && signal == Signal::Logs {
        let request = ExportLogsServiceRequest::decode(bytes.as_slice()).map_err(|e| {
            ApiError::bad_request(
                format!("the body is not an OTLP ExportLogsServiceRequest (protobuf): {e}"),
                None,
            )
        })?;
        (spans_of_logs(&request), Vec::new())
    } else if protobuf {
        let request = ExportTraceServiceRequest::decode(bytes.as_slice()).map_err(|e| {
            ApiError::bad_request(
                format!("the body is not an OTLP ExportTraceServiceRequest (protobuf): {e}"),
                None,
            )
        })?;
        (spans_of_request(&request), Vec::new())
    } else {
        let value = loopguard_core::json::parse(&bytes).map_err(|e| {
            ApiError::bad_request(
                format!("the body is not JSON: {} at byte {}", e.kind, e.offset + 1),
                None,
            )
        })?;
        // OTLP/JSON: one ExportTraceServiceRequest (ExportLogsServiceRequest) object.
        if !matches!(value, Value::Object(_)) {
            return Err(ApiError::bad_request(
                format!(
                    "an OTLP/JSON body is one {} object, not {}",
                    match signal {
                        Signal::Traces => "ExportTraceServiceRequest",
                        Signal::Logs => "ExportLogsServiceRequest",
                    },
                    json_kind(&value)
                ),
                None,
            ));
        }
        let mut set = SpanSet::default();
        loopguard_adapters::otlp::read_value(&value, 1, &mut set);
        let problems: Vec<String> = set.diagnostics.iter().map(|d| d.message.clone()).collect();
        (set.spans, problems)
    };
    let tools = spans
        .iter()
        .filter(|s| loopguard_adapters::spans::tool_span(s).is_some())
        .count() as u64;
    state
        .metrics
        .trace_spans(tenant.as_deref(), tools, spans.len() as u64 - tools);
    let late = state.traces_buffer.add(tenant, spans, Instant::now());
    state.metrics.late_spans(late);
    state.metrics.traces_buffered(state.traces_buffer.traces());
    // Applies what became ready meanwhile (the background task does it too).
    flush(&state, false).await;
    let message = if problems.is_empty() {
        String::new()
    } else {
        let shown: Vec<_> = problems.iter().take(5).cloned().collect();
        format!(
            "{} problems in the request (first: {})",
            problems.len(),
            shown.join("; ")
        )
    };
    let encoded = match signal {
        Signal::Traces => ExportTraceServiceResponse {
            partial_success: (!message.is_empty()).then(|| ExportTracePartialSuccess {
                rejected_spans: 0,
                error_message: message.clone(),
            }),
        }
        .encode_to_vec(),
        Signal::Logs => ExportLogsServiceResponse {
            partial_success: (!message.is_empty()).then(|| ExportLogsPartialSuccess {
                rejected_log_records: 0,
                error_message: message.clone(),
            }),
        }
        .encode_to_vec(),
    };
    let rejected = match signal {
        Signal::Traces => "rejectedSpans",
        Signal::Logs => "rejectedLogRecords",
    };
    Ok(if protobuf {
        json_response(encoded, "application/x-protobuf")
    } else if message.is_empty() {
        json_response("{}", "application/json")
    } else {
        let mut out = Vec::new();
        loopguard_core::json::write_json_value(
            &mut out,
            &Value::Object(Object::from_entries(vec![(
                "partialSuccess".into(),
                Value::Object(Object::from_entries(vec![
                    (rejected.into(), Value::from("0")),
                    ("errorMessage".into(), Value::from(message)),
                ])),
            )])),
        );
        json_response(out, "application/json")
    })
}

/// What a JSON value is, for an error message.
fn json_kind(v: &Value<'_>) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The body, gunzipped when `Content-Encoding: gzip` (at most `limit` bytes once
/// decompressed).
fn decompress(headers: &HeaderMap, raw: &[u8], limit: usize) -> Result<Vec<u8>, ApiError> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match encoding.as_str() {
        "" | "identity" => Ok(raw.to_vec()),
        "gzip" => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(raw)
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| {
                    ApiError::bad_request(
                        format!("Content-Encoding gzip: the body cannot be decompressed: {e}"),
                        Some("content-encoding"),
                    )
                })?;
            if out.len() > limit {
                return Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("the decompressed body is larger than the limit of {limit} bytes (--max-body)"),
                    None,
                ));
            }
            Ok(out)
        }
        other => Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("Content-Encoding {other:?}: send gzip or no encoding"),
            Some("content-encoding"),
        )),
    }
}

/// Applies the traces that are ready (all of them with `all`) in observe mode.
pub(crate) async fn flush(state: &Arc<AppState>, all: bool) {
    let ready = state.traces_buffer.take_ready(Instant::now(), all);
    if ready.is_empty() {
        return;
    }
    for (tenant, spans) in ready {
        let set = SpanSet {
            spans,
            diagnostics: Vec::new(),
        };
        let (calls, _notes) = set.calls("", None);
        apply_calls(state, tenant, calls).await;
    }
    state.metrics.traces_buffered(state.traces_buffer.traces());
}

/// Applies the calls of one trace, in order.
async fn apply_calls(state: &Arc<AppState>, tenant: Option<Arc<str>>, calls: Vec<SpanCall>) {
    let apply = move |s: &AppState, tenant: Option<&str>, calls: &[SpanCall]| {
        let mut seen = Vec::new();
        for call in calls {
            for e in &call.events {
                match s.traces.apply(
                    tenant,
                    Input::with_profile(&e.event, call_profile(call)),
                    |d| {
                        s.loops
                            .decision(tenant, call.agent.as_deref(), &d, observed(&d));
                        let step = s.loop_step(
                            &s.traces,
                            tenant,
                            &d,
                            call.agent.clone(),
                            call.service.as_deref(),
                            e.tokens,
                        );
                        (owned_decision(&d), step)
                    },
                ) {
                    Ok(d) => seen.push((call_labels(call), d)),
                    Err(err) => {
                        tracing::warn!(target: "loopguard::serve", "trace {}: {err}", call.trace_id);
                        s.metrics.store_error();
                    }
                }
            }
        }
        seen
    };
    let seen = if state.blocking {
        let me = state.clone();
        let t = tenant.clone();
        tokio::task::spawn_blocking(move || apply(&me, t.as_deref(), &calls))
            .await
            .unwrap_or_default()
    } else {
        let mut seen = Vec::new();
        for call in &calls {
            for e in &call.events {
                match state
                    .traces
                    .apply_async(
                        tenant.as_deref(),
                        Input::with_profile(&e.event, call_profile(call)),
                        |d| {
                            state.loops.decision(
                                tenant.as_deref(),
                                call.agent.as_deref(),
                                &d,
                                observed(&d),
                            );
                            let step = state.loop_step(
                                &state.traces,
                                tenant.as_deref(),
                                &d,
                                call.agent.clone(),
                                call.service.as_deref(),
                                e.tokens,
                            );
                            (owned_decision(&d), step)
                        },
                    )
                    .await
                {
                    Ok(d) => seen.push((call_labels(call), d)),
                    Err(err) => {
                        tracing::warn!(target: "loopguard::serve", "trace {}: {err}", call.trace_id);
                        state.metrics.store_error();
                    }
                }
            }
        }
        seen
    };
    for ((service, agent), ((decision, warned, detector, level), step)) in seen {
        if let Some(step) = step {
            state.history.observe(step);
        }
        state.metrics.decision(
            tenant.as_deref(),
            crate::metrics::DecisionLabels {
                decision,
                detector,
                level,
            },
        );
        if warned {
            state
                .metrics
                .trace_loop(tenant.as_deref(), detector, level, &service, &agent);
        }
    }
}

/// The tool profile of the agent a call came from (Claude Code's telemetry gets the
/// `claude-code` profile, as its hook would), `None` for the receiver's own.
fn call_profile(call: &SpanCall) -> Option<loopguard_guard::ToolProfile> {
    call.profile.and_then(|p| p.parse().ok())
}

fn call_labels(call: &SpanCall) -> (String, String) {
    (
        call.service.clone().unwrap_or_default(),
        call.agent.clone().unwrap_or_default(),
    )
}

/// The word of observe mode for a trace's decision (`would-warn`, `would-block`, …).
fn observed(d: &loopguard_events::Decision<'_>) -> &'static str {
    loopguard_guard::LogDecision::of(d, loopguard_core::Mode::Observe).kind()
}

/// A trace's decision as its metrics count it: the word of observe mode (`would-warn`,
/// `would-block`, `would-abort`: the traced calls already ran, nothing was blocked), as the
/// session's record says; whether it was a loop (a warning, block or abort); the finding.
fn owned_decision(
    d: &loopguard_events::Decision<'_>,
) -> (&'static str, bool, &'static str, &'static str) {
    let f = d.finding.as_ref();
    (
        observed(d),
        matches!(d.action, Action::Warn | Action::Block | Action::Abort),
        f.map_or("", |f| f.detector.as_str()),
        f.map_or("", |f| f.level.as_str()),
    )
}

/// Applies ready traces every quarter of the wait, until the server stops.
pub(crate) async fn flush_loop(state: Arc<AppState>) {
    let tick = (state.traces_buffer.wait() / 4).max(Duration::from_millis(50));
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        flush(&state, false).await;
    }
}

/// The `service.name` attribute of a resource, when it is a string.
fn service_name(resource: Option<&Resource>) -> Option<String> {
    resource?
        .attributes
        .iter()
        .find(|kv| kv.key == "service.name")
        .and_then(
            |kv| match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => Some(s.clone()),
                _ => None,
            },
        )
}

/// The spans of a protobuf request, in the model the adapters read.
fn spans_of_request(request: &ExportTraceServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rs in &request.resource_spans {
        let service = service_name(rs.resource.as_ref());
        for ss in &rs.scope_spans {
            for s in &ss.spans {
                let parent = hex(&s.parent_span_id);
                out.push(Span {
                    trace_id: hex(&s.trace_id),
                    span_id: hex(&s.span_id),
                    parent_id: (!parent.is_empty()).then_some(parent),
                    name: s.name.clone(),
                    start_ns: s.start_time_unix_nano,
                    end_ns: s.end_time_unix_nano,
                    // STATUS_CODE_ERROR is 2.
                    status_error: s
                        .status
                        .as_ref()
                        .filter(|st| st.code == 2)
                        .map(|st| st.message.clone()),
                    attributes: attributes(&s.attributes),
                    service: service.clone(),
                    line: 1,
                });
            }
        }
    }
    out
}

/// The log records of a protobuf request as spans (see the module documentation).
fn spans_of_logs(request: &ExportLogsServiceRequest) -> Vec<Span> {
    let mut out = Vec::new();
    for rl in &request.resource_logs {
        let service = service_name(rl.resource.as_ref());
        for sl in &rl.scope_logs {
            for r in &sl.log_records {
                out.push(loopguard_adapters::otlp::log_record_span(
                    loopguard_adapters::otlp::LogRecord {
                        service: service.clone(),
                        trace_id: hex(&r.trace_id),
                        span_id: hex(&r.span_id),
                        time_ns: r.time_unix_nano,
                        observed_ns: r.observed_time_unix_nano,
                        event_name: Some(r.event_name.as_str()),
                        body: match r.body.as_ref().and_then(|b| b.value.as_ref()) {
                            Some(any_value::Value::StringValue(s)) => Some(s.as_str()),
                            _ => None,
                        },
                        attributes: attributes(&r.attributes),
                        line: 1,
                    },
                ));
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn attributes(kvs: &[KeyValue]) -> Vec<(String, Value<'static>)> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), kv.value.as_ref().map_or(Value::Null, any)))
        .collect()
}

fn any(v: &AnyValue) -> Value<'static> {
    match &v.value {
        None => Value::Null,
        Some(any_value::Value::StringValue(s)) => Value::from(s.clone()),
        Some(any_value::Value::BoolValue(b)) => Value::Bool(*b),
        Some(any_value::Value::IntValue(i)) => Value::Number(*i as f64),
        Some(any_value::Value::DoubleValue(d)) => Value::Number(*d),
        Some(any_value::Value::ArrayValue(a)) => Value::Array(a.values.iter().map(any).collect()),
        Some(any_value::Value::KvlistValue(kv)) => Value::Object(Object::from_entries(
            kv.values
                .iter()
                .map(|e| {
                    (
                        JsString::from(e.key.clone()),
                        e.value.as_ref().map_or(Value::Null, any),
                    )
                })
                .collect(),
        )),
        Some(any_value::Value::BytesValue(b)) => Value::from(hex(b)),
        #[allow(unreachable_patterns)]
        Some(_) => Value::Null,
    }
}
