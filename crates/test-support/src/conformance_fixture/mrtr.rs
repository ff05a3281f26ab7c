//! The fixture's multi round-trip requests (2026-07-28, SEP-2322): the `test_input_required_*`
//! tools and prompt, which answer a first call with an `InputRequiredResult` (elicitation,
//! sampling or `roots/list` for the client to fulfil, and a `requestState` sealed with rmcp's
//! `RequestStateCodec`), and complete once the retry carries the answers; and
//! `test_missing_capability`, which needs the client's `sampling` and refuses with `-32021`
//! when the request did not declare it. Texts and keys are the scenarios' own.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use rmcp::model::{
    CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock, GetPromptResponse,
    InputRequest, InputRequiredResult, InputResponses, Tool,
};
use rmcp::{ErrorData, model::RequestStateCodec};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::from_json;

/// The MRTR tools, as `tools/list` shows them.
pub(super) fn tools() -> Vec<Tool> {
    let none = json!({"type": "object", "properties": {}});
    [
        (
            "test_input_required_result_elicitation",
            "Asks the user's name (InputRequiredResult with one elicitation)",
        ),
        (
            "test_input_required_result_sampling",
            "Asks the client's model a question (InputRequiredResult with one sampling request)",
        ),
        (
            "test_input_required_result_list_roots",
            "Asks for the client's roots (InputRequiredResult with roots/list)",
        ),
        (
            "test_input_required_result_request_state",
            "Asks for a confirmation and round-trips a sealed requestState",
        ),
        (
            "test_input_required_result_multiple_inputs",
            "Asks for elicitation, sampling and roots in one InputRequiredResult",
        ),
        (
            "test_input_required_result_multi_round",
            "Asks in two rounds, with an evolving requestState",
        ),
        (
            "test_input_required_result_tampered_state",
            "Refuses a retry whose requestState was altered",
        ),
        (
            "test_input_required_result_capabilities",
            "Asks only for what the request's client capabilities declare",
        ),
        (
            "test_missing_capability",
            "Needs the client's sampling capability; refuses with -32021 without it",
        ),
    ]
    .into_iter()
    .map(|(name, description)| {
        from_json(json!({"name": name, "description": description, "inputSchema": none}))
    })
    .collect()
}

/// Whether `name` is one of this module's tools.
pub(super) fn is_mrtr_tool(name: &str) -> bool {
    name.starts_with("test_input_required_result_") || name == "test_missing_capability"
}

/// The key of the fixture process's sealed request states (random per process).
fn codec() -> &'static RequestStateCodec {
    static CODEC: OnceLock<RequestStateCodec> = OnceLock::new();
    CODEC.get_or_init(|| {
        let key: [u8; 32] = rand::random();
        RequestStateCodec::new(key.to_vec())
    })
}

/// What a sealed `requestState` holds.
#[derive(Serialize, Deserialize)]
struct State {
    tool: String,
    round: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    name: Option<String>,
}

fn seal(tool: &str, round: u32, name: Option<String>) -> String {
    let state = State {
        tool: tool.to_owned(),
        round,
        name,
    };
    match codec().seal_json(&state) {
        Ok(sealed) => sealed,
        Err(error) => panic!("fixture state does not seal: {error}"),
    }
}

/// The state a retry echoed, checked: sealed by this process, for this tool.
fn open(tool: &str, sealed: Option<&str>) -> Result<State, ErrorData> {
    let refuse = |why: &str| ErrorData::invalid_params(format!("requestState {why}"), None);
    let sealed = sealed.ok_or_else(|| refuse("missing"))?;
    let state: State = codec()
        .open_json(sealed)
        .map_err(|_| refuse("failed its integrity check"))?;
    if state.tool != tool {
        return Err(refuse("belongs to another tool"));
    }
    Ok(state)
}

fn elicitation(message: &str, field: &str, kind: &str) -> InputRequest {
    from_json(json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": {field: {"type": kind}}, "required": [field]}
        }
    }))
}

fn sampling(text: &str, max_tokens: u32) -> InputRequest {
    from_json(json!({
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": text}}], "maxTokens": max_tokens}
    }))
}

fn roots() -> InputRequest {
    from_json(json!({"method": "roots/list", "params": {}}))
}

fn ask(requests: Vec<(&str, InputRequest)>, state: Option<String>) -> InputRequiredResult {
    let requests: BTreeMap<String, InputRequest> = requests
        .into_iter()
        .map(|(key, request)| (key.to_owned(), request))
        .collect();
    InputRequiredResult::new((!requests.is_empty()).then_some(requests), state)
}

/// The accepted form field `field` of the elicitation answer under `key`.
fn elicited(responses: &InputResponses, key: &str, field: &str) -> Option<String> {
    let answer = responses.get(key)?;
    if answer.get("action").and_then(Value::as_str) != Some("accept") {
        return None;
    }
    let value = answer.get("content")?.get(field)?;
    Some(match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// The text the client's model answered under `key`.
fn sampled(responses: &InputResponses, key: &str) -> Option<String> {
    let content = responses.get(key)?.get("content")?;
    let block = match content {
        Value::Array(blocks) => blocks.first()?,
        block => block,
    };
    block.get("text")?.as_str().map(str::to_owned)
}

/// The root URIs of a `roots/list` answer under `key`.
fn listed_roots(responses: &InputResponses, key: &str) -> Option<Vec<String>> {
    let roots = responses.get(key)?.get("roots")?.as_array()?;
    Some(
        roots
            .iter()
            .filter_map(|root| root.get("uri")?.as_str().map(str::to_owned))
            .collect(),
    )
}

fn done(text: String) -> CallToolResponse {
    CallToolResponse::Complete(CallToolResult::success(vec![ContentBlock::text(text)]))
}

/// One call of an MRTR tool: `responses` and `state` are the retry's `inputResponses` and
/// `requestState` (absent on the first round); `capabilities` what the request declared.
pub(super) fn call(
    tool: &str,
    responses: Option<&InputResponses>,
    state: Option<&str>,
    capabilities: Option<&ClientCapabilities>,
) -> Result<CallToolResponse, ErrorData> {
    let empty = InputResponses::new();
    let answered = responses.unwrap_or(&empty);
    let first = responses.is_none();
    Ok(match tool {
        "test_input_required_result_elicitation" => match elicited(answered, "user_name", "name") {
            Some(name) => done(format!("Hello, {name}!")),
            None => ask_name(),
        },
        "test_input_required_result_sampling" => match sampled(answered, "capital_question") {
            Some(text) => done(format!("LLM response: {text}")),
            None => CallToolResponse::InputRequired(ask(
                vec![(
                    "capital_question",
                    sampling("What is the capital of France?", 100),
                )],
                None,
            )),
        },
        "test_input_required_result_list_roots" => match listed_roots(answered, "client_roots") {
            Some(uris) => done(format!("Client roots: {}", uris.join(", "))),
            None => CallToolResponse::InputRequired(ask(vec![("client_roots", roots())], None)),
        },
        "test_input_required_result_request_state" => {
            if first {
                CallToolResponse::InputRequired(confirm(tool))
            } else {
                open(tool, state)?;
                match elicited(answered, "confirm", "ok") {
                    Some(ok) => done(format!("state-ok: confirmed={ok}")),
                    None => CallToolResponse::InputRequired(confirm(tool)),
                }
            }
        }
        "test_input_required_result_multiple_inputs" => {
            let all = || {
                ask(
                    vec![
                        (
                            "user_name",
                            elicitation("What is your name?", "name", "string"),
                        ),
                        ("greeting", sampling("Generate a greeting", 50)),
                        ("client_roots", roots()),
                    ],
                    Some(seal(tool, 1, None)),
                )
            };
            if first {
                CallToolResponse::InputRequired(all())
            } else {
                open(tool, state)?;
                match (
                    elicited(answered, "user_name", "name"),
                    sampled(answered, "greeting"),
                    listed_roots(answered, "client_roots"),
                ) {
                    (Some(name), Some(greeting), Some(uris)) => done(format!(
                        "name={name}; greeting={greeting}; roots={}",
                        uris.join(", ")
                    )),
                    _ => CallToolResponse::InputRequired(all()),
                }
            }
        }
        "test_input_required_result_multi_round" => multi_round(tool, first, answered, state)?,
        "test_input_required_result_tampered_state" => {
            if first {
                CallToolResponse::InputRequired(confirm(tool))
            } else {
                open(tool, state)?;
                done("state verified".to_owned())
            }
        }
        "test_input_required_result_capabilities" => {
            let declared = capabilities.cloned().unwrap_or_default();
            if !first {
                return Ok(done("capabilities respected".to_owned()));
            }
            let mut requests = Vec::new();
            if declared.elicitation.is_some() {
                requests.push((
                    "user_name",
                    elicitation("What is your name?", "name", "string"),
                ));
            }
            if declared.sampling.is_some() {
                requests.push(("greeting", sampling("Generate a greeting", 50)));
            }
            if declared.roots.is_some() {
                requests.push(("client_roots", roots()));
            }
            if requests.is_empty() {
                done("the client declared nothing to ask for".to_owned())
            } else {
                CallToolResponse::InputRequired(ask(requests, None))
            }
        }
        "test_missing_capability" => {
            if capabilities.is_some_and(|declared| declared.sampling.is_some()) {
                done("the client declared sampling".to_owned())
            } else {
                let required: ClientCapabilities = from_json(json!({"sampling": {}}));
                return Err(ErrorData::missing_required_client_capability(required));
            }
        }
        other => {
            return Err(ErrorData::invalid_params(
                format!("Unknown tool: {other}"),
                None,
            ));
        }
    })
}

/// "Please confirm" (a boolean `ok`), with `tool`'s sealed first-round state.
fn confirm(tool: &str) -> InputRequiredResult {
    ask(
        vec![("confirm", elicitation("Please confirm", "ok", "boolean"))],
        Some(seal(tool, 1, None)),
    )
}

fn ask_name() -> CallToolResponse {
    CallToolResponse::InputRequired(ask(
        vec![(
            "user_name",
            elicitation("What is your name?", "name", "string"),
        )],
        None,
    ))
}

fn multi_round(
    tool: &str,
    first: bool,
    answered: &InputResponses,
    state: Option<&str>,
) -> Result<CallToolResponse, ErrorData> {
    let step1 = || {
        ask(
            vec![(
                "step1",
                elicitation("Step 1: What is your name?", "name", "string"),
            )],
            Some(seal(tool, 1, None)),
        )
    };
    let step2 = |name: String| {
        ask(
            vec![(
                "step2",
                elicitation("Step 2: What is your favorite color?", "color", "string"),
            )],
            Some(seal(tool, 2, Some(name))),
        )
    };
    if first {
        return Ok(CallToolResponse::InputRequired(step1()));
    }
    let state = open(tool, state)?;
    Ok(match (state.round, state.name) {
        (1, _) => match elicited(answered, "step1", "name") {
            Some(name) => CallToolResponse::InputRequired(step2(name)),
            None => CallToolResponse::InputRequired(step1()),
        },
        (_, Some(name)) => match elicited(answered, "step2", "color") {
            Some(color) => done(format!("Hello, {name}! Your favorite color is {color}.")),
            None => CallToolResponse::InputRequired(step2(name)),
        },
        _ => CallToolResponse::InputRequired(step1()),
    })
}

/// `prompts/get` of `test_input_required_result_prompt`: the context first, then the prompt.
pub(super) fn prompt(responses: Option<&InputResponses>) -> GetPromptResponse {
    let context = responses.and_then(|responses| elicited(responses, "user_context", "context"));
    match context {
        Some(context) => GetPromptResponse::Complete(from_json(json!({
            "resultType": "complete",
            "messages": [{"role": "user", "content": {"type": "text", "text": format!("Prompt with context: {context}")}}]
        }))),
        None => GetPromptResponse::InputRequired(ask(
            vec![(
                "user_context",
                elicitation("What context should the prompt use?", "context", "string"),
            )],
            None,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value(response: &CallToolResponse) -> Value {
        match response {
            CallToolResponse::Complete(result) => serde_json::to_value(result),
            CallToolResponse::InputRequired(result) => serde_json::to_value(result),
            _ => Ok(Value::Null),
        }
        .unwrap_or(Value::Null)
    }

    #[test]
    fn a_first_call_asks_and_the_retry_with_the_answer_completes() {
        let first = call("test_input_required_result_elicitation", None, None, None);
        let first = value(&first.unwrap_or_else(|e| panic!("{e:?}")));
        assert_eq!(first["resultType"], "input_required");
        assert_eq!(
            first["inputRequests"]["user_name"]["method"],
            "elicitation/create"
        );
        let responses: InputResponses = from_json(
            json!({"user_name": {"action": "accept", "content": {"name": "Ada"}}, "extra": 1}),
        );
        let second = call(
            "test_input_required_result_elicitation",
            Some(&responses),
            None,
            None,
        );
        let second = value(&second.unwrap_or_else(|e| panic!("{e:?}")));
        assert_eq!(second["content"][0]["text"], "Hello, Ada!");
    }

    #[test]
    fn a_tampered_or_foreign_state_is_refused_and_a_sealed_one_is_taken() {
        let tool = "test_input_required_result_tampered_state";
        let sealed = seal(tool, 1, None);
        let responses: InputResponses =
            from_json(json!({"confirm": {"action": "accept", "content": {"ok": true}}}));
        let cases = [
            (format!("{sealed}-TAMPERED"), false),
            (
                seal("test_input_required_result_request_state", 1, None),
                false,
            ),
            (sealed, true),
        ];
        for (state, accepted) in cases {
            let outcome = call(tool, Some(&responses), Some(&state), None);
            assert_eq!(outcome.is_ok(), accepted, "state {state}");
        }
    }

    #[test]
    fn missing_sampling_is_refused_with_the_capability_named() {
        let error = match call("test_missing_capability", None, None, None) {
            Err(error) => error,
            Ok(response) => panic!("not refused: {}", value(&response)),
        };
        assert_eq!(error.code.0, -32021);
        let data = error.data.unwrap_or(Value::Null);
        assert!(
            data["requiredCapabilities"]["sampling"].is_object(),
            "{data}"
        );
    }
}
