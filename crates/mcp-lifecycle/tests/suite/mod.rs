mod harness;

mod catalog;
mod environment;
mod failures;
mod health;
mod hygiene;
mod idle;
mod in_process;
mod restart;
mod start;
mod timers;
