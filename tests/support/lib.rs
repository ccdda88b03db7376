//! Test support: starting the daemon in a temp dir.
