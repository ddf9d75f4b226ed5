//! The bad-input table: each row runs a binary with some arguments and states the exit code
//! and the words its message must contain. Every row is checked for what a user must never
//! see: a panic, a backtrace (the jobs run with `RUST_BACKTRACE=1`), a hang (each job has
//! the launcher's timeout) or, for exit code 2, the message printed more than once.

use std::path::Path;

/// One row of a bad-input table.
#[derive(Debug, Clone, Copy)]
pub struct Case<'a> {
    /// The program's arguments.
    pub args: &'a [&'a str],
    /// Ranks to launch (1 or more).
    pub ranks: usize,
    /// The expected exit code (2: bad input, 1: the run failed).
    pub code: i32,
    /// Words the standard error must contain (case-sensitive).
    pub words: &'a [&'a str],
}

/// A row on one rank.
pub const fn case<'a>(args: &'a [&'a str], code: i32, words: &'a [&'a str]) -> Case<'a> {
    Case { args, ranks: 1, code, words }
}

/// A row on `ranks` ranks.
pub const fn case_on<'a>(ranks: usize, args: &'a [&'a str], code: i32, words: &'a [&'a str]) -> Case<'a> {
    Case { args, ranks, code, words }
}

/// Runs every row and panics with the list of rows that failed (all of them, not the first).
pub fn check_table(program: &Path, cases: &[Case<'_>]) {
    let name = program.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| {
            let job = crate::mpirun_env(case.ranks, &environment(case.ranks), program, case.args);
            let problems = problems(case, &name, job.status.code(), &job.stderr);
            (!problems.is_empty()).then(|| {
                format!(
                    "{name} {} (ranks {}): {}\n--- stderr ---\n{}",
                    case.args.join(" "),
                    case.ranks,
                    problems.join("; "),
                    job.stderr.trim_end()
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{} of {} rows failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));
}

/// The environment of a row's job: backtraces on, so that one printed is seen. Open MPI 4
/// waits `odls_base_sigkill_timeout` (1 s, twice) before it ends a job one of whose ranks
/// exited non-zero: 2 s a refused row. On one rank there is nothing left to kill, so the
/// wait is turned off; on several, the rank that exits first would get the others killed
/// at once, possibly before rank 0 printed the message.
fn environment(ranks: usize) -> Vec<(&'static str, &'static str)> {
    let mut env = vec![("RUST_BACKTRACE", "1")];
    if ranks == 1 {
        env.push(("OMPI_MCA_odls_base_sigkill_timeout", "0"));
    }
    env
}

/// What is wrong with a finished row, if anything.
fn problems(case: &Case<'_>, program: &str, code: Option<i32>, stderr: &str) -> Vec<String> {
    let mut found = Vec::new();
    if code != Some(case.code) {
        found.push(format!("exit code {code:?}, expected {}", case.code));
    }
    for word in case.words {
        if !stderr.contains(word) {
            found.push(format!("the message does not contain {word:?}"));
        }
    }
    for never in ["panicked", "stack backtrace", "RUST_BACKTRACE", "memory allocation of"] {
        if stderr.contains(never) {
            found.push(format!("the output contains {never:?}"));
        }
    }
    if case.code == 2 {
        let prefix = format!("{program}: ");
        let printed = stderr.lines().filter(|l| l.starts_with(&prefix) || l.starts_with("error:")).count();
        if printed != 1 {
            found.push(format!("the error is printed {printed} times, expected once"));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_refusal_passes_and_each_fault_is_named() {
        let row = case(&["--n", "0"], 2, &["--n"]);
        assert!(problems(&row, "app", Some(2), "app: --n 0 must be positive\n").is_empty());
        let twice = problems(&row, "app", Some(2), "app: --n 0 bad\napp: --n 0 bad\n");
        assert_eq!(twice, ["the error is printed 2 times, expected once"]);
        let panic = problems(&row, "app", Some(101), "thread 'main' panicked at --n\n");
        assert!(panic.iter().any(|p| p.starts_with("exit code Some(101)")), "{panic:?}");
        assert!(panic.iter().any(|p| p.contains("\"panicked\"")), "{panic:?}");
        assert!(!problems(&row, "app", Some(2), "app: no such option\n").is_empty());
    }
}
