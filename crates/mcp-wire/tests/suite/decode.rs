//! The fast path decides every message as rmcp's decoder does, and is taken where it should be.

use mcp_wire::{PendingCalls, Side};
use pretty_assertions::assert_eq;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientJsonRpcMessage, ClientRequest, JsonRpcMessage,
    RequestId, ServerJsonRpcMessage, ServerResult,
};
use rmcp::{RoleClient, RoleServer};

/// Both decodings of a message, as text: the variant names (`Debug`) and the wire form.
fn shown<T: std::fmt::Debug + serde::Serialize>(message: &T) -> (String, serde_json::Value) {
    (
        format!("{message:?}"),
        serde_json::to_value(message).expect("a decoded message encodes"),
    )
}

#[test]
fn requests_to_a_server() {
    // (line, whether the fast path takes it)
    let cases = [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}"#,
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"a-7","method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":3,"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}"#,
            true,
        ),
        (
            r#"{"params":{"name":"echo"},"method":"tools/call","id":2,"jsonrpc":"2.0"}"#,
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"n":1.5,"big":18446744073709551615,"s":"\u00e9\n"}},"extra":true}"#,
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"_meta":null,"name":"e\u0063ho","arguments":null,"requestState":"opaque","inputResponses":{"r1":{"action":"accept","content":{"a":1}}}}}"#,
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":32,"method":"tools/call","params":{"name":"echo","_meta":{"progressToken":"p","a":[1,{"b":null}]},"arguments":{"deep":{"x":[true,false]}}}}"#,
            true,
        ),
        // A key the parameters do not have: rmcp's decoder (which ignores it) decides.
        (
            r#"{"jsonrpc":"2.0","id":33,"method":"tools/call","params":{"name":"echo","task":{"ttl":5}}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":34,"method":"tools/call","params":{"name":"echo","name":"other"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":35,"method":"tools/call","params":{"name":"echo"},"params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":36,"method":"tools/call","params":{"name":7}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":37,"method":"tools/call","params":null}"#,
            false,
        ),
        // Parameters as an array: serde would fill a struct from it; rmcp refuses it.
        (
            r#"{"jsonrpc":"2.0","id":38,"method":"tools/call","params":[null,"echo",{"x":1}]}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"tools\/call","params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{}}}"#,
            false,
        ),
        (r#"{"jsonrpc":"2.0","id":6,"method":"tools/call"}"#, false),
        (
            r#"{"jsonrpc":"1.0","id":7,"method":"tools/call","params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","method":"tools/call","params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","result":{},"params":{"name":"echo"}}"#,
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"echo"}}"#,
            false,
        ),
        (r#"{"jsonrpc":"2.0","id":10,"method":"tools/list"}"#, false),
        (
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            false,
        ),
        (r#"{"jsonrpc":"2.0","id":11,"result":{}}"#, false),
        (
            r#"[{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo"}}]"#,
            false,
        ),
    ];
    for (line, fast_expected) in cases {
        let fast = <RoleServer as Side>::decode_fast(line.as_bytes(), &mut PendingCalls::default());
        assert_eq!(fast.is_some(), fast_expected, "{line}");
        if let Some(fast) = fast {
            let full: ClientJsonRpcMessage =
                serde_json::from_str(line).expect("rmcp decodes what the fast path does");
            assert_eq!(shown(&fast), shown(&full), "{line}");
            // The request's `_meta` where rmcp keeps it: the request's extensions.
            let meta = |message: &ClientJsonRpcMessage| match message {
                JsonRpcMessage::Request(request) => match &request.request {
                    ClientRequest::CallToolRequest(call) => (
                        call.extensions
                            .get::<rmcp::model::RequestMetaObject>()
                            .cloned(),
                        call.params.meta.clone(),
                    ),
                    other => panic!("not a call: {other:?}"),
                },
                other => panic!("not a request: {other:?}"),
            };
            assert_eq!(meta(&fast), meta(&full), "{line}");
        }
    }
}

/// A line that is not UTF-8 (a byte of Latin-1 in a value the scan keeps raw, or in a key
/// it skips) is not the fast path's to decide, on either side: rmcp's decoder refuses it
/// too. (From bytes, the scan skipped a key's string without checking it, and took the
/// first two lines.)
#[test]
fn a_line_not_utf8_goes_to_rmcp() {
    let lines: [&[u8]; 5] = [
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\"},\"x\":\"caf\xe9\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]},\"x\":\"caf\xe9\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\",\"arguments\":{\"text\":\"caf\xe9\"}}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ech\xff\"}}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"caf\xe9\"}]}}",
    ];
    for line in lines {
        let shown = String::from_utf8_lossy(line);
        assert!(
            <RoleServer as Side>::decode_fast(line, &mut PendingCalls::default()).is_none(),
            "{shown}"
        );
        let mut calls = PendingCalls::default();
        <RoleClient as Side>::sent(&call(RequestId::Number(1)), &mut calls);
        assert!(
            <RoleClient as Side>::decode_fast(line, &mut calls).is_none(),
            "{shown}"
        );
        assert!(
            serde_json::from_slice::<ClientJsonRpcMessage>(line).is_err(),
            "{shown}"
        );
        assert!(
            serde_json::from_slice::<ServerJsonRpcMessage>(line).is_err(),
            "{shown}"
        );
    }
}

fn call(id: RequestId) -> rmcp::service::TxJsonRpcMessage<RoleClient> {
    JsonRpcMessage::request(
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new("echo"))),
        id,
    )
}

#[test]
fn answers_to_a_client() {
    let text =
        r#"[{"type":"text","text":"hi","annotations":{"audience":["user"],"priority":0.5}}]"#;
    let image = r#"[{"type":"image","data":"aGk=","mimeType":"image/png"},{"type":"audio","data":"aGk=","mimeType":"audio/wav"}]"#;
    let resource = r#"[{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"a"}},{"type":"resource_link","uri":"file:///b","name":"b"}]"#;
    let cases = [
        (
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":{text}}}}}"#),
            true,
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":{image},"isError":true}}}}"#),
            true,
        ),
        // Text blocks alone: built without buffering each block.
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"hi"},{"text":"a\u00e9","type":"te\u0078t"}],"isError":false}}"#.to_owned(),
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"isError":null,"content":[]}}"#.to_owned(),
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"a","text":"b"}]}}"#.to_owned(),
            false,
        ),
        // Arrays where rmcp reads objects (serde's derived decoding would take them).
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[["text","hi"]]}}"#.to_owned(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":[[{"type":"text","text":"hi"}],false]}"#.to_owned(),
            false,
        ),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":{resource},"structuredContent":{{"a":[1,2]}}}}}}"#
            ),
            true,
        ),
        (
            r#"{"id":7,"result":{"_meta":{"k":"v"},"content":[],"resultType":"complete"},"jsonrpc":"2.0"}"#.to_owned(),
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"structuredContent":null}}"#.to_owned(),
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"resultType":"input_required","inputRequests":{}}}"#.to_owned(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[],"tools":[]}}"#.to_owned(),
            false,
        ),
        // A key of no meaning to either, twice: rmcp ignores it.
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":[]},"params":1,"params":2}"#
                .to_owned(),
            true,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"structuredContent":{}}}"#.to_owned(),
            false,
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":8,"result":{{"content":{text}}}}}"#),
            false,
        ),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"7","result":{{"content":{text}}}}}"#),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"result":{"content":"not a list"}}"#.to_owned(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"no"}}"#.to_owned(),
            false,
        ),
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_owned(),
            false,
        ),
    ];
    for (line, fast_expected) in cases {
        let mut calls = PendingCalls::default();
        <RoleClient as Side>::sent(&call(RequestId::Number(7)), &mut calls);
        let fast = <RoleClient as Side>::decode_fast(line.as_bytes(), &mut calls);
        assert_eq!(fast.is_some(), fast_expected, "{line}");
        if let Some(fast) = fast {
            let full: ServerJsonRpcMessage =
                serde_json::from_str(&line).expect("rmcp decodes what the fast path does");
            assert_eq!(shown(&fast), shown(&full), "{line}");
        }
    }
}

/// Nested past serde_json's limit (128 levels from the line's root), a line is refused by
/// rmcp's decoder; the fast path never takes a line rmcp refuses, on both sides of the
/// limit, for a request's arguments, an answer's structured content, and a key each ignores
/// (serde_json counts no depth for a value it skips), and takes the same lines shallow.
#[test]
fn the_nesting_limit_is_rmcps() {
    let mut taken = [Vec::new(), Vec::new()];
    for depth in [3].into_iter().chain(118..=130) {
        let deep = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let requests = [
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{deep}}}}}}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo"}},"x":{deep}}}"#
            ),
        ];
        for request in requests {
            let full = serde_json::from_str::<ClientJsonRpcMessage>(&request).ok();
            taken[0].push(full.is_some());
            let fast =
                <RoleServer as Side>::decode_fast(request.as_bytes(), &mut PendingCalls::default());
            check_fast(fast.as_ref(), full.as_ref(), depth, &request);
        }
        let answers = [
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[],"structuredContent":{{"a":{deep}}}}}}}"#
            ),
            format!(r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[]}},"x":{deep}}}"#),
        ];
        for answer in answers {
            let full = serde_json::from_str::<ServerJsonRpcMessage>(&answer).ok();
            taken[1].push(full.is_some());
            let mut calls = PendingCalls::default();
            <RoleClient as Side>::sent(&call(RequestId::Number(7)), &mut calls);
            let fast = <RoleClient as Side>::decode_fast(answer.as_bytes(), &mut calls);
            check_fast(fast.as_ref(), full.as_ref(), depth, &answer);
        }
    }
    // The sweep crosses the limit on both sides.
    for side in taken {
        assert!(side.contains(&true) && side.contains(&false), "{side:?}");
    }
}

/// What the fast path took is what rmcp decodes (a line it leaves goes to rmcp's decoder);
/// a shallow line it takes.
fn check_fast<T: std::fmt::Debug + serde::Serialize>(
    fast: Option<&T>,
    full: Option<&T>,
    depth: usize,
    line: &str,
) {
    let head = &line[..line.len().min(80)];
    if let Some(fast) = fast {
        assert_eq!(Some(shown(fast)), full.map(shown), "depth {depth}: {head}");
    }
    if depth < 10 {
        assert!(fast.is_some(), "depth {depth}: {head}");
    }
}

/// The fast path's assumption: an object with `content` and any of a tool result's other
/// keys is, to rmcp, a tool result (no result type tried before it takes it).
#[test]
fn every_tool_result_shape_is_a_tool_result_to_rmcp() {
    let optional = [
        r#""structuredContent":{"a":1}"#,
        r#""isError":false"#,
        r#""_meta":{"k":"v"}"#,
        r#""resultType":"complete""#,
    ];
    for subset in 0..(1u32 << optional.len()) {
        let mut fields = vec![r#""content":[{"type":"text","text":"x"}]"#];
        fields.extend(
            (0..optional.len())
                .filter(|bit| subset & (1 << bit) != 0)
                .map(|bit| optional[bit]),
        );
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{{}}}}}"#,
            fields.join(",")
        );
        let full: ServerJsonRpcMessage = serde_json::from_str(&line).expect("decodes");
        assert!(
            matches!(
                full,
                JsonRpcMessage::Response(ref response)
                    if matches!(response.result, ServerResult::CallToolResult(_))
            ),
            "{line}: {full:?}"
        );
        let mut calls = PendingCalls::default();
        <RoleClient as Side>::sent(&call(RequestId::Number(1)), &mut calls);
        let fast = <RoleClient as Side>::decode_fast(line.as_bytes(), &mut calls).expect("fast");
        assert_eq!(shown(&fast), shown(&full), "{line}");
    }
}

#[test]
fn an_answer_ends_the_wait_for_its_id() {
    let mut calls = PendingCalls::default();
    <RoleClient as Side>::sent(&call(RequestId::Number(1)), &mut calls);
    <RoleClient as Side>::sent(&call(RequestId::Number(2)), &mut calls);
    assert_eq!(calls.len(), 2);
    let error = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}"#;
    assert!(<RoleClient as Side>::decode_fast(error, &mut calls).is_none());
    let answer = br#"{"jsonrpc":"2.0","id":2,"result":{"content":[]}}"#;
    assert!(<RoleClient as Side>::decode_fast(answer, &mut calls).is_some());
    assert!(calls.is_empty());
    // Only tools/call is remembered.
    let ping = JsonRpcMessage::request(
        ClientRequest::PingRequest(Default::default()),
        RequestId::Number(3),
    );
    <RoleClient as Side>::sent(&ping, &mut calls);
    assert!(calls.is_empty());
}
