//! forge-discovery: skeleton, replaced by the real server.
fn main() {}
