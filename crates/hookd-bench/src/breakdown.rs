//! Where a no-hook event's time goes inside the daemon, timed in this process.
//!
//! The daemon's own work for a no-hook event is: parse the request, look up the registry,
//! plan, encode the empty result. Parsing and encoding are public protocol functions, so
//! they are timed here on the very bytes of the benchmark's request and answer, next to a
//! plain `serde_json` parse of the same request for comparison. Subtracted from the gap
//! between the no-hook row and the ping-pong, they show how much of it is parsing and how
//! much is the runtime and the kernel.

use std::hint::black_box;
use std::time::{Duration, Instant};

use anyhow::Context;
use hookd_protocol::{ClientMessage, encode, parse_client_message, parse_server_message};

/// Operations per timed round.
const OPERATIONS_PER_ROUND: u32 = 2_000;

/// The mean time of each operation, median over the rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Breakdown {
    /// `hookd_protocol::parse_client_message` of the no-hook request, as the daemon does.
    pub parse_classifying: Duration,
    /// `serde_json::from_slice::<ClientMessage>` of the same bytes.
    pub parse_serde_only: Duration,
    /// `hookd_protocol::encode` of the no-hook result.
    pub encode_result: Duration,
}

/// Times the three operations in interleaved rounds.
pub fn measure(request: &[u8], response: &[u8], rounds: usize) -> anyhow::Result<Breakdown> {
    parse_client_message(request).map_err(|error| anyhow::anyhow!("{}", error.message))?;
    serde_json::from_slice::<ClientMessage>(request).context("the request does not parse")?;
    let result = parse_server_message(response).context("the result does not parse")?;

    let mut classifying = Vec::with_capacity(rounds);
    let mut serde_only = Vec::with_capacity(rounds);
    let mut encoding = Vec::with_capacity(rounds);
    for _ in 0..rounds.max(1) {
        classifying.push(mean_time(|| {
            let _ = black_box(parse_client_message(black_box(request)));
        }));
        serde_only.push(mean_time(|| {
            let _ = black_box(serde_json::from_slice::<ClientMessage>(black_box(request)));
        }));
        encoding.push(mean_time(|| {
            black_box(encode(black_box(&result)));
        }));
    }
    Ok(Breakdown {
        parse_classifying: median(&mut classifying),
        parse_serde_only: median(&mut serde_only),
        encode_result: median(&mut encoding),
    })
}

/// The mean duration of `operation` over one round.
fn mean_time(mut operation: impl FnMut()) -> Duration {
    let started = Instant::now();
    for _ in 0..OPERATIONS_PER_ROUND {
        operation();
    }
    started.elapsed() / OPERATIONS_PER_ROUND
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values.get(values.len() / 2).copied().unwrap_or_default()
}
