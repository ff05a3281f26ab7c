//! Tool definitions as the model sees them, and the normalisation of their
//! JSON schemas. Owns [`ToolDefinition`] and [`normalize_schema`].
//!
//! MCP servers and `schemars` emit schemas with keys providers reject or
//! misread (`$schema`, `$id`, a missing top-level `type`). Every definition
//! goes through [`normalize_schema`] before it reaches a provider.
//!
//! A server's definitions are its own to write, so they are bounded here, where every
//! definition a provider sees is made: a description of more than
//! [`MAX_DESCRIPTION_BYTES`] is cut (and says so), and a schema whose JSON passes
//! [`MAX_SCHEMA_BYTES`] is left out (the tool is offered with an empty object schema, and its
//! description says why). One server cannot make every request of a bot huge, or make a
//! provider refuse it. A description loses the characters that hide text from a person
//! reading the conversation (tags, zero-width and bidi controls: `observability::shown`),
//! and so does each `description` and `title` in its schema, so what the model reads is
//! what can be seen.

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

/// Longest description offered to a model, in bytes (longer ones are cut).
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;

/// Largest input schema offered to a model, as JSON bytes (a larger one is left out).
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;

impl ToolDefinition {
    /// A definition whose schema is normalised on the way in, and whose description and
    /// schema are bounded ([`MAX_DESCRIPTION_BYTES`], [`MAX_SCHEMA_BYTES`]).
    pub fn new(name: impl Into<String>, description: impl Into<String>, schema: Value) -> Self {
        // What the model reads is what a person reading the conversation sees: no tag,
        // zero-width or bidi characters carrying hidden instructions.
        let mut description = observability::shown::visible_owned(description.into());
        if description.len() > MAX_DESCRIPTION_BYTES {
            let total = description.len();
            let mut end = MAX_DESCRIPTION_BYTES;
            while !description.is_char_boundary(end) {
                end -= 1;
            }
            description.truncate(end);
            description.push_str(&format!(
                " [… cut by BotCraft: the description has {total} bytes; the first {end} are shown]"
            ));
        }
        let mut input_schema = normalize_schema(schema);
        let size = serde_json::to_vec(&input_schema).map_or(usize::MAX, |json| json.len());
        if size > MAX_SCHEMA_BYTES {
            input_schema = normalize_schema(Value::Null);
            description.push_str(&format!(
                "\n\n[BotCraft left this tool's input schema out: it has {size} bytes of JSON, more than {MAX_SCHEMA_BYTES}. Give the arguments its description names.]"
            ));
        }
        Self {
            name: name.into(),
            description,
            input_schema,
        }
    }
}

/// Keys dropped at every level: meta-schema markers mean nothing to a model
/// and several providers refuse them.
const DROPPED_KEYS: [&str; 3] = ["$schema", "$id", "$comment"];

/// Makes a tool input schema acceptable to every provider:
/// - drops `$schema`, `$id` and `$comment` at every level;
/// - a `description`, `title` or `markdownDescription` of the schema or of any schema in
///   it loses its hidden characters (as the tool's description does); enum values,
///   defaults, constants, examples and property names keep what the server wrote, since
///   changing them would change what the tool accepts;
/// - a missing or non-object schema, or one whose top-level `type` is not `"object"` (every
///   provider refuses a tool whose input is not an object), becomes
///   `{"type": "object", "properties": {}}`; a `type` list naming `"object"`
///   (`["object", "null"]`) becomes `"object"`, the rest kept;
/// - the top level gets `"type": "object"` and `"properties": {}` when absent
///   (OpenAI refuses an object schema without `properties`).
///
/// Everything else (descriptions, defaults, enums, `$defs`/`$ref`) is kept.
pub fn normalize_schema(schema: Value) -> Value {
    let mut top = match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    strip_keys(&mut top, true);
    let object = Value::String("object".to_owned());
    match top.get("type") {
        None => {}
        Some(kind) if *kind == object => {}
        Some(Value::Array(kinds)) if kinds.contains(&object) => {
            top.insert("type".to_owned(), object.clone());
        }
        Some(_) => top = Map::new(),
    }
    top.entry("type").or_insert(object);
    if top.get("type") == Some(&Value::String("object".to_owned())) {
        top.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    Value::Object(top)
}

/// Keys whose text is prose for the model, shown without hidden characters at every level
/// of the schema (what a property is for is read as much as the tool's description is).
const PROSE_KEYS: [&str; 3] = ["description", "title", "markdownDescription"];

/// Keywords whose value is data (what the tool accepts, or an example of it), not a schema:
/// their text is kept as the server wrote it.
const DATA_KEYS: [&str; 4] = ["default", "enum", "const", "examples"];

/// Keywords whose value maps names to schemas (a property named `description` is a schema,
/// not prose).
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// `map` with the dropped keys gone at every level; a schema's (`schema` true) prose keys
/// also lose their hidden characters, and so do those of the schemas it holds.
fn strip_keys(map: &mut Map<String, Value>, schema: bool) {
    for key in DROPPED_KEYS {
        map.remove(key);
    }
    if schema {
        for key in PROSE_KEYS {
            if let Some(Value::String(text)) = map.get_mut(key) {
                *text = observability::shown::visible_owned(std::mem::take(text));
            }
        }
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        match value {
            Value::Object(named) if schema && NAMED_SCHEMAS.contains(&key) => {
                for held in named.values_mut() {
                    strip_value(held, true);
                }
            }
            _ => strip_value(value, schema && !DATA_KEYS.contains(&key)),
        }
    }
}

fn strip_value(value: &mut Value, schema: bool) {
    match value {
        Value::Object(map) => strip_keys(map, schema),
        Value::Array(items) => items.iter_mut().for_each(|item| strip_value(item, schema)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// A description's hidden text (tag characters spelling an instruction) is not offered
    /// to the model; the visible text is.
    #[test]
    fn a_description_offers_no_hidden_text() {
        // "rm" in tag characters, after a zero-width space.
        let tool = ToolDefinition::new(
            "fs__read",
            "Reads\u{200B} a file.\u{E0072}\u{E006D}",
            serde_json::json!({"type": "object"}),
        );
        assert_eq!(tool.description, "Reads a file.");
        // Nothing hidden: the description is offered as it came.
        let plain = ToolDefinition::new("fs__read", "Reads a file.", json!({"type": "object"}));
        assert_eq!(plain.description, "Reads a file.");
        // The same in the schema's prose, at any depth (a property named `description` is a
        // schema); what the tool accepts is kept, a default object's keys included.
        let hidden = "\u{E0072}\u{E006D}";
        let tool = ToolDefinition::new(
            "fs__read",
            "Reads a file.",
            json!({"type": "object", "title": format!("Read{hidden}"), "properties": {
                "path": {"type": "string", "description": format!("The path.\u{200B}{hidden}")},
                "mode": {"type": "object", "properties": {"kind": {
                    "type": "string", "title": format!("Kind{hidden}"),
                    "enum": [format!("a{hidden}")], "default": format!("a{hidden}")}}},
                "description": {"type": "string", "markdownDescription": format!("Text{hidden}")},
                "options": {"type": "object",
                    "default": {"description": format!("kept{hidden}")}},
                format!("named{hidden}"): {"type": "string"}
            }, "$defs": {"id": {"description": format!("An id{hidden}")}}}),
        );
        assert_eq!(
            tool.input_schema,
            json!({"type": "object", "title": "Read", "properties": {
                "path": {"type": "string", "description": "The path."},
                "mode": {"type": "object", "properties": {"kind": {
                    "type": "string", "title": "Kind",
                    "enum": [format!("a{hidden}")], "default": format!("a{hidden}")}}},
                "description": {"type": "string", "markdownDescription": "Text"},
                "options": {"type": "object",
                    "default": {"description": format!("kept{hidden}")}},
                format!("named{hidden}"): {"type": "string"}
            }, "$defs": {"id": {"description": "An id"}}})
        );
    }

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
            (
                "a top level that is not an object becomes an empty object schema",
                json!({"type": "string", "maxLength": 3}),
                json!({"type": "object", "properties": {}}),
            ),
            (
                "a top-level type list naming object is an object",
                json!({"type": ["object", "null"], "properties": {"x": {}}}),
                json!({"type": "object", "properties": {"x": {}}}),
            ),
            (
                "a top-level type list without object is not",
                json!({"type": ["string", "null"], "maxLength": 3}),
                json!({"type": "object", "properties": {}}),
            ),
        ];
        for (name, input, expected) in cases {
            assert_eq!(normalize_schema(input), expected, "{name}");
        }
    }

    #[test]
    fn a_servers_definition_is_bounded() {
        let small = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        let kept = ToolDefinition::new("t", "short", small.clone());
        assert_eq!(
            (kept.description.as_str(), &kept.input_schema),
            ("short", &small)
        );

        // "é" is two bytes: the cut never splits a character.
        let long = format!("a{}", "é".repeat(MAX_DESCRIPTION_BYTES));
        let cut = ToolDefinition::new("t", long.clone(), small.clone());
        let shown = MAX_DESCRIPTION_BYTES - 1;
        assert_eq!(
            cut.description,
            format!(
                "{} [… cut by BotCraft: the description has {} bytes; the first {shown} are shown]",
                &long[..shown],
                long.len()
            )
        );

        let properties: serde_json::Map<String, Value> = (0..MAX_SCHEMA_BYTES / 16)
            .map(|i| (format!("p{i:05}"), json!({"type": "string"})))
            .collect();
        let huge = json!({"type": "object", "properties": properties});
        let size = serde_json::to_vec(&huge).expect("json").len();
        assert!(size > MAX_SCHEMA_BYTES, "{size}");
        let left_out = ToolDefinition::new("t", "d", huge);
        assert_eq!(
            left_out.input_schema,
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            left_out.description,
            format!(
                "d\n\n[BotCraft left this tool's input schema out: it has {size} bytes of JSON, more than {MAX_SCHEMA_BYTES}. Give the arguments its description names.]"
            )
        );
    }
}
