//! `dps-bench table`: turns JSON lines (one object per run, as the benchmarks print them)
//! into a markdown table whose columns are the first object's keys, in order.

use std::io::BufRead;

use anyhow::Result;
use dps_harness::BadInput;
use serde_json::{Map, Value};

/// Reads JSON lines from standard input and prints them as a markdown table.
///
/// # Errors
/// A [`BadInput`] naming the line that is not a JSON object, or saying that there were no
/// lines at all (a table of nothing usually means the benchmark before it failed).
pub(crate) fn print_from_stdin() -> Result<()> {
    let rows = read_rows(std::io::stdin().lock())?;
    crate::print_out(&markdown(&rows))
}

/// The JSON objects of `input`, one per non-blank line.
fn read_rows(input: impl BufRead) -> Result<Vec<Map<String, Value>>> {
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    for (i, line) in input.lines().enumerate() {
        let line = line.map_err(|e| BadInput::new(format!("standard input, line {}: {e}", i + 1)))?;
        if line.trim().is_empty() {
            continue;
        }
        let row = serde_json::from_str::<Map<String, Value>>(&line)
            .map_err(|e| BadInput::new(format!("standard input, line {}: not a JSON object ({e})", i + 1)))?;
        rows.push(row);
    }
    if rows.is_empty() {
        dps_harness::bad_input!("standard input holds no JSON lines: nothing to tabulate");
    }
    Ok(rows)
}

/// The rows as a markdown table, with the first row's keys as columns.
pub(crate) fn markdown(rows: &[Map<String, Value>]) -> String {
    let Some(first) = rows.first() else { return String::new() };
    let keys: Vec<&String> = first.keys().collect();
    let mut out = format!("| {} |\n", keys.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" | "));
    out += &format!("|{}\n", " ---: |".repeat(keys.len()));
    for row in rows {
        let cells: Vec<String> = keys.iter().map(|k| row.get(*k).map(cell).unwrap_or_default()).collect();
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// Numbers with up to four significant decimals; everything else as JSON prints it.
fn cell(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.abs() >= 100.0 {
                format!("{x:.1}")
            } else {
                format!("{x:.4}").trim_end_matches('0').trim_end_matches('.').to_string()
            }
        }
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_first_row() {
        let rows: Vec<Map<String, Value>> = ["{\"b\":1,\"a\":0.12345}", "{\"a\":250.04,\"b\":\"x\"}"]
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(markdown(&rows), "| b | a |\n| ---: | ---: |\n| 1 | 0.1235 |\n| x | 250.0 |\n");
    }

    #[test]
    fn bad_lines_and_no_lines_are_bad_input() {
        let e = read_rows(&b"{\"a\":1}\n\n[1, 2]\n"[..]).unwrap_err();
        assert!(e.is::<BadInput>());
        assert!(e.to_string().starts_with("standard input, line 3: not a JSON object"), "{e}");
        assert!(read_rows(&b"\n \n"[..]).unwrap_err().to_string().contains("no JSON lines"));
        assert_eq!(read_rows(&b"{\"a\":1}\n{\"a\":2}"[..]).unwrap().len(), 2);
        assert!(read_rows(&b"\xff\xfe\n"[..]).unwrap_err().to_string().contains("line 1"));
    }
}
