//! `botcraft`'s integration tests, one binary: each module of `suite/` runs the real
//! binaries (serve, seed, the forge servers) the way an operator does.

mod common;
mod suite;
