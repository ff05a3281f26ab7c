//! Tool definitions as the model sees them, and the normalisation of their
//! JSON schemas. Owns [`ToolDefinition`] and [`normalize_schema`].
//!
//! MCP servers and `schemars` emit schemas with keys providers reject or
//! misread (`$schema`, `$id`, a missing top-level `type`). Every definition
//! goes through [`normalize_schema`] before it reaches a provider.

use serde_json::{Map, Value};

/// A tool offered to the model for one step.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDefinition {
    /// The name the model calls (qualified for MCP tools: `server__tool`).
    pub name: String,
    pub description: String,
    /// JSON schema of the input object, already normalised.
    pub input_schema: Value,
}

impl ToolDefinition {
    /// A definition whose schema is normalised on the way in.
    pub fn new(name: impl Into<String>, description: impl Into<String>, schema: Value) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            input_schema: normalize_schema(schema),
        }
    }
}

/// Keys dropped at every level: meta-schema markers mean nothing to a model
/// and several providers refuse them.
const DROPPED_KEYS: [&str; 3] = ["$schema", "$id", "$comment"];

/// Makes a tool input schema acceptable to every provider:
/// - drops `$schema`, `$id` and `$comment` at every level;
/// - a missing or non-object schema becomes `{"type": "object", "properties": {}}`;
/// - the top level gets `"type": "object"` and `"properties": {}` when absent
///   (OpenAI refuses an object schema without `properties`).
///
/// Everything else (descriptions, defaults, enums, `$defs`/`$ref`) is kept.
pub fn normalize_schema(schema: Value) -> Value {
    let mut top = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    strip_keys(&mut top);
    top.entry("type")
        .or_insert_with(|| Value::String("object".to_owned()));
    if top.get("type") == Some(&Value::String("object".to_owned())) {
        top.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Value::Object(top)
}

fn strip_keys(map: &mut Map<String, Value>) {
    for key in DROPPED_KEYS {
        map.remove(key);
    }
    for value in map.values_mut() {
        strip_value(value);
    }
}

fn strip_value(value: &mut Value) {
    match value {
        Value::Object(map) => strip_keys(map),
        Value::Array(items) => items.iter_mut().for_each(strip_value),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn normalize_schema_cases() {
        let cases = [
            (
                "schemars output loses $schema, keeps defaults",
                json!({
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "title": "RunParams",
                    "type": "object",
                    "properties": {"command": {"type": "string", "default": "ls"}},
                    "required": ["command"]
                }),
                json!({
                    "title": "RunParams",
                    "type": "object",
                    "properties": {"command": {"type": "string", "default": "ls"}},
                    "required": ["command"]
                }),
            ),
            (
                "nested markers are dropped too",
                json!({
                    "type": "object",
                    "properties": {"a": {"$id": "x", "anyOf": [{"$comment": "c", "type": "string"}]}}
                }),
                json!({
                    "type": "object",
                    "properties": {"a": {"anyOf": [{"type": "string"}]}}
                }),
            ),
            (
                "empty object gets type and properties",
                json!({}),
                json!({"type": "object", "properties": {}}),
            ),
            (
                "null becomes an empty object schema",
                Value::Null,
                json!({"type": "object", "properties": {}}),
            ),
            (
                "existing properties are kept as they are",
                json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
                json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            ),
        ];
        for (name, input, expected) in cases {
            assert_eq!(normalize_schema(input), expected, "{name}");
        }
    }
}
