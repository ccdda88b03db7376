//! The trust a hook carries: the key its project-hook trust is recorded under and whether
//! it is trusted ([`HookTrust`]). Computing keys and keeping the store is [`crate::trust`]'s.

use serde_json::{Map, Value};

/// One script file of a trust key: where it is and what it contained.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ScriptDigest {
    /// The file, relative to the project directory, with `/` separators.
    pub path: String,
    /// The SHA-256 of its contents, as 64 lower-case hex digits.
    pub sha256: String,
}

/// What trusting a project hook means: this name, this command line, these other settings
/// (its `env`, ...), these file contents, and these parts that cannot be verified.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TrustKey {
    /// The hook's `name` (`""` when it has none), as in Gemini CLI's fingerprint.
    pub name: String,
    /// The hook's `command` as loaded (`""` when it has none).
    pub command: String,
    /// Every other key of the hook that changes what runs, as canonical JSON
    /// ([`crate::trust::covered_settings`]); `""` when there is none.
    pub settings: String,
    /// The project files the command runs or may load, each once, with their contents.
    pub scripts: Vec<ScriptDigest>,
    /// What the command may run that cannot be verified ([`crate::trust::Gap::text`]). A key with any is
    /// only trusted when the user said so explicitly (`hookctl trust --anyway`).
    pub uncovered: Vec<String>,
}

impl TrustKey {
    /// Gemini CLI's part of the key, `"<name>:<command>"`.
    pub fn name_command(&self) -> String {
        format!("{}:{}", self.name, self.command)
    }

    /// Whether `other` is the same hook (name and command) with other script contents.
    pub(crate) fn same_hook(&self, other: &TrustKey) -> bool {
        self.name == other.name && self.command == other.command
    }

    /// The settings as a JSON value (`null` when there are none).
    pub fn settings_json(&self) -> Value {
        if self.settings.is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.settings).unwrap_or(Value::Null)
    }

    /// The key as one JSON object of the store and the wire:
    /// `{"name", "command", "settings"?, "scripts": [{"path", "sha256"}], "uncovered"?}`.
    pub fn to_json(&self) -> Value {
        let scripts: Vec<Value> = self
            .scripts
            .iter()
            .map(|script| {
                let mut object = Map::new();
                object.insert("path".to_owned(), Value::from(script.path.clone()));
                object.insert("sha256".to_owned(), Value::from(script.sha256.clone()));
                Value::Object(object)
            })
            .collect();
        let mut object = Map::new();
        object.insert("name".to_owned(), Value::from(self.name.clone()));
        object.insert("command".to_owned(), Value::from(self.command.clone()));
        if !self.settings.is_empty() {
            object.insert("settings".to_owned(), self.settings_json());
        }
        object.insert("scripts".to_owned(), Value::Array(scripts));
        if !self.uncovered.is_empty() {
            object.insert(
                "uncovered".to_owned(),
                Value::Array(self.uncovered.iter().cloned().map(Value::from).collect()),
            );
        }
        Value::Object(object)
    }

    /// Reads a key written by [`TrustKey::to_json`]; `None` when it has another shape.
    pub fn from_json(value: &Value) -> Option<TrustKey> {
        let object = value.as_object()?;
        let text = |object: &Map<String, Value>, key: &str| -> Option<String> {
            object.get(key)?.as_str().map(str::to_owned)
        };
        let scripts = match object.get("scripts") {
            None => Vec::new(),
            Some(Value::Array(scripts)) => scripts
                .iter()
                .map(|script| {
                    let script = script.as_object()?;
                    let sha256 = text(script, "sha256")?;
                    is_sha256_hex(&sha256).then_some(ScriptDigest {
                        path: text(script, "path")?,
                        sha256,
                    })
                })
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        let settings = match object.get("settings") {
            None | Some(Value::Null) => String::new(),
            Some(value @ Value::Object(map)) if !map.is_empty() => canonical_json(value),
            Some(Value::Object(_)) => String::new(),
            Some(_) => return None,
        };
        let uncovered = match object.get("uncovered") {
            None => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?,
            Some(_) => return None,
        };
        Some(TrustKey {
            name: text(object, "name")?,
            command: text(object, "command")?,
            settings,
            scripts,
            uncovered,
        })
    }
}

/// Whether `text` is a SHA-256 as [`crate::trust::sha256_hex`] writes it.
fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Why a project hook is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustGap {
    /// Nothing with its name and command was ever trusted for the project.
    New,
    /// Its name and command were trusted, but with other script contents.
    ScriptChanged {
        /// The first file whose contents differ ([`ScriptDigest::path`]), named in the
        /// refusal as the run-time check names it ([`crate::trust::changed_script`]), so the
        /// message does not depend on whether the watcher rebuilt the registry first.
        script: String,
    },
    /// Its name and command were trusted, but with other settings (its `env`, ...).
    SettingsChanged,
    /// Some of what it runs cannot be verified ([`TrustKey::uncovered`]), and the user has
    /// not trusted it anyway.
    Uncovered,
}

/// Whether a registered hook needs trust, and whether it has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookTrust {
    /// Not a project hook that runs a command: user, system, system-defaults and extension
    /// hooks are the user's own choice and never gated.
    NotRequired,
    /// A project hook whose key is in the trust store.
    Trusted {
        /// Its key, with the script digests it was trusted with.
        key: TrustKey,
    },
    /// A project hook whose key is not in the trust store.
    Untrusted {
        /// Its key as it is now.
        key: TrustKey,
        /// Why it is not trusted.
        gap: TrustGap,
    },
}

impl HookTrust {
    /// Whether the hook is a project hook that is not trusted.
    pub fn is_untrusted(&self) -> bool {
        matches!(self, HookTrust::Untrusted { .. })
    }

    /// The key, for project hooks that need trust.
    pub fn key(&self) -> Option<&TrustKey> {
        match self {
            HookTrust::NotRequired => None,
            HookTrust::Trusted { key } | HookTrust::Untrusted { key, .. } => Some(key),
        }
    }
}

/// `value` as compact JSON with object keys sorted at every level.
pub(crate) fn canonical_json(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .filter_map(|key| Some((key.clone(), sorted(map.get(key)?))))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}
