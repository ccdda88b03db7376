//! The unified diff install, uninstall and sync show before they write (three lines of context
//! per hunk, the edit script from a longest common subsequence).

use std::fmt::Write as _;
use std::path::Path;

/// A unified diff of one file, three lines of context per hunk; an absent file is
/// `/dev/null`.
pub fn unified_diff(path: &Path, before: Option<&[u8]>, after: &[u8]) -> String {
    let old_text = before.map(String::from_utf8_lossy).unwrap_or_default();
    let new_text = String::from_utf8_lossy(after);
    let old: Vec<&str> = old_text.split_inclusive('\n').collect();
    let new: Vec<&str> = new_text.split_inclusive('\n').collect();
    let mut out = String::new();
    let old_name = if before.is_some() {
        path.display().to_string()
    } else {
        "/dev/null".to_owned()
    };
    let _ = writeln!(out, "--- {old_name}");
    let _ = writeln!(out, "+++ {}", path.display());
    let ops = diff_lines(&old, &new);
    const CONTEXT: usize = 3;
    let mut index = 0;
    while index < ops.len() {
        // Find the next change.
        let Some(first_change) = (index..ops.len()).find(|&i| !matches!(ops[i], Op::Same(..)))
        else {
            break;
        };
        let start = first_change.saturating_sub(CONTEXT).max(index);
        // Extend the hunk while changes are within 2 * CONTEXT of each other.
        let mut end = first_change;
        let mut last_change = first_change;
        while end < ops.len() {
            if !matches!(ops[end], Op::Same(..)) {
                last_change = end;
            } else if end - last_change > 2 * CONTEXT {
                break;
            }
            end += 1;
        }
        let end = (last_change + CONTEXT + 1).min(ops.len());
        let (old_start, new_start) = ops[start].positions();
        let old_count = ops[start..end]
            .iter()
            .filter(|op| !matches!(op, Op::Insert(..)))
            .count();
        let new_count = ops[start..end]
            .iter()
            .filter(|op| !matches!(op, Op::Delete(..)))
            .count();
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            hunk_range(old_start, old_count),
            hunk_range(new_start, new_count)
        );
        for op in &ops[start..end] {
            let (sign, line) = match op {
                Op::Same(_, _, line) => (' ', *line),
                Op::Delete(_, _, line) => ('-', *line),
                Op::Insert(_, _, line) => ('+', *line),
            };
            out.push(sign);
            out.push_str(line.strip_suffix('\n').unwrap_or(line));
            out.push('\n');
            if !line.ends_with('\n') {
                out.push_str("\\ No newline at end of file\n");
            }
        }
        index = end;
    }
    out
}

/// `start,count` of a hunk header, 1-based (`start-1,0` for an empty range).
pub(super) fn hunk_range(start: usize, count: usize) -> String {
    if count == 0 {
        format!("{start},0")
    } else {
        format!("{},{count}", start + 1)
    }
}

/// One line of an edit script, with the old and new line indexes it sits at.
#[derive(Debug, Clone, Copy)]
pub(super) enum Op<'a> {
    Same(usize, usize, &'a str),
    Delete(usize, usize, &'a str),
    Insert(usize, usize, &'a str),
}

impl Op<'_> {
    pub(super) fn positions(&self) -> (usize, usize) {
        match self {
            Op::Same(old, new, _) | Op::Delete(old, new, _) | Op::Insert(old, new, _) => {
                (*old, *new)
            }
        }
    }
}

/// A shortest edit script by longest common subsequence (settings files are small; beyond a
/// few thousand lines the common prefix and suffix are kept and the middle replaced whole).
pub(super) fn diff_lines<'a>(old: &[&'a str], new: &[&'a str]) -> Vec<Op<'a>> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let old_mid = &old[prefix..old.len() - suffix];
    let new_mid = &new[prefix..new.len() - suffix];
    let mut ops = Vec::new();
    for (i, line) in old[..prefix].iter().enumerate() {
        ops.push(Op::Same(i, i, line));
    }
    let (n, m) = (old_mid.len(), new_mid.len());
    if n.saturating_mul(m) > 4_000_000 {
        for (i, line) in old_mid.iter().enumerate() {
            ops.push(Op::Delete(prefix + i, prefix, line));
        }
        for (j, line) in new_mid.iter().enumerate() {
            ops.push(Op::Insert(prefix + n, prefix + j, line));
        }
    } else {
        // lcs[i][j]: the LCS length of old_mid[i..] and new_mid[j..].
        let mut lcs = vec![vec![0u32; m + 1]; n + 1];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i][j] = if old_mid[i] == new_mid[j] {
                    lcs[i + 1][j + 1] + 1
                } else {
                    lcs[i + 1][j].max(lcs[i][j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && old_mid[i] == new_mid[j] {
                ops.push(Op::Same(prefix + i, prefix + j, old_mid[i]));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
                // Deletions before insertions, as `diff -u` prints them.
                ops.push(Op::Delete(prefix + i, prefix + j, old_mid[i]));
                i += 1;
            } else {
                ops.push(Op::Insert(prefix + i, prefix + j, new_mid[j]));
                j += 1;
            }
        }
    }
    for k in 0..suffix {
        let (i, j) = (old.len() - suffix + k, new.len() - suffix + k);
        ops.push(Op::Same(i, j, old[i]));
    }
    ops
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn diffs_are_unified() {
        // (before, after, expected hunks)
        let cases: [(Option<&str>, &str, &str); 4] = [
            (
                None,
                "{\n}\n",
                "--- /dev/null\n+++ /f\n@@ -0,0 +1,2 @@\n+{\n+}\n",
            ),
            (
                Some("a\nb\nc\n"),
                "a\nB\nc\n",
                "--- /f\n+++ /f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
            ),
            (
                Some("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"),
                "1\n2\n3\n4\n5\n6\n7\n8\n9\nten\n",
                "--- /f\n+++ /f\n@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+ten\n",
            ),
            (
                Some("x"),
                "x\ny",
                "--- /f\n+++ /f\n@@ -1,1 +1,2 @@\n-x\n\\ No newline at end of file\n+x\n+y\n\\ No newline at end of file\n",
            ),
        ];
        for (before, after, expected) in cases {
            let got = unified_diff(Path::new("/f"), before.map(str::as_bytes), after.as_bytes());
            assert_eq!(got, expected, "{before:?} -> {after:?}");
        }
    }
}
