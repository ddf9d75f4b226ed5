//! `serve`: a stored (or random) image kept on the ranks' disk threads and exported as the
//! striped file service, until stopped; checked.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use dps_harness::bad_input;
use dps_harness::options::Map;

use super::source::{Source, SourcePlan};
use super::MAP_HELP;

/// The service name `serve` exports and `client` imports by default.
pub const DEFAULT_SERVICE: &str = "filter.store";

/// The longest `--serve-seconds`: a year.
const MAX_SERVE_SECONDS: f64 = 365.0 * 24.0 * 3600.0;

/// `serve`.
#[derive(ClapArgs, Debug)]
#[command(mut_arg("map", |a| a.help(MAP_HELP)))]
pub struct ServeArgs {
    /// The image to serve.
    #[command(flatten)]
    pub source: Source,
    /// The name to export the window-reading graph under (1 to 100 of A-Za-z0-9._-).
    #[arg(long, default_value = DEFAULT_SERVICE)]
    pub service: String,
    /// Stop after this many seconds (default: until stopped by --until, SIGINT or SIGTERM).
    #[arg(long, value_name = "S")]
    pub serve_seconds: Option<f64>,
    /// Stop once this file exists (every rank looks for it).
    #[arg(long, value_name = "FILE")]
    pub until: Option<PathBuf>,
    /// `--map` of the compute threads (the disks follow them).
    #[command(flatten)]
    pub map: Map,
    /// `--trace`, `--stall-timeout`.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
}

/// A checked `serve`.
#[derive(Debug, Clone)]
pub struct ServePlan {
    /// The image.
    pub source: SourcePlan,
    /// The exported name.
    pub service: String,
    /// The longest it serves, seconds.
    pub serve_seconds: Option<f64>,
    /// The file that stops it.
    pub until: Option<PathBuf>,
    /// Mapping of the compute threads.
    pub map: String,
    /// The runtime's options.
    pub runtime: dps::RuntimeArgs,
}

impl ServeArgs {
    /// Checks the options (on every rank, before the runtime starts).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: no input, a bad service name, a time out of range.
    pub fn plan(&self) -> Result<ServePlan> {
        let source = self.source.plan()?;
        check_service_name(&self.service)?;
        if let Some(s) = self.serve_seconds {
            if !(s > 0.0 && s <= MAX_SERVE_SECONDS) {
                bad_input!("--serve-seconds {s}: must be above 0 and at most {MAX_SERVE_SECONDS} (a year)");
            }
        }
        Ok(ServePlan {
            source,
            service: self.service.clone(),
            serve_seconds: self.serve_seconds,
            until: self.until.clone(),
            map: self.map.map.clone(),
            runtime: self.runtime.clone(),
        })
    }
}

/// A service name as the runtime's registry takes it, checked before any work.
///
/// # Errors
/// A [`dps_harness::BadInput`] saying what a name may hold.
pub fn check_service_name(name: &str) -> Result<()> {
    let ok = (1..=100).contains(&name.len())
        && !name.starts_with('.')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if !ok {
        bad_input!("--service {name:?}: a service name is 1 to 100 of A-Za-z0-9._- and does not start with '.'");
    }
    Ok(())
}
