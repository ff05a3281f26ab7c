//! The dense signal: each tool's unit vector, kept twice, as `f32` and as
//! 8-bit integers with one scale per row, and the search for the tools
//! nearest a query's vector.
//!
//! A search reads every tool's 8-bit row (a quarter of the memory of the
//! `f32` rows, which is what a scan over 100,000 tools waits on), keeps the
//! best few by that estimate, then scores those again exactly. Each estimate
//! comes with a bound on its error, computed from the two scales, so a tool
//! the estimate left out is scored exactly too whenever its bound says it
//! could still be among the best: the ranks are always those of the exact
//! cosines, never an approximation of them.

use std::cmp::Ordering;

/// One segment's vectors: unit rows of `dim` floats, and the same rows in
/// 8 bits (`row ≈ scale · quantized`).
#[derive(Debug, Clone)]
pub(crate) struct Vectors {
    pub dim: usize,
    pub data: Vec<f32>,
    quantized: Vec<i8>,
    /// Per row: the scale `s` (its largest magnitude over 127).
    scales: Vec<f32>,
    /// Per row: `s · Σ|q_i|`, for the error bound.
    magnitudes: Vec<f32>,
}

impl Vectors {
    /// Rows of `dim` values, already unit length.
    pub fn new(dim: usize, data: Vec<f32>) -> Self {
        let rows = data.len().checked_div(dim).unwrap_or(0);
        let mut quantized = Vec::with_capacity(data.len());
        let mut scales = Vec::with_capacity(rows);
        let mut magnitudes = Vec::with_capacity(rows);
        for row in data.chunks_exact(dim.max(1)) {
            let (scale, q) = quantize(row);
            magnitudes.push(scale * q.iter().map(|v| f32::from(v.unsigned_abs())).sum::<f32>());
            scales.push(scale);
            quantized.extend(q);
        }
        Self {
            dim,
            data,
            quantized,
            scales,
            magnitudes,
        }
    }

    pub fn row(&self, doc: usize) -> &[f32] {
        &self.data[doc * self.dim..(doc + 1) * self.dim]
    }

    pub fn len(&self) -> usize {
        self.scales.len()
    }

    /// Bytes held: the `f32` rows, the 8-bit rows and two floats per row.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity() * 4
            + self.quantized.capacity()
            + (self.scales.capacity() + self.magnitudes.capacity()) * 4
    }
}

/// `row ≈ scale · q`, `q` in −127..=127.
fn quantize(row: &[f32]) -> (f32, Vec<i8>) {
    let largest = row.iter().fold(0f32, |m, v| m.max(v.abs()));
    if largest == 0.0 || !largest.is_finite() {
        return (0.0, vec![0; row.len()]);
    }
    let scale = largest / 127.0;
    let q = row
        .iter()
        .map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8)
        .collect();
    (scale, q)
}

/// Slack added to every bound for the rounding of `f32` sums of 384 products.
const ROUNDING: f32 = 1e-5;

/// A query's vector, unit length, with its 8-bit form.
#[derive(Debug)]
pub(crate) struct DenseQuery {
    unit: Vec<f32>,
    quantized: Vec<i8>,
    /// Bound terms: `error ≤ row_scale · per_scale + row_magnitude · per_magnitude`.
    per_scale: f32,
    per_magnitude: f32,
    scale: f32,
}

impl DenseQuery {
    /// `None` for a vector of zero or non-finite length.
    pub fn new(vector: &[f32]) -> Option<Self> {
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if !norm.is_finite() || norm == 0.0 {
            return None;
        }
        let unit: Vec<f32> = vector.iter().map(|x| x / norm).collect();
        let (scale, quantized) = quantize(&unit);
        let p_sum: f32 = quantized.iter().map(|v| f32::from(v.unsigned_abs())).sum();
        // With x = s·q + e (|e_i| ≤ s/2) and y = t·p + f (|f_i| ≤ t/2):
        // |x·y − s·t·(q·p)| ≤ (t/2)·s·Σ|q_i| + (s/2)·t·Σ|p_i| + n·(s/2)·(t/2).
        let n = unit.len() as f32;
        Some(Self {
            per_scale: scale / 2.0 * p_sum + n * scale / 4.0,
            per_magnitude: scale / 2.0,
            scale,
            unit,
            quantized,
        })
    }

    /// The exact cosine to a unit row.
    pub fn cosine(&self, row: &[f32]) -> f32 {
        simd::dot(row, &self.unit)
    }

    /// The integer dot products of every row of `vectors` with the query's 8-bit form.
    fn products(&self, vectors: &Vectors, out: &mut Vec<i32>) {
        out.clear();
        out.resize(vectors.len(), 0);
        simd::dot_i8_rows(&vectors.quantized, &self.quantized, out);
    }

    /// The estimate of the cosine to row `doc` of `vectors` from its integer dot
    /// product, and its bound.
    fn estimate(&self, vectors: &Vectors, doc: usize, product: i32) -> (f32, f32) {
        let scale = vectors.scales[doc];
        let estimate = scale * self.scale * product as f32;
        // ROUNDING covers the float rounding of the estimate, of the bound and of the exact
        // cosine it is compared with (each about 1e-7 of a unit vector's dot product).
        let bound =
            scale * self.per_scale + vectors.magnitudes[doc] * self.per_magnitude + ROUNDING;
        (estimate, bound)
    }
}

/// A scored tool: global id and score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    pub doc: usize,
    pub score: f32,
}

/// Best first; ties by id, so ranks are stable.
pub(crate) fn best_first(a: &Scored, b: &Scored) -> Ordering {
    b.score.total_cmp(&a.score).then(a.doc.cmp(&b.doc))
}

/// What [`nearest`] found.
#[derive(Debug)]
pub(crate) struct Nearest {
    /// The best tools by exact score, best first.
    pub best: Vec<Scored>,
    /// Per global id: the estimated cosine and its bound (`(0, ∞)` for a tool
    /// that was not allowed), for callers that can do without the exact one.
    pub estimates: Vec<(f32, f32)>,
}

impl Nearest {
    /// The lowest and highest cosine tool `doc` can have.
    pub fn range(&self, doc: usize) -> (f32, f32) {
        let (estimate, bound) = self
            .estimates
            .get(doc)
            .copied()
            .unwrap_or((0.0, f32::INFINITY));
        (estimate - bound, estimate + bound)
    }
}

/// The `depth` allowed tools with the highest exact score, best first.
///
/// `rows` lists each segment's vectors with the global id of its first tool,
/// in order; `adjust` turns a tool's cosine into its score (`x ↦ (x + a)/b`
/// with `b ≥ 1`: increasing, so a bound on the cosine bounds the score).
pub(crate) fn nearest(
    query: &DenseQuery,
    rows: &[(usize, &Vectors)],
    depth: usize,
    allowed: impl Fn(usize) -> bool,
    adjust: impl Fn(usize, f32) -> f32,
) -> Nearest {
    let count = rows.last().map_or(0, |(start, v)| start + v.len());
    let mut estimates = vec![(0.0, f32::INFINITY); count];
    // Estimates first, keeping the best `keep` of them; all are remembered with
    // their bounds for the check below.
    let keep = (depth * 4).max(64);
    let mut best: Vec<Scored> = Vec::with_capacity(keep * 2 + 1);
    let mut floor = f32::NEG_INFINITY;
    let mut products = Vec::new();
    for &(start, vectors) in rows {
        query.products(vectors, &mut products);
        for (local, &product) in products.iter().enumerate() {
            let doc = start + local;
            if !allowed(doc) {
                continue;
            }
            let (cosine, bound) = query.estimate(vectors, local, product);
            estimates[doc] = (cosine, bound);
            let estimate = adjust(doc, cosine);
            if depth > 0 && (estimate > floor || best.len() < keep) {
                best.push(Scored {
                    doc,
                    score: estimate,
                });
                if best.len() > keep * 2 {
                    best.select_nth_unstable_by(keep - 1, best_first);
                    best.truncate(keep);
                    floor = best.iter().map(|s| s.score).fold(f32::INFINITY, f32::min);
                }
            }
        }
    }
    if depth == 0 {
        return Nearest {
            best: Vec::new(),
            estimates,
        };
    }
    let locate = |doc: usize| -> &[f32] {
        let at = rows.partition_point(|(start, _)| *start <= doc) - 1;
        let (start, vectors) = rows[at];
        vectors.row(doc - start)
    };
    let exact = |doc: usize| adjust(doc, query.cosine(locate(doc)));
    let mut scored: Vec<Scored> = best
        .iter()
        .map(|s| Scored {
            doc: s.doc,
            score: exact(s.doc),
        })
        .collect();
    scored.sort_by(best_first);
    // The exact score the last of the `depth` best has so far: any tool whose
    // estimate plus its bound reaches it must be scored exactly too.
    let cut = scored.get(depth - 1).map_or(f32::NEG_INFINITY, |s| s.score);
    let rescored: std::collections::HashSet<usize> = scored.iter().map(|s| s.doc).collect();
    for (doc, &(cosine, bound)) in estimates.iter().enumerate() {
        if bound.is_finite() && adjust(doc, cosine + bound) >= cut && !rescored.contains(&doc) {
            scored.push(Scored {
                doc,
                score: exact(doc),
            });
        }
    }
    scored.sort_by(best_first);
    scored.truncate(depth);
    Nearest {
        best: scored,
        estimates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Unit vectors from a fixed xorshift sequence.
    fn unit_rows(count: usize, dim: usize, seed: u64) -> Vec<f32> {
        let mut state = seed.max(1);
        let mut data = Vec::with_capacity(count * dim);
        for _ in 0..count {
            let row: Vec<f32> = (0..dim)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            data.extend(row.iter().map(|x| x / norm));
        }
        data
    }

    fn brute_force(
        query: &DenseQuery,
        vectors: &Vectors,
        depth: usize,
        allowed: impl Fn(usize) -> bool,
    ) -> Vec<Scored> {
        let mut all: Vec<Scored> = (0..vectors.len())
            .filter(|&d| allowed(d))
            .map(|doc| Scored {
                doc,
                score: query.cosine(vectors.row(doc)),
            })
            .collect();
        all.sort_by(best_first);
        all.truncate(depth);
        all
    }

    #[test]
    fn the_bound_holds_for_every_row() {
        let dim = 384;
        let vectors = Vectors::new(dim, unit_rows(500, dim, 3));
        let query = DenseQuery::new(&unit_rows(1, dim, 99)).expect("query");
        let mut products = Vec::new();
        query.products(&vectors, &mut products);
        for (doc, &product) in products.iter().enumerate() {
            let (estimate, bound) = query.estimate(&vectors, doc, product);
            let exact = query.cosine(vectors.row(doc));
            assert!(
                (estimate - exact).abs() <= bound,
                "row {doc}: estimate {estimate}, exact {exact}, bound {bound}"
            );
        }
    }

    #[test]
    fn nearest_equals_brute_force() {
        let dim = 384;
        // Near-duplicates make the estimates tie and cross: the exact pass must sort them.
        let mut data = unit_rows(3000, dim, 5);
        let copy: Vec<f32> = data[..dim * 50].to_vec();
        data.extend(
            copy.iter()
                .enumerate()
                .map(|(i, x)| x + (i % 7) as f32 * 1e-5),
        );
        let vectors = Vectors::new(
            dim,
            data.chunks_exact(dim)
                .flat_map(|r| {
                    let n = r.iter().map(|x| x * x).sum::<f32>().sqrt();
                    r.iter().map(move |x| x / n)
                })
                .collect(),
        );
        for seed in [7u64, 8, 9] {
            // A query near a stored row, so the best matches are close together.
            let mut q = vectors.row(seed as usize * 3).to_vec();
            q.iter_mut()
                .zip(unit_rows(1, dim, seed))
                .for_each(|(a, b)| *a += 0.3 * b);
            let query = DenseQuery::new(&q).expect("query");
            for (depth, allowed) in [(1usize, None), (20, None), (200, None), (20, Some(3usize))] {
                let is_allowed = |d: usize| allowed.is_none_or(|m| d.is_multiple_of(m));
                let got = nearest(&query, &[(0, &vectors)], depth, is_allowed, |_, c| c).best;
                let want = brute_force(&query, &vectors, depth, is_allowed);
                assert_eq!(got, want, "seed {seed}, depth {depth}, allowed {allowed:?}");
            }
        }
    }

    #[test]
    fn segments_and_adjusted_scores() {
        let dim = 16;
        let a = Vectors::new(dim, unit_rows(40, dim, 1));
        let b = Vectors::new(dim, unit_rows(30, dim, 2));
        let query = DenseQuery::new(&unit_rows(1, dim, 77)).expect("query");
        // Documents 40.. score higher by a server term, as `server_dense` does.
        let adjust = |doc: usize, c: f32| (c + if doc >= 40 { 0.5 } else { 0.0 }) / 1.5;
        let got = nearest(&query, &[(0, &a), (40, &b)], 10, |_| true, adjust).best;
        let mut want: Vec<Scored> = (0..70)
            .map(|doc| {
                let row = if doc < 40 {
                    a.row(doc)
                } else {
                    b.row(doc - 40)
                };
                Scored {
                    doc,
                    score: adjust(doc, query.cosine(row)),
                }
            })
            .collect();
        want.sort_by(best_first);
        want.truncate(10);
        assert_eq!(got, want);
    }

    #[test]
    fn degenerate_queries_have_no_dense_signal() {
        assert!(DenseQuery::new(&[0.0, 0.0]).is_none());
        assert!(DenseQuery::new(&[f32::NAN, 1.0]).is_none());
        assert!(DenseQuery::new(&[]).is_none());
    }
}
