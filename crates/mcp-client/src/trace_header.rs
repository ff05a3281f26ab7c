//! The trace context of a request to a remote server, in an HTTP header too: [`TraceHeader`]
//! wraps the streamable-HTTP client and copies the `traceparent` a request carries in its
//! `params._meta` (put there by the manager's spans) into the POST's
//! `traceparent` header, for proxies and servers that trace by header. Everything else is
//! the wrapped client's, limits included.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetMeta as _, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use observability::TRACEPARENT;

/// See the module's header.
#[derive(Debug, Clone)]
pub struct TraceHeader<C>(pub C);

/// `message`'s `params._meta.traceparent`, when it is a request with a valid one, as a
/// header value (the HTTP+SSE transport sends it too).
pub fn traceparent_header(message: &ClientJsonRpcMessage) -> Option<HeaderValue> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let traceparent = request.request.get_meta().0.get(TRACEPARENT)?;
    HeaderValue::from_str(traceparent.as_str()?).ok()
}

/// `headers`, with [`traceparent_header`] of `message` when there is one.
fn with_traceparent(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    if let Some(value) = traceparent_header(message) {
        headers.insert(HeaderName::from_static(TRACEPARENT), value);
    }
    headers
}

impl<C> StreamableHttpClient for TraceHeader<C>
where
    C: StreamableHttpClient + Sync,
{
    type Error = C::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
    }

    fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            max_sse_event_size,
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>>>
    + Send
    + '_ {
        let headers = with_traceparent(&message, custom_headers);
        self.0.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            headers,
            limits,
        )
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), StreamableHttpError<Self::Error>>> + Send + '_ {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<
        Output = Result<
            BoxStream<'static, Result<Sse, SseError>>,
            StreamableHttpError<Self::Error>,
        >,
    > + Send
    + '_ {
        self.0.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{
        CallToolRequest, CallToolRequestParams, ClientRequest, JsonRpcRequest, NumberOrString,
    };
    use std::sync::Mutex;

    /// One POST's headers, sorted.
    type Headers = Vec<(String, String)>;

    /// Records the headers of each POST, answers `202 Accepted`.
    #[derive(Clone, Default)]
    struct Recording(Arc<Mutex<Vec<Headers>>>);

    impl StreamableHttpClient for Recording {
        type Error = std::io::Error;

        async fn post_message(
            &self,
            _uri: Arc<str>,
            _message: ClientJsonRpcMessage,
            _session_id: Option<Arc<str>>,
            _auth_header: Option<String>,
            custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
            let mut headers: Headers = custom_headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("?").to_owned()))
                .collect();
            headers.sort();
            self.0.lock().expect("lock").push(headers);
            Ok(StreamableHttpPostResponse::Accepted)
        }

        async fn delete_session(
            &self,
            _uri: Arc<str>,
            _session_id: Arc<str>,
            _auth_header: Option<String>,
            _custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<(), StreamableHttpError<Self::Error>> {
            Ok(())
        }

        async fn get_stream(
            &self,
            _uri: Arc<str>,
            _session_id: Option<Arc<str>>,
            _last_event_id: Option<String>,
            _auth_header: Option<String>,
            _custom_headers: HashMap<HeaderName, HeaderValue>,
        ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>>
        {
            Err(StreamableHttpError::ServerDoesNotSupportSse)
        }
    }

    /// A `tools/call` whose context is in `params._meta`, where the manager's spans put it.
    fn call(traceparent: Option<serde_json::Value>) -> ClientJsonRpcMessage {
        let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("echo"),
        ));
        if let Some(traceparent) = traceparent {
            request
                .get_meta_mut()
                .0
                .insert(TRACEPARENT.to_owned(), traceparent);
        }
        JsonRpcMessage::Request(JsonRpcRequest::new(NumberOrString::Number(1), request))
    }

    #[tokio::test]
    async fn a_request_s_traceparent_goes_in_the_header_too_and_nothing_else_does() {
        const CONTEXT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        let recording = Recording::default();
        let client = TraceHeader(recording.clone());
        let given = HashMap::from([(
            HeaderName::from_static("x-api-key"),
            HeaderValue::from_static("k"),
        )]);
        let initialized: ClientJsonRpcMessage = serde_json::from_value(
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .expect("a notification");
        let messages = [
            call(Some(serde_json::json!(CONTEXT))),
            call(None),
            // Not a header value: left out rather than sent broken.
            call(Some(serde_json::json!("00-abc\r\nx-injected: 1"))),
            call(Some(serde_json::json!(42))),
            initialized,
        ];
        for message in messages {
            client
                .post_message_with_response_limits(
                    "http://server/mcp".into(),
                    message,
                    None,
                    None,
                    given.clone(),
                    StreamableHttpResponseLimits::default(),
                )
                .await
                .expect("posted");
        }
        let key = ("x-api-key".to_owned(), "k".to_owned());
        assert_eq!(
            *recording.0.lock().expect("lock"),
            vec![
                vec![("traceparent".to_owned(), CONTEXT.to_owned()), key.clone()],
                vec![key.clone()],
                vec![key.clone()],
                vec![key.clone()],
                vec![key],
            ]
        );
    }
}
