//! `client`: windows to read through a running `serve`'s service, and where to write them,
//! checked.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args as ClapArgs;
use dps_harness::bad_input;

use super::serve::{check_service_name, DEFAULT_SERVICE};

/// The most window requests one run makes (windows × --repeat).
pub const MAX_REQUESTS: usize = 1_000_000;

/// `client`.
#[derive(ClapArgs, Debug)]
pub struct ClientArgs {
    /// The service to import (as `serve --service` exported it).
    #[arg(long, default_value = DEFAULT_SERVICE)]
    pub service: String,
    /// A window to read; give it several times for several windows.
    #[arg(long, num_args = 4, value_names = ["X", "Y", "W", "H"], action = clap::ArgAction::Append, required = true)]
    pub window: Vec<usize>,
    /// Request every window this many times (every reply of a window must be the same).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Requests in flight at once (the client split's window, 1 to 4096).
    #[arg(long, default_value_t = 8)]
    pub in_flight: usize,
    /// Mapping of the threads that call the service.
    #[arg(long, default_value = "all")]
    pub map: String,
    /// Write window i as DIR/window<i>.png (the directory must exist).
    #[arg(long, value_name = "DIR")]
    pub out_dir: Option<PathBuf>,
    /// `--trace`, `--stall-timeout`.
    #[command(flatten)]
    pub runtime: dps::RuntimeArgs,
}

/// A checked `client`.
#[derive(Debug, Clone)]
pub struct ClientPlan {
    /// The service's name.
    pub service: String,
    /// The windows `(x, y, w, h)`, checked by the service (it alone knows the image).
    pub windows: Vec<(usize, usize, usize, usize)>,
    /// Requests per window.
    pub repeat: usize,
    /// Requests in flight.
    pub in_flight: usize,
    /// Mapping of the callers.
    pub map: String,
    /// Where the PNGs go.
    pub out_dir: Option<PathBuf>,
    /// The runtime's options.
    pub runtime: dps::RuntimeArgs,
}

impl ClientArgs {
    /// Checks the options (before the runtime starts).
    ///
    /// # Errors
    /// A [`dps_harness::BadInput`]: a bad service name, an empty window, counts out of
    /// range, a missing output directory.
    pub fn plan(&self) -> Result<ClientPlan> {
        check_service_name(&self.service)?;
        let windows: Vec<_> = self.window.chunks_exact(4).map(|w| (w[0], w[1], w[2], w[3])).collect();
        if let Some((x, y, w, h)) = windows.iter().find(|w| w.2 == 0 || w.3 == 0) {
            bad_input!("--window {x} {y} {w} {h}: the window is empty");
        }
        if self.repeat == 0 || windows.len().saturating_mul(self.repeat) > MAX_REQUESTS {
            bad_input!("--repeat {}: must be at least 1, and windows × repeat at most {MAX_REQUESTS}", self.repeat);
        }
        if !(1..=4096).contains(&self.in_flight) {
            bad_input!("--in-flight {}: must be between 1 and 4096", self.in_flight);
        }
        if let Some(dir) = self.out_dir.as_ref().filter(|d| !d.is_dir()) {
            bad_input!("--out-dir {}: no such directory", dir.display());
        }
        Ok(ClientPlan {
            service: self.service.clone(),
            windows,
            repeat: self.repeat,
            in_flight: self.in_flight,
            map: self.map.clone(),
            out_dir: self.out_dir.clone(),
            runtime: self.runtime.clone(),
        })
    }
}
