mod harness;

mod cgroups;
mod environment;
mod failures;
mod health;
mod hygiene;
mod idle;
mod in_process;
mod oauth;
mod playwright;
mod programs;
mod remote;
mod restart;
mod start;
mod third_party;
mod timers;
mod tool_lists;
