//! forge-discovery's integration tests: the built binary, driven over stdio
//! against a fixture repository (tests/fixtures/uvilo-os).

mod suite;
