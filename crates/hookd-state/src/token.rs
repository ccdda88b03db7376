//! State tokens: the capability a hook needs to write its session's keys.
//!
//! The daemon puts `HOOKD_STATE_TOKEN` in the environment of every hook it runs: a token
//! for that run's session and project, `v1.<project id>.<mac>`, where the project id is the
//! first 16 bytes of the SHA-256 of the project directory (hex) and the mac is
//! HMAC-SHA256 under a key only the daemon holds, over the session id and the project id.
//! A `state` request that writes must carry a token whose mac matches the session it names,
//! so a hook cannot write another session's keys: naming another session with its own token
//! fails the check, and it cannot compute the other session's token without the key. The
//! project id in a valid token is also the project the write counts against (the store's
//! per-project share), which a hook cannot change either.
//!
//! The key is random per daemon start unless the embedder sets one, so a token is worth
//! nothing once its daemon has stopped.

use std::io::Read;

use sha2::{Digest, Sha256};

/// The variable a hook finds its token in.
pub const TOKEN_ENV_VAR: &str = "HOOKD_STATE_TOKEN";

/// Why a token does not allow a write.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// No token was sent.
    #[error(
        "writing session state needs the state token hookd gives each hook \
         ({TOKEN_ENV_VAR}); run it from a hook of that session"
    )]
    Missing,
    /// The token is not of the form `v1.<project id>.<mac>`.
    #[error("the state token is malformed")]
    Malformed,
    /// The token is for another session (or another daemon).
    #[error(
        "the state token is not for session {session:?}: a hook may write only its own session's keys"
    )]
    OtherSession {
        /// The session the request named.
        session: String,
    },
}

/// The daemon's key for state tokens.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenKey([u8; 32]);

impl std::fmt::Debug for TokenKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenKey(..)")
    }
}

impl TokenKey {
    /// A key of these bytes (an embedder that wants tokens to outlive a restart).
    pub fn from_bytes(bytes: [u8; 32]) -> TokenKey {
        TokenKey(bytes)
    }

    /// A new random key, from the kernel's random source.
    ///
    /// # Errors
    ///
    /// `/dev/urandom` cannot be read.
    pub fn random() -> std::io::Result<TokenKey> {
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
        Ok(TokenKey(bytes))
    }

    /// The token of `session` in the project at `project_dir`.
    pub fn token(&self, session: &str, project_dir: &str) -> String {
        let project = project_id(project_dir);
        let mac = self.mac(session, &project);
        format!("v1.{project}.{}", hex(&mac))
    }

    /// The project id a `token` carries, when it is a token of `session` under this key.
    ///
    /// # Errors
    ///
    /// The token is missing, malformed, or for another session (or another key).
    pub fn verify(&self, token: Option<&str>, session: &str) -> Result<String, TokenError> {
        let token = token.ok_or(TokenError::Missing)?;
        let mut parts = token.split('.');
        let (Some("v1"), Some(project), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(TokenError::Malformed);
        };
        if project.len() != 32 || !project.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(TokenError::Malformed);
        }
        let expected = hex(&self.mac(session, project));
        // Compared in full whatever differs first, so the time taken says nothing about
        // how much of a guess was right.
        let same = expected.len() == mac.len()
            && expected
                .bytes()
                .zip(mac.bytes())
                .fold(0u8, |diff, (a, b)| diff | (a ^ b))
                == 0;
        if !same {
            return Err(TokenError::OtherSession {
                session: session.to_owned(),
            });
        }
        Ok(project.to_owned())
    }

    /// HMAC-SHA256 (RFC 2104) of the session and project id.
    fn mac(&self, session: &str, project: &str) -> [u8; 32] {
        const BLOCK: usize = 64;
        let mut inner_pad = [0x36u8; BLOCK];
        let mut outer_pad = [0x5cu8; BLOCK];
        for (i, byte) in self.0.iter().enumerate() {
            inner_pad[i] ^= byte;
            outer_pad[i] ^= byte;
        }
        let inner = Sha256::new()
            .chain_update(inner_pad)
            .chain_update(b"hookd-state-token\0")
            .chain_update(session.as_bytes())
            .chain_update(b"\0")
            .chain_update(project.as_bytes())
            .finalize();
        Sha256::new()
            .chain_update(outer_pad)
            .chain_update(inner)
            .finalize()
            .into()
    }
}

/// The id of the project at `project_dir` in the store: the first 16 bytes of its SHA-256,
/// in hex (32 characters, whatever the path's length).
pub fn project_id(project_dir: &str) -> String {
    let digest = Sha256::digest(project_dir.as_bytes());
    hex(&digest[..16])
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_the_rfc_2104_construction() {
        // HMAC(K, m) = H((K ^ opad) || H((K ^ ipad) || m)), written out by hand.
        let key = TokenKey::from_bytes([7; 32]);
        let mut ipad = [0x36u8; 64];
        let mut opad = [0x5cu8; 64];
        for i in 0..32 {
            ipad[i] ^= 7;
            opad[i] ^= 7;
        }
        let mut message = b"hookd-state-token\0".to_vec();
        message.extend_from_slice(b"s\0p");
        let inner = Sha256::digest([&ipad[..], &message].concat());
        let outer: [u8; 32] = Sha256::digest([&opad[..], &inner[..]].concat()).into();
        assert_eq!(key.mac("s", "p"), outer);
    }

    #[test]
    fn a_token_allows_its_own_session_only() {
        let key = TokenKey::from_bytes([1; 32]);
        let other_key = TokenKey::from_bytes([2; 32]);
        let token = key.token("s1", "/home/u/project");
        let project = project_id("/home/u/project");
        // (token, session, verdict)
        let cases: Vec<(Option<String>, &str, Result<String, TokenError>)> = vec![
            (Some(token.clone()), "s1", Ok(project.clone())),
            (
                Some(token.clone()),
                "s2",
                Err(TokenError::OtherSession {
                    session: "s2".to_owned(),
                }),
            ),
            (
                Some(other_key.token("s1", "/home/u/project")),
                "s1",
                Err(TokenError::OtherSession {
                    session: "s1".to_owned(),
                }),
            ),
            // Another project's id with this mac: the mac covers the project too.
            (
                Some(token.replace(&project, &project_id("/elsewhere"))),
                "s1",
                Err(TokenError::OtherSession {
                    session: "s1".to_owned(),
                }),
            ),
            (None, "s1", Err(TokenError::Missing)),
            (Some(String::new()), "s1", Err(TokenError::Malformed)),
            (Some("v2.x.y".to_owned()), "s1", Err(TokenError::Malformed)),
            (
                Some(format!("{token}.extra")),
                "s1",
                Err(TokenError::Malformed),
            ),
        ];
        for (i, (token, session, verdict)) in cases.into_iter().enumerate() {
            assert_eq!(key.verify(token.as_deref(), session), verdict, "case {i}");
        }
        assert_eq!(project.len(), 32);
        assert_ne!(TokenKey::random().unwrap(), TokenKey::random().unwrap());
    }
}
