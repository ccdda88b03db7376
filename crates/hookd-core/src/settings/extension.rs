//! Extension hooks: `<extension>/hooks/hooks.json` (spec §1.9).
//!
//! The loader finds the extensions and reads their files; this module turns one extension's
//! files into validated hook definitions, without I/O:
//!
//! 1. The file must be plain JSON (Gemini CLI uses `JSON.parse`, so comments are errors) of the
//!    shape `{ "hooks": { <event>: [definitions] } }`, with `hooks` a non-null, non-array
//!    object. Anything else is a warning and the extension contributes no hooks. A missing file
//!    simply means no hooks.
//! 2. Settings-file environment expansion does **not** apply. Instead every string is
//!    *hydrated*: each `${name}` (up to the first `}` on the same line) is replaced by the
//!    context value of that name, and left as written when the name is unknown. The context
//!    holds `extensionPath`, `workspacePath`, every extension setting value keyed by its
//!    environment variable, and `/` and `pathSeparator` (the platform separator). `$NAME`
//!    without braces is untouched. Two departures from Gemini CLI keep a project's `.env`
//!    from steering an installed extension's hooks: setting values never override
//!    `extensionPath` or `workspacePath` (Gemini CLI lets them), and a hook whose `command`
//!    would get a setting value that is not plain text ([`is_plain_value`]) is left out
//!    with a warning, since values are inserted as shell text. Under `--project-hooks
//!    require` the registry also leaves the project's `.env` out altogether.
//!    Object keys `__proto__`, `constructor` and `prototype` are dropped while hydrating.
//! 3. The definitions are validated like a settings file's (§1.4), except that a non-array
//!    event value is skipped with a warning rather than wrapped.
//! 4. Each `command` hook (not `plugin`) gets the manifest's settings that have a value merged
//!    into its `env`, the setting values overriding the hook's own.
//!
//! The hooks are labelled [`Source::Extension`] and their origin names the extension.
//!
//! [`extension_enabled_for_path`] evaluates the per-path enablement rules Gemini CLI keeps in
//! `extension-enablement.json`.

use std::path::{MAIN_SEPARATOR_STR, Path, PathBuf};

use serde_json::{Map, Value};

use crate::model::Source;
use crate::settings::{self, Diagnostic, EventHooks};

/// One entry of a manifest's `settings[]`: a value the user configures for the extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionSetting {
    /// The setting's display name.
    pub name: String,
    /// The environment variable the value is exposed as.
    pub env_var: String,
}

/// Everything about one installed extension the registry needs, as read by the loader.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtensionInput {
    /// The extension's name from its manifest.
    pub name: String,
    /// The effective extension directory: the installed directory, or the source directory of
    /// a linked install. This is `${extensionPath}`.
    pub path: PathBuf,
    /// The hooks file, for messages: `<path>/hooks/hooks.json`.
    pub hooks_file: PathBuf,
    /// The hooks file's text, or `None` when there is no such file.
    pub hooks_text: Option<String>,
    /// The manifest's settings, in manifest order.
    pub settings: Vec<ExtensionSetting>,
    /// The user-scope setting values (the extension's own `.env` entries). For a name given
    /// twice the later value wins.
    pub setting_values: Vec<(String, String)>,
    /// The workspace-scope values (the project's `.env`, read in a trusted folder only); they
    /// win over the user's. The registry leaves them out under `--project-hooks require`.
    pub workspace_setting_values: Vec<(String, String)>,
    /// Whether the extension is enabled for the workspace; inactive extensions contribute no
    /// hooks.
    pub active: bool,
}

impl ExtensionInput {
    /// The hooks file of an extension directory: `<dir>/hooks/hooks.json`.
    pub fn hooks_file_for(dir: &Path) -> PathBuf {
        dir.join("hooks").join("hooks.json")
    }

    /// The resolved value of a setting or `.env` entry: the workspace's, else the user's; the
    /// last occurrence wins.
    pub fn setting_value(&self, name: &str) -> Option<&str> {
        self.workspace_setting_values
            .iter()
            .rev()
            .chain(self.setting_values.iter().rev())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Keys that must never be copied into a hydrated object.
const DANGEROUS_KEYS: [&str; 3] = ["__proto__", "constructor", "prototype"];

/// Parses, hydrates and validates an extension's hooks file.
///
/// `workspace_path` is the value of `${workspacePath}`. Problems are appended to `diagnostics`;
/// an extension without a hooks file yields no hooks and no diagnostics.
pub fn parse_extension_hooks(
    extension: &ExtensionInput,
    workspace_path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> Vec<EventHooks> {
    let Some(text) = &extension.hooks_text else {
        return Vec::new();
    };
    let path = extension.hooks_file.as_path();
    let root: Value = match serde_json::from_str(text) {
        Ok(root) => root,
        Err(err) => {
            let full = err.to_string();
            let suffix = format!(" at line {} column {}", err.line(), err.column());
            let message = full.strip_suffix(&suffix).unwrap_or(&full);
            diagnostics.push(
                Diagnostic::warning(format!(
                    "Failed to load hooks of extension \"{}\": invalid JSON: {message}",
                    extension.name
                ))
                .with_path(path)
                .with_position(err.line(), err.column()),
            );
            return Vec::new();
        }
    };
    let Some(Value::Object(hooks)) = root.as_object().and_then(|root| root.get("hooks")) else {
        diagnostics.push(
            Diagnostic::warning(format!(
                "Invalid hooks configuration of extension \"{}\": \"hooks\" property must be an \
                 object",
                extension.name
            ))
            .with_path(path),
        );
        return Vec::new();
    };

    let context = HydrationContext::new(extension, workspace_path);
    let mut hooks = hooks.clone();
    for hooks in hooks.values_mut() {
        drop_unsafe_commands(hooks, &context, &extension.name, path, diagnostics);
    }
    let hydrated = hydrate_map(&hooks, &context);
    let mut events = settings::parse_hooks_object(&hydrated, Source::Extension, path, diagnostics);
    merge_setting_env(&mut events, extension);
    events
}

/// Leaves out (with a warning) every hook object whose `command` would get a setting value
/// that is not plain text (see [`is_plain_value`]): hydration inserts values as they are,
/// so such a value could add shell syntax to the command line.
fn drop_unsafe_commands(
    value: &mut Value,
    context: &HydrationContext<'_>,
    extension: &str,
    path: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) {
    match value {
        Value::Array(items) => {
            items.retain(|item| {
                let Some(command) = item.get("command").and_then(Value::as_str) else {
                    return true;
                };
                match unsafe_reference(command, context) {
                    None => true,
                    Some(name) => {
                        diagnostics.push(
                            Diagnostic::warning(format!(
                                "hook of extension \"{extension}\" left out: the value of \
                                 ${{{name}}} in its command is not plain text (letters, digits \
                                 and _ . / : @ % + = , -), so it could change the command line; \
                                 read the setting from the hook's environment instead"
                            ))
                            .with_path(path),
                        );
                        false
                    }
                }
            });
            for item in items {
                drop_unsafe_commands(item, context, extension, path, diagnostics);
            }
        }
        Value::Object(map) => {
            for (_, item) in map.iter_mut() {
                drop_unsafe_commands(item, context, extension, path, diagnostics);
            }
        }
        _ => {}
    }
}

/// The first `${name}` of `command` that a setting value would fill with text that is not
/// plain.
fn unsafe_reference(command: &str, context: &HydrationContext<'_>) -> Option<String> {
    let mut rest = command;
    while let Some(start) = rest.find("${") {
        let inner = &rest[start + 2..];
        let close = inner
            .find(['}', '\n', '\r', '\u{2028}', '\u{2029}'])
            .filter(|&i| inner[i..].starts_with('}'));
        match close {
            Some(close) => {
                let name = &inner[..close];
                if let Some(value) = context.setting(name)
                    && !is_plain_value(value)
                {
                    return Some(name.to_owned());
                }
                rest = &inner[close + 1..];
            }
            None => rest = &rest[start + 1..],
        }
    }
    None
}

/// Whether a setting value can be put into a command line as it is: non-empty, and only
/// letters, digits and `_ . / : @ % + = , -`.
pub fn is_plain_value(value: &str) -> bool {
    !value.is_empty()
        && value.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'_' | b'.' | b'/' | b':' | b'@' | b'%' | b'+' | b'=' | b',' | b'-'
                )
        })
}

/// The values `${name}` can refer to in an extension's files.
#[derive(Debug, Clone)]
pub struct HydrationContext<'a> {
    extension_path: String,
    workspace_path: String,
    values: &'a [(String, String)],
    workspace_values: &'a [(String, String)],
}

impl<'a> HydrationContext<'a> {
    /// The context for an extension's files in a workspace.
    pub fn new(extension: &'a ExtensionInput, workspace_path: &Path) -> HydrationContext<'a> {
        HydrationContext {
            extension_path: extension.path.to_string_lossy().into_owned(),
            workspace_path: workspace_path.to_string_lossy().into_owned(),
            values: &extension.setting_values,
            workspace_values: &extension.workspace_setting_values,
        }
    }

    /// The value of `name`, if the context has one.
    pub fn get(&self, name: &str) -> Option<&str> {
        // The separators are applied last in Gemini CLI, so nothing overrides them. Gemini
        // CLI lets setting values override the two paths too; hookd does not, so that a
        // project's `.env` cannot point an installed extension's hooks into the repository.
        match name {
            "/" | "pathSeparator" => Some(MAIN_SEPARATOR_STR),
            "extensionPath" => Some(&self.extension_path),
            "workspacePath" => Some(&self.workspace_path),
            _ => self.setting(name),
        }
    }

    /// The setting value of `name` (workspace scope first), if any.
    fn setting(&self, name: &str) -> Option<&str> {
        if matches!(
            name,
            "/" | "pathSeparator" | "extensionPath" | "workspacePath"
        ) {
            return None;
        }
        self.workspace_values
            .iter()
            .rev()
            .chain(self.values.iter().rev())
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// Replaces each `${name}` in `text` whose name the context knows.
///
/// Like Gemini CLI's non-greedy `\${(.*?)}`, a reference ends at the first `}` and cannot span
/// a line break; an unknown name is kept verbatim.
pub fn hydrate_str(text: &str, context: &HydrationContext<'_>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let inner = &rest[start + 2..];
        let close = inner
            .find(['}', '\n', '\r', '\u{2028}', '\u{2029}'])
            .filter(|&i| inner[i..].starts_with('}'));
        match close {
            Some(close) => {
                let name = &inner[..close];
                match context.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[start..start + 2 + close + 1]),
                }
                rest = &inner[close + 1..];
            }
            None => {
                // No reference starts at this `$`; the next one may start right after it.
                out.push('$');
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Hydrates every string of a JSON value, dropping dangerous object keys.
pub fn hydrate_value(value: &Value, context: &HydrationContext<'_>) -> Value {
    match value {
        Value::String(s) => Value::String(hydrate_str(s, context)),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| hydrate_value(i, context)).collect())
        }
        Value::Object(map) => Value::Object(hydrate_map(map, context)),
        Value::Null | Value::Bool(_) | Value::Number(_) => value.clone(),
    }
}

fn hydrate_map(map: &Map<String, Value>, context: &HydrationContext<'_>) -> Map<String, Value> {
    map.iter()
        .filter(|(key, _)| !DANGEROUS_KEYS.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), hydrate_value(value, context)))
        .collect()
}

/// Merges the extension's setting values into the `env` of every `command` hook.
fn merge_setting_env(events: &mut [EventHooks], extension: &ExtensionInput) {
    let mut setting_env: Vec<(&str, &str)> = Vec::new();
    for setting in &extension.settings {
        let Some(value) = extension.setting_value(&setting.env_var) else {
            continue;
        };
        if !setting_env.iter().any(|(key, _)| *key == setting.env_var) {
            setting_env.push((&setting.env_var, value));
        }
    }
    if setting_env.is_empty() {
        return;
    }
    let hooks = events
        .iter_mut()
        .flat_map(|event| &mut event.definitions)
        .flat_map(|definition| &mut definition.hooks)
        .filter(|hook| hook.hook_type == crate::model::HookType::Command);
    for hook in hooks {
        for (key, value) in &setting_env {
            match hook.env.iter_mut().find(|(existing, _)| existing == key) {
                Some(slot) => slot.1 = (*value).to_owned(),
                None => hook.env.push(((*key).to_owned(), (*value).to_owned())),
            }
        }
        let env_object: Map<String, Value> = hook
            .env
            .iter()
            .map(|(key, value)| (key.clone(), Value::String(value.clone())))
            .collect();
        hook.raw.insert("env".to_owned(), Value::Object(env_object));
    }
}

/// Whether an extension is enabled at `path`, given its rules from
/// `extension-enablement.json` (`{"<name>": {"overrides": [rules]}}`).
///
/// Extensions are enabled by default and the last matching rule wins. A rule is a directory,
/// optionally prefixed by `!` (disable) and suffixed by `*` (the directory and everything
/// below it); a `*` elsewhere matches any text. Paths are compared with forward slashes and a
/// leading and trailing `/` added, case-sensitively.
pub fn extension_enabled_for_path(overrides: &[String], path: &str) -> bool {
    let path = with_leading_and_trailing_slash(path);
    let mut enabled = true;
    for rule in overrides {
        let (disable, base) = match rule.strip_prefix('!') {
            Some(base) => (true, base),
            None => (false, rule.as_str()),
        };
        // The glob keeps a trailing `*`; it becomes an optional group matching subdirectories.
        if glob_regex(base).is_some_and(|regex| regex.find(&path).is_some()) {
            enabled = !disable;
        }
    }
    enabled
}

fn with_leading_and_trailing_slash(path: &str) -> String {
    let mut result = path.replace('\\', "/");
    if !result.starts_with('/') {
        result.insert(0, '/');
    }
    if !result.ends_with('/') {
        result.push('/');
    }
    result
}

/// Compiles an enablement glob: `/*` and `*` become optional groups (`(/.*)?`, `(.*)?`),
/// regular-expression syntax is escaped, and the whole path must match.
fn glob_regex(glob: &str) -> Option<regress::Regex> {
    let mut pattern = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '/' if chars.peek() == Some(&'*') => {
                chars.next();
                pattern.push_str("(/.*)?");
            }
            '*' => pattern.push_str("(.*)?"),
            '.' | '+' | '?' | '^' | '$' | '{' | '}' | '(' | ')' | '|' | '[' | ']' | '\\' => {
                pattern.push('\\');
                pattern.push(c);
            }
            _ => pattern.push(c),
        }
    }
    pattern.push('$');
    regress::Regex::new(&pattern).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::Severity;

    fn extension(hooks_text: Option<&str>) -> ExtensionInput {
        ExtensionInput {
            name: "ext".to_owned(),
            path: PathBuf::from("/home/u/.gemini/extensions/ext"),
            hooks_file: PathBuf::from("/home/u/.gemini/extensions/ext/hooks/hooks.json"),
            hooks_text: hooks_text.map(str::to_owned),
            settings: vec![
                ExtensionSetting {
                    name: "Token".to_owned(),
                    env_var: "API_TOKEN".to_owned(),
                },
                ExtensionSetting {
                    name: "Unset".to_owned(),
                    env_var: "UNSET".to_owned(),
                },
            ],
            setting_values: vec![
                ("API_TOKEN".to_owned(), "user-token".to_owned()),
                ("EXTRA".to_owned(), "extra".to_owned()),
            ],
            workspace_setting_values: vec![("API_TOKEN".to_owned(), "workspace-token".to_owned())],
            active: true,
        }
    }

    fn check_hydrate(input: &str, expected: &str) {
        let ext = extension(None);
        let context = HydrationContext::new(&ext, Path::new("/srv/p"));
        assert_eq!(hydrate_str(input, &context), expected, "input: {input:?}");
    }

    #[test]
    fn hydration_replaces_known_names_only() {
        let cases = [
            (
                "${extensionPath}/run.sh",
                "/home/u/.gemini/extensions/ext/run.sh",
            ),
            ("${workspacePath}${/}x", "/srv/p/x"),
            ("a${pathSeparator}b", "a/b"),
            ("${API_TOKEN}", "workspace-token"),
            ("${EXTRA}", "extra"),
            ("${unknown} and ${UNSET}", "${unknown} and ${UNSET}"),
            ("$HOME and $API_TOKEN", "$HOME and $API_TOKEN"),
            ("${}", "${}"),
            ("${extensionPath", "${extensionPath"),
            // Non-greedy: the first `}` ends the name.
            ("${EXTRA}}", "extra}"),
            ("${a${EXTRA}", "${a${EXTRA}"),
            // A reference does not span lines; the next `${` is tried.
            ("${x\n${EXTRA}", "${x\nextra"),
            ("$${EXTRA}", "$extra"),
        ];
        for (input, expected) in cases {
            check_hydrate(input, expected);
        }
    }

    #[test]
    fn setting_values_override_neither_paths_nor_separators() {
        let mut ext = extension(None);
        ext.workspace_setting_values = vec![
            ("extensionPath".to_owned(), "/srv/repo/evil".to_owned()),
            ("workspacePath".to_owned(), "/elsewhere".to_owned()),
            ("/".to_owned(), "\\".to_owned()),
        ];
        let context = HydrationContext::new(&ext, Path::new("/w"));
        assert_eq!(
            hydrate_str("${extensionPath}${/}${workspacePath}", &context),
            "/home/u/.gemini/extensions/ext//w"
        );
    }

    #[test]
    fn setting_values_that_are_not_plain_text_never_reach_a_command() {
        // (value, hook kept)
        let cases = [
            ("https://example.com:8080/a-b_c", true),
            ("x; curl evil | sh", false),
            ("$(touch /tmp/x)", false),
            ("a b", false),
            ("'", false),
            ("", false),
        ];
        for (value, kept) in cases {
            let mut ext = extension(Some(
                r#"{"hooks": {"BeforeTool": [{"hooks": [
                    {"type": "command", "command": "${extensionPath}/gate.sh --url ${URL}"},
                    {"type": "command", "command": "echo ${EXTRA}"}
                ]}]}}"#,
            ));
            ext.workspace_setting_values = vec![("URL".to_owned(), value.to_owned())];
            let mut diagnostics = Vec::new();
            let events = parse_extension_hooks(&ext, Path::new("/w"), &mut diagnostics);
            let commands: Vec<&str> = events[0].definitions[0]
                .hooks
                .iter()
                .filter_map(|hook| hook.command.as_deref())
                .collect();
            let gate = format!("/home/u/.gemini/extensions/ext/gate.sh --url {value}");
            let expected: Vec<&str> = if kept {
                vec![gate.as_str(), "echo extra"]
            } else {
                vec!["echo extra"]
            };
            assert_eq!(commands, expected, "{value:?}");
            assert_eq!(diagnostics.len(), usize::from(!kept), "{diagnostics:?}");
        }
    }

    fn parse(text: &str) -> (Vec<EventHooks>, Vec<Diagnostic>) {
        let mut diagnostics = Vec::new();
        let events =
            parse_extension_hooks(&extension(Some(text)), Path::new("/w"), &mut diagnostics);
        (events, diagnostics)
    }

    #[test]
    fn hooks_are_hydrated_validated_and_given_setting_env() {
        let (events, diagnostics) = parse(
            r#"{"hooks": {
                "BeforeTool": [{"matcher": "${EXTRA}", "hooks": [
                    {"type": "command", "command": "${extensionPath}/gate.sh $API_TOKEN",
                     "env": {"API_TOKEN": "mine", "KEEP": "${workspacePath}"},
                     "__proto__": {"polluted": true}},
                    {"type": "plugin", "command": "p"}
                ]}],
                "AfterTool": {"hooks": []},
                "enabled": true
            }}"#,
        );
        let messages: Vec<String> = diagnostics.iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            messages,
            [
                "Hook definitions for event \"AfterTool\" from extension config is not an array. \
              Skipping."
            ]
        );
        assert_eq!(events.len(), 1);
        let definition = &events[0].definitions[0];
        assert_eq!(definition.matcher.as_deref(), Some("extra"));
        let command = &definition.hooks[0];
        assert_eq!(
            command.command.as_deref(),
            Some("/home/u/.gemini/extensions/ext/gate.sh $API_TOKEN")
        );
        assert_eq!(
            command.env,
            [
                ("API_TOKEN".to_owned(), "workspace-token".to_owned()),
                ("KEEP".to_owned(), "/w".to_owned()),
            ]
        );
        assert_eq!(
            command.raw.get("env"),
            Some(&serde_json::json!({"API_TOKEN": "workspace-token", "KEEP": "/w"}))
        );
        assert!(!command.raw.contains_key("__proto__"));
        // Plugin hooks do not get the setting values.
        assert!(definition.hooks[1].env.is_empty());
    }

    #[test]
    fn malformed_files_give_one_warning_and_no_hooks() {
        let cases = [
            "// comments are not allowed\n{\"hooks\": {}}",
            "{\"hooks\": []}",
            "{\"hooks\": null}",
            "{\"BeforeTool\": []}",
            "[]",
            "",
        ];
        for text in cases {
            let (events, diagnostics) = parse(text);
            assert!(events.is_empty(), "{text}");
            assert_eq!(diagnostics.len(), 1, "{text}: {diagnostics:?}");
            assert_eq!(diagnostics[0].severity, Severity::Warning);
            assert_eq!(
                diagnostics[0].path.as_deref(),
                Some(Path::new("/home/u/.gemini/extensions/ext/hooks/hooks.json"))
            );
        }
        let mut diagnostics = Vec::new();
        let events = parse_extension_hooks(&extension(None), Path::new("/w"), &mut diagnostics);
        assert!(events.is_empty() && diagnostics.is_empty());
    }

    fn check_enabled(rules: &[&str], path: &str, expected: bool) {
        let rules: Vec<String> = rules.iter().map(|r| (*r).to_owned()).collect();
        assert_eq!(
            extension_enabled_for_path(&rules, path),
            expected,
            "rules {rules:?} at {path}"
        );
    }

    #[test]
    fn enablement_rules_last_match_wins() {
        check_enabled(&[], "/home/u/p", true);
        check_enabled(&["!/home/u/*"], "/home/u/p", false);
        check_enabled(&["!/home/u/*"], "/home/u", false);
        check_enabled(&["!/home/u/*"], "/home/user", true);
        check_enabled(&["!/home/u/*", "/home/u/p/*"], "/home/u/p/sub", true);
        check_enabled(&["/home/u/p/*", "!/home/u/*"], "/home/u/p/sub", false);
        // Without `*` only the directory itself matches.
        check_enabled(&["!/home/u/p/"], "/home/u/p", false);
        check_enabled(&["!/home/u/p/"], "/home/u/p/sub", true);
        // Regular-expression characters in paths are literal.
        check_enabled(&["!/a.b/*"], "/axb", true);
        check_enabled(&["!/a.b/*"], "/a.b/c", false);
        check_enabled(&["!/a(1)/*"], "/a(1)", false);
        // Case-sensitive; backslashes in the path are normalised.
        check_enabled(&["!/Home/*"], "/home", true);
        check_enabled(&["!/c/w/*"], "c\\w\\x", false);
    }
}
