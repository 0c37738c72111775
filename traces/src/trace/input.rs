//! Getting trace text: plain, gzip or zstd (recognized by their magic numbers, not by file
//! names), read line by line with a bound on line length so that no input makes the parser
//! hold more than one line. Bytes and lines only: `parse.rs` builds on it (and opens files).

use std::io::{self, BufRead, BufReader, Read};

/// The longest line accepted (logalloc's lines are under 100 bytes).
pub(crate) const MAX_LINE: usize = 4096;

/// How a trace's bytes are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Plain text.
    None,
    /// gzip (one or more members, as `gzip -c >>` makes).
    Gzip,
    /// zstd (one or more frames).
    Zstd,
}

impl Compression {
    /// Recognizes compressed data by its first bytes.
    pub fn sniff(head: &[u8]) -> Compression {
        match head {
            [0x1f, 0x8b, ..] => Compression::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Compression::Zstd,
            _ => Compression::None,
        }
    }
}

/// Wraps `reader` in the decompressor its first bytes call for, returning the text.
pub fn decoder<'a, R: Read + 'a>(
    mut reader: R,
) -> io::Result<(Compression, Box<dyn BufRead + 'a>)> {
    let mut head = [0u8; 4];
    let mut n = 0;
    while n < head.len() {
        match reader.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let kind = Compression::sniff(&head[..n]);
    let whole = io::Cursor::new(head).take(n as u64).chain(reader);
    Ok((kind, boxed(kind, BufReader::with_capacity(1 << 16, whole))?))
}

fn boxed<'a, R: BufRead + 'a>(kind: Compression, reader: R) -> io::Result<Box<dyn BufRead + 'a>> {
    Ok(match kind {
        Compression::None => Box::new(reader),
        Compression::Gzip => Box::new(BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(reader),
        )),
        Compression::Zstd => Box::new(BufReader::with_capacity(
            1 << 16,
            zstd::stream::read::Decoder::with_buffer(reader)?,
        )),
    })
}

/// One line from a [`LineReader`].
pub(crate) enum Line<'a> {
    /// The line without its `\n`.
    Text(&'a [u8]),
    /// A line longer than the limit (consumed and dropped).
    TooLong,
}

/// Reads lines of at most `max` bytes; a longer line is consumed without being kept.
pub(crate) struct LineReader<R> {
    reader: R,
    buf: Vec<u8>,
    max: usize,
}

impl<R: BufRead> LineReader<R> {
    pub(crate) fn new(reader: R, max: usize) -> Self {
        LineReader {
            reader,
            buf: Vec::with_capacity(256),
            max,
        }
    }

    /// The next line, or `None` at the end of input. A last line without `\n` counts.
    pub(crate) fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        self.buf.clear();
        let mut too_long = false;
        let mut any = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            any = true;
            let (part, used, done) = match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => (&chunk[..i], i + 1, true),
                None => (chunk, chunk.len(), false),
            };
            if !too_long {
                if self.buf.len() + part.len() > self.max {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
            }
            self.reader.consume(used);
            if done {
                break;
            }
        }
        Ok(match (any, too_long) {
            (false, _) => None,
            (true, true) => Some(Line::TooLong),
            (true, false) => Some(Line::Text(&self.buf)),
        })
    }
}
