//! The conformance fixture: an MCP server (on rmcp) that implements what the server scenarios
//! of `@modelcontextprotocol/conformance` expect, names included — tools `test_simple_text`,
//! `test_image_content`, …, resources `test://static-text`, `test://static-binary`, the
//! template `test://template/{id}/data`, prompts `test_simple_prompt`, …, completion,
//! `logging/setLevel`, progress, sampling and elicitation — so the suite can run against it
//! directly and through BotCraft's gateway, side by side.
//!
//! Two extras for relay tests (not named by the suite): `test_structured` (an `outputSchema`,
//! `structuredContent`, annotations and `_meta` on its result) and `test_touch_resource`
//! (sends `notifications/resources/updated` for every URI this session subscribed).
//!
//! The 2026-07-28 scenarios' multi round-trip tools and prompt (`test_input_required_*`) and
//! `test_missing_capability` are in [`mrtr`]. Every result says `resultType: "complete"` (rmcp
//! drops it for a peer on an older revision).
//!
//! One [`ConformanceFixture`] serves one session (stdio: the process; HTTP: one per session).
//! Texts and payloads are the scenarios' own, from their requirement texts.

#![allow(deprecated)] // sampling, logging and resources/subscribe are legacy in 2026-07-28

mod mrtr;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestParams, CompleteResult,
    ContentBlock, CreateMessageRequestParams, ElicitRequestParams, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, LoggingLevel,
    LoggingMessageNotificationParam, PaginatedRequestParams, ProgressNotificationParam,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities,
    ServerConfig, SetLevelRequestParams, SubscribeRequestParams, Tool, UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// The `serverInfo.name` of the fixture.
pub const FIXTURE_NAME: &str = "conformance-fixture";

/// A 1×1 red PNG, base64.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// A WAV file with a header and no samples (8 kHz mono 8-bit), base64.
pub const WAV_EMPTY: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// One session of the fixture.
#[derive(Clone, Default)]
pub struct ConformanceFixture {
    state: Arc<Mutex<FixtureState>>,
}

#[derive(Default)]
struct FixtureState {
    subscribed: BTreeSet<String>,
    level: Option<LoggingLevel>,
}

impl ConformanceFixture {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, FixtureState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    async fn log(&self, context: &RequestContext<RoleServer>, text: &str) {
        let level = self.state().level;
        if level.is_some_and(|min| severity(LoggingLevel::Info) < severity(min)) {
            return;
        }
        let _ = context
            .peer
            .notify_logging_message(LoggingMessageNotificationParam::new(
                LoggingLevel::Info,
                json!(text),
            ))
            .await;
    }
}

fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// A value of an rmcp type written as the spec's JSON (the scenarios' texts, verbatim).
fn from_json<T: DeserializeOwned>(value: Value) -> T {
    match serde_json::from_value(value) {
        Ok(value) => value,
        Err(error) => panic!("fixture JSON does not fit its rmcp type: {error}"),
    }
}

fn tools() -> Vec<Tool> {
    let none = json!({"type": "object", "properties": {}});
    let text_arg = |name: &str, description: &str| json!({"type": "object", "properties": {name: {"type": "string", "description": description}}, "required": [name]});
    let tool = |name: &str, description: &str, schema: Value| -> Tool {
        from_json(json!({"name": name, "description": description, "inputSchema": schema}))
    };
    let mut tools = vec![
        tool(
            "test_simple_text",
            "Returns a simple text response",
            none.clone(),
        ),
        tool(
            "test_image_content",
            "Returns an image (1x1 PNG)",
            none.clone(),
        ),
        tool("test_audio_content", "Returns audio (WAV)", none.clone()),
        tool(
            "test_embedded_resource",
            "Returns an embedded text resource",
            none.clone(),
        ),
        tool(
            "test_multiple_content_types",
            "Returns text, an image and a resource",
            none.clone(),
        ),
        tool(
            "test_tool_with_logging",
            "Sends three info log messages while it runs",
            none.clone(),
        ),
        tool(
            "test_tool_with_progress",
            "Reports progress 0, 50 and 100 of 100",
            none.clone(),
        ),
        tool(
            "test_error_handling",
            "Always fails (isError)",
            none.clone(),
        ),
        tool(
            "test_sampling",
            "Asks the client's model (sampling/createMessage)",
            text_arg("prompt", "The prompt to send to the LLM"),
        ),
        tool(
            "test_elicitation",
            "Asks the user (elicitation/create)",
            text_arg("message", "The message to show the user"),
        ),
        tool(
            "test_elicitation_sep1034_defaults",
            "Elicitation with a default for every primitive type",
            none.clone(),
        ),
        tool(
            "test_elicitation_sep1330_enums",
            "Elicitation with the five enum shapes",
            none.clone(),
        ),
        tool(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            // With SEP-2106's wider vocabulary ($anchor, allOf/anyOf, if/then/else), which
            // the 2026-07-28 scenario checks is kept.
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        ),
        // SEP-2243: a parameter the client also sends as the `Mcp-Param-Region` header (rmcp's
        // HTTP server checks the two agree).
        tool(
            "test_header_param",
            "Echoes its region, which travels in the Mcp-Param-Region header too",
            json!({
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region", "description": "A region name"}},
                "required": ["region"]
            }),
        ),
        tool(
            "test_touch_resource",
            "Sends notifications/resources/updated for each subscribed URI",
            none.clone(),
        ),
    ];
    tools.push(from_json(json!({
        "name": "test_structured",
        "title": "Structured result",
        "description": "Returns structuredContent that fits its outputSchema",
        "inputSchema": none,
        "outputSchema": {"type": "object", "properties": {"temperature": {"type": "number"}, "unit": {"type": "string"}}, "required": ["temperature", "unit"]},
        "annotations": {"readOnlyHint": true},
        "_meta": {"fixture/kind": "structured"}
    })));
    tools.extend(mrtr::tools());
    tools
}

fn text_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn argument<'a>(request: &'a CallToolRequestParams, name: &str) -> Result<&'a str, ErrorData> {
    request
        .arguments
        .as_ref()
        .and_then(|arguments| arguments.get(name))
        .and_then(Value::as_str)
        .ok_or_else(|| ErrorData::invalid_params(format!("missing string argument {name:?}"), None))
}

fn sep1034_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": true}
        }
    })
}

fn sep1330_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {"type": "string", "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"}
            ]},
            "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {"type": "array", "items": {"anyOf": [
                {"const": "value1", "title": "First Choice"},
                {"const": "value2", "title": "Second Choice"},
                {"const": "value3", "title": "Third Choice"}
            ]}}
        }
    })
}

impl ConformanceFixture {
    async fn elicit(
        &self,
        context: &RequestContext<RoleServer>,
        message: &str,
        schema: Value,
    ) -> Result<Value, String> {
        let params: ElicitRequestParams =
            from_json(json!({"mode": "form", "message": message, "requestedSchema": schema}));
        let answer = context
            .peer
            .create_elicitation(params)
            .await
            .map_err(|error| error.to_string())?;
        serde_json::to_value(answer).map_err(|error| error.to_string())
    }

    async fn run_tool(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        // The scenarios ask for ~50 ms between the log and progress messages of one call, so
        // a client sees them arrive one by one (a behaviour to test, not a wait for a race).
        let pause = || tokio::time::sleep(Duration::from_millis(50));
        Ok(match request.name.as_ref() {
            "test_simple_text" => text_result("This is a simple text response for testing."),
            "test_image_content" => {
                CallToolResult::success(vec![ContentBlock::image(PNG_1X1, "image/png")])
            }
            "test_audio_content" => {
                CallToolResult::success(vec![ContentBlock::audio(WAV_EMPTY, "audio/wav")])
            }
            "test_embedded_resource" => CallToolResult::success(vec![from_json(json!({
                "type": "resource",
                "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain", "text": "This is an embedded resource content."}
            }))]),
            "test_multiple_content_types" => CallToolResult::success(vec![
                ContentBlock::text("Multiple content types test:"),
                ContentBlock::image(PNG_1X1, "image/png"),
                from_json(json!({
                    "type": "resource",
                    "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json", "text": "{\"test\":\"data\",\"value\":123}"}
                })),
            ]),
            "test_tool_with_logging" => {
                self.log(context, "Tool execution started").await;
                pause().await;
                self.log(context, "Tool processing data").await;
                pause().await;
                self.log(context, "Tool execution completed").await;
                text_result("Tool with logging executed successfully")
            }
            "test_tool_with_progress" => {
                let token = context.meta.get_progress_token();
                for (step, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
                    if step > 0 {
                        pause().await;
                    }
                    if let Some(token) = &token {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), progress)
                                    .with_total(100.0),
                            )
                            .await;
                    }
                }
                text_result("Tool with progress executed successfully")
            }
            "test_error_handling" => CallToolResult::error(vec![ContentBlock::text(
                "This tool intentionally returns an error for testing",
            )]),
            "test_sampling" => {
                let prompt = argument(request, "prompt")?;
                let params: CreateMessageRequestParams = from_json(json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100
                }));
                match context.peer.create_message(params).await {
                    Ok(answer) => {
                        let value =
                            serde_json::to_value(&answer.message.content).unwrap_or(Value::Null);
                        let text = value
                            .get("text")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                            .unwrap_or_else(|| value.to_string());
                        text_result(format!("LLM response: {text}"))
                    }
                    Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "sampling failed: {error}"
                    ))]),
                }
            }
            "test_elicitation" => {
                let message = argument(request, "message")?;
                let schema = json!({
                    "type": "object",
                    "properties": {
                        "username": {"type": "string", "description": "User's response"},
                        "email": {"type": "string", "description": "User's email address"}
                    },
                    "required": ["username", "email"]
                });
                match self.elicit(context, message, schema).await {
                    Ok(answer) => text_result(format!("User response: {answer}")),
                    Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "elicitation failed: {error}"
                    ))]),
                }
            }
            name @ ("test_elicitation_sep1034_defaults" | "test_elicitation_sep1330_enums") => {
                let schema = if name.ends_with("defaults") {
                    sep1034_schema()
                } else {
                    sep1330_schema()
                };
                match self
                    .elicit(context, "Please review and update the form fields", schema)
                    .await
                {
                    Ok(answer) => text_result(format!(
                        "Elicitation completed: action={}, content={}",
                        answer["action"].as_str().unwrap_or("?"),
                        answer.get("content").cloned().unwrap_or(Value::Null)
                    )),
                    Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                        "elicitation failed: {error}"
                    ))]),
                }
            }
            "test_header_param" => text_result(format!(
                "region: {}",
                request
                    .arguments
                    .as_ref()
                    .and_then(|args| args.get("region"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
            )),
            "json_schema_2020_12_tool" => text_result(format!(
                "received: {}",
                Value::Object(request.arguments.clone().unwrap_or_default())
            )),
            "test_touch_resource" => {
                let uris: Vec<String> = self.state().subscribed.iter().cloned().collect();
                for uri in &uris {
                    let _ = context
                        .peer
                        .notify_resource_updated(
                            rmcp::model::ResourceUpdatedNotificationParam::new(uri.clone()),
                        )
                        .await;
                }
                text_result(format!("updated {} subscribed resource(s)", uris.len()))
            }
            "test_structured" => from_json(json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"temperature\":21.5,\"unit\":\"C\"}", "annotations": {"audience": ["assistant"]}}],
                "structuredContent": {"temperature": 21.5, "unit": "C"},
                "_meta": {"fixture/trace": "t-1"}
            })),
            other => {
                return Err(ErrorData::invalid_params(
                    format!("Unknown tool: {other}"),
                    None,
                ));
            }
        })
    }
}

fn resources() -> ListResourcesResult {
    from_json(json!({"resultType": "complete", "resources": [
        {"uri": "test://static-text", "name": "static-text", "description": "A static text resource", "mimeType": "text/plain"},
        {"uri": "test://static-binary", "name": "static-binary", "description": "A static binary resource (1x1 PNG)", "mimeType": "image/png"},
        {"uri": "test://watched-resource", "name": "watched-resource", "description": "A resource to subscribe to", "mimeType": "text/plain"}
    ]}))
}

fn read(uri: &str) -> Option<ReadResourceResult> {
    let contents = match uri {
        "test://static-text" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "This is the content of the static text resource."})
        }
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG_1X1}),
        "test://watched-resource" => {
            json!({"uri": uri, "mimeType": "text/plain", "text": "Watched resource content."})
        }
        _ => {
            let id = uri
                .strip_prefix("test://template/")?
                .strip_suffix("/data")?;
            if id.is_empty() || id.contains('/') {
                return None;
            }
            let text =
                json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
            json!({"uri": uri, "mimeType": "application/json", "text": text.to_string()})
        }
    };
    Some(from_json(
        json!({"resultType": "complete", "contents": [contents]}),
    ))
}

fn prompt(name: &str, arguments: &serde_json::Map<String, Value>) -> Option<GetPromptResult> {
    let arg = |key: &str| {
        arguments
            .get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let messages = match name {
        "test_simple_prompt" => json!([
            {"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}
        ]),
        "test_prompt_with_arguments" => json!([
            {"role": "user", "content": {"type": "text", "text": format!("Prompt with arguments: arg1='{}', arg2='{}'", arg("arg1"), arg("arg2"))}}
        ]),
        "test_prompt_with_embedded_resource" => json!([
            {"role": "user", "content": {"type": "resource", "resource": {"uri": arg("resourceUri"), "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
            {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}
        ]),
        "test_prompt_with_image" => json!([
            {"role": "user", "content": {"type": "image", "data": PNG_1X1, "mimeType": "image/png"}},
            {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}
        ]),
        _ => return None,
    };
    Some(from_json(
        json!({"resultType": "complete", "messages": messages}),
    ))
}

impl ServerHandler for ConformanceFixture {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_resources_list_changed()
                .enable_prompts()
                .enable_prompts_list_changed()
                .enable_logging()
                .enable_completions()
                .build(),
        )
        .with_server_info(Implementation::new(FIXTURE_NAME, env!("CARGO_PKG_VERSION")))
        .with_instructions(
            "The MCP conformance fixture: every server scenario's tools, resources and prompts.",
        )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if mrtr::is_mrtr_tool(&request.name) {
            return mrtr::call(
                &request.name,
                request.input_responses.as_ref(),
                request.request_state.as_deref(),
                context.client_capabilities().as_ref(),
            );
        }
        self.run_tool(&request, &context).await.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(from_json(
            json!({"resultType": "complete", "resourceTemplates": [{
                "uriTemplate": "test://template/{id}/data",
                "name": "template-data",
                "description": "Data for an ID",
                "mimeType": "application/json"
            }]}),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        read(&request.uri).map(Into::into).ok_or_else(|| {
            ErrorData::resource_not_found(
                format!("Resource not found: {}", request.uri),
                Some(json!({"uri": request.uri})),
            )
        })
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state().subscribed.insert(request.uri);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state().subscribed.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        Ok(from_json(json!({"resultType": "complete", "prompts": [
            {"name": "test_simple_prompt", "description": "A prompt without arguments"},
            {"name": "test_prompt_with_arguments", "description": "A prompt with two arguments", "arguments": [
                {"name": "arg1", "description": "First test argument", "required": true},
                {"name": "arg2", "description": "Second test argument", "required": true}
            ]},
            {"name": "test_prompt_with_embedded_resource", "description": "A prompt that embeds a resource", "arguments": [
                {"name": "resourceUri", "description": "URI of the resource to embed", "required": true}
            ]},
            {"name": "test_prompt_with_image", "description": "A prompt with an image"},
            {"name": "test_input_required_result_prompt", "description": "Asks for its context first (InputRequiredResult)"}
        ]})))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name == "test_input_required_result_prompt" {
            return Ok(mrtr::prompt(request.input_responses.as_ref()));
        }
        let arguments = request.arguments.clone().unwrap_or_default();
        prompt(&request.name, &arguments)
            .map(Into::into)
            .ok_or_else(|| {
                ErrorData::invalid_params(format!("Unknown prompt: {}", request.name), None)
            })
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let request = serde_json::to_value(&request).unwrap_or(Value::Null);
        let candidates: &[&str] = match (
            request["ref"]["type"].as_str(),
            request["ref"]["name"].as_str(),
            request["argument"]["name"].as_str(),
        ) {
            (Some("ref/prompt"), Some("test_prompt_with_arguments"), Some("arg1")) => {
                &["paris", "park", "party"]
            }
            (Some("ref/prompt"), Some("test_prompt_with_arguments"), Some("arg2")) => {
                &["world", "wonder"]
            }
            _ => &[],
        };
        let prefix = request["argument"]["value"].as_str().unwrap_or_default();
        let values: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|value| value.starts_with(prefix))
            .collect();
        Ok(from_json(
            json!({"resultType": "complete", "completion": {"values": values, "total": values.len(), "hasMore": false}}),
        ))
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state().level = Some(request.level);
        Ok(())
    }
}
