//! A step's tool calls: which wait for a person ([`ChatTurn::asks`]), the calls a previous
//! turn asked about settled ([`ChatTurn::settle`]), and the step's calls run concurrently,
//! each under its deadline and in its span, their results cut to the turn's cap.

use super::*;

impl ChatTurn {
    /// Whether `call` waits for a person: approvals are on, the gate names its tool, and the
    /// call could run (valid input, a tool offered in this step).
    pub(super) fn asks(&self, call: &PendingCall, offered: &BTreeSet<String>) -> bool {
        self.approvals.as_ref().is_some_and(|approvals| {
            call.input.is_ok() && offered.contains(&call.name) && approvals.gate.asks(&call.name)
        })
    }

    /// [`Self::asks`] by the policies as they are now (read again).
    async fn asks_now(&self, call: &PendingCall, offered: &BTreeSet<String>) -> bool {
        if let Some(approvals) = &self.approvals {
            approvals.gate.refresh().await;
        }
        self.asks(call, offered)
    }

    /// Where a call of `name` goes now, as approvals bind it.
    pub(super) fn target(&self, name: &str) -> CallTarget {
        if self.native.get(name).is_some() {
            return CallTarget::Native;
        }
        self.executor
            .as_ref()
            .and_then(|executor| executor.target(name))
            .unwrap_or(CallTarget::Nowhere)
    }

    /// The calls the previous turn asked about, settled: approved ones whose approval id
    /// holds are run; denied, unanswered and refused ones are told to the model. Results in
    /// the calls' order; `None` when the turn was cancelled meanwhile.
    pub(super) async fn settle(
        &self,
        offered: &BTreeSet<String>,
        emitter: &Emitter,
    ) -> Option<Vec<ToolResult>> {
        let mut results = Vec::new();
        let mut approved = Vec::new();
        for resumed in &self.resumed {
            let call = &resumed.call;
            let not_run = |content: String| ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content,
                is_error: true,
                images: Vec::new(),
            };
            match resumed.approved {
                Some(true) => {
                    let checked = match &self.approvals {
                        Some(approvals) => approvals
                            .consume(&resumed.approval_id, call, &self.target(&call.name))
                            .await
                            .map_err(|error| error.to_string()),
                        None => Err("this bot's calls need no approval now".to_owned()),
                    };
                    turn_spans::approval_answered(
                        &call.name,
                        &call.id,
                        if checked.is_ok() {
                            "approved"
                        } else {
                            "refused"
                        },
                    );
                    match checked {
                        Ok(()) => approved.push(PendingCall {
                            id: call.id.clone(),
                            name: call.name.clone(),
                            input: Ok(call.input.clone()),
                        }),
                        Err(why) => {
                            // Debug: the name and id come from the client, escaped in the log.
                            tracing::warn!(tool = ?call.name, call = ?call.id, why, "an approval was refused");
                            emitter
                                .send(TurnEvent::ToolOutputError {
                                    call_id: call.id.clone(),
                                    error: format!("not run: {why}"),
                                })
                                .await;
                            results.push(not_run(format!(
                                "This call was not run: its approval was refused ({why}). Ask the user again if it is still needed."
                            )));
                        }
                    }
                }
                answer => {
                    turn_spans::approval_answered(
                        &call.name,
                        &call.id,
                        if answer.is_some() {
                            "denied"
                        } else {
                            "unanswered"
                        },
                    );
                    emitter
                        .send(TurnEvent::ToolOutputDenied {
                            call_id: call.id.clone(),
                        })
                        .await;
                    results.push(not_run(match answer {
                        Some(_) => crate::ui_message::denied_text(resumed.reason.as_deref()),
                        None => {
                            "the user gave no answer to this tool call; it was not run".to_owned()
                        }
                    }));
                }
            }
        }
        if !approved.is_empty() {
            results.extend(self.run_tools(&approved, offered, emitter, false).await?);
        }
        Some(results)
    }

    /// The calls of a step past its cap ([`TurnConfig::max_calls_per_step`]), not run: each
    /// is told to the client and the model as an error.
    pub(super) async fn refuse_over_cap(
        &self,
        over: &[PendingCall],
        asked: usize,
        emitter: &Emitter,
    ) -> Vec<ToolResult> {
        let mut results = Vec::with_capacity(over.len());
        for call in over {
            let error = format!(
                "not run: this step asked for {asked} tool calls and at most {} run in one step; call the rest in the next step if they are still needed",
                self.config.max_calls_per_step
            );
            emitter
                .send(TurnEvent::ToolOutputError {
                    call_id: call.id.clone(),
                    error: error.clone(),
                })
                .await;
            results.push(ToolResult {
                call_id: call.id.clone(),
                tool_name: call.name.clone(),
                content: error,
                is_error: true,
                images: Vec::new(),
            });
        }
        if !over.is_empty() {
            tracing::warn!(
                asked,
                cap = self.config.max_calls_per_step,
                "a step asked for more tool calls than run in one step; the rest were refused"
            );
        }
        results
    }

    /// Runs the calls concurrently (at most [`TurnConfig::max_parallel_calls`] at once) and
    /// emits each output as it arrives.
    /// Results come back in call order; `None` when the turn was cancelled.
    /// `gated`: the calls were let through by the approval gate at the step's start (not
    /// approved by a person); one that waits for a free slot asks the gate again when it
    /// starts, and is refused (the model told to call it again, which asks) when its policy
    /// was tightened meanwhile.
    pub(super) async fn run_tools(
        &self,
        calls: &[PendingCall],
        offered: &BTreeSet<String>,
        emitter: &Emitter,
        gated: bool,
    ) -> Option<Vec<ToolResult>> {
        let parallel = self.config.max_parallel_calls.max(1);
        // At most `max_parallel_calls` at once, started in call order; one not started when
        // the turn is cancelled never starts.
        // (The futures are made first: a stream mapping borrowed calls lazily is not `Send`
        // for every lifetime, which `tokio::spawn` of the turn needs.)
        let calls_to_run: Vec<_> = calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                let token = emitter.cancel.child_token();
                async move {
                    if token.is_cancelled() {
                        return (index, Err(ToolCallError::Cancelled.to_string()));
                    }
                    if gated && index >= parallel && self.asks_now(call, offered).await {
                        return (
                            index,
                            Err(format!(
                                "{} now waits for a person's approval (its policy changed during \
                                 this turn): call it again to ask",
                                call.name
                            )),
                        );
                    }
                    (index, self.execute(call, offered, token).await)
                }
            })
            .collect();
        let mut running = futures::stream::iter(calls_to_run).buffer_unordered(parallel);
        let mut outputs: Vec<Option<Result<CallOutput, String>>> = vec![None; calls.len()];
        loop {
            let next = tokio::select! {
                biased;
                () = emitter.stopped() => break,
                next = running.next() => next,
            };
            let Some((index, output)) = next else {
                break;
            };
            let call_id = calls[index].id.clone();
            match &output {
                Ok(output) => {
                    emitter
                        .send(TurnEvent::ToolOutputAvailable {
                            call_id: call_id.clone(),
                            output: output.text.clone(),
                        })
                        .await;
                    if !output.images.is_empty() {
                        // The front end shows them whether or not the model sees them.
                        emitter
                            .send(TurnEvent::ToolImages {
                                call_id,
                                images: output.images.clone(),
                            })
                            .await;
                    }
                }
                Err(error) => {
                    emitter
                        .send(TurnEvent::ToolOutputError {
                            call_id,
                            error: error.clone(),
                        })
                        .await;
                }
            }
            outputs[index] = Some(output);
        }
        if emitter.cancel.is_cancelled() {
            // The calls saw their tokens fire: give them a moment to stop.
            let wind_down = async { while running.next().await.is_some() {} };
            let _ = tokio::time::timeout(self.config.cancel_grace, wind_down).await;
            return None;
        }
        let results = calls
            .iter()
            .zip(outputs)
            .map(|(call, output)| {
                let output = output.unwrap_or_else(|| Err(ToolCallError::Cancelled.to_string()));
                let is_error = output.is_err();
                let output = output.unwrap_or_else(|error| CallOutput {
                    text: error,
                    images: Vec::new(),
                });
                ToolResult {
                    call_id: call.id.clone(),
                    tool_name: call.name.clone(),
                    content: output.text,
                    is_error,
                    // Only a model that takes images gets them; the text describes them.
                    images: if self.config.vision {
                        output.images
                    } else {
                        Vec::new()
                    },
                }
            })
            .collect();
        Some(results)
    }

    /// One call, in its `execute_tool {name}` span: the text the model reads, or the error
    /// it is told.
    async fn execute(
        &self,
        call: &PendingCall,
        offered: &BTreeSet<String>,
        cancel: CancellationToken,
    ) -> Result<CallOutput, String> {
        let native = self.native.get(&call.name).is_some();
        let span = turn_spans::tool_call(&call.name, &call.id, native);
        if let Ok(input) = &call.input {
            turn_spans::tool_arguments(&span, input);
        }
        let output = self
            .execute_uncapped(call, offered, cancel)
            .instrument(span.clone())
            .await;
        turn_spans::tool_ended(
            &span,
            match &output {
                Ok(output) => Ok(output.text.as_str()),
                Err(_) => Err("tool_error"),
            },
        );
        if self.native.get(&call.name).is_some() {
            // Native results (tool_search's JSON) are ours and bounded: never cut.
            return output;
        }
        let max = self.config.max_tool_result_chars;
        output
            .map(|output| CallOutput {
                text: cap_text(output.text, max),
                images: output.images,
            })
            .map_err(|error| cap_text(error, max))
    }

    async fn execute_uncapped(
        &self,
        call: &PendingCall,
        offered: &BTreeSet<String>,
        cancel: CancellationToken,
    ) -> Result<CallOutput, String> {
        // Stops the call's own work when it ends early (its deadline).
        let _stop = cancel.clone().drop_guard();
        let input = match &call.input {
            Ok(input) => input.clone(),
            Err(InvalidToolInput { reason, .. }) => {
                return Err(format!("invalid input for `{}`: {reason}", call.name));
            }
        };
        if !offered.contains(&call.name) {
            return Err(format!(
                "tool `{}` is not available in this step",
                call.name
            ));
        }
        if let Some(tool) = self.native.get(&call.name) {
            let deadline = self.config.tool_timeout;
            return match tokio::time::timeout(deadline, tool.call(input, cancel)).await {
                Err(_) => Err(ToolCallError::Timeout { after: deadline }.to_string()),
                Ok(result) => result
                    .map(|text| CallOutput {
                        text,
                        images: Vec::new(),
                    })
                    .map_err(|error| error.to_string()),
            };
        }
        let Some(executor) = &self.executor else {
            return Err(ToolCallError::UnknownTool {
                name: call.name.clone(),
            }
            .to_string());
        };
        let deadline = executor
            .timeout(&call.name)
            .unwrap_or(self.config.tool_timeout);
        match tokio::time::timeout(deadline, executor.call(&call.name, input, cancel)).await {
            Err(_) => Err(ToolCallError::Timeout { after: deadline }.to_string()),
            Ok(Err(error)) => Err(error.to_string()),
            Ok(Ok(content)) if content.is_error => Err(content.text),
            Ok(Ok(content)) => Ok(CallOutput {
                text: content.text,
                images: content.images,
            }),
        }
    }
}
