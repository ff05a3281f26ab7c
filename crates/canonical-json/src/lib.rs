//! One canonical JSON text per value: object keys sorted, no whitespace, integral numbers
//! below 2^53 written as integers. The one owner of that form in BotCraft: the approval ids
//! (`inference`) use it, and so does every "did it change" hash ([`Fingerprint`]: a server's
//! tool list, a bot's toolset, a search catalog).

use serde_json::Value;

mod fingerprint;

pub use fingerprint::{Fingerprint, fingerprint};

/// `value` as canonical JSON text.
pub fn to_string(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Append `value`'s canonical JSON text to `out`.
pub fn write(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, inner)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write(inner, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Number(number) => match number.as_f64() {
            Some(float)
                if number.is_f64()
                    && float.fract() == 0.0
                    && float.abs() < 9.007_199_254_740_992e15 =>
            {
                // Below 2^53 the value is exact as an integer.
                out.push_str(&(float as i64).to_string());
            }
            _ => out.push_str(&number.to_string()),
        },
        Value::String(text) => write_string(text, out),
        scalar => out.push_str(&scalar.to_string()),
    }
}

fn write_string(text: &str, out: &mut String) {
    // serde_json's escaping of a string cannot fail.
    out.push_str(&serde_json::to_string(text).unwrap_or_default());
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn keys_sorted_no_whitespace_integral_numbers_as_integers() {
        let cases = [
            (
                json!({"b": 1, "a": [2.0, 2.5, {"d": null, "c": "x"}]}),
                r#"{"a":[2,2.5,{"c":"x","d":null}],"b":1}"#,
            ),
            (json!("é\n\"q\""), r#""é\n\"q\"""#),
            (json!({"é": 1, "z": 2, "A": 3}), r#"{"A":3,"z":2,"é":1}"#),
            (json!(-0.0), "0"),
            (json!(1e300), "1e+300"),
            (json!(9_007_199_254_740_993_u64), "9007199254740993"),
            (json!(0.5), "0.5"),
            (json!([true, false, null]), "[true,false,null]"),
            (json!({}), "{}"),
        ];
        for (value, expected) in cases {
            assert_eq!(to_string(&value), expected, "{value}");
        }
    }

    #[test]
    fn the_same_value_written_two_ways_has_one_text() -> serde_json::Result<()> {
        let a: Value = serde_json::from_str(r#"{ "x": 1.0, "y": {"b": [1], "a": 2} }"#)?;
        let b: Value = serde_json::from_str(r#"{"y":{"a":2.0,"b":[1.0]},"x":1}"#)?;
        assert_eq!(to_string(&a), to_string(&b));
        Ok(())
    }
}
