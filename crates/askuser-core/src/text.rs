//! Splits agent text into plain text, `code spans` and ```fenced blocks```, so the
//! view can show code as `<code>`/`<pre>` while every piece stays a text node.
//! Nothing here is ever parsed as HTML.

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
