//! What the sweep reads of a run: the JSON record its last JSON line holds, with the time
//! the table needs typed and checked, and the experiment's `columns` present by name.

use anyhow::{anyhow, Result};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::config::{Experiment, Timing};

/// A run's record as the sweep keeps it.
#[derive(Debug, Clone, Serialize)]
#[serde(transparent)]
pub(crate) struct RunRecord {
    /// Every field, by name and in the record's order (`runs.jsonl` keeps them as printed):
    /// the table's `columns` and the CSV read them.
    pub(crate) fields: Map<String, Value>,
    /// The run's time: the record's own `seconds` (every app's [`dps_harness::Common`]), or
    /// with `timing = "wall"` the launch's wall time, added to the record.
    #[serde(skip)]
    pub(crate) seconds: f64,
}

/// The fields of a record the sweep's own columns need, typed.
#[derive(Deserialize)]
struct Needed {
    seconds: f64,
}

impl RunRecord {
    /// Reads the record of one run, `run` naming it in errors, from the JSON object it
    /// printed. With `timing = "wall"`, a record without `seconds` gets `wall_s`.
    ///
    /// # Errors
    /// The record has no `seconds` (or not a number), or lacks one of `columns` (the
    /// experiment's, for a run that makes a row; none for the serial reference, which gives
    /// only its time): a renamed field must not show as an empty cell.
    pub(crate) fn read(
        e: &Experiment,
        run: &str,
        mut object: Map<String, Value>,
        wall_s: f64,
        columns: &[String],
    ) -> Result<RunRecord> {
        if e.timing == Timing::Wall && !object.contains_key("seconds") {
            object.insert("seconds".into(), wall_s.into());
        }
        let fields = Value::Object(object);
        let needed = Needed::deserialize(&fields)
            .map_err(|why| anyhow!("experiment {:?}, {run}: the JSON record does not fit the table: {why}", e.name))?;
        let Value::Object(fields) = fields else { unreachable!("built as an object") };
        let record = RunRecord { fields, seconds: needed.seconds };
        if let Some(c) = columns.iter().find(|c| record.column(c).is_none()) {
            return Err(anyhow!("experiment {:?}, {run}: the JSON record has no field `{c}` (a column)", e.name));
        }
        Ok(record)
    }

    /// The field `name` (`null` when the run did not measure it), or `None` if the record
    /// has no such field.
    pub(crate) fn field(&self, name: &str) -> Option<&Value> {
        self.fields.get(name)
    }

    /// The column `name`: a field, or a field of every element of an array of objects
    /// (`iterations[].efficiency`, see [`super::path`]); `None` if the record lacks it.
    pub(crate) fn column(&self, name: &str) -> Option<Value> {
        super::path::lookup(&self.fields, name)
    }

    /// The run was simulated and its clock reached the end of its range
    /// (`sim_clock_saturated`): its times are where the clock stopped, not a prediction.
    pub(crate) fn clock_saturated(&self) -> bool {
        self.field("sim_clock_saturated") == Some(&Value::Bool(true))
    }

    /// The names of the scalar fields (not objects or arrays).
    pub(crate) fn scalar_names(&self) -> impl Iterator<Item = &str> {
        self.fields.iter().filter(|(_, v)| !v.is_object() && !v.is_array()).map(|(k, _)| k.as_str())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn experiment(timing: Timing, columns: &[&str]) -> Experiment {
        let mut e: Experiment = toml::from_str("name = \"x\"\ntitle = \"x\"\napp = \"dps-x\"").unwrap();
        e.timing = timing;
        e.columns = columns.iter().map(|c| c.to_string()).collect();
        e
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn a_record_without_seconds_is_an_error_naming_the_run() {
        let e = experiment(Timing::Record, &["gflops"]);
        let err = RunRecord::read(&e, "ranks=2 run 1/3", object(json!({"gflops": 1.5})), 9.0, &e.columns).unwrap_err();
        assert!(err.to_string().contains("ranks=2 run 1/3") && err.to_string().contains("`seconds`"), "{err}");
        let err =
            RunRecord::read(&e, "r", object(json!({"seconds": null, "gflops": 1.5})), 9.0, &e.columns).unwrap_err();
        assert!(err.to_string().contains("null"), "{err}");
    }

    #[test]
    fn a_missing_column_is_an_error_and_a_null_one_is_not() {
        let e = experiment(Timing::Record, &["gflops", "verified"]);
        let err =
            RunRecord::read(&e, "r", object(json!({"seconds": 1.0, "verified": null})), 9.0, &e.columns).unwrap_err();
        assert!(err.to_string().contains("no field `gflops`"), "{err}");
        let r =
            RunRecord::read(&e, "r", object(json!({"seconds": 1.0, "gflops": 2, "verified": null})), 9.0, &e.columns)
                .unwrap();
        assert_eq!((r.seconds, r.field("verified")), (1.0, Some(&Value::Null)));
    }

    #[test]
    fn a_record_whose_simulated_clock_saturated_says_so() {
        let e = experiment(Timing::Record, &[]);
        let read = |v| RunRecord::read(&e, "r", object(v), 9.0, &e.columns).unwrap().clock_saturated();
        assert!(read(json!({"seconds": 1.8e10, "sim_clock_saturated": true})));
        assert!(!read(json!({"seconds": 1.0, "sim_clock_saturated": false})));
        assert!(!read(json!({"seconds": 1.0})));
    }

    #[test]
    fn wall_timing_adds_the_wall_time_only_where_seconds_is_missing() {
        let e = experiment(Timing::Wall, &[]);
        assert_eq!(RunRecord::read(&e, "r", object(json!({"bytes": 8})), 9.0, &e.columns).unwrap().seconds, 9.0);
        assert_eq!(RunRecord::read(&e, "r", object(json!({"seconds": 2.0})), 9.0, &e.columns).unwrap().seconds, 2.0);
        let r = RunRecord::read(&e, "r", object(json!({"bytes": 8, "list": [1]})), 9.0, &e.columns).unwrap();
        assert_eq!(r.scalar_names().collect::<Vec<_>>(), ["bytes", "seconds"]);
    }
}
