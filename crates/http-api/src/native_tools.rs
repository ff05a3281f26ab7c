//! The native tools every bot gets, implemented in this process with inference's
//! [`NativeTool`] trait. Today one: `current_time`, the current UTC time (models do not know
//! it). Native names never collide with MCP tools: those are always qualified
//! (`server__tool`) and named with the native names reserved (see `executor`).

use std::sync::Arc;

use futures::future::BoxFuture;
use inference::{NativeTool, NativeToolRegistry, NativeToolResult};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// `current_time`: the current time, UTC, RFC 3339.
#[derive(Debug, Clone, Copy, Default)]
pub struct CurrentTime;

impl NativeTool for CurrentTime {
    fn read_only(&self) -> bool {
        true
    }

    fn name(&self) -> &str {
        "current_time"
    }

    fn description(&self) -> &str {
        "The current date and time in UTC (RFC 3339)."
    }

    fn input_schema(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    fn call(&self, _input: Value, _cancel: CancellationToken) -> BoxFuture<'_, NativeToolResult> {
        Box::pin(async { Ok(jiff::Timestamp::now().to_string()) })
    }
}

/// The registry of every native tool.
pub fn default_native_tools() -> NativeToolRegistry {
    let mut registry = NativeToolRegistry::new();
    // One tool per name; these names are distinct by construction.
    let _ = registry.register(Arc::new(CurrentTime));
    registry
}
