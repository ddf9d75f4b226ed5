//! Radiocontrol (thesis ch. 9): radio listening rates by correlating watch records with
//! station recordings, as a master/worker farm on DPS, with a watchdog that restarts the
//! job on the surviving ranks and a result file the job resumes from.
//!
//! - [`data`]: the data set's files (§2.10) and their checks; [`generate`]: a synthetic
//!   data set with ground truth.
//! - [`kernel`]: the correlation (direct, vectorised) and its f64 reference; [`fft`]: the
//!   same by FFT, measured against it ([`speed`]).
//! - [`job`]: one (hour, station) job; [`results`]: the self-checking result file.
//! - [`graph`]: the farm on DPS; [`run`]: the command line and runners; [`verify`]: the
//!   ground-truth check and summary; [`supervise`]: the watchdog.

pub mod data;
pub mod fft;
pub mod generate;
pub mod graph;
pub mod job;
mod karatsuba;
pub mod kernel;
#[cfg(target_arch = "x86_64")]
mod kernel_avx2;
#[cfg(target_arch = "x86_64")]
mod kernel_avx512;
pub mod record;
pub mod results;
pub mod run;
pub mod speed;
pub mod supervise;
pub mod verify;
