//! `read_text_file`: the whole file (up to a cap: the first `max_bytes`, cut at a character
//! boundary, and a notice saying what was left), its first N lines or its last N lines.
//!
//! Head reads forward only as far as it needs; tail seeks to the end and
//! reads backwards in chunks until it has seen enough line breaks, so neither
//! reads a large file whole. Bytes that are not UTF-8 are replaced with
//! U+FFFD, as Node's `utf-8` decoding does.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::Path;

use crate::oserror::FsError;

/// How much of the file to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSpan {
    /// The whole file, or its first `max_bytes` bytes and a notice when it is longer.
    Whole { max_bytes: u64 },
    /// The first N lines, joined by `\n`, without a trailing newline.
    Head(u64),
    /// The last N lines, joined by `\n`, without a trailing newline; a final
    /// newline ends the last line rather than starting an empty one.
    Tail(u64),
}

const TAIL_CHUNK: u64 = 64 * 1024;
const HEAD_BUFFER: usize = 64 * 1024;

/// Read `path` as text.
pub fn read_text(path: &Path, span: ReadSpan) -> Result<String, FsError> {
    match span {
        ReadSpan::Whole { max_bytes } => whole(path, max_bytes),
        ReadSpan::Head(lines) => head(path, lines),
        ReadSpan::Tail(lines) => tail(path, lines),
    }
}

fn whole(path: &Path, max_bytes: u64) -> Result<String, FsError> {
    let file = File::open(path).map_err(FsError::on("open", path))?;
    let mut bytes = Vec::new();
    // One byte past the cap tells whether the file goes on.
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FsError::on("read", path))?;
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) <= max_bytes {
        return Ok(into_text(bytes));
    }
    bytes.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
    // Do not split a character: drop a trailing incomplete UTF-8 sequence.
    if let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
    let size = std::fs::metadata(path).map_or_else(|_| "more".to_owned(), |m| m.len().to_string());
    let kept = bytes.len();
    let mut text = into_text(bytes);
    text.push_str(&format!(
        "\n\n[forge-filesystem cut this file: it has {size} bytes and one read returns at most {max_bytes} (FORGE_FS_MAX_READ_BYTES); these are the first {kept}. Read other parts with head or tail, or find what you need with search_files]"
    ));
    Ok(text)
}

fn into_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

fn head(path: &Path, wanted: u64) -> Result<String, FsError> {
    let file = File::open(path).map_err(FsError::on("open", path))?;
    let mut reader = BufReader::with_capacity(HEAD_BUFFER, file);
    let mut out = Vec::new();
    let mut line = Vec::new();
    for index in 0..wanted {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(FsError::on("read", path))?;
        if read == 0 {
            break;
        }
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if index > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(&line);
    }
    Ok(into_text(out))
}

fn tail(path: &Path, wanted: u64) -> Result<String, FsError> {
    let mut file = File::open(path).map_err(FsError::on("open", path))?;
    let len = file.metadata().map_err(FsError::on("fstat", path))?.len();
    if wanted == 0 || len == 0 {
        // Reading one byte still reports a directory as EISDIR.
        let _ = file
            .read(&mut [0u8; 1])
            .map_err(FsError::on("read", path))?;
        return Ok(String::new());
    }
    // Chunks read from the end, last chunk first.
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut position = len;
    let mut breaks_seen = 0u64;
    let mut start = 0u64;
    'chunks: while position > 0 {
        let size = TAIL_CHUNK.min(position);
        position -= size;
        let mut chunk = vec![0u8; usize::try_from(size).unwrap_or(usize::MAX)];
        file.read_exact_at(&mut chunk, position)
            .map_err(FsError::on("read", path))?;
        for offset in memchr::memrchr_iter(b'\n', &chunk) {
            let absolute = position + offset as u64;
            if absolute == len - 1 {
                continue; // the final newline ends the last line
            }
            breaks_seen += 1;
            if breaks_seen == wanted {
                start = absolute + 1;
                chunks.push(chunk);
                break 'chunks;
            }
        }
        chunks.push(chunk);
    }
    let first_chunk_start = position;
    let mut bytes: Vec<u8> = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    for chunk in chunks.iter().rev() {
        bytes.extend_from_slice(chunk);
    }
    let skip = usize::try_from(start - first_chunk_start).unwrap_or(0);
    let mut bytes = bytes.split_off(skip.min(bytes.len()));
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    Ok(into_text(bytes).replace("\r\n", "\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn read_with(content: &[u8], span: ReadSpan) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, content).expect("write");
        read_text(&path, span).expect("read")
    }

    #[test]
    fn a_whole_read_stops_at_the_cap_on_a_character_boundary_and_says_so() {
        let notice = |size: u64, max: u64, kept: usize| {
            format!(
                "\n\n[forge-filesystem cut this file: it has {size} bytes and one read returns at most {max} (FORGE_FS_MAX_READ_BYTES); these are the first {kept}. Read other parts with head or tail, or find what you need with search_files]"
            )
        };
        let cases: Vec<(&[u8], u64, String)> = vec![
            (b"abcd", 4, "abcd".to_owned()),
            (b"abcd", 10, "abcd".to_owned()),
            (b"abcdef", 4, format!("abcd{}", notice(6, 4, 4))),
            // "é" is two bytes: a cap inside it keeps the "a" only.
            ("aéb".as_bytes(), 2, format!("a{}", notice(4, 2, 1))),
            ("aéb".as_bytes(), 3, format!("aé{}", notice(4, 3, 3))),
        ];
        for (content, max_bytes, want) in cases {
            assert_eq!(
                read_with(content, ReadSpan::Whole { max_bytes }),
                want,
                "{max_bytes}"
            );
        }
    }

    #[test]
    fn head_and_tail_cases() {
        let cases: &[(&[u8], ReadSpan, &str)] = &[
            (b"a\nb\nc\n", ReadSpan::Head(2), "a\nb"),
            (b"a\nb\nc\n", ReadSpan::Head(9), "a\nb\nc"),
            (b"a\nb\nc", ReadSpan::Head(3), "a\nb\nc"),
            (b"a\n\n", ReadSpan::Head(5), "a\n"),
            (b"a\r\nb\r\n", ReadSpan::Head(2), "a\r\nb\r"),
            (b"a\nb\n", ReadSpan::Head(0), ""),
            (b"", ReadSpan::Head(3), ""),
            (b"a\nb\n", ReadSpan::Tail(1), "b"),
            (b"a\nb", ReadSpan::Tail(1), "b"),
            (b"a\nb\nc\n", ReadSpan::Tail(2), "b\nc"),
            (b"a\nb\nc\n", ReadSpan::Tail(9), "a\nb\nc"),
            (b"a\n\n", ReadSpan::Tail(1), ""),
            (b"a\n\n", ReadSpan::Tail(2), "a\n"),
            (b"\n", ReadSpan::Tail(1), ""),
            (b"x\r\ny\r\n", ReadSpan::Tail(2), "x\ny"),
            (b"a\nb\n", ReadSpan::Tail(0), ""),
            (b"", ReadSpan::Tail(3), ""),
            (
                b"caf\xc3\xa9\n\xff\n",
                ReadSpan::Tail(2),
                "caf\u{e9}\n\u{fffd}",
            ),
        ];
        for (content, span, expected) in cases {
            assert_eq!(
                read_with(content, *span),
                *expected,
                "{span:?} of {:?}",
                String::from_utf8_lossy(content)
            );
        }
    }

    #[test]
    fn tail_crosses_chunk_boundaries() {
        let line = "x".repeat(1000);
        let content: String = (0..300).map(|i| format!("{i} {line}\n")).collect();
        let got = read_with(content.as_bytes(), ReadSpan::Tail(150));
        let expected: Vec<String> = (150..300).map(|i| format!("{i} {line}")).collect();
        assert_eq!(got, expected.join("\n"));
    }
}
