//! The commonest tool result, text blocks and nothing else
//! (`{"content":[{"type":"text","text":"…"}],"isError":false}`), decoded as rmcp decodes it
//! but without buffering each block: rmcp's `ContentBlock` is tagged by its `type` key, so
//! serde buffers every block whole (its keys and strings copied) before decoding it again.
//!
//! Only that shape is taken here: `content` holding blocks of exactly `type` (the string
//! `text`) and `text` (a string), and at most `isError` (a boolean or `null`) beside it, each
//! key once, the result and each block an object (serde's derived decoding would also take
//! an array). Anything else (another block type, any other key, a duplicate) is not this
//! shape, and the caller decodes it as before. Its depth is bounded (an object in an array
//! in the result), so serde_json's nesting limit cannot decide it differently.

use std::borrow::Cow;

use rmcp::model::{CallToolResult, ContentBlock};
use serde::Deserialize;
use serde::de::{Deserializer, Error as _, SeqAccess, Visitor};
use serde_json::value::RawValue;

use crate::decode::ObjectOnly;

/// A tool result decoded from its own text as rmcp's `CallToolResult` decoder decodes it
/// (with its error when it refuses the text), the text-only shape without buffering: for a
/// result read from elsewhere than a line (the forwarding bridge's HTTP answers).
pub fn decode_tool_result(raw: &RawValue) -> Result<CallToolResult, serde_json::Error> {
    match text_only(raw) {
        Some(result) => Ok(result),
        None => serde_json::from_str(raw.get()),
    }
}

/// `raw` (a tool result's own text) decoded when it is of the text-only shape; `None` for
/// anything else. The value is what rmcp's `CallToolResult` decoder gives for the same text.
pub(crate) fn text_only(raw: &RawValue) -> Option<CallToolResult> {
    let ObjectOnly(TextOnly { content, is_error }) = serde_json::from_str(raw.get()).ok()?;
    let mut result = CallToolResult::default();
    // rmcp decodes an absent `resultType` as none; its `default()` says "complete".
    result.result_type = None;
    result.content = content.0;
    result.is_error = is_error;
    Some(result)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct TextOnly {
    content: TextBlocks,
    is_error: Option<bool>,
}

/// A `content` list of text blocks, built as rmcp builds them (no `_meta`, no annotations).
struct TextBlocks(Vec<ContentBlock>);

impl<'de> Deserialize<'de> for TextBlocks {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(TextBlocksVisitor)
    }
}

struct TextBlocksVisitor;

impl<'de> Visitor<'de> for TextBlocksVisitor {
    type Value = TextBlocks;

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a list of text blocks")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut blocks: A) -> Result<TextBlocks, A::Error> {
        let mut content = Vec::new();
        while let Some(ObjectOnly(block)) = blocks.next_element::<ObjectOnly<TextBlock>>()? {
            content.push(ContentBlock::text(block.text));
        }
        Ok(TextBlocks(content))
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TextBlock {
    #[serde(rename = "type")]
    _kind: TextTag,
    text: String,
}

/// The `type` of a text block: the string `text` (escapes decoded, as rmcp's tag is read).
struct TextTag;

impl<'de> Deserialize<'de> for TextTag {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let tag = Cow::<'de, str>::deserialize(deserializer)?;
        if tag == "text" {
            Ok(TextTag)
        } else {
            Err(D::Error::custom("not a text block"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each text is decoded here and by rmcp's decoder: the same value where this shape is
    /// taken, and `None` here for every other shape.
    #[test]
    fn the_text_only_shape_decodes_as_rmcp_decodes_it_and_nothing_else_is_taken() {
        let cases = [
            (
                r#"{"content":[{"type":"text","text":"hello"}],"isError":false}"#,
                true,
            ),
            (
                r#"{"isError":true,"content":[{"text":"a\nb \u00e9","type":"text"}]}"#,
                true,
            ),
            (r#"{"content":[]}"#, true),
            (
                r#"{"content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]}"#,
                true,
            ),
            (
                r#"{"content":[{"type":"te\u0078t","text":"escaped tag"}],"isError":null}"#,
                true,
            ),
            (
                r#"{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"x","annotations":{"priority":1}}]}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"x","_meta":{"a":1}}]}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"x"}],"_meta":{"a":1}}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"x"}],"resultType":"complete"}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","text":"a","text":"b"}]}"#,
                false,
            ),
            (
                r#"{"content":[{"type":"text","type":"text","text":"a"}]}"#,
                false,
            ),
            (r#"{"content":[],"content":[]}"#, false),
            (r#"{"content":[{"text":"no type"}]}"#, false),
            (r#"{"content":[{"type":"text","text":7}]}"#, false),
            (r#"{"content":null,"isError":true}"#, false),
            (r#"{"isError":true}"#, false),
            (
                r#"{"content":[{"type":"text","text":"x"}],"isError":"yes"}"#,
                false,
            ),
            // Arrays where objects belong: serde's derived decoding would take them, rmcp's
            // tagged and flattened decoding does not.
            (r#"{"content":[["text","hi"]]}"#, false),
            (r#"[[{"type":"text","text":"hi"}],false]"#, false),
            (r#"[[["text","hi"]],false]"#, false),
            (r#"[[]]"#, false),
        ];
        for (text, taken) in cases {
            let raw: Box<RawValue> = serde_json::from_str(text).expect("valid JSON");
            let here = text_only(&raw);
            assert_eq!(here.is_some(), taken, "{text}");
            if let Some(here) = here {
                let rmcps: CallToolResult = serde_json::from_str(text).expect("rmcp decodes it");
                assert_eq!(here, rmcps, "{text}");
            }
            // Every shape, taken here or not, decodes as rmcp decodes it (or fails as it does).
            let rmcps = serde_json::from_str::<CallToolResult>(text).ok();
            assert_eq!(decode_tool_result(&raw).ok(), rmcps, "{text}");
        }
    }
}
