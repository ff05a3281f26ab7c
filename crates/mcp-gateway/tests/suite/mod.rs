mod auth;
mod bridge;
mod direct;
mod gateway;
mod harness;
mod manager;
mod manifest;
mod relay;
