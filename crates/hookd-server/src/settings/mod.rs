//! Room 3, settings: the hooks the daemon knows and the files they come from.
//!
//! Registries per project dir, built on first use, cached, rebuilt and swapped when their
//! files change ([`registries`]); enabling and disabling hooks by editing settings files
//! ([`manage`]); hookd's project-hook trust and its requests ([`trust`]); the watcher that
//! triggers the rebuilds ([`watcher`]). Their handle is [`registries::Registries`].

pub(crate) mod manage;
pub(crate) mod registries;
pub(crate) mod trust;
pub(crate) mod watcher;
