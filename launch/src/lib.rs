//! Jobs launched under `mpirun`, `srun` or alone, always inside `timeout`, so that a hung
//! job is killed and reported instead of stalling a test, a benchmark or a sweep.
//!
//! A development crate: the tests of every crate use it (the runtime's among them, which is
//! why it does not depend on the runtime), and so does the benchmark driver `dps-bench`,
//! whose sweeps launch jobs; the runtime and the applications' binaries do not link it.
//!
//! - [`Job`]: one builder for every job, run captured ([`Job::output`]), streamed
//!   ([`Job::stream`]) or in the background with its outputs in files ([`Job::spawn_logged`]).
//! - [`mpirun`] and its variants, [`scenario_passes_on_1_2_4`], [`json_record`]: what tests
//!   share.
//! - [`bad_input`]: the bad-input table that each program's tests run.

mod background;
pub mod bad_input;
mod job;
mod testing;

pub use background::Background;
pub use job::{Finished, Job, LaunchError, Launcher, MPIRUN, TEST_TIMEOUT_S};
pub use testing::{
    children_peak_rss, example, json_record, memory_estimates_within_peaks, mpirun, mpirun_env, mpirun_with,
    on_a_full_disk, scenario_args, scenario_passes_on_1_2_4, test_job,
};
