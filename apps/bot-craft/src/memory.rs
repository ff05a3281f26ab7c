//! Memory back to the system after a burst of chat turns. glibc keeps what a burst freed in
//! its arenas: 500 chat streams left `botcraft serve` ~90 MiB above idle with nothing
//! allocated (`docs/benchmarks.md`). Every [`CHECK_EVERY`], when chat turns ran since the last
//! look and none runs now, the free pages go back (`allocator::give_back_free_memory`, on a
//! blocking thread); a line on stderr says how much.

use std::sync::Arc;
use std::time::Duration;

use http_api::chat_streams::ChatStreams;
use tokio_util::sync::CancellationToken;

/// How often the turns are looked at: a burst's memory goes back within this of its end.
pub const CHECK_EVERY: Duration = Duration::from_secs(2);

/// Gives memory back once each burst of chat turns has ended, until `stop`.
pub fn give_back_after_bursts(streams: Arc<ChatStreams>, stop: CancellationToken) {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(CHECK_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut started_before = streams.started();
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let started = streams.started();
            if started == started_before || streams.running() > 0 {
                continue;
            }
            let turns = started - started_before;
            started_before = started;
            let before = allocator::resident_kib();
            let _ = tokio::task::spawn_blocking(allocator::give_back_free_memory).await;
            if let (Some(before), Some(after)) = (before, allocator::resident_kib()) {
                eprintln!(
                    "botcraft: {turns} chat turns ended; free memory given back ({} → {} MiB resident)",
                    before / 1024,
                    after / 1024
                );
            }
        }
    });
}
