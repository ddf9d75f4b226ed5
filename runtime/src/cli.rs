//! The runtime's own command-line options, for `clap`'s `#[command(flatten)]` (feature
//! `cli`). Everything else programs share around the runtime (their other options, exit
//! codes, medians) is in the `dps-harness` crate.

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
    /// (`cores`), only where the node's ranks match its cores one to one and no CPU quota
    /// applies (`auto`), or leave them to the OS (`none`). Overrides DPS_BIND; default none
    /// (some programs default to auto: their --help says so).
    #[arg(long, value_enum, value_name = "cores|auto|none")]
    pub bind: Option<Bind>,
}

/// Checks a `--stall-timeout` value when the command line is parsed.
fn stall_seconds(text: &str) -> Result<f64, String> {
    watchdog::parse_stall_timeout(text)?;
    text.trim().parse().map_err(|_| "not a number".into())
}

impl RuntimeArgs {
    /// These options with `bind` as the program's own default binding: kept only when
    /// neither `--bind` nor `DPS_BIND` chose one.
    #[must_use]
    pub fn with_default_bind(&self, bind: Bind) -> RuntimeArgs {
        let chosen = self.bind.is_some() || std::env::var_os(crate::binding::BIND_VAR).is_some();
        RuntimeArgs { bind: if chosen { self.bind } else { Some(bind) }, ..self.clone() }
    }

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
