//! An option's `preview` read as markdown, into a small document model every front end
//! draws its own way (Claude Code renders its AskUserQuestion previews as markdown in
//! a monospace box; issue 29).
//!
//! Parsed by pulldown-cmark (CommonMark, plus tables and strikethrough). Nothing here
//! makes HTML: raw HTML in the markdown stays literal text, a link is its text and its
//! URL as data (never followed), and every string of the model is agent text a front
//! end shows as text (a text node, or escaped for a terminal).
//!
//! A line break inside a paragraph stays a line break ([`Inline::Break`]), unlike
//! HTML's rendering of CommonMark: previews are often mockups whose lines are meant as
//! lines.
//!
//! Bounded, whatever the agent sends: at most [`MAX_INPUT`] bytes are read, at most
//! [`MAX_BLOCKS`] blocks (list items and table rows included) and [`MAX_COLUMNS`]
//! table columns are kept, and block quotes and lists nest at most [`MAX_DEPTH`] deep,
//! emphasis and links [`MAX_INLINE_DEPTH`] deep (deeper ones are flattened into their
//! parent), so drawing the model recursively is safe. [`Doc::truncated`] says when
//! anything was left out.

use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use serde::{Deserialize, Serialize};

/// Bytes of a preview read; the rest is left out (cut at a character boundary).
pub const MAX_INPUT: usize = 32 * 1024;
/// Blocks kept, counting every nested block, list item and table row.
pub const MAX_BLOCKS: usize = 400;
/// Block quotes and lists inside each other; deeper ones join their parent.
pub const MAX_DEPTH: usize = 8;
/// Emphasis, strong, strikethrough and links inside each other.
pub const MAX_INLINE_DEPTH: usize = 8;
/// A table's columns; cells beyond them are left out.
pub const MAX_COLUMNS: usize = 24;

/// A preview as blocks. On the wire (a page draws what the bridge parsed) in serde's
/// default shape: `{"blocks": [{"paragraph": [{"text": "Hi"}, "break"]}], "truncated": true}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Doc {
    pub blocks: Vec<Block>,
    /// Something was left out: the input was too long, or had too many blocks or columns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Block {
    /// `# Title` (level 1) to `###### Title` (level 6), or a setext heading.
    Heading {
        level: u8,
        content: Vec<Inline>,
    },
    Paragraph(Vec<Inline>),
    /// A fenced or indented code block: its text verbatim (without the last newline),
    /// and the fence's language (the info string's first word), if any.
    Code {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lang: Option<String>,
        text: String,
    },
    /// A bullet list (`start` is `None`) or a numbered one starting at `start`; each
    /// item is its blocks (a nested list is a block of its item).
    List {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        start: Option<u64>,
        items: Vec<Vec<Block>>,
    },
    Quote(Vec<Block>),
    /// A thematic break (`---`).
    Rule,
    Table(Table),
}

/// A table: its header row and body rows, each a row of cells; every row has one
/// alignment per column at most (rows may be shorter).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Table {
    pub align: Vec<Align>,
    pub head: Vec<Vec<Inline>>,
    pub rows: Vec<Vec<Vec<Inline>>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Align {
    #[default]
    None,
    Left,
    Center,
    Right,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Inline {
    Text(String),
    Strong(Vec<Inline>),
    Emphasis(Vec<Inline>),
    Strike(Vec<Inline>),
    /// An inline `code span`.
    Code(String),
    /// A link (or an image: its alt text), shown as text and URL, never followed.
    Link {
        content: Vec<Inline>,
        url: String,
    },
    /// A line break: a hard one, or a new line inside a paragraph.
    Break,
}

impl Inline {
    /// Whether a link's text is its URL (an autolink), so showing both says it twice.
    pub fn is_bare_link(content: &[Inline], url: &str) -> bool {
        let text = plain(content);
        text == url || url.strip_prefix("mailto:") == Some(text.as_str())
    }
}

/// The text of `inlines` without their styles (a link's text without its URL, a break
/// as a space).
pub fn plain(inlines: &[Inline]) -> String {
    let mut out = String::new();
    plain_into(inlines, &mut out);
    out
}

fn plain_into(inlines: &[Inline], out: &mut String) {
    for inline in inlines {
        match inline {
            Inline::Text(t) | Inline::Code(t) => out.push_str(t),
            Inline::Strong(c) | Inline::Emphasis(c) | Inline::Strike(c) | Inline::Link { content: c, .. } => plain_into(c, out),
            Inline::Break => out.push(' '),
        }
    }
}

/// `text` read as markdown (CommonMark, tables, strikethrough), within the bounds above.
pub fn parse(text: &str) -> Doc {
    let mut end = text.len().min(MAX_INPUT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let mut b = Builder { stack: vec![Frame::Blocks(Vec::new())], used: 0, full: false, truncated: end < text.len() };
    for event in Parser::new_ext(&text[..end], Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH) {
        b.event(event);
        if b.full {
            break;
        }
    }
    // Whatever is still open (after a stop) closes as if it had ended.
    while b.stack.len() > 1 {
        b.close();
    }
    let Some(Frame::Blocks(blocks)) = b.stack.pop() else { unreachable!("the root is never closed") };
    Doc { blocks, truncated: b.truncated || b.full }
}

/// What a start tag opened, until its end tag.
enum Frame {
    /// The document, a block quote or a list item.
    Blocks(Vec<Block>),
    Quote(Vec<Block>),
    List {
        start: Option<u64>,
        items: Vec<Vec<Block>>,
    },
    Leaf(Leaf, Vec<Inline>),
    Code {
        lang: Option<String>,
        text: String,
    },
    Table(Table),
    Row {
        head: bool,
        cells: Vec<Vec<Inline>>,
    },
    Span(Span, Vec<Inline>),
    /// Tags too deep (or of a kind not kept), this many in a row: their content goes
    /// to their parent. Counted, not stacked, so the stack stays a few frames deep.
    Skip(usize),
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaf {
    Paragraph,
    /// A tight list item's text, which comes without a paragraph tag.
    Implicit,
    Heading(u8),
    Html,
    Cell,
}

enum Span {
    Strong,
    Emphasis,
    Strike,
    Link(String),
}

struct Builder {
    stack: Vec<Frame>,
    /// Blocks, items and rows kept so far.
    used: usize,
    /// The block budget ran out: parsing stops.
    full: bool,
    truncated: bool,
}

impl Builder {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(end) => {
                // A block's end (an item's) first ends its tight text.
                if !is_inline_end(&end) {
                    self.close_implicit();
                }
                self.close();
            }
            Event::Text(t) => self.text(&t),
            Event::Code(c) => self.inline(Inline::Code(c.into_string())),
            // Raw HTML is text, with its lines as lines.
            Event::Html(h) | Event::InlineHtml(h) => self.literal(&h),
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
            Event::FootnoteReference(r) => self.text(&format!("[^{r}]")),
            Event::SoftBreak | Event::HardBreak => self.inline(Inline::Break),
            Event::TaskListMarker(done) => self.text(if done { "[x] " } else { "[ ] " }),
            Event::Rule => {
                self.close_implicit();
                self.block(Block::Rule);
            }
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        let frame = match tag {
            Tag::Emphasis => self.span(Span::Emphasis),
            Tag::Strong => self.span(Span::Strong),
            Tag::Strikethrough => self.span(Span::Strike),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => self.span(Span::Link(dest_url.into_string())),
            Tag::Superscript | Tag::Subscript => Frame::Skip(1),
            block => {
                self.close_implicit();
                match block {
                    Tag::Paragraph => Frame::Leaf(Leaf::Paragraph, Vec::new()),
                    Tag::Heading { level, .. } => Frame::Leaf(Leaf::Heading(level as u8), Vec::new()),
                    Tag::HtmlBlock => Frame::Leaf(Leaf::Html, Vec::new()),
                    Tag::CodeBlock(kind) => {
                        let lang = match kind {
                            CodeBlockKind::Fenced(info) => info.split_whitespace().next().map(str::to_owned),
                            CodeBlockKind::Indented => None,
                        };
                        Frame::Code { lang, text: String::new() }
                    }
                    Tag::BlockQuote(_) if self.depth() < MAX_DEPTH && self.budget() => Frame::Quote(Vec::new()),
                    Tag::List(start) if self.depth() < MAX_DEPTH && self.budget() => Frame::List { start, items: Vec::new() },
                    Tag::Item if matches!(self.stack.last(), Some(Frame::List { .. })) && self.budget() => Frame::Blocks(Vec::new()),
                    Tag::Table(align) if self.budget() => {
                        Frame::Table(Table { align: align.iter().take(MAX_COLUMNS).map(align_of).collect(), ..Table::default() })
                    }
                    Tag::TableHead if self.in_table() => Frame::Row { head: true, cells: Vec::new() },
                    Tag::TableRow if self.in_table() && self.budget() => Frame::Row { head: false, cells: Vec::new() },
                    Tag::TableCell => Frame::Leaf(Leaf::Cell, Vec::new()),
                    // Too deep, out of budget, or not kept (footnotes, definition lists,
                    // metadata): the content joins the parent.
                    _ => Frame::Skip(1),
                }
            }
        };
        match (self.stack.last_mut(), frame) {
            (Some(Frame::Skip(n)), Frame::Skip(_)) => *n += 1,
            (_, frame) => self.stack.push(frame),
        }
    }

    /// Closes the frame on top, handing what it made to the frame below.
    fn close(&mut self) {
        if self.stack.len() <= 1 {
            return;
        }
        if let Some(Frame::Skip(n)) = self.stack.last_mut() {
            if *n > 1 {
                *n -= 1;
                return;
            }
        }
        match self.stack.pop().expect("a frame") {
            Frame::Blocks(blocks) => match self.stack.last_mut() {
                Some(Frame::List { items, .. }) => items.push(blocks),
                _ => self.blocks(blocks),
            },
            Frame::Quote(blocks) => self.block_counted(Block::Quote(blocks)),
            Frame::List { start, items } => self.block_counted(Block::List { start, items }),
            Frame::Leaf(leaf, mut content) => {
                while matches!(content.last(), Some(Inline::Break)) {
                    content.pop();
                }
                match leaf {
                    Leaf::Paragraph | Leaf::Implicit | Leaf::Html => self.block(Block::Paragraph(content)),
                    Leaf::Heading(level) => self.block(Block::Heading { level, content }),
                    Leaf::Cell => match self.stack.last_mut() {
                        Some(Frame::Row { cells, .. }) if cells.len() < MAX_COLUMNS => cells.push(content),
                        Some(Frame::Row { .. }) => self.truncated = true,
                        _ => self.inlines(content),
                    },
                }
            }
            Frame::Code { lang, mut text } => {
                if text.ends_with('\n') {
                    text.pop();
                }
                self.block(Block::Code { lang, text });
            }
            Frame::Table(table) => self.block_counted(Block::Table(table)),
            Frame::Row { head, cells } => match self.stack.last_mut() {
                Some(Frame::Table(table)) if head => table.head = cells,
                Some(Frame::Table(table)) => table.rows.push(cells),
                _ => {}
            },
            Frame::Span(span, content) => {
                let inline = match span {
                    Span::Strong => Inline::Strong(content),
                    Span::Emphasis => Inline::Emphasis(content),
                    Span::Strike => Inline::Strike(content),
                    Span::Link(url) => Inline::Link { content, url },
                };
                self.inline(inline);
            }
            Frame::Skip(_) => {}
        }
    }

    /// Takes one from the block budget; `false` (and parsing stops) when it is spent.
    fn budget(&mut self) -> bool {
        if self.used >= MAX_BLOCKS {
            self.full = true;
            return false;
        }
        self.used += 1;
        true
    }

    /// Quotes and lists open around the top.
    fn depth(&self) -> usize {
        self.stack.iter().filter(|f| matches!(f, Frame::Quote(_) | Frame::List { .. })).count()
    }

    fn in_table(&self) -> bool {
        matches!(self.stack.last(), Some(Frame::Table(_)))
    }

    fn span(&self, span: Span) -> Frame {
        let depth = self.stack.iter().filter(|f| matches!(f, Frame::Span(..))).count();
        if depth < MAX_INLINE_DEPTH {
            Frame::Span(span, Vec::new())
        } else {
            Frame::Skip(1)
        }
    }

    /// Ends a tight list item's text before a block (a nested list) or the item's end.
    fn close_implicit(&mut self) {
        if matches!(self.stack.last(), Some(Frame::Leaf(Leaf::Implicit, _))) {
            self.close();
        }
    }

    /// A leaf block, counted against the budget (and dropped once it is spent).
    fn block(&mut self, block: Block) {
        if self.budget() {
            self.block_counted(block);
        }
    }

    /// A block already counted, to the nearest frame that holds blocks.
    fn block_counted(&mut self, block: Block) {
        for frame in self.stack.iter_mut().rev() {
            match frame {
                Frame::Blocks(blocks) | Frame::Quote(blocks) => return blocks.push(block),
                Frame::List { items, .. } => return items.push(vec![block]),
                _ => {}
            }
        }
    }

    /// The blocks of a list item whose list was left out: they join the parent.
    fn blocks(&mut self, blocks: Vec<Block>) {
        for block in blocks {
            self.block_counted(block);
        }
    }

    /// The content of a cell outside a row (never, from pulldown-cmark): kept as text.
    fn inlines(&mut self, inlines: Vec<Inline>) {
        for inline in inlines {
            self.inline(inline);
        }
    }

    fn text(&mut self, text: &str) {
        if let Some(Frame::Code { text: code, .. }) = self.stack.last_mut() {
            return code.push_str(text);
        }
        self.inline(Inline::Text(text.to_owned()));
    }

    /// Raw HTML as text, its new lines as breaks.
    fn literal(&mut self, html: &str) {
        let html = html.strip_suffix('\n').unwrap_or(html);
        for (i, line) in html.split('\n').enumerate() {
            if i > 0 {
                self.inline(Inline::Break);
            }
            if !line.is_empty() {
                self.text(line);
            }
        }
        // The next line of an HTML block comes as its own event.
        if matches!(self.stack.last(), Some(Frame::Leaf(Leaf::Html, c)) if !c.is_empty()) {
            self.inline(Inline::Break);
        }
    }

    /// An inline to the innermost span or leaf (a tight item's text opens its leaf).
    fn inline(&mut self, inline: Inline) {
        let at = self.stack.iter().rposition(|f| !matches!(f, Frame::Skip(_)));
        let holder = match at.map(|i| &self.stack[i]) {
            Some(Frame::Span(..) | Frame::Leaf(..)) => at,
            // A code block's text comes as text (see `text`), never as inlines.
            Some(Frame::Code { .. }) => return,
            _ => None,
        };
        let index = match holder {
            Some(i) => i,
            None => {
                self.stack.push(Frame::Leaf(Leaf::Implicit, Vec::new()));
                self.stack.len() - 1
            }
        };
        let (Frame::Span(_, content) | Frame::Leaf(_, content)) = &mut self.stack[index] else { return };
        match (content.last_mut(), inline) {
            (Some(Inline::Text(last)), Inline::Text(t)) => last.push_str(&t),
            (_, inline) => content.push(inline),
        }
    }
}

fn is_inline_end(end: &TagEnd) -> bool {
    matches!(
        end,
        TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough | TagEnd::Link | TagEnd::Image | TagEnd::Superscript | TagEnd::Subscript
    )
}

fn align_of(a: &Alignment) -> Align {
    match a {
        Alignment::None => Align::None,
        Alignment::Left => Align::Left,
        Alignment::Center => Align::Center,
        Alignment::Right => Align::Right,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Inline {
        Inline::Text(s.into())
    }

    fn para(s: &str) -> Block {
        Block::Paragraph(vec![text(s)])
    }

    /// Every block of `doc`, nested ones, items and rows included.
    fn count(blocks: &[Block]) -> usize {
        blocks
            .iter()
            .map(|b| match b {
                Block::Quote(inner) => 1 + count(inner),
                Block::List { items, .. } => 1 + items.len() + items.iter().map(|i| count(i)).sum::<usize>(),
                Block::Table(t) => 1 + t.rows.len(),
                _ => 1,
            })
            .sum()
    }

    fn depth(blocks: &[Block]) -> usize {
        blocks
            .iter()
            .map(|b| match b {
                Block::Quote(inner) => 1 + depth(inner),
                Block::List { items, .. } => 1 + items.iter().map(|i| depth(i)).max().unwrap_or(0),
                _ => 0,
            })
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn headings_keep_their_level_and_lose_their_marks() {
        let doc = parse("# One\n\n## Two *too*\n\nThree\n-----\n\n####### seven is text");
        assert_eq!(
            doc.blocks,
            [
                Block::Heading { level: 1, content: vec![text("One")] },
                Block::Heading { level: 2, content: vec![text("Two "), Inline::Emphasis(vec![text("too")])] },
                Block::Heading { level: 2, content: vec![text("Three")] },
                para("####### seven is text"),
            ]
        );
        assert!(!doc.truncated);
    }

    #[test]
    fn fences_keep_their_text_verbatim_and_their_language() {
        let doc =
            parse("```rust title=x\nfn main() {\n    println!(\"**not bold** <b>\");\n}\n```\n\n    indented\n    code\n\n```\nunclosed");
        assert_eq!(
            doc.blocks,
            [
                Block::Code { lang: Some("rust".into()), text: "fn main() {\n    println!(\"**not bold** <b>\");\n}".into() },
                Block::Code { lang: None, text: "indented\ncode".into() },
                Block::Code { lang: None, text: "unclosed".into() },
            ]
        );
    }

    #[test]
    fn bold_emphasis_code_strikethrough_and_links_are_inlines() {
        let doc = parse("**bold** and _it_ and `co*de*` and ~~gone~~ and [docs](https://example.com/a?b=1) and <https://x.dev>\nnext line");
        let Block::Paragraph(p) = &doc.blocks[0] else { panic!("{doc:?}") };
        assert_eq!(
            p,
            &[
                Inline::Strong(vec![text("bold")]),
                text(" and "),
                Inline::Emphasis(vec![text("it")]),
                text(" and "),
                Inline::Code("co*de*".into()),
                text(" and "),
                Inline::Strike(vec![text("gone")]),
                text(" and "),
                Inline::Link { content: vec![text("docs")], url: "https://example.com/a?b=1".into() },
                text(" and "),
                Inline::Link { content: vec![text("https://x.dev")], url: "https://x.dev".into() },
                Inline::Break,
                text("next line"),
            ]
        );
        assert!(Inline::is_bare_link(&[text("https://x.dev")], "https://x.dev"));
        assert_eq!(plain(p), "bold and it and co*de* and gone and docs and https://x.dev next line");
    }

    #[test]
    fn lists_nest_and_numbered_lists_keep_their_start() {
        let doc = parse("- one\n- two\n  - two a\n    1. deep\n- three\n\n3. c\n4. d");
        assert_eq!(
            doc.blocks,
            [
                Block::List {
                    start: None,
                    items: vec![
                        vec![para("one")],
                        vec![
                            para("two"),
                            Block::List {
                                start: None,
                                items: vec![vec![para("two a"), Block::List { start: Some(1), items: vec![vec![para("deep")]] }]]
                            }
                        ],
                        vec![para("three")],
                    ]
                },
                Block::List { start: Some(3), items: vec![vec![para("c")], vec![para("d")]] },
            ]
        );
        // A loose item's paragraphs and a code block stay in the item.
        let doc = parse("1. first\n\n   more\n\n   ```\n   code\n   ```\n2. second");
        let Block::List { items, .. } = &doc.blocks[0] else { panic!("{doc:?}") };
        assert_eq!(items[0], [para("first"), para("more"), Block::Code { lang: None, text: "code".into() }]);
    }

    #[test]
    fn tables_have_a_head_rows_cells_and_alignments() {
        let doc = parse("| a | **b** | c |\n|:--|:-:|--:|\n| 1 | 2 | 3 |\n| x |\n\nafter");
        assert_eq!(
            doc.blocks,
            [
                Block::Table(Table {
                    align: vec![Align::Left, Align::Center, Align::Right],
                    head: vec![vec![text("a")], vec![Inline::Strong(vec![text("b")])], vec![text("c")]],
                    rows: vec![vec![vec![text("1")], vec![text("2")], vec![text("3")]], vec![vec![text("x")], vec![], vec![]]],
                }),
                para("after"),
            ]
        );
    }

    #[test]
    fn quotes_rules_and_the_rest_of_the_claude_code_example() {
        let doc = parse("> quoted\n> > twice\n\n---\n\nend");
        assert_eq!(doc.blocks, [Block::Quote(vec![para("quoted"), Block::Quote(vec![para("twice")])]), Block::Rule, para("end")]);
    }

    #[test]
    fn html_stays_literal_text() {
        let doc =
            parse("<script>alert(1)</script>\n<div onclick=\"x()\">\n<p>two lines</p>\n\nhi <b>there</b> <img src=x onerror=alert(1)>");
        assert_eq!(
            doc.blocks,
            [
                para("<script>alert(1)</script>"),
                Block::Paragraph(vec![text("<div onclick=\"x()\">"), Inline::Break, text("<p>two lines</p>")]),
                para("hi <b>there</b> <img src=x onerror=alert(1)>"),
            ]
        );
        // An HTML comment and an entity are text as written, and as decoded.
        let doc = parse("<!-- hidden -->\n\n&lt;b&gt; &amp;");
        assert_eq!(doc.blocks, [para("<!-- hidden -->"), para("<b> &")]);
    }

    #[test]
    fn a_mockup_keeps_its_lines() {
        let doc = parse("+--+\n|  |\n+--+");
        assert_eq!(doc.blocks, [Block::Paragraph(vec![text("+--+"), Inline::Break, text("|  |"), Inline::Break, text("+--+")])]);
    }

    #[test]
    fn a_huge_input_stays_bounded() {
        // Many blocks: at most MAX_BLOCKS kept, and it says so.
        let doc = parse(&"para\n\n".repeat(100_000));
        assert!(doc.truncated && count(&doc.blocks) <= MAX_BLOCKS, "{}", count(&doc.blocks));
        let doc = parse(&"- item\n".repeat(5_000));
        assert!(doc.truncated && count(&doc.blocks) <= MAX_BLOCKS);
        let doc = parse(&format!("|{}\n|{}\n{}", "a|".repeat(200), "-|".repeat(200), "x\n".repeat(5_000)));
        let Block::Table(t) = &doc.blocks[0] else { panic!() };
        assert!(doc.truncated && t.head.len() == MAX_COLUMNS && t.rows.len() < MAX_BLOCKS && t.rows[0].len() == MAX_COLUMNS);
        // Deep nesting: flattened past MAX_DEPTH, so drawing it recursively is safe.
        for deep in [">".repeat(MAX_INPUT), "- ".repeat(5_000) + "x", "> 1. ".repeat(3_000) + "x"] {
            let doc = parse(&deep);
            assert!(depth(&doc.blocks) <= MAX_DEPTH, "{}", depth(&doc.blocks));
        }
        let nested: String = (0..3_000).map(|i| format!("{}- x\n", "  ".repeat(i))).collect();
        assert!(depth(&parse(&nested).blocks) <= MAX_DEPTH);
        let emphasis = "*a ".repeat(10_000) + &"b* ".repeat(10_000);
        let Block::Paragraph(p) = &parse(&emphasis).blocks[0] else { panic!() };
        fn inline_depth(i: &[Inline]) -> usize {
            i.iter()
                .map(|i| match i {
                    Inline::Strong(c) | Inline::Emphasis(c) | Inline::Strike(c) | Inline::Link { content: c, .. } => 1 + inline_depth(c),
                    _ => 0,
                })
                .max()
                .unwrap_or(0)
        }
        assert!(inline_depth(p) <= MAX_INLINE_DEPTH);
        // A long input is read up to MAX_INPUT bytes, at a character boundary.
        let doc = parse(&"é".repeat(MAX_INPUT));
        assert!(doc.truncated);
        let Block::Paragraph(p) = &doc.blocks[0] else { panic!() };
        assert_eq!(plain(p).len(), MAX_INPUT);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 500, ..Default::default() })]

        /// Any text made of markdown's own characters parses, within the bounds.
        #[test]
        fn any_markdown_parses_within_bounds(text in "([-*_`~#>|:+. 1a<\\[\\]()!\n]|```|    ){0,300}") {
            let doc = parse(&text);
            proptest::prop_assert!(count(&doc.blocks) <= MAX_BLOCKS && depth(&doc.blocks) <= MAX_DEPTH);
        }
    }

    /// The bridge sends a page the parsed previews (issue 51): the shape is the one
    /// docs/protocol.md shows, and every kind of block and inline survives the trip.
    #[test]
    fn a_doc_crosses_the_wire_unchanged() {
        let doc = parse("# T\n\nHi\nthere *a* **b** ~~c~~ `d` [e](https://x.test)\n\n```sh\nls\n```\n\n3. x\n\n> q\n\n---\n\n| a | b |\n|:-|-:|\n| 1 | 2 |");
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["blocks"][0], serde_json::json!({"heading": {"level": 1, "content": [{"text": "T"}]}}));
        assert_eq!(json["blocks"][1]["paragraph"][1], serde_json::json!("break"));
        assert_eq!(json["blocks"][2], serde_json::json!({"code": {"lang": "sh", "text": "ls"}}));
        assert_eq!(json["blocks"][6]["table"]["align"], serde_json::json!(["left", "right"]));
        assert!(json.get("truncated").is_none(), "false is left out");
        let back: Doc = serde_json::from_value(json).unwrap();
        assert_eq!(back, doc);
        let cut = parse(&"x\n\n".repeat(MAX_BLOCKS + 1));
        assert_eq!(serde_json::from_str::<Doc>(&serde_json::to_string(&cut).unwrap()).unwrap(), cut);
        assert!(cut.truncated);
    }
}
