//! Reading input files with a stated bound, checked before the memory for
//! more is allocated: a whole JSON file (a summary, an anchor, a calibration
//! set, a skill library) up to [`MAX_FILE_BYTES`], and a line of a
//! line-oriented file up to a bound its reader states
//! (docs/formats.md#record-validation). `/dev/zero` or a file without a line
//! break ends in one error instead of exhausting memory.

use std::io::{self, BufRead, Read};
use std::path::Path;

/// The largest JSON file read whole: 64 MiB.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Reads a whole UTF-8 file of at most `max` bytes. A larger one is an
/// [`io::ErrorKind::FileTooLarge`] error saying the bound, after reading no
/// more than `max + 1` bytes of it.
pub fn read_to_string(path: &Path, max: u64) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    // A regular file says its size; a pipe or a device (`/dev/zero`) is read up to the bound.
    if let Ok(meta) = file.metadata() {
        if meta.is_file() && meta.len() > max {
            return Err(too_large(max));
        }
    }
    let mut text = String::new();
    file.take(max + 1).read_to_string(&mut text)?;
    if text.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(text)
}

fn too_large(max: u64) -> io::Error {
    io::Error::new(io::ErrorKind::FileTooLarge, format!("larger than {}, the bound on this file", bytes(max)))
}

/// A bound as messages state it: `1048576 bytes (1 MiB)`, or `9 bytes`.
pub fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{n} bytes ({} MiB)", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// What [`read_line`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// The end of the input; nothing was read.
    End,
    /// A line (its `\n`, if any, included) of at most the bound, in the buffer.
    Read,
    /// A line longer than the bound: the buffer holds its first `max + 1` bytes.
    TooLong,
}

/// Reads one line into `buf` (cleared first), holding at most `max` bytes
/// before its `\n`. A longer line is [`Line::TooLong`] after reading `max + 1`
/// bytes of it: the caller reports it and stops.
pub fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let limit = max as u64 + 1;
    let n = reader.take(limit).read_until(b'\n', buf)?;
    Ok(if n == 0 {
        Line::End
    } else if buf.last() != Some(&b'\n') && n > max {
        Line::TooLong
    } else {
        Line::Read
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_up_to_the_bound_are_read_and_a_longer_one_stops() {
        let mut r = io::Cursor::new(b"abc\nabcd\nabcde".to_vec());
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), Line::Read);
        assert_eq!(buf, b"abc\n");
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), Line::Read);
        assert_eq!(buf, b"abcd\n");
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), Line::TooLong);
        assert_eq!(buf, b"abcde");
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), Line::End);
        // The last line may lack its newline.
        let mut r = io::Cursor::new(b"abcd".to_vec());
        assert_eq!(read_line(&mut r, &mut buf, 4).unwrap(), Line::Read);
    }

    #[test]
    fn an_endless_line_is_refused_after_the_bound() {
        let mut r = io::BufReader::new(io::repeat(b'x'));
        let mut buf = Vec::new();
        assert_eq!(read_line(&mut r, &mut buf, 1 << 20).unwrap(), Line::TooLong);
        assert_eq!(buf.len(), (1 << 20) + 1);
    }

    #[test]
    fn a_whole_file_over_the_bound_is_refused_saying_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_to_string(&path, 10).unwrap(), "0123456789");
        let e = read_to_string(&path, 9).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert_eq!(e.to_string(), "larger than 9 bytes, the bound on this file");
        if Path::new("/dev/zero").exists() {
            let e = read_to_string(Path::new("/dev/zero"), MAX_FILE_BYTES).unwrap_err();
            assert_eq!(e.to_string(), "larger than 67108864 bytes (64 MiB), the bound on this file");
        }
    }
}
