//! The one integration test binary of `inference`: `ChatTurn` driven against
//! the fake LLM provider of `test-support`, in both wire formats.

mod suite;
