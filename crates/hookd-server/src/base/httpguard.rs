//! The checks the HTTP listener makes on a request's head, before it reads the body: who may
//! post (the secret), from where (`Host`, `Origin`), what (method, path, size). Pure functions
//! of the head's values, so each rule has its table test; the listener (`crate::http`) applies
//! them in order and answers the first refusal.
//!
//! Why each exists (docs/reliability.md has the whole attack surface):
//! - any local user can connect to a loopback port: the per-user secret, compared in constant
//!   time, before a byte of the body is read (and, before that, the listener closes a
//!   connection the kernel says another user owns: `crate::peeruid`);
//! - a web page can make the user's browser post to loopback, and DNS rebinding can give an
//!   attacker's name a loopback address: a browser always sends `Origin` on a cross-site POST
//!   and the attacker's name in `Host`, so any `Origin` and any `Host` that is not a loopback
//!   name at the listener's own port are refused;
//! - a peer that declares more than a frame's worth of body is refused before it sends it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

use hookd_protocol::http::{AUTH_SCHEME, parse_hook_path};
use hookd_settings::httpsecret::HttpSecret;

/// Why a request was refused, with the HTTP status it gets. Also the label of the refusal
/// counters in `status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Refusal {
    /// No `Authorization: Bearer` header, or the wrong secret: 401.
    Secret,
    /// A `Host` that is not a loopback name at the listener's port (or none): 421.
    Host,
    /// An `Origin` header (a browser's cross-site request): 403.
    Origin,
    /// A method other than POST: 405.
    Method,
    /// A path that is not `/v1/hooks/{host}/{Event}` of a known host: 404.
    Path,
    /// A declared body larger than a frame: 413.
    TooLarge,
    /// No `Content-Length` (hookd needs the size before reading): 411.
    NoLength,
    /// The body did not arrive in time (a slow sender): 408.
    SlowBody,
    /// The body is not a JSON object, or names another event than the path: 400.
    BadBody,
    /// A connection was closed to make room for a new one (too many idle connections).
    Evicted,
    /// A connection sent no complete request head in time, or idled past the keep-alive
    /// timeout.
    Idle,
    /// A connection whose other end belongs to another user (the kernel's socket table
    /// says so): 403, then closed, before its request is read.
    Peer,
}

impl Refusal {
    /// Every refusal, in the order `status` lists them.
    pub(crate) const ALL: [Refusal; 12] = [
        Refusal::Secret,
        Refusal::Host,
        Refusal::Origin,
        Refusal::Method,
        Refusal::Path,
        Refusal::TooLarge,
        Refusal::NoLength,
        Refusal::SlowBody,
        Refusal::BadBody,
        Refusal::Evicted,
        Refusal::Idle,
        Refusal::Peer,
    ];

    /// The HTTP status code of the refusal's answer (`Evicted` and `Idle` close without one).
    pub(crate) fn status(self) -> u16 {
        match self {
            Refusal::Secret => 401,
            Refusal::Host => 421,
            Refusal::Origin | Refusal::Peer => 403,
            Refusal::Method => 405,
            Refusal::Path => 404,
            Refusal::TooLarge => 413,
            Refusal::NoLength => 411,
            Refusal::SlowBody => 408,
            Refusal::BadBody => 400,
            Refusal::Evicted | Refusal::Idle => 503,
        }
    }

    /// The refusal's name in logs and `status`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::Secret => "secret",
            Refusal::Host => "host",
            Refusal::Origin => "origin",
            Refusal::Method => "method",
            Refusal::Path => "path",
            Refusal::TooLarge => "too_large",
            Refusal::NoLength => "no_length",
            Refusal::SlowBody => "slow_body",
            Refusal::BadBody => "bad_body",
            Refusal::Evicted => "evicted",
            Refusal::Idle => "idle",
            Refusal::Peer => "peer",
        }
    }

    /// The index of the refusal in [`Refusal::ALL`] (its counter).
    pub(crate) fn index(self) -> usize {
        Refusal::ALL
            .iter()
            .position(|refusal| *refusal == self)
            .unwrap_or(0)
    }
}

/// The listener's counters for `status`. Relaxed atomics: reported, never relied on.
#[derive(Debug, Default)]
pub(crate) struct HttpCounters {
    /// HTTP connections open now.
    pub(crate) connections: AtomicU64,
    /// Requests answered with a decision.
    pub(crate) requests: AtomicU64,
    /// Refusals, by [`Refusal::index`].
    refused: [AtomicU64; Refusal::ALL.len()],
}

impl HttpCounters {
    /// Counts one refusal.
    pub(crate) fn refuse(&self, refusal: Refusal) {
        self.refused[refusal.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The refusals so far, by name, leaving out those with none.
    pub(crate) fn refused(&self) -> BTreeMap<String, u64> {
        Refusal::ALL
            .iter()
            .map(|refusal| {
                (
                    refusal.as_str().to_owned(),
                    self.refused[refusal.index()].load(Ordering::Relaxed),
                )
            })
            .filter(|(_, count)| *count > 0)
            .collect()
    }
}

/// What the listener knows about a request's head, as borrowed header values (`None`: the
/// header is absent; a header sent twice is passed as `Some(b"")`-style garbage by the caller
/// so that it fails).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Head<'a> {
    /// The method, e.g. `POST`.
    pub(crate) method: &'a str,
    /// The request target's path (with its query, if any).
    pub(crate) path: &'a str,
    /// The `Host` header.
    pub(crate) host: Option<&'a [u8]>,
    /// The `Origin` header.
    pub(crate) origin: Option<&'a [u8]>,
    /// The `Authorization` header.
    pub(crate) authorization: Option<&'a [u8]>,
    /// The `Content-Length` header.
    pub(crate) content_length: Option<&'a [u8]>,
}

/// A head that passed: the host and event its path names, and the body's declared size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Admitted<'a> {
    /// The dialect name from the path.
    pub(crate) host: &'a str,
    /// The host's event name from the path.
    pub(crate) event: &'a str,
    /// The declared body size in bytes.
    pub(crate) length: usize,
}

/// Checks a head. The secret comes first, so that a peer without it learns nothing else
/// (not even whether its path or Host would do); the rest in the order of the head.
pub(crate) fn admit<'a>(
    head: &Head<'a>,
    secret: &HttpSecret,
    port: u16,
    max_body: usize,
) -> Result<Admitted<'a>, Refusal> {
    if !authorized(head.authorization, secret) {
        return Err(Refusal::Secret);
    }
    if head.origin.is_some() {
        return Err(Refusal::Origin);
    }
    if !head.host.is_some_and(|host| loopback_host(host, port)) {
        return Err(Refusal::Host);
    }
    if head.method != "POST" {
        return Err(Refusal::Method);
    }
    let (host, event) = parse_hook_path(head.path).ok_or(Refusal::Path)?;
    let length = head.content_length.ok_or(Refusal::NoLength)?;
    let length = std::str::from_utf8(length)
        .ok()
        .filter(|text| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()))
        .and_then(|text| text.parse::<usize>().ok())
        .ok_or(Refusal::TooLarge)?;
    if length > max_body {
        return Err(Refusal::TooLarge);
    }
    Ok(Admitted {
        host,
        event,
        length,
    })
}

/// Whether `authorization` is `Bearer <secret>`, the secret compared in constant time.
pub(crate) fn authorized(authorization: Option<&[u8]>, secret: &HttpSecret) -> bool {
    let Some(value) = authorization else {
        return false;
    };
    let scheme = AUTH_SCHEME.as_bytes();
    let Some(rest) = value
        .get(..scheme.len())
        .filter(|given| given.eq_ignore_ascii_case(scheme))
        .and_then(|_| value.get(scheme.len()..))
    else {
        return false;
    };
    let Some(token) = rest.strip_prefix(b" ") else {
        return false;
    };
    secret.matches(token)
}

/// Whether `host` is a loopback name at `port`: `127.0.0.1:PORT`, `localhost:PORT` or
/// `[::1]:PORT` (ASCII case ignored). No other name, no other address, and never without the
/// port: a rebinding attack names the attacker's host, and a page on another loopback port
/// names that port.
pub(crate) fn loopback_host(host: &[u8], port: u16) -> bool {
    let Ok(host) = std::str::from_utf8(host) else {
        return false;
    };
    let Some((name, given_port)) = host.rsplit_once(':') else {
        return false;
    };
    if given_port != port.to_string() {
        return false;
    }
    name == "127.0.0.1" || name.eq_ignore_ascii_case("localhost") || name == "[::1]"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret() -> HttpSecret {
        let dir = tempfile::tempdir().unwrap();
        hookd_settings::httpsecret::load_or_create(&dir.path().join("s")).unwrap()
    }

    #[test]
    fn loopback_host_accepts_only_loopback_names_at_the_port() {
        for (host, ok) in [
            ("127.0.0.1:47411", true),
            ("localhost:47411", true),
            ("LOCALHOST:47411", true),
            ("[::1]:47411", true),
            ("127.0.0.1", false),
            ("127.0.0.1:80", false),
            ("127.0.0.2:47411", false),
            ("evil.example:47411", false),
            ("localhost.evil.example:47411", false),
            ("[::ffff:127.0.0.1]:47411", false),
            ("0.0.0.0:47411", false),
            ("", false),
            (":47411", false),
        ] {
            assert_eq!(loopback_host(host.as_bytes(), 47411), ok, "{host}");
        }
    }

    #[test]
    fn authorized_needs_the_bearer_scheme_and_the_exact_secret() {
        let secret = secret();
        let good = format!("Bearer {}", secret.as_str());
        assert!(authorized(Some(good.as_bytes()), &secret));
        let lower = format!("bearer {}", secret.as_str());
        assert!(authorized(Some(lower.as_bytes()), &secret));
        for bad in [
            String::new(),
            "Bearer".to_owned(),
            "Bearer ".to_owned(),
            secret.as_str().to_owned(),
            format!("Basic {}", secret.as_str()),
            format!("Bearer  {}", secret.as_str()),
            format!("Bearer {} ", secret.as_str()),
            format!("Bearer {}", &secret.as_str()[1..]),
            format!("Bearer {}", "0".repeat(64)),
        ] {
            assert!(!authorized(Some(bad.as_bytes()), &secret), "{bad:?}");
        }
        assert!(!authorized(None, &secret));
    }

    #[test]
    fn admit_refuses_in_order_and_admits_a_good_head() {
        let secret = secret();
        let auth = format!("Bearer {}", secret.as_str());
        let good = Head {
            method: "POST",
            path: "/v1/hooks/claude/PreToolUse",
            host: Some(b"127.0.0.1:47411"),
            origin: None,
            authorization: Some(auth.as_bytes()),
            content_length: Some(b"120"),
        };
        assert_eq!(
            admit(&good, &secret, 47411, 1000),
            Ok(Admitted {
                host: "claude",
                event: "PreToolUse",
                length: 120
            })
        );
        let cases: [(Head<'_>, Refusal); 10] = [
            (
                Head {
                    authorization: None,
                    origin: Some(b"https://evil.example"),
                    ..good
                },
                Refusal::Secret,
            ),
            (
                Head {
                    origin: Some(b"null"),
                    ..good
                },
                Refusal::Origin,
            ),
            (
                Head {
                    host: Some(b"evil.example:47411"),
                    ..good
                },
                Refusal::Host,
            ),
            (Head { host: None, ..good }, Refusal::Host),
            (
                Head {
                    method: "GET",
                    ..good
                },
                Refusal::Method,
            ),
            (
                Head {
                    path: "/v1/hooks/claude",
                    ..good
                },
                Refusal::Path,
            ),
            (
                Head {
                    content_length: None,
                    ..good
                },
                Refusal::NoLength,
            ),
            (
                Head {
                    content_length: Some(b"1001"),
                    ..good
                },
                Refusal::TooLarge,
            ),
            (
                Head {
                    content_length: Some(b"-1"),
                    ..good
                },
                Refusal::TooLarge,
            ),
            (
                Head {
                    content_length: Some(b"99999999999999999999999"),
                    ..good
                },
                Refusal::TooLarge,
            ),
        ];
        for (head, refusal) in cases {
            assert_eq!(admit(&head, &secret, 47411, 1000), Err(refusal), "{head:?}");
        }
    }

    #[test]
    fn every_refusal_has_its_own_counter_and_name() {
        for (at, refusal) in Refusal::ALL.iter().enumerate() {
            assert_eq!(refusal.index(), at);
        }
        let mut names: Vec<&str> = Refusal::ALL
            .iter()
            .map(|refusal| refusal.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Refusal::ALL.len());
    }
}
