mod auth;
mod gateway;
mod harness;
