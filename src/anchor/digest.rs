//! The normalised content digest of an anchored span.
//!
//! A file is split into lines on LF; a final LF ends the last line rather than starting an
//! empty one, so `"a\nb\n"` and `"a\nb"` both have two lines and an empty file has none.
//! Each line loses its trailing spaces, tabs and CRs (so CRLF files and editors that strip
//! whitespace do not break carry-over), and every kept line is followed by one LF. The digest
//! of lines `start..=end` (1-based) is the lowercase hex SHA-256 of those normalised lines.
//!
//! The normalised text is kept as one buffer with line offsets, so any span is a contiguous
//! slice: hashing a window costs its bytes, with no copying.

use sha2::{Digest, Sha256};

/// Why a digest could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    /// The bytes hold a NUL byte: not text, so lines mean nothing.
    #[error("binary content (a NUL byte at offset {offset}); anchors cover text files only")]
    Binary { offset: usize },
    /// The span asked for is not inside the file.
    #[error("lines {start}-{end} are out of bounds: the file has {lines} line(s)")]
    OutOfBounds { start: u64, end: u64, lines: usize },
    /// `start` is 0 or greater than `end`.
    #[error("lines {start}-{end} are not a range: lines count from 1 and start <= end")]
    BadRange { start: u64, end: u64 },
}

/// A text file after normalisation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Normalised {
    /// Every normalised line followed by LF.
    buf: Vec<u8>,
    /// `offsets[i]` is where line `i + 1` starts; one more entry marks the end.
    offsets: Vec<usize>,
}

impl Normalised {
    /// Normalises `bytes`; refuses binary content (any NUL byte, git's own test for text).
    pub fn new(bytes: &[u8]) -> Result<Normalised, DigestError> {
        Normalised::from_vec(bytes.to_vec())
    }

    /// [`Normalised::new`] of bytes it may keep: normalising only takes bytes away (and may
    /// end the last line), so the text is normalised where it lies, with no second copy.
    pub fn from_vec(mut bytes: Vec<u8>) -> Result<Normalised, DigestError> {
        if let Some(offset) = bytes.iter().position(|&b| b == 0) {
            return Err(DigestError::Binary { offset });
        }
        let mut offsets = vec![0];
        if bytes.is_empty() {
            return Ok(Normalised {
                buf: bytes,
                offsets,
            });
        }
        let body = bytes.len() - usize::from(bytes.ends_with(b"\n"));
        // Each line is moved down to `out`, its trailing blanks left behind, then ended by
        // one LF: what is written never passes what has been read.
        let (mut read, mut out) = (0, 0);
        loop {
            let end = bytes[read..body]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(body, |i| read + i);
            let keep = bytes[read..end]
                .iter()
                .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
                .map_or(0, |i| i + 1);
            bytes.copy_within(read..read + keep, out);
            out += keep;
            if out < bytes.len() {
                bytes[out] = b'\n';
            } else {
                bytes.push(b'\n');
            }
            out += 1;
            offsets.push(out);
            if end >= body {
                break;
            }
            read = end + 1;
        }
        bytes.truncate(out);
        Ok(Normalised {
            buf: bytes,
            offsets,
        })
    }

    /// Number of lines.
    pub fn lines(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The normalised bytes of lines `start..=end` (1-based), checked.
    pub fn span(&self, start: u64, end: u64) -> Result<&[u8], DigestError> {
        if start == 0 || start > end {
            return Err(DigestError::BadRange { start, end });
        }
        let lines = self.lines();
        if end > lines as u64 {
            return Err(DigestError::OutOfBounds { start, end, lines });
        }
        // Both fit in usize: end <= lines.
        let (s, e) = (start as usize, end as usize);
        Ok(&self.buf[self.offsets[s - 1]..self.offsets[e]])
    }

    /// Digest of lines `start..=end` (1-based).
    pub fn span_digest(&self, start: u64, end: u64) -> Result<String, DigestError> {
        self.span(start, end).map(hex_sha256)
    }

    /// Digest of the whole file.
    pub fn whole_digest(&self) -> String {
        hex_sha256(&self.buf)
    }

    /// Raw SHA-256 of the window of `len` lines starting at 0-based line `first`, or of the
    /// whole file for `None`; `None` when the window is not inside the file.
    pub(crate) fn raw_digest(&self, window: Option<(usize, usize)>) -> Option<[u8; 32]> {
        let bytes = match window {
            None => &self.buf[..],
            Some((first, len)) => {
                let end = first.checked_add(len)?;
                &self.buf[*self.offsets.get(first)?..*self.offsets.get(end)?]
            }
        };
        Some(Sha256::digest(bytes).into())
    }
}

/// The content digest of `bytes`: the whole file, or lines `start..=end` when a range is given.
pub fn content_digest(bytes: &[u8], range: Option<(u64, u64)>) -> Result<String, DigestError> {
    let n = Normalised::new(bytes)?;
    match range {
        None => Ok(n.whole_digest()),
        Some((s, e)) => n.span_digest(s, e),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(s: &str) -> String {
        hex::encode(Sha256::digest(s.as_bytes()))
    }

    #[test]
    fn digest_final_lf_ends_the_last_line() {
        assert_eq!(content_digest(b"a\nb\n", None), Ok(sha("a\nb\n")));
        assert_eq!(content_digest(b"a\nb", None), Ok(sha("a\nb\n")));
        assert_eq!(Normalised::new(b"a\nb\n").map(|n| n.lines()), Ok(2));
        // A blank last line is a line of its own.
        assert_eq!(Normalised::new(b"a\n\n").map(|n| n.lines()), Ok(2));
        assert_eq!(content_digest(b"a\n\n", None), Ok(sha("a\n\n")));
    }

    #[test]
    fn digest_empty_file_has_no_lines() {
        let n = Normalised::new(b"").unwrap();
        assert_eq!(n.lines(), 0);
        assert_eq!(n.whole_digest(), sha(""));
        assert_eq!(
            n.span_digest(1, 1),
            Err(DigestError::OutOfBounds {
                start: 1,
                end: 1,
                lines: 0
            })
        );
        // A lone LF is one empty line.
        assert_eq!(content_digest(b"\n", None), Ok(sha("\n")));
    }

    #[test]
    fn digest_strips_trailing_spaces_tabs_and_cr() {
        let crlf = b"fn a() {  \r\n\tx();\t\r\n}\r\n";
        assert_eq!(content_digest(crlf, None), Ok(sha("fn a() {\n\tx();\n}\n")));
        assert_eq!(content_digest(crlf, Some((2, 2))), Ok(sha("\tx();\n")));
        // Leading whitespace and inner spaces are content.
        assert_ne!(content_digest(b"  x\n", None), content_digest(b"x\n", None));
        assert_ne!(
            content_digest(b"a b\n", None),
            content_digest(b"ab\n", None)
        );
        // A lone CR inside a line is content too; only trailing ones go.
        assert_eq!(content_digest(b"a\rb\r", None), Ok(sha("a\rb\n")));
    }

    #[test]
    fn digest_span_at_end_without_final_newline() {
        let text = b"one\ntwo\nthree";
        assert_eq!(content_digest(text, Some((2, 3))), Ok(sha("two\nthree\n")));
        assert_eq!(content_digest(text, Some((3, 3))), Ok(sha("three\n")));
    }

    #[test]
    fn digest_refuses_bad_ranges_and_binary() {
        assert_eq!(
            content_digest(b"a\nb\n", Some((2, 3))),
            Err(DigestError::OutOfBounds {
                start: 2,
                end: 3,
                lines: 2
            })
        );
        assert_eq!(
            content_digest(b"a\n", Some((0, 1))),
            Err(DigestError::BadRange { start: 0, end: 1 })
        );
        assert_eq!(
            content_digest(b"a\n", Some((2, 1))),
            Err(DigestError::BadRange { start: 2, end: 1 })
        );
        assert_eq!(
            content_digest(b"ab\0c", None),
            Err(DigestError::Binary { offset: 2 })
        );
    }

    #[test]
    fn digest_windows_are_spans() {
        let n = Normalised::new(b"a\nb \nc\nd").unwrap();
        for first in 0..4 {
            for len in 1..=(4 - first) {
                assert_eq!(
                    n.raw_digest(Some((first, len))).map(hex::encode),
                    n.span_digest(first as u64 + 1, (first + len) as u64).ok()
                );
            }
        }
        assert_eq!(n.raw_digest(Some((3, 2))), None);
        assert_eq!(n.raw_digest(None).map(hex::encode), Some(n.whole_digest()));
    }

    /// Normalisation line by line into a new buffer: the plain reading of the rule, which
    /// normalising in place must match.
    fn by_lines(bytes: &[u8]) -> Option<(Vec<u8>, Vec<usize>)> {
        if bytes.contains(&0) {
            return None;
        }
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let (mut buf, mut offsets) = (Vec::new(), vec![0]);
        if !bytes.is_empty() {
            for line in body.split(|&b| b == b'\n') {
                let keep = line
                    .iter()
                    .rposition(|&b| !matches!(b, b' ' | b'\t' | b'\r'))
                    .map_or(0, |i| i + 1);
                buf.extend_from_slice(&line[..keep]);
                buf.push(b'\n');
                offsets.push(buf.len());
            }
        }
        Some((buf, offsets))
    }

    proptest::proptest! {
        #[test]
        fn digest_in_place_normalising_is_line_by_line(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![b'a', b' ', b'\t', b'\r', b'\n', b'\n', 0u8]),
                0..40,
            )
        ) {
            let got = Normalised::from_vec(bytes.clone()).ok().map(|n| (n.buf, n.offsets));
            proptest::prop_assert_eq!(got, by_lines(&bytes));
        }
    }
}
