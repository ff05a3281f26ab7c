//! The store's integration tests: one binary, the same suite on SQLite and (when
//! `BOTCRAFT_TEST_DATABASE_URL` is set) PostgreSQL.

mod suite;
