//! Adding an agent is one file implementing [`Protocol`] (and, to name it on the command
//! line, one line in `Agent`'s table): this test is that file for a made-up agent, "Acme",
//! whose payloads and answers look like no real agent's, run through the same run path as
//! every real one. Its shell tool has no row in the tool table, so it is hashed as given.

use loopguard_agents::{
    answer_in, AgentError, AgentEvent, Answer, CallOutcome, Fields, Kind, Protocol, Rendered, Scope,
};
use loopguard_core::{JsString, Value};
use loopguard_guard::{Guard, ToolProfile};
use serde_json::json;

/// Acme's hooks: `{"acme_event": "before"|"after"|"prompt", "thread": ID, "call": {"tool",
/// "args", "output"?, "failed"?}}`; it reads `{"verdict": "no", "why": …}` to refuse a call
/// and `{"hint": …}` to show the model a warning.
struct Acme;

impl Protocol for Acme {
    fn name(&self) -> &'static str {
        "acme"
    }

    fn read<'a>(&self, f: &Fields<'_, 'a>) -> Result<AgentEvent<'a>, AgentError> {
        let event = f.required("acme_event")?;
        let thread = f.required("thread")?;
        let kind = match event.as_str() {
            "before" => Kind::Pre,
            "after" => Kind::Post,
            "prompt" => Kind::Prompt,
            _ => return Ok(AgentEvent::ignore(&event, &thread)),
        };
        let mut ev = AgentEvent::new(kind, &event, &thread);
        if kind != Kind::Prompt {
            let call = f.object("call")?;
            ev.tool = Some(call.tool(&["tool"], &["args"], &[])?);
            if kind == Kind::Post {
                let output = call.get("output").cloned().unwrap_or(Value::Null);
                ev.outcome = Some(
                    if call.get("failed").and_then(Value::as_bool) == Some(true) {
                        CallOutcome::Error {
                            text: output.as_js_str().cloned().unwrap_or(JsString::from("")),
                            interrupt: false,
                        }
                    } else {
                        CallOutcome::Result(output)
                    },
                );
            }
        }
        Ok(ev)
    }

    fn render(&self, _ev: &AgentEvent<'_>, a: &Answer) -> Rendered {
        if let Some(why) = a.deny.as_ref().or(a.stop.as_ref()) {
            return Rendered::json(json!({"verdict": "no", "why": why}));
        }
        match &a.context {
            Some(hint) => Rendered::json(json!({"hint": hint})),
            None => Rendered::default(),
        }
    }
}

#[test]
fn a_made_up_agent_gets_the_same_protection_through_the_one_run_path() {
    let guard = Guard::builder().profile(ToolProfile::ClaudeCode).build();
    let scope = Scope {
        config: "test",
        ..Scope::default()
    };
    let mut said = Vec::new();
    for _ in 0..21 {
        let call = json!({"acme_event":"before","thread":"t1","call":{"tool":"fetch","args":{"url":"https://x"}}});
        let r = answer_in(
            &Acme,
            &guard,
            call.to_string().as_bytes(),
            &scope,
            &mut Vec::new(),
        )
        .unwrap();
        said.push(r.stdout);
        let done = json!({"acme_event":"after","thread":"t1","call":{"tool":"fetch","args":{"url":"https://x"},"output":"503"}});
        answer_in(
            &Acme,
            &guard,
            done.to_string().as_bytes(),
            &scope,
            &mut Vec::new(),
        )
        .unwrap();
    }
    assert!(said[..10].iter().all(String::is_empty), "{said:?}");
    let warned: serde_json::Value = serde_json::from_str(&said[10]).unwrap();
    assert!(
        warned["hint"].as_str().unwrap().contains("WARNING"),
        "{warned}"
    );
    let refused: serde_json::Value = serde_json::from_str(&said[20]).unwrap();
    assert_eq!(refused["verdict"], "no");
    assert!(
        refused["why"].as_str().unwrap().contains("CRITICAL"),
        "{refused}"
    );
    // Its sessions are `acme:THREAD`, as every agent's but Claude Code's.
    assert!(guard.session(None, "acme:t1").unwrap().is_some());
    // A payload that is not Acme's is an error naming the field.
    let e = answer_in(
        &Acme,
        &guard,
        br#"{"acme_event":"before"}"#,
        &scope,
        &mut Vec::new(),
    )
    .unwrap_err();
    assert_eq!(e.field(), Some("thread"));
}
