//! Output capture with bounded memory: what a command prints is read as it
//! arrives and either kept for the reply (only the head the reply can show)
//! or streamed to an overflow file.
//!
//! - **Layout**: stdout, then stderr. A part that does not end with a newline
//!   gets one before the next part. The overflow file holds the same body as
//!   the reply would without truncation (text streams only).
//! - **Limits**: when stdout and stderr together pass [`MAX_LINES`] lines or
//!   [`MAX_BYTES`] bytes, the reply shows the longest prefix of whole lines
//!   within both limits (a single first line longer than the byte limit is cut
//!   at it) and the full output goes to `cmd-N.txt`. The file is opened the
//!   moment the limits are passed: what was kept so far is written first,
//!   then every later chunk as it arrives. Stderr is spooled to an unnamed
//!   temporary file in the log directory meanwhile and appended after stdout
//!   at the end, so the file keeps the stdout-then-stderr layout.
//! - **Binary guard**: each stream's first [`SNIFF_BYTES`] bytes decide. A
//!   NUL byte, or more than [`BINARY_CONTROL_PERCENT`]% control bytes (below
//!   0x20 other than `\n`, `\r`, `\t`, plus 0x7F), make it binary: its bytes
//!   are counted, not kept, and the reply shows
//!   `[binary output: N bytes omitted]` (`… on stderr: …` for stderr) in its
//!   place. Binary streams do not count towards the limits and are not
//!   written to the overflow file.
//!
//! Memory per call: two heads of at most [`MAX_BYTES`] each, the sniff buffer
//! of up to [`SNIFF_BYTES`] plus one read chunk per stream.

use std::io::SeekFrom;
use std::path::PathBuf;

use tokio::fs::File;
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

use crate::overflow::OverflowFiles;

/// Lines a reply shows at most.
pub const MAX_LINES: usize = 200;
/// Bytes a reply shows at most (50 KB).
pub const MAX_BYTES: usize = 51_200;
/// Bytes of each stream the binary guard looks at.
pub const SNIFF_BYTES: usize = 8192;
/// Control bytes (in percent of the sniffed bytes) above which a stream is
/// binary.
pub const BINARY_CONTROL_PERCENT: usize = 10;

/// Which pipe bytes came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Is this the start of a binary stream?
pub fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    let control = sample
        .iter()
        .filter(|&&b| (b < 0x20 && !matches!(b, b'\n' | b'\r' | b'\t')) || b == 0x7f)
        .count();
    control * 100 > sample.len() * BINARY_CONTROL_PERCENT
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Undecided,
    Text,
    Binary,
}

/// One stream's state.
#[derive(Debug)]
struct StreamState {
    kind: Kind,
    sniff: Vec<u8>,
    /// The text kept for the reply: at most `MAX_BYTES` bytes and
    /// `MAX_LINES` newlines.
    head: Vec<u8>,
    head_newlines: usize,
    text_bytes: u64,
    text_newlines: u64,
    last: Option<u8>,
    binary_bytes: u64,
}

impl StreamState {
    fn new() -> Self {
        Self {
            kind: Kind::Undecided,
            sniff: Vec::new(),
            head: Vec::new(),
            head_newlines: 0,
            text_bytes: 0,
            text_newlines: 0,
            last: None,
            binary_bytes: 0,
        }
    }

    /// Lines of text: newlines, plus one for an unterminated last line.
    fn lines(&self) -> u64 {
        self.text_newlines + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }

    fn keep(&mut self, bytes: &[u8]) {
        let room = MAX_BYTES.saturating_sub(self.head.len());
        let mut take = bytes.len().min(room);
        let lines_room = MAX_LINES.saturating_sub(self.head_newlines);
        if lines_room == 0 {
            take = 0;
        } else if let Some(newline) = memchr::memchr_iter(b'\n', &bytes[..take]).nth(lines_room - 1)
        {
            take = newline + 1;
        }
        let kept = &bytes[..take];
        self.head_newlines += memchr::memchr_iter(b'\n', kept).count();
        self.head.extend_from_slice(kept);
    }
}

/// The overflow file while it is being written.
#[derive(Debug)]
struct OpenSpill {
    path: PathBuf,
    file: File,
    stderr_spool: File,
}

#[derive(Debug)]
enum Spill {
    /// Within the limits so far.
    NotYet,
    Open(Box<OpenSpill>),
    /// Past the limits, but the full output could not be saved.
    Failed(String),
}

/// Where the full output of a truncated reply went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Saved {
    File(PathBuf),
    /// Why it could not be saved.
    NotSaved(String),
}

/// The reply was cut; the numbers the notice states.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    pub total_lines: u64,
    pub total_bytes: u64,
    pub shown_lines: u64,
    pub shown_bytes: u64,
    pub saved: Saved,
}

/// What the reply shows of a command's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Stdout then stderr (or their binary notices), each part ending with
    /// a newline; empty when the command printed nothing.
    pub body: String,
    pub truncation: Option<Truncation>,
}

/// The capture of one command's output.
#[derive(Debug)]
pub struct Capture<'a> {
    files: &'a OverflowFiles,
    out: StreamState,
    err: StreamState,
    spill: Spill,
    read_bytes: u64,
}

impl<'a> Capture<'a> {
    pub fn new(files: &'a OverflowFiles) -> Self {
        Self {
            files,
            out: StreamState::new(),
            err: StreamState::new(),
            spill: Spill::NotYet,
            read_bytes: 0,
        }
    }

    /// Bytes read from both pipes so far (what the max buffer limits).
    pub fn read_bytes(&self) -> u64 {
        self.read_bytes
    }

    fn state(&mut self, stream: Stream) -> &mut StreamState {
        match stream {
            Stream::Stdout => &mut self.out,
            Stream::Stderr => &mut self.err,
        }
    }

    /// Take a chunk read from `stream`.
    pub async fn push(&mut self, stream: Stream, bytes: &[u8]) {
        self.read_bytes += bytes.len() as u64;
        let state = self.state(stream);
        match state.kind {
            Kind::Text => self.text(stream, bytes).await,
            Kind::Binary => state.binary_bytes += bytes.len() as u64,
            Kind::Undecided => {
                state.sniff.extend_from_slice(bytes);
                if state.sniff.len() >= SNIFF_BYTES {
                    self.decide(stream).await;
                }
            }
        }
    }

    async fn decide(&mut self, stream: Stream) {
        let state = self.state(stream);
        let sniffed = std::mem::take(&mut state.sniff);
        if looks_binary(&sniffed[..sniffed.len().min(SNIFF_BYTES)]) {
            state.kind = Kind::Binary;
            state.binary_bytes = sniffed.len() as u64;
        } else {
            state.kind = Kind::Text;
            self.text(stream, &sniffed).await;
        }
    }

    async fn text(&mut self, stream: Stream, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        let state = self.state(stream);
        state.text_bytes += bytes.len() as u64;
        state.text_newlines += memchr::memchr_iter(b'\n', bytes).count() as u64;
        state.last = bytes.last().copied();
        if matches!(self.spill, Spill::NotYet) && self.over_limits() {
            self.open_spill();
            // What was kept so far is the whole output so far.
            let (out, err) = (self.out.head.clone(), self.err.head.clone());
            self.write_spill(Stream::Stdout, &out).await;
            self.write_spill(Stream::Stderr, &err).await;
        }
        self.write_spill(stream, bytes).await;
        self.state(stream).keep(bytes);
    }

    fn over_limits(&self) -> bool {
        self.out.lines() + self.err.lines() > MAX_LINES as u64
            || self.out.text_bytes + self.err.text_bytes > MAX_BYTES as u64
    }

    fn open_spill(&mut self) {
        self.spill = match self.files.create() {
            Ok(created) => match tempfile::tempfile_in(self.files.dir()) {
                Ok(spool) => Spill::Open(Box::new(OpenSpill {
                    path: created.path,
                    file: File::from_std(created.file),
                    stderr_spool: File::from_std(spool),
                })),
                Err(error) => Spill::Failed(format!(
                    "cannot create a temporary file in {}: {error}",
                    self.files.dir().display()
                )),
            },
            Err(error) => Spill::Failed(error.to_string()),
        };
        if let Spill::Failed(reason) = &self.spill {
            tracing::warn!("full output not saved: {reason}");
        }
    }

    async fn write_spill(&mut self, stream: Stream, bytes: &[u8]) {
        let Spill::Open(open) = &mut self.spill else {
            return;
        };
        if bytes.is_empty() {
            return;
        }
        let target = match stream {
            Stream::Stdout => &mut open.file,
            Stream::Stderr => &mut open.stderr_spool,
        };
        if let Err(error) = target.write_all(bytes).await {
            let reason = format!("writing {} failed: {error}", open.path.display());
            tracing::warn!("full output not saved: {reason}");
            self.spill = Spill::Failed(reason);
        }
    }

    /// End of output: decide undecided streams, complete the overflow file,
    /// and lay out what the reply shows.
    pub async fn finish(mut self) -> Captured {
        for stream in [Stream::Stdout, Stream::Stderr] {
            if self.state(stream).kind == Kind::Undecided {
                self.decide(stream).await;
            }
        }
        let saved = match std::mem::replace(&mut self.spill, Spill::NotYet) {
            Spill::NotYet => None,
            Spill::Failed(reason) => Some(Saved::NotSaved(reason)),
            Spill::Open(open) => Some(self.complete_spill(*open).await),
        };
        let truncated = saved.is_some();
        let mut layout = Layout::new(truncated);
        for (state, notice) in [
            (&self.out, "[binary output: {} bytes omitted]"),
            (&self.err, "[binary output on stderr: {} bytes omitted]"),
        ] {
            match state.kind {
                Kind::Binary => {
                    layout.notice(&notice.replace("{}", &state.binary_bytes.to_string()))
                }
                _ => layout.text(&state.head, state.head.len() as u64 == state.text_bytes),
            }
        }
        let truncation = saved.map(|saved| Truncation {
            total_lines: self.out.lines() + self.err.lines(),
            total_bytes: self.out.text_bytes + self.err.text_bytes,
            shown_lines: layout.shown_lines,
            shown_bytes: layout.shown_bytes,
            saved,
        });
        Captured {
            body: String::from_utf8_lossy(&layout.body).into_owned(),
            truncation,
        }
    }

    /// Append the spooled stderr after stdout and close the file.
    async fn complete_spill(&self, mut open: OpenSpill) -> Saved {
        let result: std::io::Result<()> = async {
            if self.err.kind == Kind::Text && self.err.text_bytes > 0 {
                if self.out.kind == Kind::Text && self.out.last.is_some_and(|b| b != b'\n') {
                    open.file.write_all(b"\n").await?;
                }
                open.stderr_spool.flush().await?;
                open.stderr_spool.seek(SeekFrom::Start(0)).await?;
                tokio::io::copy(&mut open.stderr_spool, &mut open.file).await?;
            }
            open.file.flush().await?;
            open.file.sync_data().await?;
            Ok(())
        }
        .await;
        match result {
            Ok(()) => Saved::File(open.path),
            Err(error) => {
                let reason = format!("writing {} failed: {error}", open.path.display());
                tracing::warn!("full output not saved: {reason}");
                Saved::NotSaved(reason)
            }
        }
    }
}

/// Builds the reply body from the parts in order, within the limits when the
/// output was truncated. The shown text is always a prefix of the full text.
struct Layout {
    body: Vec<u8>,
    lines_left: usize,
    bytes_left: usize,
    /// A part did not fit: later text parts are not shown.
    cut: bool,
    shown_lines: u64,
    shown_bytes: u64,
}

impl Layout {
    fn new(limited: bool) -> Self {
        let (lines_left, bytes_left) = if limited {
            (MAX_LINES, MAX_BYTES)
        } else {
            (usize::MAX, usize::MAX)
        };
        Self {
            body: Vec::new(),
            lines_left,
            bytes_left,
            cut: false,
            shown_lines: 0,
            shown_bytes: 0,
        }
    }

    fn end_part(&mut self) {
        if self.body.last().is_some_and(|&b| b != b'\n') {
            self.body.push(b'\n');
        }
    }

    fn notice(&mut self, notice: &str) {
        self.body.extend_from_slice(notice.as_bytes());
        self.body.push(b'\n');
    }

    /// Add a text part. `complete` says `text` is the whole stream; if not,
    /// a last line without newline is a fragment and only shown when nothing
    /// else fits.
    fn text(&mut self, text: &[u8], complete: bool) {
        if self.cut {
            return;
        }
        for line in text.split_inclusive(|&b| b == b'\n') {
            if self.lines_left == 0 {
                self.cut = true;
                break;
            }
            let whole = complete || line.ends_with(b"\n");
            let take = if whole && line.len() <= self.bytes_left {
                line.len()
            } else if self.shown_bytes == 0 {
                utf8_prefix_len(line, self.bytes_left)
            } else {
                0
            };
            self.body.extend_from_slice(&line[..take]);
            self.shown_bytes += take as u64;
            if take > 0 {
                self.shown_lines += 1;
                self.lines_left -= 1;
            }
            self.bytes_left -= take;
            if take < line.len() {
                self.cut = true;
                break;
            }
        }
        self.end_part();
    }
}

/// The longest prefix of `bytes` of at most `max` bytes that does not end
/// inside a UTF-8 sequence.
fn utf8_prefix_len(bytes: &[u8], max: usize) -> usize {
    let mut end = max.min(bytes.len());
    // A UTF-8 continuation byte is 0b10xx_xxxx: back off to a lead byte.
    while end > 0 && end < bytes.len() && bytes[end] & 0xC0 == 0x80 {
        end -= 1;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    async fn capture(dir: &std::path::Path, chunks: &[(Stream, &[u8])]) -> Captured {
        let files = OverflowFiles::new(dir.to_owned());
        let mut capture = Capture::new(&files);
        for (stream, bytes) in chunks {
            capture.push(*stream, bytes).await;
        }
        capture.finish().await
    }

    fn numbered_lines(count: usize) -> String {
        (1..=count).map(|n| format!("line {n}\n")).collect()
    }

    #[test]
    fn binary_detection() {
        let cases: &[(&[u8], bool)] = &[
            (b"", false),
            (b"hello\nworld\r\n\tindented", false),
            (b"text with a \0 NUL", true),
            (
                b"\x1b[31mred\x1b[0m and a lot of ordinary text around the colour codes",
                false,
            ),
            (b"\x01\x02\x03\x04 abc", true),
            ("ünïcödé ✓".as_bytes(), false),
        ];
        for (sample, expected) in cases {
            assert_eq!(looks_binary(sample), *expected, "sample: {sample:?}");
        }
    }

    #[tokio::test]
    async fn small_output_is_stdout_then_stderr() {
        let dir = tempfile::tempdir().expect("tempdir");
        let captured = capture(
            dir.path(),
            &[
                (Stream::Stderr, b"warn"),
                (Stream::Stdout, b"out1\n"),
                (Stream::Stdout, b"out2"),
            ],
        )
        .await;
        assert_eq!(
            captured,
            Captured {
                body: "out1\nout2\nwarn\n".to_owned(),
                truncation: None
            }
        );
        assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);
    }

    #[tokio::test]
    async fn line_limit_truncates_and_saves_everything() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = numbered_lines(250);
        let captured = capture(
            dir.path(),
            &[
                (Stream::Stdout, &out.as_bytes()[..100]),
                (Stream::Stderr, b"oops"),
                (Stream::Stdout, &out.as_bytes()[100..]),
            ],
        )
        .await;
        let path = dir.path().join("cmd-1.txt");
        assert_eq!(captured.body, numbered_lines(200));
        assert_eq!(
            captured.truncation,
            Some(Truncation {
                total_lines: 251,
                total_bytes: out.len() as u64 + 4,
                shown_lines: 200,
                shown_bytes: numbered_lines(200).len() as u64,
                saved: Saved::File(path.clone()),
            })
        );
        assert_eq!(
            std::fs::read_to_string(path).expect("read"),
            format!("{out}oops")
        );
    }

    #[tokio::test]
    async fn byte_limit_keeps_whole_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let line = format!("{}\n", "x".repeat(999));
        let out = line.repeat(60); // 60 000 bytes, 60 lines
        let captured = capture(dir.path(), &[(Stream::Stdout, out.as_bytes())]).await;
        assert_eq!(captured.body, line.repeat(51));
        let truncation = captured.truncation.expect("truncated");
        assert_eq!(
            (truncation.shown_lines, truncation.shown_bytes),
            (51, 51_000)
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).expect("read"),
            out
        );
    }

    #[tokio::test]
    async fn one_huge_line_is_cut_on_a_char_boundary() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = "é".repeat(30_000); // 60 000 bytes, no newline
        let captured = capture(dir.path(), &[(Stream::Stdout, out.as_bytes())]).await;
        assert_eq!(captured.body, format!("{}\n", "é".repeat(25_600)));
    }

    #[tokio::test]
    async fn unterminated_stdout_gets_a_newline_before_stderr_in_the_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = "y".repeat(MAX_BYTES);
        let captured = capture(
            dir.path(),
            &[(Stream::Stdout, out.as_bytes()), (Stream::Stderr, b"err\n")],
        )
        .await;
        assert!(captured.truncation.is_some());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("cmd-1.txt")).expect("read"),
            format!("{out}\nerr\n")
        );
    }

    #[tokio::test]
    async fn binary_streams_become_notices() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut binary = vec![0u8; 20_000];
        binary[5] = b'a';
        let captured = capture(
            dir.path(),
            &[
                (Stream::Stdout, &binary[..3000]),
                (Stream::Stderr, b"fine\n"),
                (Stream::Stdout, &binary[3000..]),
            ],
        )
        .await;
        assert_eq!(
            captured,
            Captured {
                body: "[binary output: 20000 bytes omitted]\nfine\n".to_owned(),
                truncation: None
            }
        );
        let short = capture(dir.path(), &[(Stream::Stderr, b"\x00\x01")]).await;
        assert_eq!(short.body, "[binary output on stderr: 2 bytes omitted]\n");
    }

    #[tokio::test]
    async fn unwritable_log_dir_still_truncates_and_says_why() {
        let dir = tempfile::tempdir().expect("tempdir");
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "").expect("write");
        let out = numbered_lines(300);
        let captured = capture(&blocker.join("logs"), &[(Stream::Stdout, out.as_bytes())]).await;
        assert_eq!(captured.body, numbered_lines(200));
        let truncation = captured.truncation.expect("truncated");
        assert!(
            matches!(&truncation.saved, Saved::NotSaved(reason) if reason.contains("cannot create the log directory")),
            "{truncation:?}"
        );
    }

    #[test]
    fn head_keeps_at_most_the_limits() {
        let mut state = StreamState::new();
        state.keep(numbered_lines(150).as_bytes());
        state.keep(numbered_lines(150).as_bytes());
        assert_eq!(state.head_newlines, MAX_LINES);
        assert!(state.head.ends_with(b"line 50\n"));
        let mut wide = StreamState::new();
        wide.keep(&vec![b'z'; MAX_BYTES * 2]);
        assert_eq!(wide.head.len(), MAX_BYTES);
    }
}
