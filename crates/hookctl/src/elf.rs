//! Whether an executable is dynamically linked: its ELF program headers name an interpreter
//! (`PT_INTERP`, the dynamic loader).
//!
//! A dynamically linked `hookd-relay` pays the dynamic loader on every relayed event (about
//! 0.3 ms of its roughly 1 ms here); `hookctl install` says so and how to build a static one.
//! Only 64-bit little-endian ELF files are read (every Linux target hookd builds for); for
//! anything else the answer is "unknown".

use std::io::Read;
use std::path::Path;

/// The program header type of the interpreter's path.
const PT_INTERP: u32 = 3;

/// The most program headers read (real executables have about a dozen).
const MAX_HEADERS: usize = 256;

/// Whether the ELF image starting with `bytes` asks for an interpreter; `None` when `bytes`
/// is not a 64-bit little-endian ELF header followed by its program headers.
pub fn asks_for_interpreter(bytes: &[u8]) -> Option<bool> {
    if bytes.get(..4)? != b"\x7fELF" || *bytes.get(4)? != 2 || *bytes.get(5)? != 1 {
        return None;
    }
    let u16_at = |at: usize| -> Option<u16> {
        Some(u16::from_le_bytes(
            bytes.get(at..at.checked_add(2)?)?.try_into().ok()?,
        ))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(
            bytes.get(at..at.checked_add(4)?)?.try_into().ok()?,
        ))
    };
    let offset =
        usize::try_from(u64::from_le_bytes(bytes.get(0x20..0x28)?.try_into().ok()?)).ok()?;
    let size = usize::from(u16_at(0x36)?);
    let count = usize::from(u16_at(0x38)?);
    if size < 4 || count > MAX_HEADERS {
        return None;
    }
    for index in 0..count {
        if u32_at(offset.checked_add(index.checked_mul(size)?)?)? == PT_INTERP {
            return Some(true);
        }
    }
    Some(false)
}

/// Whether the executable at `path` is dynamically linked; `None` when it cannot be read or
/// is not a 64-bit little-endian ELF file.
pub fn is_dynamically_linked(path: &Path) -> Option<bool> {
    let file = std::fs::File::open(path).ok()?;
    let mut head = Vec::with_capacity(16 * 1024);
    file.take(64 * 1024).read_to_end(&mut head).ok()?;
    asks_for_interpreter(&head)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 64-bit little-endian ELF header with program headers of the given types at 64.
    fn image(types: &[u32]) -> Vec<u8> {
        let mut bytes = vec![0u8; 64 + 56 * types.len()];
        bytes[..4].copy_from_slice(b"\x7fELF");
        bytes[4] = 2;
        bytes[5] = 1;
        bytes[0x20..0x28].copy_from_slice(&64u64.to_le_bytes());
        bytes[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        bytes[0x38..0x3a].copy_from_slice(&u16::try_from(types.len()).expect("few").to_le_bytes());
        for (index, kind) in types.iter().enumerate() {
            let at = 64 + 56 * index;
            bytes[at..at + 4].copy_from_slice(&kind.to_le_bytes());
        }
        bytes
    }

    #[test]
    fn interpreter_headers_are_found() {
        // (program header types, dynamically linked)
        let cases: [(&[u32], Option<bool>); 5] = [
            (&[6, 3, 1, 1, 2], Some(true)),
            (&[1, 1, 2, 0x6474_e551], Some(false)),
            (&[], Some(false)),
            (&[3], Some(true)),
            (&[1, 1, 1, 1, 1, 1, 1, 3], Some(true)),
        ];
        for (types, expected) in cases {
            assert_eq!(asks_for_interpreter(&image(types)), expected, "{types:?}");
        }
    }

    #[test]
    fn anything_else_is_unknown() {
        let mut big_endian = image(&[3]);
        big_endian[5] = 2;
        let mut truncated = image(&[1, 3]);
        truncated.truncate(64 + 56);
        let mut far = image(&[3]);
        far[0x20..0x28].copy_from_slice(&u64::MAX.to_le_bytes());
        for (name, bytes) in [
            ("empty", Vec::new()),
            ("script", b"#!/bin/sh\necho hi\n".to_vec()),
            ("big endian", big_endian),
            ("truncated", truncated),
            ("headers past the end", far),
        ] {
            assert_eq!(asks_for_interpreter(&bytes), None, "{name}");
        }
    }

    #[test]
    fn this_test_binary_is_read() {
        let exe = std::env::current_exe().expect("exe");
        assert!(is_dynamically_linked(&exe).is_some(), "{}", exe.display());
        assert_eq!(is_dynamically_linked(Path::new("/nonexistent/x")), None);
    }
}
