//! Why a deployment file could not be read.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckError {
    #[error("line {line}: {message}")]
    Syntax { line: usize, message: String },
    #[error("cargo metadata failed: {0}")]
    Metadata(String),
    #[error("{path}: {message}")]
    Manifest { path: String, message: String },
}
