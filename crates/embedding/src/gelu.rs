//! BERT's activation, `gelu(x) = x · Φ(x) = ½ x (1 + erf(x / √2))`, and the
//! softmax's `exp` of attention scores (all `≤ 0` once the largest is
//! subtracted), with an
//! `erf` written so a loop over a layer's values runs in vector lanes: no
//! branches and no calls, Abramowitz and Stegun's formula 7.1.26 (absolute
//! error below 1.5 × 10⁻⁷ in exact arithmetic, 4.2 × 10⁻⁷ measured in single
//! precision: a few units in the last place; the weights' half precision
//! moves the layer's values a thousand times more) over an `exp` of our own (range reduction to `|r| ≤ ln 2 / 2` and a
//! degree-7 Taylor polynomial).

/// `gelu` of every value, in place.
pub(crate) fn gelu_in_place(values: &mut [f32]) {
    for v in values {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The error function, to an absolute error below 5 × 10⁻⁷.
#[inline(always)]
fn erf(x: f32) -> f32 {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_72,
        1.421_413_8,
        -1.453_152_1,
        1.061_405_4,
    ];
    let a = x.abs();
    // Plain products and sums, not `mul_add`: without the FMA instructions
    // in the build's baseline that is a call per operation, and no lanes.
    let t = 1.0 / (P * a + 1.0);
    let poly = t * ((((A[4] * t + A[3]) * t + A[2]) * t + A[1]) * t + A[0]);
    let y = 1.0 - poly * exp_nonpositive(-a * a);
    y.copysign(x)
}

/// `e^y` for `y ≤ 0`, relative error about one unit in the last place;
/// below `-87` (where `e^y` nears single precision's smallest normal value)
/// it returns zero, and for NaN `e^-87`.
#[inline(always)]
pub(crate) fn exp_nonpositive(y: f32) -> f32 {
    const LOG2_E: f32 = std::f32::consts::LOG2_E;
    // ln 2 in two parts, so `n · ln 2` is subtracted without rounding.
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    // Adding and subtracting 1.5 · 2²³ rounds to the nearest integer.
    const ROUND: f32 = 12_582_912.0;
    let clamped = y.max(-87.0);
    let n = (clamped * LOG2_E + ROUND) - ROUND;
    // n · LN2_HI is exact (LN2_HI has few bits and |n| ≤ 126).
    let r = (clamped - n * LN2_HI) - n * LN2_LO;
    let mut p: f32 = 1.0 / 5040.0;
    for c in [
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // 2ⁿ from its bits; n ≥ -126 here, a normal exponent.
    let scale = f32::from_bits(((n as i32 + 127) as u32) << 23);
    let value = p * scale;
    if y < -87.0 { 0.0 } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_is_within_its_bound_of_the_exact_one() {
        let mut worst = 0f64;
        let mut x = -6.0f32;
        while x <= 6.0 {
            let exact = libm::erf(f64::from(x));
            worst = worst.max((f64::from(erf(x)) - exact).abs());
            x += 1.0 / 1024.0;
        }
        assert!(worst < 5.0e-7, "worst absolute error {worst:e}");
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
    }

    #[test]
    fn exp_is_within_two_units_in_the_last_place() {
        let mut y = -87.0f32;
        while y <= 0.0 {
            let exact = f64::from(y).exp();
            let relative = ((f64::from(exp_nonpositive(y)) - exact) / exact).abs();
            assert!(relative < 2.5e-7, "e^{y}: relative error {relative:e}");
            y += 1.0 / 256.0;
        }
        assert_eq!(exp_nonpositive(-100.0), 0.0);
        assert_eq!(exp_nonpositive(0.0), 1.0);
    }

    #[test]
    fn gelu_matches_the_definition() {
        let mut values: Vec<f32> = (-800..=800).map(|i| i as f32 / 100.0).collect();
        let exact: Vec<f64> = values
            .iter()
            .map(|&x| {
                let x = f64::from(x);
                0.5 * x * (1.0 + libm::erf(x / std::f64::consts::SQRT_2))
            })
            .collect();
        gelu_in_place(&mut values);
        for (got, want) in values.iter().zip(&exact) {
            assert!(
                (f64::from(*got) - want).abs() <= 1e-6 * (1.0 + want.abs()),
                "{got} against {want}"
            );
        }
    }
}
