//! Fitting text to the terminal's width: wrapped at spaces (a word longer than a line
//! is broken where it must), or cut with "…" where a row has to stay one line. Widths
//! are display widths (ratatui's, from unicode-width): CJK and most emoji take two
//! columns, combining marks none. Styles are kept span by span.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

/// Columns a tab advances to the next multiple of.
const TAB: usize = 4;

/// The display width of `text`.
pub fn width(text: &str) -> usize {
    Span::raw(text).width()
}

/// A character as the terminal draws it: with the zero-width marks and joined
/// characters that go with it.
#[derive(Debug, Clone)]
struct Cell {
    text: String,
    style: Style,
    width: usize,
    space: bool,
}

/// The cells of `line`, tabs as spaces.
fn cells(line: &Line<'_>) -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    let mut column = 0;
    let mut joined = false;
    for span in &line.spans {
        for c in span.content.chars() {
            if c == '\t' {
                let n = TAB - column % TAB;
                for _ in 0..n {
                    out.push(Cell { text: " ".into(), style: span.style, width: 1, space: true });
                }
                column += n;
                joined = false;
                continue;
            }
            let mut buf = [0u8; 4];
            let alone = width(c.encode_utf8(&mut buf));
            match out.last_mut() {
                // A mark, a variation selector or what a zero-width joiner joins belongs to
                // the character before it.
                Some(last) if (alone == 0 || joined) && !last.space => {
                    last.text.push(c);
                    let before = last.width;
                    last.width = width(&last.text);
                    column = column + last.width - before;
                }
                _ => {
                    out.push(Cell { text: c.to_string(), style: span.style, width: alone, space: c == ' ' });
                    column += alone;
                }
            }
            joined = c == '\u{200D}';
        }
    }
    out
}

/// Cells as a line with `line`'s own style, neighbours of one style in one span.
fn line_of(cells: &[Cell], like: &Line<'_>) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = Vec::new();
    for cell in cells {
        match spans.last_mut() {
            Some(span) if span.style == cell.style => span.content.to_mut().push_str(&cell.text),
            _ => spans.push(Span::styled(cell.text.clone(), cell.style)),
        }
    }
    let mut out = Line::from(spans).style(like.style);
    out.alignment = like.alignment;
    out
}

/// `line` in lines of at most `width` columns, broken at spaces; the lines after the
/// first start with `indent` spaces (none when the width leaves no room for them).
pub fn wrap(line: &Line<'_>, width: usize, indent: usize) -> Vec<Line<'static>> {
    let width = width.max(1);
    let indent = if indent + 8 > width { 0 } else { indent };
    let all = cells(line);
    if all.iter().map(|c| c.width).sum::<usize>() <= width {
        return vec![line_of(&all, line)];
    }
    let pad = |style| Cell { text: " ".repeat(indent), style, width: indent, space: true };
    let mut lines: Vec<Vec<Cell>> = vec![Vec::new()];
    let mut column = 0;
    // Where the current line's text starts (after the indent).
    let mut start = 0;
    let mut i = 0;
    while i < all.len() {
        if all[i].space {
            // Spaces at a break are dropped; spaces the text starts with are kept.
            let run = all[i..].iter().take_while(|c| c.space).count();
            let blank = column == start && lines.len() > 1;
            if !blank {
                let run_width: usize = all[i..i + run].iter().map(|c| c.width).sum();
                if column + run_width < width {
                    lines.last_mut().unwrap().extend_from_slice(&all[i..i + run]);
                    column += run_width;
                } else if i + run < all.len() {
                    // No room for the spaces and a letter after them: a break.
                    lines.push(vec![pad(all[i].style)]);
                    (column, start) = (indent, indent);
                }
            }
            i += run;
            continue;
        }
        let word = all[i..].iter().take_while(|c| !c.space).count();
        let word_width: usize = all[i..i + word].iter().map(|c| c.width).sum();
        if column + word_width > width && column > start && indent + word_width <= width {
            // The word goes to the next line whole; the spaces before it stay behind.
            let current = lines.last_mut().unwrap();
            while current.last().is_some_and(|c| c.space) && current.len() > 1 {
                current.pop();
            }
            lines.push(vec![pad(all[i].style)]);
            (column, start) = (indent, indent);
        }
        for cell in &all[i..i + word] {
            // A word longer than a line is broken where the line ends.
            if column + cell.width > width && column > start {
                lines.push(vec![pad(cell.style)]);
                (column, start) = (indent, indent);
            }
            lines.last_mut().unwrap().push(cell.clone());
            column += cell.width;
        }
        i += word;
    }
    lines
        .iter()
        .map(|cells| {
            let mut cells = cells.as_slice();
            while cells.len() > 1 && cells.last().is_some_and(|c| c.space) {
                cells = &cells[..cells.len() - 1];
            }
            line_of(cells, line)
        })
        .collect()
}

/// Each line of `text` wrapped as [`wrap`] does, in `style`.
pub fn wrap_text(text: &str, style: Style, width: usize, indent: usize) -> Vec<Line<'static>> {
    text.split('\n').flat_map(|l| wrap(&Line::styled(l.to_owned(), style), width, indent)).collect()
}

/// `line` cut to `width` columns, ending in "…" when cut.
pub fn cut(line: &Line<'_>, width: usize) -> Line<'static> {
    let all = cells(line);
    if all.iter().map(|c| c.width).sum::<usize>() <= width {
        return line_of(&all, line);
    }
    let mut kept = Vec::new();
    let mut column = 0;
    for cell in all {
        if column + cell.width + 1 > width {
            kept.push(Cell { text: "…".into(), width: 1, space: false, ..cell });
            break;
        }
        column += cell.width;
        kept.push(cell);
    }
    while kept.len() > 1 && kept[kept.len() - 2].space {
        kept.remove(kept.len() - 2);
    }
    line_of(&kept, line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line]) -> Vec<String> {
        lines.iter().map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn words_wrap_at_spaces_and_long_words_break() {
        let lines = wrap(&Line::raw("the quick brown fox jumps over the lazy dog"), 15, 0);
        assert_eq!(texts(&lines), ["the quick brown", "fox jumps over", "the lazy dog"]);
        let lines = wrap(&Line::raw("abcdefghijklmnopqrstuvwxyz end"), 10, 0);
        assert_eq!(texts(&lines), ["abcdefghij", "klmnopqrst", "uvwxyz end"]);
        let lines = wrap(&Line::raw("› 1. ( ) a long label that wraps under itself"), 24, 9);
        assert_eq!(texts(&lines), ["› 1. ( ) a long label", "         that wraps", "         under itself"]);
        assert_eq!(texts(&wrap(&Line::raw("  ↑ 3 more"), 40, 0)), ["  ↑ 3 more"], "leading spaces stay");
    }

    #[test]
    fn widths_are_display_widths() {
        // Ten CJK characters are twenty columns.
        let lines = wrap(&Line::raw("名前は請求書の保存先"), 8, 0);
        assert_eq!(texts(&lines), ["名前は請", "求書の保", "存先"]);
        assert!(lines.iter().all(|l| l.width() <= 8));
        let lines = wrap(&Line::raw("🦀🦀🦀 e\u{301}e\u{301}"), 5, 0);
        assert_eq!(texts(&lines), ["🦀🦀", "🦀 e\u{301}e\u{301}"], "the accent stays with its letter");
        assert_eq!(texts(&wrap(&Line::raw("a\tb"), 20, 0)), ["a   b"], "a tab is spaces");
    }

    #[test]
    fn cut_ends_in_an_ellipsis_and_keeps_styles() {
        let bold = Style::default().add_modifier(ratatui::style::Modifier::BOLD);
        let line = Line::from(vec![Span::raw("› "), Span::styled("Which database should we use", bold)]);
        let cut = cut(&line, 12);
        assert_eq!(texts(std::slice::from_ref(&cut)), ["› Which dat…"]);
        assert_eq!(cut.spans[1].style, bold);
        assert_eq!(texts(&[super::cut(&Line::raw("名前は請求書"), 7)]), ["名前は…"]);
        assert_eq!(texts(&[super::cut(&Line::raw("short"), 7)]), ["short"]);
        assert_eq!(texts(&[super::cut(&Line::raw("ab cd ef"), 5)]), ["ab c…"]);
        assert_eq!(texts(&[super::cut(&Line::raw("ab cd ef"), 4)]), ["ab…"], "no space before the …");
    }
}
