mod harness;

mod catalog;
mod environment;
mod failures;
mod health;
mod hygiene;
mod idle;
mod restart;
mod start;
