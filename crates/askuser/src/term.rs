//! Printing agent text on a terminal safely. A question, label or name comes from an
//! agent; printed raw, control characters could move the cursor and erase lines, hide
//! text (SGR 8), set the window title (OSC 0) or write the clipboard (OSC 52), and bidi
//! overrides could reorder what the person reads. Everything the command line prints
//! goes through here: such characters are shown as visible escapes instead.

use std::borrow::Cow;

/// C0 and C1 controls (but newline and tab), DEL, and the bidi embedding, override and
/// isolate marks (the core's set, which approvals' commands also show escaped).
fn is_dangerous(c: char) -> bool {
    askuser_core::text::is_control_or_bidi(c)
}

fn escape_with(text: &str, escape: fn(char) -> String) -> Cow<'_, str> {
    if !text.chars().any(is_dangerous) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if is_dangerous(c) { escape(c) } else { c.to_string() }).collect())
}

/// Text with every dangerous character shown as `\u{1b}`.
pub fn safe(text: &str) -> Cow<'_, str> {
    escape_with(text, |c| format!("\\u{{{:x}}}", c as u32))
}

/// JSON text with dangerous characters as JSON escapes (`\u202e`): still valid JSON
/// with the same value (serde_json escapes C0 itself, not C1, DEL or bidi marks).
pub fn safe_json(json: &str) -> Cow<'_, str> {
    escape_with(json, |c| format!("\\u{:04x}", c as u32))
}

/// `println!` for text that may hold agent text.
macro_rules! out {
    ($($arg:tt)*) => { println!("{}", $crate::term::safe(&format!($($arg)*))) };
}

/// `eprintln!` for text that may hold agent text.
macro_rules! err {
    ($($arg:tt)*) => { eprintln!("{}", $crate::term::safe(&format!($($arg)*))) };
}

pub(crate) use {err, out};

/// `text` as a QR code in text, two rows of modules per line (Unicode half blocks),
/// with a quiet zone. Drawn for a dark terminal (light modules are the blocks); phone
/// cameras read it inverted too.
pub fn qr(text: &str) -> Option<Vec<String>> {
    let code = qrcodegen::QrCode::encode_text(text, qrcodegen::QrCodeEcc::Medium).ok()?;
    let (size, quiet) = (code.size(), 2);
    // Outside the code, get_module is false (light): the quiet zone comes free.
    let dark = |x, y| code.get_module(x, y);
    let lines = (-quiet..size + quiet)
        .step_by(2)
        .map(|y| {
            (-quiet..size + quiet)
                .map(|x| match (dark(x, y), dark(x, y + 1)) {
                    (false, false) => '█',
                    (false, true) => '▀',
                    (true, false) => '▄',
                    (true, true) => ' ',
                })
                .collect()
        })
        .collect();
    Some(lines)
}

/// Text on one line: its lines joined with spaces.
pub fn one_line(text: &str) -> String {
    text.lines().collect::<Vec<_>>().join(" ")
}

/// Says what went wrong on stderr (as `askuser: …`) and fails.
pub fn fail(message: impl std::fmt::Display) -> std::process::ExitCode {
    err!("askuser: {message}");
    std::process::ExitCode::FAILURE
}

/// Prints JSON on stdout, with dangerous characters as JSON escapes.
pub fn print_json(value: &impl serde::Serialize) {
    println!("{}", crate::term::safe_json(&serde_json::to_string_pretty(value).expect("JSON values always serialize")));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_rewrite_hide_title_clipboard_and_bidi_tricks() {
        let attacks = [
            ("Yes\x1b[8m (prod!)", "Yes\\u{1b}[8m (prod!)"),
            ("ok\x1b[1A\x1b[2Kdone", "ok\\u{1b}[1A\\u{1b}[2Kdone"),
            ("\x1b]0;pwned\x07", "\\u{1b}]0;pwned\\u{7}"),
            ("\x1b]52;c;cm0gLXJmIH4=\x07", "\\u{1b}]52;c;cm0gLXJmIH4=\\u{7}"),
            ("\u{9b}31m", "\\u{9b}31m"),
            ("evil\u{202e}txt.exe", "evil\\u{202e}txt.exe"),
            ("a\rb", "a\\u{d}b"),
        ];
        for (text, shown) in attacks {
            assert_eq!(safe(text), shown);
        }
        assert!(matches!(safe("Which database?\n\tPostgreSQL — ✓ 数据库"), Cow::Borrowed(_)), "ordinary text is untouched");
    }

    #[test]
    fn json_stays_valid_with_the_same_value() {
        let value = serde_json::json!({"q": "x\u{202e}y\u{9b}z\u{7f}"});
        let text = serde_json::to_string(&value).unwrap();
        let shown = safe_json(&text);
        assert!(!shown.chars().any(is_dangerous), "{shown}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&shown).unwrap(), value);
    }
}
