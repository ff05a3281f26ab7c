//! Helper threads for one forward pass: a query's dense layers are short
//! (tens to hundreds of microseconds each), too short to start threads for
//! each, so a pass that shares them starts its helpers once ([`Crew::run`])
//! and hands each layer's shares over channels.
//!
//! A layer's input travels as an `Arc` of the pass's buffer (a helper drops
//! its copy before it answers, so the pass then writes the buffer in place).
//! Waiting is a short spin first: a share is handed over and answered within
//! microseconds, which a sleeping thread's wake-up would double; past
//! [`SPIN`], the waiter blocks.

use std::ops::Range;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::time::{Duration, Instant};

use crate::bert::Activation;
use simd::{Weights, linear, linear_panels};

/// How long a waiter spins before it blocks.
const SPIN: Duration = Duration::from_micros(50);

/// One share of one layer for a helper.
struct Job<'w> {
    x: Arc<Vec<f32>>,
    w: &'w Weights,
    bias: &'w [f32],
    share: Range<usize>,
    then: Option<Activation>,
}

/// The helpers of one forward pass, each with its job and answer channels.
pub(crate) struct Crew<'w> {
    helpers: Vec<(Sender<Job<'w>>, Receiver<Vec<f32>>)>,
}

impl<'w> Crew<'w> {
    /// Runs `pass` with `threads - 1` helpers (none when `threads <= 1`),
    /// which stop when it returns.
    pub(crate) fn run<T>(threads: usize, pass: impl FnOnce(&Crew<'w>) -> T) -> T {
        std::thread::scope(|scope| {
            let mut helpers = Vec::new();
            for _ in 1..threads.max(1) {
                let (jobs, job_receiver) = mpsc::channel::<Job<'w>>();
                let (answer_sender, answers) = mpsc::channel();
                scope.spawn(move || {
                    while let Some(job) = wait(&job_receiver) {
                        let part = share_of(&job.x, job.w, job.bias, job.share, job.then);
                        // Dropped before the answer: the pass then writes its buffer in place.
                        drop(job.x);
                        if answer_sender.send(part).is_err() {
                            break;
                        }
                    }
                });
                helpers.push((jobs, answers));
            }
            // The helpers' job senders drop with the crew, which ends their loops.
            pass(&Crew { helpers })
        })
    }

    /// `out = x · Wᵀ + b` ([`linear`]), its panels shared between this
    /// thread and the helpers, then `then` applied to the outputs, each
    /// thread to its own share; the same result as one thread, bit for bit.
    pub(crate) fn dense(
        &self,
        x: &Arc<Vec<f32>>,
        w: &'w Weights,
        bias: &'w [f32],
        out: &mut [f32],
        then: Option<Activation>,
    ) {
        let panels = w.panel_count();
        let threads = (self.helpers.len() + 1).min(panels);
        if threads <= 1 {
            linear(x, w, bias, out);
            if let Some(activation) = then {
                activation.apply(out);
            }
            return;
        }
        let share = |t: usize| panels * t / threads..panels * (t + 1) / threads;
        let mut handed = Vec::with_capacity(threads - 1);
        for (t, (jobs, _)) in self.helpers.iter().enumerate().take(threads - 1) {
            let job = Job {
                x: Arc::clone(x),
                w,
                bias,
                share: share(t + 1),
                then,
            };
            handed.push(jobs.send(job).is_ok());
        }
        let n = w.outputs();
        let place = |out: &mut [f32], share: Range<usize>, part: &[f32]| {
            let columns = w.panel_outputs(share);
            for (row, values) in part.chunks_exact(columns.len()).enumerate() {
                out[row * n + columns.start..row * n + columns.end].copy_from_slice(values);
            }
        };
        place(out, share(0), &share_of(x, w, bias, share(0), then));
        for (t, sent) in handed.into_iter().enumerate() {
            let answer = if sent { wait(&self.helpers[t].1) } else { None };
            // A helper that is gone (it panicked: the scope reports it) is
            // covered here.
            let part = answer.unwrap_or_else(|| share_of(x, w, bias, share(t + 1), then));
            place(out, share(t + 1), &part);
        }
    }
}

/// The outputs of the panels `share` of `x · Wᵀ + b`, `then` applied.
fn share_of(
    x: &[f32],
    w: &Weights,
    bias: &[f32],
    share: Range<usize>,
    then: Option<Activation>,
) -> Vec<f32> {
    let columns = w.panel_outputs(share.clone()).len();
    let mut part = vec![0f32; x.len() / w.inputs() * columns];
    linear_panels(x, w, bias, share, &mut part);
    if let Some(activation) = then {
        activation.apply(&mut part);
    }
    part
}

/// The next message, spinning for [`SPIN`] before blocking; `None` once the
/// sender is gone.
fn wait<T>(receiver: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    let mut spins = 0u32;
    loop {
        match receiver.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {
                spins += 1;
                // The clock is read once every 64 tries: reading it is most of a try.
                if spins.is_multiple_of(64) && start.elapsed() >= SPIN {
                    return receiver.recv().ok();
                }
                std::hint::spin_loop();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values in [-1, 1) that differ from one index and seed to the next.
    fn values(count: usize, seed: u32) -> Vec<f32> {
        (0..count as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) ^ seed.wrapping_mul(40_503)) % 2_001)
            .map(|v| v as f32 / 1_000.0 - 1.0)
            .collect()
    }

    /// Shared among 1 to 5 threads (more threads than panels included), a
    /// layer's outputs, activated or not, are one thread's, bit for bit.
    #[test]
    fn shared_layers_equal_one_threads() {
        let (m, k) = (11, 96);
        let x = Arc::new(values(m * k, 1));
        let layers: Vec<(Weights, Vec<f32>)> = [(130usize, 2u32), (64, 3), (7, 4)]
            .into_iter()
            .map(|(n, seed)| {
                let w = Weights::pack(&values(n * k, seed), n, k).expect("in range");
                (w, values(n, seed + 10))
            })
            .collect();
        let alone: Vec<Vec<f32>> = layers
            .iter()
            .map(|(w, bias)| {
                let mut out = vec![f32::NAN; m * w.outputs()];
                linear(&x, w, bias, &mut out);
                out
            })
            .collect();
        // With an activation, each share's outputs get it.
        let activated: Vec<Vec<f32>> = alone
            .iter()
            .map(|out| {
                let mut out = out.clone();
                Activation::Gelu.apply(&mut out);
                out
            })
            .collect();
        for (then, want) in [(None, &alone), (Some(Activation::Gelu), &activated)] {
            for threads in 1..=5 {
                let shared = Crew::run(threads, |crew| {
                    layers
                        .iter()
                        .map(|(w, bias)| {
                            let mut out = vec![f32::NAN; m * w.outputs()];
                            crew.dense(&x, w, bias, &mut out, then);
                            out
                        })
                        .collect::<Vec<_>>()
                });
                assert_eq!(&shared, want, "{threads} threads, {then:?}");
            }
        }
        // The helpers dropped their copies of the input.
        assert_eq!(Arc::strong_count(&x), 1);
    }
}
