//! Splits agent text into plain text, `code spans` and ```fenced blocks```, so the
//! view can show code as `<code>`/`<pre>` while every piece stays a text node, and
//! shows the characters that would hide or reorder part of a command ([`visible`]).
//! Nothing here is ever parsed as HTML.

use std::borrow::Cow;

/// C0 and C1 controls (but newline and tab), DEL, and the bidi embedding, override,
/// isolate and mark characters: what a terminal would obey, or what reorders the text
/// around it. The terminal shows these escaped in all agent text.
pub fn is_control_or_bidi(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// [`is_control_or_bidi`], and the characters that draw as nothing: zero-width spaces
/// and joiners, word joiner and invisible operators, soft hyphen, line and paragraph
/// separators, fillers, variation selectors, tags and the byte order mark.
pub fn hides(c: char) -> bool {
    is_control_or_bidi(c)
        || matches!(
            c,
            '\u{00AD}'
                | '\u{034F}'
                | '\u{115F}'
                | '\u{1160}'
                | '\u{17B4}'
                | '\u{17B5}'
                | '\u{180B}'..='\u{180F}'
                | '\u{200B}'..='\u{200D}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{2060}'..='\u{2065}'
                | '\u{206A}'..='\u{206F}'
                | '\u{3164}'
                | '\u{FE00}'..='\u{FE0F}'
                | '\u{FEFF}'
                | '\u{FFA0}'
                | '\u{FFF9}'..='\u{FFFB}'
                | '\u{1D173}'..='\u{1D17A}'
                | '\u{E0000}'..='\u{E0FFF}'
        )
}

/// `text` with every character that [`hides`] shown as an escape (`\u{202e}`), so a
/// command, a diff or a path reads as what will run or change, on every front end.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(hides) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().map(|c| if hides(c) { format!("\\u{{{:x}}}", c as u32) } else { c.to_string() }).collect())
}

/// One piece of a question's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    Text(String),
    /// An inline `code span`.
    Code(String),
    /// A fenced block; the info string after the opening fence is dropped.
    Block(String),
}

/// The pieces of `text`, in order. An unclosed fence runs to the end; an unmatched
/// backtick stays plain text.
pub fn segments(text: &str) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("```") {
        inline(&rest[..start], &mut out);
        let after = &rest[start + 3..];
        // The info string ("rust") runs to the end of the fence's line.
        let body_start = after.find('\n').map_or(after.len(), |n| n + 1);
        let body = &after[body_start..];
        match body.find("```") {
            Some(end) => {
                out.push(Segment::Block(body[..end].trim_end_matches('\n').to_owned()));
                rest = body[end + 3..].strip_prefix('\n').unwrap_or(&body[end + 3..]);
            }
            None => {
                out.push(Segment::Block(body.trim_end_matches('\n').to_owned()));
                rest = "";
            }
        }
    }
    inline(rest, &mut out);
    out
}

/// A one-line summary for lists: the first line of prose, code spans unquoted,
/// fenced blocks dropped.
pub fn summary(text: &str) -> String {
    let mut prose = String::new();
    for segment in segments(text) {
        match segment {
            Segment::Text(t) | Segment::Code(t) => prose.push_str(&t),
            Segment::Block(_) => prose.push('\n'),
        }
    }
    prose.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_else(|| text.trim()).to_owned()
}

fn inline(text: &str, out: &mut Vec<Segment>) {
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let Some(len) = rest[open + 1..].find('`') else { break };
        push_text(&rest[..open], out);
        let code = &rest[open + 1..open + 1 + len];
        if code.is_empty() {
            push_text("``", out);
        } else {
            out.push(Segment::Code(code.to_owned()));
        }
        rest = &rest[open + 2 + len..];
    }
    push_text(rest, out);
}

fn push_text(text: &str, out: &mut Vec<Segment>) {
    if text.is_empty() {
        return;
    }
    if let Some(Segment::Text(prev)) = out.last_mut() {
        prev.push_str(text);
    } else {
        out.push(Segment::Text(text.to_owned()));
    }
}

/// "12 s", "3 min", "2 h 5 min", "3 d": how long something has waited
/// (or is still to wait: the reminders' countdown, [`crate::remind`]).
pub fn waited(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=59 => format!("{s} s"),
        60..=3599 => format!("{} min", s / 60),
        3600..=86_399 => format!("{} h {} min", s / 3600, (s % 3600) / 60),
        _ => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Segment::*;

    fn t(s: &str) -> Segment {
        Text(s.into())
    }

    #[test]
    fn code_spans_and_fenced_blocks() {
        assert_eq!(segments("plain"), [t("plain")]);
        assert_eq!(segments("Run `cargo test` now"), [t("Run "), Code("cargo test".into()), t(" now")]);
        assert_eq!(segments("See:\n```rust\nfn main() {}\n```\nok"), [t("See:\n"), Block("fn main() {}".into()), t("ok")]);
        assert_eq!(segments("```\nunclosed\n"), [Block("unclosed".into())]);
        assert_eq!(segments("a ` b"), [t("a ` b")], "an unmatched backtick stays text");
        assert_eq!(segments("a `` b"), [t("a `` b")]);
        assert_eq!(segments(""), []);
        assert_eq!(segments("<b>x</b> `<i>`"), [t("<b>x</b> "), Code("<i>".into())], "markup is text");
    }

    #[test]
    fn summaries_are_the_first_line_of_prose() {
        assert_eq!(summary("Which `db`?\n```sql\nselect 1\n```"), "Which db?");
        assert_eq!(summary("```\ncode only\n```\n\nThen this"), "Then this");
        assert_eq!(summary("  \n second line "), "second line");
    }
}
