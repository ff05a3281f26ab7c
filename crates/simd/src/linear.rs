//! The one heavy operation of the model: a dense layer, `out = x · Wᵀ + b`.
//!
//! `W` comes as the checkpoint stores it (one row of `k` weights per output)
//! and is packed once, at load, into [`Weights`]: panels of [`PANEL`]
//! outputs, each panel `k` steps of [`PANEL`] consecutive weights. The kernel
//! then keeps a tile of up to [`ROWS`] rows of `x` × one panel of sums in
//! registers and walks the panel from start to end: each step is one or two
//! vector loads of weights, one broadcast per row of `x`, and a fused
//! multiply-add per register of sums. Nothing is reduced across lanes and
//! nothing is packed per call, which is what a query (a dozen tokens) needs.
//!
//! On x86-64 with AVX-512F, or with AVX2 and FMA (checked once at run time),
//! the kernel is compiled for those instructions; elsewhere it runs as
//! portable code. Every path sums each output in the same order (`k` from
//! first to last, one fused multiply-add per step), so they agree to float
//! rounding of the multiply-add alone.

use std::ops::Range;

use crate::half;

/// Outputs per panel: two AVX-512 registers, four AVX2 ones.
const PANEL: usize = 32;
/// Most rows of `x` per tile: 12 × 2 sums, 2 weight registers and the
/// broadcast fit AVX-512's 32 registers.
const ROWS: usize = 12;
/// Rows of `x` per cache block: a block of rows stays in cache while every
/// panel streams past it.
const X_BLOCK: usize = 4 * ROWS;

/// A dense layer's weights, packed for [`linear`].
#[derive(Clone)]
pub struct Weights {
    /// `outputs.div_ceil(PANEL)` panels of `inputs × PANEL` half-precision
    /// values; the last panel's outputs past `outputs` are zero.
    panels: Vec<u16>,
    outputs: usize,
    inputs: usize,
}

impl std::fmt::Debug for Weights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Weights")
            .field("outputs", &self.outputs)
            .field("inputs", &self.inputs)
            .finish_non_exhaustive()
    }
}

impl Weights {
    /// Packs `w`, `outputs` rows of `inputs` weights as a checkpoint stores
    /// a dense layer (PyTorch's `Linear.weight`), each rounded to the nearest
    /// half-precision value (a relative change of at most 2⁻¹¹ in the normal
    /// range). A weight that is not finite or beyond half precision's range
    /// (±65,504) is refused: rounding could not keep it.
    ///
    /// # Panics
    /// When `w.len() != outputs × inputs` or either is zero: a bug in the
    /// caller, which sizes them from the checked model shapes.
    pub fn pack(w: &[f32], outputs: usize, inputs: usize) -> Result<Self, OutOfRange> {
        assert!(
            outputs > 0 && inputs > 0 && w.len() == outputs * inputs,
            "Weights::pack: bad shapes"
        );
        if let Some(at) = w.iter().position(|v| v.is_nan() || v.abs() > half::MAX) {
            return Err(OutOfRange { at, value: w[at] });
        }
        let count = outputs.div_ceil(PANEL);
        let mut panels = vec![0u16; count * inputs * PANEL];
        for (q, panel) in panels.chunks_exact_mut(inputs * PANEL).enumerate() {
            for c in 0..PANEL.min(outputs - q * PANEL) {
                let row = &w[(q * PANEL + c) * inputs..][..inputs];
                for (p, &value) in row.iter().enumerate() {
                    panel[p * PANEL + c] = half::from_f32(value);
                }
            }
        }
        Ok(Self {
            panels,
            outputs,
            inputs,
        })
    }

    /// How many outputs (rows of `W`).
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// How many inputs per output (`k`).
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// How many panels of outputs: the units [`linear_panels`] computes.
    pub fn panel_count(&self) -> usize {
        self.outputs.div_ceil(PANEL)
    }

    /// The outputs of the panels `panels`.
    pub fn panel_outputs(&self, panels: Range<usize>) -> Range<usize> {
        (panels.start * PANEL).min(self.outputs)..(panels.end * PANEL).min(self.outputs)
    }

    fn panel(&self, q: usize) -> &[u16] {
        &self.panels[q * self.inputs * PANEL..][..self.inputs * PANEL]
    }

    /// Bytes of weights held.
    pub fn heap_bytes(&self) -> usize {
        self.panels.len() * std::mem::size_of::<u16>()
    }
}

/// A weight [`Weights::pack`] refused: not finite, or beyond half
/// precision's range.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("weight {at} ({value}) is beyond half precision's range")]
pub struct OutOfRange {
    /// Its index in the weights given.
    pub at: usize,
    pub value: f32,
}

/// `out[i][j] = dot(x[i], w[j]) + bias[j]` for every row of `x` (`k =
/// w.inputs()` values each) and every output `j` of `w`; `out` is
/// `m × w.outputs()`, row by row.
///
/// # Panics
/// When the slices' lengths do not match `w`'s shape: a bug in the caller.
pub fn linear(x: &[f32], w: &Weights, bias: &[f32], out: &mut [f32]) {
    linear_panels(x, w, bias, 0..w.panel_count(), out);
}

/// [`linear`] for the outputs of the panels `panels` alone
/// ([`Weights::panel_outputs`]): `out` is `m ×` that many outputs, row by
/// row. Each output is computed as [`linear`] computes it, bit for bit, so
/// parts computed apart (on two threads) make the whole.
///
/// # Panics
/// When the slices' lengths do not match `w`'s shape, or the range is empty
/// or past the last panel: a bug in the caller.
pub fn linear_panels(x: &[f32], w: &Weights, bias: &[f32], panels: Range<usize>, out: &mut [f32]) {
    let (n, k) = (w.outputs, w.inputs);
    assert!(
        bias.len() == n && x.len().is_multiple_of(k),
        "linear: bad shapes"
    );
    assert!(
        panels.start < panels.end && panels.end <= w.panel_count(),
        "linear: bad panels"
    );
    let m = x.len() / k;
    assert_eq!(
        out.len(),
        m * w.panel_outputs(panels.clone()).len(),
        "linear: bad output length"
    );
    #[cfg(target_arch = "x86_64")]
    {
        if avx512() {
            // SAFETY: the CPU was checked to have AVX-512F just above.
            #[allow(unsafe_code)]
            unsafe {
                linear_avx512(x, w, bias, panels, out)
            };
            return;
        }
        if avx2_fma() {
            // SAFETY: the CPU was checked to have AVX2, FMA and F16C just above.
            #[allow(unsafe_code)]
            unsafe {
                linear_avx2(x, w, bias, panels, out)
            };
            return;
        }
    }
    blocked(x, w, bias, panels, out, PORTABLE);
}

#[cfg(target_arch = "x86_64")]
fn avx512() -> bool {
    static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DETECTED.get_or_init(|| std::arch::is_x86_feature_detected!("avx512f"))
}

#[cfg(target_arch = "x86_64")]
fn avx2_fma() -> bool {
    static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DETECTED.get_or_init(|| {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    })
}

/// [`blocked`] with the AVX-512 kernel.
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
unsafe fn linear_avx512(
    x: &[f32],
    w: &Weights,
    bias: &[f32],
    panels: Range<usize>,
    out: &mut [f32],
) {
    let kernels = Kernels {
        rows: avx512::ROWS,
        // SAFETY: the caller checked AVX-512F; the rows are `k` long and a
        // panel `k × PANEL`.
        tile: |xs: &[&[f32]], panel: &[u16], k| unsafe { avx512::tile(xs, panel, k) },
    };
    blocked(x, w, bias, panels, out, kernels);
}

/// [`blocked`] with the AVX2 kernel.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn linear_avx2(x: &[f32], w: &Weights, bias: &[f32], panels: Range<usize>, out: &mut [f32]) {
    let kernels = Kernels {
        rows: avx2::ROWS,
        // SAFETY: the caller checked AVX2, FMA and F16C; the rows are `k`
        // long and a panel `k × PANEL`.
        tile: |xs: &[&[f32]], panel: &[u16], k| unsafe { avx2::tile(xs, panel, k) },
    };
    blocked(x, w, bias, panels, out, kernels);
}

/// The sums of one tile: up to [`ROWS`] rows of one panel's outputs.
type Sums = [[f32; PANEL]; ROWS];

/// A path's kernel: the sums of the rows `xs` (each `k` long, at most
/// `rows` of them) with one panel, widened to single precision as it is
/// read. Widening each panel once into a buffer for all of a block's tiles
/// was measured too: slower at every size (the buffer's round trip costs
/// more than widening in the kernel, whose loads overlap the arithmetic).
struct Kernels<T> {
    rows: usize,
    tile: T,
}

/// The loops around a path's kernel.
#[inline(always)]
fn blocked<T>(
    x: &[f32],
    w: &Weights,
    bias: &[f32],
    panels: Range<usize>,
    out: &mut [f32],
    kernels: Kernels<T>,
) where
    T: Fn(&[&[f32]], &[u16], usize) -> Sums,
{
    let (n, k) = (w.outputs, w.inputs);
    let m = x.len() / k;
    let first = panels.start * PANEL;
    let width = w.panel_outputs(panels.clone()).len();
    let mut xs: [&[f32]; ROWS] = [&[]; ROWS];
    for x0 in (0..m).step_by(X_BLOCK) {
        let x1 = (x0 + X_BLOCK).min(m);
        // The block's rows in as few tiles as fit, evened out: a tile of few
        // rows has few independent sums and waits on each one's
        // multiply-add, so 7 + 7 beats 12 + 2.
        let tiles = (x1 - x0).div_ceil(kernels.rows);
        for q in panels.clone() {
            let panel = w.panel(q);
            let j = q * PANEL;
            let cols = PANEL.min(n - j);
            let mut i = x0;
            for tile in 0..tiles {
                let rows = (x1 - x0) / tiles + usize::from(tile < (x1 - x0) % tiles);
                for (r, row) in xs.iter_mut().enumerate().take(rows) {
                    *row = &x[(i + r) * k..][..k];
                }
                let sums = (kernels.tile)(&xs[..rows], panel, k);
                for (r, row) in sums.iter().enumerate().take(rows) {
                    let target = &mut out[(i + r) * width + j - first..][..cols];
                    for ((o, s), b) in target.iter_mut().zip(row).zip(&bias[j..j + cols]) {
                        *o = s + b;
                    }
                }
                i += rows;
            }
        }
    }
}

/// A kernel as a plain function.
type Tile = fn(&[&[f32]], &[u16], usize) -> Sums;

/// The portable kernel: the same steps as the vector ones, on arrays.
const PORTABLE: Kernels<Tile> = Kernels {
    rows: 4,
    tile: |xs, panel, k| {
        portable_steps(xs, k, |p| {
            let mut wide = [0f32; PANEL];
            half::widen_portable(&panel[p * PANEL..][..PANEL], &mut wide);
            wide
        })
    },
};

/// The portable kernel's steps, with the weights of step `p` from `weights`.
#[inline(always)]
fn portable_steps(xs: &[&[f32]], k: usize, weights: impl Fn(usize) -> [f32; PANEL]) -> Sums {
    let mut sums = [[0f32; PANEL]; ROWS];
    for p in 0..k {
        let step = weights(p);
        for (sum, row) in sums.iter_mut().zip(xs) {
            let value = row[p];
            for (s, w) in sum.iter_mut().zip(&step) {
                *s = value.mul_add(*w, *s);
            }
        }
    }
    sums
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{
        __m256i, __m512, _mm256_loadu_si256, _mm512_cvtph_ps, _mm512_fmadd_ps, _mm512_set1_ps,
        _mm512_setzero_ps, _mm512_storeu_ps,
    };

    use super::{PANEL, Sums};

    /// Rows per tile: 24 registers of sums, 2 of weights and a broadcast.
    pub(super) const ROWS: usize = super::ROWS;

    /// One tile: `xs` (at most [`ROWS`] rows of `k`) times one packed panel.
    ///
    /// # Safety
    /// The CPU must have AVX-512F; every row must be `k` long and the panel
    /// `k × PANEL`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(xs: &[&[f32]], panel: &[u16], k: usize) -> Sums {
        debug_assert!(xs.iter().all(|row| row.len() == k) && panel.len() == k * PANEL);
        // One body per row count, so the sums stay in registers.
        match xs.len() {
            1 => unsafe { rows::<1>(xs, panel, k) },
            2 => unsafe { rows::<2>(xs, panel, k) },
            3 => unsafe { rows::<3>(xs, panel, k) },
            4 => unsafe { rows::<4>(xs, panel, k) },
            5 => unsafe { rows::<5>(xs, panel, k) },
            6 => unsafe { rows::<6>(xs, panel, k) },
            7 => unsafe { rows::<7>(xs, panel, k) },
            8 => unsafe { rows::<8>(xs, panel, k) },
            9 => unsafe { rows::<9>(xs, panel, k) },
            10 => unsafe { rows::<10>(xs, panel, k) },
            11 => unsafe { rows::<11>(xs, panel, k) },
            _ => unsafe { rows::<12>(xs, panel, k) },
        }
    }

    /// # Safety
    /// As [`tile`], with `xs.len() >= R`.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn rows<const R: usize>(xs: &[&[f32]], panel: &[u16], k: usize) -> Sums {
        let mut acc: [[__m512; 2]; R] = [[_mm512_setzero_ps(); 2]; R];
        let base = panel.as_ptr();
        for p in 0..k {
            // SAFETY: p < k, so p · PANEL + 32 <= k · PANEL, the panel's
            // length: two loads of 16 half-precision values.
            let (w0, w1) = unsafe {
                let at = base.add(p * PANEL);
                (
                    _mm512_cvtph_ps(_mm256_loadu_si256(at.cast::<__m256i>())),
                    _mm512_cvtph_ps(_mm256_loadu_si256(at.add(16).cast::<__m256i>())),
                )
            };
            for r in 0..R {
                // SAFETY: p < k, the length of every row.
                let value = _mm512_set1_ps(unsafe { *xs[r].get_unchecked(p) });
                acc[r][0] = _mm512_fmadd_ps(value, w0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(value, w1, acc[r][1]);
            }
        }
        let mut sums = [[0f32; PANEL]; super::ROWS];
        for (sum, acc) in sums.iter_mut().zip(&acc) {
            // SAFETY: each row of sums holds 32 floats.
            unsafe {
                _mm512_storeu_ps(sum.as_mut_ptr(), acc[0]);
                _mm512_storeu_ps(sum.as_mut_ptr().add(16), acc[1]);
            }
        }
        sums
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        __m128i, __m256, _mm_loadu_si128, _mm256_cvtph_ps, _mm256_fmadd_ps, _mm256_set1_ps,
        _mm256_setzero_ps, _mm256_storeu_ps,
    };

    use super::{PANEL, Sums};

    /// Rows per tile: 2 × 4 registers of sums, 4 of weights and a broadcast
    /// fit AVX2's sixteen.
    pub(super) const ROWS: usize = 2;

    /// One tile: `xs` (one or two rows of `k`) times one packed panel.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and F16C; every row must be `k` long and
    /// the panel `k × PANEL`.
    #[target_feature(enable = "avx2,fma,f16c")]
    pub(super) unsafe fn tile(xs: &[&[f32]], panel: &[u16], k: usize) -> Sums {
        debug_assert!(xs.iter().all(|row| row.len() == k) && panel.len() == k * PANEL);
        match xs.len() {
            1 => unsafe { rows::<1>(xs, panel, k) },
            _ => unsafe { rows::<2>(xs, panel, k) },
        }
    }

    /// # Safety
    /// As [`tile`], with `xs.len() >= R`.
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn rows<const R: usize>(xs: &[&[f32]], panel: &[u16], k: usize) -> Sums {
        let mut acc: [[__m256; 4]; R] = [[_mm256_setzero_ps(); 4]; R];
        let base = panel.as_ptr();
        for p in 0..k {
            // SAFETY: p < k, so p · PANEL + 8 v + 8 <= k · PANEL, the panel's
            // length: four loads of 8 half-precision values.
            let w: [__m256; 4] = std::array::from_fn(|v| unsafe {
                let at = base.add(p * PANEL + v * 8);
                _mm256_cvtph_ps(_mm_loadu_si128(at.cast::<__m128i>()))
            });
            for r in 0..R {
                // SAFETY: p < k, the length of every row.
                let value = _mm256_set1_ps(unsafe { *xs[r].get_unchecked(p) });
                for v in 0..4 {
                    acc[r][v] = _mm256_fmadd_ps(value, w[v], acc[r][v]);
                }
            }
        }
        let mut sums = [[0f32; PANEL]; super::ROWS];
        for (sum, acc) in sums.iter_mut().zip(&acc) {
            for (v, lanes) in acc.iter().enumerate() {
                // SAFETY: each row of sums holds 32 floats.
                unsafe { _mm256_storeu_ps(sum.as_mut_ptr().add(v * 8), *lanes) };
            }
        }
        sums
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::half;

    fn naive(x: &[f32], w: &[f32], bias: &[f32], k: usize) -> Vec<f32> {
        let m = x.len() / k;
        let n = bias.len();
        let mut out = vec![0f32; m * n];
        for i in 0..m {
            for j in 0..n {
                let dot: f64 = (0..k)
                    .map(|p| f64::from(x[i * k + p]) * f64::from(w[j * k + p]))
                    .sum();
                out[i * n + j] = dot as f32 + bias[j];
            }
        }
        out
    }

    /// Values in [-1, 1) from a fixed sequence, so failures reproduce.
    fn values(count: usize, seed: u32) -> Vec<f32> {
        let mut state = seed.wrapping_mul(2_654_435_761).max(1);
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state as f32 / u32::MAX as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// Shapes around the tile, panel and block sizes: every remainder of rows
    /// (1 to 6, and past a block of 48), a partial last panel, odd `k`.
    const SHAPES: [(usize, usize, usize); 11] = [
        (1, 1, 1),
        (1, 4, 8),
        (2, 3, 7),
        (3, 33, 16),
        (4, 5, 9),
        (5, 64, 31),
        (7, 40, 3),
        (10, 384, 384),
        (14, 1536, 384),
        (50, 67, 33),
        (97, 130, 24),
    ];

    fn assert_close(got: &[f32], want: &[f32], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{what} at {i}: {g} against {w}"
            );
        }
    }

    #[test]
    fn equals_the_naive_product_at_every_shape_edge() {
        for (m, n, k) in SHAPES {
            let x = values(m * k, 1 + m as u32);
            let w = values(n * k, 7 + n as u32);
            let bias = values(n, 3);
            let mut out = vec![f32::NAN; m * n];
            let packed = Weights::pack(&w, n, k).expect("in range");
            linear(&x, &packed, &bias, &mut out);
            // The weights as packed: rounded to half precision.
            let rounded: Vec<f32> = w.iter().map(|&v| half::to_f32(half::from_f32(v))).collect();
            let what = format!("m={m} n={n} k={k}");
            assert_close(&out, &naive(&x, &rounded, &bias, k), &what);
        }
    }

    /// Every path the CPU has gives the portable path's sums, which are the
    /// same multiply-adds in the same order.
    #[test]
    fn every_path_equals_the_portable_one() {
        for (m, n, k) in SHAPES {
            let x = values(m * k, 11 + m as u32);
            let w = Weights::pack(&values(n * k, 12), n, k).expect("in range");
            let bias = values(n, 13);
            let mut portable = vec![f32::NAN; m * n];
            blocked(&x, &w, &bias, 0..w.panel_count(), &mut portable, PORTABLE);
            let mut dispatched = vec![f32::NAN; m * n];
            linear(&x, &w, &bias, &mut dispatched);
            assert_eq!(dispatched, portable, "dispatched m={m} n={n} k={k}");
            #[cfg(target_arch = "x86_64")]
            if avx2_fma() {
                let mut avx2 = vec![f32::NAN; m * n];
                // SAFETY: the CPU was checked to have AVX2, FMA and F16C just above.
                #[allow(unsafe_code)]
                unsafe {
                    linear_avx2(&x, &w, &bias, 0..w.panel_count(), &mut avx2)
                };
                assert_eq!(avx2, portable, "AVX2 m={m} n={n} k={k}");
            }
        }
    }

    /// The outputs of a range of panels are those columns of the whole,
    /// bit for bit, at every split.
    #[test]
    fn parts_make_the_whole() {
        for (m, n, k) in SHAPES {
            let x = values(m * k, 21 + m as u32);
            let w = Weights::pack(&values(n * k, 22), n, k).expect("in range");
            let bias = values(n, 23);
            let mut whole = vec![f32::NAN; m * n];
            linear(&x, &w, &bias, &mut whole);
            for split in 1..w.panel_count() {
                let mut joined = vec![f32::NAN; m * n];
                for panels in [0..split, split..w.panel_count()] {
                    let columns = w.panel_outputs(panels.clone());
                    let mut part = vec![f32::NAN; m * columns.len()];
                    linear_panels(&x, &w, &bias, panels, &mut part);
                    for (row, values) in part.chunks_exact(columns.len()).enumerate() {
                        joined[row * n + columns.start..row * n + columns.end]
                            .copy_from_slice(values);
                    }
                }
                assert_eq!(joined, whole, "m={m} n={n} k={k} split at panel {split}");
            }
        }
    }

    #[test]
    fn packing_keeps_the_shape_and_refuses_what_half_precision_cannot_hold() {
        let w = Weights::pack(&values(70 * 5, 1), 70, 5).expect("in range");
        assert_eq!((w.outputs(), w.inputs()), (70, 5));
        assert_eq!(w.heap_bytes(), 3 * 5 * PANEL * 2);
        for bad in [f32::NAN, f32::INFINITY, -70_000.0] {
            let mut values = values(4 * 3, 2);
            values[7] = bad;
            let refused = Weights::pack(&values, 4, 3).err();
            assert_eq!(refused.map(|e| e.at), Some(7), "{bad}");
        }
    }
}
