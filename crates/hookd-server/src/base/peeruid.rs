//! Who is on the other end of a loopback TCP connection: the uid owning the peer's socket, as
//! the kernel's socket table says (`NETLINK_SOCK_DIAG`, an exact lookup by the connection's
//! addresses and ports, the way `ss -e` finds a socket's owner).
//!
//! A Unix socket hands its peer's credentials over with the connection; TCP does not, and any
//! local user can connect to a loopback port. The HTTP listener's secret keeps other users out
//! on its own; this check refuses another user's connection even when the secret has leaked
//! (a settings file made readable by mistake, a copy in a backup).
//!
//! The lookup is one request and one answer on a netlink socket, with a short receive
//! timeout; where the kernel does not answer it (no `sock_diag` module, a sandbox that filters
//! netlink), the owner is [`PeerOwner::Unknown`] and the secret alone decides.

use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use nix::sys::socket::{
    AddressFamily, MsgFlags, SockFlag, SockProtocol, SockType, recv, send, setsockopt, socket,
    sockopt,
};
use nix::sys::time::TimeVal;

/// How long the kernel's answer may take (it comes at once; this bounds a filtered netlink).
const ANSWER_TIMEOUT: Duration = Duration::from_millis(200);

/// `SOCK_DIAG_BY_FAMILY` (linux/sock_diag.h).
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// `NLMSG_ERROR` (linux/netlink.h).
const NLMSG_ERROR: u16 = 2;
/// `NLM_F_REQUEST` (linux/netlink.h).
const NLM_F_REQUEST: u16 = 1;
/// Bytes of a `struct nlmsghdr`.
const HEADER: usize = 16;
/// Bytes of a `struct inet_diag_req_v2`.
const REQUEST: usize = 56;
/// The offset of `idiag_uid` in an answer: the header, then `struct inet_diag_msg`'s family,
/// state, timer and retransmits (4 bytes), its socket id (48) and expires, rqueue and wqueue
/// (12).
const UID_OFFSET: usize = HEADER + 4 + 48 + 12;

/// The owner of a connection's peer socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PeerOwner {
    /// The uid the kernel says owns it.
    Uid(u32),
    /// The kernel did not say (why is in the text, for the log).
    Unknown(&'static str),
}

/// The owner of the socket at `peer` connected to ours at `local` (both as our side sees
/// them: the peer's socket has `peer` as its source and `local` as its destination).
pub(crate) fn peer_owner(local: SocketAddr, peer: SocketAddr) -> PeerOwner {
    let Some(message) = request(local, peer) else {
        return PeerOwner::Unknown("the addresses are of different families");
    };
    let Ok(fd) = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    ) else {
        return PeerOwner::Unknown("no NETLINK_SOCK_DIAG socket");
    };
    let timeout = TimeVal::new(0, ANSWER_TIMEOUT.as_micros() as i64 as _);
    if setsockopt(&fd, sockopt::ReceiveTimeout, &timeout).is_err() {
        return PeerOwner::Unknown("cannot bound the wait for the kernel's answer");
    }
    // An unconnected netlink socket sends to the kernel.
    if send(fd.as_raw_fd(), &message, MsgFlags::empty()).is_err() {
        return PeerOwner::Unknown("the kernel refused the socket lookup");
    }
    let mut answer = [0u8; 512];
    match recv(fd.as_raw_fd(), &mut answer, MsgFlags::empty()) {
        Ok(read) => parse_answer(&answer[..read.min(answer.len())]),
        Err(_) => PeerOwner::Unknown("no answer to the socket lookup"),
    }
}

/// The netlink message asking for the one TCP socket from `peer` to `local`; `None` when the
/// two are of different families.
fn request(local: SocketAddr, peer: SocketAddr) -> Option<Vec<u8>> {
    let (family, source, destination) = match (peer.ip(), local.ip()) {
        (IpAddr::V4(source), IpAddr::V4(destination)) => {
            let mut s = [0u8; 16];
            let mut d = [0u8; 16];
            s[..4].copy_from_slice(&source.octets());
            d[..4].copy_from_slice(&destination.octets());
            (libc::AF_INET as u8, s, d)
        }
        (IpAddr::V6(source), IpAddr::V6(destination)) => {
            (libc::AF_INET6 as u8, source.octets(), destination.octets())
        }
        _ => return None,
    };
    let length = (HEADER + REQUEST) as u32;
    let mut message = Vec::with_capacity(HEADER + REQUEST);
    // struct nlmsghdr: length, type, flags, sequence, port id (native byte order).
    message.extend_from_slice(&length.to_ne_bytes());
    message.extend_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    message.extend_from_slice(&NLM_F_REQUEST.to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // struct inet_diag_req_v2: family, protocol, extensions, padding, states (every one).
    message.extend_from_slice(&[family, libc::IPPROTO_TCP as u8, 0, 0]);
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    // struct inet_diag_sockid: ports and addresses in network order, no interface, and
    // INET_DIAG_NOCOOKIE (any socket with these addresses).
    message.extend_from_slice(&peer.port().to_be_bytes());
    message.extend_from_slice(&local.port().to_be_bytes());
    message.extend_from_slice(&source);
    message.extend_from_slice(&destination);
    message.extend_from_slice(&0u32.to_ne_bytes());
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    message.extend_from_slice(&u32::MAX.to_ne_bytes());
    Some(message)
}

/// The owner an answer names.
fn parse_answer(answer: &[u8]) -> PeerOwner {
    let u16_at = |at: usize| {
        answer
            .get(at..at + 2)
            .and_then(|bytes| bytes.try_into().ok())
            .map(u16::from_ne_bytes)
    };
    let u32_at = |at: usize| {
        answer
            .get(at..at + 4)
            .and_then(|bytes| bytes.try_into().ok())
            .map(u32::from_ne_bytes)
    };
    match u16_at(4) {
        Some(SOCK_DIAG_BY_FAMILY) => match u32_at(UID_OFFSET) {
            Some(uid) => PeerOwner::Uid(uid),
            None => PeerOwner::Unknown("a short answer to the socket lookup"),
        },
        Some(NLMSG_ERROR) => PeerOwner::Unknown("the kernel found no such socket"),
        _ => PeerOwner::Unknown("an unexpected answer to the socket lookup"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_names_the_peer_socket_by_its_own_source_and_destination() {
        let local: SocketAddr = "127.0.0.1:47411".parse().unwrap();
        let peer: SocketAddr = "127.0.0.2:50000".parse().unwrap();
        let message = request(local, peer).unwrap();
        assert_eq!(message.len(), HEADER + REQUEST);
        assert_eq!(&message[0..4], &72u32.to_ne_bytes());
        assert_eq!(message[HEADER], libc::AF_INET as u8);
        assert_eq!(message[HEADER + 1], libc::IPPROTO_TCP as u8);
        // The peer's source port, then its destination (our listener).
        assert_eq!(&message[HEADER + 8..HEADER + 10], &50000u16.to_be_bytes());
        assert_eq!(&message[HEADER + 10..HEADER + 12], &47411u16.to_be_bytes());
        assert_eq!(&message[HEADER + 12..HEADER + 16], &[127, 0, 0, 2]);
        assert_eq!(&message[HEADER + 28..HEADER + 32], &[127, 0, 0, 1]);
        let v6: SocketAddr = "[::1]:1".parse().unwrap();
        assert!(request(local, v6).is_none());
    }

    #[test]
    fn answers_are_read_exactly() {
        let mut answer = vec![0u8; UID_OFFSET + 8];
        answer[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        answer[UID_OFFSET..UID_OFFSET + 4].copy_from_slice(&1234u32.to_ne_bytes());
        assert_eq!(parse_answer(&answer), PeerOwner::Uid(1234));
        assert!(matches!(
            parse_answer(&answer[..UID_OFFSET + 2]),
            PeerOwner::Unknown(_)
        ));
        let mut error = vec![0u8; 36];
        error[4..6].copy_from_slice(&NLMSG_ERROR.to_ne_bytes());
        assert!(matches!(parse_answer(&error), PeerOwner::Unknown(_)));
        assert!(matches!(parse_answer(&[]), PeerOwner::Unknown(_)));
    }

    /// The real kernel, on a real loopback connection: both ends are this process's.
    #[test]
    fn the_kernel_names_this_process_as_the_owner_of_a_loopback_connection() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, peer) = listener.accept().unwrap();
        assert_eq!(peer, client.local_addr().unwrap());
        assert_eq!(
            peer_owner(accepted.local_addr().unwrap(), peer),
            PeerOwner::Uid(nix::unistd::geteuid().as_raw())
        );
        // A socket that does not exist (the client's port, but another source address).
        let absent: SocketAddr = format!("127.0.0.3:{}", peer.port()).parse().unwrap();
        assert!(matches!(
            peer_owner(accepted.local_addr().unwrap(), absent),
            PeerOwner::Unknown(_)
        ));
    }
}
