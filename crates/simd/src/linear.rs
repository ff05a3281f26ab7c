//! The one heavy operation of the model: a dense layer, `out = x · Wᵀ + b`,
//! with `W` kept as the checkpoint stores it (one row of `k` weights per
//! output), so every dot product reads both operands in order and nothing is
//! packed or copied per call.
//!
//! The loops are blocked so a tile of `x` and of `W` stays in cache, and the
//! inner kernel keeps a 3 × 4 tile of sums in registers. On x86-64 with AVX2
//! and FMA (checked once at run time) the same code is compiled for those
//! instructions: the 8-wide lanes become one register and `mul_add` one
//! fused instruction. Elsewhere it runs as portable code.

/// Most rows of `x`, and of `W`, in one kernel's tile.
const TILE: usize = 4;
/// Rows of `x` and of `W` per tile of the portable and AVX2 kernels (nine
/// sums, three rows of `x` and one of `W` fit AVX2's sixteen registers).
const SMALL_TILE: (usize, usize) = (3, 3);
/// Rows of `x` per cache block.
const X_BLOCK: usize = 48;
/// Rows of `W` per cache block.
const W_BLOCK: usize = 64;
const LANES: usize = 8;

/// `out[i][j] = dot(x[i], w[j]) + bias[j]` for `m` rows of `x` (`k` values
/// each) and `n` rows of `w`; `out` is `m × n`, row by row.
///
/// # Panics
/// When the slices' lengths do not match `m`, `n` and `k`: a bug in the
/// caller, which sizes them from the checked model shapes.
pub fn linear(x: &[f32], w: &[f32], bias: &[f32], k: usize, out: &mut [f32]) {
    let n = bias.len();
    assert!(
        k > 0 && x.len().is_multiple_of(k) && w.len() == n * k,
        "linear: bad shapes"
    );
    let m = x.len() / k;
    assert_eq!(out.len(), m * n, "linear: bad output length");
    #[cfg(target_arch = "x86_64")]
    {
        if avx512() {
            // SAFETY: the CPU was checked to have AVX-512F just above.
            #[allow(unsafe_code)]
            unsafe {
                linear_avx512(x, w, bias, k, out)
            };
            return;
        }
        if avx2_fma() {
            // SAFETY: the CPU was checked to have AVX2 and FMA just above.
            #[allow(unsafe_code)]
            unsafe {
                linear_avx2(x, w, bias, k, out)
            };
            return;
        }
    }
    blocked(m, bias, out, SMALL_TILE, |rows, cols, i, j| {
        portable_tile(x, w, k, (rows, cols, i, j))
    });
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
        std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
    })
}

/// [`blocked`] with the AVX2 tile kernel.
///
/// # Safety
/// The CPU must have AVX2 and FMA.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx2,fma")]
unsafe fn linear_avx2(x: &[f32], w: &[f32], bias: &[f32], k: usize, out: &mut [f32]) {
    let m = x.len() / k;
    blocked(m, bias, out, SMALL_TILE, |rows, cols, i, j| {
        let xs = rows_of(x, k, i, rows);
        let ws = rows_of(w, k, j, cols);
        // SAFETY: the caller checked AVX2 and FMA; every row is `k` long.
        unsafe { avx2::tile(xs, ws, k) }
    });
}

/// [`blocked`] with the AVX-512 tile kernel (4 × 4 sums of sixteen lanes).
///
/// # Safety
/// The CPU must have AVX-512F.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f")]
unsafe fn linear_avx512(x: &[f32], w: &[f32], bias: &[f32], k: usize, out: &mut [f32]) {
    let m = x.len() / k;
    blocked(m, bias, out, avx512::TILE, |rows, cols, i, j| {
        let xs = rows_of(x, k, i, rows);
        let ws = rows_of(w, k, j, cols);
        // SAFETY: the caller checked AVX-512F; every row is `k` long.
        unsafe { avx512::tile(xs, ws, k) }
    });
}

/// [`TILE`] rows of `k` values from row `first` of `matrix`; past the
/// `count` asked for, the last one repeats (its sums are not kept).
#[inline(always)]
fn rows_of<const N: usize>(matrix: &[f32], k: usize, first: usize, count: usize) -> [&[f32]; N] {
    std::array::from_fn(|r| &matrix[(first + r.min(count - 1)) * k..][..k])
}

/// The blocked loops around a kernel that returns the dot products of
/// `rows` rows of `x` (from `i`) with `cols` rows of `w` (from `j`), at most
/// `tile` of each.
#[inline(always)]
fn blocked(
    m: usize,
    bias: &[f32],
    out: &mut [f32],
    (x_tile, w_tile): (usize, usize),
    kernel: impl Fn(usize, usize, usize, usize) -> [[f32; TILE]; TILE],
) {
    let n = bias.len();
    for x0 in (0..m).step_by(X_BLOCK) {
        let x1 = (x0 + X_BLOCK).min(m);
        for w0 in (0..n).step_by(W_BLOCK) {
            let w1 = (w0 + W_BLOCK).min(n);
            let mut i = x0;
            while i < x1 {
                let rows = (x1 - i).min(x_tile);
                let mut j = w0;
                while j < w1 {
                    let cols = (w1 - j).min(w_tile);
                    let sums = kernel(rows, cols, i, j);
                    for (r, row) in sums.iter().enumerate().take(rows) {
                        for (c, sum) in row.iter().enumerate().take(cols) {
                            out[(i + r) * n + j + c] = sum + bias[j + c];
                        }
                    }
                    j += cols;
                }
                i += rows;
            }
        }
    }
}

/// The portable kernel: dot products eight lanes at a time.
fn portable_tile(
    x: &[f32],
    w: &[f32],
    k: usize,
    (rows, cols, i, j): (usize, usize, usize, usize),
) -> [[f32; TILE]; TILE] {
    let mut sums = [[0f32; TILE]; TILE];
    let whole = k / LANES * LANES;
    for (r, row) in sums.iter_mut().enumerate().take(rows) {
        let xr = &x[(i + r) * k..][..k];
        for (c, sum) in row.iter_mut().enumerate().take(cols) {
            let wr = &w[(j + c) * k..][..k];
            let mut acc = [0f32; LANES];
            for p in (0..whole).step_by(LANES) {
                let (xv, wv) = (lanes(xr, p), lanes(wr, p));
                for l in 0..LANES {
                    acc[l] += xv[l] * wv[l];
                }
            }
            *sum = horizontal(&acc) + (whole..k).map(|q| xr[q] * wr[q]).sum::<f32>();
        }
    }
    sums
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use std::arch::x86_64::{
        __m256, _mm256_fmadd_ps, _mm256_loadu_ps, _mm256_setzero_ps, _mm256_storeu_ps,
    };

    use super::{LANES, SMALL_TILE, TILE, horizontal};

    const X_TILE: usize = SMALL_TILE.0;
    const W_TILE: usize = SMALL_TILE.1;

    /// Dot products of three rows of `x` with three rows of `w` (rows may
    /// repeat at the edges; the caller keeps the ones it asked for), nine
    /// sums held in registers.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA, and every row must be `k` long.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn tile(
        xs: [&[f32]; X_TILE],
        ws: [&[f32]; W_TILE],
        k: usize,
    ) -> [[f32; TILE]; TILE] {
        debug_assert!(xs.iter().chain(&ws).all(|row| row.len() == k));
        let whole = k / LANES * LANES;
        let mut acc: [[__m256; W_TILE]; X_TILE] = [[_mm256_setzero_ps(); W_TILE]; X_TILE];
        let mut p = 0;
        while p < whole {
            // SAFETY: p + 8 <= whole <= k, the length of every row.
            let xv: [__m256; X_TILE] =
                std::array::from_fn(|r| unsafe { _mm256_loadu_ps(xs[r].as_ptr().add(p)) });
            let wv: [__m256; W_TILE] =
                std::array::from_fn(|c| unsafe { _mm256_loadu_ps(ws[c].as_ptr().add(p)) });
            for r in 0..X_TILE {
                for c in 0..W_TILE {
                    acc[r][c] = _mm256_fmadd_ps(xv[r], wv[c], acc[r][c]);
                }
            }
            p += LANES;
        }
        let mut sums = [[0f32; TILE]; TILE];
        for r in 0..X_TILE {
            for c in 0..W_TILE {
                let mut lanes = [0f32; LANES];
                // SAFETY: `lanes` holds eight floats.
                unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), acc[r][c]) };
                let mut sum = horizontal(&lanes);
                for q in whole..k {
                    sum = xs[r][q].mul_add(ws[c][q], sum);
                }
                sums[r][c] = sum;
            }
        }
        sums
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx512 {
    use std::arch::x86_64::{__m512, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_reduce_add_ps};

    /// Rows of `x` and of `W` per tile: 16 sums and eight rows fit
    /// AVX-512's 32 registers (8 × 3 spilled and was slower, 3 × 3 too).
    pub(super) const TILE: (usize, usize) = (4, 4);
    const X_TILE: usize = TILE.0;
    const W_TILE: usize = TILE.1;
    const WIDE: usize = 16;

    /// Dot products of four rows of `x` with four rows of `w` (rows may
    /// repeat at the edges), sixteen sums of sixteen lanes in registers.
    ///
    /// # Safety
    /// The CPU must have AVX-512F, and every row must be `k` long.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tile(
        xs: [&[f32]; X_TILE],
        ws: [&[f32]; W_TILE],
        k: usize,
    ) -> [[f32; super::TILE]; super::TILE] {
        debug_assert!(xs.iter().chain(&ws).all(|row| row.len() == k));
        let whole = k / WIDE * WIDE;
        let mut acc: [[__m512; W_TILE]; X_TILE] =
            [[std::arch::x86_64::_mm512_setzero_ps(); W_TILE]; X_TILE];
        let mut p = 0;
        while p < whole {
            // SAFETY: p + 16 <= whole <= k, the length of every row.
            let xv: [__m512; X_TILE] =
                std::array::from_fn(|r| unsafe { _mm512_loadu_ps(xs[r].as_ptr().add(p)) });
            let wv: [__m512; W_TILE] =
                std::array::from_fn(|c| unsafe { _mm512_loadu_ps(ws[c].as_ptr().add(p)) });
            for r in 0..X_TILE {
                for c in 0..W_TILE {
                    acc[r][c] = _mm512_fmadd_ps(xv[r], wv[c], acc[r][c]);
                }
            }
            p += WIDE;
        }
        let mut sums = [[0f32; super::TILE]; super::TILE];
        for r in 0..X_TILE {
            for c in 0..W_TILE {
                let mut sum = _mm512_reduce_add_ps(acc[r][c]);
                for q in whole..k {
                    sum = xs[r][q].mul_add(ws[c][q], sum);
                }
                sums[r][c] = sum;
            }
        }
        sums
    }
}

#[inline(always)]
fn lanes(row: &[f32], at: usize) -> &[f32; LANES] {
    row[at..at + LANES]
        .try_into()
        .expect("a whole group of lanes")
}

#[inline(always)]
fn horizontal(v: &[f32; LANES]) -> f32 {
    ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]))
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn equals_the_naive_product_at_every_shape_edge() {
        // Shapes around the tile and block sizes, and odd k for the lane tail.
        for (m, n, k) in [
            (1, 1, 1),
            (1, 4, 8),
            (2, 3, 7),
            (3, 4, 16),
            (4, 5, 9),
            (14, 384, 384),
            (50, 67, 33),
            (97, 130, 24),
        ] {
            let x = values(m * k, 1 + m as u32);
            let w = values(n * k, 7 + n as u32);
            let bias = values(n, 3);
            let mut out = vec![f32::NAN; m * n];
            linear(&x, &w, &bias, k, &mut out);
            let expected = naive(&x, &w, &bias, k);
            for (i, (got, want)) in out.iter().zip(&expected).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "m={m} n={n} k={k} at {i}: {got} against {want}"
                );
            }
        }
    }

    #[test]
    fn the_portable_path_equals_the_dispatched_one() {
        let (m, n, k) = (10, 20, 40);
        let x = values(m * k, 11);
        let w = values(n * k, 12);
        let bias = values(n, 13);
        let mut fast = vec![0f32; m * n];
        linear(&x, &w, &bias, k, &mut fast);
        let mut portable = vec![0f32; m * n];
        blocked(m, &bias, &mut portable, SMALL_TILE, |rows, cols, i, j| {
            portable_tile(&x, &w, k, (rows, cols, i, j))
        });
        for (a, b) in fast.iter().zip(&portable) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "{a} against {b}");
        }
    }
}
