//! forge-typesense's integration tests: the built binary over stdio against
//! a real Typesense 0.24.1 (TYPESENSE_BIN, see scripts/typesense-setup.sh)
//! and, for the failures a real server will not produce on demand, a small
//! fake one.

mod suite;
