//! Matrix Market input: `%%MatrixMarket matrix array real general` (column-major values) and
//! `%%MatrixMarket matrix coordinate real general` (1-based `i j value` triples). Errors name
//! the line and what is wrong with it.

use std::path::Path;

/// Reads a square real matrix; returns its order n and its entries, column-major.
///
/// # Errors
/// A message naming the file and line: not Matrix Market, an unsupported kind, a
/// non-square matrix, a bad number, an index out of range, or too few or too many entries.
pub fn read_square(path: &Path) -> Result<(usize, Vec<f64>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_square(&text).map_err(|(line, msg)| format!("{}:{line}: {msg}", path.display()))
}

fn parse_square(text: &str) -> Result<(usize, Vec<f64>), (usize, String)> {
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim()));
    let (_, header) = lines.next().ok_or((1, "empty file".to_string()))?;
    let words: Vec<String> = header.split_whitespace().map(str::to_lowercase).collect();
    if words.first().map(String::as_str) != Some("%%matrixmarket") || words.get(1).map(String::as_str) != Some("matrix")
    {
        return Err((1, "not a Matrix Market file (expected \"%%MatrixMarket matrix ...\")".into()));
    }
    let format = words.get(2).cloned().unwrap_or_default();
    if words.get(3).map(String::as_str) != Some("real") || words.get(4).map(String::as_str) != Some("general") {
        return Err((
            1,
            format!("unsupported kind \"{}\": only \"real general\" matrices are read", words[3..].join(" ")),
        ));
    }
    let mut data = lines.filter(|(_, l)| !l.is_empty() && !l.starts_with('%'));
    let (size_line, size) = data.next().ok_or((1, "no size line".to_string()))?;
    let dims: Vec<usize> = size
        .split_whitespace()
        .map(|w| w.parse().map_err(|_| (size_line, format!("\"{w}\" is not a dimension"))))
        .collect::<Result<_, _>>()?;
    let (rows, cols) = match dims[..] {
        [r, c] | [r, c, _] => (r, c),
        _ => return Err((size_line, "expected \"rows cols\" (array) or \"rows cols entries\" (coordinate)".into())),
    };
    if rows != cols {
        return Err((size_line, format!("the matrix is {rows}x{cols}; LU needs a square matrix")));
    }
    let n = rows;
    let number = |line: usize, w: &str| w.parse::<f64>().map_err(|_| (line, format!("\"{w}\" is not a number")));
    let mut a = vec![0.0; n * n];
    match format.as_str() {
        "array" => {
            let mut k = 0;
            for (line, l) in data {
                for w in l.split_whitespace() {
                    if k == n * n {
                        return Err((line, format!("more than the {} entries of a {n}x{n} matrix", n * n)));
                    }
                    a[k] = number(line, w)?;
                    k += 1;
                }
            }
            if k != n * n {
                return Err((size_line, format!("{k} entries for a {n}x{n} matrix ({} expected)", n * n)));
            }
        }
        "coordinate" => {
            let expected =
                dims.get(2).copied().ok_or((size_line, "coordinate format needs \"rows cols entries\"".to_string()))?;
            let mut count = 0;
            for (line, l) in data {
                let w: Vec<&str> = l.split_whitespace().collect();
                let [i, j, v] = w[..] else { return Err((line, "expected \"row col value\"".into())) };
                let index = |s: &str| s.parse::<usize>().ok().filter(|&x| (1..=n).contains(&x));
                let (Some(i), Some(j)) = (index(i), index(j)) else {
                    return Err((line, format!("index out of range 1..={n}")));
                };
                a[(j - 1) * n + (i - 1)] = number(line, v)?;
                count += 1;
            }
            if count != expected {
                return Err((size_line, format!("{count} entries, the size line announces {expected}")));
            }
        }
        other => return Err((1, format!("unknown format \"{other}\" (expected array or coordinate)"))),
    }
    Ok((n, a))
}

#[cfg(test)]
mod tests {
    use super::parse_square;

    #[test]
    fn reads_array_and_coordinate() {
        let (n, a) = parse_square("%%MatrixMarket matrix array real general\n% c\n2 2\n3\n6\n5\n7\n").unwrap();
        assert_eq!((n, a), (2, vec![3.0, 6.0, 5.0, 7.0]));
        let (n, a) = parse_square("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 4.5\n2 1 -1\n").unwrap();
        assert_eq!((n, a), (2, vec![4.5, -1.0, 0.0, 0.0]));
    }

    #[test]
    fn errors_name_the_line() {
        let err = |t: &str| parse_square(t).unwrap_err();
        assert_eq!(err("hello\n").0, 1);
        assert!(err("%%MatrixMarket matrix array real general\n2 3\n").1.contains("2x3; LU needs a square"));
        assert_eq!(err("%%MatrixMarket matrix array real general\n2 2\n1\nx\n"), (4, "\"x\" is not a number".into()));
        assert!(err("%%MatrixMarket matrix array real general\n2 2\n1 2 3\n").1.contains("3 entries"));
        assert!(err("%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n").1.contains("out of range"));
        assert!(err("%%MatrixMarket matrix array complex general\n").1.contains("only \"real general\""));
    }
}
