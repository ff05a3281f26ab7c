//! Integer dot products of one 8-bit query with every row of an 8-bit
//! matrix: exact (each product fits an `i16`, each sum an `i32` for rows up
//! to 133,000 values), so every path gives the same answer.

/// `out[r] = Σ rows[r·n + i] · query[i]` for each row `r` of `n =
/// query.len()` values.
///
/// # Panics
/// When `rows` is not `out.len()` rows of `query.len()` values.
pub fn dot_i8_rows(rows: &[i8], query: &[i8], out: &mut [i32]) {
    let n = query.len();
    assert_eq!(rows.len(), n * out.len(), "dot_i8_rows: bad shapes");
    if n == 0 {
        out.fill(0);
        return;
    }
    #[cfg(target_arch = "x86_64")]
    {
        if avx2() {
            // SAFETY: the CPU was checked to have AVX2 just above.
            #[allow(unsafe_code)]
            unsafe {
                x86::rows_avx2(rows, query, out)
            };
            return;
        }
    }
    for (row, o) in rows.chunks_exact(n).zip(out.iter_mut()) {
        *o = portable(row, query);
    }
}

fn portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter()
        .zip(b)
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum()
}

#[cfg(target_arch = "x86_64")]
fn avx2() -> bool {
    static DETECTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *DETECTED.get_or_init(|| std::arch::is_x86_feature_detected!("avx2"))
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod x86 {
    use std::arch::x86_64::{
        __m128i, __m256i, _mm_loadu_si128, _mm256_add_epi32, _mm256_cvtepi8_epi16,
        _mm256_madd_epi16, _mm256_setzero_si256, _mm256_storeu_si256,
    };

    const STEP: usize = 16;

    /// # Safety
    /// The CPU must have AVX2; `rows` must be `out.len()` rows of
    /// `query.len()` values.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn rows_avx2(rows: &[i8], query: &[i8], out: &mut [i32]) {
        let n = query.len();
        let whole = n / STEP * STEP;
        for (row, o) in rows.chunks_exact(n).zip(out.iter_mut()) {
            let mut acc = _mm256_setzero_si256();
            let mut p = 0;
            while p < whole {
                // SAFETY: p + 16 <= whole <= n, the length of both slices.
                let (a, b) = unsafe {
                    (
                        _mm_loadu_si128(row.as_ptr().add(p).cast::<__m128i>()),
                        _mm_loadu_si128(query.as_ptr().add(p).cast::<__m128i>()),
                    )
                };
                // Sixteen bytes widened to sixteen i16, multiplied, summed in pairs.
                let products = _mm256_madd_epi16(_mm256_cvtepi8_epi16(a), _mm256_cvtepi8_epi16(b));
                acc = _mm256_add_epi32(acc, products);
                p += STEP;
            }
            let mut lanes = [0i32; 8];
            // SAFETY: `lanes` is 32 bytes.
            unsafe { _mm256_storeu_si256(lanes.as_mut_ptr().cast::<__m256i>(), acc) };
            *o = lanes.iter().sum::<i32>() + super::portable(&row[whole..], &query[whole..]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(count: usize, seed: u32) -> Vec<i8> {
        let mut state = seed.max(1);
        (0..count)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                // The full range, −128 included.
                (state >> 24) as u8 as i8
            })
            .collect()
    }

    #[test]
    fn equals_plain_loops_at_every_length() {
        for n in [1usize, 7, 15, 16, 17, 33, 384, 385] {
            let query = bytes(n, 3 + n as u32);
            let rows = bytes(n * 9, 11);
            let mut out = vec![0; 9];
            dot_i8_rows(&rows, &query, &mut out);
            let want: Vec<i32> = rows.chunks_exact(n).map(|r| portable(r, &query)).collect();
            assert_eq!(out, want, "n = {n}");
        }
        // The extremes: every product at its largest.
        let n: i32 = 384;
        let mut out = vec![0; 2];
        dot_i8_rows(&[-128i8; 768], &[-128i8; 384], &mut out);
        assert_eq!(out, vec![128 * 128 * n; 2]);
        dot_i8_rows(&[127i8; 768], &[-128i8; 384], &mut out);
        assert_eq!(out, vec![-127 * 128 * n; 2]);
    }

    #[test]
    fn empty_rows() {
        let mut out = vec![5; 3];
        dot_i8_rows(&[], &[], &mut out);
        assert_eq!(out, vec![0; 3]);
    }
}
