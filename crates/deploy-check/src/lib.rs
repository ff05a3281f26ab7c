//! Checks BotCraft's deployment files against the workspace. No container engine runs where
//! the tests run, so the image is never built here. These checks catch what would break the
//! build or the container anyway: a `COPY` of a path that does not exist, a binary the
//! workspace does not build, a port or health path that disagrees between the Dockerfile,
//! the Kubernetes manifests and the docs.
//!
//! - [`dockerfile`]: a Dockerfile reader (stages, flags, exec and shell forms, continuations);
//! - [`workspace`]: binaries and `rust-version` from `cargo metadata`;
//! - [`manifests`]: the Kubernetes YAML documents under `deploy/k8s/`;
//! - [`imports`]: import circles between the modules of a crate.
//!
//! The checks themselves are in `tests/deployment.rs`.

pub mod dockerfile;
pub mod error;
pub mod imports;
pub mod manifests;
pub mod workspace;

pub use dockerfile::{Args, Dockerfile, Instruction, Stage};
pub use error::CheckError;
pub use workspace::Workspace;
