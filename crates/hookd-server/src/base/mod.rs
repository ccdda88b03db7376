//! Room 1, the base: what every other room builds on and which imports nothing of the crate
//! but its own earlier modules.
//!
//! The daemon's configuration ([`config`], [`control`]), frames read from and written to a
//! socket ([`io`]), binding the socket ([`socket`]), each connection's bounds ([`limits`]),
//! the `status` counters ([`stats`]), each hook's latest run ([`lastrun`]), the last good
//! version of a settings file ([`lastgood`]), giving memory back ([`memory`]) and session
//! state ([`state`]).

pub(crate) mod config;
pub(crate) mod control;
pub(crate) mod httpguard;
pub(crate) mod httproots;
pub(crate) mod io;
pub(crate) mod lastgood;
pub(crate) mod lastrun;
pub(crate) mod limits;
pub(crate) mod memory;
pub(crate) mod peeruid;
pub(crate) mod socket;
pub(crate) mod state;
pub(crate) mod stats;
