//! A server's stderr, drained continuously (a full pipe would block the child), logged line by
//! line at debug level, with the last lines kept for errors and status.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::task::JoinHandle;

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

    /// Read `stream` to its end in a task.
    pub fn drain<R>(&self, server: &str, stream: R) -> JoinHandle<()>
    where
        R: AsyncRead + Unpin + Send + 'static,
    {
        let tail = self.clone();
        let server = server.to_owned();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stream);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buffer).trim_end().to_owned();
                        tracing::debug!(server = %server, "stderr: {line}");
                        tail.push(line);
                    }
                }
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
}
