//! forge-filesystem: skeleton, replaced by the real server.
fn main() {}
