//! Searchable tool documents, built from MCP tool definitions.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One parameter of a tool's input schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamDoc {
    pub name: String,
    /// The JSON Schema type (`string`, `number`, `array`, …) or `any`.
    pub kind: String,
    pub required: bool,
    pub description: String,
}

/// A tool as the index sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDoc {
    /// The MCP server that offers the tool.
    pub server: String,
    /// The tool's raw name on that server.
    pub name: String,
    pub description: String,
    pub parameters: Vec<ParamDoc>,
    /// The server's `instructions`, searched as low-weight context.
    #[serde(default)]
    pub server_context: String,
    /// The name the model calls the tool by (`server__tool`, as the catalog names it), when
    /// the catalog gives one: the text that names this tool above all others (tier 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qualified: Option<String>,
}

impl ToolDoc {
    /// Build from an MCP `Tool` JSON object (`name`, `description`,
    /// `inputSchema`). Parameters come from the schema's top-level
    /// `properties`: required ones first, each group by name. A server's text
    /// is untrusted and may be megabytes: a description is cut at
    /// [`MAX_DESCRIPTION_CHARS`], a parameter's at [`MAX_PARAMETER_CHARS`], and
    /// at most [`MAX_PARAMETERS`] parameters are kept (required ones first).
    pub fn from_mcp(server: &str, tool: &Value, server_context: &str) -> Self {
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_owned();
        let cut = |v: Option<&Value>, max: usize| {
            prefix(v.and_then(Value::as_str).unwrap_or_default(), max).to_owned()
        };
        let schema = tool.get("inputSchema");
        let required: HashSet<&str> = schema
            .and_then(|s| s.get("required"))
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let parameters = schema
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, property)| ParamDoc {
                        name: prefix(name, MAX_PARAMETER_CHARS).to_owned(),
                        kind: schema_kind(property),
                        required: required.contains(name.as_str()),
                        description: cut(property.get("description"), MAX_PARAMETER_CHARS),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut parameters: Vec<ParamDoc> = parameters;
        parameters.sort_by(|a, b| {
            b.required
                .cmp(&a.required)
                .then_with(|| a.name.cmp(&b.name))
        });
        parameters.truncate(MAX_PARAMETERS);
        ToolDoc {
            server: server.to_owned(),
            name: text(tool.get("name")),
            description: cut(tool.get("description"), MAX_DESCRIPTION_CHARS),
            parameters,
            server_context: server_context.to_owned(),
            qualified: None,
        }
    }

    /// A short parameter summary for a model: `path: string, head?: number`.
    pub fn parameter_summary(&self) -> String {
        self.parameters
            .iter()
            .map(|p| {
                let optional = if p.required { "" } else { "?" };
                format!("{}{optional}: {}", p.name, p.kind)
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl ToolDoc {
    /// What the dense signal embeds: the name split into words, the server's
    /// name, the description, and the start of the server's instructions.
    /// Parameters are left out: on the dev split they made the dense signal
    /// worse (and its text twice as long to embed); they stay searchable by
    /// `fields: ["parameters"]`.
    pub fn embedding_text(&self) -> String {
        let words = |text: &str| crate::tokenize::split_words(text).join(" ");
        let mut text = format!(
            "{} ({}): {}",
            words(&self.name),
            words(&self.server),
            self.description.trim()
        );
        let context: String = self
            .server_context
            .trim()
            .chars()
            .take(INSTRUCTIONS_CHARS)
            .collect();
        if !context.is_empty() {
            text.push('\n');
            text.push_str(&context);
        }
        text
    }

    /// The key a vector of [`ToolDoc::embedding_text`] is cached under:
    /// its SHA-256, hex.
    pub fn embedding_key(&self) -> String {
        text_key(&self.embedding_text())
    }
}

/// At most `max` characters of `text`.
fn prefix(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(end, _)| &text[..end])
}

/// Characters of a tool's description a [`ToolDoc`] keeps.
pub const MAX_DESCRIPTION_CHARS: usize = 8_192;
/// Characters of a parameter's name, and of its description, a [`ToolDoc`] keeps.
pub const MAX_PARAMETER_CHARS: usize = 1_024;
/// Parameters a [`ToolDoc`] keeps.
pub const MAX_PARAMETERS: usize = 256;

/// Characters of the server's instructions included in
/// [`ToolDoc::embedding_text`].
const INSTRUCTIONS_CHARS: usize = 200;

/// SHA-256 of `text`, hex: the cache key of a text's vector.
pub fn text_key(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn schema_kind(property: &Value) -> String {
    match property.get("type") {
        Some(Value::String(kind)) => kind.clone(),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .filter(|k| *k != "null")
            .collect::<Vec<_>>()
            .join("|"),
        _ if property.get("anyOf").is_some() || property.get("oneOf").is_some() => {
            let variants = property
                .get("anyOf")
                .or_else(|| property.get("oneOf"))
                .and_then(Value::as_array);
            variants
                .map(|vs| {
                    vs.iter()
                        .map(schema_kind)
                        .filter(|k| k != "null")
                        .collect::<Vec<_>>()
                        .join("|")
                })
                .unwrap_or_else(|| "any".into())
        }
        _ if property.get("enum").is_some() => "enum".into(),
        _ => "any".into(),
    }
}

/// A stable hash of a catalog ([`canonical_json::Fingerprint`] of its documents, sorted by
/// server and name): the same tools (in any order) give the same hash, so callers rebuild
/// the index only when the set of tools changes.
pub fn catalog_hash(docs: &[ToolDoc]) -> String {
    let mut keyed: Vec<(&str, &str, String)> = docs
        .iter()
        .map(|d| {
            let json = serde_json::to_string(d).unwrap_or_default();
            (d.server.as_str(), d.name.as_str(), json)
        })
        .collect();
    keyed.sort();
    let mut fingerprint = canonical_json::Fingerprint::new();
    for (_, _, json) in keyed {
        fingerprint.json_text(&json);
    }
    fingerprint.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn builds_from_an_mcp_tool() {
        let tool = json!({
            "name": "read_text_file",
            "description": "Read a file",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "head": {"type": "number", "description": "First N lines"},
                    "mode": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                },
                "required": ["path"]
            }
        });
        let doc = ToolDoc::from_mcp("forge-filesystem", &tool, "Files in /workspace");
        assert_eq!(
            doc.parameter_summary(),
            "path: string, head?: number, mode?: string"
        );
        assert_eq!(doc.parameters[1].description, "First N lines");
        assert_eq!(doc.server_context, "Files in /workspace");
    }

    /// A hostile schema (20,000 properties, as many required names: a set of
    /// them, not a list scanned per property) is kept to the caps.
    #[test]
    fn a_huge_schema_is_kept_to_the_caps() {
        let properties: serde_json::Map<String, Value> = (0..20_000)
            .map(|i| {
                (
                    format!("p{i:06}"),
                    json!({"type": "string", "description": "d".repeat(1_100)}),
                )
            })
            .collect();
        // 20,000 required names, the last 10 of them properties' (the rest name none).
        let required: Vec<String> = (0..19_990)
            .map(|i| format!("r{i:06}"))
            .chain((19_990..20_000).map(|i| format!("p{i:06}")))
            .collect();
        let tool = json!({
            "name": "big",
            "description": "x".repeat(100_000),
            "inputSchema": {"type": "object", "properties": properties, "required": required},
        });
        let doc = ToolDoc::from_mcp("s", &tool, "");
        assert_eq!(doc.description.chars().count(), MAX_DESCRIPTION_CHARS);
        assert_eq!(doc.parameters.len(), MAX_PARAMETERS);
        // Required ones first.
        assert_eq!(
            (doc.parameters[0].name.as_str(), doc.parameters[0].required),
            ("p019990", true)
        );
        assert_eq!(
            (
                doc.parameters[10].name.as_str(),
                doc.parameters[10].required
            ),
            ("p000000", false)
        );
        assert_eq!(
            doc.parameters[0].description.chars().count(),
            MAX_PARAMETER_CHARS
        );
    }

    #[test]
    fn catalog_hash_ignores_order_and_sees_changes() {
        let a = ToolDoc::from_mcp("s", &json!({"name": "a", "description": "x"}), "");
        let b = ToolDoc::from_mcp("s", &json!({"name": "b", "description": "y"}), "");
        let mut changed = b.clone();
        changed.description = "z".into();
        assert_eq!(
            catalog_hash(&[a.clone(), b.clone()]),
            catalog_hash(&[b, a.clone()])
        );
        assert_ne!(
            catalog_hash(&[a.clone(), changed]),
            catalog_hash(&[
                a.clone(),
                ToolDoc::from_mcp("s", &json!({"name": "b", "description": "y"}), "")
            ])
        );
    }
}
