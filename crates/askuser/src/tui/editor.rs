//! A one-field text editor for the terminal (the browser's textarea does this itself):
//! the text and a cursor, moved by character or word, with word deletion and paste.
//! The dialog only ever sees the whole text ([`askuser_core::dialog::Event::SetText`]).

/// The text being typed and where the cursor is (a char index).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Editor {
    chars: Vec<char>,
    cursor: usize,
}

/// What a key did to the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    /// The text changed.
    Changed,
    /// Only the cursor moved.
    Moved,
    /// Not an editing key.
    Ignored,
}

impl Editor {
    /// An editor holding `text`, the cursor at its end.
    pub fn new(text: &str) -> Editor {
        let chars: Vec<char> = text.chars().collect();
        Editor { cursor: chars.len(), chars }
    }

    pub fn text(&self) -> String {
        self.chars.iter().collect()
    }

    /// The cursor as a char index.
    pub fn cursor(&self) -> usize {
        self.cursor
    }

    /// Replaces the text (from the dialog) keeping the cursor where it can be.
    pub fn set(&mut self, text: &str) {
        if self.text() != text {
            self.chars = text.chars().collect();
            self.cursor = self.cursor.min(self.chars.len());
        }
    }

    pub fn insert(&mut self, s: &str) -> Edit {
        // A paste may bring \r\n: the answer keeps \n only.
        let new: Vec<char> = s.chars().filter(|c| *c != '\r').collect();
        if new.is_empty() {
            return Edit::Ignored;
        }
        let n = new.len();
        self.chars.splice(self.cursor..self.cursor, new);
        self.cursor += n;
        Edit::Changed
    }

    pub fn backspace(&mut self) -> Edit {
        self.remove(self.cursor.saturating_sub(1), self.cursor)
    }

    pub fn delete(&mut self) -> Edit {
        self.remove(self.cursor, (self.cursor + 1).min(self.chars.len()))
    }

    /// Ctrl+W / Alt+Backspace: the word before the cursor (and the spaces after it).
    pub fn delete_word_back(&mut self) -> Edit {
        self.remove(self.word_start(), self.cursor)
    }

    /// Ctrl+U: everything before the cursor.
    pub fn delete_to_start(&mut self) -> Edit {
        self.remove(0, self.cursor)
    }

    /// Ctrl+K: everything after the cursor.
    pub fn delete_to_end(&mut self) -> Edit {
        self.remove(self.cursor, self.chars.len())
    }

    /// Removes the characters in `start..end`; the cursor goes to `start`.
    fn remove(&mut self, start: usize, end: usize) -> Edit {
        if start >= end {
            return Edit::Ignored;
        }
        self.chars.drain(start..end);
        self.cursor = start;
        Edit::Changed
    }

    pub fn left(&mut self) -> Edit {
        self.move_to(self.cursor.saturating_sub(1))
    }

    pub fn right(&mut self) -> Edit {
        self.move_to((self.cursor + 1).min(self.chars.len()))
    }

    pub fn word_left(&mut self) -> Edit {
        self.move_to(self.word_start())
    }

    pub fn word_right(&mut self) -> Edit {
        let mut i = self.cursor;
        while i < self.chars.len() && !self.chars[i].is_alphanumeric() {
            i += 1;
        }
        while i < self.chars.len() && self.chars[i].is_alphanumeric() {
            i += 1;
        }
        self.move_to(i)
    }

    /// Home / Ctrl+A: the start of the current line.
    pub fn home(&mut self) -> Edit {
        let start = self.chars[..self.cursor].iter().rposition(|c| *c == '\n').map_or(0, |i| i + 1);
        self.move_to(start)
    }

    /// End / Ctrl+E: the end of the current line.
    pub fn end(&mut self) -> Edit {
        let end = self.chars[self.cursor..].iter().position(|c| *c == '\n').map_or(self.chars.len(), |i| self.cursor + i);
        self.move_to(end)
    }

    fn move_to(&mut self, to: usize) -> Edit {
        if to == self.cursor {
            return Edit::Ignored;
        }
        self.cursor = to;
        Edit::Moved
    }

    fn word_start(&self) -> usize {
        let mut i = self.cursor;
        while i > 0 && !self.chars[i - 1].is_alphanumeric() {
            i -= 1;
        }
        while i > 0 && self.chars[i - 1].is_alphanumeric() {
            i -= 1;
        }
        i
    }

    /// The line the cursor is on (0-based) and its column in chars.
    pub fn line_and_column(&self) -> (usize, usize) {
        let before = &self.chars[..self.cursor];
        let line = before.iter().filter(|c| **c == '\n').count();
        let column = before.iter().rev().take_while(|c| **c != '\n').count();
        (line, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_moving_and_deleting_words() {
        let mut e = Editor::new("");
        e.insert("order processor");
        assert_eq!((e.text().as_str(), e.cursor()), ("order processor", 15));
        assert_eq!(e.word_left(), Edit::Moved);
        assert_eq!(e.cursor(), 6);
        e.insert("-");
        e.backspace();
        e.left();
        e.insert("_");
        assert_eq!(e.text(), "order_ processor");
        e.end();
        assert_eq!(e.delete_word_back(), Edit::Changed);
        assert_eq!(e.text(), "order_ ");
        e.delete_word_back();
        assert_eq!(e.text(), "", "the word and the punctuation after it");
        assert_eq!(e.delete_word_back(), Edit::Ignored);
    }

    #[test]
    fn lines_home_end_and_kills() {
        let mut e = Editor::new("first\nsecond");
        assert_eq!(e.line_and_column(), (1, 6));
        e.home();
        assert_eq!(e.line_and_column(), (1, 0));
        e.left();
        assert_eq!(e.line_and_column(), (0, 5));
        e.home();
        e.word_right();
        assert_eq!(e.cursor(), 5);
        assert_eq!(e.delete_to_end(), Edit::Changed);
        assert_eq!(e.text(), "first");
        e.left();
        e.delete_to_start();
        assert_eq!((e.text().as_str(), e.cursor()), ("t", 0));
        assert_eq!(e.delete(), Edit::Changed);
        assert_eq!(e.delete(), Edit::Ignored);
    }

    #[test]
    fn a_paste_keeps_newlines_but_not_carriage_returns_and_wide_text_is_chars() {
        let mut e = Editor::new("名前");
        e.insert("\r\n🦀 é");
        assert_eq!(e.text(), "名前\n🦀 é");
        assert_eq!(e.line_and_column(), (1, 3));
        e.set("other");
        assert_eq!(e.cursor(), 5, "clamped to the new text");
    }
}
