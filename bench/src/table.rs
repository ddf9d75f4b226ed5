//! `dps-bench table`: turns JSON lines (one object per run, as the benchmarks print them)
//! into a markdown table whose columns are the first object's keys, in order.

use std::io::BufRead;

use anyhow::{Context, Result};
use serde_json::{Map, Value};

/// Reads JSON lines from standard input and prints them as a markdown table.
pub(crate) fn print_from_stdin() -> Result<()> {
    let mut rows: Vec<Map<String, Value>> = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.context("cannot read standard input")?;
        if line.trim().is_empty() {
            continue;
        }
        let row: Map<String, Value> =
            serde_json::from_str(&line).with_context(|| format!("not a JSON object: {line}"))?;
        rows.push(row);
    }
    print!("{}", markdown(&rows));
    Ok(())
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
}
