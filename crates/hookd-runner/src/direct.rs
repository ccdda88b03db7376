//! Starting a one-shot hook's program without bash when bash would only have started it.
//!
//! Hooks are command lines run by `bash -c`, as Gemini CLI runs them. For most hooks the line
//! is one program with literal arguments (`python3 "/path/guard.py"`), and bash's part is to
//! start (about 1 ms here), find the program on `PATH` and replace itself with it. For such a
//! line the runner starts the program itself, with exactly what bash would have given it:
//!
//! - `argv`: the words as bash splits them ([`hookd_core::command::plain_command`] accepts
//!   only lines where that splitting is plain: no expansion, glob, redirection, list, escape or
//!   builtin), `argv[0]` as written;
//! - the program: the first executable of that name on the hook's `PATH` (or the path itself
//!   when it holds a `/`), in the hook's working directory;
//! - the environment: the hook's, with what bash changes before it runs a program: `PWD` (kept
//!   when it names the working directory, else the physical working directory), `SHLVL` (kept,
//!   `0` when unset), `_` (the program's path) and `OLDPWD` (dropped unless a directory); the
//!   same variables as under bash, though not in bash's order, which no program relies on.
//!
//! Anything bash would treat differently keeps bash: an environment with `BASH_ENV`,
//! `SHELLOPTS`, `BASHOPTS`, `POSIXLY_CORRECT`, exported functions or names that are not shell
//! identifiers, a `SHLVL` that is not a plain number below 999, no `PATH`, a program that is
//! not found, and any start that fails (not executable, no `#!` line, ...): bash then runs the
//! line and gives its own message and exit code.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use hookd_core::result::HookRun;
use tokio_util::sync::CancellationToken;

use crate::process::{ProcessLimits, ProcessSpec, run_started_by, spawn_process};
use crate::spawn::HookEnv;

/// [`run_process`](crate::process::run_process) for a one-shot hook: a `bash -c LINE` whose line only starts one program is
/// started without bash, as bash would have started it (this module); when that start
/// fails, bash runs the line as given, with its own message and exit code.
pub(crate) async fn run_one_shot(
    spec: ProcessSpec,
    limits: &ProcessLimits,
    cancel: &CancellationToken,
) -> HookRun {
    run_started_by(spec, limits, cancel, |spec| match direct_variant(spec) {
        Some(direct) => spawn_process(&direct).or_else(|_| spawn_process(spec)),
        None => spawn_process(spec),
    })
    .await
}

/// Environment variables whose presence changes what bash does before it runs a program.
const BASH_SETTINGS: [&str; 4] = ["BASH_ENV", "SHELLOPTS", "BASHOPTS", "POSIXLY_CORRECT"];

/// The spec that starts the program of `spec` (a `bash -c LINE` spec) without bash, when the
/// rules above allow it; `None` to run `spec` as it is.
pub(crate) fn direct_variant(spec: &ProcessSpec) -> Option<ProcessSpec> {
    let [flag, line] = spec.args.as_slice() else {
        return None;
    };
    if flag != "-c" || spec.program.file_name()? != "bash" {
        return None;
    }
    let words = hookd_core::command::plain_command(line)?;
    let env = direct_env(&spec.env, &words[0], &spec.cwd)?;
    let mut words = words.into_iter();
    Some(ProcessSpec {
        program: words.next()?.into(),
        args: words.collect(),
        cwd: spec.cwd.clone(),
        env: Arc::new(env),
        stdin: spec.stdin.clone(),
        timeout: spec.timeout,
        max_data_bytes: spec.max_data_bytes,
    })
}

/// Whether `name` is a shell identifier (bash passes other names on unpredictably).
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|first| first == b'_' || first.is_ascii_alphabetic())
        && bytes.all(|byte| byte == b'_' || byte.is_ascii_alphanumeric())
}

/// The environment bash would give `program` run from `cwd` with `env`; `None` where bash
/// would do something else first, or the program is not found.
fn direct_env(env: &HookEnv, program: &str, cwd: &Path) -> Option<HookEnv> {
    let vars = env.vars();
    for (index, (name, _)) in vars.iter().enumerate() {
        if !is_identifier(name)
            || BASH_SETTINGS.contains(&name.as_str())
            || vars[..index].iter().any(|(earlier, _)| earlier == name)
        {
            return None;
        }
    }
    let shell_level = match env.get("SHLVL") {
        None => "0".to_owned(),
        Some(level) if !level.is_empty() && level.bytes().all(|b| b.is_ascii_digit()) => {
            let level: u32 = level.parse().ok()?;
            if level > 998 {
                return None;
            }
            level.to_string()
        }
        Some(_) => return None,
    };
    let underscore = if program.contains('/') {
        program.to_owned()
    } else {
        let found = crate::process::find_program(Path::new(program), env.get("PATH"), cwd)?;
        found.to_str()?.to_owned()
    };
    let here = std::fs::metadata(cwd).ok()?;
    let pwd = match env.get("PWD") {
        Some(pwd)
            if pwd.starts_with('/')
                && std::fs::metadata(pwd)
                    .is_ok_and(|there| there.dev() == here.dev() && there.ino() == here.ino()) =>
        {
            pwd.to_owned()
        }
        _ => std::fs::canonicalize(cwd).ok()?.to_str()?.to_owned(),
    };
    let keep_oldpwd = env
        .get("OLDPWD")
        .is_some_and(|old| std::fs::metadata(old).is_ok_and(|meta| meta.is_dir()));
    let mut out: Vec<(String, String)> = Vec::with_capacity(vars.len() + 3);
    for (name, value) in vars {
        match name.as_str() {
            "PWD" | "SHLVL" | "_" => {}
            "OLDPWD" if !keep_oldpwd => {}
            _ => out.push((name.clone(), value.clone())),
        }
    }
    out.push(("PWD".to_owned(), pwd));
    out.push(("SHLVL".to_owned(), shell_level));
    out.push(("_".to_owned(), underscore));
    Some(HookEnv::new(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::path::PathBuf;
    use std::time::Duration;

    fn spec(line: &str, vars: &[(&str, &str)], cwd: &Path) -> ProcessSpec {
        ProcessSpec {
            program: PathBuf::from("bash"),
            args: vec!["-c".to_owned(), line.to_owned()],
            cwd: cwd.to_owned(),
            env: Arc::new(HookEnv::new(
                vars.iter()
                    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
                    .collect(),
            )),
            stdin: Bytes::new(),
            timeout: Duration::from_secs(5),
            max_data_bytes: None,
        }
    }

    #[test]
    fn which_lines_and_environments_keep_bash() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cwd = dir.path();
        let path = "/usr/bin:/bin";
        /// (line, environment, started directly)
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
        let cases: [Case; 14] = [
            ("env", &[("PATH", path)], true),
            ("env -0", &[("PATH", path), ("SHLVL", "3")], true),
            ("/usr/bin/env", &[], true),
            ("env", &[], false),
            ("no-such-program-anywhere", &[("PATH", path)], false),
            ("env $X", &[("PATH", path)], false),
            ("true", &[("PATH", path)], false),
            ("env", &[("PATH", path), ("BASH_ENV", "/x")], false),
            ("env", &[("PATH", path), ("SHELLOPTS", "xtrace")], false),
            (
                "env",
                &[("PATH", path), ("BASH_FUNC_env%%", "() { :; }")],
                false,
            ),
            ("env", &[("PATH", path), ("SHLVL", "999")], false),
            ("env", &[("PATH", path), ("SHLVL", "-1")], false),
            ("env", &[("PATH", path), ("A-B", "1")], false),
            ("env", &[("PATH", path), ("X", "1"), ("X", "2")], false),
        ];
        for (line, vars, direct) in cases {
            assert_eq!(
                direct_variant(&spec(line, vars, cwd)).is_some(),
                direct,
                "{line:?} {vars:?}"
            );
        }
        // Another shell than bash, or not `-c LINE`: as given.
        let mut other = spec("env", &[("PATH", path)], cwd);
        other.program = PathBuf::from("/bin/sh");
        assert!(direct_variant(&other).is_none());
    }

    #[test]
    fn the_environment_is_what_bash_would_pass_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cwd = std::fs::canonicalize(dir.path()).expect("canonical");
        let cwd_text = cwd.display().to_string();
        let env = |vars: &[(&str, &str)]| {
            let direct = direct_variant(&spec("env", vars, &cwd)).expect("direct");
            assert_eq!(direct.program, PathBuf::from("env"));
            direct.env.vars().to_vec()
        };
        let get = |vars: &[(String, String)], name: &str| {
            vars.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
        };
        let plain = env(&[("PATH", "/usr/bin:/bin"), ("A", "1")]);
        assert_eq!(get(&plain, "A").as_deref(), Some("1"));
        assert_eq!(get(&plain, "PWD"), Some(cwd_text.clone()));
        assert_eq!(get(&plain, "SHLVL").as_deref(), Some("0"));
        let underscore = get(&plain, "_").expect("_");
        assert!(underscore.ends_with("/env"), "{underscore}");
        // PWD naming the directory is kept as written; any other is replaced.
        let dotted = format!("{cwd_text}/.");
        let kept = env(&[("PATH", "/usr/bin:/bin"), ("PWD", &dotted)]);
        assert_eq!(get(&kept, "PWD"), Some(dotted));
        let replaced = env(&[("PATH", "/usr/bin:/bin"), ("PWD", "/")]);
        assert_eq!(get(&replaced, "PWD"), Some(cwd_text.clone()));
        // SHLVL as a number; OLDPWD only when it is a directory.
        let level = env(&[("PATH", "/usr/bin:/bin"), ("SHLVL", "007")]);
        assert_eq!(get(&level, "SHLVL").as_deref(), Some("7"));
        let old = env(&[("PATH", "/usr/bin:/bin"), ("OLDPWD", "/")]);
        assert_eq!(get(&old, "OLDPWD").as_deref(), Some("/"));
        let gone = env(&[("PATH", "/usr/bin:/bin"), ("OLDPWD", "/no/such/dir")]);
        assert_eq!(get(&gone, "OLDPWD"), None);
    }
}
