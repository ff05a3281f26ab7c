//! The store suite. Every test in a `backend_tests!` list runs twice: `sqlite::NAME` on a
//! fresh file, `postgres::NAME` on a fresh database created on the server named by
//! `BOTCRAFT_TEST_DATABASE_URL` (and dropped afterwards). With the variable unset the
//! PostgreSQL variants print "skipped" on stderr and do nothing; set but unreachable, they fail.

#[macro_use]
mod harness;

mod api_keys;
mod approval_uses;
mod bindings;
mod bots;
mod connect;
mod import;
mod oauth_tokens;
mod registry;
mod replicas;
mod schema;
mod seed;
mod servers;
mod tool_cache;
mod tool_vectors;
