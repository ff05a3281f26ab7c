//! `POST /api/ai/chat` through the router: multi-step turns with MCP and native tools in
//! both wire formats, the JSON answer, tool failures fed back to the model.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use test_support::{FakeReply, FakeToolCall, Wire};

use super::harness::{Fixture, WIRES, chat_body, model, request, types};

/// Step 1: text then two concurrent MCP calls; step 2: a native call; step 3: the answer.
fn three_step_script() -> Vec<FakeReply> {
    vec![
        FakeReply::tool_calls([
            FakeToolCall::new("call-1", "fake__echo", [r#"{"text":"#, r#""hello"}"#]),
            FakeToolCall::new("call-2", "fake__echo", [r#"{"text":"world"}"#]),
        ])
        .with_text(["Let me ", "check."]),
        FakeReply::tool_calls([FakeToolCall::new("call-3", "current_time", ["{}"])]),
        FakeReply::text(["All ", "done."]),
    ]
}

#[tokio::test]
async fn chat_streams_steps_text_and_tool_calls_in_both_wire_formats() -> anyhow::Result<()> {
    for wire in WIRES {
        let fx = Fixture::new(three_step_script()).await?;
        let fake = fx.add_fake_server("fake", |s| s).await?;
        let bot = fx.add_bot("tester", model(wire), &[&fake]).await?;
        let reply = fx
            .send(request(
                "POST",
                "/api/ai/chat",
                Some(&chat_body(&bot.name, "hi")),
            ))
            .await?;
        assert_eq!(reply.status, 200, "{wire:?}: {}", reply.body);
        assert_eq!(
            reply.headers["x-vercel-ai-ui-message-stream"], "v1",
            "{wire:?}"
        );
        assert_eq!(reply.headers["content-type"], "text/event-stream");
        let chunks = reply.chunks()?;
        // Anthropic closes each tool-use block before the next starts; OpenAI's calls are
        // complete only when the choice finishes.
        let first_step_calls = match wire {
            Wire::Anthropic => [
                "tool-input-start",
                "tool-input-delta",
                "tool-input-delta",
                "tool-input-available",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-available",
            ],
            Wire::OpenAi => [
                "tool-input-start",
                "tool-input-delta",
                "tool-input-delta",
                "tool-input-start",
                "tool-input-delta",
                "tool-input-available",
                "tool-input-available",
            ],
        };
        let expected: Vec<&str> = [
            "start",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
        ]
        .into_iter()
        .chain(first_step_calls)
        .chain([
            "tool-output-available",
            "tool-output-available",
            "finish-step",
            "start-step",
            "tool-input-start",
            "tool-input-delta",
            "tool-input-available",
            "tool-output-available",
            "finish-step",
            "start-step",
            "text-start",
            "text-delta",
            "text-delta",
            "text-end",
            "finish-step",
            "finish",
        ])
        .collect();
        assert_eq!(types(&chunks), expected, "{wire:?}");
        let mut outputs: Vec<(String, Value)> = chunks
            .iter()
            .filter(|c| c["type"] == "tool-output-available")
            .map(|c| {
                (
                    c["toolCallId"].as_str().unwrap_or("").to_owned(),
                    c["output"].clone(),
                )
            })
            .collect();
        outputs.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(outputs[0], ("call-1".into(), json!("hello")));
        assert_eq!(outputs[1], ("call-2".into(), json!("world")));
        assert!(
            outputs[2].1.as_str().is_some_and(|t| t.contains('T')),
            "current_time gives an RFC 3339 time: {:?}",
            outputs[2]
        );
        let finish = chunks.last().cloned().unwrap_or_default();
        assert_eq!(finish["messageMetadata"]["finishReason"], "stop");
        assert_eq!(finish["messageMetadata"]["usage"]["totalTokens"], 45);

        // What the model saw: prompt with the server's instructions, both kinds of tools,
        // and the tool results in the next step.
        let requests = fx.llm.requests();
        assert_eq!(requests.len(), 3);
        let first = &requests[0].body;
        let system = match wire {
            Wire::OpenAi => first["messages"][0]["content"].clone(),
            Wire::Anthropic => first["system"].clone(),
        };
        let system = system.as_str().unwrap_or_default().to_owned();
        assert!(system.starts_with("You are tester."), "{system}");
        assert!(system.contains("Use fake to echo text."), "{system}");
        let mut offered: Vec<String> = first["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|tool| {
                tool["name"]
                    .as_str()
                    .or(tool["function"]["name"].as_str())
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect();
        offered.sort();
        assert_eq!(
            offered,
            [
                "current_time",
                "fake__change_tools",
                "fake__echo",
                "fake__env",
                "fake__sleep"
            ]
        );
        let second = requests[1].body.to_string();
        assert!(
            second.contains("hello") && second.contains("world"),
            "{second}"
        );
        fx.finish().await;
    }
    Ok(())
}

#[tokio::test]
async fn json_answer_collects_text_tool_calls_and_usage() -> anyhow::Result<()> {
    let fx = Fixture::new([
        FakeReply::tool_calls([FakeToolCall::new(
            "c1",
            "fake__echo",
            [r#"{"text":"pong"}"#],
        )]),
        FakeReply::text(["It said pong."]),
    ])
    .await?;
    let fake = fx.add_fake_server("fake", |s| s).await?;
    let bot = fx.add_bot("tester", model(Wire::OpenAi), &[&fake]).await?;
    let mut req = request("POST", "/api/ai/chat", Some(&chat_body(&bot.id, "ping")));
    req.headers_mut()
        .insert("accept", "application/json".parse()?);
    let reply = fx.send(req).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let mut answer = reply.json()?;
    answer["id"] = json!("<id>");
    // Auto loading with a small tool set: eager, the same definitions at both steps.
    let all_tools = answer["eagerToolDefinitionTokens"].clone();
    assert!(all_tools.as_u64().is_some_and(|n| n > 0), "{answer}");
    assert_eq!(
        answer,
        json!({
            "id": "<id>",
            "botId": bot.id,
            "toolLoading": "eager",
            "toolDefinitionTokens": [all_tools, all_tools],
            "eagerToolDefinitionTokens": all_tools,
            "text": "It said pong.",
            "toolCalls": [{
                "toolCallId": "c1", "toolName": "fake__echo", "input": {"text": "pong"},
                "output": "pong", "error": null, "approvalId": null, "denied": false,
            }],
            "steps": 2,
            "finishReason": "stop",
            "stepLimitReached": false,
            "usage": {"inputTokens": 20, "outputTokens": 10, "totalTokens": 30},
        })
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn tool_timeout_and_tool_errors_go_back_to_the_model_and_the_turn_goes_on()
-> anyhow::Result<()> {
    let fx = Fixture::new([
        FakeReply::tool_calls([
            FakeToolCall::new("slow", "fake__sleep", [r#"{"ms":20000}"#]),
            FakeToolCall::new("unknown", "fake__nope", ["{}"]),
        ]),
        FakeReply::text(["Both failed."]),
    ])
    .await?;
    let fake = fx.add_fake_server("fake", |s| s.timeout(300)).await?;
    let bot = fx
        .add_bot("tester", model(Wire::Anthropic), &[&fake])
        .await?;
    let reply = fx
        .send(request(
            "POST",
            "/api/ai/chat",
            Some(&chat_body("tester", "go")),
        ))
        .await?;
    let chunks = reply.chunks()?;
    let mut errors: Vec<(String, String)> = chunks
        .iter()
        .filter(|c| c["type"] == "tool-output-error")
        .map(|c| {
            (
                c["toolCallId"].as_str().unwrap_or("").to_owned(),
                c["errorText"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    errors.sort();
    assert_eq!(errors.len(), 2, "{chunks:?}");
    assert_eq!(
        errors,
        [
            ("slow".into(), "the tool call timed out after 300ms".into()),
            (
                "unknown".into(),
                "tool `fake__nope` is not available in this step".into()
            ),
        ]
    );
    assert_eq!(types(&chunks).last().map(String::as_str), Some("finish"));
    // The model was told both failures and answered.
    let second = &fx.llm.requests()[1].body;
    let results: Vec<&Value> = second["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|m| m["content"].as_array().into_iter().flatten())
        .filter(|block| block["type"] == "tool_result")
        .collect();
    assert_eq!(results.len(), 2);
    assert!(results.iter().all(|r| r["is_error"] == true), "{results:?}");
    let _ = bot;
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn earlier_turns_tool_parts_reach_the_model_as_history() -> anyhow::Result<()> {
    let fx = Fixture::new([FakeReply::text(["Again: hello."])]).await?;
    let fake = fx.add_fake_server("fake", |s| s).await?;
    fx.add_bot("tester", model(Wire::OpenAi), &[&fake]).await?;
    let body = json!({
        "botId": "tester",
        "messages": [
            {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "echo hello"}]},
            {"id": "a1", "role": "assistant", "parts": [
                {"type": "step-start"},
                {"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "old-1",
                 "state": "output-available", "input": {"text": "hello"}, "output": "hello"},
                {"type": "step-start"},
                {"type": "text", "text": "It said hello."},
            ]},
            {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "again?"}]},
        ],
    });
    let reply = fx
        .send(request("POST", "/api/ai/chat", Some(&body)))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let sent = &fx.llm.requests()[0].body["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| m["role"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    fx.finish().await;
    Ok(())
}
