//! The range of every number a platform file holds, and the check that refuses the rest.
//!
//! The simulator keeps time as whole nanoseconds in a `u64`: 1.8·10¹⁹ ns, about 584 years.
//! A cost the file gives is charged per message, per byte or per kernel call, so one
//! absurd value (a latency of 10³⁰ µs, a bandwidth of 10⁻¹² bytes per µs) is enough to run
//! past that range in one event. The limits below are far beyond any machine (a message
//! that takes an hour, a link or a per-byte cost of one byte per second, a kernel call of an
//! hour) and small enough that a run of millions of such events still fits the clock: at
//! the limits, 5 million hour-long events in a row (the simulator saturates past that, and
//! says so, rather than wrap).

use std::fmt;

/// The allowed range of one field: `min..=max`, or `min` excluded when `min_excluded`.
/// Every value must also be a finite number.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limit {
    /// The smallest allowed value.
    pub min: f64,
    /// Whether `min` itself is refused (a time or a rate must be above 0).
    pub min_excluded: bool,
    /// The largest allowed value.
    pub max: f64,
    /// The field's unit, as the message prints it.
    pub unit: &'static str,
    /// What `min` means, for the message (e.g. "1 byte per second"; may be empty).
    pub min_means: &'static str,
    /// What `max` means (e.g. "1 hour"; may be empty).
    pub max_means: &'static str,
}

/// An hour in µs: the longest a message may take or cost.
const HOUR_US: f64 = 3.6e9;

/// A link's latency `l` (`links.fit.latency_us`): at most an hour.
pub const LATENCY_US: Limit =
    Limit { min: 0.0, min_excluded: false, max: HOUR_US, unit: "µs", min_means: "", max_means: "1 hour" };

/// A measured one-way time (`links.times_us`): above 0, at most an hour.
pub const ONE_WAY_US: Limit =
    Limit { min: 0.0, min_excluded: true, max: HOUR_US, unit: "µs", min_means: "", max_means: "1 hour" };

/// A link's bandwidth `b` (`links.fit.bytes_per_us`): at least one byte per second (below
/// it one megabyte alone would take 12 days).
pub const BYTES_PER_US: Limit = Limit {
    min: 1e-6,
    min_excluded: false,
    max: f64::MAX,
    unit: "bytes/µs",
    min_means: "1 byte per second",
    max_means: "",
};

/// A transfer's CPU cost per message (`overheads.*.us_per_message`): at most an hour.
pub const US_PER_MESSAGE: Limit =
    Limit { min: 0.0, min_excluded: false, max: HOUR_US, unit: "µs", min_means: "", max_means: "1 hour" };

/// A transfer's CPU cost per byte (`overheads.*.ns_per_byte`): at most a second a byte, the
/// bandwidth's floor.
pub const NS_PER_BYTE: Limit =
    Limit { min: 0.0, min_excluded: false, max: 1e9, unit: "ns/byte", min_means: "", max_means: "1 byte per second" };

/// A node's share of a core (`header.cpu_share`): above 0, at most a whole core.
pub const CPU_SHARE: Limit =
    Limit { min: 0.0, min_excluded: true, max: 1.0, unit: "", min_means: "no CPU at all", max_means: "a whole core" };

/// The co-run slowdown (`overheads.co_run_slowdown`): a factor on every operation's time.
pub const CO_RUN_SLOWDOWN: Limit = Limit {
    min: 1.0,
    min_excluded: false,
    max: 10.0,
    unit: "",
    min_means: "no slowdown",
    max_means: "ten times slower",
};

/// A kernel call's measured time (`kernels.points.seconds`): above 0, at most an hour.
pub const KERNEL_SECONDS: Limit =
    Limit { min: 0.0, min_excluded: true, max: 3600.0, unit: "s", min_means: "", max_means: "1 hour" };

/// A kernel call's work (`kernels.points.work`): above 0.
pub const KERNEL_WORK: Limit =
    Limit { min: 0.0, min_excluded: true, max: f64::MAX, unit: "", min_means: "", max_means: "" };

/// A kernel's rate, work over seconds (calls of unmeasured shapes are charged work / rate):
/// at least one unit of work a second (a flop, a byte, a pixel).
pub const KERNEL_RATE: Limit = Limit {
    min: 1.0,
    min_excluded: false,
    max: f64::MAX,
    unit: "per s",
    min_means: "1 unit of work per second",
    max_means: "",
};

/// The load average of the header (`header.load_average`): 0 or more.
pub const LOAD_AVERAGE: Limit =
    Limit { min: 0.0, min_excluded: false, max: f64::MAX, unit: "", min_means: "", max_means: "" };

impl Limit {
    /// Whether `value` is in range (a finite number in `min..=max`).
    pub fn allows(&self, value: f64) -> bool {
        value.is_finite() && value <= self.max && (value > self.min || (value == self.min && !self.min_excluded))
    }

    /// `Ok`, or one line naming `field`, its value and the limit it crosses.
    ///
    /// # Errors
    /// The line, when `value` is not in range.
    pub fn check(&self, field: impl fmt::Display, value: f64) -> Result<(), String> {
        if self.allows(value) {
            return Ok(());
        }
        let unit = |x: f64| if self.unit.is_empty() { number(x) } else { format!("{} {}", number(x), self.unit) };
        let means = |m: &str| if m.is_empty() { String::new() } else { format!(" ({m})") };
        let why = if !value.is_finite() {
            "not a finite number".to_string()
        } else if value > self.max {
            format!("above the limit of {}{}", unit(self.max), means(self.max_means))
        } else if self.min_excluded {
            format!("must be above {}{}", unit(self.min), means(self.min_means))
        } else {
            format!("below the limit of {}{}", unit(self.min), means(self.min_means))
        };
        Err(format!("{field} = {}: {why}", number(value)))
    }
}

/// A number as a person reads it: plain between 10⁻³ and 10⁷, else with an exponent
/// (`1e30`, not thirty zeros).
fn number(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-3..1e7).contains(&x.abs()) {
        x.to_string()
    } else {
        format!("{x:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_names_the_field_the_value_and_the_bound() {
        assert_eq!(LATENCY_US.check("l", 3.6e9), Ok(()));
        assert_eq!(LATENCY_US.check("l", 0.0), Ok(()));
        let above = LATENCY_US.check("links[0].fit[0].latency_us", 1e30).unwrap_err();
        assert_eq!(above, "links[0].fit[0].latency_us = 1e30: above the limit of 3.6e9 µs (1 hour)");
        assert_eq!(LATENCY_US.check("l", -1.0).unwrap_err(), "l = -1: below the limit of 0 µs");
        assert_eq!(ONE_WAY_US.check("t", 0.0).unwrap_err(), "t = 0: must be above 0 µs");
        assert_eq!(BYTES_PER_US.check("b", f64::NAN).unwrap_err(), "b = NaN: not a finite number");
        assert_eq!(BYTES_PER_US.check("b", f64::INFINITY).unwrap_err(), "b = inf: not a finite number");
        let slow = BYTES_PER_US.check("b", 1e-12).unwrap_err();
        assert_eq!(slow, "b = 1e-12: below the limit of 1e-6 bytes/µs (1 byte per second)");
        assert_eq!(CO_RUN_SLOWDOWN.check("f", 0.5).unwrap_err(), "f = 0.5: below the limit of 1 (no slowdown)");
        assert_eq!(KERNEL_WORK.check("w", 0.0).unwrap_err(), "w = 0: must be above 0");
    }
}
