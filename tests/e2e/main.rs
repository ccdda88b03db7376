//! hookd's end-to-end tests: each test starts the real daemon (`hookd_server::run`) on a socket
//! in its own temp dir, writes settings and executable hook scripts, and talks to it over the
//! socket with `hookd-client` or with raw frames.
//!
//! Tests are independent and run in parallel; none waits by sleeping, and no assertion is
//! tighter than seconds.

mod async_hooks;
mod audit;
mod copilot_layers;
mod decisions;
mod execution;
mod fallback;
mod faults_clients;
mod faults_hooks;
mod filter_budget;
mod hostile_edges;
mod hostile_settings;
mod hostile_trust;
mod hot_reload;
mod http_relay;
mod lifecycle;
mod limits;
mod load;
mod manage;
mod managed;
mod matchers;
mod parsing;
mod payload;
mod policy;
mod protocol_cases;
mod protocol_points;
mod relay;
mod relay_path;
mod reload;
mod reload_load;
mod robustness;
mod shutdown;
mod state;
mod streams;
mod telemetry;
mod trust;
mod workers;
