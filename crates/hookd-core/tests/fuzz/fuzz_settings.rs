//! Property tests standing in for fuzzing the settings parser and validator: every settings
//! file the daemon reads is written by someone else (a teammate, a cloned repository, an
//! extension), and a bad one must cost a diagnostic, never the daemon.
//!
//! cargo-fuzz needs a nightly toolchain, which this project's machines cannot install, so the
//! fuzz targets are `proptest` properties. `cargo test` runs each with proptest's default of
//! 256 cases; a longer run is
//! `PROPTEST_CASES=100000 cargo test --release -p hookd-core --test fuzz_settings`
//! (docs/reliability.md, "Fuzzing").
//!
//! What must hold for any text, well-formed or not:
//!
//! - `parse_settings` never panics;
//! - every diagnostic names the file (its `path` and its display), has a message, a line and a
//!   column only together and within the text, and a key under `hooks`, `hooksConfig` or
//!   `security` when it has one;
//! - a file is either dropped with exactly one error, or kept with no error at all;
//! - every hook kept is valid: a command hook has a command, a runtime hook a name;
//! - a registry built from such files (as settings layers or an extension's `hooks.json`)
//!   never panics while being built or planned, plans only enabled hooks of the event fired,
//!   and never plans two copies of one `name:command`.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use hookd_core::extension::ExtensionInput;
use hookd_core::registry::{LayerText, Registry, RegistryInput};
use hookd_core::settings::{Severity, parse_settings};
use hookd_core::{HookEventName, HookType, Source};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// The file every parsed text claims to come from.
const PATH: &str = "/home/fuzz/project/.gemini/settings.json";

/// The environment `$NAME` and `${NAME}` expand from.
fn env(name: &str) -> Option<String> {
    match name {
        "HOME" => Some("/home/fuzz".to_owned()),
        "EMPTY" => Some(String::new()),
        "BRACES" => Some("${HOME}".to_owned()),
        _ => None,
    }
}

/// Parses `text` as the settings file of `source` and checks every property of the answer.
fn check_settings(source: Source, text: &str) {
    let path = Path::new(PATH);
    let parsed = parse_settings(source, path, text, &env);
    let line_count = text.split('\n').count();
    for diagnostic in &parsed.diagnostics {
        assert_eq!(diagnostic.path.as_deref(), Some(path), "{diagnostic:?}");
        assert!(
            diagnostic.to_string().contains(PATH),
            "{diagnostic} does not name the file"
        );
        assert!(!diagnostic.message.is_empty());
        assert_eq!(diagnostic.line.is_some(), diagnostic.column.is_some());
        if let (Some(line), Some(column)) = (diagnostic.line, diagnostic.column) {
            assert!(
                line >= 1 && line <= line_count,
                "line {line} of {line_count}"
            );
            // Columns are 1-based bytes, except that serde_json reports an end of input right
            // after a newline (or in an empty file) as column 0.
            let line_len = text.split('\n').nth(line - 1).map_or(0, str::len);
            assert!(
                column <= line_len + 1,
                "column {column} of {line_len} bytes"
            );
        }
        if let Some(key) = &diagnostic.key {
            assert!(
                ["hooks", "hooksConfig", "security"]
                    .iter()
                    .any(|root| key.starts_with(root)),
                "key {key}"
            );
        }
    }
    let errors = parsed
        .diagnostics
        .iter()
        .filter(|diagnostic| diagnostic.severity == Severity::Error)
        .count();
    match &parsed.layer {
        None => assert_eq!(errors, 1, "a dropped file has one error: {parsed:?}"),
        Some(layer) => {
            assert_eq!(errors, 0, "a kept file has no error: {parsed:?}");
            assert_eq!((layer.source, layer.path.as_path()), (source, path));
            for definition in layer.hooks.iter().flat_map(|event| &event.definitions) {
                for hook in &definition.hooks {
                    match hook.hook_type {
                        HookType::Command => {
                            assert!(hook.command.as_deref().is_some_and(|c| !c.is_empty()))
                        }
                        HookType::Runtime => {
                            assert!(hook.name.as_deref().is_some_and(|n| !n.is_empty()))
                        }
                        // A kept policy hook names its file; its command describes it.
                        HookType::Policy => {
                            assert!(hook.policy_files().is_some_and(|(p, _)| !p.is_empty()));
                            assert!(hook.command.as_deref().is_some_and(|c| !c.is_empty()))
                        }
                        HookType::Plugin | HookType::Builtin => {}
                    }
                }
            }
        }
    }
}

/// Builds a registry from `project` and `user` settings texts and an extension whose
/// `hooks.json` is `extension`, plans every event for every tool name, and checks the plans.
fn check_registry(project: &str, user: &str, extension: &str, trusted: bool) {
    let input = RegistryInput {
        layers: vec![
            LayerText {
                source: Source::Project,
                file: hookd_core::LayerFile::Gemini,
                path: PathBuf::from(PATH),
                text: project.to_owned(),
            },
            LayerText {
                source: Source::User,
                file: hookd_core::LayerFile::Gemini,
                path: PathBuf::from("/home/fuzz/.gemini/settings.json"),
                text: user.to_owned(),
            },
        ],
        extensions: vec![ExtensionInput {
            name: "fuzz-ext".to_owned(),
            path: PathBuf::from("/home/fuzz/.gemini/extensions/fuzz-ext"),
            hooks_file: PathBuf::from("/home/fuzz/.gemini/extensions/fuzz-ext/hooks/hooks.json"),
            hooks_text: Some(extension.to_owned()),
            settings: Vec::new(),
            setting_values: vec![("API_KEY".to_owned(), "k".to_owned())],
            workspace_setting_values: Vec::new(),
            active: true,
        }],
        workspace_path: PathBuf::from("/home/fuzz/project"),
        folder_trusted: trusted,
        env: HashMap::from([("HOME".to_owned(), "/home/fuzz".to_owned())]),
        ..RegistryInput::default()
    };
    let registry = Registry::build(&input);
    for diagnostic in registry.diagnostics() {
        assert!(!diagnostic.message.is_empty());
    }
    for event in HookEventName::ALL {
        for tool in TOOL_NAMES {
            let mut fields = Map::new();
            for field in ["tool_name", "source", "reason", "trigger"] {
                fields.insert(field.to_owned(), Value::from(tool));
            }
            let Some(plan) = registry.plan_for_input(event, &fields) else {
                continue;
            };
            assert!(!plan.hooks.is_empty());
            let mut seen = HashSet::new();
            for hook in &plan.hooks {
                assert_eq!(hook.event, event);
                assert!(hook.enabled);
                assert!(seen.insert(hook.config.dedup_key()), "planned twice");
            }
        }
    }
}

/// Tool names and triggers the matchers are tried against.
const TOOL_NAMES: [&str; 6] = [
    "run_shell_command",
    "write_file",
    "mcp__server__tool",
    "",
    "startup",
    "ünïcode",
];

/// Matchers: exact names, regular expressions (valid and not), and plain junk.
fn matcher() -> impl Strategy<Value = Value> {
    prop_oneof![
        prop::sample::select(vec![
            "run_shell_command",
            "write_file|run_shell_command",
            ".*",
            "*",
            "",
            "(",
            "[",
            "\\",
            "(?<name>x)",
            "\\p{L}+",
            "a{2,1}",
            "(?=x)",
            "mcp__.*__tool",
            "startup",
        ])
        .prop_map(Value::from),
        "[a-z_.*|()\\[\\]\\\\?+{},0-9^$]{0,16}".prop_map(Value::from),
        any_json(),
    ]
}

/// Any JSON value, small, with strings that expand (`$HOME`, `${BRACES}`) likely.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        prop::sample::select(vec![
            "command",
            "plugin",
            "runtime",
            "allow",
            "deny",
            "ask",
            "$HOME",
            "${HOME}/x",
            "${BRACES}",
            "$UNSET",
            "${",
            "$",
            "",
            "BeforeTool",
        ])
        .prop_map(Value::from),
        ".{0,10}".prop_map(Value::from),
    ];
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            prop::collection::vec(("[a-z_]{0,6}", inner), 0..3)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

/// Sometimes the value, sometimes any JSON value, sometimes nothing (the key is left out).
fn mostly(value: impl Strategy<Value = Value>) -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        4 => value.prop_map(Some),
        1 => any_json().prop_map(Some),
        1 => Just(None),
    ]
}

/// Builds an object from the keys whose value is present.
fn object(entries: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        entries
            .into_iter()
            .filter_map(|(key, value)| Some((key.to_owned(), value?)))
            .collect(),
    )
}

/// One hook config entry, mostly well-formed.
fn hook_entry() -> impl Strategy<Value = Value> {
    (
        mostly(
            prop::sample::select(vec!["command", "plugin", "runtime", "Command"])
                .prop_map(Value::from),
        ),
        mostly(
            prop::sample::select(vec!["echo hi", "$HOME/hook.sh", "", "./x ${HOME}"])
                .prop_map(Value::from),
        ),
        mostly("[a-z-]{0,8}".prop_map(Value::from)),
        mostly(prop_oneof![
            any::<u32>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>()
                .prop_map(|x| serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)),
        ]),
        mostly(
            prop::collection::vec(("[A-Z_]{1,6}", any_json()), 0..3)
                .prop_map(|vars| Value::Object(vars.into_iter().collect())),
        ),
        mostly(
            prop::sample::select(vec!["allow", "deny", "ask", "DENY", ""]).prop_map(Value::from),
        ),
        mostly(".{0,8}".prop_map(Value::from)),
    )
        .prop_map(
            |(kind, command, name, timeout, env, on_failure, description)| {
                object(vec![
                    ("type", kind),
                    ("command", command),
                    ("name", name),
                    ("timeout", timeout),
                    ("env", env),
                    ("on_failure", on_failure),
                    ("description", description),
                ])
            },
        )
}

/// One hook definition (matcher, sequential, hooks), mostly well-formed.
fn definition() -> impl Strategy<Value = Value> {
    (
        mostly(matcher()),
        mostly(any::<bool>().prop_map(Value::Bool)),
        mostly(prop::collection::vec(hook_entry(), 0..3).prop_map(Value::Array)),
    )
        .prop_map(|(matcher, sequential, hooks)| {
            object(vec![
                ("matcher", matcher),
                ("sequential", sequential),
                ("hooks", hooks),
            ])
        })
}

/// The keys a `hooks` object may have: every event, legacy keys, and unknown names.
fn event_key() -> impl Strategy<Value = String> {
    let mut keys: Vec<String> = HookEventName::ALL
        .iter()
        .map(|event| event.as_str().to_owned())
        .collect();
    keys.extend(
        [
            "enabled",
            "disabled",
            "notifications",
            "beforetool",
            "Unknown",
            "",
        ]
        .map(String::from),
    );
    prop::sample::select(keys)
}

/// A whole settings file as a JSON value, mostly well-formed.
fn settings_value() -> impl Strategy<Value = Value> {
    let hooks = prop::collection::vec(
        (
            event_key(),
            prop_oneof![
                4 => prop::collection::vec(definition(), 0..3).prop_map(Value::Array),
                1 => definition(),
                1 => any_json(),
            ],
        ),
        0..4,
    )
    .prop_map(|events| Value::Object(events.into_iter().collect()));
    let hooks_config = (
        mostly(any::<bool>().prop_map(Value::Bool)),
        mostly(
            prop::collection::vec(
                prop_oneof!["[a-z-]{0,8}".prop_map(Value::from), any_json()],
                0..3,
            )
            .prop_map(Value::Array),
        ),
        mostly(any::<bool>().prop_map(Value::Bool)),
    )
        .prop_map(|(enabled, disabled, notifications)| {
            object(vec![
                ("enabled", enabled),
                ("disabled", disabled),
                ("notifications", notifications),
            ])
        });
    let trust = mostly(any::<bool>().prop_map(Value::Bool)).prop_map(|enabled| {
        object(vec![(
            "folderTrust",
            Some(object(vec![("enabled", enabled)])),
        )])
    });
    (
        mostly(hooks),
        mostly(hooks_config),
        mostly(trust),
        mostly(any_json()),
    )
        .prop_map(|(hooks, hooks_config, security, other)| {
            object(vec![
                ("hooks", hooks),
                ("hooksConfig", hooks_config),
                ("security", security),
                ("general", other),
            ])
        })
}

/// How a settings value is written down: compact, pretty, or as JSONC with comments and
/// trailing commas the way people write settings files.
fn render(value: &Value, style: u8) -> String {
    match style % 3 {
        0 => value.to_string(),
        1 => serde_json::to_string_pretty(value).unwrap_or_default(),
        _ => {
            let pretty = serde_json::to_string_pretty(value).unwrap_or_default();
            let mut text = String::from("// settings\n");
            for line in pretty.lines() {
                text.push_str(line);
                if line.ends_with('"') || line.ends_with('}') || line.ends_with(']') {
                    text.push_str(" /* c */");
                }
                text.push('\n');
            }
            text.replace("}\n", "},\n")
                .trim_end_matches([',', '\n'])
                .to_owned()
        }
    }
}

/// Text damaged the ways an editor or a bad merge damages it: bytes replaced, a piece cut out,
/// the end lost.
fn damage(text: &str, edits: &[(usize, char)], cut: usize) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for &(at, replacement) in edits {
        if chars.is_empty() {
            break;
        }
        let at = at % chars.len();
        chars[at] = replacement;
    }
    chars.truncate(cut % (chars.len() + 1));
    chars.into_iter().collect()
}

/// A source for a settings file (extensions are not settings layers).
fn settings_source() -> impl Strategy<Value = Source> {
    prop::sample::select(vec![
        Source::Project,
        Source::User,
        Source::System,
        Source::SystemDefaults,
    ])
}

proptest! {
    #[test]
    fn any_text_parses_to_diagnostics_naming_the_file(source in settings_source(), text in ".{0,200}") {
        check_settings(source, &text);
    }

    #[test]
    fn any_json_value_parses_to_diagnostics_naming_the_file(
        source in settings_source(),
        value in any_json(),
        style in any::<u8>(),
    ) {
        check_settings(source, &render(&value, style));
    }

    #[test]
    fn settings_shaped_files_parse_to_valid_hooks_or_diagnostics(
        source in settings_source(),
        value in settings_value(),
        style in any::<u8>(),
    ) {
        check_settings(source, &render(&value, style));
    }

    #[test]
    fn damaged_settings_files_parse_to_diagnostics_naming_the_file(
        source in settings_source(),
        value in settings_value(),
        style in any::<u8>(),
        edits in prop::collection::vec((any::<usize>(), prop::sample::select(vec!['{', '}', '[', ']', '"', ',', ':', '/', '*', '\\', '\n', 'x', '\u{feff}'])), 0..3),
        cut in any::<usize>(),
    ) {
        let text = damage(&render(&value, style), &edits, cut);
        check_settings(source, &text);
    }

    #[test]
    fn registries_built_from_any_settings_plan_only_what_they_should(
        project in settings_value(),
        user in settings_value(),
        extension in settings_value(),
        styles in any::<(u8, u8)>(),
        trusted in any::<bool>(),
    ) {
        check_registry(
            &render(&project, styles.0),
            &render(&user, styles.1),
            &extension.to_string(),
            trusted,
        );
    }

    #[test]
    fn registries_survive_damaged_files(
        project in ".{0,120}",
        extension in settings_value(),
        cut in any::<usize>(),
    ) {
        let extension = damage(&extension.to_string(), &[], cut);
        check_registry(&project, &project, &extension, true);
    }
}

/// Hand-picked files at the edges: a byte-order mark, a comment-only file, an unterminated
/// comment, every top-level JSON kind, a hook whose matcher is an invalid regular expression,
/// a huge timeout and a `hooks` array.
#[test]
fn fixed_cases() {
    let cases = [
        "\u{feff}{}".to_owned(),
        "// nothing\n".to_owned(),
        "{ /* open".to_owned(),
        "null".to_owned(),
        "[]".to_owned(),
        "\"text\"".to_owned(),
        "1e999".to_owned(),
        json!({"hooks": {"BeforeTool": [{"matcher": "(", "hooks": [{"type": "command", "command": "x"}]}]}})
            .to_string(),
        json!({"hooks": {"BeforeTool": [{"hooks": [{"type": "command", "command": "x", "timeout": 1e300}]}]}})
            .to_string(),
        json!({"hooks": []}).to_string(),
    ];
    for text in &cases {
        for source in [Source::Project, Source::System] {
            check_settings(source, text);
        }
        check_registry(text, "{}", text, true);
    }
}
