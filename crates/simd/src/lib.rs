//! The arithmetic BotCraft runs on many numbers at once, and the one crate
//! that uses the CPU's vector instructions directly.
//!
//! Owns: the dense layer `x · Wᵀ + b` the embedding model spends nearly all
//! its time in ([`linear`], over weights packed once at load in half
//! precision: [`Weights`], [`half`]), the 8-bit dot products of
//! `tool_search`'s vector scan ([`dot_i8_rows`]), and the `f32` dot product
//! of its exact cosines and of the model's attention ([`dot`]). The first two
//! pick, once, the best code the CPU runs (AVX-512, AVX2 with FMA and F16C,
//! or portable Rust) and give the same result on every path; [`dot`] is
//! written so the compiler puts it in vector lanes on any CPU.
//!
//! Pure and synchronous: no threads, no allocation.

mod dot;
pub mod half;
mod int8;
mod linear;

pub use dot::dot;
pub use int8::dot_i8_rows;
pub use linear::{OutOfRange, Weights, linear, linear_panels};
