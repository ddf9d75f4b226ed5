//! Command-line options every DPS program shares, for `clap`'s `#[command(flatten)]`.

use std::path::PathBuf;

use crate::transport::watchdog;
use crate::{Bind, Error, Runtime};

/// The runtime's own options: add them to a program's arguments with
/// `#[command(flatten)] runtime: dps::RuntimeArgs`, then start with [`RuntimeArgs::start`].
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RuntimeArgs {
    /// Write a Chrome trace (open in Perfetto) of every operation and message to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// End the job when a rank has not been heard from for this many seconds (it is stopped
    /// or hung). Overrides DPS_STALL_TIMEOUT; 0 disables; default 60.
    #[arg(long, value_name = "SECS", value_parser = stall_seconds, allow_hyphen_values = true)]
    pub stall_timeout: Option<f64>,
    /// Pin each rank's workers and progress thread to its share of the node's cores
    /// (`cores`), or leave them to the OS (`none`). Overrides DPS_BIND; default none.
    #[arg(long, value_enum, value_name = "cores|none")]
    pub bind: Option<Bind>,
}

/// Checks a `--stall-timeout` value when the command line is parsed.
fn stall_seconds(text: &str) -> Result<f64, String> {
    watchdog::parse_stall_timeout(text)?;
    text.trim().parse().map_err(|_| "not a number".into())
}

impl RuntimeArgs {
    /// Initialises MPI and the runtime ([`Runtime::init`]) with these options.
    ///
    /// # Errors
    /// As [`Runtime::init`] (`--bind` and `--stall-timeout` override `DPS_BIND` and
    /// `DPS_STALL_TIMEOUT`), and if `--stall-timeout` is out of range.
    pub fn start(&self) -> Result<Runtime, Error> {
        let stall_timeout = match self.stall_timeout {
            Some(secs) => watchdog::parse_stall_timeout(&secs.to_string())
                .map_err(|e| Error::new(crate::ErrorKind::Usage, format!("--stall-timeout {secs}: {e}")))?,
            None => watchdog::stall_timeout_from_env()?,
        };
        let bind = match self.bind {
            Some(bind) => bind,
            None => Bind::from_env()?,
        };
        let mut rt = Runtime::init_watching(stall_timeout, bind)?;
        if let Some(path) = &self.trace {
            rt.trace_as(path, "--trace")?;
        }
        Ok(rt)
    }
}

/// How many times a program repeats its timed work: `--reps` timed runs (report their
/// [`median`]) after `--warmup` untimed ones. Flatten it into a program's arguments.
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
    /// If `--reps` is 0.
    pub fn check(&self) -> Result<(), Error> {
        if self.reps == 0 {
            return Err(Error::new(crate::ErrorKind::Usage, "--reps must be at least 1"));
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

/// The median of `values` (the upper one of the two middle values for an even count).
///
/// # Panics
/// If `values` is empty.
///
/// ```
/// assert_eq!(dps::median(&[3.0, 1.0, 2.0]), 2.0);
/// ```
pub fn median(values: &[f64]) -> f64 {
    assert!(!values.is_empty(), "median of no values");
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// This process's rank as the launcher (mpirun, srun, hydra) announced it in the
/// environment, readable before MPI is initialised; `None` for a plain process.
pub fn launch_rank() -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
}

/// clap's report on one line: its first paragraph (the usage block and the hint to try
/// `--help` that follow are dropped), without the "error: " prefix, lines joined, so that
/// "the following required arguments were not provided:" keeps the arguments it names.
fn one_line(report: &str) -> String {
    let first_paragraph = report.split("\n\n").next().unwrap_or_default();
    let text = first_paragraph.strip_prefix("error: ").unwrap_or(first_paragraph);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// On a rank other than 0 that is about to exit because of bad input that rank 0 reports:
/// waits a second first, since mpirun ends the whole job as soon as one rank exits with an
/// error, and a rank that does not print must not end it before rank 0 has printed.
pub fn wait_for_rank_0_to_print() {
    if launch_rank().unwrap_or(0) != 0 {
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// Parses the command line into `T`, or ends the program: `--help` and `--version` print
/// and exit 0; a bad option prints one line, `program: what is wrong`, and exits with code
/// 2 (clap's own report adds a usage block). Every rank of a job parses the same line, so
/// only rank 0 ([`launch_rank`]) prints.
pub fn parse_args<T: clap::Parser>(program: &str) -> T {
    T::try_parse().unwrap_or_else(|e| {
        let prints = launch_rank().unwrap_or(0) == 0;
        if !e.use_stderr() {
            if prints {
                e.exit(); // --help, --version
            }
            std::process::exit(0)
        }
        if prints {
            eprintln!("{program}: {}", one_line(&e.to_string()));
        } else {
            wait_for_rank_0_to_print();
        }
        std::process::exit(2)
    })
}

/// The end of a DPS program's `main`: success, or the error (with its causes, `{:#}`)
/// prefixed by the program's name on stderr and exit code 2.
///
/// ```
/// let code = dps::exit_code("demo", Ok::<(), String>(()));
/// assert_eq!(code, std::process::ExitCode::SUCCESS);
/// ```
pub fn exit_code<E: std::fmt::Display>(program: &str, result: Result<(), E>) -> std::process::ExitCode {
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{program}: {e:#}");
            std::process::ExitCode::from(2)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn option_errors_fit_on_one_line_and_keep_what_they_name() {
        let report = "error: the following required arguments were not provided:\n  --view <WxH>\n\nUsage: x --view <WxH>\n\nFor more information, try '--help'.\n";
        assert_eq!(super::one_line(report), "the following required arguments were not provided: --view <WxH>");
    }
}
