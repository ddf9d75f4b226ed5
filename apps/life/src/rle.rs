//! Patterns in the standard run-length encoded format (RLE): `#` comment lines, a header
//! `x = <width>, y = <height>, rule = B3/S23`, then runs such as `3o2b$` (`o` live, `b` dead,
//! `$` end of row, each optionally preceded by a count) up to a closing `!`.
//!
//! Errors name the line: `line 4: unexpected character 'z'`.

use std::fmt;
use std::path::Path;

/// A pattern: its bounding box and its live cells, row by row.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Pattern {
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// For each row, the columns of its live cells, increasing.
    rows: Vec<Vec<usize>>,
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
        let rows: Vec<Vec<usize>> =
            rows.iter().map(|r| r.bytes().enumerate().filter(|(_, c)| *c == b'o').map(|(x, _)| x).collect()).collect();
        Pattern { width, height: rows.len(), rows }
    }

    /// Columns of the live cells of row `y`.
    pub fn live_in_row(&self, y: usize) -> impl Iterator<Item = usize> + '_ {
        self.rows.get(y).into_iter().flatten().copied()
    }

    /// Number of live cells.
    pub fn population(&self) -> usize {
        self.rows.iter().map(Vec::len).sum()
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

/// Reads an RLE file.
///
/// # Errors
/// If the file cannot be read or is not valid RLE for B3/S23; the message starts with
/// `path:line:`.
pub fn read(path: &Path) -> anyhow::Result<(Pattern, usize)> {
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|e| anyhow::anyhow!("{}:{}: {}", path.display(), e.line, e.message))
}

/// Parses an RLE text; returns the pattern and the line number of its header.
///
/// # Errors
/// A missing or malformed header, a rule other than B3/S23, an unknown character, runs
/// wider or taller than the header says, or no closing `!`.
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
    let mut p = Pattern { width, height, rows: vec![Vec::new(); height] };
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
            match c {
                'b' | '.' | 'o' | 'A' => {
                    if y >= height {
                        return Err(err(n, format!("more rows than the header's y = {height}")));
                    }
                    if x + run > width {
                        return Err(err(n, format!("row {} is wider than the header's x = {width}", y + 1)));
                    }
                    if c == 'o' || c == 'A' {
                        p.rows[y].extend(x..x + run);
                    }
                    x += run;
                }
                '$' => {
                    y += run;
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
            value.parse::<usize>().map_err(|_| err(n, format!("{what} = {value:?} is not a non-negative integer")))
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

/// Encodes a pattern as RLE (lines of at most 70 characters).
pub fn to_rle(p: &Pattern) -> String {
    let mut body = String::new();
    let mut push = |count: usize, c: char| {
        if count > 1 {
            body.push_str(&count.to_string());
        }
        body.push(c);
    };
    let mut pending_rows = 0;
    for row in &p.rows {
        if row.is_empty() {
            pending_rows += 1;
            continue;
        }
        if pending_rows > 0 {
            push(pending_rows, '$');
        }
        let mut x = 0;
        let mut cells = row.iter().copied().peekable();
        while let Some(start) = cells.next() {
            let mut end = start + 1;
            while cells.peek() == Some(&end) {
                cells.next();
                end += 1;
            }
            if start > x {
                push(start - x, 'b');
            }
            push(end - start, 'o');
            x = end;
        }
        pending_rows = 1;
    }
    body.push('!');
    let mut out = format!("x = {}, y = {}, rule = B3/S23\n", p.width, p.height);
    let mut line = String::new();
    // Break between runs, never inside one (a count stays with its letter).
    let mut token = String::new();
    for c in body.chars() {
        token.push(c);
        if !c.is_ascii_digit() {
            if line.len() + token.len() > 70 {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            line.push_str(&token);
            token.clear();
        }
    }
    out.push_str(&line);
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOSPER: &str = "#N Gosper glider gun\nx = 36, y = 9, rule = B3/S23\n24bo$22bobo$12b2o6b2o12b2o$11bo3bo4b2o12b2o$2o8bo5bo3b2o$2o8bo3bob2o4b\nobo$10bo5bo7bo$11bo3bo$12b2o!\n";

    #[test]
    fn parses_the_gosper_gun() {
        let (p, header) = parse(GOSPER).unwrap();
        assert_eq!((p.width, p.height, p.population(), header), (36, 9, 36, 2));
        assert_eq!(p.live_in_row(0).collect::<Vec<_>>(), vec![24]);
        assert_eq!(p.live_in_row(2).collect::<Vec<_>>(), vec![12, 13, 20, 21, 34, 35]);
    }

    #[test]
    fn round_trips() {
        let (gun, _) = parse(GOSPER).unwrap();
        let wide = Pattern::from_rows(&[
            "o".repeat(150).as_str(),
            "",
            "",
            "obobobobobobobobobobobobobobobobobobobobobobo",
            ".o",
        ]);
        for p in [gun, wide, Pattern::from_rows(&[".o.", "..o", "ooo"]), Pattern::from_rows(&["...", "..."])] {
            let text = to_rle(&p);
            assert!(text.lines().all(|l| l.len() <= 70), "{text}");
            let (back, _) = parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(back, p, "{text}");
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
    fn errors_name_the_line() {
        for (text, line, message) in [
            ("", 1, "no header"),
            ("#C only comments\n", 1, "no header"),
            ("x = 3\nooo!", 1, "must give x"),
            ("x = 3, y = 1, rule = B36/S23\nooo!", 1, "rule B36/S23 is not supported"),
            ("x = three, y = 1\nooo!", 1, "x = \"three\""),
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
}
