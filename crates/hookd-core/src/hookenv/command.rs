//! Command-string expansion (spec §4.2): the textual rewrite of a hook's command line before
//! the shell sees it.
//!
//! Gemini CLI replaces the bare `$NAME` forms of five variables with shell-quoted values, one
//! variable after the other, as plain substring replacements with no word boundary. The quoting
//! is the `quote` function of the `shell-quote` 1.8.3 package, reproduced here rule by rule,
//! except that an empty value becomes an empty string (Gemini CLI's runner short-circuits it).
//! Only bash quoting is implemented: hookd runs hooks through `bash -c` on POSIX systems.
//!
//! The quirks are deliberate because hooks written for Gemini CLI depend on them:
//! `$GEMINI_SESSION_ID_X` becomes `<id>_X`, `${GEMINI_PLANS_DIR}` is left for the shell (which
//! reads the environment variable), and a value that needs quoting inserted inside double
//! quotes keeps its quote characters literally.
//!
//! [`simple_commands`] cuts a command line into the words of its simple commands, for the
//! rules that look at which program a hook runs (such as recognising `hookctl relay`).
//! [`plain_command`] recognises the command lines bash would run as exactly one program with
//! literal arguments, which the runner then starts without bash.

/// The values the command variables expand to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandVars<'a> {
    /// The project directory: the host's project root when the request named one, else the
    /// session's working directory (Gemini CLI's, which never moves); `$GEMINI_PROJECT_DIR`,
    /// `$GEMINI_CWD` and `$CLAUDE_PROJECT_DIR` all expand to it.
    pub project_dir: &'a str,
    /// The plans directory (`$GEMINI_PLANS_DIR`).
    pub plans_dir: &'a str,
    /// The session id (`$GEMINI_SESSION_ID`).
    pub session_id: &'a str,
}

/// Expands the bare `$NAME` command variables in Gemini CLI's order.
///
/// The order matters because the replacements are sequential: text inserted by an earlier
/// replacement is visible to the later ones, exactly as in Gemini CLI.
pub fn expand_command(command: &str, vars: &CommandVars<'_>) -> String {
    let replacements = [
        ("$GEMINI_PROJECT_DIR", vars.project_dir),
        ("$GEMINI_CWD", vars.project_dir),
        ("$GEMINI_PLANS_DIR", vars.plans_dir),
        ("$GEMINI_SESSION_ID", vars.session_id),
        ("$CLAUDE_PROJECT_DIR", vars.project_dir),
    ];
    let mut expanded = command.to_owned();
    for (name, value) in replacements {
        if expanded.contains(name) {
            expanded = expanded.replace(name, &shell_quote(value));
        }
    }
    expanded
}

/// Quotes one value for bash with `shell-quote` 1.8.3 semantics (empty value → empty string).
///
/// The rules are tried in order:
/// 1. an empty value stays empty;
/// 2. a value with a double quote, whitespace or backslash and no single quote is wrapped in
///    single quotes;
/// 3. a value with a double quote, single quote or whitespace is wrapped in double quotes,
///    with `"`, `\`, `$`, `` ` `` and `!` backslash-escaped;
/// 4. otherwise each character of ``#!"$&'()*,:;<=>?@[\]^`{|}`` is backslash-escaped, except
///    a colon that follows an ASCII letter and is directly followed by another such character
///    (as in `C:$`, which becomes `C:\$`).
pub fn shell_quote(value: &str) -> String {
    if value.is_empty() {
        return String::new();
    }
    let has_double = value.contains('"');
    let has_single = value.contains('\'');
    let has_space = value.chars().any(is_js_whitespace);
    let has_backslash = value.contains('\\');
    if (has_double || has_space || has_backslash) && !has_single {
        return format!("'{value}'");
    }
    if has_double || has_single || has_space {
        let mut quoted = String::with_capacity(value.len() + 2);
        quoted.push('"');
        for c in value.chars() {
            if matches!(c, '"' | '\\' | '$' | '`' | '!') {
                quoted.push('\\');
            }
            quoted.push(c);
        }
        quoted.push('"');
        return quoted;
    }
    escape_specials(value)
}

/// Rule 4 of [`shell_quote`]: backslash-escapes the special characters, scanning left to right
/// the way the package's regular expression `([A-Za-z]:)?([specials])` matches.
fn escape_specials(value: &str) -> String {
    let chars: Vec<char> = value.chars().collect();
    let mut escaped = String::with_capacity(value.len() * 2);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        // The optional `letter:` prefix only takes part in a match when a special character
        // follows it directly; the prefix is then copied unescaped.
        if c.is_ascii_alphabetic()
            && chars.get(i + 1) == Some(&':')
            && chars.get(i + 2).is_some_and(|&next| is_shell_special(next))
        {
            escaped.push(c);
            escaped.push(':');
            escaped.push('\\');
            escaped.push(chars[i + 2]);
            i += 3;
            continue;
        }
        if is_shell_special(c) {
            escaped.push('\\');
        }
        escaped.push(c);
        i += 1;
    }
    escaped
}

/// The characters rule 4 of [`shell_quote`] escapes.
fn is_shell_special(c: char) -> bool {
    matches!(
        c,
        '#' | '!'
            | '"'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | ','
            | ':'
            | ';'
            | '<'
            | '='
            | '>'
            | '?'
            | '@'
            | '['
            | '\\'
            | ']'
            | '^'
            | '`'
            | '{'
            | '|'
            | '}'
    )
}

/// Whether `c` is whitespace for JavaScript (`\s` in a regular expression, and what
/// `String.prototype.trim` removes).
///
/// This differs from [`char::is_whitespace`]: JavaScript counts U+FEFF (byte-order mark) and
/// does not count U+0085 (next line). Gemini CLI's rules are written in JavaScript, so hookd
/// uses its definition wherever it reproduces them.
pub(crate) fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// Trims JavaScript whitespace from both ends, like `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// One word of a command line as [`split_commands`] cuts it: its text after quote removal,
/// and whether the shell would expand it in a way the caller cannot know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ShellWord {
    /// The word's text; what an unknowable expansion would produce is missing from it.
    pub(crate) text: String,
    /// Whether part of the word is an expansion (a variable the reader did not know, a
    /// command substitution, `~`, a glob).
    pub(crate) unknown: bool,
    /// Where the word is in the line: the byte range of its text as written (quotes
    /// included), so that a caller can replace it.
    pub(crate) span: (usize, usize),
}

/// The characters of a line with their byte offsets, as the readers consume them.
pub(crate) type LineChars<'a> = std::iter::Peekable<std::str::CharIndices<'a>>;

/// Reads a `$` expansion: called just after the `$`, with the characters that follow, the
/// word being built and its "unknown" flag.
pub(crate) type DollarReader<'a> =
    dyn FnMut(&mut LineChars<'_>, &mut Option<String>, &mut bool) + 'a;

/// Cuts a command line into simple commands (lists of words), dropping redirections.
///
/// A deliberately small subset of the shell grammar: single and double quotes, backslashes,
/// the operators `;`, `&`, `|`, `&&`, `||`, newlines and parentheses (which end a simple
/// command), comments, and redirections (whose target word is dropped, as are the digits of
/// `2>`). `dollar` decides what a `$` expansion becomes; backquotes, a leading `~` and glob
/// characters mark the word unknown.
pub(crate) fn split_commands(line: &str, dollar: &mut DollarReader<'_>) -> Vec<Vec<ShellWord>> {
    let mut commands: Vec<Vec<ShellWord>> = Vec::new();
    let mut words: Vec<ShellWord> = Vec::new();
    let mut word: Option<String> = None;
    let mut unknown = false;
    let mut redirect_target = false;
    let mut start: Option<usize> = None;
    let mut chars: LineChars<'_> = line.char_indices().peekable();

    // Ends the current word (which ends at `end`); a word after a redirection operator is its
    // target, not an argument.
    let finish_word = |word: &mut Option<String>,
                       unknown: &mut bool,
                       words: &mut Vec<ShellWord>,
                       redirect: &mut bool,
                       start: &mut Option<usize>,
                       end: usize| {
        if let Some(text) = word.take() {
            if !std::mem::take(redirect) {
                words.push(ShellWord {
                    text,
                    unknown: *unknown,
                    span: (start.unwrap_or(end), end),
                });
            }
        }
        *start = None;
        *unknown = false;
    };

    while let Some((index, c)) = chars.next() {
        match c {
            ' ' | '\t' => finish_word(
                &mut word,
                &mut unknown,
                &mut words,
                &mut redirect_target,
                &mut start,
                index,
            ),
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                finish_word(
                    &mut word,
                    &mut unknown,
                    &mut words,
                    &mut redirect_target,
                    &mut start,
                    index,
                );
                redirect_target = false;
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '<' | '>' => {
                // `2>file`: the digits before the operator are its file descriptor.
                if word
                    .as_deref()
                    .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
                {
                    word = None;
                    unknown = false;
                    start = None;
                }
                finish_word(
                    &mut word,
                    &mut unknown,
                    &mut words,
                    &mut redirect_target,
                    &mut start,
                    index,
                );
                while chars
                    .peek()
                    .is_some_and(|(_, next)| matches!(next, '<' | '>' | '&'))
                {
                    chars.next();
                }
                redirect_target = true;
            }
            '#' if word.is_none() => {
                // A comment runs to the end of the line.
                while chars.peek().is_some_and(|(_, next)| *next != '\n') {
                    chars.next();
                }
            }
            '\'' => {
                let text = word.get_or_insert_with(String::new);
                for (_, next) in chars.by_ref() {
                    if next == '\'' {
                        break;
                    }
                    text.push(next);
                }
            }
            '"' => {
                word.get_or_insert_with(String::new);
                while let Some((_, next)) = chars.next() {
                    match next {
                        '"' => break,
                        '\\' => match chars.next().map(|(_, c)| c) {
                            Some(escaped @ ('$' | '`' | '"' | '\\')) => push(&mut word, escaped),
                            Some('\n') => {}
                            Some(other) => {
                                push(&mut word, '\\');
                                push(&mut word, other);
                            }
                            None => {}
                        },
                        '$' => dollar(&mut chars, &mut word, &mut unknown),
                        '`' => unknown = true,
                        other => push(&mut word, other),
                    }
                }
            }
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('\n') | None => {}
                Some(escaped) => push(&mut word, escaped),
            },
            '$' => dollar(&mut chars, &mut word, &mut unknown),
            '`' => {
                unknown = true;
                word.get_or_insert_with(String::new);
            }
            '~' if word.is_none() => {
                unknown = true;
                push(&mut word, '~');
            }
            '*' | '?' | '[' => {
                // A glob may match any file.
                unknown = true;
                push(&mut word, c);
            }
            other => push(&mut word, other),
        }
        if word.is_some() && start.is_none() {
            start = Some(index);
        }
    }
    finish_word(
        &mut word,
        &mut unknown,
        &mut words,
        &mut redirect_target,
        &mut start,
        line.len(),
    );
    if !words.is_empty() {
        commands.push(words);
    }
    commands
}

fn push(word: &mut Option<String>, c: char) {
    word.get_or_insert_with(String::new).push(c);
}

/// Cuts a command line into its simple commands, each a list of words after quote removal,
/// as [`split_commands`] does, with `$` kept as a literal character: `$HOME/bin/x` stays that
/// text. Enough to see which programs a hook's command line starts.
pub fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut literal =
        |_: &mut LineChars<'_>, word: &mut Option<String>, _: &mut bool| push(word, '$');
    split_commands(line, &mut literal)
        .into_iter()
        .map(|words| words.into_iter().map(|word| word.text).collect())
        .collect()
}

/// The bash keywords and builtins: a command line whose first word is one of them runs inside
/// bash, never as a program of its own.
#[rustfmt::skip]
const BASH_WORDS: &[&str] = &[
    "!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac", "fi",
    "for", "function", "if", "in", "select", "then", "time", "until", "while", ":", ".", "[",
    "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command", "compgen", "complete",
    "compopt", "continue", "declare", "dirs", "disown", "echo", "enable", "eval", "exec", "exit",
    "export", "false", "fc", "fg", "getopts", "hash", "help", "history", "jobs", "kill", "let",
    "local", "logout", "mapfile", "popd", "printf", "pushd", "pwd", "read", "readarray",
    "readonly", "return", "set", "shift", "shopt", "source", "suspend", "test", "times", "trap",
    "true", "type", "typeset", "ulimit", "umask", "unalias", "unset", "wait",
];

/// Whether `word` is a bash keyword or builtin.
pub fn is_bash_word(word: &str) -> bool {
    BASH_WORDS.contains(&word)
}

/// The words of `line` when bash would run it as exactly one program with literal arguments,
/// else `None`.
///
/// Accepted: words of the characters `A-Z a-z 0-9 _ . / , : @ % + = -` (and any other
/// non-ASCII character), separated by spaces or tabs, each possibly made of parts in single
/// quotes (anything but a quote and a newline) or double quotes (anything but `$`, a backquote,
/// `\`, `!`, a quote and a newline). Refused: everything else — expansions, globs, `~`,
/// comments, redirections, pipes, lists, escapes, newlines, an assignment before the command
/// (`NAME=value cmd`), an empty line, and a first word that is a bash keyword or builtin (bash
/// runs those itself).
pub fn plain_command(line: &str) -> Option<Vec<String>> {
    let mut words: Vec<String> = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if let Some(done) = word.take() {
                    words.push(done);
                }
            }
            '\'' => {
                let part = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        '\n' => return None,
                        c => part.push(c),
                    }
                }
            }
            '"' => {
                let part = word.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' | '!' | '\n' => return None,
                        c => part.push(c),
                    }
                }
            }
            c if c.is_ascii_alphanumeric()
                || matches!(c, '_' | '.' | '/' | ',' | ':' | '@' | '%' | '+' | '=' | '-')
                || !c.is_ascii() =>
            {
                word.get_or_insert_with(String::new).push(c);
            }
            _ => return None,
        }
    }
    words.extend(word);
    let first = words.first()?;
    // `NAME=value` first is an assignment; a quoted `=` would not be, but is rare enough to
    // leave to bash. An empty first word (`''`) is bash's "command not found".
    if first.is_empty() || first.contains('=') || is_bash_word(first) {
        return None;
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_quote(value: &str, expected: &str) {
        assert_eq!(shell_quote(value), expected, "quoting {value:?}");
    }

    #[test]
    fn shell_quote_follows_shell_quote_1_8_3() {
        let cases = [
            // Rule 1: empty value → empty string, not `''`.
            ("", ""),
            // The spec's examples.
            ("/test/project", "/test/project"),
            ("/tmp/x:y", "/tmp/x\\:y"),
            ("/a/b$c", "/a/b\\$c"),
            ("/tmp/plans dir", "'/tmp/plans dir'"),
            // Rule 2: double quote, whitespace or backslash without a single quote.
            ("a\"b", "'a\"b'"),
            ("a\\b", "'a\\b'"),
            ("a\tb", "'a\tb'"),
            ("a\nb", "'a\nb'"),
            ("a\u{00A0}b", "'a\u{00A0}b'"),
            ("a\u{FEFF}b", "'a\u{FEFF}b'"),
            ("$x y", "'$x y'"),
            // U+0085 is not JavaScript whitespace, so it takes rule 4 (no escaping needed).
            ("a\u{0085}b", "a\u{0085}b"),
            // Rule 3: a single quote (with or without other triggers) → double quotes.
            ("it's", "\"it's\""),
            ("it's $HOME", "\"it's \\$HOME\""),
            ("a'b\\c", "\"a'b\\\\c\""),
            ("a'b\"c", "\"a'b\\\"c\""),
            ("'`!", "\"'\\`\\!\""),
            // Rule 4: each special character escaped.
            (
                "#!$&()*,;<=>?@[]^`{|}",
                "\\#\\!\\$\\&\\(\\)\\*\\,\\;\\<\\=\\>\\?\\@\\[\\]\\^\\`\\{\\|\\}",
            ),
            ("plain-text_1.2/~+%", "plain-text_1.2/~+%"),
            // The colon exception: letter, colon, special → colon left unescaped.
            ("C:$", "C:\\$"),
            ("C:\\x", "'C:\\x'"),
            ("a:::", "a:\\:\\:"),
            ("a:b:$", "a\\:b:\\$"),
            ("1:$", "1\\:\\$"),
            ("::", "\\:\\:"),
            ("x:", "x\\:"),
            ("é:$", "é\\:\\$"),
        ];
        for (value, expected) in cases {
            check_quote(value, expected);
        }
    }

    fn check_expand(command: &str, expected: &str) {
        let vars = CommandVars {
            project_dir: "/srv/my project",
            plans_dir: "/home/u/.gemini/tmp/p/s1/plans",
            session_id: "s1",
        };
        assert_eq!(
            expand_command(command, &vars),
            expected,
            "expanding {command:?}"
        );
    }

    #[test]
    fn expansion_is_textual_and_ordered() {
        let cases = [
            ("echo $GEMINI_PROJECT_DIR", "echo '/srv/my project'"),
            ("echo $GEMINI_CWD", "echo '/srv/my project'"),
            ("echo $CLAUDE_PROJECT_DIR", "echo '/srv/my project'"),
            (
                "cat $GEMINI_PLANS_DIR/a",
                "cat /home/u/.gemini/tmp/p/s1/plans/a",
            ),
            ("echo $GEMINI_SESSION_ID", "echo s1"),
            // No word boundary.
            ("echo $GEMINI_SESSION_ID_X", "echo s1_X"),
            // Braced forms are left for the shell.
            ("ls ${GEMINI_PLANS_DIR}", "ls ${GEMINI_PLANS_DIR}"),
            // Quoting is inserted textually, even inside double quotes.
            ("cd \"$GEMINI_PROJECT_DIR\"", "cd \"'/srv/my project'\""),
            // Every occurrence is replaced.
            (
                "$GEMINI_CWD:$GEMINI_CWD",
                "'/srv/my project':'/srv/my project'",
            ),
            ("no variables here", "no variables here"),
            ("$GEMINI_UNKNOWN", "$GEMINI_UNKNOWN"),
        ];
        for (command, expected) in cases {
            check_expand(command, expected);
        }
    }

    #[test]
    fn expansion_sees_text_inserted_by_earlier_replacements() {
        // `$GEMINI_PROJECT_DIR` is replaced first; its value contains `$GEMINI_CWD` after
        // quoting (`\$GEMINI_CWD`), which the second replacement then rewrites.
        let vars = CommandVars {
            project_dir: "/a$GEMINI_CWD",
            plans_dir: "",
            session_id: "",
        };
        assert_eq!(
            expand_command("x $GEMINI_PROJECT_DIR", &vars),
            "x /a\\/a\\$GEMINI_CWD"
        );
        // An empty value expands to nothing at all.
        assert_eq!(expand_command("[$GEMINI_PLANS_DIR]", &vars), "[]");
    }

    #[test]
    fn js_trim_uses_javascript_whitespace() {
        let cases = [
            ("  a b \n", "a b"),
            ("\u{FEFF}x\u{3000}", "x"),
            ("\u{0085}x\u{0085}", "\u{0085}x\u{0085}"),
            ("", ""),
        ];
        for (input, expected) in cases {
            assert_eq!(js_trim(input), expected, "{input:?}");
        }
    }

    #[test]
    fn simple_commands_split_words_and_operators() {
        let cases: Vec<(&str, Vec<Vec<&str>>)> = vec![
            (
                "hookctl relay BeforeTool",
                vec![vec!["hookctl", "relay", "BeforeTool"]],
            ),
            (
                "a 'b c' \"d e\" f\\ g",
                vec![vec!["a", "b c", "d e", "f g"]],
            ),
            (
                "a;b&&c||d|e & f",
                vec![
                    vec!["a"],
                    vec!["b"],
                    vec!["c"],
                    vec!["d"],
                    vec!["e"],
                    vec!["f"],
                ],
            ),
            ("a >out 2>&1 <in b", vec![vec!["a", "b"]]),
            ("a 2> err b", vec![vec!["a", "b"]]),
            ("# only a comment", vec![]),
            ("a # comment\nb", vec![vec!["a"], vec!["b"]]),
            ("a#b", vec![vec!["a#b"]]),
            ("(cd x && y)", vec![vec!["cd", "x"], vec!["y"]]),
            ("\"$HOME/bin/x\" ''", vec![vec!["$HOME/bin/x", ""]]),
            ("\"a\\\"b\\$c\\d\"", vec![vec!["a\"b$c\\d"]]),
            ("", vec![]),
        ];
        for (line, expected) in cases {
            let expected: Vec<Vec<String>> = expected
                .into_iter()
                .map(|words| words.into_iter().map(str::to_owned).collect())
                .collect();
            assert_eq!(simple_commands(line), expected, "{line:?}");
        }
    }

    #[test]
    fn plain_commands_are_recognised_and_everything_else_is_left_to_bash() {
        let words = |list: &[&str]| Some(list.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>());
        // (line, the program and its arguments, or None: bash runs it)
        let cases: Vec<(&str, Option<Vec<String>>)> = vec![
            ("python3 guard.py", words(&["python3", "guard.py"])),
            (
                "  node   /opt/hooks/a.js\t--fast ",
                words(&["node", "/opt/hooks/a.js", "--fast"]),
            ),
            (
                "python3 \"/home/u/my hooks/g.py\"",
                words(&["python3", "/home/u/my hooks/g.py"]),
            ),
            (
                "'/a b/run' 'x\"y' \"it's\"",
                words(&["/a b/run", "x\"y", "it's"]),
            ),
            (
                "run --opt=1 a,b u@h:p 50% +x",
                words(&["run", "--opt=1", "a,b", "u@h:p", "50%", "+x"]),
            ),
            ("pre'fix'\"ed\" ''", words(&["prefixed", ""])),
            ("./hook.sh", words(&["./hook.sh"])),
            (
                "hookd-relay BeforeTool",
                words(&["hookd-relay", "BeforeTool"]),
            ),
            ("café ünï", words(&["café", "ünï"])),
            ("", None),
            ("   ", None),
            ("''", None),
            ("true", None),
            ("echo hi", None),
            ("exec python3 g.py", None),
            ("[ -f x ]", None),
            ("cd sub", None),
            ("if", None),
            ("FOO=1 python3 g.py", None),
            ("python3 g.py > out", None),
            ("python3 g.py 2>&1", None),
            ("python3 g.py | tee x", None),
            ("a; b", None),
            ("a && b", None),
            ("a &", None),
            ("python3 $HOME/g.py", None),
            ("python3 \"$HOME/g.py\"", None),
            ("python3 ${X}", None),
            ("python3 `x`", None),
            ("python3 \"`x`\"", None),
            ("python3 *.py", None),
            ("python3 g?.py", None),
            ("python3 [ab].py", None),
            ("python3 {a,b}.py", None),
            ("python3 ~/g.py", None),
            ("python3 g.py # note", None),
            ("python3 a\\ b", None),
            ("python3 \"a\\\"b\"", None),
            ("python3 \"hi!\"", None),
            ("python3 'unterminated", None),
            ("python3 \"unterminated", None),
            ("python3 'multi\nline'", None),
            ("python3 g.py\npython3 h.py", None),
            ("(python3 g.py)", None),
            ("python3 <(x)", None),
        ];
        for (line, expected) in cases {
            assert_eq!(plain_command(line), expected, "{line:?}");
        }
        assert!(is_bash_word("ulimit") && is_bash_word("umask") && is_bash_word("wait"));
        assert!(!is_bash_word("python3") && !is_bash_word("env"));
    }
}
