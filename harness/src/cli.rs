//! Parsing a program's command line the same way on every rank: an option error is one
//! line, printed by rank 0 only, with exit code 2.

/// This process's rank as the launcher (mpirun, srun, hydra) announced it in the
/// environment, readable before MPI is initialised; `None` for a plain process.
pub fn launch_rank() -> Option<usize> {
    ["OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
}

/// The ranks the launcher started in the whole job, as it announced them in the
/// environment, readable before MPI is initialised; 1 for a plain process.
pub fn launch_size() -> usize {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"]
        .iter()
        .find_map(|var| std::env::var(var).ok()?.parse().ok())
        .unwrap_or(1)
        .max(1)
}

/// Whether this process prints what every rank would print alike.
pub(crate) fn prints_shared_messages() -> bool {
    launch_rank().unwrap_or(0) == 0
}

/// How long a rank other than 0 waits, before it prints its own bad-input message, for
/// rank 0 to print it and end the job. mpirun ends the others about 2 s after rank 0 exited
/// non-zero (Open MPI 4 waits `odls_base_sigkill_timeout`, 1 s, twice), so the usual case,
/// all ranks refusing the same input, prints once.
const RANK_0_PRINTS_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// On a rank other than 0 that is about to exit because of bad input: gives rank 0 time to
/// print the same message and end the job (mpirun ends the whole job as soon as one rank
/// exits with an error, so exiting at once could kill rank 0 before it printed). A rank
/// still alive afterwards saw something rank 0 did not (a file missing on its node, a
/// different command line under MPMD) and must print it itself: never a silent exit.
pub fn wait_for_rank_0_to_print() {
    if !prints_shared_messages() {
        std::thread::sleep(RANK_0_PRINTS_WITHIN);
    }
}

/// Prints a bad-input message once: on rank 0 at once; on another rank only if rank 0 has
/// not ended the job within [`RANK_0_PRINTS_WITHIN`], with the rank named.
pub(crate) fn print_bad_input(program: &str, message: &str) {
    match launch_rank() {
        Some(rank) if rank != 0 => {
            wait_for_rank_0_to_print();
            eprintln!("{program}: rank {rank}: {message}");
        }
        _ => eprintln!("{program}: {message}"),
    }
}

/// clap's report on one line: its first paragraph (the usage block and the hint to try
/// `--help` that follow are dropped), without the "error: " prefix, lines joined, so that
/// "the following required arguments were not provided:" keeps the arguments it names.
fn one_line(report: &str) -> String {
    let first_paragraph = report.split("\n\n").next().unwrap_or_default();
    let text = first_paragraph.strip_prefix("error: ").unwrap_or(first_paragraph);
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parses the command line into `A`, or ends the program: `--help` and `--version` print
/// (on rank 0) and exit 0; a bad option prints one line, `program: what is wrong`, where
/// `program` is the command's name, and exits with code 2 (clap's own report adds a usage
/// block). Every rank of a job parses the same line, so only rank 0 ([`launch_rank`]) prints.
pub fn parse_args<A: clap::Parser>() -> A {
    A::try_parse().unwrap_or_else(|e| {
        if !e.use_stderr() {
            if prints_shared_messages() {
                e.exit(); // --help, --version
            }
            std::process::exit(0)
        }
        print_bad_input(A::command().get_name(), &one_line(&e.to_string()));
        std::process::exit(i32::from(crate::exit::BAD_INPUT))
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn option_errors_fit_on_one_line_and_keep_what_they_name() {
        let report = "error: the following required arguments were not provided:\n  --view <WxH>\n\nUsage: x --view <WxH>\n\nFor more information, try '--help'.\n";
        assert_eq!(super::one_line(report), "the following required arguments were not provided: --view <WxH>");
    }
}
