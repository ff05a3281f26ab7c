//! Tools that ask first: which calls wait for a person ([`ApprovalGate`]), the id that binds
//! an approval to exactly one call ([`ApprovalSigner`]), and what a client answered
//! ([`ResumedCall`]).
//!
//! The turn stays stateless across requests, as deferred loading is. A call that asks is not
//! run: the turn streams `tool-approval-request` with an `approvalId` and ends. The client
//! sends the conversation back with its answer on that tool part (`approval-responded`), and
//! the next turn starts by running the approved calls (or telling the model which were
//! denied) before it asks the model again. Nothing is kept in between: the `approvalId` is
//! `ap2.ISSUED_MS.MAC`, a keyed MAC (HMAC-SHA256) over the bot, who asked (the holder: the
//! digest of the API key whose turn asked, given to [`ApprovalSigner::new`]), the call's id, its
//! tool name, where that name leads (its server and the server's own tool name,
//! [`CallTarget`]), its input in canonical JSON, and the time it was issued. So a client
//! cannot approve a call other than the one shown (other arguments, another tool, another
//! bot), nor one another key's turn asked for (a second front end of the same bot), a name that leads
//! elsewhere by the time the answer comes (a server's tools changed meanwhile) runs nothing,
//! and an answer given after the TTL is refused. An id is read in one spelling only (its
//! issue time in canonical decimal), so each approval has one id for the ledger.
//!
//! An approval is single-use: before its call runs, its id is consumed in an
//! [`ApprovalLedger`] (the store, on every replica), so a replayed message or a duplicated
//! approved part runs nothing, and the model is told why.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use hmac::{KeyInit, Mac};
use sha2::Sha256;

use crate::conversation::ToolCall;

/// Decides which calls wait for approval, by the name the model called.
pub trait ApprovalGate: Send + Sync {
    /// Whether a call of tool `name` (as the model sees it) waits for a person.
    fn asks(&self, name: &str) -> bool;

    /// Reads the policies again: called before each step's calls are gated, so a policy
    /// tightened while a long turn runs applies to its next calls. A gate that cannot read
    /// them should ask for everything. The default reads nothing (a fixed gate).
    fn refresh(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// A gate from a list of names that ask.
impl ApprovalGate for std::collections::BTreeSet<String> {
    fn asks(&self, name: &str) -> bool {
        self.contains(name)
    }
}

/// Approvals in one turn: which calls ask, the signer of their ids, and where used ids are
/// recorded.
#[derive(Clone)]
pub struct Approvals {
    pub gate: Arc<dyn ApprovalGate>,
    pub signer: ApprovalSigner,
    pub ledger: Arc<dyn ApprovalLedger>,
}

impl Approvals {
    /// Checks `approval_id` against `call`, then consumes it in the ledger: `Ok` once per
    /// id, so the call it approves runs at most once.
    pub async fn consume(
        &self,
        approval_id: &str,
        call: &ToolCall,
        target: &CallTarget,
    ) -> Result<(), ApprovalError> {
        self.signer.check(approval_id, call, target)?;
        let expires = self
            .signer
            .expires_at(approval_id)
            .ok_or(ApprovalError::Malformed)?;
        match self
            .ledger
            .consume(approval_id, self.signer.bot(), expires)
            .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(ApprovalError::Replayed),
            Err(error) => Err(ApprovalError::Unrecorded(error)),
        }
    }
}

/// Where used approval ids are recorded, so each approval runs its call once.
pub trait ApprovalLedger: Send + Sync {
    /// Record `approval_id` (issued for bot `bot`, refused by its TTL after `expires_at_ms`)
    /// as used. `Ok(true)`: first use, the call may run; `Ok(false)`: used before.
    fn consume<'a>(
        &'a self,
        approval_id: &'a str,
        bot: &'a str,
        expires_at_ms: i64,
    ) -> futures::future::BoxFuture<'a, Result<bool, LedgerError>>;
}

/// The ledger could not record a use (its store is unreachable): the call does not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LedgerError(pub String);

/// A ledger in this process's memory: for one process (tests, one `botcraft serve` on
/// SQLite); a deployment with replicas uses the store's.
pub struct MemoryLedger {
    used: std::sync::Mutex<std::collections::HashMap<String, i64>>,
    clock: Clock,
}

impl MemoryLedger {
    /// A ledger that forgets an id once `clock` is past its expiry.
    pub fn new(clock: Clock) -> Self {
        Self {
            used: std::sync::Mutex::default(),
            clock,
        }
    }
}

impl Default for MemoryLedger {
    fn default() -> Self {
        Self::new(system_clock())
    }
}

impl ApprovalLedger for MemoryLedger {
    fn consume<'a>(
        &'a self,
        approval_id: &'a str,
        _bot: &'a str,
        expires_at_ms: i64,
    ) -> futures::future::BoxFuture<'a, Result<bool, LedgerError>> {
        let now = (self.clock)();
        let mut used = self
            .used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        used.retain(|_, expires| *expires >= now);
        let first = used.insert(approval_id.to_owned(), expires_at_ms).is_none();
        Box::pin(std::future::ready(Ok(first)))
    }
}

/// What the client answered for one call that asked, read from the conversation.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumedCall {
    pub call: ToolCall,
    /// The `approvalId` the client answered (as the client sent it back).
    pub approval_id: String,
    /// `None`: the client sent the conversation back without answering this call.
    pub approved: Option<bool>,
    pub reason: Option<String>,
}

/// Why an answered approval was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApprovalError {
    #[error("the approval id is not one BotCraft issued")]
    Malformed,
    #[error(
        "the approval was asked for before BotCraft was upgraded (its id is of the older kind): ask again"
    )]
    Outdated,
    #[error(
        "the approval was given for another call (other tool, arguments, bot or key, or the tool's name now leads to another tool)"
    )]
    Mismatch,
    #[error("the approval is {age_secs} s old; approvals last {ttl_secs} s")]
    Expired { age_secs: u64, ttl_secs: u64 },
    #[error("this approval was already used: an approval runs its call once")]
    Replayed,
    #[error("the approval could not be recorded as used ({0}), so its call was not run")]
    Unrecorded(LedgerError),
}

/// Milliseconds since the Unix epoch.
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// The system clock.
pub fn system_clock() -> Clock {
    Arc::new(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    })
}

/// Issues and checks approval ids for one bot.
#[derive(Clone)]
pub struct ApprovalSigner {
    key: [u8; 32],
    bot: String,
    /// Who asks and answers: the digest of the API key whose turn asked.
    holder: String,
    ttl: Duration,
    clock: Clock,
}

impl std::fmt::Debug for ApprovalSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalSigner")
            .field("key", &"[hidden]")
            .field("bot", &self.bot)
            .field("holder", &"[hidden]")
            .field("ttl", &self.ttl)
            .finish()
    }
}

const PREFIX: &str = "ap2";
/// The ids of releases before approvals were bound to a key (their MAC has no holder).
const OUTDATED_PREFIX: &str = "ap1";

impl ApprovalSigner {
    /// A signer for bot `bot` with `key` (secret; the same on every replica), its ids bound to
    /// `holder` (the digest of the API key of the turn: only a turn of the same key takes
    /// them), answers valid for `ttl` after the request.
    pub fn new(
        key: [u8; 32],
        bot: impl Into<String>,
        holder: impl Into<String>,
        ttl: Duration,
        clock: Clock,
    ) -> Self {
        Self {
            key,
            bot: bot.into(),
            holder: holder.into(),
            ttl,
            clock,
        }
    }

    /// The approval id of `call` (whose name leads to `target`), issued now.
    pub fn issue(&self, call: &ToolCall, target: &CallTarget) -> String {
        let issued = (self.clock)();
        format!("{PREFIX}.{issued}.{}", self.mac(issued, call, target))
    }

    /// Whether `approval_id` was issued for exactly `call` (this bot, tool, input), its name
    /// still leads to `target`, and it is still within the TTL.
    pub fn check(
        &self,
        approval_id: &str,
        call: &ToolCall,
        target: &CallTarget,
    ) -> Result<(), ApprovalError> {
        let mut pieces = approval_id.splitn(3, '.');
        if approval_id.starts_with(&format!("{OUTDATED_PREFIX}.")) {
            return Err(ApprovalError::Outdated);
        }
        let (Some(PREFIX), Some(issued_text), Some(mac)) =
            (pieces.next(), pieces.next(), pieces.next())
        else {
            return Err(ApprovalError::Malformed);
        };
        let issued: i64 = issued_text.parse().map_err(|_| ApprovalError::Malformed)?;
        // One spelling per approval (`+17…` or `017…` would be other ids for the ledger,
        // under the same MAC).
        if issued_text != issued.to_string() {
            return Err(ApprovalError::Malformed);
        }
        let given = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(mac)
            .map_err(|_| ApprovalError::Malformed)?;
        let mut expected = self.keyed();
        expected.update(&message(&self.bot, &self.holder, issued, call, target));
        expected
            .verify_slice(&given)
            .map_err(|_| ApprovalError::Mismatch)?;
        let age_ms = (self.clock)().saturating_sub(issued);
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        // Issued in the future (another replica's clock ahead by more than a minute) or past
        // the TTL: refused either way.
        if age_ms > ttl_ms || age_ms < -60_000 {
            return Err(ApprovalError::Expired {
                age_secs: u64::try_from(age_ms.max(0) / 1000).unwrap_or(0),
                ttl_secs: self.ttl.as_secs(),
            });
        }
        Ok(())
    }

    /// The bot whose approvals this signer issues.
    pub fn bot(&self) -> &str {
        &self.bot
    }

    /// When `approval_id` stops being accepted (issued + TTL + the minute of clock skew
    /// allowed), in ms since the epoch; `None` when it is not an approval id.
    pub fn expires_at(&self, approval_id: &str) -> Option<i64> {
        let issued: i64 = approval_id.split('.').nth(1)?.parse().ok()?;
        let ttl_ms = i64::try_from(self.ttl.as_millis()).unwrap_or(i64::MAX);
        Some(issued.saturating_add(ttl_ms).saturating_add(60_000))
    }

    fn keyed(&self) -> hmac::Hmac<Sha256> {
        // HMAC takes a key of any length: this cannot fail.
        <hmac::Hmac<Sha256> as KeyInit>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"))
    }

    fn mac(&self, issued: i64, call: &ToolCall, target: &CallTarget) -> String {
        let mut mac = self.keyed();
        mac.update(&message(&self.bot, &self.holder, issued, call, target));
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }
}

/// Where a call's name leads when it is approved, and again when it runs: a native tool, or
/// an MCP server's tool under the server's own name for it. A bot's qualified names depend on
/// all of its tools (`toolset::naming`), so the same name can lead to another tool later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallTarget {
    Native,
    /// An MCP server's tool: the server by name and by id (another server added under the
    /// same name is another target), the tool by the server's own name for it.
    Mcp {
        server: String,
        server_id: String,
        tool: String,
    },
    /// The name leads nowhere (no such tool now).
    Nowhere,
}

/// What the MAC covers, unambiguously: every field length-prefixed.
fn message(bot: &str, holder: &str, issued: i64, call: &ToolCall, target: &CallTarget) -> Vec<u8> {
    let (kind, server, server_id, tool) = match target {
        CallTarget::Native => ("native", "", "", ""),
        CallTarget::Mcp {
            server,
            server_id,
            tool,
        } => ("mcp", server.as_str(), server_id.as_str(), tool.as_str()),
        CallTarget::Nowhere => ("nowhere", "", "", ""),
    };
    let mut out = b"botcraft-approval-v3".to_vec();
    for field in [
        bot,
        holder,
        &issued.to_string(),
        &call.id,
        &call.name,
        kind,
        server,
        server_id,
        tool,
        &canonical_json::to_string(&call.input),
    ] {
        out.extend_from_slice(&(field.len() as u64).to_be_bytes());
        out.extend_from_slice(field.as_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};
    use std::sync::atomic::{AtomicI64, Ordering};

    fn call(name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            input,
        }
    }

    fn signer(bot: &str, now: &Arc<AtomicI64>) -> ApprovalSigner {
        held(bot, "digest-of-key-a", now)
    }

    fn held(bot: &str, holder: &str, now: &Arc<AtomicI64>) -> ApprovalSigner {
        let now = Arc::clone(now);
        ApprovalSigner::new(
            [7; 32],
            bot,
            holder,
            Duration::from_secs(600),
            Arc::new(move || now.load(Ordering::SeqCst)),
        )
    }

    fn fs(tool: &str) -> CallTarget {
        CallTarget::Mcp {
            server: "forge-bash".into(),
            server_id: "id-1".into(),
            tool: tool.into(),
        }
    }

    #[test]
    fn an_approval_holds_for_its_own_call_only() {
        let now = Arc::new(AtomicI64::new(1_700_000_000_000));
        let forge = signer("forge", &now);
        let run = fs("run");
        let shown = call("forge-bash__run", json!({"command": "ls", "n": 1.0}));
        let id = forge.issue(&shown, &run);
        // The same call, its input re-encoded by a client: keys in another order, 1.0 as 1.
        let echoed = call("forge-bash__run", json!({"n": 1, "command": "ls"}));
        assert_eq!(forge.check(&id, &echoed, &run), Ok(()));
        let other_arguments = call("forge-bash__run", json!({"command": "rm -rf /", "n": 1}));
        let other_tool = call(
            "forge-filesystem__empty_trash",
            json!({"command": "ls", "n": 1}),
        );
        let mut other_call_id = echoed.clone();
        other_call_id.id = "call_2".into();
        for tampered in [other_arguments, other_tool, other_call_id] {
            assert_eq!(
                forge.check(&id, &tampered, &run),
                Err(ApprovalError::Mismatch)
            );
        }
        // The same name, leading elsewhere by the time the answer comes.
        for elsewhere in [
            fs("run.v2"),
            CallTarget::Mcp {
                server: "forge-bash__run".into(),
                server_id: "id-1".into(),
                tool: String::new(),
            },
            // Another server added under the same name.
            CallTarget::Mcp {
                server: "forge-bash".into(),
                server_id: "id-2".into(),
                tool: "run".into(),
            },
            CallTarget::Native,
            CallTarget::Nowhere,
        ] {
            assert_eq!(
                forge.check(&id, &echoed, &elsewhere),
                Err(ApprovalError::Mismatch),
                "{elsewhere:?}"
            );
        }
        assert_eq!(
            signer("other-bot", &now).check(&id, &echoed, &run),
            Err(ApprovalError::Mismatch)
        );
        // Held by one API key: another key's turn (or an empty holder) does not take it.
        for other in [
            held("forge", "digest-of-key-b", &now),
            held("forge", "", &now),
        ] {
            assert_eq!(
                other.check(&id, &echoed, &run),
                Err(ApprovalError::Mismatch)
            );
        }
        let mut wrong_key = signer("forge", &now);
        wrong_key.key = [8; 32];
        assert_eq!(
            wrong_key.check(&id, &echoed, &run),
            Err(ApprovalError::Mismatch)
        );
        // A later issue time written into the id is caught by the MAC.
        let pieces: Vec<&str> = id.splitn(3, '.').collect();
        let moved = format!("ap2.{}.{}", 1_700_000_500_000_i64, pieces[2]);
        assert_eq!(
            forge.check(&moved, &echoed, &run),
            Err(ApprovalError::Mismatch)
        );
        // The same issue time spelt otherwise would be another id for the ledger.
        let respelt = [
            format!("ap2.0{}.{}", pieces[1], pieces[2]),
            format!("ap2.+{}.{}", pieces[1], pieces[2]),
        ];
        for malformed in ["", "ap2", "ap2.x.y", "ap3.1.AAAA", "ap2.1.!!"]
            .into_iter()
            .chain(respelt.iter().map(String::as_str))
        {
            assert_eq!(
                forge.check(malformed, &echoed, &run),
                Err(ApprovalError::Malformed),
                "{malformed}"
            );
        }
        // An id of the release before (no holder in its MAC) says so.
        let outdated = id.replacen("ap2.", "ap1.", 1);
        assert_eq!(
            forge.check(&outdated, &echoed, &run),
            Err(ApprovalError::Outdated)
        );
    }

    #[test]
    fn an_approval_answered_after_the_ttl_is_refused() {
        let now = Arc::new(AtomicI64::new(1_700_000_000_000));
        let forge = signer("forge", &now);
        let shown = call("forge-bash__run", json!({"command": "ls"}));
        let id = forge.issue(&shown, &fs("run"));
        now.fetch_add(600_000, Ordering::SeqCst);
        assert_eq!(forge.check(&id, &shown, &fs("run")), Ok(()));
        now.fetch_add(1, Ordering::SeqCst);
        assert_eq!(
            forge.check(&id, &shown, &fs("run")),
            Err(ApprovalError::Expired {
                age_secs: 600,
                ttl_secs: 600
            })
        );
    }
}
