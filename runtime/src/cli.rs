//! Command-line options every DPS program shares, for `clap`'s `#[command(flatten)]`.

use std::path::PathBuf;

use crate::{Error, Runtime};

/// The runtime's own options: add them to a program's arguments with
/// `#[command(flatten)] runtime: dps::RuntimeArgs`, then start with [`RuntimeArgs::start`].
#[derive(clap::Args, Debug, Clone, Default)]
pub struct RuntimeArgs {
    /// Write a Chrome trace (open in Perfetto) of every operation and message to this file.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
}

impl RuntimeArgs {
    /// Initialises MPI and the runtime ([`Runtime::init`]) with these options.
    ///
    /// # Errors
    /// As [`Runtime::init`].
    pub fn start(&self) -> Result<Runtime, Error> {
        let mut rt = Runtime::init()?;
        if let Some(path) = &self.trace {
            rt.trace_to(path);
        }
        Ok(rt)
    }
}
