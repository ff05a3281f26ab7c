//! IEEE 754 half precision (binary16): rounding single precision to it, and
//! widening it back, exactly (the kernels of [`crate::linear`] widen with the
//! CPU's instructions, AVX-512F or F16C, and are tested against this).

/// The largest finite half-precision value.
pub const MAX: f32 = 65_504.0;

/// `value` rounded to the nearest half-precision value (ties to even);
/// beyond [`MAX`] it becomes an infinity, NaN stays NaN.
pub fn from_f32(value: f32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x007f_ffff;
    if exponent == 0xff {
        // Infinity, or NaN (kept quiet and non-zero).
        return sign | 0x7c00 | if mantissa == 0 { 0 } else { 0x200 };
    }
    // The exponent as half precision biases it.
    let half_exponent = exponent - 127 + 15;
    if half_exponent >= 0x1f {
        return sign | 0x7c00;
    }
    if half_exponent <= 0 {
        // Subnormal or zero: the value is m × 2⁻²⁴ with the implicit bit
        // made explicit, shifted right by what the exponent lacks.
        if half_exponent < -10 {
            return sign;
        }
        let full = mantissa | 0x0080_0000;
        let shift = (14 - half_exponent) as u32;
        return sign | round_shift(full, shift) as u16;
    }
    // Normal: a carry out of the mantissa moves into the exponent, which is
    // the right result (up to infinity).
    let rounded = round_shift(mantissa, 13);
    sign | (((half_exponent as u32) << 10) + rounded) as u16
}

/// `value >> shift`, rounded to nearest with ties to even.
fn round_shift(value: u32, shift: u32) -> u32 {
    let kept = value >> shift;
    let rest = value & ((1 << shift) - 1);
    let half = 1 << (shift - 1);
    if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    }
}

/// The half-precision value `h` as single precision, exactly (subnormals,
/// infinities and NaN included).
pub fn to_f32(h: u16) -> f32 {
    let sign = u32::from(h >> 15) << 31;
    let exponent = u32::from((h >> 10) & 0x1f);
    let mantissa = u32::from(h & 0x3ff);
    let bits = match (exponent, mantissa) {
        (0, 0) => sign,
        (0, m) => {
            // Subnormal: value = m × 2⁻²⁴.
            let value = m as f32 * f32::from_bits(0x3380_0000);
            return if sign == 0 { value } else { -value };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 112) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// `to` = `from` widened, one value at a time.
pub(crate) fn widen_portable(from: &[u16], to: &mut [f32]) {
    for (t, &f) in to.iter_mut().zip(from) {
        *t = to_f32(f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_as_ieee_says() {
        for (value, bits) in [
            (0.0f32, 0x0000u16),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (-2.0, 0xc000),
            (65_504.0, 0x7bff),
            (65_520.0, 0x7c00),
            (f32::INFINITY, 0x7c00),
            (f32::NEG_INFINITY, 0xfc00),
            (6.103_515_6e-5, 0x0400),
            (5.960_464_5e-8, 0x0001),
            (2.980_232_2e-8, 0x0000),
            (2.980_233e-8, 0x0001),
            // 1 + 2⁻¹¹ is a tie between 1 and 1 + 2⁻¹⁰: even wins.
            (1.000_488_3, 0x3c00),
            (1.001_464_8, 0x3c02),
            (0.333_333_34, 0x3555),
        ] {
            assert_eq!(from_f32(value), bits, "{value}");
        }
        assert!(to_f32(from_f32(f32::NAN)).is_nan());
    }

    #[test]
    fn every_half_value_survives_a_round_trip() {
        for bits in 0..=u16::MAX {
            let value = to_f32(bits);
            if value.is_nan() {
                continue;
            }
            assert_eq!(from_f32(value), bits, "{bits:#06x}");
        }
    }

    #[test]
    fn rounding_is_within_half_a_unit() {
        let mut value = 1.0e-4f32;
        while value < 60_000.0 {
            let back = to_f32(from_f32(value));
            assert!(
                (back - value).abs() <= value * 2f32.powi(-11),
                "{value} came back as {back}"
            );
            value *= 1.013_7;
        }
    }
}
