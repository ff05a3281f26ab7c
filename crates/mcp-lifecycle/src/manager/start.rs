//! A server's start: one task per start that every caller waits on ([`McpServerManager::start_future`],
//! a `start {server}` span with its reason), the start itself (environment, sandbox, spawn
//! or connection, `initialize`, the tool listing, published), and the watch on a running
//! server that records an exit and restarts an always-on one.

use super::*;

impl McpServerManager {
    /// The start, as a task of its own so that a caller giving up does not cancel it for
    /// the others waiting on it.
    /// The start is a span of its own (`start {server}`, `why` its reason), a child of the
    /// span that asked for it.
    /// `listing`: the start is a listing's ([`Demand::Listing`]).
    pub(super) fn start_future(
        &self,
        slot: Arc<Slot>,
        why: &'static str,
        listing: bool,
    ) -> StartFuture {
        let manager = Self {
            inner: self.inner.clone(),
        };
        let config_name = slot.config().name.clone();
        let span = crate::spans::start(&config_name, why);
        let task = tokio::spawn(
            async move {
                let started = manager.run_start(slot, listing).await;
                let span = tracing::Span::current();
                match &started {
                    Ok(process) if !span.is_disabled() => {
                        span.record("process.pid", process.pid().unwrap_or_default());
                        if let Some(info) = process.peer().peer_info() {
                            span.record(
                                "mcp.protocol.version",
                                tracing::field::display(&info.protocol_version),
                            );
                        }
                    }
                    Ok(_) => {}
                    Err(error) => crate::spans::failed(&span, error.kind()),
                }
                started
            }
            .instrument(span),
        );
        async move {
            match task.await {
                Ok(result) => result,
                Err(_) => Err(LifecycleError::NotRunning {
                    server: config_name,
                    state: ServerState::Error,
                    exit: None,
                    stderr_tail: Vec::new(),
                }),
            }
        }
        .boxed()
        .shared()
    }

    async fn run_start(
        &self,
        slot: Arc<Slot>,
        listing: bool,
    ) -> Result<Arc<McpProcess>, LifecycleError> {
        let config = slot.config();
        let settings = &self.inner.settings;
        let (changed_tx, changed_rx) = crate::tool_lists::changes_channel();
        let client = mcp_client::ClientSide::new(changed_tx, slot.relay.clone());
        let strict = server_env(&config, &settings.env, &settings.env_policy);
        // A listing's start leaves out `${VAR}`s of unset variables; what that left out is
        // kept with the process, which then serves the listing only.
        let (env, env_incomplete) = match strict {
            Err(error @ LifecycleError::NotConfigured { .. }) if listing => (
                crate::environment::server_env_leaving_out_unset(
                    &config,
                    &settings.env,
                    &settings.env_policy,
                ),
                Some(error),
            ),
            strict => (strict, None),
        };
        let transport = match (slot.in_process().is_some(), config.remote.is_some()) {
            (true, _) => "in-process",
            (false, true) => "remote",
            (false, false) => "stdio",
        };
        tracing::Span::current().record("botcraft.server.transport", transport);
        let initialize = crate::spans::initialize(&config.name);
        let started = async { match (slot.in_process(), env) {
            (None, _) if config.remote.is_some() => self.connect_remote(&slot, client).await,
            (Some(server), _) => {
                McpProcess::start_in_process(&config, server.as_ref(), client).await
            }
            (None, Ok(mut env)) => {
                if let Some(run_as) = &settings.run_as {
                    run_as.apply_env(&mut env);
                }
                let confinement = match &settings.sandbox {
                    Some(sandbox) => crate::confinement::confine(
                        &config,
                        &mut env,
                        sandbox,
                        settings.run_as.as_ref(),
                    ),
                    None => Ok(None),
                };
                match confinement {
                    Err(error) => Err(error),
                    Ok(confinement) => {
                        let options = crate::process::StartOptions {
                    confinement,
                    run_as: settings.run_as.as_ref(),
                    stderr_lines: settings.stderr_lines,
                    stop_grace: settings.stop_grace,
                    registry: self.inner.registry.clone(),
                    cancel: slot.start_cancel(),
                    cgroup: self.inner.cgroups.as_ref().and_then(|cgroups| {
                        cgroups
                            .server(&config.name)
                            .inspect_err(|error| tracing::debug!(server = %config.name, %error, "no cgroup for this start"))
                            .ok()
                    }),
                };
                        McpProcess::start(&config, &env, options, client).await
                    }
                }
            }
            (None, Err(error)) => Err(error),
        } }
        .await;
        if let Err(error) = &started {
            crate::spans::failed(&initialize, error.kind());
        }
        // Timed from its creation above to here (not entered: see `handshake_over`).
        drop(initialize);
        let process = match started {
            Ok(process) => Arc::new(process),
            Err(LifecycleError::NeedsAuth { challenge, .. }) => {
                return Err(self.mark_needs_auth(&slot, challenge));
            }
            Err(error) => {
                let mut state = slot.lock();
                if !landed(&mut state, Phase::Error) {
                    // A stop took the start over: it decides what comes next.
                    return Err(error);
                }
                state.last_error = Some(error.clone());
                note_start_failure(&mut state, &settings.restart);
                if let LifecycleError::InitFailed {
                    exit, stderr_tail, ..
                } = &error
                {
                    state.last_exit = *exit;
                    state.last_stderr = stderr_tail.clone();
                }
                drop(state);
                tracing::warn!(server = %config.name, %error, "MCP server failed to start");
                return Err(error);
            }
        };
        let tools = match process.list_tools(config.init_timeout).await {
            Ok(tools) => tools,
            Err(LifecycleError::NeedsAuth { challenge, .. }) => {
                process.stop(settings.stop_grace).await;
                return Err(self.mark_needs_auth(&slot, challenge));
            }
            Err(error) => {
                process.stop(settings.stop_grace).await;
                let mut state = slot.lock();
                if landed(&mut state, Phase::Error) {
                    state.last_error = Some(error.clone());
                    note_start_failure(&mut state, &settings.restart);
                }
                return Err(error);
            }
        };
        if let Some(error) = env_incomplete {
            process.mark_listing_only(error);
        }
        let running = {
            let mut state = slot.lock();
            let running = landed(&mut state, Phase::Running(process.clone()));
            if running {
                state.last_activity = tokio::time::Instant::now();
                state.last_error = None;
                state.start_failures = 0;
                state.retry_at = None;
                state.auth_challenge = None;
            }
            running
        };
        if !running {
            // A stop came during the listing: this process is not handed out as running
            // (whoever waited for the stop would take a process being stopped); it is stopped
            // here, and the start is said to be cancelled.
            process.stop(settings.stop_grace).await;
            return Err(LifecycleError::StartCancelled {
                server: config.name.clone(),
            });
        }
        tracing::Span::current().record("botcraft.server.tools", tools.len());
        tracing::info!(server = %config.name, pid = ?process.pid(), tools = tools.len(), "MCP server running");
        crate::tool_lists::publish(self, &slot, &config, tools).await;
        crate::tool_lists::follow_changes(
            self.clone_handle(),
            slot.clone(),
            process.clone(),
            changed_rx,
        );
        self.watch_exit(slot, process.clone());
        Ok(process)
    }

    async fn connect_remote(
        &self,
        slot: &Slot,
        client: mcp_client::ClientSide,
    ) -> Result<McpProcess, LifecycleError> {
        let config = slot.config();
        let Some(endpoint) = &config.remote else {
            return Err(LifecycleError::UnknownServer {
                server: config.name.clone(),
            });
        };
        let settings = &self.inner.settings;
        let headers =
            crate::remote::resolve_headers(&config, endpoint, &settings.env, &settings.env_policy)?;
        let http = self.inner.http.get_or_init(mcp_client::http_client);
        let oauth = match &settings.oauth {
            Some(oauth) if crate::oauth::eligible(endpoint) => {
                // Discovery and a refresh talk to servers the MCP server names: within the
                // start's own deadline, and ended by a stop, as the connection itself.
                let authorized = crate::oauth::authorized_client(
                    &self.inner.oauth,
                    &self.inner.records,
                    oauth,
                    &config,
                    slot.principal.as_deref(),
                    endpoint,
                    http.clone(),
                );
                let cancel = slot.start_cancel();
                let authorized = tokio::select! {
                    authorized = tokio::time::timeout(config.init_timeout, authorized) => authorized,
                    () = cancel.cancelled() => {
                        return Err(LifecycleError::StartCancelled {
                            server: config.name.clone(),
                        });
                    }
                };
                let Ok(authorized) = authorized else {
                    return Err(LifecycleError::InitTimeout {
                        server: config.name.clone(),
                        timeout: config.init_timeout,
                        stderr_tail: Vec::new(),
                    });
                };
                Some(authorized?.map_or(mcp_client::Auth::Challengeable, mcp_client::Auth::Token))
            }
            _ => None,
        };
        crate::remote::connect(
            &config,
            endpoint,
            headers,
            http.clone(),
            oauth,
            client,
            slot.start_cancel(),
        )
        .await
    }

    pub(crate) fn clone_handle(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }

    /// When `process` dies on its own, record why; restart it if the server is always-on.
    fn watch_exit(&self, slot: Arc<Slot>, process: Arc<McpProcess>) {
        let manager = self.clone_handle();
        tokio::spawn(async move {
            let exit = process.exited().await;
            let config = slot.config();
            let unexpected = {
                let mut state = slot.lock();
                match &state.phase {
                    Phase::Running(current) if Arc::ptr_eq(current, &process) => {
                        state.set(Phase::Error);
                        state.last_exit = Some(exit);
                        state.last_stderr = process.stderr_tail();
                        state.last_error = Some(match process.url() {
                            Some(url) => LifecycleError::Disconnected {
                                server: config.name.clone(),
                                url: url.to_owned(),
                                unsent: false,
                            },
                            None => LifecycleError::Exited {
                                server: config.name.clone(),
                                exit,
                                stderr_tail: process.stderr_tail(),
                            },
                        });
                        true
                    }
                    _ => false,
                }
            };
            if unexpected {
                tracing::warn!(server = %config.name, %exit, "MCP server exited");
                // Reap what it left behind (a setsid grandchild, the rest of its group).
                process.stop(manager.inner.settings.stop_grace).await;
                manager.sweep_soon();
                let stable = process.uptime() >= manager.inner.settings.restart.stable_after;
                if config.always_on {
                    manager.schedule_restart(slot, stable);
                }
            }
        });
    }
}

/// A start failed: on-demand starts wait the restart policy's backoff for this many failures
/// in a row (no jitter, so the remaining time can be told), explicit starts do not.
fn note_start_failure(state: &mut SlotState, policy: &crate::restart::RestartPolicy) {
    state.start_failures = state.start_failures.saturating_add(1);
    state.retry_at = Some(tokio::time::Instant::now() + policy.start_backoff(state.start_failures));
}

/// Set what a start came to, unless a stop took the slot meanwhile (its phase is no longer
/// `Starting`): then the stop decides what comes next, and nothing is set. Whether it was set.
fn landed(state: &mut SlotState, phase: Phase) -> bool {
    if matches!(state.phase, Phase::Starting(_)) {
        state.set(phase);
        true
    } else {
        false
    }
}
