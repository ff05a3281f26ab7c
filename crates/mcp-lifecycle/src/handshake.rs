//! What a handshake that did not complete becomes (the handshake itself is
//! `mcp_client::handshake`): a timeout, a refusal or an exit with what the server left on
//! stderr, or a cancelled start.

use std::sync::Arc;

use mcp_client::{ExitInfo, HandshakeFailure};

use crate::config::ServerConfig;
use crate::error::LifecycleError;

/// The error of a start whose handshake did not complete.
pub(crate) fn handshake_error(
    config: &ServerConfig,
    failure: HandshakeFailure,
    exit: Option<ExitInfo>,
    stderr_tail: Vec<String>,
) -> LifecycleError {
    match failure {
        HandshakeFailure::TimedOut => LifecycleError::InitTimeout {
            server: config.name.clone(),
            timeout: config.init_timeout,
            stderr_tail,
        },
        HandshakeFailure::Refused(error) => LifecycleError::InitFailed {
            server: config.name.clone(),
            exit,
            stderr_tail,
            source: Some(Arc::new(*error)),
        },
        HandshakeFailure::Exited => LifecycleError::InitFailed {
            server: config.name.clone(),
            exit,
            stderr_tail,
            source: None,
        },
        HandshakeFailure::Cancelled => LifecycleError::StartCancelled {
            server: config.name.clone(),
        },
    }
}
