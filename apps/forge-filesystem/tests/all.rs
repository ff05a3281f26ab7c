//! forge-filesystem's integration tests: the built binary driven over stdio.
mod suite;
