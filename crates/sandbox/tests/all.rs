//! The sandbox entered for real: children confined by a plan, each case asserting what they
//! can and cannot do.

mod suite;
