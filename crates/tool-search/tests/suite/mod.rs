mod eval;
