mod admin;
mod ai_sdk;
mod bad_inputs;
mod chat;
mod harness;
mod roles;
mod socket;
mod tool_loading;
