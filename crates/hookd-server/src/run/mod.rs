//! Room 5, runs: running an event's hooks, from the plan to the recorded answer.
//!
//! The narrow handle every run holds ([`engine::Engine`]: the runner, the recorder, the
//! counters), the AfterModel streams a client opens ([`stream`]), the relayed AfterModel
//! responses whose filters keep state across chunks ([`relayed`]), async hooks and detached
//! events run apart from any connection ([`background`]), and the run of one event a client
//! waits for ([`eventrun`]).

pub(crate) mod background;
pub(crate) mod engine;
pub(crate) mod eventrun;
pub(crate) mod relayed;
pub(crate) mod stream;
