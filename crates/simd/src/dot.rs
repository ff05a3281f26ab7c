//! The dot product of two `f32` rows, in eight partial sums so the compiler
//! runs the loop in vector lanes on any CPU, then the tail. Used by
//! `tool_search`'s exact cosines and the embedding model's attention scores.

/// `Σ a[i] · b[i]` over the shorter of the two lengths.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, a_rest) = a.as_chunks::<8>();
    let (b_chunks, b_rest) = b.as_chunks::<8>();
    for (x, y) in a_chunks.iter().zip(b_chunks) {
        for i in 0..8 {
            lanes[i] += x[i] * y[i];
        }
    }
    let tail: f32 = a_rest.iter().zip(b_rest).map(|(x, y)| x * y).sum();
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equals_the_plain_sum_at_every_length() {
        for n in [0usize, 1, 7, 8, 9, 32, 33, 384] {
            let a: Vec<f32> = (0..n).map(|i| (i % 7) as f32 - 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.5).collect();
            // Small integers and halves: every partial sum is exact.
            let want: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            assert_eq!(dot(&a, &b), want, "n = {n}");
        }
    }
}
