//! forge-bash: skeleton, replaced by the real server.
fn main() {}
