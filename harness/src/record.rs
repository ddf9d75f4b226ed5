//! The result record of a run: what every app prints with `--json`, one JSON object per
//! run, and what `dps-bench sweep`, the experiments file and the tests read back.
//!
//! Each app declares its record as a `#[derive(Serialize, Deserialize)]` struct that
//! flattens [`Common`] (`#[serde(flatten)] common: Common`) and implements `Display` for
//! the human-readable line, then hands it to [`print`](fn@print). A field every app reports
//! goes into [`Common`], once.
//!
//! Numbers that may not be finite: JSON has no NaN or infinity, and serde_json writes a
//! non-finite `f64` as `null`. A plain `f64` field therefore reads `null` when it is not
//! finite (a rate over zero seconds, say). A check's result, where `null` would read like
//! "not measured", is a [`FiniteOrText`]: the number, or its text (`"NaN"`, `"inf"`).

use std::fmt;
use std::io::Write;

use anyhow::{Context, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The fields every app's record has, in every variant.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Common {
    /// The app without its `dps-` prefix: `matmul`, `lu`, `life`, `tsp`.
    pub app: String,
    /// The variant run, as given on the command line.
    pub variant: String,
    /// MPI ranks of the run (1 for a serial variant).
    pub ranks: usize,
    /// Worker threads (or bands, or BLAS threads of a serial variant) of the run.
    pub threads: usize,
    /// The time the app reports (its median over repetitions, where it repeats).
    pub seconds: f64,
    /// `null` without `--verify` (or when there is nothing to check it against), else
    /// whether the result passed its check.
    pub verified: Option<bool>,
    /// Where the rank's threads ran: `"none"` (the OS placed them; also every run without
    /// the runtime), or the cores of `--bind cores` ([`dps::Runtime::binding`]).
    pub binding: String,
    /// Under `--simulate`: the prediction and what the simulator saw
    /// ([`crate::simulate::Simulation`]); absent on a real run.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub simulation: Option<crate::simulate::Simulation>,
}

impl Common {
    /// The common fields of a run of `app`'s `variant`, with no binding.
    pub fn new(app: &str, variant: &str, ranks: usize, threads: usize, seconds: f64, verified: Option<bool>) -> Common {
        Common {
            app: app.into(),
            variant: variant.into(),
            ranks,
            threads,
            seconds,
            verified,
            binding: "none".into(),
            simulation: None,
        }
    }

    /// The same fields, with the binding the runtime used; under simulation, with the
    /// simulation's fields, `seconds` being the prediction.
    pub fn bound_by(self, rt: &dps::Runtime) -> Common {
        let simulation = crate::simulate::Simulation::of(rt, self.seconds);
        Common { binding: rt.binding().to_string(), simulation, ..self }
    }
}

/// A number written as a JSON number when finite and as its text (`"NaN"`, `"inf"`,
/// `"-inf"`) when not: a residual or an error that overflowed must not read as `null`.
/// `Display` and `LowerExp` format it as an `f64` does (precision included), which prints
/// the same words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FiniteOrText(pub f64);

impl Serialize for FiniteOrText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.is_finite() {
            s.serialize_f64(self.0)
        } else {
            s.serialize_str(&self.0.to_string())
        }
    }
}

impl<'de> Deserialize<'de> for FiniteOrText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Number(f64),
            Text(String),
        }
        match Either::deserialize(d)? {
            Either::Number(x) => Ok(FiniteOrText(x)),
            Either::Text(t) => match t.parse::<f64>() {
                Ok(x) if !x.is_finite() => Ok(FiniteOrText(x)),
                _ => Err(serde::de::Error::custom(format!("{t:?} is neither a number nor NaN or infinite"))),
            },
        }
    }
}

impl fmt::Display for FiniteOrText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::LowerExp for FiniteOrText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerExp::fmt(&self.0, f)
    }
}

/// Prints `record` on standard output: one JSON line with `json`, else its human-readable
/// `Display` form.
///
/// # Errors
/// If standard output cannot be written (a closed pipe, a full disk).
pub fn print<R: Serialize + fmt::Display>(record: &R, json: bool) -> Result<()> {
    let text = if json {
        serde_json::to_string(record).context("cannot write the JSON record")?
    } else {
        record.to_string() + &simulated_note(record)
    };
    let mut out = std::io::stdout().lock();
    writeln!(out, "{text}").and_then(|()| out.flush()).context("cannot write the report to standard output")
}

/// Under simulation, a second line for the human-readable form: the time above is a
/// prediction, and what each virtual rank was busy for.
fn simulated_note<R: Serialize>(record: &R) -> String {
    let Ok(value) = serde_json::to_value(record) else { return String::new() };
    let Ok(sim) = serde_json::from_value::<crate::simulate::Simulation>(value) else { return String::new() };
    let busy: Vec<String> = sim.sim_busy_seconds.iter().map(|b| format!("{b:.4}")).collect();
    let predicted = if sim.sim_clock_saturated {
        "beyond the simulated clock's range (584 years): no prediction, the times shown are where the clock stopped"
            .to_string()
    } else {
        format!("{:.6} s", sim.predicted_seconds)
    };
    format!(
        "\n(predicted by the simulator, {} mode, on {} virtual ranks: {predicted}; busy per rank {} s; {} operations, {} messages)",
        sim.sim_mode,
        sim.simulated_ranks,
        busy.join(" "),
        sim.sim_operations,
        sim.sim_messages
    )
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct AppRecord {
        #[serde(flatten)]
        common: Common,
        n: usize,
        #[serde(skip_serializing_if = "Option::is_none")]
        residual: Option<FiniteOrText>,
    }

    fn record(residual: Option<f64>) -> AppRecord {
        AppRecord {
            common: Common::new("lu", "stream", 2, 4, 0.5, Some(true)),
            n: 8,
            residual: residual.map(FiniteOrText),
        }
    }

    #[test]
    fn the_common_fields_sit_beside_the_apps_own() {
        let v = serde_json::to_value(record(Some(0.25))).unwrap();
        let want = json!({"app": "lu", "variant": "stream", "ranks": 2, "threads": 4, "seconds": 0.5,
                          "verified": true, "binding": "none", "n": 8, "residual": 0.25});
        assert_eq!(v, want);
        assert_eq!(serde_json::from_value::<AppRecord>(v).unwrap(), record(Some(0.25)));
        // An absent optional field is absent, not null; an unchecked run's `verified` is null.
        let mut r = record(None);
        r.common.verified = None;
        let v = serde_json::to_value(&r).unwrap();
        assert!(v.get("residual").is_none());
        assert_eq!(v["verified"], Value::Null);
    }

    /// A simulated record whose clock did or did not reach the end of its range.
    fn simulated(saturated: bool) -> AppRecord {
        let mut r = record(None);
        r.common.simulation = Some(crate::simulate::Simulation {
            predicted_seconds: 18_446_744_073.709553,
            simulated_ranks: 2,
            sim_mode: "pdexec".into(),
            sim_busy_seconds: vec![1.0, 2.0],
            sim_total_seconds: 18_446_744_073.709553,
            sim_operations: 3,
            sim_messages: 4,
            sim_peak_rss_bytes: None,
            sim_clock_saturated: saturated,
        });
        r
    }

    #[test]
    fn a_prediction_past_the_clock_is_not_printed_as_a_time() {
        let note = simulated_note(&simulated(true));
        assert!(note.contains("beyond the simulated clock's range") && !note.contains("18446744073"), "{note}");
        let v = serde_json::to_value(simulated(true)).unwrap();
        assert_eq!(v["sim_clock_saturated"], true);
        let note = simulated_note(&simulated(false));
        assert!(note.contains("18446744073.709553 s") && !note.contains("beyond"), "{note}");
        // A record written before the flag existed reads as not saturated.
        let mut old = serde_json::to_value(simulated(false)).unwrap();
        old.as_object_mut().unwrap().remove("sim_clock_saturated");
        assert_eq!(serde_json::from_value::<AppRecord>(old).unwrap(), simulated(false));
    }

    #[test]
    fn a_missing_common_field_is_named() {
        let e =
            serde_json::from_str::<AppRecord>(r#"{"app":"lu","variant":"x","ranks":1,"threads":1,"n":1}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `seconds`"), "{e}");
    }

    #[test]
    fn non_finite_numbers_are_text_and_read_back() {
        for (x, text) in [(f64::NAN, "NaN"), (f64::INFINITY, "inf"), (f64::NEG_INFINITY, "-inf")] {
            let v = serde_json::to_value(FiniteOrText(x)).unwrap();
            assert_eq!(v, json!(text));
            let back: FiniteOrText = serde_json::from_value(v).unwrap();
            assert_eq!(back.0.to_string(), x.to_string());
            // The human line prints the same word as the JSON, whatever the precision.
            assert_eq!(format!("{:.3}", FiniteOrText(x)), text);
            assert_eq!(format!("{:.1e}", FiniteOrText(x)), text);
        }
        assert_eq!(serde_json::to_string(&FiniteOrText(0.5)).unwrap(), "0.5");
        assert_eq!(format!("{:.1e}", FiniteOrText(0.00012)), "1.2e-4");
        assert!(serde_json::from_value::<FiniteOrText>(json!("0.5")).is_err(), "a finite number as text");
        assert!(serde_json::from_value::<FiniteOrText>(json!("fast")).is_err());
        assert!(serde_json::from_value::<FiniteOrText>(Value::Null).is_err());
    }
}
