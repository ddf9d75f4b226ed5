//! The tables of a sweep: markdown (measured columns, speedups, the published numbers beside
//! them) and CSV (every scalar field of every kept run, through the `csv` crate).

use std::collections::BTreeSet;

use anyhow::Result;
use serde_json::Value;

use super::config::{self, Experiment};
use super::record::RunRecord;
use super::{References, Row};

fn seconds_of(rows: &[Row], params: &[(String, String)], ranks: usize) -> Option<f64> {
    rows.iter().find(|r| r.ranks == ranks && r.params == params).and_then(|r| r.seconds)
}

/// The reference time of a row's parameter point.
pub(super) fn reference_of(references: &References, params: &[(String, String)]) -> Option<f64> {
    references
        .iter()
        .find(|(p, _)| p.iter().map(|(k, v)| (k.clone(), config::arg(v))).collect::<Vec<_>>() == params)
        .and_then(|(_, s)| *s)
}

fn cell(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let x = n.as_f64().unwrap_or(f64::NAN);
            if x.abs() >= 100.0 {
                format!("{x:.1}")
            } else if x != 0.0 && x.abs() < 0.01 {
                // Three significant digits: a time per call or per generation of 42 µs
                // would show as 0.0000.
                let decimals = 2 - x.abs().log10().floor() as i32;
                format!("{x:.*}", decimals.clamp(0, 12) as usize)
            } else {
                format!("{x:.4}")
            }
        }
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        // An array column (`iterations[].efficiency`): its elements in one cell.
        Value::Array(items) => items.iter().map(cell).collect::<Vec<_>>().join(" "),
        other => other.to_string(),
    }
}

fn published_for<'a>(e: &'a Experiment, row: &Row) -> Option<&'a config::Published> {
    e.published.iter().find(|p| {
        p.when.iter().all(|(k, v)| match k.as_str() {
            "ranks" => v.as_integer() == Some(row.ranks as i64),
            _ => row.params.iter().any(|(pk, pv)| pk == k && *pv == config::arg(v)),
        })
    })
}

/// The experiment's markdown table.
pub(crate) fn markdown(e: &Experiment, rows: &[Row], references: &References) -> String {
    let param_keys: Vec<&String> = e.params.keys().collect();
    let paper_keys: BTreeSet<&String> = e.published.iter().flat_map(|p| p.values.keys()).collect();
    let has_ref = e.reference.is_some();
    let has_one = e.ranks.contains(&1) && e.ranks.len() > 1;
    let mut head: Vec<String> = param_keys.iter().map(|k| k.to_string()).collect();
    head.push("ranks".into());
    head.push("time (s)".into());
    let show_spread = e.repeat > 1;
    if show_spread {
        head.push("spread".into());
    }
    if has_ref {
        head.extend(["speedup vs serial".into(), "efficiency vs serial".into()]);
    }
    if has_one {
        head.extend(["speedup vs 1 rank".into(), "efficiency vs 1 rank".into()]);
    }
    head.extend(e.columns.iter().cloned());
    head.extend(paper_keys.iter().map(|k| format!("paper: {k}")));
    head.push("status".into());
    let mut out = format!("### {}\n\n", e.title);
    if !e.source.is_empty() {
        out += &format!("{}\n\n", e.source);
    }
    if let Some(cluster) = &e.cluster {
        out += &format!("{}\n\n", cluster.describe());
    }
    if show_spread {
        out += &format!("Time: the median of {} runs; spread: (slowest − fastest) / median.\n\n", e.repeat);
    }
    out += &format!("| {} |\n|{}\n", head.join(" | "), " --- |".repeat(head.len()));
    for r in rows {
        let mut cells: Vec<String> = r.params.iter().map(|(_, v)| v.clone()).collect();
        cells.push(if r.oversubscribed { format!("{} (oversubscribed)", r.ranks) } else { r.ranks.to_string() });
        cells.push(r.seconds.map_or("-".into(), |s| format!("{s:.4}")));
        if show_spread {
            cells.push(r.spread.map_or("-".into(), |s| format!("{:.0} %", s * 100.0)));
        }
        let ratio = |base: Option<f64>| match (base, r.seconds) {
            (Some(b), Some(s)) if s > 0.0 => (format!("{:.2}", b / s), format!("{:.2}", b / s / r.ranks as f64)),
            _ => ("-".into(), "-".into()),
        };
        if has_ref {
            let (s, eff) = ratio(reference_of(references, &r.params));
            cells.extend([s, eff]);
        }
        if has_one {
            let (s, eff) = ratio(seconds_of(rows, &r.params, 1));
            cells.extend([s, eff]);
        }
        cells.extend(
            e.columns.iter().map(|c| r.record.as_ref().and_then(|rec| rec.column(c)).map_or("-".into(), |v| cell(&v))),
        );
        let paper = published_for(e, r);
        cells.extend(paper_keys.iter().map(|k| paper.and_then(|p| p.values.get(*k)).map_or("".into(), config::arg)));
        cells.push(r.status.clone());
        out += &format!("| {} |\n", cells.join(" | "));
    }
    out
}

/// Every row as CSV: parameters, ranks, oversubscribed, seconds, spread, status, then every scalar
/// field of the kept run (`run.<name>`, sorted; empty where a run has no such field or it
/// is null).
///
/// # Errors
/// None in practice: the CSV is written to memory.
pub(crate) fn csv(rows: &[Row]) -> Result<String> {
    let fields: BTreeSet<&str> =
        rows.iter().filter_map(|r| r.record.as_ref()).flat_map(RunRecord::scalar_names).collect();
    let params: Vec<&str> =
        rows.first().map(|r| r.params.iter().map(|(k, _)| k.as_str()).collect()).unwrap_or_default();
    let mut out = csv::Writer::from_writer(Vec::new());
    let run_fields = fields.iter().map(|f| format!("run.{f}"));
    let fixed = ["ranks", "oversubscribed", "seconds", "spread", "status"].map(String::from);
    out.write_record(params.iter().map(|p| p.to_string()).chain(fixed).chain(run_fields))?;
    for r in rows {
        let mut cells: Vec<String> = r.params.iter().map(|(_, v)| v.clone()).collect();
        cells.extend([
            r.ranks.to_string(),
            r.oversubscribed.to_string(),
            r.seconds.map_or(String::new(), |s| s.to_string()),
            r.spread.map_or(String::new(), |s| s.to_string()),
            r.status.clone(),
        ]);
        cells.extend(fields.iter().map(|f| match r.record.as_ref().and_then(|rec| rec.field(f)) {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        }));
        out.write_record(&cells)?;
    }
    Ok(String::from_utf8(out.into_inner()?)?)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn small_numbers_keep_three_significant_digits() {
        assert_eq!(cell(&json!(0.0000421337)), "0.0000421");
        assert_eq!(cell(&json!(0.0042)), "0.00420");
        assert_eq!(cell(&json!(0.5)), "0.5000");
        assert_eq!(cell(&json!(0.0)), "0.0000");
        assert_eq!(cell(&json!(1234.56)), "1234.6");
        assert_eq!(cell(&json!(-0.003)), "-0.00300");
    }

    #[test]
    fn an_array_column_is_one_cell() {
        assert_eq!(cell(&json!([0.5, 0.25, null, 2])), "0.5000 0.2500 - 2");
    }
}
