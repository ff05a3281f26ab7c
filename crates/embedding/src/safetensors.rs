//! Reading tensors from a `.safetensors` file: an 8-byte little-endian
//! header length, a JSON header naming each tensor's dtype, shape and byte
//! range, then the raw data. Every tensor comes out as `f32` (F16 and BF16
//! are widened); a header that does not fit the file is refused.

use std::collections::HashMap;

use serde::Deserialize;

/// Why a weights file cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WeightsError {
    #[error("the file is shorter than its header says")]
    Truncated,
    #[error("the header is not valid JSON: {0}")]
    Header(String),
    #[error("tensor {name}: {reason}")]
    Tensor { name: String, reason: String },
    #[error("tensor {0} is missing")]
    Missing(String),
}

#[derive(Debug, Deserialize)]
struct Entry {
    dtype: String,
    shape: Vec<usize>,
    data_offsets: [usize; 2],
}

/// The tensors of one file, as `f32`.
#[derive(Debug)]
pub(crate) struct Tensors {
    tensors: HashMap<String, (Vec<usize>, Vec<f32>)>,
}

impl Tensors {
    pub fn parse(bytes: &[u8]) -> Result<Self, WeightsError> {
        let len_bytes: [u8; 8] = bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .ok_or(WeightsError::Truncated)?;
        let header_len =
            usize::try_from(u64::from_le_bytes(len_bytes)).map_err(|_| WeightsError::Truncated)?;
        let header_end = 8usize
            .checked_add(header_len)
            .filter(|&end| end <= bytes.len())
            .ok_or(WeightsError::Truncated)?;
        let header: HashMap<String, serde_json::Value> =
            serde_json::from_slice(&bytes[8..header_end])
                .map_err(|e| WeightsError::Header(e.to_string()))?;
        let data = &bytes[header_end..];
        let mut tensors = HashMap::with_capacity(header.len());
        for (name, value) in header {
            if name == "__metadata__" {
                continue;
            }
            let bad = |reason: String| WeightsError::Tensor {
                name: name.clone(),
                reason,
            };
            let entry: Entry = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
            let [start, end] = entry.data_offsets;
            let raw = data
                .get(start..end)
                .filter(|_| start <= end)
                .ok_or_else(|| bad(format!("bytes {start}..{end} are outside the file")))?;
            let count = entry
                .shape
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(d))
                .ok_or_else(|| bad("its shape overflows".into()))?;
            let width = match entry.dtype.as_str() {
                "F32" => 4,
                "F16" | "BF16" => 2,
                // Integer tensors (such as BERT's `position_ids`) are not weights.
                "I64" | "I32" | "U8" | "I8" | "BOOL" => continue,
                other => return Err(bad(format!("dtype {other} is not supported"))),
            };
            if count.checked_mul(width) != Some(raw.len()) {
                return Err(bad(format!(
                    "{} bytes for {count} values of {}",
                    raw.len(),
                    entry.dtype
                )));
            }
            let values: Vec<f32> = match entry.dtype.as_str() {
                "F32" => raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect(),
                "BF16" => raw
                    .chunks_exact(2)
                    .map(|c| f32::from_bits(u32::from(u16::from_le_bytes([c[0], c[1]])) << 16))
                    .collect(),
                _ => raw
                    .chunks_exact(2)
                    .map(|c| simd::half::to_f32(u16::from_le_bytes([c[0], c[1]])))
                    .collect(),
            };
            tensors.insert(name, (entry.shape, values));
        }
        Ok(Self { tensors })
    }

    /// The tensor `name`, checked to have `shape`; moved out of the set.
    pub fn take(&mut self, name: &str, shape: &[usize]) -> Result<Vec<f32>, WeightsError> {
        let (got, values) = self
            .tensors
            .remove(name)
            .ok_or_else(|| WeightsError::Missing(name.to_owned()))?;
        if got != shape {
            return Err(WeightsError::Tensor {
                name: name.to_owned(),
                reason: format!("shape {got:?}, expected {shape:?}"),
            });
        }
        Ok(values)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.tensors.contains_key(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(header: &str, data: &[u8]) -> Vec<u8> {
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header.as_bytes());
        bytes.extend_from_slice(data);
        bytes
    }

    #[test]
    fn reads_f32_f16_and_bf16_and_skips_integer_tensors() {
        let mut data = Vec::new();
        for v in [1.5f32, -2.0] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        data.extend_from_slice(&0x3c00u16.to_le_bytes()); // f16 1.0
        data.extend_from_slice(&0xc000u16.to_le_bytes()); // f16 -2.0
        data.extend_from_slice(&0x0001u16.to_le_bytes()); // f16 smallest subnormal
        data.extend_from_slice(&0x3fc0u16.to_le_bytes()); // bf16 1.5
        data.extend_from_slice(&7i64.to_le_bytes());
        let header = r#"{"__metadata__":{"format":"pt"},
            "a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},
            "h":{"dtype":"F16","shape":[3],"data_offsets":[8,14]},
            "b":{"dtype":"BF16","shape":[1,1],"data_offsets":[14,16]},
            "ids":{"dtype":"I64","shape":[1],"data_offsets":[16,24]}}"#;
        let mut t = Tensors::parse(&file(header, &data)).expect("parses");
        assert_eq!(t.take("a", &[2]), Ok(vec![1.5, -2.0]));
        assert_eq!(t.take("h", &[3]), Ok(vec![1.0, -2.0, 2f32.powi(-24)]));
        assert_eq!(t.take("b", &[1, 1]), Ok(vec![1.5]));
        assert!(!t.contains("ids"));
        assert_eq!(t.take("a", &[2]), Err(WeightsError::Missing("a".into())));
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let cases: [(&[u8], &str); 4] = [
            (b"\x05", "truncated length"),
            (b"\xff\0\0\0\0\0\0\0{}", "header longer than the file"),
            (b"\x02\0\0\0\0\0\0\0{x", "bad JSON"),
            (b"\x02\0\0\0\0\0\0\0{}", "empty but valid"),
        ];
        let results: Vec<bool> = cases
            .iter()
            .map(|(bytes, _)| Tensors::parse(bytes).is_ok())
            .collect();
        assert_eq!(results, vec![false, false, false, true]);
        let outside = file(
            r#"{"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
            &[0; 8],
        );
        assert!(matches!(
            Tensors::parse(&outside),
            Err(WeightsError::Tensor { .. })
        ));
        let wrong_size = file(
            r#"{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}"#,
            &[0; 8],
        );
        assert!(matches!(
            Tensors::parse(&wrong_size),
            Err(WeightsError::Tensor { .. })
        ));
        let mut t = Tensors::parse(&file(
            r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}"#,
            &[0; 8],
        ))
        .expect("parses");
        assert!(matches!(
            t.take("a", &[1, 2]),
            Err(WeightsError::Tensor { .. })
        ));
    }
}
