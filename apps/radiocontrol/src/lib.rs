//! Radiocontrol (thesis ch. 9): radio listening rates by correlating watch records with
//! station recordings, as a master/worker farm on DPS, with a watchdog that restarts the
//! job on the surviving ranks and a result file the job resumes from.
//!
//! - [`cli`]: the subcommands' options, checked into plans; [`run`]: the runner of a plan.
//! - [`data`]: the data set's files (§2.10), their checks and the ground truth;
//!   [`generate`]: a synthetic data set with ground truth.
//! - [`kernel`]: the correlation (direct, vectorised, and by FFT) and its f64 reference;
//!   [`speed`]: the direct kernel measured against the FFT one.
//! - [`job`]: one (hour, station) job and the serial reference; [`results`]: the
//!   self-checking result file.
//! - [`graph`]: the farm on DPS; [`record`]: the record; [`verify`]: the ground-truth check
//!   and summary; [`supervise`]: the watchdog, restarting the command [`launcher`] reads
//!   on the [`hosts`] that are alive.

pub mod cli;
pub mod data;
pub mod generate;
pub mod graph;
pub mod hash;
pub mod hosts;
pub mod job;
pub mod kernel;
pub mod launcher;
pub mod record;
pub mod results;
pub mod run;
pub mod shm;
pub mod speed;
pub mod station_sums;
pub mod supervise;
pub mod verify;
