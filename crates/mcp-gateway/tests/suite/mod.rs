mod auth;
mod bridge;
mod gateway;
mod harness;
mod manager;
mod manifest;
mod relay;
