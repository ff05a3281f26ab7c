//! forge-typesense: skeleton, replaced by the real server.
fn main() {}
