//! The supervised job's command line (`mpirun -n N dps-radiocontrol run DATA --out DIR`, or
//! `srun -n N ...`): its rank count, which a restart lowers, its output directory and its
//! data set.

use std::path::PathBuf;

/// Where the command says its rank count is: (index of the value, count, is `--opt=N`).
pub fn rank_count(cmd: &[String]) -> Option<(usize, usize, Option<String>)> {
    for (i, w) in cmd.iter().enumerate() {
        if ["-n", "-np", "--np", "--ntasks"].contains(&w.as_str()) {
            return cmd.get(i + 1)?.parse().ok().map(|n| (i + 1, n, None));
        }
        for prefix in ["--ntasks=", "--np=", "-n"] {
            if let Some(v) = w.strip_prefix(prefix).filter(|v| !v.is_empty()) {
                if let Ok(n) = v.parse() {
                    return Some((i, n, Some(prefix.to_string())));
                }
            }
        }
        // The program starts here: the launcher's options are before it.
        if w.contains("dps-radiocontrol") {
            break;
        }
    }
    None
}

/// The command with `ranks` ranks.
pub fn with_ranks(cmd: &[String], ranks: usize) -> Vec<String> {
    let mut out = cmd.to_vec();
    if let Some((i, _, prefix)) = rank_count(cmd) {
        out[i] = match prefix {
            Some(p) => format!("{p}{ranks}"),
            None => ranks.to_string(),
        };
    }
    out
}

/// The command's `--out` directory.
pub fn out_dir(cmd: &[String]) -> Option<PathBuf> {
    cmd.iter().enumerate().find_map(|(i, w)| {
        if w == "--out" {
            cmd.get(i + 1).map(PathBuf::from)
        } else {
            w.strip_prefix("--out=").map(PathBuf::from)
        }
    })
}

/// The data set of the command's `run DATA`: what its result file must be complete against.
pub fn data_dir(cmd: &[String]) -> Option<PathBuf> {
    let run = cmd.iter().position(|w| w == "run")?;
    cmd.get(run + 1).filter(|w| !w.starts_with('-')).map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_rank_count_is_found_and_lowered() {
        let cmd = words("scripts/mpirun -n 4 target/dps-radiocontrol run D --out R -n 9");
        assert_eq!(with_ranks(&cmd, 3), words("scripts/mpirun -n 3 target/dps-radiocontrol run D --out R -n 9"));
        let srun = words("srun --mpi=pmix --ntasks=4 dps-radiocontrol run D --out R");
        assert_eq!(with_ranks(&srun, 2)[2], "--ntasks=2");
        let plain = words("dps-radiocontrol run D --out R");
        assert_eq!(with_ranks(&plain, 2), plain, "no launcher: unchanged");
        assert_eq!(out_dir(&cmd), Some(PathBuf::from("R")));
        assert_eq!(out_dir(&words("x --out=S")), Some(PathBuf::from("S")));
    }
}
