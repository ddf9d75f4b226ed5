//! Mapping strings: which rank hosts each thread of a collection.
//!
//! A mapping is a space-separated list of items; each item is a rank number, a host name or
//! the word `all` (one thread on every rank), optionally followed by `*k` to repeat it k
//! times. `"0*2 1"` gives threads 0 and 1 on rank 0 and thread 2 on rank 1. A host name
//! stands for the ranks running on that host, taken in turn: `"nodeA*2"` on a host with two
//! ranks puts one thread on each.

use crate::Error;

/// The most threads a collection may have: far more than any machine runs usefully, and a
/// mistyped count (`"all*1000000000"`) is rejected instead of exhausting memory.
const MAX_THREADS: usize = 1 << 20;

/// Parses `mapping` for a job of `hosts.len()` ranks, where `hosts[r]` is rank r's host name.
/// Returns the rank of each thread.
pub(crate) fn parse(mapping: &str, hosts: &[String]) -> Result<Vec<usize>, Error> {
    let bad = |why: String| {
        Error::mapping(format!(
            "bad mapping \"{mapping}\": {why} (expected items like \"0\", \"1*2\", \"all\" or \"host*2\", separated by spaces)"
        ))
    };
    let ranks = hosts.len();
    let mut next_on_host = std::collections::HashMap::<&str, usize>::new();
    let mut out = Vec::new();
    for item in mapping.split_whitespace() {
        let (what, times) = match item.split_once('*') {
            Some((w, k)) => {
                let k: usize = k.parse().map_err(|_| bad(format!("\"{k}\" in \"{item}\" is not a count")))?;
                if k == 0 {
                    return Err(bad(format!("\"{item}\" repeats zero times")));
                }
                (w, k)
            }
            None => (item, 1),
        };
        let per_time = if what == "all" { ranks } else { 1 };
        if times.checked_mul(per_time).is_none_or(|n| out.len() + n > MAX_THREADS) {
            return Err(bad(format!("it names more than {MAX_THREADS} threads")));
        }
        for _ in 0..times {
            if what == "all" {
                out.extend(0..ranks);
            } else if let Ok(rank) = what.parse::<usize>() {
                if rank >= ranks {
                    return Err(bad(format!(
                        "rank {rank} does not exist: the job has {ranks} rank{} (0..={})",
                        if ranks == 1 { "" } else { "s" },
                        ranks - 1
                    )));
                }
                out.push(rank);
            } else {
                let on_host: Vec<usize> = (0..ranks).filter(|&r| hosts[r] == what).collect();
                if on_host.is_empty() {
                    return Err(bad(format!("no rank runs on host \"{what}\" (hosts: {})", distinct(hosts))));
                }
                let turn = next_on_host.entry(what).or_default();
                out.push(on_host[*turn % on_host.len()]);
                *turn += 1;
            }
        }
    }
    if out.is_empty() {
        return Err(bad("it names no thread".into()));
    }
    Ok(out)
}

fn distinct(hosts: &[String]) -> String {
    // Each host once, in rank order: ranks placed round-robin interleave the hosts.
    let mut h: Vec<&str> = Vec::new();
    for host in hosts {
        if !h.contains(&host.as_str()) {
            h.push(host);
        }
    }
    h.join(", ")
}

#[cfg(test)]
mod tests {
    use super::parse;

    fn hosts(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ranks_with_multipliers() {
        assert_eq!(parse("0*2 1 2", &hosts(&["a", "a", "b"])).unwrap(), vec![0, 0, 1, 2]);
        assert_eq!(parse("all*2", &hosts(&["a", "b"])).unwrap(), vec![0, 1, 0, 1]);
    }

    #[test]
    fn host_names_cycle_through_their_ranks() {
        let h = hosts(&["nodeA", "nodeA", "nodeB"]);
        assert_eq!(parse("nodeA*2 nodeB nodeA", &h).unwrap(), vec![0, 1, 2, 0]);
    }

    #[test]
    fn errors_name_the_problem() {
        let h = hosts(&["a", "a"]);
        let msg = |m: &str| parse(m, &h).unwrap_err().to_string();
        assert!(msg("0 5").contains("rank 5 does not exist: the job has 2 ranks"));
        assert!(msg("0*x").contains("\"x\" in \"0*x\" is not a count"));
        assert!(msg("zz").contains("no rank runs on host \"zz\""));
        let interleaved = hosts(&["n1", "n2", "n1", "n2"]);
        assert!(parse("n3", &interleaved).unwrap_err().to_string().contains("(hosts: n1, n2)"));
        assert!(msg("  ").contains("names no thread"));
        assert!(msg("1*0").contains("repeats zero times"));
        assert!(msg("all*99999999999999999999").contains("is not a count"));
        assert!(msg("all*1000000000000").contains("names more than 1048576 threads"));
        assert!(msg("0*1048576 1").contains("names more than 1048576 threads"));
        assert!(msg(&format!("0*{}", usize::MAX)).contains("names more than"));
        assert!(msg("0*-1").contains("is not a count"));
        assert_eq!(parse("0*1048576", &h).unwrap().len(), 1 << 20);
    }
}
