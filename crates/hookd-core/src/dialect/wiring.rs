//! What the relay entries `hookctl install` writes select: matchers that cover every hook
//! hookd has for an event, in a host's terms.

/// The tool names of a Gemini matcher that is a plain list of them: `a`, `a|b`, `^a$`,
/// `^(?:a|b)$` or `^(a|b)$`; `None` for anything else. An unanchored name is a regular
/// expression that also matches longer names; it counts as the name itself only when it is
/// one of Gemini CLI's built-in tools (`run_shell_command`), whose names contain no other's.
pub fn tool_names(matcher: &str) -> Option<Vec<String>> {
    let anchored_matcher = matcher.starts_with('^') && matcher.ends_with('$');
    let inner = match matcher
        .strip_prefix('^')
        .and_then(|rest| rest.strip_suffix('$'))
    {
        Some(anchored) => anchored
            .strip_prefix("(?:")
            .or_else(|| anchored.strip_prefix('('))
            .and_then(|rest| rest.strip_suffix(')'))
            .unwrap_or(anchored),
        None => matcher,
    };
    let names: Vec<String> = inner.split('|').map(str::to_owned).collect();
    let plain = |name: &String| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && (anchored_matcher || super::gemini_tool_to_claude(name) != name.as_str())
    };
    names.iter().all(plain).then_some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_name_lists_are_recognised() {
        let cases: [(&str, Option<&[&str]>); 9] = [
            ("run_shell_command", Some(&["run_shell_command"])),
            ("write_file|replace", Some(&["write_file", "replace"])),
            // Unanchored, `read` also matches `read_file`: not a list of names.
            ("read", None),
            ("^read$", Some(&["read"])),
            ("^replace$", Some(&["replace"])),
            ("^(?:replace|write_file)$", Some(&["replace", "write_file"])),
            ("^(a|b)$", Some(&["a", "b"])),
            ("mcp_.*", None),
            ("a||b", None),
        ];
        for (matcher, expected) in cases {
            let got = tool_names(matcher);
            let expected = expected.map(|names| names.iter().map(|n| (*n).to_owned()).collect());
            assert_eq!(got, expected, "{matcher}");
        }
    }
}
