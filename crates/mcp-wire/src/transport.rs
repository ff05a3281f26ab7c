//! [`LineTransport`]: an rmcp transport over a reader and a writer, one JSON-RPC message per
//! line, as MCP's stdio transport frames them.
//!
//! It behaves as rmcp's own `AsyncRwTransport` does (the tests hold it to that): lines end
//! in `\n` (a `\r` before it and a UTF-8 byte-order mark are dropped), blank lines are
//! skipped, a line longer than the limit is discarded with an error logged, a line that is
//! not JSON is ignored, a message of an unknown shape is answered with an `Invalid request`
//! error (id `null`), and a notification of a method that is not MCP's (an LSP message, say)
//! that does not decode is ignored. What differs is the cost:
//!
//! - **reads** fill a 64 KiB buffer, and every line already in it is taken without another
//!   read (rmcp reads through an 8 KiB buffer into a line buffer, a copy per line);
//! - **decoding** takes the fast path of [`crate::decode`] for `tools/call` and its answer;
//! - **writes** are coalesced: a message is encoded into a queue when it is sent, and the
//!   first send to reach the writer writes everything queued in one `write`; under load,
//!   many answers go out in one system call and one wake-up of the peer (rmcp writes and
//!   flushes each message on its own; the lane and direct serving try that write at once,
//!   without a future, when the writer is free). A send completes once its bytes are written (one
//!   dropped halfway leaves them whole for the next write); a write that fails closes the
//!   writer, and every send whose bytes it held fails; while
//!   more than [`DEFAULT_MAX_QUEUED`] bytes wait for a peer that does not read, a further
//!   message is refused.

use std::io;
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{ClientJsonRpcMessage, ErrorData, ServerJsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::{RoleClient, RoleServer};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite};

use crate::decode::{PendingCalls, Side};
use crate::lane::{DirectLane, Lane};
use crate::methods::ignorable;
use crate::served::DirectServing;

/// The longest line read by default (rmcp's limit): 16 MiB.
pub const DEFAULT_MAX_LINE_LENGTH: usize = 16 * 1024 * 1024;

/// Bytes asked of the reader at a time, and the buffer a connection starts with.
const READ_CHUNK: usize = 64 * 1024;

/// A buffer larger than this (after a long message) is given back once it is empty.
const KEEP_AT_MOST: usize = 1024 * 1024;

/// Most bytes of messages waiting for a peer that does not read, by default: 64 MiB.
pub const DEFAULT_MAX_QUEUED: usize = 64 * 1024 * 1024;

/// An rmcp transport over `reader` and `writer`, newline-delimited JSON-RPC.
pub struct LineTransport<Role, R, W> {
    reader: R,
    input: Input,
    max_line: usize,
    output: Arc<Output<W>>,
    calls: PendingCalls,
    /// Requests sent past rmcp's loop ([`Self::direct_lane`]), when any can be.
    lane: Option<Arc<Lane>>,
    /// A server's calls served past rmcp's loop ([`Self::direct_serving`]), when any can be.
    served: Option<DirectServing>,
    /// The input ended (rather than the service being cancelled).
    input_ended: bool,
    /// A message of an unknown shape was read: answer `Invalid request` before reading on.
    answer_invalid: bool,
    _role: PhantomData<fn() -> Role>,
}

impl<Role, R, W> LineTransport<Role, R, W> {
    pub fn new(reader: R, writer: W) -> Self {
        Self {
            reader,
            input: Input::default(),
            max_line: DEFAULT_MAX_LINE_LENGTH,
            output: Arc::new(Output::new(writer)),
            calls: PendingCalls::default(),
            lane: None,
            served: None,
            input_ended: false,
            answer_invalid: false,
            _role: PhantomData,
        }
    }

    /// Lines longer than `max_line` bytes (the newline included) are discarded.
    pub fn with_max_line_length(mut self, max_line: usize) -> Self {
        self.max_line = max_line.max(1);
        self
    }

    /// A message sent while more than `max_queued` bytes wait for the peer to read them is
    /// refused (`WouldBlock`), so a peer that stops reading cannot grow this side's memory.
    /// One message is always taken when nothing waits, whatever its size.
    pub fn with_max_queued(mut self, max_queued: usize) -> Self {
        if let Some(output) = Arc::get_mut(&mut self.output) {
            output.max_queued = max_queued;
        }
        self
    }
}

impl<R, W: AsyncWrite + Send + Unpin + 'static> LineTransport<RoleClient, R, W> {
    /// A lane for requests past rmcp's service loop on this connection ([`crate::lane`]):
    /// they share its write queue, and its reader hands their answers straight back.
    pub fn direct_lane(&mut self) -> DirectLane {
        let output: Arc<dyn Outgoing> = self.output.clone();
        DirectLane::new(Arc::clone(
            self.lane.get_or_insert_with(|| Lane::new(output)),
        ))
    }
}

impl<R, W: AsyncWrite + Send + Unpin + 'static> LineTransport<RoleServer, R, W> {
    /// Direct serving of this connection's `tools/call` requests past rmcp's service loop
    /// ([`crate::served`]), once a server is installed on the handle.
    pub fn direct_serving(&mut self) -> DirectServing {
        let output: Arc<dyn Outgoing> = self.output.clone();
        self.served
            .get_or_insert_with(|| DirectServing::new(output))
            .clone()
    }
}

impl<Role, R, W> Drop for LineTransport<Role, R, W> {
    fn drop(&mut self) {
        if let Some(lane) = &self.lane {
            lane.close();
        }
        if let Some(served) = &self.served {
            served.close();
        }
    }
}

/// How long calls served directly have to answer when the connection closes: what rmcp's
/// loop gives its own handlers after the end of input, and after a cancellation.
const DRAIN_AFTER_INPUT: std::time::Duration = std::time::Duration::from_secs(5);
const DRAIN_AFTER_CANCEL: std::time::Duration = std::time::Duration::from_secs(2);
/// How long closing waits for what is left to write to reach a peer that reads nothing (a
/// server that stopped reading its stdin, a client that stopped reading our stdout): then
/// the connection closes without it.
const CLOSE_FLUSH_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The read buffer: `buf[start..end]` is read and not yet taken; `buf[start..scan]` holds
/// no newline.
struct Input {
    buf: Vec<u8>,
    start: usize,
    scan: usize,
    end: usize,
    /// The rest of an over-long line is being skipped.
    discarding: bool,
}

impl Default for Input {
    fn default() -> Self {
        Self {
            buf: vec![0; READ_CHUNK],
            start: 0,
            scan: 0,
            end: 0,
            discarding: false,
        }
    }
}

enum Next {
    /// `buf[start..newline]`.
    Line(usize, usize),
    Oversized,
    Eof,
    Failed(io::Error),
}

impl Input {
    /// Room at the end of the buffer for the next read: the unread part moved to the front
    /// when the end is nearly full, the buffer grown (up to one line over the limit) when
    /// the unread part fills it, an emptied large buffer given back.
    fn make_room(&mut self, max_line: usize) {
        if self.start == self.end {
            self.start = 0;
            self.scan = 0;
            self.end = 0;
            if self.buf.len() > KEEP_AT_MOST {
                self.buf = vec![0; READ_CHUNK];
            }
        } else if self.buf.len() - self.end < READ_CHUNK / 4 && self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.scan -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            let most = max_line.saturating_add(1).max(READ_CHUNK);
            let grown = self.buf.len().saturating_mul(2).min(most).max(self.end + 1);
            self.buf.resize(grown, 0);
        }
    }
}

impl<Role, R, W> LineTransport<Role, R, W> {
    /// The input ended: the lane's waiting requests are told (no answer can come), and no
    /// more calls are served directly (those running go on until [`Transport::close`]).
    fn end_input(&mut self) {
        self.input_ended = true;
        if let Some(lane) = &self.lane {
            lane.close();
        }
        if let Some(served) = &self.served {
            served.stop_taking();
        }
    }
}

impl<Role, R: AsyncRead + Unpin, W> LineTransport<Role, R, W> {
    async fn next_line(&mut self) -> Next {
        loop {
            let input = &mut self.input;
            if let Some(at) = memchr::memchr(b'\n', &input.buf[input.scan..input.end]) {
                let newline = input.scan + at;
                let start = input.start;
                input.start = newline + 1;
                input.scan = input.start;
                if input.discarding {
                    input.discarding = false;
                    continue;
                }
                if newline + 1 - start > self.max_line {
                    return Next::Oversized;
                }
                return Next::Line(start, newline);
            }
            input.scan = input.end;
            if input.discarding {
                input.start = input.end;
            } else if input.end - input.start > self.max_line {
                input.discarding = true;
                input.start = input.end;
                input.scan = input.end;
                return Next::Oversized;
            }
            input.make_room(self.max_line);
            match self.reader.read(&mut input.buf[input.end..]).await {
                Ok(0) => return Next::Eof,
                Ok(read) => input.end += read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Next::Failed(error),
            }
        }
    }
}

/// The UTF-8 byte-order mark some writers put first.
const BOM: &[u8] = b"\xEF\xBB\xBF";

fn trimmed(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(BOM).unwrap_or(line)
}

impl<Role, R, W> Transport<Role> for LineTransport<Role, R, W>
where
    Role: Side,
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<Role>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        Role::sent(&item, &mut self.calls);
        let queued = self.output.queue(&item);
        let output = self.output.clone();
        async move {
            queued?;
            output.flush().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<Role>> {
        loop {
            if self.answer_invalid {
                self.answer_invalid = false;
                let refusal = TxJsonRpcMessage::<Role>::error(
                    ErrorData::invalid_request("Invalid request", None),
                    None,
                );
                if self.output.queue(&refusal).is_err() || self.output.flush().await.is_err() {
                    // The connection ends here, as at the end of its input.
                    self.end_input();
                    return None;
                }
            }
            let (start, end) = match self.next_line().await {
                Next::Line(start, end) => (start, end),
                Next::Oversized => {
                    tracing::error!(
                        max_line_length = self.max_line,
                        "an incoming message was longer than the limit and is discarded"
                    );
                    continue;
                }
                Next::Eof => {
                    self.end_input();
                    return None;
                }
                Next::Failed(error) => {
                    tracing::error!(%error, "cannot read the MCP connection");
                    self.end_input();
                    return None;
                }
            };
            let line = trimmed(&self.input.buf[start..end]);
            if line.is_empty() {
                continue;
            }
            if let Some(lane) = &self.lane
                && lane.take(line)
            {
                continue;
            }
            let decoded = match Role::decode_fast(line, &mut self.calls) {
                Some(message) => Ok(message),
                None => serde_json::from_slice::<RxJsonRpcMessage<Role>>(line),
            };
            match decoded {
                Ok(message) => match &self.served {
                    Some(served) => match Role::offer(message, served) {
                        Some(message) => return Some(message),
                        None => continue,
                    },
                    None => return Some(message),
                },
                Err(_) if ignorable(line) => {}
                Err(error) => match error.classify() {
                    serde_json::error::Category::Syntax | serde_json::error::Category::Eof => {
                        tracing::debug!(%error, "an incoming line is not JSON; ignored");
                    }
                    serde_json::error::Category::Data | serde_json::error::Category::Io => {
                        tracing::debug!(%error, "an incoming message is not JSON-RPC");
                        self.answer_invalid = true;
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(served) = &self.served {
            let limit = match self.input_ended {
                true => DRAIN_AFTER_INPUT,
                false => DRAIN_AFTER_CANCEL,
            };
            served.close_within(limit).await;
        }
        let output = &self.output;
        let flushed = tokio::time::timeout(CLOSE_FLUSH_LIMIT, async {
            let flushed = output.flush().await;
            drop(output.sink.lock().await.take());
            flushed
        })
        .await
        .unwrap_or_else(|_| {
            Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the peer read nothing of what was left to write for {CLOSE_FLUSH_LIMIT:?}"
                ),
            ))
        });
        match flushed {
            Err(error) if error.kind() != io::ErrorKind::NotConnected => Err(error),
            _ => Ok(()),
        }
    }
}

/// The transport's writing half, as the lane's and the served calls' messages take it.
pub(crate) trait Outgoing: Send + Sync {
    /// Encode a client's request onto the write queue, after everything queued before it.
    fn queue_request(&self, message: &ClientJsonRpcMessage) -> io::Result<()>;

    /// Encode a lane's `tools/call` onto the write queue, after everything queued before it.
    fn queue_call(&self, call: &crate::lane::CallLine<'_>) -> io::Result<()>;

    /// Encode a server's answer onto the write queue, after everything queued before it.
    fn queue_answer(&self, message: &ServerJsonRpcMessage) -> io::Result<()>;

    /// Write everything queued (nothing, when a write already took it); `taken`: the
    /// caller's bytes already left the queue (a [`FlushNow::Wait`] said so), so only what
    /// the writer holds is left to write.
    fn flush_queued(
        &self,
        taken: bool,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>>;

    /// The same without waiting, when the writer is free and takes it all at once.
    fn flush_now(&self) -> FlushNow;
}

/// How far [`Outgoing::flush_now`] got.
pub(crate) enum FlushNow {
    Done(io::Result<()>),
    /// It would wait; what was written stays written. `taken`: the caller's bytes left the
    /// queue for the writer, so the flush that goes on does not take newer ones.
    Wait {
        taken: bool,
    },
}

/// Write what the caller queued: at once when the writer is free and takes it all, else
/// through the boxed flush, going on from what was written.
pub(crate) async fn flush_soon(output: &dyn Outgoing) -> io::Result<()> {
    match output.flush_now() {
        FlushNow::Done(flushed) => flushed,
        FlushNow::Wait { taken } => output.flush_queued(taken).await,
    }
}

impl<W: AsyncWrite + Send + Unpin + 'static> Outgoing for Output<W> {
    fn queue_request(&self, message: &ClientJsonRpcMessage) -> io::Result<()> {
        self.queue(message)
    }

    fn queue_call(&self, call: &crate::lane::CallLine<'_>) -> io::Result<()> {
        self.queue(call)
    }

    fn queue_answer(&self, message: &ServerJsonRpcMessage) -> io::Result<()> {
        self.queue(message)
    }

    fn flush_queued(
        &self,
        taken: bool,
    ) -> Pin<Box<dyn Future<Output = io::Result<()>> + Send + '_>> {
        Box::pin(self.flush_from(taken))
    }

    fn flush_now(&self) -> FlushNow {
        Output::flush_now(self)
    }
}

/// The writing half: encoded messages wait in `queue`; whoever holds `sink` writes them.
struct Output<W> {
    max_queued: usize,
    queue: Mutex<Vec<u8>>,
    sink: tokio::sync::Mutex<Option<Sink<W>>>,
}

struct Sink<W> {
    writer: W,
    /// The buffer being written; swapped with the queue's, so neither is allocated again.
    spare: Vec<u8>,
    /// How much of `spare` is written: a flush dropped halfway (its caller cancelled) leaves
    /// the rest for the next one, which writes it first.
    written: usize,
    /// A whole write went out and the writer's flush has not finished yet (a flush dropped
    /// while waiting for it leaves it to the next one).
    unflushed: bool,
}

impl<W> Output<W> {
    fn new(writer: W) -> Self {
        Self {
            max_queued: DEFAULT_MAX_QUEUED,
            queue: Mutex::new(Vec::new()),
            sink: tokio::sync::Mutex::new(Some(Sink {
                writer,
                spare: Vec::new(),
                written: 0,
                unflushed: false,
            })),
        }
    }
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Encode `message` onto the queue, in the order of the calls.
    fn queue(&self, message: &impl Serialize) -> io::Result<()> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let mark = queue.len();
        if let Err(error) = serde_json::to_writer(&mut *queue, message) {
            queue.truncate(mark);
            return Err(error.into());
        }
        queue.push(b'\n');
        if mark > 0 && queue.len() > self.max_queued {
            queue.truncate(mark);
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!("the peer has left {mark} bytes of messages unread; this one is refused"),
            ));
        }
        Ok(())
    }

    /// Write everything queued so far (nothing, when an earlier flush took it), after what
    /// an earlier flush left unwritten. Safe to drop at any await: a message is never written
    /// twice nor cut, since the bytes taken from the queue stay in the sink, with how much of
    /// them went out, until they are all written.
    /// A write that fails closes the writer: the sends whose bytes were in that write, and
    /// every later one, fail too (with `NotConnected`) instead of reporting success.
    async fn flush(&self) -> io::Result<()> {
        self.flush_from(false).await
    }

    /// [`Output::flush`], `taken` saying whether the caller's bytes already left the queue.
    async fn flush_from(&self, mut taken: bool) -> io::Result<()> {
        let mut guard = self.sink.lock().await;
        let Some(sink) = guard.as_mut() else {
            return Err(closed());
        };
        // The queue is taken once: this call's own bytes are in it (or were taken by an
        // earlier flush, which wrote them or left them in the sink).
        let drained = std::future::poll_fn(|cx| self.poll_drain(sink, &mut taken, cx)).await;
        if drained.is_err() {
            *guard = None;
        }
        drained
    }

    /// [`Output::flush`] without waiting, when nothing makes it wait: the writer is free and
    /// takes every byte at once (the common case: a pipe with room). When it would wait,
    /// what was written stays written, and [`Output::flush_from`] goes on from there.
    fn flush_now(&self) -> FlushNow {
        let Ok(mut guard) = self.sink.try_lock() else {
            return FlushNow::Wait { taken: false };
        };
        let Some(sink) = guard.as_mut() else {
            return FlushNow::Done(Err(closed()));
        };
        let mut taken = false;
        // A writer not ready keeps this waker, which wakes nothing: the flush that follows
        // polls it again with its own.
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        match self.poll_drain(sink, &mut taken, &mut cx) {
            std::task::Poll::Ready(Ok(())) => FlushNow::Done(Ok(())),
            std::task::Poll::Ready(Err(error)) => {
                *guard = None;
                FlushNow::Done(Err(error))
            }
            std::task::Poll::Pending => FlushNow::Wait { taken },
        }
    }

    /// Writes the sink's bytes, then (once, `taken`) the queue's, flushing the writer after
    /// each whole write; ready when both are out.
    fn poll_drain(
        &self,
        sink: &mut Sink<W>,
        taken: &mut bool,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        use std::task::Poll;
        loop {
            if sink.unflushed {
                if let Err(error) = std::task::ready!(Pin::new(&mut sink.writer).poll_flush(cx)) {
                    return Poll::Ready(Err(error));
                }
                sink.unflushed = false;
            }
            if sink.written == sink.spare.len() {
                sink.spare.clear();
                sink.written = 0;
                if sink.spare.capacity() > KEEP_AT_MOST {
                    sink.spare = Vec::new();
                }
                if *taken {
                    return Poll::Ready(Ok(()));
                }
                let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
                if queue.is_empty() {
                    return Poll::Ready(Ok(()));
                }
                std::mem::swap(&mut *queue, &mut sink.spare);
                *taken = true;
            }
            let unwritten = &sink.spare[sink.written..];
            match std::task::ready!(Pin::new(&mut sink.writer).poll_write(cx, unwritten)) {
                Ok(0) => return Poll::Ready(Err(io::Error::from(io::ErrorKind::WriteZero))),
                Ok(count) => {
                    sink.written += count;
                    sink.unflushed = sink.written == sink.spare.len();
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Poll::Ready(Err(error)),
            }
        }
    }
}

fn closed() -> io::Error {
    io::Error::new(io::ErrorKind::NotConnected, "the transport is closed")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that takes at most `room` bytes a call, is not ready once `ready` calls are
    /// used up, fails once `fail` is set, and whose first `flush_pending` flushes wait; it
    /// counts the flushes that finished.
    #[derive(Default)]
    struct Scripted {
        got: Vec<u8>,
        room: usize,
        ready: usize,
        fail: bool,
        flush_pending: usize,
        flushes: usize,
    }

    impl AsyncWrite for Scripted {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
            buf: &[u8],
        ) -> std::task::Poll<io::Result<usize>> {
            if self.fail {
                return std::task::Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
            }
            if self.ready == 0 {
                return std::task::Poll::Pending;
            }
            self.ready -= 1;
            let take = buf.len().min(self.room);
            self.got.extend_from_slice(&buf[..take]);
            std::task::Poll::Ready(Ok(take))
        }

        fn poll_flush(
            mut self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            if self.flush_pending > 0 {
                self.flush_pending -= 1;
                return std::task::Poll::Pending;
            }
            self.flushes += 1;
            std::task::Poll::Ready(Ok(()))
        }

        fn poll_shutdown(
            self: Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<io::Result<()>> {
            std::task::Poll::Ready(Ok(()))
        }
    }

    fn free(room: usize, ready: usize) -> Scripted {
        Scripted {
            room,
            ready,
            ..Scripted::default()
        }
    }

    async fn written(output: &Output<Scripted>) -> (Vec<u8>, usize) {
        let guard = output.sink.lock().await;
        let sink = guard.as_ref().expect("open");
        (sink.writer.got.clone(), sink.writer.flushes)
    }

    async fn script(output: &Output<Scripted>, change: impl FnOnce(&mut Scripted)) {
        change(&mut output.sink.lock().await.as_mut().expect("open").writer);
    }

    #[tokio::test]
    async fn a_flush_without_waiting_writes_each_message_once_or_leaves_it_to_the_flush() {
        // (room per write, writes ready, flushes that wait) → whether it finished at once.
        let cases = [
            (usize::MAX, 1, 0, true),
            (4, 100, 0, true),
            (4, 2, 0, false),
            (4, 0, 0, false),
            (usize::MAX, 1, 1, false),
        ];
        for (room, ready, flush_pending, at_once) in cases {
            let case = format!("room {room}, ready {ready}, flush_pending {flush_pending}");
            let out = Output::new(Scripted {
                flush_pending,
                ..free(room, ready)
            });
            out.queue(&serde_json::json!({"a": 1})).expect("queue");
            out.queue(&serde_json::json!({"b": 2})).expect("queue");
            let flushed = match out.flush_now() {
                FlushNow::Done(flushed) => {
                    assert!(at_once, "{case}");
                    flushed
                }
                FlushNow::Wait { taken } => {
                    assert!(!at_once, "{case}");
                    script(&out, |w| w.ready = usize::MAX).await;
                    out.flush_from(taken).await
                }
            };
            flushed.expect(&case);
            let (got, flushes) = written(&out).await;
            assert_eq!(got, b"{\"a\":1}\n{\"b\":2}\n", "{case}");
            assert_eq!(flushes, 1, "{case}");
            // Nothing is written twice.
            out.flush().await.expect("flush");
            assert_eq!(written(&out).await.0.len(), got.len(), "{case}");
        }
    }

    #[tokio::test]
    async fn the_flush_that_goes_on_writes_what_was_taken_not_what_came_after() {
        let out = Output::new(free(4, 1));
        out.queue(&serde_json::json!("first")).expect("queue");
        let FlushNow::Wait { taken } = out.flush_now() else {
            panic!("a writer taking 4 bytes once cannot take 8 at once");
        };
        assert!(taken);
        out.queue(&serde_json::json!("later")).expect("queue");
        script(&out, |w| w.ready = usize::MAX).await;
        out.flush_from(taken).await.expect("flush");
        assert_eq!(written(&out).await.0, b"\"first\"\n");
        out.flush().await.expect("flush");
        assert_eq!(written(&out).await.0, b"\"first\"\n\"later\"\n");
    }

    #[tokio::test]
    async fn a_flush_dropped_while_the_writer_flushes_leaves_that_flush_to_the_next() {
        let out = Output::new(Scripted {
            flush_pending: 1,
            ..free(usize::MAX, usize::MAX)
        });
        out.queue(&serde_json::json!(1)).expect("queue");
        // Its bytes are written; the writer's flush waits, and the caller gives up.
        assert!(matches!(out.flush_now(), FlushNow::Wait { taken: true }));
        assert_eq!(written(&out).await, (b"1\n".to_vec(), 0));
        // The next flush, with nothing queued, still finishes the writer's flush.
        out.flush().await.expect("flush");
        assert_eq!(written(&out).await, (b"1\n".to_vec(), 1));
    }

    #[tokio::test]
    async fn a_flush_without_waiting_never_waits_for_the_writer_held_elsewhere() {
        let out = Output::new(free(usize::MAX, usize::MAX));
        out.queue(&serde_json::json!(1)).expect("queue");
        let held = out.sink.lock().await;
        assert!(matches!(out.flush_now(), FlushNow::Wait { taken: false }));
        drop(held);
        assert!(matches!(out.flush_now(), FlushNow::Done(Ok(()))));
        assert_eq!(written(&out).await.0, b"1\n");
    }

    #[tokio::test]
    async fn a_failed_flush_without_waiting_closes_the_writer() {
        let out = Output::new(Scripted {
            fail: true,
            ..Scripted::default()
        });
        for (message, kind) in [
            (1, io::ErrorKind::BrokenPipe),
            (2, io::ErrorKind::NotConnected),
        ] {
            out.queue(&serde_json::json!(message)).expect("queue");
            let FlushNow::Done(Err(error)) = out.flush_now() else {
                panic!("message {message}: no error");
            };
            assert_eq!(error.kind(), kind, "message {message}");
        }
    }

    #[test]
    fn trimming() {
        let cases: [(&[u8], &[u8]); 4] = [
            (b"{}", b"{}"),
            (b"{}\r", b"{}"),
            (b"\xEF\xBB\xBF{}\r", b"{}"),
            (b"\r", b""),
        ];
        for (line, expected) in cases {
            assert_eq!(trimmed(line), expected);
        }
    }

    #[test]
    fn room_is_made_without_passing_the_limit() {
        let mut input = Input {
            end: READ_CHUNK,
            scan: READ_CHUNK,
            ..Input::default()
        };
        input.make_room(100_000);
        assert_eq!(input.buf.len(), 100_001);
        input.end = input.buf.len();
        input.start = 90_000;
        input.scan = input.end;
        input.make_room(100_000);
        assert_eq!((input.start, input.end), (0, 10_001));
        input.start = input.end;
        input.make_room(100_000);
        assert_eq!((input.start, input.end, input.buf.len()), (0, 0, 100_001));
    }
}
