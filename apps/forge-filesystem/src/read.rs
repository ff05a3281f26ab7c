//! `read_text_file`: the whole file, its first N lines or its last N lines, never more than
//! `max_bytes` (`FORGE_FS_MAX_READ_BYTES`) read or returned: the cap applies before the read,
//! so a file of one 10 GB line (a sparse file) or `/dev/zero` costs one cap's worth.
//!
//! Head reads forward only as far as it needs; tail seeks to the end and reads backwards in
//! chunks until it has seen enough line breaks; a read that reaches the cap first stops
//! there (cut at a character boundary) and says so. Only regular files are read: a FIFO, a
//! device or a socket is refused before any read, opened without blocking (a FIFO with no
//! writer would otherwise hold the call until its timeout). Bytes that are not UTF-8 are
//! replaced with U+FFFD, as Node's `utf-8` decoding does. A cancelled call (the client's
//! `notifications/cancelled`, sent when its timeout passes) stops the read at its next chunk.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use server_kit::CancellationToken;

use crate::answer::{Part, fit_escaped};
use crate::oserror::FsError;

/// How much of the file to read; every span reads and returns at most `max_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadSpan {
    /// The whole file, or its first `max_bytes` bytes and a notice when it is longer.
    Whole { max_bytes: u64 },
    /// The first `lines` lines, joined by `\n`, without a trailing newline.
    Head { lines: u64, max_bytes: u64 },
    /// The last `lines` lines, joined by `\n`, without a trailing newline; a final
    /// newline ends the last line rather than starting an empty one.
    Tail { lines: u64, max_bytes: u64 },
}

/// Why a read gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error(transparent)]
    Fs(#[from] FsError),
    #[error(
        "Access denied - {} is a {kind}, not a regular file: forge-filesystem reads regular files only (a {kind} can block or never end)",
        .path.display()
    )]
    NotRegular { path: PathBuf, kind: &'static str },
    /// The open file has other names (checked again on it: the path's check came before the
    /// open, and the file may have been swapped in between).
    #[error(transparent)]
    Path(#[from] crate::paths::PathError),
    #[error("read_text_file was cancelled")]
    Cancelled,
}

/// A reader that fails once its call is cancelled: every chunk looks at the token first.
struct Cancellable<'a, R> {
    inner: R,
    cancel: &'a CancellationToken,
}

impl<R: Read> Read for Cancellable<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(std::io::Error::other("the call was cancelled"));
        }
        self.inner.read(buf)
    }
}

const TAIL_CHUNK: u64 = 64 * 1024;
const HEAD_BUFFER: usize = 64 * 1024;

/// Read `path` as text, unless `cancel` fires first.
pub fn read_text(
    path: &Path,
    span: ReadSpan,
    cancel: &CancellationToken,
) -> Result<String, ReadError> {
    let file = open_regular(path)?;
    let read = match span {
        ReadSpan::Whole { max_bytes } => whole(&file, path, max_bytes, cancel),
        ReadSpan::Head { lines, max_bytes } => head(&file, path, lines, max_bytes, cancel),
        ReadSpan::Tail { lines, max_bytes } => tail(&file, path, lines, max_bytes, cancel),
    };
    match read {
        _ if cancel.is_cancelled() => Err(ReadError::Cancelled),
        Ok(text) => Ok(text),
        Err(error) => Err(error.into()),
    }
}

/// What a file that is not regular (nor a folder, whose read reports EISDIR as Node's does)
/// is called in the refusal.
fn irregular(file_type: std::fs::FileType) -> Option<&'static str> {
    if file_type.is_fifo() {
        Some("FIFO")
    } else if file_type.is_char_device() {
        Some("character device")
    } else if file_type.is_block_device() {
        Some("block device")
    } else if file_type.is_socket() {
        Some("socket")
    } else {
        None
    }
}

/// Open `path` for reading if it is a regular file (or a folder): checked before the open,
/// opened without blocking, and checked again on the open file (it may have been swapped),
/// hard links included (one name only, as [`crate::paths::AllowedRoot::resolve`] requires).
pub(crate) fn open_regular(path: &Path) -> Result<File, ReadError> {
    use std::os::unix::fs::MetadataExt as _;
    let refuse = |kind| ReadError::NotRegular {
        path: path.to_owned(),
        kind,
    };
    if let Ok(meta) = std::fs::metadata(path)
        && let Some(kind) = irregular(meta.file_type())
    {
        return Err(refuse(kind));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(FsError::on("open", path))?;
    let meta = file.metadata().map_err(FsError::on("fstat", path))?;
    if let Some(kind) = irregular(meta.file_type()) {
        return Err(refuse(kind));
    }
    if meta.is_file() && meta.nlink() > 1 {
        return Err(crate::paths::PathError::HardLinked {
            real: path.to_owned(),
            links: meta.nlink(),
        }
        .into());
    }
    Ok(file)
}

/// The notice after a read the cap cut.
fn cut_notice(size: &str, max_bytes: u64, kept: usize, part: &str) -> String {
    format!(
        "\n\n[forge-filesystem cut this file: it has {size} bytes and one read returns at most {max_bytes} (FORGE_FS_MAX_READ_BYTES); these are the {part} {kept}. Read other parts with head or tail, or find what you need with search_files]"
    )
}

/// Keep at most `max_bytes` of `bytes` from the start, not splitting a character.
fn cut_front(mut bytes: Vec<u8>, max_bytes: u64) -> Vec<u8> {
    bytes.truncate(usize::try_from(max_bytes).unwrap_or(usize::MAX));
    if let Err(error) = std::str::from_utf8(&bytes)
        && error.error_len().is_none()
    {
        bytes.truncate(error.valid_up_to());
    }
    bytes
}

fn size_of(file: &File) -> String {
    file.metadata()
        .map_or_else(|_| "more".to_owned(), |m| m.len().to_string())
}

fn whole(
    file: &File,
    path: &Path,
    max_bytes: u64,
    cancel: &CancellationToken,
) -> Result<String, FsError> {
    let mut bytes = Vec::new();
    // One byte past the cap tells whether the file goes on.
    Cancellable {
        inner: file,
        cancel,
    }
    .take(max_bytes.saturating_add(1))
    .read_to_end(&mut bytes)
    .map_err(FsError::on("read", path))?;
    let cut = u64::try_from(bytes.len()).unwrap_or(u64::MAX) > max_bytes;
    let bytes = if cut {
        cut_front(bytes, max_bytes)
    } else {
        bytes
    };
    Ok(finish(
        into_text(bytes),
        cut,
        || size_of(file),
        max_bytes,
        Part::First,
    ))
}

/// A read's text as answered: cut further when its JSON form would pass `max_bytes` (a file
/// of control characters escapes to six bytes each: 4 MiB of zeros would be a 48 MiB answer,
/// over the 16 MiB line MCP clients take), and followed by the notice when anything was cut.
fn finish(
    mut text: String,
    mut cut: bool,
    size: impl FnOnce() -> String,
    max_bytes: u64,
    part: Part,
) -> String {
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    if let Some(kept) = fit_escaped(&text, max, part) {
        text = text[kept].to_owned();
        cut = true;
    }
    if cut {
        let kept = text.len();
        let word = match part {
            Part::First => "first",
            Part::Last => "last",
        };
        text.push_str(&cut_notice(&size(), max_bytes, kept, word));
    }
    text
}

fn into_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
    }
}

fn head(
    file: &File,
    path: &Path,
    wanted: u64,
    max_bytes: u64,
    cancel: &CancellationToken,
) -> Result<String, FsError> {
    // Never more than one byte past the cap from the file, whatever its lines.
    let limited = Cancellable {
        inner: file,
        cancel,
    }
    .take(max_bytes.saturating_add(1));
    let mut reader = BufReader::with_capacity(HEAD_BUFFER, limited);
    let mut out = Vec::new();
    let mut line = Vec::new();
    let mut consumed = 0u64;
    for index in 0..wanted {
        line.clear();
        let read = reader
            .read_until(b'\n', &mut line)
            .map_err(FsError::on("read", path))?;
        if read == 0 {
            break;
        }
        consumed += read as u64;
        if line.last() == Some(&b'\n') {
            line.pop();
        }
        if index > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(&line);
        if consumed > max_bytes {
            break;
        }
    }
    let cut = consumed > max_bytes;
    let out = if cut { cut_front(out, max_bytes) } else { out };
    Ok(finish(
        into_text(out),
        cut,
        || size_of(file),
        max_bytes,
        Part::First,
    ))
}

fn tail(
    mut file: &File,
    path: &Path,
    wanted: u64,
    max_bytes: u64,
    cancel: &CancellationToken,
) -> Result<String, FsError> {
    let len = file.metadata().map_err(FsError::on("fstat", path))?.len();
    if wanted == 0 || len == 0 {
        // Reading one byte still reports a directory as EISDIR.
        let _ = file
            .read(&mut [0u8; 1])
            .map_err(FsError::on("read", path))?;
        return Ok(String::new());
    }
    // Chunks read from the end, last chunk first; never further back than the cap.
    let floor = len.saturating_sub(max_bytes.saturating_add(1));
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut position = len;
    let mut breaks_seen = 0u64;
    let mut start = None;
    'chunks: while position > floor {
        if cancel.is_cancelled() {
            return Ok(String::new());
        }
        let size = TAIL_CHUNK.min(position - floor);
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
                start = Some(absolute + 1);
                chunks.push(chunk);
                break 'chunks;
            }
        }
        chunks.push(chunk);
    }
    // Not enough lines within the cap (and the file goes on before it): keep the last
    // `max_bytes`, from a character boundary, and say so.
    let cut = start.is_none() && floor > 0;
    let start = start.unwrap_or(if cut { len - max_bytes } else { 0 });
    let first_chunk_start = position;
    let mut bytes: Vec<u8> = Vec::with_capacity(usize::try_from(len - start).unwrap_or(0));
    for chunk in chunks.iter().rev() {
        bytes.extend_from_slice(chunk);
    }
    let skip = usize::try_from(start - first_chunk_start).unwrap_or(0);
    let mut bytes = bytes.split_off(skip.min(bytes.len()));
    if cut {
        // Do not start inside a character: skip continuation bytes.
        let lead = bytes
            .iter()
            .take(3)
            .take_while(|byte| (**byte & 0xC0) == 0x80)
            .count();
        bytes.drain(..lead);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
    }
    let text = into_text(bytes).replace("\r\n", "\n");
    Ok(finish(text, cut, || len.to_string(), max_bytes, Part::Last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const BIG: u64 = 1 << 40;

    fn head_span(lines: u64) -> ReadSpan {
        ReadSpan::Head {
            lines,
            max_bytes: BIG,
        }
    }

    fn tail_span(lines: u64) -> ReadSpan {
        ReadSpan::Tail {
            lines,
            max_bytes: BIG,
        }
    }

    fn read_with(content: &[u8], span: ReadSpan) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, content).expect("write");
        read_text(&path, span, &CancellationToken::new()).expect("read")
    }

    #[test]
    fn a_file_with_another_name_is_refused_on_the_open_file() {
        // The path's own check came before the open: a file linked in between is caught here.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "secret").expect("write");
        assert!(open_regular(&path).is_ok(), "one name");
        std::fs::hard_link(&path, dir.path().join("other.txt")).expect("link");
        let refused = read_text(
            &path,
            ReadSpan::Whole { max_bytes: BIG },
            &CancellationToken::new(),
        );
        assert!(
            matches!(
                refused,
                Err(ReadError::Path(crate::paths::PathError::HardLinked {
                    links: 2,
                    ..
                }))
            ),
            "{refused:?}"
        );
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
            (b"a\nb\nc\n", head_span(2), "a\nb"),
            (b"a\nb\nc\n", head_span(9), "a\nb\nc"),
            (b"a\nb\nc", head_span(3), "a\nb\nc"),
            (b"a\n\n", head_span(5), "a\n"),
            (b"a\r\nb\r\n", head_span(2), "a\r\nb\r"),
            (b"a\nb\n", head_span(0), ""),
            (b"", head_span(3), ""),
            (b"a\nb\n", tail_span(1), "b"),
            (b"a\nb", tail_span(1), "b"),
            (b"a\nb\nc\n", tail_span(2), "b\nc"),
            (b"a\nb\nc\n", tail_span(9), "a\nb\nc"),
            (b"a\n\n", tail_span(1), ""),
            (b"a\n\n", tail_span(2), "a\n"),
            (b"\n", tail_span(1), ""),
            (b"x\r\ny\r\n", tail_span(2), "x\ny"),
            (b"a\nb\n", tail_span(0), ""),
            (b"", tail_span(3), ""),
            (b"caf\xc3\xa9\n\xff\n", tail_span(2), "caf\u{e9}\n\u{fffd}"),
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
    fn head_and_tail_never_read_past_the_cap() {
        // One line of 5 MB (a sparse file's zeros are one line too): a cap's worth comes back.
        let long = "z".repeat(5 << 20);
        let notice = |part: &str, kept: usize| {
            format!(
                "\n\n[forge-filesystem cut this file: it has {} bytes and one read returns at most 1000 (FORGE_FS_MAX_READ_BYTES); these are the {part} {kept}. Read other parts with head or tail, or find what you need with search_files]",
                long.len() + 1
            )
        };
        let content = format!("{long}\n");
        let head = read_with(
            content.as_bytes(),
            ReadSpan::Head {
                lines: 5,
                max_bytes: 1000,
            },
        );
        assert_eq!(head, format!("{}{}", &long[..1000], notice("first", 1000)));
        let tail = read_with(
            content.as_bytes(),
            ReadSpan::Tail {
                lines: 5,
                max_bytes: 1000,
            },
        );
        // The last 1000 bytes of the file, its final newline dropped.
        assert_eq!(tail, format!("{}{}", &long[..999], notice("last", 999)));
        // The issue's probe: a 10 GB sparse file, head 5 and tail 5, each a cap's worth.
        let dir = tempfile::tempdir().expect("tempdir");
        let sparse = dir.path().join("sparse");
        File::create(&sparse)
            .and_then(|file| file.set_len(10 << 30))
            .expect("a sparse file");
        for span in [
            ReadSpan::Head {
                lines: 5,
                max_bytes: 1000,
            },
            ReadSpan::Tail {
                lines: 5,
                max_bytes: 1000,
            },
        ] {
            let text = read_text(&sparse, span, &CancellationToken::new()).expect("read");
            // Zeros escape to six bytes each in JSON (`\u0000`): 166 of them fill 1000 bytes.
            let notice = |part: &str| {
                format!(
                    "\n\n[forge-filesystem cut this file: it has 10737418240 bytes and one read returns at most 1000 (FORGE_FS_MAX_READ_BYTES); these are the {part} 166. Read other parts with head or tail, or find what you need with search_files]"
                )
            };
            let part = if matches!(span, ReadSpan::Head { .. }) {
                "first"
            } else {
                "last"
            };
            assert_eq!(
                text,
                format!("{}{}", "\0".repeat(166), notice(part)),
                "{span:?}"
            );
        }
        // Within the cap nothing changes.
        let small = ReadSpan::Tail {
            lines: 2,
            max_bytes: 1000,
        };
        assert_eq!(read_with(b"a\nb\nc\n", small), "b\nc");
    }

    #[test]
    fn fifos_devices_and_sockets_are_refused_without_blocking() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let socket = dir.path().join("sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
        let spans = [
            ReadSpan::Whole { max_bytes: 10 },
            head_span(5),
            tail_span(5),
        ];
        for (path, kind) in [
            (fifo.as_path(), "FIFO"),
            (Path::new("/dev/zero"), "character device"),
            (socket.as_path(), "socket"),
        ] {
            for span in spans {
                match read_text(path, span, &CancellationToken::new()) {
                    Err(ReadError::NotRegular { kind: got, .. }) => {
                        assert_eq!(got, kind, "{path:?}")
                    }
                    other => panic!("{path:?} {span:?}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn a_cancelled_read_stops() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("f.txt");
        std::fs::write(&path, "a\nb\n").expect("write");
        let cancel = CancellationToken::new();
        cancel.cancel();
        for span in [
            ReadSpan::Whole { max_bytes: 10 },
            head_span(1),
            tail_span(1),
        ] {
            let got = read_text(&path, span, &cancel);
            assert!(
                matches!(got, Err(ReadError::Cancelled)),
                "{span:?}: {got:?}"
            );
        }
    }

    #[test]
    fn the_json_answer_fits_the_cap_whatever_the_characters() {
        let cases: Vec<(&str, u64, ReadSpan, String)> = vec![
            // Quotes and backslashes escape to two bytes: 10 of them fill 20.
            (
                "\"".repeat(30).leak(),
                20,
                ReadSpan::Whole { max_bytes: 20 },
                "\"".repeat(10),
            ),
            // Controls other than \n \r \t \b \f escape to six.
            (
                "\u{1}".repeat(30).leak(),
                20,
                ReadSpan::Whole { max_bytes: 20 },
                "\u{1}".repeat(3),
            ),
            // A tail keeps the last ones.
            (
                "ab\u{1}\u{1}\u{1}".to_owned().leak(),
                12,
                ReadSpan::Tail {
                    lines: 1,
                    max_bytes: 12,
                },
                "\u{1}\u{1}".to_owned(),
            ),
        ];
        for (content, max, span, kept) in cases {
            let got = read_with(content.as_bytes(), span);
            let (text, notice) = got
                .split_once("\n\n[forge-filesystem cut this file")
                .expect("a cut");
            assert_eq!(text, kept, "{span:?}");
            let escaped = serde_json::to_string(text).expect("json").len() - 2;
            assert!(escaped as u64 <= max, "{escaped} > {max}");
            assert!(
                notice.contains(&format!(
                    "these are the {} {}",
                    if matches!(span, ReadSpan::Tail { .. }) {
                        "last"
                    } else {
                        "first"
                    },
                    kept.len()
                )),
                "{notice}"
            );
        }
    }

    #[test]
    fn tail_crosses_chunk_boundaries() {
        let line = "x".repeat(1000);
        let content: String = (0..300).map(|i| format!("{i} {line}\n")).collect();
        let got = read_with(content.as_bytes(), tail_span(150));
        let expected: Vec<String> = (150..300).map(|i| format!("{i} {line}")).collect();
        assert_eq!(got, expected.join("\n"));
    }
}
