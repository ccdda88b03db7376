//! Room 6, serving: the daemon's shared state and its connections.
//!
//! What every connection shares ([`shared::Shared`], seen only in this room), the answer to
//! each kind of request, one module each ([`request`]), a connection's handshake, read loop
//! and allocation-free path ([`connection`]), and one connection served in a process of its
//! own ([`oneshot`]). The accept loop is the crate root's.

pub(crate) mod connection;
pub(crate) mod http;
pub(crate) mod oneshot;
pub(crate) mod request;
pub(crate) mod shared;
