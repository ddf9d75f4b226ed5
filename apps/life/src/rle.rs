//! Patterns in the standard run-length encoded format (RLE): `#` comment lines, a header
//! `x = <width>, y = <height>, rule = B3/S23`, then runs such as `3o2b$` (`o` live, `b` dead,
//! `$` end of row, each optionally preceded by a count) up to a closing `!`.
//!
//! Errors name the line: `line 4: unexpected character 'z'`. Every count and position is
//! checked: a run that would end past the header's width, or a count that overflows, is an
//! error, never a wrapped number. A pattern holds its runs, not its cells, so its memory
//! follows the length of the text, whatever size the header and the counts claim.

use std::fmt;
use std::io::{self, Read, Write};
use std::ops::Range;
use std::path::Path;

/// Largest RLE file read (a parsed pattern takes up to about 16 bytes per byte of text).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// A pattern: its bounding box and its live cells, as runs, row by row.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Pattern {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// The rows that have live cells, increasing, each with its runs of live cells
    /// (increasing, non-empty, not touching: `0..2` and `2..3` are stored as `0..3`).
    rows: Vec<(usize, Vec<Range<usize>>)>,
}

impl Pattern {
    /// A pattern of `height` rows given as strings of `o` (live) and `.` (dead).
    ///
    /// ```
    /// let glider = dps_life::rle::Pattern::from_rows(&[".o.", "..o", "ooo"]);
    /// assert_eq!((glider.width, glider.height, glider.population()), (3, 3, 5));
    /// ```
    pub fn from_rows(rows: &[&str]) -> Pattern {
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let mut p = Pattern { width, height: rows.len(), rows: Vec::new() };
        for (y, row) in rows.iter().enumerate() {
            for (x, c) in row.bytes().enumerate() {
                if c == b'o' {
                    p.push_run(y, x..x + 1);
                }
            }
        }
        p
    }

    /// Adds a run of live cells at the end of row `y` (`y` at least the last row's, `run`
    /// right of the row's last run).
    fn push_run(&mut self, y: usize, run: Range<usize>) {
        if run.is_empty() {
            return;
        }
        match self.rows.last_mut() {
            Some((last, runs)) if *last == y => match runs.last_mut() {
                Some(prev) if prev.end == run.start => prev.end = run.end,
                _ => runs.push(run),
            },
            _ => self.rows.push((y, vec![run])),
        }
    }

    /// The runs of live cells of row `y`, left to right.
    pub fn runs_in_row(&self, y: usize) -> &[Range<usize>] {
        match self.rows.binary_search_by_key(&y, |(row, _)| *row) {
            Ok(i) => &self.rows[i].1,
            Err(_) => &[],
        }
    }

    /// Columns of the live cells of row `y`.
    pub fn live_in_row(&self, y: usize) -> impl Iterator<Item = usize> + '_ {
        self.runs_in_row(y).iter().flat_map(Clone::clone)
    }

    /// The rows that have live cells, top to bottom, with their runs.
    pub fn live_rows(&self) -> impl Iterator<Item = (usize, &[Range<usize>])> + '_ {
        self.rows.iter().map(|(y, runs)| (*y, runs.as_slice()))
    }

    /// Number of live cells (saturating: no world that large fits in memory).
    pub fn population(&self) -> u64 {
        self.rows.iter().flat_map(|(_, runs)| runs).fold(0u64, |sum, run| sum.saturating_add(run.len() as u64))
    }
}

/// What is wrong with an RLE text, and on which line (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RleError {
    /// Line of the error.
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for RleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for RleError {}

fn err(line: usize, message: impl Into<String>) -> RleError {
    RleError { line, message: message.into() }
}

/// Reads an RLE file; returns the pattern and the line number of its header.
///
/// # Errors
/// If the file cannot be read, is larger than [`MAX_FILE_BYTES`], is not UTF-8, or is not
/// valid RLE for B3/S23; the message starts with the path (and `:line N:` for the text).
pub fn read(path: &Path) -> anyhow::Result<(Pattern, usize)> {
    let cannot = |e: io::Error| anyhow::anyhow!("{}: cannot read: {e}", path.display());
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    // `take`: a device such as /dev/zero, or a huge file, is refused instead of read forever.
    file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(cannot)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        anyhow::bail!("{}: larger than {} MiB, too large for an RLE pattern", path.display(), MAX_FILE_BYTES >> 20);
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
        anyhow::anyhow!("{}:line {line}: not UTF-8 text", path.display())
    })?;
    parse(&text).map_err(|e| anyhow::anyhow!("{}:{e}", path.display()))
}

/// Parses an RLE text; returns the pattern and the line number of its header.
///
/// # Errors
/// A missing or malformed header, a rule other than B3/S23, an unknown character, runs
/// wider or taller than the header says, a count that overflows, or no closing `!`.
///
/// ```
/// let (p, header) = dps_life::rle::parse("#N Glider\nx = 3, y = 3, rule = B3/S23\nbob$2bo$3o!\n").unwrap();
/// assert_eq!((p.width, p.height, p.population(), header), (3, 3, 5, 2));
/// ```
pub fn parse(text: &str) -> Result<(Pattern, usize), RleError> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let (header_line, header) = loop {
        match lines.next() {
            None => return Err(err(text.lines().count().max(1), "no header line `x = <width>, y = <height>`")),
            Some((_, l)) if l.is_empty() || l.starts_with('#') => continue,
            Some(h) => break h,
        }
    };
    let (width, height) = parse_header(header_line, header)?;
    let mut p = Pattern { width, height, rows: Vec::new() };
    let (mut x, mut y) = (0usize, 0usize);
    let mut count: Option<usize> = None;
    let mut last_line = header_line;
    for (n, line) in lines {
        last_line = n;
        if line.starts_with('#') {
            continue;
        }
        for c in line.chars() {
            if let Some(digit) = c.to_digit(10) {
                let value = count.unwrap_or(0).checked_mul(10).and_then(|v| v.checked_add(digit as usize));
                count = Some(value.ok_or_else(|| err(n, "run count overflows"))?);
                continue;
            }
            if c.is_whitespace() {
                continue;
            }
            let run = count.take().unwrap_or(1);
            if run == 0 {
                // "0$" would go back to the start of the same row, and "0o" means nothing.
                return Err(err(n, format!("a run count of 0 before {c:?}")));
            }
            match c {
                'b' | '.' | 'o' | 'A' => {
                    if y >= height {
                        return Err(err(n, format!("more rows than the header's y = {height}")));
                    }
                    let end = x.checked_add(run).filter(|&end| end <= width);
                    let Some(end) = end else {
                        return Err(err(n, format!("row {} is wider than the header's x = {width}", y + 1)));
                    };
                    if c == 'o' || c == 'A' {
                        p.push_run(y, x..end);
                    }
                    x = end;
                }
                '$' => {
                    y = y.checked_add(run).ok_or_else(|| err(n, "row count overflows"))?;
                    x = 0;
                }
                '!' => return Ok((p, header_line)),
                c => return Err(err(n, format!("unexpected character {c:?} (runs use b, o, $ and !)"))),
            }
        }
    }
    Err(err(last_line, "the pattern does not end with '!'"))
}

/// Parses `x = 3, y = 3, rule = B3/S23` into (width, height).
fn parse_header(n: usize, header: &str) -> Result<(usize, usize), RleError> {
    let (mut width, mut height) = (None, None);
    for field in header.split(',') {
        let Some((key, value)) = field.split_once('=') else {
            return Err(err(n, format!("expected `key = value` in the header, found {:?}", field.trim())));
        };
        let value = value.trim();
        let number = |what: &str| {
            value.parse::<usize>().map_err(|e| {
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow => "is too large".to_string(),
                    _ => "is not a non-negative integer".to_string(),
                };
                err(n, format!("{what} = {value:?} {why}"))
            })
        };
        match key.trim() {
            "x" => width = Some(number("x")?),
            "y" => height = Some(number("y")?),
            "rule" => {
                let rule: String =
                    value.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_uppercase();
                if rule != "B3/S23" && rule != "23/3" {
                    return Err(err(n, format!("rule {value} is not supported: only B3/S23 (Conway's Life)")));
                }
            }
            other => return Err(err(n, format!("unknown header field {other:?} (expected x, y and rule)"))),
        }
    }
    match (width, height) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(err(n, "the header must give x = <width> and y = <height>")),
    }
}

/// Writes RLE lines of at most 70 characters, breaking between runs, never inside one (a
/// count stays with its letter).
struct Encoder<'w> {
    out: &'w mut dyn Write,
    line: String,
    /// The row the runs go to; `$` tokens move it down.
    y: usize,
    /// The column after the last run of the row.
    x: usize,
}

impl<'w> Encoder<'w> {
    fn new(out: &'w mut dyn Write, width: usize, height: usize) -> io::Result<Encoder<'w>> {
        writeln!(out, "x = {width}, y = {height}, rule = B3/S23")?;
        Ok(Encoder { out, line: String::new(), y: 0, x: 0 })
    }

    fn token(&mut self, count: usize, c: char) -> io::Result<()> {
        let token = if count > 1 { format!("{count}{c}") } else { c.to_string() };
        if self.line.len() + token.len() > 70 {
            writeln!(self.out, "{}", self.line)?;
            self.line.clear();
        }
        self.line.push_str(&token);
        Ok(())
    }

    /// The runs of live cells of row `y` (below every row written so far).
    fn row(&mut self, y: usize, runs: impl IntoIterator<Item = Range<usize>>) -> io::Result<()> {
        for run in runs {
            if y > self.y {
                self.token(y - self.y, '$')?;
                (self.y, self.x) = (y, 0);
            }
            if run.start > self.x {
                self.token(run.start - self.x, 'b')?;
            }
            self.token(run.len(), 'o')?;
            self.x = run.end;
        }
        Ok(())
    }

    fn finish(mut self) -> io::Result<()> {
        self.token(1, '!')?;
        writeln!(self.out, "{}", self.line)
    }
}

/// Encodes a pattern as RLE (lines of at most 70 characters).
pub fn to_rle(p: &Pattern) -> String {
    let mut out = Vec::new();
    let write = |out: &mut Vec<u8>| -> io::Result<()> {
        let mut e = Encoder::new(out, p.width, p.height)?;
        for (y, runs) in p.live_rows() {
            e.row(y, runs.iter().cloned())?;
        }
        e.finish()
    };
    write(&mut out).expect("writing to memory does not fail");
    String::from_utf8(out).expect("RLE is ASCII")
}

/// Writes `height` packed rows of `width` cells (`words = ceil(width / 64)` each, bits past
/// `width` clear) as RLE, row by row: no copy of the world is made.
///
/// # Errors
/// The first failed write.
pub fn write_packed(out: &mut dyn Write, width: usize, height: usize, cells: &[u64]) -> io::Result<()> {
    let words = width.div_ceil(64);
    let mut e = Encoder::new(out, width, height)?;
    for (y, row) in cells.chunks(words.max(1)).take(height).enumerate() {
        e.row(y, packed_runs(row, width))?;
    }
    e.finish()
}

/// The runs of live cells of a packed row, left to right.
fn packed_runs(row: &[u64], width: usize) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut x = 0;
    std::iter::from_fn(move || {
        let start = next_cell(row, x, width, true);
        if start >= width {
            return None;
        }
        x = next_cell(row, start, width, false);
        Some(start..x)
    })
}

/// The first column at or after `from` whose cell is `live` (`width` if none).
fn next_cell(row: &[u64], from: usize, width: usize, live: bool) -> usize {
    if from >= width {
        return width;
    }
    let mut mask = u64::MAX << (from % 64);
    for (i, &word) in row.iter().enumerate().skip(from / 64) {
        let hits = if live { word } else { !word } & mask;
        if hits != 0 {
            return (i * 64 + hits.trailing_zeros() as usize).min(width);
        }
        mask = u64::MAX;
    }
    width
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const GOSPER: &str = "#N Gosper glider gun\nx = 36, y = 9, rule = B3/S23\n24bo$22bobo$12b2o6b2o12b2o$11bo3bo4b2o12b2o$2o8bo5bo3b2o$2o8bo3bob2o4b\nobo$10bo5bo7bo$11bo3bo$12b2o!\n";

    /// Found by the property test: "0$" went back to the start of the row, so a row's runs
    /// were out of order and cells could be set twice.
    #[test]
    fn a_run_count_of_zero_is_an_error() {
        for text in ["x = 5, y = 2\no3bo0$bo!", "x = 5, y = 1\n0o!"] {
            let e = parse(text).unwrap_err();
            assert!(e.to_string().contains("run count of 0"), "{e}");
        }
    }

    #[test]
    fn parses_the_gosper_gun() {
        let (p, header) = parse(GOSPER).unwrap();
        assert_eq!((p.width, p.height, p.population(), header), (36, 9, 36, 2));
        assert_eq!(p.live_in_row(0).collect::<Vec<_>>(), vec![24]);
        assert_eq!(p.live_in_row(2).collect::<Vec<_>>(), vec![12, 13, 20, 21, 34, 35]);
    }

    fn wide() -> Pattern {
        Pattern::from_rows(&["o".repeat(150).as_str(), "", "", "obobobobobobobobobobobobobobobobobobobobobobo", ".o"])
    }

    #[test]
    fn round_trips() {
        let (gun, _) = parse(GOSPER).unwrap();
        for p in [gun, wide(), Pattern::from_rows(&[".o.", "..o", "ooo"]), Pattern::from_rows(&["...", "..."])] {
            let text = to_rle(&p);
            assert!(text.lines().all(|l| l.len() <= 70), "{text}");
            let (back, _) = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, p, "{text}");
        }
    }

    #[test]
    fn packed_rows_are_written_as_their_pattern() {
        for p in [parse(GOSPER).unwrap().0, wide(), Pattern::from_rows(&["", "", "o"]), Pattern::default()] {
            let words = p.width.div_ceil(64);
            let mut cells = vec![0u64; words * p.height];
            for (y, runs) in p.live_rows() {
                for x in runs.iter().flat_map(Clone::clone) {
                    cells[y * words + x / 64] |= 1 << (x % 64);
                }
            }
            let mut text = Vec::new();
            write_packed(&mut text, p.width, p.height, &cells).unwrap();
            assert_eq!(String::from_utf8(text).unwrap(), to_rle(&p));
        }
    }

    #[test]
    fn counts_and_alternatives() {
        let (p, _) = parse("x=12,y=3\n10bo$\n$12o!").unwrap();
        assert_eq!(p.live_in_row(0).collect::<Vec<_>>(), vec![10]);
        assert_eq!(p.live_in_row(2).count(), 12);
        let (p, _) = parse("x = 2, y = 1, rule = 23/3\n2o!").unwrap();
        assert_eq!(p.population(), 2);
    }

    #[test]
    fn huge_counts_are_errors_or_cost_nothing() {
        // A run that would wrap past the width (the old `x + run` overflowed to a small sum).
        let e = parse("x = 10, y = 1\n5b18446744073709551614b2o!").unwrap_err();
        assert!(e.message.contains("row 1 is wider than the header's x = 10"), "{e}");
        let e = parse("x = 10, y = 1\n18446744073709551616o!").unwrap_err();
        assert!(e.message.contains("run count overflows"), "{e}");
        let e = parse("x = 1, y = 1\n18446744073709551615$18446744073709551615$o!").unwrap_err();
        assert!(e.message.contains("row count overflows"), "{e}");
        let e = parse("x = 18446744073709551616, y = 1\no!").unwrap_err();
        assert!(e.message.contains("is too large"), "{e}");
        // A pattern as large as the header allows takes memory for its runs only.
        let huge = usize::MAX.to_string();
        let (p, _) = parse(&format!("x = {huge}, y = {huge}\n{huge}o$99999999999$3bo!")).unwrap();
        assert_eq!(p.population(), u64::MAX, "saturated");
        assert_eq!(p.live_in_row(100_000_000_000).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line, message) in [
            ("", 1, "no header"),
            ("#C only comments\n", 1, "no header"),
            ("x = 3\nooo!", 1, "must give x"),
            ("x = 3, y = 1, rule = B36/S23\nooo!", 1, "rule B36/S23 is not supported"),
            ("x = three, y = 1\nooo!", 1, "x = \"three\""),
            ("x = -3, y = 1\nooo!", 1, "is not a non-negative integer"),
            ("x = 3, y = 1, z = 2\nooo!", 1, "unknown header field"),
            ("#C glider\nx = 3, y = 3\nbo$2bo$\n3z!", 4, "unexpected character 'z'"),
            ("x = 3, y = 3\nbo$2bo$4o!", 2, "row 3 is wider"),
            ("x = 3, y = 2\no$o$o!", 2, "more rows"),
            ("x = 3, y = 3\nbo$2bo$\n3o\n", 3, "does not end with '!'"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text:?}: {e}");
            assert!(e.message.contains(message), "{text:?}: {e}");
        }
    }

    #[test]
    fn files_that_are_not_patterns_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = read(&dir.path().join("missing.rle")).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
        let e = read(dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("cannot read"), "{e:#}");
        let binary = dir.path().join("binary.rle");
        std::fs::write(&binary, b"x = 3, y = 1\n\xff\xfe!").unwrap();
        let e = read(&binary).unwrap_err();
        assert!(format!("{e:#}").contains("line 2: not UTF-8"), "{e:#}");
        if Path::new("/dev/zero").exists() {
            let e = read(Path::new("/dev/zero")).unwrap_err();
            assert!(format!("{e:#}").contains("too large"), "{e:#}");
        }
    }

    /// What every parsed pattern must satisfy: its runs are inside its declared box,
    /// increasing, non-empty and apart, and its population is theirs.
    fn assert_well_formed(p: &Pattern) {
        let mut last_row = None;
        let mut population = 0u64;
        for (y, runs) in p.live_rows() {
            assert!(y < p.height, "row {y} outside the height {}", p.height);
            assert!(last_row.is_none_or(|last| last < y), "rows out of order");
            last_row = Some(y);
            assert!(!runs.is_empty());
            let mut x = 0;
            for (i, run) in runs.iter().enumerate() {
                assert!(!run.is_empty() && run.end <= p.width, "run {run:?} outside the width {}", p.width);
                assert!(i == 0 && run.start >= x || run.start > x, "runs {runs:?} overlap or touch");
                x = run.end;
                population = population.saturating_add(run.len() as u64);
            }
        }
        assert_eq!(p.population(), population);
    }

    /// Texts that look like RLE: headers with small or huge numbers, runs, comments.
    fn rle_like() -> impl Strategy<Value = String> {
        let number = prop_oneof![
            Just("0".to_string()),
            (0u64..40).prop_map(|n| n.to_string()),
            Just(u64::MAX.to_string()),
            Just("184467440737095516160".to_string())
        ];
        let token = prop_oneof![
            number.clone(),
            Just("o".to_string()),
            Just("b".to_string()),
            Just("$".to_string()),
            Just("!".to_string()),
            Just("\n".to_string()),
            Just("#C x\n".to_string()),
            "[ -~]".prop_map(|s| s),
        ];
        (number.clone(), number, proptest::collection::vec(token, 0..40))
            .prop_map(|(x, y, body)| format!("x = {x}, y = {y}, rule = B3/S23\n{}", body.concat()))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        #[test]
        fn random_text_is_a_pattern_or_an_error(text in "\\PC{0,200}") {
            if let Ok((p, _)) = parse(&text) {
                assert_well_formed(&p);
            }
        }

        #[test]
        fn rle_like_text_is_a_pattern_or_an_error(text in rle_like()) {
            match parse(&text) {
                Ok((p, _)) => assert_well_formed(&p),
                Err(e) => prop_assert!(e.line >= 1 && e.line <= text.lines().count().max(1), "{e}"),
            }
        }

        #[test]
        fn truncated_and_mutated_patterns_are_patterns_or_errors(
            cut in 0usize..200,
            at in 0usize..200,
            byte in proptest::sample::select(b"0123456789ob$!x=,# \n.Az".to_vec()),
        ) {
            let text = GOSPER;
            let truncated = &text[..cut.min(text.len())];
            if let Ok((p, _)) = parse(truncated) {
                assert_well_formed(&p);
            }
            let mut mutated = text.as_bytes().to_vec();
            let at = at % mutated.len();
            mutated[at] = byte;
            let mutated = String::from_utf8(mutated).unwrap();
            if let Ok((p, _)) = parse(&mutated) {
                assert_well_formed(&p);
                // A parsed pattern writes back as the same pattern.
                prop_assert_eq!(parse(&to_rle(&p)).unwrap().0, p);
            }
        }
    }
}
