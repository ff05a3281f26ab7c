//! [`DirectLane`]: requests a client sends on a [`LineTransport`] past rmcp's service loop,
//! and their answers, taken off the wire by the transport's reader before rmcp sees them.
//!
//! Through rmcp, a request crosses a channel to the connection's service loop, which
//! registers it, spawns a task to write it and another wake-up to reap that task, and hands
//! the answer back through a second channel. On the lane, the caller encodes the request
//! into the transport's write queue and writes it itself (coalesced with whatever else is
//! queued), and the reader, which runs inside rmcp's loop, hands the answer straight to the
//! waiting caller. Everything else on the connection (`initialize`, notifications, the
//! server's own requests, cancellations, pings) stays rmcp's.
//!
//! The lane's ids are numbers from [`FIRST_ID`] up: far above rmcp's counter (which starts at
//! 0, one per request) and within the integers a JavaScript server reads exactly. Each
//! request carries a progress token equal to its id, as rmcp gives each of its requests one.
//! An answer is decoded as rmcp decodes it (`crate::decode::AnswerLine`, its envelope scanned
//! once); one that rmcp would
//! not accept as an answer goes to rmcp, as any such line does. When the transport ends
//! (end of input, a read error, the transport dropped), the lane closes: every request
//! waiting on it is told ([`LaneClosed`]), and it takes no more.
//!
//! [`LineTransport`]: crate::LineTransport

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientRequest, ErrorData, GetMeta as _, JsonRpcMessage, NumberOrString, ProgressToken,
    RequestId, ServerResult,
};
use tokio::sync::oneshot;

use crate::transport::Outgoing;

/// The first id the lane gives a request: 2⁴⁰.
pub const FIRST_ID: i64 = 1 << 40;

/// What a request sent on the lane was answered: its result, or the server's JSON-RPC error.
pub type Answer = Result<ServerResult, ErrorData>;

/// The connection ended before the request's answer came, or before it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneClosed;

impl std::fmt::Display for LaneClosed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the connection is closed")
    }
}

impl std::error::Error for LaneClosed {}

/// Why a request could not be sent on the lane.
#[derive(Debug)]
pub enum LaneSendError {
    /// The connection had ended.
    Closed,
    /// Encoding or writing the request failed (the writer is then closed for everyone).
    Io(io::Error),
}

impl std::fmt::Display for LaneSendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Closed => f.write_str("the connection is closed"),
            Self::Io(error) => write!(f, "cannot send the request: {error}"),
        }
    }
}

impl std::error::Error for LaneSendError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Closed => None,
            Self::Io(error) => Some(error),
        }
    }
}

/// A handle on a connection's lane; cloned freely.
#[derive(Clone)]
pub struct DirectLane {
    lane: Arc<Lane>,
}

impl std::fmt::Debug for DirectLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DirectLane")
            .field("waiting", &self.lane.count.load(Ordering::Relaxed))
            .finish()
    }
}

/// What the lane's handles and the transport's reader share.
pub(crate) struct Lane {
    output: Arc<dyn Outgoing>,
    next: AtomicI64,
    /// How many requests wait (read without the lock, so that a line costs nothing more when
    /// none does).
    count: AtomicUsize,
    waiting: Mutex<Waiting>,
}

struct Waiting {
    open: bool,
    answers: HashMap<i64, oneshot::Sender<Answer>>,
}

impl Lane {
    pub(crate) fn new(output: Arc<dyn Outgoing>) -> Arc<Self> {
        Arc::new(Self {
            output,
            next: AtomicI64::new(FIRST_ID),
            count: AtomicUsize::new(0),
            waiting: Mutex::new(Waiting {
                open: true,
                answers: HashMap::new(),
            }),
        })
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hand `line` to the request it answers, if it answers one waiting on the lane: `true`
    /// when it was taken (rmcp then never sees it).
    pub(crate) fn take(&self, line: &[u8]) -> bool {
        if self.count.load(Ordering::Acquire) == 0 {
            return false;
        }
        let Some(line) = crate::decode::answer_line(line).filter(|a| a.number >= FIRST_ID) else {
            return false;
        };
        let number = line.number;
        if !self.waiting().answers.contains_key(&number) {
            return false;
        }
        let Some(answer) = line.decode() else {
            return false;
        };
        let sender = {
            let mut waiting = self.waiting();
            let sender = waiting.answers.remove(&number);
            self.count.store(waiting.answers.len(), Ordering::Release);
            sender
        };
        if let Some(sender) = sender {
            // The caller may have stopped waiting (cancelled, timed out): the answer is dropped.
            let _ = sender.send(answer);
        }
        true
    }

    /// The connection ended: every waiting request is told, and no more are taken.
    pub(crate) fn close(&self) {
        let answers = {
            let mut waiting = self.waiting();
            waiting.open = false;
            self.count.store(0, Ordering::Release);
            std::mem::take(&mut waiting.answers)
        };
        drop(answers);
    }

    fn forget(&self, number: i64) {
        let mut waiting = self.waiting();
        if waiting.answers.remove(&number).is_some() {
            self.count.store(waiting.answers.len(), Ordering::Release);
        }
    }
}

impl DirectLane {
    pub(crate) fn new(lane: Arc<Lane>) -> Self {
        Self { lane }
    }

    /// Queue `request` with the lane's next id and a progress token equal to it; it is on
    /// its way once [`Sent::written`] returns (or once any later write on the connection
    /// does), and its answer is [`Sent::answer`]'s.
    pub fn send(&self, mut request: ClientRequest) -> Result<Sent, LaneSendError> {
        let number = self.lane.next.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::Number(number);
        let progress = ProgressToken(NumberOrString::Number(number));
        request.get_meta_mut().set_progress_token(progress.clone());
        let (sender, receiver) = oneshot::channel();
        {
            let mut waiting = self.lane.waiting();
            if !waiting.open {
                return Err(LaneSendError::Closed);
            }
            waiting.answers.insert(number, sender);
            self.lane
                .count
                .store(waiting.answers.len(), Ordering::Release);
        }
        // From here on, dropping `sent` forgets the request.
        let sent = Sent {
            id: id.clone(),
            progress,
            number,
            answer: receiver,
            settled: false,
            lane: Arc::clone(&self.lane),
        };
        let message = JsonRpcMessage::request(request, id);
        self.lane
            .output
            .queue_request(&message)
            .map_err(LaneSendError::Io)?;
        Ok(sent)
    }

    /// How many requests wait for their answers.
    pub fn waiting(&self) -> usize {
        self.lane.count.load(Ordering::Acquire)
    }
}

/// A request sent on the lane. Dropped before its answer came (the caller cancelled, or
/// gave up after a timeout), it is forgotten, and a late answer is dropped.
pub struct Sent {
    /// The request's id on the wire (what a `notifications/cancelled` for it names).
    pub id: RequestId,
    /// The progress token it carries.
    pub progress: ProgressToken,
    number: i64,
    answer: oneshot::Receiver<Answer>,
    /// The answer (or the lane's end) came: nothing is left to forget.
    settled: bool,
    lane: Arc<Lane>,
}

impl Sent {
    /// Once the request is written (with whatever else was queued). Safe to drop: the
    /// bytes stay queued, whole, for the next write.
    pub async fn written(&self) -> Result<(), LaneSendError> {
        self.lane
            .output
            .flush_queued()
            .await
            .map_err(LaneSendError::Io)
    }

    /// The server's answer; [`LaneClosed`] when the connection ended first.
    pub async fn answer(&mut self) -> Result<Answer, LaneClosed> {
        let answer = (&mut self.answer).await.map_err(|_| LaneClosed);
        self.settled = true;
        answer
    }
}

impl Drop for Sent {
    fn drop(&mut self) {
        if !self.settled {
            self.lane.forget(self.number);
        }
    }
}
