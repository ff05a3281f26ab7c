//! Tools that ask first, through `POST /api/ai/chat` as an AI SDK 6 client drives it: a call
//! of a tool whose binding asks streams `tool-input-available` then `tool-approval-request`
//! and the turn ends with nothing run; the conversation sent back with the answer on that
//! part (`approval-responded`) continues the same assistant message: the call runs
//! (`tool-output-available`) or is denied (`tool-output-denied`), then the model answers.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use store::{ApprovalPolicy, BindingSpec};
use test_support::{FakeReply, FakeToolCall, Wire};

use super::harness::{CHAT_KEY, Fixture, bounded, chat_body, model, request, types};

/// How many `tools/call` the fake server named `name` received.
pub(super) fn calls_received(fx: &Fixture, name: &str) -> usize {
    std::fs::read_to_string(fx.dir.path().join(format!("{name}.log")))
        .unwrap_or_default()
        .lines()
        .filter(|line| *line == "tools/call")
        .count()
}

/// A fixture whose bot `asker` asks before `fake`'s `echo`.
pub(super) async fn asking_bot(replies: Vec<FakeReply>) -> anyhow::Result<Fixture> {
    let fx = Fixture::new(replies).await?;
    let fake = fx.add_fake_server("fake", |s| s).await?;
    let bot = fx.add_bot("asker", model(Wire::OpenAi), &[]).await?;
    let spec = BindingSpec {
        approval: ApprovalPolicy::Tools(vec!["ec*".into()]),
        ..BindingSpec::default()
    };
    fx.store.bind(&bot.id, &fake.id, &spec).await?;
    Ok(fx)
}

fn first_turn() -> Vec<FakeReply> {
    vec![FakeReply::tool_calls([FakeToolCall::new(
        "call-1",
        "fake__echo",
        [r#"{"text":"hi"}"#],
    )])]
}

/// The conversation an AI SDK 6 client sends after the person answered (its own part
/// shape: `dynamic-tool`, `approval-responded`).
fn answered(message_id: &str, approval_id: &str, approved: bool) -> Value {
    let mut body = chat_body("asker", "say hi");
    let approval = if approved {
        json!({"id": approval_id, "approved": true})
    } else {
        json!({"id": approval_id, "approved": false, "reason": "not today"})
    };
    if let Some(messages) = body["messages"].as_array_mut() {
        messages.push(json!({"id": message_id, "role": "assistant", "parts": [
            {"type": "step-start"},
            {"type": "dynamic-tool", "toolName": "fake__echo", "toolCallId": "call-1",
             "state": "approval-responded", "input": {"text": "hi"}, "approval": approval}
        ]}));
    }
    body
}

/// A bot that asked for `call-1` in a first turn whose model will then answer `then`; the
/// fixture, the message id and the approval id.
async fn asked(then: &str) -> anyhow::Result<(Fixture, String, String)> {
    let mut replies = first_turn();
    replies.push(FakeReply::text([then]));
    let fx = asking_bot(replies).await?;
    let (message_id, approval_id) = ask(&fx).await?;
    Ok((fx, message_id, approval_id))
}

/// The chunks of the turn that continues `body`.
async fn resume(fx: &Fixture, body: &Value) -> anyhow::Result<Vec<Value>> {
    let reply = fx.send(request("POST", "/api/ai/chat", Some(body))).await?;
    anyhow::ensure!(reply.status == 200, "{}", reply.body);
    reply.chunks()
}

/// The first turn: asks, runs nothing; the message id and approval id it gave.
async fn ask(fx: &Fixture) -> anyhow::Result<(String, String)> {
    let reply = fx
        .send(request(
            "POST",
            "/api/ai/chat",
            Some(&chat_body("asker", "say hi")),
        ))
        .await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunks = reply.chunks()?;
    let kinds = types(&chunks);
    let at = kinds
        .iter()
        .position(|kind| kind == "tool-approval-request")
        .ok_or_else(|| anyhow::anyhow!("no approval request: {kinds:?}"))?;
    assert_eq!(kinds[at - 1], "tool-input-available");
    assert_eq!(&kinds[at + 1..], ["finish-step", "finish"]);
    assert_eq!(chunks[at]["toolCallId"], "call-1");
    assert_eq!(
        chunks
            .last()
            .map(|c| c["messageMetadata"]["finishReason"].clone()),
        Some(json!("tool-calls"))
    );
    assert_eq!(
        calls_received(fx, "fake"),
        0,
        "nothing ran before the answer"
    );
    let message_id = chunks[0]["messageId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let approval_id = chunks[at]["approvalId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Ok((message_id, approval_id))
}

#[tokio::test]
async fn an_approved_call_runs_in_the_same_message_and_the_model_answers() -> anyhow::Result<()> {
    let (fx, message_id, approval_id) = asked("It said hi.").await?;
    let chunks = resume(&fx, &answered(&message_id, &approval_id, true)).await?;
    assert_eq!(chunks[0], json!({"type": "start", "messageId": message_id}));
    assert_eq!(chunks[1]["type"], "tool-output-available", "{chunks:?}");
    assert_eq!(chunks[1]["toolCallId"], "call-1");
    assert_eq!(calls_received(&fx, "fake"), 1);
    let text: String = chunks
        .iter()
        .filter(|c| c["type"] == "text-delta")
        .filter_map(|c| c["delta"].as_str())
        .collect();
    assert_eq!(text, "It said hi.");
    // The model read the call's result.
    let second = &fx.llm.requests()[1].body;
    assert!(
        second.to_string().contains("\"tool_call_id\":\"call-1\""),
        "{second}"
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_json_answer_reports_the_calls_its_turn_settled() -> anyhow::Result<()> {
    let mut replies = first_turn();
    replies.extend([FakeReply::text(["It said hi."]), FakeReply::text(["ok"])]);
    let fx = asking_bot(replies).await?;
    let (message_id, approval_id) = ask(&fx).await?;
    let json_answer = |body: &Value| -> anyhow::Result<_> {
        let mut req = request("POST", "/api/ai/chat", Some(body));
        req.headers_mut()
            .insert("accept", "application/json".parse()?);
        Ok(req)
    };
    let body = answered(&message_id, &approval_id, true);
    let record = |output: Value, error: Value| {
        json!([{
            "toolCallId": "call-1", "toolName": "fake__echo", "input": {"text": "hi"},
            "output": output, "error": error, "approvalId": approval_id, "denied": false,
        }])
    };
    // The approved call runs: its output is in the answer.
    let reply = fx.send(json_answer(&body)?).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.json()?["toolCalls"], record(json!("hi"), Value::Null));
    // Sent again, it is refused: the answer says so.
    let reply = fx.send(json_answer(&body)?).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(
        reply.json()?["toolCalls"],
        record(
            Value::Null,
            json!("not run: this approval was already used: an approval runs its call once")
        )
    );
    assert_eq!(calls_received(&fx, "fake"), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn a_denied_call_never_runs_and_the_model_hears_the_reason() -> anyhow::Result<()> {
    let (fx, message_id, approval_id) = asked("Fine, I will not.").await?;
    let chunks = resume(&fx, &answered(&message_id, &approval_id, false)).await?;
    assert_eq!(
        chunks[1],
        json!({"type": "tool-output-denied", "toolCallId": "call-1"})
    );
    assert_eq!(calls_received(&fx, "fake"), 0);
    assert!(
        fx.llm.requests()[1]
            .body
            .to_string()
            .contains("Their reason: not today")
    );
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn an_approved_message_sent_three_times_runs_its_call_once() -> anyhow::Result<()> {
    let mut replies = first_turn();
    replies.extend((0..3).map(|_| FakeReply::text(["done"])));
    let fx = asking_bot(replies).await?;
    let (message_id, approval_id) = ask(&fx).await?;
    let body = answered(&message_id, &approval_id, true);
    let mut outputs = Vec::new();
    for _ in 0..3 {
        let chunks = resume(&fx, &body).await?;
        outputs.push(chunks[1]["type"].clone());
    }
    assert_eq!(
        outputs,
        [
            json!("tool-output-available"),
            json!("tool-output-error"),
            json!("tool-output-error")
        ]
    );
    assert_eq!(calls_received(&fx, "fake"), 1);
    let told = fx.llm.requests()[2].body.to_string();
    assert!(told.contains("an approval runs its call once"), "{told}");
    fx.finish().await;
    Ok(())
}

/// An approval is bound to the key whose turn asked: the same answer sent with another key of
/// the bot (another front end) runs nothing and is not spent; sent with the asking key, it
/// runs the call.
#[tokio::test]
async fn an_approval_answered_with_another_key_runs_nothing() -> anyhow::Result<()> {
    let mut replies = first_turn();
    replies.push(FakeReply::text(["refused"]));
    replies.push(FakeReply::text(["ran"]));
    let fx = asking_bot(replies).await?;
    let (message_id, approval_id) = ask(&fx).await?;
    let body = answered(&message_id, &approval_id, true);
    let mut other = request("POST", "/api/ai/chat", Some(&body));
    other
        .headers_mut()
        .insert("authorization", format!("Bearer {CHAT_KEY}").parse()?);
    let reply = fx.send(other).await?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunks = reply.chunks()?;
    assert_eq!(chunks[1]["type"], "tool-output-error", "{chunks:?}");
    let reason = chunks[1]["errorText"].as_str().unwrap_or_default();
    assert!(reason.contains("bot or key"), "{reason}");
    assert_eq!(calls_received(&fx, "fake"), 0);
    let chunks = resume(&fx, &body).await?;
    assert_eq!(chunks[1]["type"], "tool-output-available", "{chunks:?}");
    assert_eq!(calls_received(&fx, "fake"), 1);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn an_approval_for_other_arguments_runs_nothing() -> anyhow::Result<()> {
    let (fx, message_id, approval_id) = asked("ok").await?;
    let mut body = answered(&message_id, &approval_id, true);
    body["messages"][1]["parts"][1]["input"] = json!({"text": "something else"});
    let chunks = resume(&fx, &body).await?;
    assert_eq!(chunks[1]["type"], "tool-output-error", "{chunks:?}");
    assert_eq!(calls_received(&fx, "fake"), 0);
    fx.finish().await;
    Ok(())
}

#[tokio::test]
async fn approval_policies_are_read_and_written_through_the_api() -> anyhow::Result<()> {
    let fx = asking_bot(Vec::new()).await?;
    let reply = fx
        .send(request("GET", "/api/bots/asker/servers", None))
        .await?;
    assert_eq!(reply.json()?[0]["approval"], json!(["ec*"]));
    let put = |approval: Value| {
        request(
            "PUT",
            "/api/bots/asker/servers/fake",
            Some(&json!({"enabled": true, "approval": approval})),
        )
    };
    assert_eq!(fx.send(put(json!("writes"))).await?.status, 200);
    let reply = fx
        .send(request("GET", "/api/bots/asker/servers", None))
        .await?;
    assert_eq!(reply.json()?[0]["approval"], json!("writes"));
    for bad in [json!("sometimes"), json!([]), json!([""])] {
        let reply = fx.send(put(bad.clone())).await?;
        assert!(
            reply.status.is_client_error(),
            "{bad}: {} {}",
            reply.status,
            reply.body
        );
    }
    // Listed once (the bot tools route never starts a server).
    fx.manager.start_server("fake").await?;
    // The bot's tools say which ask: echo is not read-only, so `writes` asks for it; the
    // native current_time is read-only and the bot's native policy is `never`.
    let tools = fx
        .send(request("GET", "/api/bots/asker/tools", None))
        .await?
        .json()?;
    let asks = |list: &str, name: &str| {
        tools[list]
            .as_array()
            .and_then(|items| items.iter().find(|t| t["name"] == name))
            .map(|t| t["asksApproval"].clone())
    };
    assert_eq!(asks("mcp", "fake__echo"), Some(json!(true)));
    assert_eq!(asks("native", "current_time"), Some(json!(false)));
    fx.finish().await;
    Ok(())
}

/// The policy is read again before each step's calls: a binding tightened while a turn runs
/// (between its steps) asks for the turn's next call, which does not run.
#[tokio::test]
async fn a_policy_tightened_during_a_turn_asks_for_its_next_call() -> anyhow::Result<()> {
    let echo = |id: &str, text: &str| {
        FakeReply::tool_calls([FakeToolCall::new(
            id,
            "fake__echo",
            [format!(r#"{{"text":"{text}"}}"#)],
        )])
    };
    let fx = Fixture::new(vec![echo("call-1", "one"), echo("call-2", "two")]).await?;
    let fake = fx.add_fake_server("fake", |s| s).await?;
    let bot = fx.add_bot("asker", model(Wire::OpenAi), &[]).await?;
    fx.store
        .bind(&bot.id, &fake.id, &BindingSpec::default())
        .await?;
    // The second step's reply waits until the policy is tightened.
    fx.llm.hold_from(2);
    let turn = fx.send(request(
        "POST",
        "/api/ai/chat",
        Some(&chat_body("asker", "echo twice")),
    ));
    let tighten = async {
        bounded("the second step", fx.llm.wait_for_requests(2)).await?;
        let always = BindingSpec {
            approval: ApprovalPolicy::Always,
            ..BindingSpec::default()
        };
        fx.store.bind(&bot.id, &fake.id, &always).await?;
        fx.llm.release();
        anyhow::Ok(())
    };
    let (reply, tightened) = tokio::join!(turn, tighten);
    tightened?;
    let reply = reply?;
    assert_eq!(reply.status, 200, "{}", reply.body);
    let chunks = reply.chunks()?;
    let settled: Vec<(String, String)> = chunks
        .iter()
        .filter(|c| {
            ["tool-output-available", "tool-approval-request"]
                .contains(&c["type"].as_str().unwrap_or_default())
        })
        .map(|c| {
            (
                c["type"].as_str().unwrap_or_default().to_owned(),
                c["toolCallId"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        settled,
        [
            ("tool-output-available".to_owned(), "call-1".to_owned()),
            ("tool-approval-request".to_owned(), "call-2".to_owned()),
        ]
    );
    assert_eq!(calls_received(&fx, "fake"), 1, "the second call ran");
    fx.finish().await;
    Ok(())
}
