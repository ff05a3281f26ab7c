//! OAuth as a connection sees it: whether a connection carries a token ([`Auth`]) and the
//! `Bearer` challenge of a `401`/`403` found in an error ([`challenge_in`]). The flows,
//! registration and the stored tokens are the manager's.

/// How a connection to a server that may use OAuth goes.
pub enum Auth {
    /// With a token (rmcp's client refreshes it when due).
    Token(rmcp::transport::auth::AuthClient<reqwest::Client>),
    /// Without a token: a `401` challenge is reported as [`crate::ConnectError::NeedsAuth`].
    Challengeable,
}

/// The `Bearer` `WWW-Authenticate` challenge of a 401 or 403 somewhere in `error`'s causes
/// (another scheme, `Basic` say, is no OAuth server's).
pub fn challenge_in(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    find_challenge(error).filter(|header| header.to_ascii_lowercase().contains("bearer"))
}

fn find_challenge(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut source = Some(error);
    while let Some(cause) = source {
        if let Some(required) =
            cause.downcast_ref::<rmcp::transport::streamable_http_client::AuthRequiredError>()
        {
            return Some(required.www_authenticate_header.clone());
        }
        if let Some(scope) =
            cause.downcast_ref::<rmcp::transport::streamable_http_client::InsufficientScopeError>()
        {
            return Some(scope.www_authenticate_header.clone());
        }
        // rmcp's outer errors hold the transport error as a field, not as their source.
        let inner: Option<&(dyn std::error::Error + 'static)> = if let Some(dynamic) =
            cause.downcast_ref::<rmcp::transport::DynamicTransportError>()
        {
            Some(dynamic.error.as_ref())
        } else if let Some(rmcp::service::ClientInitializeError::TransportError { error, .. }) =
            cause.downcast_ref::<rmcp::service::ClientInitializeError>()
        {
            Some(error)
        } else if let Some(rmcp::ServiceError::TransportSend(error)) =
            cause.downcast_ref::<rmcp::ServiceError>()
        {
            Some(error)
        } else {
            None
        };
        if let Some(found) = inner.and_then(find_challenge) {
            return Some(found);
        }
        source = cause.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use rmcp::transport::streamable_http_client::{AuthRequiredError, StreamableHttpError};

    use super::*;

    fn send_error(header: &str) -> rmcp::ServiceError {
        let inner: StreamableHttpError<reqwest::Error> =
            StreamableHttpError::AuthRequired(AuthRequiredError::new(header.to_owned()));
        rmcp::ServiceError::TransportSend(rmcp::transport::DynamicTransportError::from_parts(
            "test",
            std::any::TypeId::of::<()>(),
            Box::new(inner),
        ))
    }

    #[test]
    fn a_bearer_challenge_is_found_through_rmcp_errors_and_another_scheme_is_not() {
        let bearer = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#;
        assert_eq!(challenge_in(&send_error(bearer)), Some(bearer.to_owned()));
        assert_eq!(challenge_in(&send_error(r#"Basic realm="corp""#)), None);
        let unrelated = rmcp::ServiceError::TransportClosed;
        assert_eq!(challenge_in(&unrelated), None);
    }
}
