//! How a DPS program ends, and how it reports bad input.
//!
//! Every rank of an SPMD job parses the same options and checks the same input, so a bad
//! option would otherwise be printed once per rank, interleaved. A [`BadInput`] error (and
//! a runtime error about a mapping, a graph or the options) is printed by rank 0 only (by
//! another rank only if rank 0 did not end the job: it saw something rank 0 did not) and
//! ends the program with exit code 2; any other error is a failure of the run, printed by
//! every rank that has it, exit code 1. Errors are printed with their causes (`{:#}`) and
//! never with a backtrace, whatever `RUST_BACKTRACE` says.

use std::process::ExitCode;

use crate::cli::{launch_rank, print_bad_input};

/// Exit code of a run refused because of its input.
pub const BAD_INPUT: u8 = 2;
/// Exit code of a run that failed.
pub const FAILED: u8 = 1;

/// An option, file or size the run cannot use; the message names it and says why.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(String);

impl BadInput {
    /// A bad-input error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        let message = message.into();
        // Said now: if only this rank refuses, the runtime ends the job on the way to `main`.
        dps::last_words(message.clone(), i32::from(BAD_INPUT));
        BadInput(message)
    }
}

/// Marks the error of an input check as bad input (its message and causes are kept).
///
/// ```
/// let checked: anyhow::Result<()> = dps_harness::input(Err(anyhow::anyhow!("--n 0 must be positive")));
/// assert!(checked.unwrap_err().is::<dps_harness::BadInput>());
/// ```
pub fn input<T>(checked: anyhow::Result<T>) -> anyhow::Result<T> {
    checked.map_err(|e| if is_bad_input(&e) { e } else { BadInput::new(format!("{e:#}")).into() })
}

/// True for a [`BadInput`] anywhere in the chain, or a runtime error about the program's
/// own mapping strings, graphs or options.
fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| {
        cause.is::<BadInput>()
            || cause.downcast_ref::<dps::Error>().is_some_and(|d| {
                matches!(d.kind(), dps::ErrorKind::Mapping | dps::ErrorKind::Graph | dps::ErrorKind::Usage)
            })
    })
}

/// A DPS program's whole `main`: parses its options `A` ([`parse_args`](crate::parse_args)),
/// runs `run` with them and ends as [`finish`] does, under the command's name.
///
/// ```no_run
/// #[derive(clap::Parser)]
/// #[command(name = "demo")]
/// struct Args {
///     #[arg(long, default_value_t = 1)]
///     n: usize,
/// }
///
/// fn run(args: &Args) -> anyhow::Result<()> {
///     println!("{}", args.n);
///     Ok(())
/// }
///
/// fn main() -> std::process::ExitCode {
///     dps_harness::main(run)
/// }
/// ```
pub fn main<A: clap::Parser, E: Into<anyhow::Error>>(run: impl FnOnce(&A) -> Result<(), E>) -> ExitCode {
    let args = crate::parse_args::<A>();
    finish(A::command().get_name(), run(&args).map_err(Into::into))
}

/// The end of a program's `main`: success (0); bad input, printed by rank 0 (2); or a
/// failure, printed with the rank that had it (1).
///
/// ```
/// use std::process::ExitCode;
/// assert_eq!(dps_harness::finish("demo", Ok(())), ExitCode::SUCCESS);
/// let refused = dps_harness::finish("demo", Err(dps_harness::BadInput::new("--n 0").into()));
/// assert_eq!(refused, ExitCode::from(2));
/// ```
pub fn finish(program: &str, result: anyhow::Result<()>) -> ExitCode {
    let Err(e) = result else { return ExitCode::SUCCESS };
    if is_bad_input(&e) {
        print_bad_input(program, &format!("{e:#}"));
        return ExitCode::from(BAD_INPUT);
    }
    match launch_rank() {
        Some(rank) => eprintln!("{program}: rank {rank}: {e:#}"),
        None => eprintln!("{program}: {e:#}"),
    }
    ExitCode::from(FAILED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_marks_errors_and_keeps_causes() {
        let e = input::<()>(Err(anyhow::anyhow!("inner").context("outer"))).unwrap_err();
        assert!(is_bad_input(&e));
        assert_eq!(format!("{e:#}"), "outer: inner");
        let failure = anyhow::anyhow!("disk on fire");
        assert!(!is_bad_input(&failure));
        assert!(is_bad_input(&anyhow::Error::new(BadInput::new("x")).context("reading y")));
    }
}
