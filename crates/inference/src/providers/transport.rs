//! The HTTP and SSE plumbing both providers share: send the request, turn a
//! non-2xx answer into [`ProviderError::Http`] with a capped body excerpt,
//! split the body into server-sent events and hand each to the provider's
//! [`StreamDecoder`], with an idle timeout on every wait and a bound on one event's size
//! ([`MAX_EVENT_BYTES`]).

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt, stream};

use super::{
    ERROR_BODY_LIMIT, MAX_EVENT_BYTES, ProviderError, ProviderEvent, ProviderKind, ProviderStream,
};

/// Turns a provider's server-sent events into [`ProviderEvent`]s.
pub(crate) trait StreamDecoder: Send + 'static {
    /// One event as it came off the wire.
    fn feed(&mut self, event: &Event) -> Result<Vec<ProviderEvent>, ProviderError>;
    /// The body ended; whatever the decoder still holds, or an error when the
    /// step had not finished.
    fn end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError>;
    /// The step finished: nothing after this is read.
    fn is_finished(&self) -> bool;
}

/// One prepared streaming request.
pub(crate) struct HttpCall {
    pub provider: ProviderKind,
    pub url: String,
    pub request: reqwest::RequestBuilder,
    pub idle_timeout: Duration,
}

/// Sends `call` when first polled and streams its decoded events.
pub(crate) fn stream_sse<D: StreamDecoder>(call: HttpCall, decoder: D) -> ProviderStream {
    let provider = call.provider;
    let idle = call.idle_timeout;
    stream::once(async move {
        match open(call).await {
            Ok(response) => decode(response.bytes_stream(), decoder, provider, idle).boxed(),
            Err(error) => stream::iter([Err(error)]).boxed(),
        }
    })
    .flatten()
    .boxed()
}

async fn open(call: HttpCall) -> Result<reqwest::Response, ProviderError> {
    let HttpCall {
        provider,
        url,
        request,
        idle_timeout,
    } = call;
    let response = match tokio::time::timeout(idle_timeout, request.send()).await {
        Err(_) => {
            return Err(ProviderError::Stalled {
                provider,
                idle: idle_timeout,
            });
        }
        Ok(Err(error)) => {
            // The base URL is the operator's and may carry credentials (`user:password@`,
            // a key in its query): shown cut, and reqwest's own message without it.
            return Err(ProviderError::Connect {
                provider,
                url: observability::shown_url(&url),
                detail: error_chain(&error.without_url()),
            });
        }
        Ok(Ok(response)) => response,
    };
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    Err(ProviderError::Http {
        provider,
        status: status.as_u16(),
        body_excerpt: read_capped(response, idle_timeout).await,
    })
}

/// The start of an error body: at most [`ERROR_BODY_LIMIT`] bytes, cut at a
/// character boundary, whitespace trimmed. A body that stalls or breaks
/// yields what arrived so far.
async fn read_capped(mut response: reqwest::Response, idle: Duration) -> String {
    let mut bytes = Vec::new();
    while bytes.len() < ERROR_BODY_LIMIT {
        match tokio::time::timeout(idle, response.chunk()).await {
            Ok(Ok(Some(chunk))) => bytes.extend_from_slice(&chunk),
            _ => break,
        }
    }
    excerpt(&bytes)
}

fn excerpt(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut end = text.len().min(ERROR_BODY_LIMIT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].trim().to_owned()
}

/// An error and its sources on one line.
pub(crate) fn error_chain(error: &dyn StdError) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(text, ": {cause}");
        source = cause.source();
    }
    text
}

/// The most bytes handed to the SSE parser at once: a network read can bring hundreds of KiB,
/// which the parser would copy line by line (its buffer is re-made after each line), so a
/// chunk goes on in slices of this size (zero-copy, of the same allocation).
const PARSER_SLICE: usize = 16 * 1024;

/// The body's bytes, in slices of at most [`PARSER_SLICE`], counted since the last event the
/// parser gave: past `max`, an error instead of more bytes, so one event never grows the
/// parser's buffer past `max` (and a slice).
struct Counted<S> {
    bytes: S,
    /// What is left of the last chunk.
    rest: bytes::Bytes,
    since_event: Arc<AtomicUsize>,
    max: usize,
}

/// A transport error, or an event over the size bound.
#[derive(Debug)]
enum CountedError<E> {
    Transport(E),
    Oversized(usize),
}

impl<E: StdError> std::fmt::Display for CountedError<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Transport(error) => std::fmt::Display::fmt(error, f),
            Self::Oversized(max) => write!(f, "an event longer than {max} bytes"),
        }
    }
}

impl<E: StdError + 'static> StdError for CountedError<E> {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Transport(error) => error.source(),
            Self::Oversized(_) => None,
        }
    }
}

impl<S, B, E> futures::Stream for Counted<S>
where
    S: futures::Stream<Item = Result<B, E>> + Unpin,
    B: Into<bytes::Bytes>,
{
    type Item = Result<bytes::Bytes, CountedError<E>>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.since_event.load(Ordering::Relaxed) > self.max {
            return Poll::Ready(Some(Err(CountedError::Oversized(self.max))));
        }
        if self.rest.is_empty() {
            match Pin::new(&mut self.bytes).poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => self.rest = chunk.into(),
                Poll::Ready(Some(Err(error))) => {
                    return Poll::Ready(Some(Err(CountedError::Transport(error))));
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
        let take = self.rest.len().min(PARSER_SLICE);
        let slice = self.rest.split_to(take);
        self.since_event.fetch_add(slice.len(), Ordering::Relaxed);
        Poll::Ready(Some(Ok(slice)))
    }
}

struct DecodeState<S, D> {
    events: S,
    decoder: D,
    pending: VecDeque<ProviderEvent>,
    done: bool,
    since_event: Arc<AtomicUsize>,
}

/// Splits `bytes` into server-sent events and decodes them. Every wait for
/// the next bytes is bounded by `idle`, and every event by [`MAX_EVENT_BYTES`].
pub(crate) fn decode<S, B, E, D>(
    bytes: S,
    decoder: D,
    provider: ProviderKind,
    idle: Duration,
) -> impl Stream<Item = Result<ProviderEvent, ProviderError>> + Send + use<S, B, E, D>
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: Into<bytes::Bytes> + Send + 'static,
    E: StdError + Send + 'static,
    D: StreamDecoder,
{
    decode_bounded(bytes, decoder, provider, idle, MAX_EVENT_BYTES)
}

fn decode_bounded<S, B, E, D>(
    bytes: S,
    decoder: D,
    provider: ProviderKind,
    idle: Duration,
    max_event: usize,
) -> impl Stream<Item = Result<ProviderEvent, ProviderError>> + Send + use<S, B, E, D>
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: Into<bytes::Bytes> + Send + 'static,
    E: StdError + Send + 'static,
    D: StreamDecoder,
{
    let since_event = Arc::new(AtomicUsize::new(0));
    let counted = Counted {
        bytes,
        rest: bytes::Bytes::new(),
        since_event: Arc::clone(&since_event),
        max: max_event,
    };
    let state = DecodeState {
        events: counted.eventsource(),
        decoder,
        pending: VecDeque::new(),
        done: false,
        since_event,
    };
    stream::unfold(state, move |mut state| async move {
        loop {
            if let Some(event) = state.pending.pop_front() {
                return Some((Ok(event), state));
            }
            if state.done {
                return None;
            }
            let next = match tokio::time::timeout(idle, state.events.next()).await {
                Err(_) => {
                    state.done = true;
                    return Some((Err(ProviderError::Stalled { provider, idle }), state));
                }
                Ok(next) => next,
            };
            let decoded = match next {
                None => {
                    state.done = true;
                    state.decoder.end()
                }
                Some(Ok(event)) => {
                    state.since_event.store(0, Ordering::Relaxed);
                    let decoded = state.decoder.feed(&event);
                    state.done = state.decoder.is_finished();
                    decoded
                }
                Some(Err(error)) => Err(stream_error(provider, error)),
            };
            match decoded {
                Ok(events) => state.pending.extend(events),
                Err(error) => {
                    state.done = true;
                    state.pending.clear();
                    return Some((Err(error), state));
                }
            }
        }
    })
}

fn stream_error<E: StdError + 'static>(
    provider: ProviderKind,
    error: EventStreamError<CountedError<E>>,
) -> ProviderError {
    match error {
        EventStreamError::Transport(CountedError::Oversized(max)) => ProviderError::Malformed {
            provider,
            detail: format!(
                "a server-sent event longer than {max} bytes (the most BotCraft reads of one event)"
            ),
        },
        EventStreamError::Transport(CountedError::Transport(error)) => ProviderError::Transport {
            provider,
            detail: error_chain(&error),
        },
        EventStreamError::Utf8(error) => ProviderError::Malformed {
            provider,
            detail: format!("invalid UTF-8: {error}"),
        },
        EventStreamError::Parser(error) => ProviderError::Malformed {
            provider,
            detail: format!("invalid server-sent event: {error}"),
        },
    }
}

/// Test helpers: run a decoder over a fixture cut into pieces.
#[cfg(test)]
pub(crate) mod testing {
    use std::convert::Infallible;

    use super::*;

    /// Decodes `pieces` as consecutive body chunks.
    pub(crate) async fn decode_pieces<D: StreamDecoder>(
        pieces: Vec<Vec<u8>>,
        decoder: D,
        provider: ProviderKind,
    ) -> Vec<Result<ProviderEvent, ProviderError>> {
        let bytes = stream::iter(pieces.into_iter().map(Ok::<_, Infallible>));
        decode(bytes, decoder, provider, Duration::from_secs(3600))
            .collect()
            .await
    }

    /// The fixture whole, cut in two at every byte, and in one-byte pieces.
    pub(crate) fn cuttings(fixture: &str) -> Vec<Vec<Vec<u8>>> {
        let bytes = fixture.as_bytes();
        let mut cuttings = vec![vec![bytes.to_vec()]];
        for at in 1..bytes.len() {
            cuttings.push(vec![bytes[..at].to_vec(), bytes[at..].to_vec()]);
        }
        cuttings.push(bytes.iter().map(|byte| vec![*byte]).collect());
        cuttings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// A decoder that turns each event's data into a text delta.
    struct Echo;

    impl StreamDecoder for Echo {
        fn feed(&mut self, event: &Event) -> Result<Vec<ProviderEvent>, ProviderError> {
            Ok(vec![ProviderEvent::TextDelta(event.data.clone())])
        }
        fn end(&mut self) -> Result<Vec<ProviderEvent>, ProviderError> {
            Ok(Vec::new())
        }
        fn is_finished(&self) -> bool {
            false
        }
    }

    #[tokio::test]
    async fn an_event_over_the_bound_ends_the_stream_and_events_below_it_pass() {
        let pieces = |chunks: Vec<String>| {
            stream::iter(
                chunks
                    .into_iter()
                    .map(|chunk| Ok::<_, std::convert::Infallible>(chunk.into_bytes())),
            )
        };
        // Many events of 60 bytes each, in one chunk and in many: the bound is per event.
        let small: String = (0..100).map(|i| format!("data: {i:054}\n\n")).collect();
        let got: Vec<_> = decode_bounded(
            pieces(vec![small.clone()]),
            Echo,
            ProviderKind::OpenAi,
            Duration::from_secs(60),
            100,
        )
        .collect()
        .await;
        assert_eq!(got.len(), 100);
        assert!(got.iter().all(Result::is_ok));
        // One event of 1,000 bytes sent 10 at a time, never ending: refused, not buffered.
        let endless = std::iter::once("data: ".to_owned())
            .chain(std::iter::repeat_n("x".repeat(10), 100))
            .collect();
        let got: Vec<_> = decode_bounded(
            pieces(endless),
            Echo,
            ProviderKind::OpenAi,
            Duration::from_secs(60),
            100,
        )
        .collect()
        .await;
        assert_eq!(
            got,
            vec![Err(ProviderError::Malformed {
                provider: ProviderKind::OpenAi,
                detail: "a server-sent event longer than 100 bytes (the most BotCraft reads of one event)"
                    .to_owned()
            })]
        );
    }

    #[test]
    fn excerpt_is_capped_at_a_char_boundary_and_trimmed() {
        let long = "é".repeat(ERROR_BODY_LIMIT);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.len(), ERROR_BODY_LIMIT);
        assert_eq!(excerpt(b"  {\"error\":\"x\"}\n"), "{\"error\":\"x\"}");
    }
}

/// A provider endpoint as `Debug` shows it: whether a key is set (never the key) and the base
/// URL as it may be shown (no user information, no query).
pub(crate) fn debug_endpoint(
    f: &mut std::fmt::Formatter<'_>,
    name: &str,
    api_key: Option<&String>,
    base_url: Option<&str>,
) -> std::fmt::Result {
    f.debug_struct(name)
        .field("api_key", &api_key.map(|_| "[hidden]"))
        .field("base_url", &base_url.map(observability::shown_url))
        .finish_non_exhaustive()
}
