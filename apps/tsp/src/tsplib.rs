//! TSPLIB instances: the parser for `.tsp` files, random instances, and the distance matrix.
//!
//! Supported: `TYPE: TSP`, `EDGE_WEIGHT_TYPE` EUC_2D, CEIL_2D, ATT, GEO (with a
//! `NODE_COORD_SECTION`) and EXPLICIT (with an `EDGE_WEIGHT_SECTION` in FULL_MATRIX,
//! UPPER_ROW, LOWER_ROW, UPPER_DIAG_ROW or LOWER_DIAG_ROW), plus an optional
//! `DISPLAY_DATA_SECTION` (used for plots). Every error names the line it was found on.

use std::fmt;
use std::path::Path;

use rand::{Rng, SeedableRng};

use crate::distance::Metric;

/// A symmetric TSP instance with integer distances.
#[derive(Clone, Debug)]
pub struct Instance {
    /// The instance's name (`NAME`, or the file name).
    pub name: String,
    /// Number of cities.
    pub n: usize,
    /// How distances were computed.
    pub metric: Metric,
    /// City coordinates, if the file has any (node or display coordinates).
    pub coords: Option<Vec<[f64; 2]>>,
    dist: Vec<i64>,
}

impl Instance {
    /// Builds an instance from coordinates and a metric.
    pub fn from_coords(name: &str, metric: Metric, coords: Vec<[f64; 2]>) -> Instance {
        let n = coords.len();
        let mut dist = vec![0; n * n];
        for i in 0..n {
            for j in 0..i {
                let d = metric.distance(coords[i], coords[j]);
                dist[i * n + j] = d;
                dist[j * n + i] = d;
            }
        }
        Instance { name: name.to_string(), n, metric, coords: Some(coords), dist }
    }

    /// Builds an instance from a full symmetric matrix (row-major, `n * n`).
    ///
    /// # Panics
    /// If the matrix is not `n * n`.
    pub fn from_matrix(name: &str, n: usize, dist: Vec<i64>) -> Instance {
        assert_eq!(dist.len(), n * n, "a distance matrix of {n} cities has {} entries", n * n);
        Instance { name: name.to_string(), n, metric: Metric::Explicit, coords: None, dist }
    }

    /// `n` cities uniform in `[0, 1000)²` with EUC_2D distances, from `seed`.
    pub fn random(n: usize, seed: u64) -> Instance {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let coords = (0..n).map(|_| [rng.gen_range(0.0..1000.0f64).floor(), rng.gen_range(0.0..1000.0f64).floor()]);
        Instance::from_coords(&format!("random{n}-seed{seed}"), Metric::Euc2d, coords.collect())
    }

    /// The distance between cities `i` and `j` (0-based).
    #[inline]
    pub fn d(&self, i: usize, j: usize) -> i64 {
        self.dist[i * self.n + j]
    }

    /// The row-major distance matrix.
    pub fn matrix(&self) -> &[i64] {
        &self.dist
    }

    /// The length of the closed tour visiting `tour` in order.
    pub fn tour_length(&self, tour: &[usize]) -> i64 {
        (0..tour.len()).map(|k| self.d(tour[k], tour[(k + 1) % tour.len()])).sum()
    }

    /// Reads and parses a TSPLIB file.
    ///
    /// # Errors
    /// If the file cannot be read or is not a supported, well-formed TSPLIB instance.
    pub fn read(path: &Path) -> Result<Instance, ParseError> {
        let text = std::fs::read_to_string(path).map_err(|e| ParseError {
            file: path.display().to_string(),
            line: 0,
            message: e.to_string(),
        })?;
        let fallback = path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        parse(&text, &fallback).map_err(|mut e| {
            e.file = path.display().to_string();
            e
        })
    }
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

    /// The `(i, j)` cells the format lists, in file order.
    fn cells(self, n: usize) -> Vec<(usize, usize)> {
        let mut cells = Vec::new();
        for i in 0..n {
            let cols = match self {
                Format::Full => 0..n,
                Format::UpperRow => i + 1..n,
                Format::UpperDiagRow => i..n,
                Format::LowerRow => 0..i,
                Format::LowerDiagRow => 0..i + 1,
            };
            cells.extend(cols.map(|j| (i, j)));
        }
        cells
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

/// Parses TSPLIB text; `fallback_name` names the instance if it has no `NAME`.
///
/// # Errors
/// A [`ParseError`] naming the first line at fault.
pub fn parse(text: &str, fallback_name: &str) -> Result<Instance, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut h = Header::default();
    let mut coords: Option<Vec<[f64; 2]>> = None;
    let mut display: Option<Vec<[f64; 2]>> = None;
    let mut weights: Option<Vec<i64>> = None;
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
            "DIMENSION" => match value.parse::<usize>() {
                Ok(n) if n >= 3 => h.dimension = Some((n, no)),
                Ok(n) => return err(no, format!("DIMENSION {n}: a tour needs at least 3 cities")),
                Err(_) => return err(no, format!("DIMENSION \"{value}\" is not a number")),
            },
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
                        "EDGE_WEIGHT_TYPE {value} is not supported (supported: EUC_2D, CEIL_2D, ATT, GEO, EXPLICIT)"
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
                weights = Some(read_weights(&lines, &mut at, n, format, no)?);
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
        let Some(w) = weights else { return err(last, "EDGE_WEIGHT_TYPE EXPLICIT but no EDGE_WEIGHT_SECTION") };
        let mut inst = Instance::from_matrix(&name, n, w);
        inst.coords = display.or(coords);
        Ok(inst)
    } else {
        let Some(c) = coords else {
            return err(last, format!("EDGE_WEIGHT_TYPE {} but no NODE_COORD_SECTION", metric.keyword()));
        };
        Ok(Instance::from_coords(&name, metric, c))
    }
}

fn dimension(h: &Header, no: usize, section: &str) -> Result<usize, ParseError> {
    match h.dimension {
        Some((n, _)) => Ok(n),
        None => err(no, format!("{section} before DIMENSION")),
    }
}

/// Reads `n` lines `index x y` (indices 1..=n, each once).
fn read_points(lines: &[&str], at: &mut usize, n: usize, section: &str) -> Result<Vec<[f64; 2]>, ParseError> {
    let mut points = vec![None; n];
    for k in 0..n {
        let no = *at + 1;
        let Some(line) = lines.get(*at) else {
            return err(lines.len(), format!("{section} ends after {k} of DIMENSION {n} cities"));
        };
        *at += 1;
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.first().is_some_and(|f| f.parse::<f64>().is_err()) || fields.is_empty() {
            return err(no, format!("{section} ends after {k} of DIMENSION {n} cities"));
        }
        if fields.len() != 3 {
            return err(no, format!("expected \"index x y\", found {} fields", fields.len()));
        }
        let index: usize =
            fields[0].parse().map_err(|_| pe(no, format!("city index \"{}\" is not a number", fields[0])))?;
        if index == 0 || index > n {
            return err(no, format!("city index {index} is outside 1..={n} (DIMENSION {n})"));
        }
        if points[index - 1].is_some() {
            return err(no, format!("city {index} appears twice"));
        }
        let coord = |s: &str| s.parse::<f64>().map_err(|_| pe(no, format!("coordinate \"{s}\" is not a number")));
        points[index - 1] = Some([coord(fields[1])?, coord(fields[2])?]);
    }
    if let Some(line) = lines.get(*at) {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.parse::<f64>().is_ok() {
            return err(*at + 1, format!("{section} has more than DIMENSION {n} cities"));
        }
    }
    Ok(points.into_iter().map(Option::unwrap).collect())
}

fn pe(line: usize, message: String) -> ParseError {
    ParseError { file: String::new(), line, message }
}

/// Reads the numbers of an explicit matrix, which may span any number of lines, up to the
/// next keyword; `start` is the section's own line.
fn read_weights(
    lines: &[&str],
    at: &mut usize,
    n: usize,
    format: Format,
    start: usize,
) -> Result<Vec<i64>, ParseError> {
    let cells = format.cells(n);
    let mut values = Vec::with_capacity(cells.len());
    let mut last_data = start;
    while let Some(line) = lines.get(*at) {
        let first = line.split_whitespace().next();
        if first.is_some_and(|f| f.parse::<f64>().is_err()) {
            break; // the next keyword
        }
        let no = *at + 1;
        *at += 1;
        last_data = no;
        for field in line.split_whitespace() {
            let v: f64 = field.parse().map_err(|_| pe(no, format!("edge weight \"{field}\" is not a number")))?;
            if v.fract() != 0.0 || v < 0.0 {
                return err(no, format!("edge weight {field} is not a non-negative integer"));
            }
            if values.len() == cells.len() {
                return err(
                    no,
                    format!("EDGE_WEIGHT_SECTION has more than the {} weights DIMENSION {n} needs", cells.len()),
                );
            }
            values.push(v as i64);
        }
    }
    if values.len() < cells.len() {
        return err(
            last_data,
            format!(
                "EDGE_WEIGHT_SECTION (line {start}) has {} weights; DIMENSION {n} needs {}",
                values.len(),
                cells.len()
            ),
        );
    }
    let mut dist = vec![0; n * n];
    for (&(i, j), &v) in cells.iter().zip(&values) {
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
