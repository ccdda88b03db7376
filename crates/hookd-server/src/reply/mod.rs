//! Room 4, replies: what goes back to a client.
//!
//! Writing messages and frames on a connection's shared write side ([`wire`]), results
//! encoded and fitted into one frame ([`results`]), and the engine's types as wire types
//! ([`convert`]).

pub(crate) mod convert;
pub(crate) mod httpanswer;
pub(crate) mod results;
pub(crate) mod wire;
