//! A server's stderr, drained continuously (a full pipe would block the child), logged line by
//! line at debug level, with the last lines kept for errors and status. A line is kept to
//! its first [`MAX_LINE_BYTES`] bytes (the rest is read and dropped, and the cut said), so a
//! server that writes without newlines costs a few KiB, not what it wrote.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::task::JoinHandle;

/// Bytes of one stderr line kept (and logged).
pub const MAX_LINE_BYTES: usize = 4096;

/// The last lines a server wrote on stderr.
#[derive(Debug, Clone)]
pub struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    capacity: usize,
}

impl StderrTail {
    pub fn new(capacity: usize) -> Self {
        Self {
            lines: Arc::new(Mutex::new(VecDeque::with_capacity(capacity.min(1024)))),
            capacity,
        }
    }

    fn push(&self, line: String) {
        if let Ok(mut lines) = self.lines.lock() {
            if lines.len() == self.capacity {
                lines.pop_front();
            }
            if self.capacity > 0 {
                lines.push_back(line);
            }
        }
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .map(|lines| lines.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Logs and keeps one line read (its first bytes; `dropped` more were not kept).
    fn take_line(&self, server: &str, bytes: &[u8], dropped: usize) {
        let mut line = String::from_utf8_lossy(bytes).trim_end().to_owned();
        if dropped > 0 {
            line.push_str(&format!(" [{dropped} more bytes of this line not kept]"));
        }
        tracing::debug!(server = %server, "stderr: {line}");
        self.push(line);
    }

    /// Read `stream` to its end in a task.
    pub fn drain<R>(&self, server: &str, stream: R) -> JoinHandle<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let tail = self.clone();
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut line = Vec::new();
            // Bytes of the current line read past the kept part.
            let mut dropped = 0usize;
            loop {
                let chunk = match reader.fill_buf().await {
                    Ok([]) | Err(_) => break,
                    Ok(chunk) => chunk,
                };
                // The line's bytes in this chunk, and whether its newline is too.
                let (content, ends) = match chunk.iter().position(|&b| b == b'\n') {
                    Some(at) => (at, true),
                    None => (chunk.len(), false),
                };
                let room = MAX_LINE_BYTES.saturating_sub(line.len());
                line.extend_from_slice(&chunk[..content.min(room)]);
                dropped += content.saturating_sub(room);
                reader.consume(content + usize::from(ends));
                if ends {
                    tail.take_line(&server, &line, dropped);
                    line.clear();
                    dropped = 0;
                }
            }
            if !line.is_empty() {
                tail.take_line(&server, &line, dropped);
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    #[tokio::test]
    async fn keeps_only_the_last_lines() -> Result<(), tokio::task::JoinError> {
        let tail = StderrTail::new(3);
        let input: &[u8] = b"one\ntwo\nthree\nfour\nfive";
        tail.drain("s", input).await?;
        assert_eq!(tail.lines(), vec!["three", "four", "five"]);
        Ok(())
    }

    #[tokio::test]
    async fn a_line_is_kept_to_its_first_bytes_however_long() -> Result<(), tokio::task::JoinError>
    {
        let tail = StderrTail::new(3);
        let long = "x".repeat(MAX_LINE_BYTES + 5_000_000);
        let input = format!("{long}\nshort\n{long}");
        tail.drain("s", std::io::Cursor::new(input.into_bytes()))
            .await?;
        let cut = format!(
            "{} [5000000 more bytes of this line not kept]",
            "x".repeat(MAX_LINE_BYTES)
        );
        assert_eq!(tail.lines(), vec![cut.clone(), "short".to_owned(), cut]);
        Ok(())
    }
}
