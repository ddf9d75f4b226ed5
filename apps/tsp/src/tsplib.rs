//! TSPLIB files: the parser of `.tsp` instances and the writer of `.tour` files.
//!
//! Supported: `TYPE: TSP`, `EDGE_WEIGHT_TYPE` EUC_2D, CEIL_2D, ATT, GEO (with a
//! `NODE_COORD_SECTION`) and EXPLICIT (with an `EDGE_WEIGHT_SECTION` in FULL_MATRIX,
//! UPPER_ROW, LOWER_ROW, UPPER_DIAG_ROW or LOWER_DIAG_ROW), plus an optional
//! `DISPLAY_DATA_SECTION` (used for plots). Every error names the line it was found on.
//! The [`Instance`] it builds keeps the weight bound of [`crate::kernel::instance`].
//!
//! **Size before memory.** DIMENSION is checked when it is read: at least 3 cities, at most
//! [`MAX_CITIES`], and a caller's check (memory, by default [`matrix_fits`]) before anything
//! of that size is allocated; explicit weights are counted before the matrix is built.

use std::fmt;
use std::fmt::Write as _;
use std::io::Read;
use std::path::Path;

use crate::kernel::distance::Metric;
use crate::kernel::instance::{matrix_bytes, weight_limit, Instance, MAX_CITIES};

/// Largest file [`read`] reads (a guard against devices such as `/dev/zero`).
pub const MAX_FILE_BYTES: u64 = 1 << 30;

/// The default size check of [`parse`] and [`read`]: the distance matrix of
/// DIMENSION `n` cities fits in this node's memory.
///
/// # Errors
/// A [`dps_harness::BadInput`] with the figures.
pub fn matrix_fits(n: usize) -> anyhow::Result<()> {
    dps_harness::check_memory(&format!("DIMENSION {n}"), matrix_bytes(n), matrix_bytes(n))
}

/// Reads and parses a TSPLIB file, with [`matrix_fits`] as the size check.
///
/// # Errors
/// If the file cannot be read or is not a supported, well-formed TSPLIB instance.
pub fn read(path: &Path) -> Result<Instance, ParseError> {
    read_with(path, &matrix_fits)
}

/// Reads and parses a TSPLIB file; `fits` checks DIMENSION before anything of that size
/// is allocated (see [`parse_with`]).
///
/// # Errors
/// If the file cannot be read (or is larger than [`MAX_FILE_BYTES`]) or is not a
/// supported, well-formed TSPLIB instance.
pub fn read_with(path: &Path, fits: &dyn Fn(usize) -> anyhow::Result<()>) -> Result<Instance, ParseError> {
    let whole = |message: String| ParseError { file: path.display().to_string(), line: 0, message };
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_string(&mut text))
        .map_err(|e| whole(e.to_string()))?;
    if text.len() as u64 > MAX_FILE_BYTES {
        return Err(whole(format!("more than {} (not a TSPLIB file?)", dps_harness::format_bytes(MAX_FILE_BYTES))));
    }
    let fallback = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    parse_with(&text, &fallback, fits).map_err(|mut e| {
        e.file = path.display().to_string();
        e
    })
}

/// The tour as a TSPLIB `.tour` file (cities numbered from 1, ended by -1 and EOF).
pub fn to_tour_file(name: &str, length: i64, tour: &[usize]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "NAME : {name}.tour");
    let _ = writeln!(s, "COMMENT : Length = {length} (dps-tsp)");
    let _ = writeln!(s, "TYPE : TOUR");
    let _ = writeln!(s, "DIMENSION : {}", tour.len());
    let _ = writeln!(s, "TOUR_SECTION");
    for c in tour {
        let _ = writeln!(s, "{}", c + 1);
    }
    s.push_str("-1\nEOF\n");
    s
}

/// A TSPLIB file that cannot be used, with the line (1-based; 0 for the whole file) at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The file name (empty when parsing a string).
    pub file: String,
    /// The line at fault, 1-based (0: not tied to a line).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = if self.file.is_empty() { "<input>" } else { &self.file };
        match self.line {
            0 => write!(f, "{file}: {}", self.message),
            l => write!(f, "{file}: line {l}: {}", self.message),
        }
    }
}

impl std::error::Error for ParseError {}

fn err<T>(line: usize, message: impl Into<String>) -> Result<T, ParseError> {
    Err(ParseError { file: String::new(), line, message: message.into() })
}

/// The `EDGE_WEIGHT_FORMAT`s of explicit matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Full,
    UpperRow,
    LowerRow,
    UpperDiagRow,
    LowerDiagRow,
}

impl Format {
    fn parse(s: &str) -> Option<Format> {
        Some(match s {
            "FULL_MATRIX" => Format::Full,
            "UPPER_ROW" => Format::UpperRow,
            "LOWER_ROW" => Format::LowerRow,
            "UPPER_DIAG_ROW" => Format::UpperDiagRow,
            "LOWER_DIAG_ROW" => Format::LowerDiagRow,
            _ => return None,
        })
    }

    /// How many weights the format lists for `n` cities.
    fn count(self, n: usize) -> usize {
        match self {
            Format::Full => n * n,
            Format::UpperRow | Format::LowerRow => n * (n - 1) / 2,
            Format::UpperDiagRow | Format::LowerDiagRow => n * (n + 1) / 2,
        }
    }

    /// The `(i, j)` cells the format lists, in file order (lazily: nothing of size `n²`
    /// is allocated for it).
    fn cells(self, n: usize) -> impl Iterator<Item = (usize, usize)> {
        (0..n).flat_map(move |i| {
            let cols = match self {
                Format::Full => 0..n,
                Format::UpperRow => i + 1..n,
                Format::UpperDiagRow => i..n,
                Format::LowerRow => 0..i,
                Format::LowerDiagRow => 0..i + 1,
            };
            cols.map(move |j| (i, j))
        })
    }
}

/// Header keywords and the sections that follow them.
#[derive(Default)]
struct Header {
    name: Option<String>,
    dimension: Option<(usize, usize)>,
    metric: Option<Metric>,
    format: Option<(Format, usize)>,
}

/// Coordinates of a section and the line each city was given on.
struct Points {
    xy: Vec<[f64; 2]>,
    lines: Vec<usize>,
}

/// Parses TSPLIB text; `fallback_name` names the instance if it has no `NAME`. The size
/// check is [`matrix_fits`].
///
/// # Errors
/// A [`ParseError`] naming the first line at fault.
pub fn parse(text: &str, fallback_name: &str) -> Result<Instance, ParseError> {
    parse_with(text, fallback_name, &matrix_fits)
}

/// As [`parse`], with `fits` checking DIMENSION (say, the memory a whole run needs) when
/// it is read, before anything of that size is allocated; its error becomes the
/// DIMENSION line's.
///
/// # Errors
/// A [`ParseError`] naming the first line at fault.
pub fn parse_with(
    text: &str,
    fallback_name: &str,
    fits: &dyn Fn(usize) -> anyhow::Result<()>,
) -> Result<Instance, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut h = Header::default();
    let mut coords: Option<Points> = None;
    let mut display: Option<Points> = None;
    let mut weights: Option<(Vec<i64>, usize)> = None;
    let mut at = 0;
    while at < lines.len() {
        let (no, line) = (at + 1, lines[at].trim());
        at += 1;
        if line.is_empty() {
            continue;
        }
        let (key, value) = match line.split_once(':') {
            Some((k, v)) => (k.trim(), v.trim()),
            None => (line, ""),
        };
        match key {
            "EOF" => break,
            "NAME" => h.name = Some(value.to_string()),
            "COMMENT" | "DISPLAY_DATA_TYPE" | "NODE_COORD_TYPE" => {}
            "TYPE" => {
                if value != "TSP" {
                    return err(no, format!("TYPE {value} is not supported: only symmetric TSP instances (TYPE: TSP)"));
                }
            }
            "DIMENSION" => h.dimension = Some((read_dimension(&h, value, no, fits)?, no)),
            "EDGE_WEIGHT_TYPE" => {
                h.metric = Some(match value {
                    "EUC_2D" => Metric::Euc2d,
                    "CEIL_2D" => Metric::Ceil2d,
                    "ATT" => Metric::Att,
                    "GEO" => Metric::Geo,
                    "EXPLICIT" => Metric::Explicit,
                    _ => {
                        return err(
                            no,
                            format!(
                                "EDGE_WEIGHT_TYPE {value} is not supported (supported: EUC_2D, CEIL_2D, ATT, GEO, \
                                 EXPLICIT)"
                            ),
                        )
                    }
                })
            }
            "EDGE_WEIGHT_FORMAT" => {
                if value == "FUNCTION" {
                    continue;
                }
                match Format::parse(value) {
                    Some(f) => h.format = Some((f, no)),
                    None => {
                        return err(
                            no,
                            format!(
                                "EDGE_WEIGHT_FORMAT {value} is not supported (supported: FULL_MATRIX, UPPER_ROW, \
                                 LOWER_ROW, UPPER_DIAG_ROW, LOWER_DIAG_ROW)"
                            ),
                        )
                    }
                }
            }
            "NODE_COORD_SECTION" | "DISPLAY_DATA_SECTION" => {
                let n = dimension(&h, no, key)?;
                let points = read_points(&lines, &mut at, n, key)?;
                if key == "NODE_COORD_SECTION" {
                    coords = Some(points);
                } else {
                    display = Some(points);
                }
            }
            "EDGE_WEIGHT_SECTION" => {
                let n = dimension(&h, no, key)?;
                let Some((format, _)) = h.format else {
                    return err(no, "EDGE_WEIGHT_SECTION without an EDGE_WEIGHT_FORMAT before it");
                };
                weights = Some((read_weights(&lines, &mut at, n, format, no)?, no));
            }
            _ => return err(no, format!("unknown keyword \"{key}\"")),
        }
    }
    let last = lines.len();
    let Some((n, _)) = h.dimension else { return err(last, "no DIMENSION in the file") };
    let Some(metric) = h.metric else { return err(last, "no EDGE_WEIGHT_TYPE in the file") };
    let name = h.name.unwrap_or_else(|| fallback_name.to_string());
    let name = name.trim_end_matches(".tsp").to_string();
    if metric == Metric::Explicit {
        let Some((w, section)) = weights else {
            return err(last, "EDGE_WEIGHT_TYPE EXPLICIT but no EDGE_WEIGHT_SECTION");
        };
        let mut inst = Instance::from_matrix(&name, n, w).map_err(|e| pe(section, e.to_string()))?;
        inst.coords = display.or(coords).map(|p| p.xy);
        Ok(inst)
    } else {
        let Some(c) = coords else {
            return err(last, format!("EDGE_WEIGHT_TYPE {} but no NODE_COORD_SECTION", metric.keyword()));
        };
        let lines = c.lines;
        Instance::from_coords(&name, metric, c.xy)
            .map_err(|e| pe(lines[e.i.max(e.j)], e.describe(|c| format!("{} (line {})", c + 1, lines[c]))))
    }
}

/// DIMENSION's value: a whole number, at least 3, that passes `fits`, at most [`MAX_CITIES`].
fn read_dimension(
    h: &Header,
    value: &str,
    no: usize,
    fits: &dyn Fn(usize) -> anyhow::Result<()>,
) -> Result<usize, ParseError> {
    if let Some((_, first)) = h.dimension {
        return err(no, format!("DIMENSION given twice (first on line {first})"));
    }
    let n = match value.parse::<usize>() {
        Ok(n) if n >= 3 => n,
        Ok(n) => return err(no, format!("DIMENSION {n}: a tour needs at least 3 cities")),
        Err(_) => return err(no, format!("DIMENSION \"{value}\" is not a whole number")),
    };
    fits(n).map_err(|e| pe(no, format!("{e:#}")))?;
    if n > MAX_CITIES {
        return err(no, format!("DIMENSION {n}: at most {MAX_CITIES} cities are supported"));
    }
    Ok(n)
}

fn dimension(h: &Header, no: usize, section: &str) -> Result<usize, ParseError> {
    match h.dimension {
        Some((n, _)) => Ok(n),
        None => err(no, format!("{section} before DIMENSION")),
    }
}

/// Reads `n` lines `index x y` (indices 1..=n, each once; finite coordinates).
fn read_points(lines: &[&str], at: &mut usize, n: usize, section: &str) -> Result<Points, ParseError> {
    let mut points: Vec<Option<([f64; 2], usize)>> = vec![None; n];
    for k in 0..n {
        let no = *at + 1;
        let Some(line) = lines.get(*at) else {
            return err(lines.len(), format!("{section} ends after {k} of DIMENSION {n} cities"));
        };
        *at += 1;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first().is_none_or(|f| f.parse::<f64>().is_err()) {
            return err(no, format!("{section} ends after {k} of DIMENSION {n} cities"));
        }
        if fields.len() != 3 {
            return err(no, format!("expected \"index x y\", found {} fields", fields.len()));
        }
        let index: usize =
            fields[0].parse().map_err(|_| pe(no, format!("city index \"{}\" is not a whole number", fields[0])))?;
        if index == 0 || index > n {
            return err(no, format!("city index {index} is outside 1..={n} (DIMENSION {n})"));
        }
        if let Some((_, first)) = points[index - 1] {
            return err(no, format!("city {index} appears twice (first on line {first})"));
        }
        let coord = |s: &str| match s.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            Ok(_) => Err(pe(no, format!("coordinate \"{s}\" is not a finite number"))),
            Err(_) => Err(pe(no, format!("coordinate \"{s}\" is not a number"))),
        };
        points[index - 1] = Some(([coord(fields[1])?, coord(fields[2])?], no));
    }
    if let Some(line) = lines.get(*at) {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.parse::<f64>().is_ok() {
            return err(*at + 1, format!("{section} has more than DIMENSION {n} cities"));
        }
    }
    let (xy, lines) = points.into_iter().flatten().unzip();
    Ok(Points { xy, lines })
}

fn pe(line: usize, message: String) -> ParseError {
    ParseError { file: String::new(), line, message }
}

/// One explicit weight: a non-negative integer, exactly as written when it fits an `i64`,
/// from a float (`1e3`, `12.0`) when it is integral; `i64::MAX` for one of 2^63 or more (it
/// only matters as "too large": the weight bound names the largest); `None` otherwise.
fn read_weight(field: &str) -> Option<i64> {
    if let Ok(v) = field.parse::<i64>() {
        return (v >= 0).then_some(v);
    }
    let v: f64 = field.parse().ok()?;
    if !v.is_finite() || v.fract() != 0.0 || v < 0.0 {
        return None;
    }
    Some(crate::kernel::distance::to_weight(v).unwrap_or(i64::MAX))
}

/// Reads the numbers of an explicit matrix, which may span any number of lines, up to the
/// next keyword; `start` is the section's own line. The weights are counted (and each one
/// checked) before the `n * n` matrix is allocated; the largest one is checked against
/// the weight bound, naming its line.
fn read_weights(
    lines: &[&str],
    at: &mut usize,
    n: usize,
    format: Format,
    start: usize,
) -> Result<Vec<i64>, ParseError> {
    let count = format.count(n);
    let limit = weight_limit(n);
    let mut values: Vec<i64> = Vec::new();
    // (index of the first value on a line, that line): to name the line of any value.
    let mut line_starts: Vec<(usize, usize)> = Vec::new();
    let mut last_data = start;
    while let Some(line) = lines.get(*at) {
        let first = line.split_whitespace().next();
        if first.is_some_and(|f| f.parse::<f64>().is_err()) {
            break; // the next keyword
        }
        let no = *at + 1;
        *at += 1;
        last_data = no;
        line_starts.push((values.len(), no));
        for field in line.split_whitespace() {
            let v = read_weight(field).ok_or_else(|| {
                pe(
                    no,
                    match field.parse::<f64>() {
                        Ok(_) => format!("edge weight {field} is not a non-negative integer"),
                        Err(_) => format!("edge weight \"{field}\" is not a number"),
                    },
                )
            })?;
            if values.len() == count {
                return err(no, format!("EDGE_WEIGHT_SECTION has more than the {count} weights DIMENSION {n} needs"));
            }
            values.push(v);
        }
    }
    if values.len() < count {
        return err(
            last_data,
            format!("EDGE_WEIGHT_SECTION (line {start}) has {} weights; DIMENSION {n} needs {count}", values.len()),
        );
    }
    let line_of = |k: usize| line_starts[line_starts.partition_point(|&(first, _)| first <= k) - 1].1;
    let largest =
        format.cells(n).zip(&values).enumerate().filter(|(_, ((i, j), _))| i != j).max_by_key(|(_, (_, &v))| v);
    if let Some((k, ((i, j), &v))) = largest {
        if v > limit {
            let weight = if v == i64::MAX { "at least 2^63".to_string() } else { v.to_string() };
            return err(
                line_of(k),
                format!(
                    "the largest edge weight, {weight} (cities {} and {}), is more than {limit}, the most DIMENSION \
                     {n} allows ({n} x weight <= 2^53, so that tour lengths cannot overflow): scale the weights down",
                    i + 1,
                    j + 1
                ),
            );
        }
    }
    let mut dist = vec![0; n * n];
    for ((i, j), &v) in format.cells(n).zip(&values) {
        dist[i * n + j] = v;
        dist[j * n + i] = v;
    }
    for i in 0..n {
        dist[i * n + i] = 0;
    }
    if format == Format::Full {
        if let Some((i, j)) =
            (0..n).flat_map(|i| (0..i).map(move |j| (i, j))).find(|&(i, j)| values[i * n + j] != values[j * n + i])
        {
            return err(
                start,
                format!("FULL_MATRIX is not symmetric: d({}, {}) != d({}, {})", i + 1, j + 1, j + 1, i + 1),
            );
        }
    }
    Ok(dist)
}

#[cfg(test)]
mod tests;
