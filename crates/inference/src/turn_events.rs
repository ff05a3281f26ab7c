//! The buffer between a running turn and whoever reads its events (the chat route's response
//! body): bounded in events *and* in bytes, so a client that stops reading holds at most
//! [`TurnConfig::event_buffer_bytes`](crate::TurnConfig) of the turn's output in memory.
//! Once the buffer is full the turn waits, and while it waits it reads nothing more from the
//! provider: backpressure runs from the client's socket to the model's stream.
//!
//! Each event weighs what its text, input and images take; an event heavier than the whole
//! budget takes all of it (it goes alone). The budget is given back as each event is read.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::Stream;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::turn::TurnEvent;

/// Events buffered at most, whatever their size.
pub const EVENT_BUFFER_EVENTS: usize = 64;
/// Bytes of events buffered at most, by default.
pub const DEFAULT_EVENT_BUFFER_BYTES: usize = 64 * 1024;

/// An event in the buffer, holding its share of the byte budget until it is read.
struct Buffered {
    event: TurnEvent,
    _budget: OwnedSemaphorePermit,
}

/// The turn's end of the buffer.
#[derive(Clone)]
pub(crate) struct EventSender {
    sender: mpsc::Sender<Buffered>,
    budget: Arc<Semaphore>,
    max_bytes: usize,
}

/// Nobody reads the events any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Closed;

impl EventSender {
    /// Buffer `event` once the buffer has room for it; `Err` when the reader is gone.
    pub(crate) async fn send(&self, event: TurnEvent) -> Result<(), Closed> {
        let weight = u32::try_from(weight(&event).clamp(1, self.max_bytes)).unwrap_or(u32::MAX);
        let budget = tokio::select! {
            budget = Arc::clone(&self.budget).acquire_many_owned(weight) => budget.map_err(|_| Closed)?,
            () = self.sender.closed() => return Err(Closed),
        };
        self.sender
            .send(Buffered {
                event,
                _budget: budget,
            })
            .await
            .map_err(|_| Closed)
    }

    /// Resolves when nobody reads the events any more.
    pub(crate) async fn closed(&self) {
        self.sender.closed().await;
    }
}

/// The reader's end: a stream of the turn's events.
#[derive(Debug)]
pub struct TurnEvents {
    receiver: mpsc::Receiver<Buffered>,
}

impl std::fmt::Debug for Buffered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.event.fmt(f)
    }
}

impl Stream for TurnEvents {
    type Item = TurnEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<TurnEvent>> {
        // The event's budget goes back as it leaves the buffer.
        self.receiver
            .poll_recv(cx)
            .map(|buffered| buffered.map(|buffered| buffered.event))
    }
}

/// A buffer of at most [`EVENT_BUFFER_EVENTS`] events and `max_bytes` bytes (at least 1).
pub(crate) fn event_channel(max_bytes: usize) -> (EventSender, TurnEvents) {
    let max_bytes = max_bytes.clamp(1, Semaphore::MAX_PERMITS.min(u32::MAX as usize));
    let (sender, receiver) = mpsc::channel(EVENT_BUFFER_EVENTS);
    (
        EventSender {
            sender,
            budget: Arc::new(Semaphore::new(max_bytes)),
            max_bytes,
        },
        TurnEvents { receiver },
    )
}

/// About how many bytes `event` holds: its strings, its input, its images.
fn weight(event: &TurnEvent) -> usize {
    const FIXED: usize = std::mem::size_of::<TurnEvent>();
    FIXED
        + match event {
            TurnEvent::TextDelta(text) => text.len(),
            TurnEvent::ToolInputStarted { call_id, tool_name } => call_id.len() + tool_name.len(),
            TurnEvent::ToolInputDelta { call_id, delta } => call_id.len() + delta.len(),
            TurnEvent::ToolInputAvailable {
                call_id,
                tool_name,
                input,
            } => call_id.len() + tool_name.len() + value_weight(input),
            TurnEvent::ToolOutputAvailable { call_id, output } => call_id.len() + output.len(),
            TurnEvent::ToolOutputError { call_id, error } => call_id.len() + error.len(),
            TurnEvent::ToolApprovalRequested {
                call_id,
                approval_id,
            } => call_id.len() + approval_id.len(),
            TurnEvent::ToolOutputDenied { call_id } => call_id.len(),
            TurnEvent::ToolImages { call_id, images } => {
                call_id.len()
                    + images
                        .iter()
                        .map(|image| image.mime_type.len() + image.data.len())
                        .sum::<usize>()
            }
            TurnEvent::StepStarted { .. }
            | TurnEvent::StepFinished { .. }
            | TurnEvent::Finished { .. }
            | TurnEvent::Failed { .. }
            | TurnEvent::Aborted => 0,
        }
}

/// About how many bytes a JSON value holds.
fn value_weight(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) | Value::Number(_) => 8,
        Value::String(text) => text.len(),
        Value::Array(items) => items.iter().map(value_weight).sum::<usize>() + 8,
        Value::Object(fields) => fields
            .iter()
            .map(|(key, value)| key.len() + value_weight(value))
            .sum::<usize>()
            .saturating_add(8),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use pretty_assertions::assert_eq;

    fn text(len: usize) -> TurnEvent {
        TurnEvent::TextDelta("x".repeat(len))
    }

    #[tokio::test]
    async fn the_buffer_holds_at_most_its_bytes_and_gives_them_back_as_events_are_read() {
        let fixed = std::mem::size_of::<TurnEvent>();
        // Room for two events of 1,000 bytes, not three.
        let (sender, mut events) = event_channel(2 * (fixed + 1000) + 10);
        sender.send(text(1000)).await.expect("first");
        sender.send(text(1000)).await.expect("second");
        let third = sender.send(text(1000));
        tokio::pin!(third);
        assert!(futures::poll!(third.as_mut()).is_pending(), "a third fits");
        assert_eq!(events.next().await, Some(text(1000)));
        third.await.expect("third, once one was read");
        // An event larger than the whole budget goes alone.
        let (sender, mut events) = event_channel(100);
        sender.send(text(5000)).await.expect("big");
        let next = sender.send(text(1));
        tokio::pin!(next);
        assert!(futures::poll!(next.as_mut()).is_pending());
        assert_eq!(events.next().await, Some(text(5000)));
        next.await.expect("the next after it");
    }

    #[tokio::test]
    async fn a_closed_reader_ends_a_send_that_waits_for_room() {
        let (sender, events) = event_channel(10);
        sender.send(text(100)).await.expect("first");
        let waiting = sender.send(text(100));
        tokio::pin!(waiting);
        assert!(futures::poll!(waiting.as_mut()).is_pending());
        drop(events);
        assert_eq!(waiting.await, Err(Closed));
    }
}
