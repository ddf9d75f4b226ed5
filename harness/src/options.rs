//! The options several programs share, as small `clap` groups that each program flattens
//! (`#[command(flatten)] output: Output`): a program takes the groups it has a use for.
//!
//! The option names, defaults and help are the ones the programs had before they shared
//! them; where a program says more about an option (what `--verify` checks, what `--seed`
//! seeds), it keeps its own help with `#[command(mut_arg("verify", |a| a.help("...")))]`,
//! and where programs differ in a default ([`Seed`]), the default is a parameter of the
//! group, spelled out where the program flattens it. The runtime's own options (`--trace`,
//! `--stall-timeout`) are `dps::RuntimeArgs`, flattened the same way.

use crate::{bad_input, BadInput, OutputFile};

/// `--json`: the run's record as one JSON object.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Output {
    /// Print one JSON object instead of the human-readable line.
    #[arg(long)]
    pub json: bool,
}

/// `--verify`: check the result against a serial reference.
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct Check {
    /// Check the result against the serial reference.
    #[arg(long)]
    pub verify: bool,
}

/// `--seed`, with the program's default: `Seed<42>`.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Seed<const DEFAULT: u64> {
    /// Seed of the random input.
    #[arg(long, default_value_t = DEFAULT, allow_negative_numbers = true)]
    pub seed: u64,
}

/// `--map`: the mapping string of a program's worker collection, `all` by default.
#[derive(clap::Args, Debug, Clone)]
pub struct Map {
    /// Mapping of the worker collection (one thread per rank by default).
    #[arg(long, default_value = "all")]
    pub map: String,
}

/// How many times a program repeats its timed work: `--reps` timed runs (report their
/// [`median`](crate::median)) after `--warmup` untimed ones.
#[derive(clap::Args, Debug, Clone)]
pub struct Repeat {
    /// Timed repetitions (the median is reported).
    #[arg(long, default_value_t = 1)]
    pub reps: usize,
    /// Untimed runs before the timed ones (they warm up buffers and caches).
    #[arg(long, default_value_t = 0)]
    pub warmup: usize,
}

impl Repeat {
    /// Checks the counts.
    ///
    /// # Errors
    /// A [`BadInput`] if `--reps` is 0 or the total number of runs overflows.
    pub fn check(&self) -> Result<(), BadInput> {
        if self.reps == 0 {
            return Err(BadInput::new("--reps must be at least 1"));
        }
        if self.warmup.checked_add(self.reps).is_none() {
            return Err(BadInput::new(format!("--warmup {} plus --reps {} runs overflow", self.warmup, self.reps)));
        }
        Ok(())
    }

    /// Total runs, warm-up included.
    pub fn runs(&self) -> usize {
        self.warmup + self.reps
    }

    /// True for a run (counted from 0) that is timed.
    pub fn is_timed(&self, run: usize) -> bool {
        run >= self.warmup
    }
}

/// The most OpenBLAS threads `--blas-threads` accepts.
pub const MAX_BLAS_THREADS: usize = 1024;

/// `--blas-threads`: OpenBLAS threads of a program's serial variant (the parallel variants
/// run one BLAS thread per worker).
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct Blas {
    /// OpenBLAS threads of the `serial` variant.
    #[arg(long, default_value_t = 1)]
    pub blas_threads: usize,
}

impl Blas {
    /// Checks the count.
    ///
    /// # Errors
    /// A [`BadInput`] if it is not between 1 and [`MAX_BLAS_THREADS`].
    pub fn check(&self) -> Result<(), BadInput> {
        if !(1..=MAX_BLAS_THREADS).contains(&self.blas_threads) {
            return Err(BadInput::new(format!(
                "--blas-threads {} must be between 1 and {MAX_BLAS_THREADS}",
                self.blas_threads
            )));
        }
        Ok(())
    }
}

/// Checks `--trace` before the run: the runtime writes the trace after it, and a path that
/// cannot be written must fail before any work, not after.
///
/// # Errors
/// A [`BadInput`] naming `--trace` if its directory does not exist or cannot be written.
pub fn check_trace(runtime: &dps::RuntimeArgs) -> anyhow::Result<()> {
    if let Some(path) = &runtime.trace {
        drop(OutputFile::create("--trace", path)?);
    }
    Ok(())
}

/// The options every application has, flattened once (`#[command(flatten)] pub standard:
/// Standard`): [`Check`] (`--verify`), [`Output`] (`--json`), the runtime's own
/// (`dps::RuntimeArgs`: `--trace`, `--stall-timeout`) and the simulator's
/// ([`Simulate`](crate::simulate::Simulate): `--simulate P`, `--sim-mode`, `--platform`,
/// `--sim-cores`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Standard {
    /// `--verify`.
    #[command(flatten)]
    pub check: Check,
    /// `--json`.
    #[command(flatten)]
    pub output: Output,
    /// `--trace`, `--stall-timeout`.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
    /// `--simulate P` and its options.
    #[command(flatten)]
    pub sim: crate::simulate::Simulate,
}

impl Standard {
    /// Whether the result is checked against the serial reference (`--verify`).
    pub fn verify(&self) -> bool {
        self.check.verify
    }

    /// Whether the record is printed as JSON (`--json`).
    pub fn json(&self) -> bool {
        self.output.json
    }

    /// The virtual ranks of a simulated run (`--simulate P`), `None` for a real one.
    pub fn simulated_ranks(&self) -> Option<usize> {
        self.sim.simulate
    }

    /// Checks what these options name before any work: the trace file can be written
    /// ([`check_trace`]).
    ///
    /// # Errors
    /// A [`BadInput`] naming the option.
    pub fn check(&self) -> anyhow::Result<()> {
        check_trace(&self.runtime)
    }
}

/// The options of a program that times repeated runs of its parallel variants against a
/// serial BLAS one and checks the result (dps-matmul, dps-lu): [`Map`], [`Repeat`], [`Blas`],
/// [`Seed`] with the program's default, and the [`Standard`] options.
#[derive(clap::Args, Debug, Clone)]
pub struct Timed<const SEED: u64> {
    /// `--map`.
    #[command(flatten)]
    pub map: Map,
    /// `--reps`, `--warmup`.
    #[command(flatten)]
    pub repeat: Repeat,
    /// `--blas-threads`.
    #[command(flatten)]
    pub blas: Blas,
    /// `--seed`.
    #[command(flatten)]
    pub seed: Seed<SEED>,
    /// `--verify`, `--json`, the runtime's and the simulator's options.
    #[command(flatten)]
    pub standard: Standard,
}

impl<const SEED: u64> Timed<SEED> {
    /// Checks the counts ([`Repeat::check`], [`Blas::check`]).
    ///
    /// # Errors
    /// A [`BadInput`] naming the option.
    pub fn check(&self) -> Result<(), BadInput> {
        self.blas.check()?;
        self.repeat.check()
    }
}

/// Refuses a `--timeout` of 0 (`timeout 0` would never kill the job) or above `max`.
///
/// # Errors
/// A [`BadInput`] naming `--timeout`.
pub fn check_timeout(seconds: u64, max: u64) -> anyhow::Result<()> {
    if !(1..=max).contains(&seconds) {
        bad_input!("--timeout {seconds} must be between 1 and {max} seconds");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    #[command(name = "demo", mut_arg("verify", |a| a.help("Compare with the serial product.")))]
    struct Demo {
        #[command(flatten)]
        run: Timed<42>,
    }

    #[test]
    fn groups_keep_their_names_and_defaults() {
        let Demo { run: d } = Demo::try_parse_from(["demo"]).unwrap();
        assert_eq!(
            (d.standard.output.json, d.standard.check.verify, d.seed.seed, d.map.map.as_str()),
            (false, false, 42, "all")
        );
        assert_eq!((d.repeat.reps, d.repeat.warmup, d.blas.blas_threads), (1, 0, 1));
        let line = ["demo", "--json", "--verify", "--seed", "7", "--map", "0 1", "--reps", "3", "--warmup", "2"];
        let Demo { run: d } = Demo::try_parse_from(line.into_iter().chain(["--blas-threads", "4"])).unwrap();
        assert_eq!(
            (d.standard.output.json, d.standard.check.verify, d.seed.seed, d.map.map.as_str()),
            (true, true, 7, "0 1")
        );
        assert_eq!(
            (d.repeat.runs(), d.repeat.is_timed(1), d.repeat.is_timed(2), d.blas.blas_threads),
            (5, false, true, 4)
        );
        let e = Demo::try_parse_from(["demo", "--seed", "-1"]).unwrap_err().to_string();
        assert!(e.contains("invalid value '-1' for '--seed <SEED>'"), "{e}");
        let help = Demo::try_parse_from(["demo", "--help"]).unwrap_err().to_string();
        assert!(help.contains("Compare with the serial product.") && help.contains("[default: 42]"), "{help}");
    }

    #[test]
    fn counts_out_of_range_are_bad_input() {
        assert!(Repeat { reps: 0, warmup: 0 }.check().unwrap_err().to_string().contains("--reps"));
        assert!(Repeat { reps: usize::MAX, warmup: 1 }.check().unwrap_err().to_string().contains("overflow"));
        assert!(
            Blas { blas_threads: 0 }.check().is_err() && Blas { blas_threads: MAX_BLAS_THREADS + 1 }.check().is_err()
        );
        assert!(check_timeout(0, 10).is_err() && check_timeout(11, 10).is_err() && check_timeout(10, 10).is_ok());
    }
}
