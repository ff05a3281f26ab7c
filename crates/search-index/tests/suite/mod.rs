mod data;
mod eval;
mod incremental;
