//! The hook environment: how a hook's command line is read and expanded ([`command`],
//! [`envexpand`]), the environment variables it runs with ([`env`]), and how text taken from
//! settings files is made safe to show and pass on ([`sanitize`]).
//!
//! This room imports from no other.

pub mod command;
pub mod env;
pub mod envexpand;
pub mod sanitize;
