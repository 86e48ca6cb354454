//! Lines of a text input, read in large chunks into one reusable buffer.
//!
//! This replaces `BufRead::read_line` into a `String` per line, which copied every line and
//! checked its UTF-8 on its own: here a line is a slice of the chunk buffer, found with `memchr`,
//! and only a line that is not parsed from bytes is checked (the caller does it when it needs a
//! `&str`). A line that straddles two chunks is carried to the front of the buffer before the
//! next read, so every line is returned whole.

use std::io::{self, Read};

use super::{LineTooLong, MAX_LINE_BYTES};

/// Bytes asked of the input per read. At least the capacity of the `BufReader`s that
/// [`decompressed`](super::decompressed) puts in front of the file or decoder (1 MiB), so that
/// they hand their input straight to this buffer instead of copying it through their own.
pub const CHUNK_BYTES: usize = 1 << 20;

/// A line, and what was read after it.
#[derive(Copy, Clone, Debug)]
pub struct Line<'a> {
    /// The line, then the rest of the chunk (if the line has a `\n`, it is in there).
    pub text: &'a [u8],
    /// The line's length, without its `\n`.
    pub len: usize,
}

#[cfg(test)]
impl<'a> Line<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        &self.text[..self.len]
    }
}

/// Splits an input into lines, chunk by chunk.
///
/// The buffer holds one chunk plus the partial line carried over from the previous one, so that
/// every read asks for a whole chunk; a line longer than a chunk grows it (lines are not cut, as
/// `read_line` did not cut them). Its size stays below twice (a chunk plus the longest line),
/// and a line longer than [`MAX_LINE_BYTES`] is an error ([`LineTooLong`]), not a reason to read
/// the rest of the input into memory.
pub struct Lines {
    buffer: Vec<u8>,
    /// `buffer[start..end]` is read but not yet returned.
    start: usize,
    end: usize,
    /// `buffer[start..searched]` has no `\n` (a long line is not searched again after each read).
    searched: usize,
    chunk_bytes: usize,
    /// Where `buffer[0]` is in the input.
    buffer_offset_bytes: u64,
    eof: bool,
    /// A read error met while filling the buffer, returned once the complete lines read before
    /// it have been.
    error: Option<io::Error>,
}

impl Lines {
    pub fn new(chunk_bytes: usize) -> Lines {
        assert!(chunk_bytes > 0, "a chunk holds at least one byte");
        Lines { buffer: Vec::new(), start: 0, end: 0, searched: 0, chunk_bytes, buffer_offset_bytes: 0, eof: false, error: None }
    }

    /// The next line without its `\n` (a `\r` before it is kept), the last line of the input
    /// even without a `\n`, then `None`. A read error is returned after the complete lines read
    /// before it, as `read_line` did; the partial line it interrupted is dropped, and after it
    /// (or at the end) every call returns `None`.
    #[inline]
    pub fn next_line(&mut self, input: &mut dyn Read) -> Option<io::Result<Line<'_>>> {
        loop {
            self.check_invariants();
            let from = self.searched.max(self.start);
            if let Some(i) = memchr::memchr(b'\n', &self.buffer[from..self.end]) {
                let len = from + i - self.start;
                if len > MAX_LINE_BYTES {
                    return Some(Err(self.too_long()));
                }
                let text = &self.buffer[self.start..self.end];
                self.start += len + 1;
                return Some(Ok(Line { text, len }));
            }
            self.searched = self.end;
            if self.end - self.start > MAX_LINE_BYTES {
                return Some(Err(self.too_long()));
            }
            if let Some(e) = self.error.take() {
                self.start = self.end;
                self.eof = true;
                return Some(Err(e));
            }
            if self.eof {
                if self.start == self.end {
                    return None;
                }
                let text = &self.buffer[self.start..self.end];
                self.start = self.end;
                return Some(Ok(Line { text, len: text.len() }));
            }
            self.fill(input);
        }
    }

    /// The error for the line at `start`, which ends the lines.
    #[cold]
    fn too_long(&mut self) -> io::Error {
        let offset_bytes = self.buffer_offset_bytes + self.start as u64;
        (self.start, self.eof, self.error) = (self.end, true, None);
        io::Error::new(io::ErrorKind::InvalidData, LineTooLong { offset_bytes })
    }

    /// Moves the partial line to the front and reads one chunk after it (fewer bytes only at
    /// the end of the input or on an error, which is kept for [`next_line`](Self::next_line)).
    #[cold]
    fn fill(&mut self, input: &mut dyn Read) {
        self.buffer.copy_within(self.start..self.end, 0);
        self.buffer_offset_bytes += self.start as u64;
        self.end -= self.start;
        self.searched = self.end;
        self.start = 0;
        let want = self.end + self.chunk_bytes;
        if self.buffer.len() < want {
            // A new zeroed allocation of this size comes zeroed from the OS and is only touched
            // where read into; growing the vector in place would write every zero.
            let mut grown = vec![0; want.max(2 * self.buffer.len())];
            grown[..self.end].copy_from_slice(&self.buffer[..self.end]);
            self.buffer = grown;
        }
        let mut filled = self.end;
        while filled < want {
            match input.read(&mut self.buffer[filled..want]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.error = Some(e);
                    break;
                }
            }
        }
        self.end = filled;
    }

    #[inline]
    fn check_invariants(&self) {
        debug_assert!(self.start <= self.end && self.end <= self.buffer.len() && self.searched <= self.end);
        debug_assert!(self.error.is_none() || !self.eof);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader that hands out at most `step` bytes per call, then fails if told to.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
        fail_at_end: bool,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.bytes.is_empty() && self.fail_at_end {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "corrupt"));
            }
            let n = self.step.min(out.len()).min(self.bytes.len());
            out[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    fn collect(bytes: &[u8], chunk_bytes: usize, step: usize, fail_at_end: bool) -> Vec<Result<Vec<u8>, String>> {
        let mut input = Trickle { bytes, step, fail_at_end };
        let mut lines = Lines::new(chunk_bytes);
        let mut out = Vec::new();
        while let Some(line) = lines.next_line(&mut input) {
            out.push(line.map(|l| l.bytes().to_vec()).map_err(|e| e.to_string()));
        }
        assert!(lines.next_line(&mut input).is_none(), "fused after the end");
        out
    }

    #[test]
    fn lines_are_whole_across_chunks() {
        let text = b"a\nbb\r\n\n\xff\xfe long line that is longer than any chunk\nlast";
        let expected: Vec<Result<Vec<u8>, String>> = text.split(|&b| b == b'\n').map(|l| Ok(l.to_vec())).collect();
        for chunk_bytes in 1..12 {
            for step in [1, 2, 5, 100] {
                assert_eq!(collect(text, chunk_bytes, step, false), expected, "chunk {chunk_bytes} step {step}");
            }
        }
        // A line of several chunks, read in pieces smaller than a chunk.
        let long = [vec![b'7'; MAX_LINE_BYTES - 5], b"\nend".to_vec()].concat();
        assert!(collect(&long, 1000, 100_000, false) == vec![Ok(long[..MAX_LINE_BYTES - 5].to_vec()), Ok(b"end".to_vec())]);
        assert_eq!(collect(b"", 4, 4, false), vec![]);
        assert_eq!(collect(b"x\n", 4, 4, false), vec![Ok(b"x".to_vec())]);
    }

    #[test]
    fn a_line_past_the_limit_is_an_error_naming_where_it_starts_and_ends_the_lines() {
        let text = [b"ab\n".to_vec(), vec![b'7'; MAX_LINE_BYTES + 1], b"\nend\n".to_vec()].concat();
        for chunk_bytes in [1000, CHUNK_BYTES] {
            let out = collect(&text, chunk_bytes, 100_000, false);
            assert_eq!(out.len(), 2, "chunk {chunk_bytes}");
            assert_eq!(out[0], Ok(b"ab".to_vec()));
            assert_eq!(out[1], Err("a line of more than 1 MiB without a line end, from byte 3".to_string()));
        }
    }

    #[test]
    fn a_read_error_follows_the_complete_lines_and_drops_the_partial_one() {
        for chunk_bytes in 1..8 {
            let got = collect(b"one\ntwo\nthr", chunk_bytes, 3, true);
            assert_eq!(got, vec![Ok(b"one".to_vec()), Ok(b"two".to_vec()), Err("corrupt".to_string())], "chunk {chunk_bytes}");
        }
    }
}
