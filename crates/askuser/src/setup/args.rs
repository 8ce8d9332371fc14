//! An entry's arguments: the runner's part (`npx -y askuser`) and askuser's own, a flag's
//! value, the user's own flags kept when setup updates its entry, and a command line shown
//! as a shell would take it.

use super::*;

/// An entry's args split into a package runner's words and askuser's own, from `mcp` on:
/// `["-y", "askuser", "mcp", …]` (npx) or `["--from", "askuser-mcp", "askuser", "mcp", …]`
/// (uvx) → the words before `mcp`, and `["mcp", …]`. Args that name no askuser package
/// before `mcp` are all askuser's own.
pub fn split_runner(args: &[String]) -> (&[String], &[String]) {
    // `askuser`, `askuser@0.2.0`, `askuser-mcp==0.2.0`: a package name with or without a version.
    let names_askuser = |w: &String| {
        let name = w.split(['@', '=']).next().unwrap_or("");
        !w.starts_with('-') && (name == NPM_PACKAGE || name == PYPI_PACKAGE)
    };
    match args.iter().position(|a| a == "mcp") {
        Some(i) if i > 0 && args[..i].iter().any(names_askuser) => args.split_at(i),
        _ => (&[], args),
    }
}

/// Where `--flag VALUE` or `--flag=VALUE` is among an `askuser mcp` command's args (after
/// the `mcp`, and the package runner's words before it), and how many words it takes.
pub(super) fn find_flag(args: &[String], flag: &str) -> Option<(usize, usize)> {
    let joined = format!("{flag}=");
    let start = split_runner(args).0.len() + 1;
    let i = args.iter().skip(start).position(|a| a == flag || a.starts_with(&joined))? + start;
    Some((i, if args[i] == flag { 2 } else { 1 }))
}

/// The value of `--flag` among an `askuser mcp` command's args.
pub fn arg_value<'a>(args: &'a [String], flag: &str) -> Option<&'a str> {
    let (i, words) = find_flag(args, flag)?;
    if words == 2 {
        args.get(i + 1).map(String::as_str)
    } else {
        args[i].split_once('=').map(|(_, v)| v)
    }
}

/// `askuser mcp` flags setup writes that take no value.
pub(super) const BARE_FLAGS: [&str; 1] = ["--approvals"];

/// The args for an entry that had `old`: `new` (setup's `mcp` and its own flags, each
/// `--flag VALUE`, after the package runner's words if any) set in place, every other
/// argument of the user's kept where it was; the runner's words are `new`'s. An entry
/// that does not run `askuser mcp` gets `new` whole.
pub(super) fn merge_args(old: &[String], new: &[String]) -> Vec<String> {
    let ((_, old), (runner, new)) = (split_runner(old), split_runner(new));
    let mut args = runner.to_vec();
    args.extend(merge_own(old, new));
    args
}

/// [`merge_args`] for askuser's own args, each starting with `mcp`.
pub(super) fn merge_own(old: &[String], new: &[String]) -> Vec<String> {
    if old.first().map(String::as_str) != Some("mcp") || new.first().map(String::as_str) != Some("mcp") {
        return new.to_vec();
    }
    let mut args = old.to_vec();
    let (bare, pairs): (Vec<&String>, Vec<&String>) = {
        let rest = &new[1..];
        let bare: Vec<&String> = rest.iter().filter(|a| BARE_FLAGS.contains(&a.as_str())).collect();
        (bare, rest.iter().filter(|a| !BARE_FLAGS.contains(&a.as_str())).collect())
    };
    for flag in bare {
        if !args.contains(flag) {
            args.push(flag.clone());
        }
    }
    let pairs: Vec<String> = pairs.into_iter().cloned().collect();
    for pair in pairs.chunks(2) {
        match find_flag(&args, &pair[0]) {
            Some((i, words)) => {
                let end = (i + words).min(args.len());
                args.splice(i..end, pair.iter().cloned());
            }
            None => args.extend(pair.iter().cloned()),
        }
    }
    args
}

/// A command line as a shell would read it back: words with spaces or quotes single-quoted.
pub fn shell_words<'a>(words: impl IntoIterator<Item = &'a String>) -> String {
    let quote = |w: &str| {
        if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c)) {
            w.to_owned()
        } else {
            format!("'{}'", w.replace('\'', "'\\''"))
        }
    };
    words.into_iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}
