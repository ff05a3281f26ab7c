//! Scenarios, one module per concern; `harness` holds the fakes they share.

mod approvals;
mod cancellation;
mod deferred;
mod failures;

mod harness;
mod results;
mod steps;
mod tool_search;
mod ui_stream;
