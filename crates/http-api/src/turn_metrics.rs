//! What a chat turn records in the metrics, read from its [`TurnEvent`]s as they pass to the
//! client: each provider request (one model step) with its outcome, duration and tokens;
//! each `tool_search` call with how many tools it found; and, when the turn ends, whether
//! each search's tools were then called in the same turn (`SearchFollowUps`). Tool calls
//! themselves are recorded by the executor.
//!
//! A step's duration runs from its start to the last event the model streamed (text, tool
//! input), or to the step's end when it streamed nothing: tool execution is not counted.
//! A turn dropped mid-step (the client hung up) records that request as cancelled.

use std::collections::BTreeSet;
use std::time::Instant;

use inference::tool_search::found_names;
use inference::{TOOL_SEARCH, TurnEvent};
use observability::{BotCraftMetrics, ProviderOutcome, SearchFollowUps, TokenUsage};

/// Observes one turn's events; flushes on the last event or when dropped.
pub struct TurnRecorder {
    metrics: BotCraftMetrics,
    provider: &'static str,
    model: String,
    /// The step whose provider request is not recorded yet: when it started and when the
    /// model last streamed.
    step: Option<(Instant, Option<Instant>)>,
    searches: BTreeSet<String>,
    follow_ups: SearchFollowUps,
    done: bool,
}

impl TurnRecorder {
    pub fn new(metrics: BotCraftMetrics, provider: &'static str, model: impl Into<String>) -> Self {
        Self {
            metrics,
            provider,
            model: model.into(),
            step: None,
            searches: BTreeSet::new(),
            follow_ups: SearchFollowUps::new(),
            done: false,
        }
    }

    pub fn observe(&mut self, event: &TurnEvent) {
        match event {
            TurnEvent::StepStarted { .. } => self.step = Some((Instant::now(), None)),
            TurnEvent::TextDelta(_)
            | TurnEvent::ToolInputStarted { .. }
            | TurnEvent::ToolInputDelta { .. } => self.streamed(),
            TurnEvent::ToolInputAvailable {
                call_id, tool_name, ..
            } => {
                self.streamed();
                if tool_name == TOOL_SEARCH {
                    self.searches.insert(call_id.clone());
                } else {
                    self.follow_ups.called(tool_name);
                }
            }
            TurnEvent::ToolOutputAvailable { call_id, output } => {
                if self.searches.remove(call_id) {
                    let found = found_names(output);
                    self.metrics.tool_search(Some(found.len()));
                    self.follow_ups.searched(found);
                }
            }
            TurnEvent::ToolOutputError { call_id, .. } => {
                if self.searches.remove(call_id) {
                    self.metrics.tool_search(None);
                }
            }
            TurnEvent::ToolImages { .. }
            | TurnEvent::ToolApprovalRequested { .. }
            | TurnEvent::ToolOutputDenied { .. } => {}
            TurnEvent::StepFinished { usage, .. } => {
                let tokens = TokenUsage {
                    input: usage.input_tokens,
                    output: usage.output_tokens,
                };
                self.end_step(ProviderOutcome::Ok, Some(tokens));
            }
            TurnEvent::Finished { .. } => self.finish(ProviderOutcome::Ok),
            TurnEvent::Failed { .. } => self.finish(ProviderOutcome::Error),
            TurnEvent::Aborted => self.finish(ProviderOutcome::Cancelled),
        }
    }

    fn streamed(&mut self) {
        if let Some((_, last)) = &mut self.step {
            *last = Some(Instant::now());
        }
    }

    fn end_step(&mut self, outcome: ProviderOutcome, tokens: Option<TokenUsage>) {
        if let Some((started, last)) = self.step.take() {
            let end = last.unwrap_or_else(Instant::now);
            self.metrics.provider_request(
                self.provider,
                &self.model,
                outcome,
                end.saturating_duration_since(started),
                tokens,
            );
        }
    }

    /// The turn ended: a step still open ends with `outcome`; follow-ups are counted.
    fn finish(&mut self, outcome: ProviderOutcome) {
        if self.done {
            return;
        }
        self.done = true;
        self.end_step(outcome, None);
        self.metrics.tool_search_follow_ups(&self.follow_ups);
    }
}

impl Drop for TurnRecorder {
    fn drop(&mut self) {
        self.finish(ProviderOutcome::Cancelled);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use inference::{FinishReason, ProviderError, ProviderKind, Usage};
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn count(metrics: &BotCraftMetrics, name: &str, labels: &[(&str, &str)]) -> f64 {
        let text = metrics.encode();
        text.lines()
            .filter(|line| line.starts_with(&format!("{name}{{")))
            .find(|line| {
                labels
                    .iter()
                    .all(|(k, v)| line.contains(&format!("{k}=\"{v}\"")))
            })
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse().ok())
            .unwrap_or(0.0)
    }

    fn search_output(names: &[&str]) -> String {
        let tools: Vec<_> = names
            .iter()
            .map(|n| json!({"name": n, "server": "s", "description": "", "parameters": ""}))
            .collect();
        json!({"tools": tools, "note": ""}).to_string()
    }

    #[test]
    fn a_turn_records_requests_searches_and_follow_ups() {
        let metrics = BotCraftMetrics::new().expect("metrics");
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 3,
        };
        let mut recorder = TurnRecorder::new(metrics.clone(), "openai", "m");
        let events = [
            TurnEvent::StepStarted { step: 0 },
            TurnEvent::ToolInputAvailable {
                call_id: "1".into(),
                tool_name: TOOL_SEARCH.into(),
                input: json!({"query": "echo"}),
            },
            TurnEvent::ToolInputAvailable {
                call_id: "2".into(),
                tool_name: TOOL_SEARCH.into(),
                input: json!({"query": "zzz"}),
            },
            TurnEvent::ToolOutputAvailable {
                call_id: "1".into(),
                output: search_output(&["s__echo", "s__add"]),
            },
            TurnEvent::ToolOutputAvailable {
                call_id: "2".into(),
                output: search_output(&["s__other"]),
            },
            TurnEvent::StepFinished {
                step: 0,
                reason: FinishReason::ToolCalls,
                usage,
            },
            TurnEvent::StepStarted { step: 1 },
            TurnEvent::ToolInputAvailable {
                call_id: "3".into(),
                tool_name: "s__echo".into(),
                input: json!({}),
            },
            TurnEvent::ToolOutputAvailable {
                call_id: "3".into(),
                output: "hi".into(),
            },
            TurnEvent::StepFinished {
                step: 1,
                reason: FinishReason::ToolCalls,
                usage,
            },
            TurnEvent::StepStarted { step: 2 },
            TurnEvent::Failed {
                error: ProviderError::Truncated {
                    provider: ProviderKind::OpenAi,
                },
            },
        ];
        for event in &events {
            recorder.observe(event);
        }
        drop(recorder);
        let requests = "botcraft_provider_requests_total";
        assert_eq!(count(&metrics, requests, &[("outcome", "ok")]), 2.0);
        assert_eq!(count(&metrics, requests, &[("outcome", "error")]), 1.0);
        let tokens = "botcraft_provider_tokens_total";
        assert_eq!(count(&metrics, tokens, &[("kind", "input")]), 20.0);
        let searches = "botcraft_tool_searches_total";
        assert_eq!(count(&metrics, searches, &[("outcome", "found")]), 2.0);
        let follow_ups = "botcraft_tool_search_follow_ups_total";
        assert_eq!(count(&metrics, follow_ups, &[("called", "yes")]), 1.0);
        assert_eq!(count(&metrics, follow_ups, &[("called", "no")]), 1.0);
    }

    #[test]
    fn a_dropped_turn_records_its_open_request_as_cancelled_once() {
        let metrics = BotCraftMetrics::new().expect("metrics");
        let mut recorder = TurnRecorder::new(metrics.clone(), "anthropic", "m");
        recorder.observe(&TurnEvent::StepStarted { step: 0 });
        recorder.observe(&TurnEvent::TextDelta("hi".into()));
        drop(recorder);
        let requests = "botcraft_provider_requests_total";
        assert_eq!(count(&metrics, requests, &[("outcome", "cancelled")]), 1.0);
        assert_eq!(count(&metrics, requests, &[("outcome", "ok")]), 0.0);
    }
}
