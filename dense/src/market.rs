//! Matrix Market input: `%%MatrixMarket matrix array real general` (column-major values) and
//! `%%MatrixMarket matrix coordinate real general` (1-based `i j value` triples, each entry
//! at most once); `integer` values are read as reals. Only square matrices are read.
//!
//! Reading is in two steps so that a caller can refuse a matrix too large for its memory
//! before anything is allocated: [`MatrixFile::open`] reads the header and the size line,
//! [`MatrixFile::read`] the entries. Every error names the file and the line, and no input
//! makes the reader panic or allocate more than the size line announces (sizes use checked
//! arithmetic; lines are limited to [`MAX_LINE`] bytes). Entries must be finite: a NaN or an
//! infinity would poison every result computed from the matrix.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

/// The longest line read, in bytes: far more than any Matrix Market line needs, small
/// enough that a file without line breaks cannot exhaust memory.
pub const MAX_LINE: usize = 1 << 20;

/// What is wrong with a Matrix Market file, and where: `file:line: message`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", .line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct Error {
    /// The file (its path, or a name given to [`MatrixFile::from_reader`]).
    pub file: String,
    /// The 1-based line, when the problem is on one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

/// How the entries are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Every entry, column by column.
    Array,
    /// `row col value` triples; absent entries are zero.
    Coordinate {
        /// Entries the size line announces.
        entries: usize,
    },
}

/// A Matrix Market file whose header and size line have been read.
#[derive(Debug)]
pub struct MatrixFile<R> {
    source: R,
    file: String,
    line: usize,
    buffer: Vec<u8>,
    size_line: usize,
    n: usize,
    format: Format,
}

impl MatrixFile<BufReader<File>> {
    /// Opens `path` and reads its header and size line.
    ///
    /// # Errors
    /// The file cannot be read, or its header or size line is malformed or unsupported.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let file = path.display().to_string();
        let opened = File::open(path).map_err(|e| Error { file: file.clone(), line: None, message: e.to_string() })?;
        MatrixFile::from_reader(&file, BufReader::new(opened))
    }
}

impl<R: BufRead> MatrixFile<R> {
    /// Reads the header and the size line from `source`; `file` names it in errors.
    ///
    /// # Errors
    /// As [`MatrixFile::open`].
    pub fn from_reader(file: &str, source: R) -> Result<Self, Error> {
        let mut m = MatrixFile {
            source,
            file: file.to_string(),
            line: 0,
            buffer: Vec::new(),
            size_line: 0,
            n: 0,
            format: Format::Array,
        };
        let header = m.next_line()?.ok_or_else(|| m.error(Some(1), "empty file".into()))?;
        let coordinate = parse_header(&header).map_err(|msg| m.error(Some(1), msg))?;
        let size = m.next_data_line()?.ok_or_else(|| m.error(Some(m.line.max(1)), "no size line".into()))?;
        m.size_line = m.line;
        (m.n, m.format) = parse_size(&size, coordinate).map_err(|msg| m.error(Some(m.size_line), msg))?;
        Ok(m)
    }

    /// The order n of the (square) matrix.
    pub fn order(&self) -> usize {
        self.n
    }

    /// How the entries are stored.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The bytes [`read`](Self::read) allocates: the n×n matrix, and for the coordinate
    /// format one bit per entry to find duplicates.
    pub fn bytes_needed(&self) -> u64 {
        let entries = (self.n as u64).saturating_mul(self.n as u64);
        let seen = match self.format {
            Format::Array => 0,
            Format::Coordinate { .. } => entries.div_ceil(64).saturating_mul(8),
        };
        entries.saturating_mul(8).saturating_add(seen)
    }

    /// Reads the entries: the n×n matrix, column-major.
    ///
    /// # Errors
    /// A malformed, non-finite, duplicate or out-of-range entry, too few or too many entries,
    /// or a read error.
    pub fn read(mut self) -> Result<Vec<f64>, Error> {
        let (n, total) = (self.n, self.n * self.n); // parse_size checked the product
        let mut a = vec![0.0; total];
        let mut count = 0usize;
        match self.format {
            Format::Array => {
                while let Some(l) = self.next_data_line()? {
                    for w in l.split_whitespace() {
                        if count == total {
                            return Err(self.here(format!("more than the {total} entries of a {n}x{n} matrix")));
                        }
                        a[count] = finite(w).map_err(|msg| self.here(msg))?;
                        count += 1;
                    }
                }
                if count != total {
                    let msg = format!("{count} entries for a {n}x{n} matrix ({total} expected)");
                    return Err(self.error(Some(self.size_line), msg));
                }
            }
            Format::Coordinate { entries } => {
                let mut seen = vec![0u64; total.div_ceil(64)];
                while let Some(l) = self.next_data_line()? {
                    if count == entries {
                        let line = self.size_line;
                        return Err(
                            self.here(format!("more entries than the {entries} the size line (line {line}) announces"))
                        );
                    }
                    let (i, j, v) = parse_triple(&l, n).map_err(|msg| self.here(msg))?;
                    let k = j * n + i;
                    if seen[k / 64] & (1 << (k % 64)) != 0 {
                        return Err(self.here(format!("entry ({}, {}) is given twice", i + 1, j + 1)));
                    }
                    seen[k / 64] |= 1 << (k % 64);
                    a[k] = v;
                    count += 1;
                }
                if count != entries {
                    let msg = format!("{count} entries, the size line announces {entries}");
                    return Err(self.error(Some(self.size_line), msg));
                }
            }
        }
        Ok(a)
    }

    fn error(&self, line: Option<usize>, message: String) -> Error {
        Error { file: self.file.clone(), line, message }
    }

    /// An error on the line just read.
    fn here(&self, message: String) -> Error {
        self.error(Some(self.line), message)
    }

    /// The next line, trimmed; `None` at the end of the file.
    fn next_line(&mut self) -> Result<Option<String>, Error> {
        self.buffer.clear();
        let limit = MAX_LINE as u64 + 1;
        let read = (&mut self.source).take(limit).read_until(b'\n', &mut self.buffer);
        let read = read.map_err(|e| self.error(Some(self.line + 1), e.to_string()))?;
        if read == 0 {
            return Ok(None);
        }
        self.line += 1;
        if self.buffer.len() > MAX_LINE {
            return Err(self.here(format!("the line is longer than {MAX_LINE} bytes")));
        }
        let text = std::str::from_utf8(&self.buffer).map_err(|_| self.here("not UTF-8 text".into()))?;
        Ok(Some(text.trim().to_string()))
    }

    /// The next line that is neither blank nor a comment.
    fn next_data_line(&mut self) -> Result<Option<String>, Error> {
        while let Some(l) = self.next_line()? {
            if !(l.is_empty() || l.starts_with('%')) {
                return Ok(Some(l));
            }
        }
        Ok(None)
    }
}

/// Checks the banner; returns true for the coordinate format.
fn parse_header(header: &str) -> Result<bool, String> {
    let words: Vec<String> = header.split_whitespace().map(str::to_lowercase).collect();
    let expected = "expected \"%%MatrixMarket matrix <array|coordinate> real general\"";
    if words.first().map(String::as_str) != Some("%%matrixmarket") {
        return Err(format!("not a Matrix Market file ({expected})"));
    }
    let [_, object, format, field, symmetry] = &words[..] else {
        let plural = if words.len() == 1 { "" } else { "s" };
        return Err(format!("the header has {} word{plural}, {expected}", words.len()));
    };
    if object != "matrix" {
        return Err(format!("unsupported object \"{object}\": only matrices are read"));
    }
    let coordinate = match format.as_str() {
        "array" => false,
        "coordinate" => true,
        other => return Err(format!("unknown format \"{other}\" (expected array or coordinate)")),
    };
    if !matches!(field.as_str(), "real" | "integer") || symmetry != "general" {
        return Err(format!(
            "unsupported kind \"{field} {symmetry}\": only \"real general\" (or \"integer general\") matrices are read"
        ));
    }
    Ok(coordinate)
}

/// Reads the size line: the order n and the format (with the announced entry count).
fn parse_size(size: &str, coordinate: bool) -> Result<(usize, Format), String> {
    let dims: Vec<usize> = size
        .split_whitespace()
        .map(|w| w.parse().map_err(|_| format!("\"{w}\" is not a dimension (a whole number)")))
        .collect::<Result<_, _>>()?;
    let (rows, cols, entries) = match (coordinate, &dims[..]) {
        (false, &[r, c]) => (r, c, None),
        (true, &[r, c, e]) => (r, c, Some(e)),
        (false, _) => return Err("expected \"rows cols\" (array format)".into()),
        (true, _) => return Err("expected \"rows cols entries\" (coordinate format)".into()),
    };
    if rows != cols {
        return Err(format!("the matrix is {rows}x{cols}: only square matrices are read"));
    }
    let n = rows;
    if n == 0 {
        return Err("the matrix is 0x0: nothing to read".into());
    }
    let Some(total) = n.checked_mul(n).filter(|t| t.checked_mul(8).is_some()) else {
        return Err(format!("a {n}x{n} matrix has more entries than this machine can address"));
    };
    match entries {
        None => Ok((n, Format::Array)),
        Some(e) if e > total => Err(format!("{e} entries announced, but a {n}x{n} matrix has {total}")),
        Some(entries) => Ok((n, Format::Coordinate { entries })),
    }
}

/// A finite number.
fn finite(w: &str) -> Result<f64, String> {
    match w.parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        Ok(_) => Err(format!("\"{w}\" is not a finite number")),
        Err(_) => Err(format!("\"{w}\" is not a number")),
    }
}

/// A coordinate entry `row col value`, as 0-based indices and the value.
fn parse_triple(line: &str, n: usize) -> Result<(usize, usize, f64), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [i, j, v] = words[..] else { return Err("expected \"row col value\"".into()) };
    let index = |s: &str| match s.parse::<usize>() {
        Ok(x) if (1..=n).contains(&x) => Ok(x - 1),
        Ok(_) => Err(format!("index {s} out of range 1..={n}")),
        Err(_) => Err(format!("\"{s}\" is not an index")),
    };
    Ok((index(i)?, index(j)?, finite(v)?))
}

/// Reads a square real matrix from `path`; returns its order n and its entries,
/// column-major. Callers that must check memory first use [`MatrixFile`].
///
/// # Errors
/// As [`MatrixFile::open`] and [`MatrixFile::read`].
pub fn read_square(path: &Path) -> Result<(usize, Vec<f64>), Error> {
    let file = MatrixFile::open(path)?;
    let n = file.order();
    Ok((n, file.read()?))
}

/// Parses a square real matrix from `text` (named "input" in errors).
///
/// # Errors
/// As [`MatrixFile::from_reader`] and [`MatrixFile::read`].
pub fn parse_square(text: &str) -> Result<(usize, Vec<f64>), Error> {
    let file = MatrixFile::from_reader("input", text.as_bytes())?;
    let n = file.order();
    Ok((n, file.read()?))
}

#[cfg(test)]
mod tests {
    use super::parse_square;

    fn err(text: &str) -> (Option<usize>, String) {
        let e = parse_square(text).unwrap_err();
        (e.line, e.message)
    }

    #[test]
    fn reads_array_and_coordinate() {
        let (n, a) = parse_square("%%MatrixMarket matrix array real general\n% c\n2 2\n3\n6\n5\n7\n").unwrap();
        assert_eq!((n, a), (2, vec![3.0, 6.0, 5.0, 7.0]));
        let (n, a) = parse_square("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 4.5\n2 1 -1\n").unwrap();
        assert_eq!((n, a), (2, vec![4.5, -1.0, 0.0, 0.0]));
        let (n, a) = parse_square("%%MatrixMarket Matrix Array Integer General\n1 1\n7").unwrap();
        assert_eq!((n, a), (1, vec![7.0]));
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(err("hello\n").0, Some(1));
        assert!(err("%%MatrixMarket matrix array real general\n2 3\n").1.contains("2x3: only square"));
        assert_eq!(
            err("%%MatrixMarket matrix array real general\n2 2\n1\nx\n"),
            (Some(4), "\"x\" is not a number".into())
        );
        assert!(err("%%MatrixMarket matrix array real general\n2 2\n1 2 3\n").1.contains("3 entries"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n").1.contains("out of range"));
        assert!(err("%%MatrixMarket matrix array complex general\n").1.contains("only \"real general\""));
        let e = parse_square("%%MatrixMarket matrix array real general\n2 2\n1\nx\n").unwrap_err();
        assert_eq!(e.to_string(), "input:4: \"x\" is not a number");
    }

    #[test]
    fn malformed_headers_and_sizes_are_errors_not_panics() {
        let header = |h: &str| err(&format!("{h}\n1 1\n1\n"));
        assert!(header("%%MatrixMarket matrix").1.contains("2 words"), "{:?}", header("%%MatrixMarket matrix"));
        assert!(header("%%MatrixMarket").1.contains("1 word,"));
        assert!(header("%%MatrixMarket vector array real general").1.contains("only matrices"));
        assert!(header("%%MatrixMarket matrix array pattern general").1.contains("\"pattern general\""));
        assert!(header("%%MatrixMarket matrix array real symmetric").1.contains("\"real symmetric\""));
        assert!(header("%%MatrixMarket matrix dense real general").1.contains("unknown format"));
        assert_eq!(err(""), (Some(1), "empty file".into()));
        assert!(err("%%MatrixMarket matrix array real general\n% only a comment\n").1.contains("no size line"));
        let big = "%%MatrixMarket matrix coordinate real general\n4294967296 4294967296 1\n1 1 1\n";
        assert!(err(big).1.contains("more entries than this machine can address"), "{:?}", err(big));
        let (line, msg) = err("%%MatrixMarket matrix array real general\n99999999999999999999999 1\n");
        assert_eq!(line, Some(2));
        assert!(msg.contains("not a dimension"), "{msg}");
        assert!(err("%%MatrixMarket matrix array real general\n0 0\n").1.contains("0x0"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2\n").1.contains("rows cols entries"));
        assert!(err("%%MatrixMarket matrix array real general\n2 2 4\n").1.contains("rows cols\""));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 5\n").1.contains("5 entries announced"));
    }

    #[test]
    fn non_finite_duplicate_and_surplus_entries_are_refused() {
        for bad in ["nan", "NaN", "inf", "-Infinity", "1e400"] {
            let (line, msg) = err(&format!("%%MatrixMarket matrix array real general\n1 1\n{bad}\n"));
            assert_eq!(line, Some(3));
            assert!(msg.contains("not a finite number"), "{bad}: {msg}");
        }
        let coord = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 nan\n";
        assert_eq!(err(coord), (Some(3), "\"nan\" is not a finite number".into()));
        let twice = "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 1\n1 2 3\n";
        assert_eq!(err(twice), (Some(4), "entry (1, 2) is given twice".into()));
        let surplus = "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1\n2 2 3\n";
        assert_eq!(err(surplus).0, Some(4));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 1\n").1.contains("1 entries"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2 1 0\n").1.contains("row col value"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 0 1\n").1.contains("out of range"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 -1 1\n").1.contains("not an index"));
        assert!(err("%%MatrixMarket matrix array real general\n1 1\n1\n2\n").1.contains("more than the 1 entries"));
    }

    #[test]
    fn long_lines_and_binary_data_are_errors() {
        let long = format!("%%MatrixMarket matrix array real general\n1 1\n{}\n", "1".repeat(super::MAX_LINE + 5));
        assert!(err(&long).1.contains("longer than"));
        let bytes = b"%%MatrixMarket matrix array real general\n1 1\n\xff\xfe\n";
        let e = super::MatrixFile::from_reader("bin", &bytes[..]).unwrap().read().unwrap_err();
        assert_eq!((e.line, e.message.as_str()), (Some(3), "not UTF-8 text"));
    }
}
