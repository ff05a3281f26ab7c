//! The arithmetic BotCraft runs on many numbers at once, and the one crate
//! that uses the CPU's vector instructions directly.
//!
//! Owns: the dense layer `x · Wᵀ + b` the embedding model spends nearly all
//! its time in ([`linear`], over weights packed once at load in half
//! precision: [`Weights`], [`half`]), and the 8-bit dot products of
//! `tool_search`'s vector scan ([`dot_i8_rows`]). Each picks, once, the best
//! code the CPU runs (AVX-512, AVX2 with FMA and F16C, or portable Rust) and
//! gives the same result on every path.
//!
//! Pure and synchronous: no threads; [`linear`] allocates one panel's buffer
//! per call, for a batch only.

pub mod half;
mod int8;
mod linear;

pub use int8::dot_i8_rows;
pub use linear::{OutOfRange, Weights, linear, linear_panels};
