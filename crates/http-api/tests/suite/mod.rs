mod admin;
mod ai_sdk;
mod bad_inputs;
mod chat;
mod harness;
mod socket;
mod tool_loading;
