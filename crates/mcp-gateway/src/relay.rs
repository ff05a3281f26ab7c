//! What the gateway relays besides tool lists: the pieces [`crate::gateway`] uses to carry
//! resources, prompts, completion, logging, progress, cancellation, sampling and elicitation
//! between its client and the bot's servers.
//!
//! - [`GatewayScope`]: which face a request came in on — `/mcp` (the bot's servers merged) or
//!   `/mcp/{server}` (one server under its own names). The auth layer sets it from the
//!   path; a session keeps the scope it was opened on.
//! - [`SessionCaller`]: the gateway's client as the manager's [`Caller`]: a server's
//!   `sampling/createMessage` and `elicitation/create` go to it when it declared the
//!   capability (else the manager refuses with the reason), progress comes back under the
//!   client's own token.
//! - Merged names: a resource URI of server `S` is exposed as `botcraft://S/URI` (templates
//!   likewise, so an expanded template routes back by its prefix alone), a prompt as
//!   `S__prompt` (the toolset's naming rule, reverse-mapped like tools).
//! - [`forwarded_meta`]: the client's `_meta` as sent on — minus the per-request lifecycle
//!   keys of 2026-07-28 (`io.modelcontextprotocol/…`, which describe the client's link to
//!   BotCraft, not BotCraft's link to the server) and the progress token (BotCraft's client
//!   puts its own and maps it back).

#![allow(deprecated)] // sampling is legacy in 2026-07-28; 2025-11-25 clients use it

use std::sync::Arc;

use futures::future::BoxFuture;
use mcp_client::relay::{Caller, ClientAbility};
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ProgressNotificationParam, RequestMetaObject,
};
use rmcp::{ErrorData, Peer, RoleServer, ServiceError};

/// The face a request came in on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GatewayScope {
    /// `/mcp`: every server of the bot, under qualified names.
    Bot,
    /// `/mcp/{server}`: that server alone, under its own names.
    Server(String),
}

impl GatewayScope {
    /// The scope of a request path below the gateway's mount (`/mcp`, `/mcp/`, `/mcp/NAME`);
    /// `None` for a deeper path.
    pub fn of_path(path: &str, mount: &str) -> Option<Self> {
        let rest = path.strip_prefix(mount)?;
        if rest.is_empty() {
            return Some(Self::Bot);
        }
        match rest.strip_prefix('/')? {
            "" => Some(Self::Bot),
            name if !name.contains('/') => Some(Self::Server(name.to_owned())),
            _ => None,
        }
    }
}

/// What every relaying face advertises (`/mcp`, `/mcp/{server}`, `mcp-stdio --server`): all
/// the protocol carries. A server without one of these answers its own error, passed on.
pub fn relayed_capabilities() -> rmcp::model::ServerCapabilities {
    rmcp::model::ServerCapabilities::builder()
        .enable_tools()
        .enable_tool_list_changed()
        .enable_resources()
        .enable_resources_subscribe()
        .enable_resources_list_changed()
        .enable_prompts()
        .enable_prompts_list_changed()
        .enable_logging()
        .enable_completions()
        .build()
}

/// `result` as the type its request expects (rmcp decodes the result union by shape), marked
/// `resultType: "complete"` where the server left the field out: a server on a revision before
/// 2026-07-28 never sends it, the spec reads its absence as `"complete"`, and a 2026-07-28
/// client of the gateway must see it (rmcp drops it again for a client on an older revision).
pub fn expect<T: serde::de::DeserializeOwned>(
    mut result: rmcp::model::ServerResult,
) -> Result<T, ErrorData> {
    mark_complete(&mut result);
    serde_json::to_value(result)
        .and_then(serde_json::from_value)
        .map_err(|error| {
            ErrorData::internal_error(
                format!("the server's answer has the wrong shape: {error}"),
                None,
            )
        })
}

/// Sets an absent `resultType` of a final result to `"complete"` (what its absence means).
pub(crate) fn mark_complete(result: &mut rmcp::model::ServerResult) {
    use rmcp::model::{ResultType, ServerResult};
    let result_type = match result {
        ServerResult::CompleteResult(r) => &mut r.result_type,
        ServerResult::GetPromptResult(r) => &mut r.result_type,
        ServerResult::ListPromptsResult(r) => &mut r.result_type,
        ServerResult::ListResourcesResult(r) => &mut r.result_type,
        ServerResult::ListResourceTemplatesResult(r) => &mut r.result_type,
        ServerResult::ReadResourceResult(r) => &mut r.result_type,
        ServerResult::ListToolsResult(r) => &mut r.result_type,
        ServerResult::CallToolResult(r) => &mut r.result_type,
        _ => return,
    };
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// The scheme of merged resource URIs.
pub const MERGED_URI_PREFIX: &str = "botcraft://";

/// `uri` of `server` as the merged face names it.
pub fn qualify_uri(server: &str, uri: &str) -> String {
    format!("{MERGED_URI_PREFIX}{server}/{uri}")
}

/// The server and its own URI behind a merged resource URI.
pub fn split_uri(qualified: &str) -> Option<(&str, &str)> {
    let rest = qualified.strip_prefix(MERGED_URI_PREFIX)?;
    let (server, uri) = rest.split_once('/')?;
    (!server.is_empty() && !uri.is_empty()).then_some((server, uri))
}

/// The client's request `_meta`, as forwarded to a server.
pub fn forwarded_meta(meta: &RequestMetaObject) -> Option<RequestMetaObject> {
    let kept: rmcp::model::JsonObject = meta
        .0
        .iter()
        .filter(|(key, _)| !key.starts_with("io.modelcontextprotocol/") && *key != "progressToken")
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    (!kept.is_empty()).then(|| RequestMetaObject::from(kept))
}

/// The gateway's client, answering for one forwarded request.
pub struct SessionCaller {
    peer: Peer<RoleServer>,
    declared: Declared,
    /// The session's key ([`Caller::client`]).
    client: usize,
}

impl SessionCaller {
    /// The caller of a request of session `client` (a key no other session open now has).
    pub fn new(peer: Peer<RoleServer>, declared: Declared, client: usize) -> Arc<Self> {
        Arc::new(Self {
            peer,
            declared,
            client,
        })
    }
}

/// What a client declared of the abilities a server's requests need (nothing for a client
/// that takes no requests from a server).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Declared {
    pub sampling: bool,
    pub elicitation: bool,
}

impl Declared {
    pub fn of(capabilities: &ClientCapabilities) -> Self {
        Self {
            sampling: capabilities.sampling.is_some(),
            elicitation: capabilities.elicitation.is_some(),
        }
    }

    /// What the client of `context`'s request declared: the capabilities in the request's
    /// `_meta`, else the session's, as rmcp's `RequestContext::client_capabilities` reads
    /// them (a session on the inline lifecycle stores none), without copying them per call.
    pub fn by_client_of(context: &rmcp::service::RequestContext<RoleServer>) -> Self {
        if let Some(capabilities) = context.meta.client_capabilities() {
            return Self::of(&capabilities);
        }
        context
            .peer
            .peer_info()
            .map(|info| Self::of(&info.capabilities))
            .unwrap_or_default()
    }
}

fn relayed_error(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(
            format!("BotCraft could not reach its own client with the request: {other}"),
            None,
        ),
    }
}

impl Caller for SessionCaller {
    fn declares(&self, ability: ClientAbility) -> bool {
        match ability {
            ClientAbility::Sampling => self.declared.sampling,
            ClientAbility::Elicitation => self.declared.elicitation,
        }
    }

    fn client(&self) -> Option<usize> {
        Some(self.client)
    }

    fn create_message(
        &self,
        params: CreateMessageRequestParams,
    ) -> BoxFuture<'static, Result<CreateMessageResult, ErrorData>> {
        let peer = self.peer.clone();
        Box::pin(async move { peer.create_message(params).await.map_err(relayed_error) })
    }

    fn create_elicitation(
        &self,
        params: ElicitRequestParams,
    ) -> BoxFuture<'static, Result<ElicitResult, ErrorData>> {
        let peer = self.peer.clone();
        Box::pin(async move { peer.create_elicitation(params).await.map_err(relayed_error) })
    }

    fn progress(&self, params: ProgressNotificationParam) -> BoxFuture<'static, ()> {
        let peer = self.peer.clone();
        Box::pin(async move {
            let _ = peer.notify_progress(params).await;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_result_without_a_result_type_is_complete_and_one_with_it_is_kept() {
        let legacy: rmcp::model::ServerResult =
            serde_json::from_value(json!({"prompts": [{"name": "p"}]}))
                .unwrap_or_else(|e| panic!("{e}"));
        let listed: rmcp::model::ListPromptsResult =
            expect(legacy).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            serde_json::to_value(&listed).unwrap_or_default(),
            json!({"resultType": "complete", "prompts": [{"name": "p"}]})
        );
        let read: rmcp::model::ServerResult = serde_json::from_value(
            json!({"resultType": "complete", "contents": [{"uri": "a://b", "text": "t"}]}),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let read: rmcp::model::ReadResourceResult =
            expect(read).unwrap_or_else(|e| panic!("{e:?}"));
        assert_eq!(
            serde_json::to_value(&read).unwrap_or_default()["resultType"],
            json!("complete")
        );
    }

    #[test]
    fn scopes_come_from_the_path() {
        let cases = [
            ("/mcp", Some(GatewayScope::Bot)),
            ("/mcp/", Some(GatewayScope::Bot)),
            ("/mcp/fixture", Some(GatewayScope::Server("fixture".into()))),
            ("/mcp/fixture/", None),
            ("/mcp/a/b", None),
            ("/mcpx", None),
            ("/other", None),
        ];
        for (path, want) in cases {
            assert_eq!(GatewayScope::of_path(path, "/mcp"), want, "{path}");
        }
    }

    #[test]
    fn merged_uris_round_trip_and_refuse_what_is_not_theirs() {
        let cases = [
            ("fixture", "test://static-text"),
            ("fs", "file:///tmp/a b.txt"),
            ("fixture", "test://template/{id}/data"),
        ];
        for (server, uri) in cases {
            let qualified = qualify_uri(server, uri);
            assert_eq!(split_uri(&qualified), Some((server, uri)), "{qualified}");
        }
        for foreign in [
            "test://static-text",
            "botcraft://",
            "botcraft://fixture/",
            "botcraft:///x",
        ] {
            assert_eq!(split_uri(foreign), None, "{foreign}");
        }
    }

    #[test]
    fn lifecycle_keys_and_the_progress_token_stay_behind() {
        let meta: RequestMetaObject = serde_json::from_value::<rmcp::model::JsonObject>(json!({
            "progressToken": "p1",
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "app/trace": "t-1"
        }))
        .expect("test value")
        .into();
        let kept = forwarded_meta(&meta).expect("one key kept");
        assert_eq!(
            serde_json::to_value(&kept).expect("test value"),
            json!({"app/trace": "t-1"})
        );
        let only_lifecycle: RequestMetaObject =
            serde_json::from_value::<rmcp::model::JsonObject>(json!({"progressToken": 3}))
                .expect("test value")
                .into();
        assert_eq!(forwarded_meta(&only_lifecycle), None);
    }
}
