//! The HTTP and SSE plumbing both providers share: send the request, turn a
//! non-2xx answer into [`ProviderError::Http`] with a capped body excerpt,
//! split the body into server-sent events and hand each to the provider's
//! [`StreamDecoder`], with an idle timeout on every wait.

use std::collections::VecDeque;
use std::error::Error as StdError;
use std::fmt::Write as _;
use std::time::Duration;

use eventsource_stream::{Event, EventStreamError, Eventsource};
use futures::{Stream, StreamExt, stream};

use super::{ERROR_BODY_LIMIT, ProviderError, ProviderEvent, ProviderKind, ProviderStream};

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
            return Err(ProviderError::Connect {
                provider,
                url,
                detail: error_chain(&error),
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

struct DecodeState<S, D> {
    events: S,
    decoder: D,
    pending: VecDeque<ProviderEvent>,
    done: bool,
}

/// Splits `bytes` into server-sent events and decodes them. Every wait for
/// the next bytes is bounded by `idle`.
pub(crate) fn decode<S, B, E, D>(
    bytes: S,
    decoder: D,
    provider: ProviderKind,
    idle: Duration,
) -> impl Stream<Item = Result<ProviderEvent, ProviderError>> + Send + use<S, B, E, D>
where
    S: Stream<Item = Result<B, E>> + Send + Unpin + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: StdError + Send + 'static,
    D: StreamDecoder,
{
    let state = DecodeState {
        events: bytes.eventsource(),
        decoder,
        pending: VecDeque::new(),
        done: false,
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

fn stream_error<E: StdError>(provider: ProviderKind, error: EventStreamError<E>) -> ProviderError {
    match error {
        EventStreamError::Transport(error) => ProviderError::Transport {
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

    #[test]
    fn excerpt_is_capped_at_a_char_boundary_and_trimmed() {
        let long = "é".repeat(ERROR_BODY_LIMIT);
        let cut = excerpt(long.as_bytes());
        assert_eq!(cut.len(), ERROR_BODY_LIMIT);
        assert_eq!(excerpt(b"  {\"error\":\"x\"}\n"), "{\"error\":\"x\"}");
    }
}
