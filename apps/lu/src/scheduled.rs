//! `--alloc schedule` and `--withdraw RANK@iteration:K` (issue 31): each iteration's
//! multiplication ranks chosen by the layered scheduler of `dps_model::schedule`, with the
//! schedule for one rank fewer computed before the run (lookahead) and switched to, by a
//! lookup, when the coordinator reaches the iteration where a rank is withdrawn.
//!
//! The scheduler's processors are ranks. Its graph is block LU (`generate::lu`, m = ⌈n/r⌉
//! column blocks): the panel F{k}, then the updates U{k}.j of iteration k, τ(q) = trsm +
//! ⌈(m−k−1)/q⌉·gemm from the kernels' times (the platform file's tables, else 20 Gflop/s).
//! Its layers alternate F{k} and the U{k}.j, so iteration k's allotment is the set of ranks
//! its update layer uses. A layer's allotment depends only on its tasks and P, so the
//! pre-computed schedule of the whole graph on P − 1 processors is also the schedule of the
//! iterations left (`Config::dropped` would not do: it removes a task's dependants too).

use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use dps_model::platform::Platform;
use dps_model::schedule::comm::Comm;
use dps_model::schedule::generate::{self, LuCosts};
use dps_model::schedule::graph::Family;
use dps_model::schedule::layered::{Layered, Scheduler};
use dps_model::schedule::lookahead::{Config, Event, Lookahead};
use serde::{Deserialize, Serialize};

use crate::kernel::Blocking;

/// A withdrawal: rank `rank` leaves before iteration `iteration` (from 1) starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Withdraw {
    /// The rank withdrawn.
    pub rank: usize,
    /// The first iteration without it, from 1.
    pub iteration: usize,
}

/// Who `--withdraw` names: a rank, or the host (a node) whose one rank leaves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Leaving {
    /// A rank number.
    Rank(usize),
    /// A host name, resolved once the job's hosts are known.
    Host(String),
}

/// `--withdraw WHO@iteration:K`, as given: WHO a rank number or a host name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WithdrawArg {
    /// The rank or host leaving.
    pub who: Leaving,
    /// The first iteration without it, from 1.
    pub iteration: usize,
}

impl FromStr for WithdrawArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let malformed = || format!("{s:?} is not RANK@iteration:K or HOST@iteration:K (for example 1@iteration:3)");
        let (who, k) = s.split_once("@iteration:").ok_or_else(malformed)?;
        let iteration = k.parse::<usize>().map_err(|_| malformed())?;
        let who = match who.parse::<usize>() {
            Ok(rank) => Leaving::Rank(rank),
            // A host name: letters, digits, '-' and '.', starting with a letter.
            Err(_)
                if who.starts_with(|c: char| c.is_ascii_alphabetic())
                    && who.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.') =>
            {
                Leaving::Host(who.to_string())
            }
            Err(_) => return Err(malformed()),
        };
        Ok(WithdrawArg { who, iteration })
    }
}

impl fmt::Display for WithdrawArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.who {
            Leaving::Rank(rank) => write!(f, "{rank}@iteration:{}", self.iteration),
            Leaving::Host(host) => write!(f, "{host}@iteration:{}", self.iteration),
        }
    }
}

impl WithdrawArg {
    /// The checks that need no host names: a rank's (see [`Withdraw::check`]), or a host's
    /// iteration.
    ///
    /// # Errors
    /// A one-line message naming `--withdraw`.
    pub fn check(&self, ranks: usize, iterations: usize) -> Result<(), String> {
        match self.who {
            Leaving::Rank(rank) => Withdraw { rank, iteration: self.iteration }.check(ranks, iterations),
            Leaving::Host(_) => check_iteration(self, self.iteration, iterations),
        }
    }

    /// The withdrawal once `hosts` (each rank's host name) are known: a host must run
    /// exactly one rank of the job, which must pass [`Withdraw::check`].
    ///
    /// # Errors
    /// A one-line message naming `--withdraw` and the job's hosts.
    pub fn resolve(&self, hosts: &[String], iterations: usize) -> Result<Withdraw, String> {
        let host = match &self.who {
            Leaving::Rank(rank) => {
                let w = Withdraw { rank: *rank, iteration: self.iteration };
                return w.check(hosts.len(), iterations).map(|()| w);
            }
            Leaving::Host(host) => host,
        };
        let on_host: Vec<usize> = (0..hosts.len()).filter(|&r| &hosts[r] == host).collect();
        let w = match on_host[..] {
            [rank] => Withdraw { rank, iteration: self.iteration },
            [] => {
                let mut names = hosts.to_vec();
                names.dedup();
                return Err(format!(
                    "--withdraw {self}: no rank of the job runs on {host} (hosts: {})",
                    names.join(", ")
                ));
            }
            _ => {
                let ranks: Vec<String> = on_host.iter().map(usize::to_string).collect();
                return Err(format!(
                    "--withdraw {self}: {host} runs ranks {}; one rank leaves at a time, name it by number",
                    ranks.join(", ")
                ));
            }
        };
        w.check(hosts.len(), iterations).map_err(|e| format!("{e} ({host} runs rank {})", w.rank))?;
        Ok(w)
    }
}

/// The iteration check of [`Withdraw::check`], naming `what` as given.
fn check_iteration(what: &dyn fmt::Display, iteration: usize, iterations: usize) -> Result<(), String> {
    if iteration == 0 || iteration > iterations {
        return Err(format!("--withdraw {what}: the factorization has iterations 1..={iterations}, not {iteration}"));
    }
    Ok(())
}

impl fmt::Display for Withdraw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@iteration:{}", self.rank, self.iteration)
    }
}

impl Withdraw {
    /// Checks the withdrawal against the job's `ranks` and the factorization's `iterations`.
    ///
    /// # Errors
    /// A one-line message naming `--withdraw`: the rank is not in the job, is rank 0 (the
    /// coordinator, which factors every panel), or the iteration is not one of the
    /// factorization's. A rank that holds column blocks may leave: its column thread moves
    /// ([`ColumnMove`]).
    pub fn check(&self, ranks: usize, iterations: usize) -> Result<(), String> {
        if self.rank >= ranks {
            let of = if ranks == 1 { "only rank 0".to_string() } else { format!("ranks 0..{}", ranks - 1) };
            return Err(format!("--withdraw {self}: rank {} is not in the job ({of})", self.rank));
        }
        if self.rank == 0 {
            return Err(format!("--withdraw {self}: rank 0 runs the coordinator (the master) and cannot be withdrawn"));
        }
        check_iteration(self, self.iteration, iterations)
    }
}

/// A column thread of the withdrawn rank moving, with its blocks, to a rank that stays
/// (the dynamic variant: column thread t on rank t, block j on thread j % C).
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ColumnMove {
    /// The column thread.
    pub thread: usize,
    /// Its rank before the move (the withdrawn one).
    pub from: usize,
    /// Its rank after.
    pub to: usize,
    /// The column blocks it holds.
    pub blocks: usize,
    /// Their bytes (n × width × 8 each).
    pub bytes: u64,
}

impl ColumnMove {
    /// The moves of a withdrawal among `ranks` ranks, for an n×n matrix in blocks of r on
    /// column threads 0..`column_ranks` (thread t on rank t): the withdrawn rank's thread,
    /// if it has one, goes to the rank that stays with the fewest column blocks still to
    /// update from the withdrawal's iteration on (blocks j ≥ K − 1, counted from 0), a rank
    /// other than 0 on a tie (rank 0 also factors every panel), then the lowest.
    pub fn plan(w: Withdraw, ranks: usize, column_ranks: usize, (n, r): (usize, usize)) -> Vec<ColumnMove> {
        if w.rank >= column_ranks {
            return Vec::new();
        }
        let blocking = Blocking::uniform(n, r);
        let nb = blocking.count();
        let on = |q: usize| (0..nb).filter(move |&j| j % column_ranks == q);
        let active = |q: usize| if q < column_ranks { on(q).filter(|&j| j + 1 >= w.iteration).count() } else { 0 };
        let to = (0..ranks).filter(|&q| q != w.rank).min_by_key(|&q| (active(q), q == 0, q)).expect("rank 0 stays");
        let bytes = on(w.rank).map(|j| (n * blocking.span(j).len() * 8) as u64).sum();
        vec![ColumnMove { thread: w.rank, from: w.rank, to, blocks: on(w.rank).count(), bytes }]
    }

    /// The model's time for `moves` over `comm`: the withdrawn rank sends each thread's
    /// state in one message after the other, l + bytes/b each (free without a platform file).
    pub fn predicted_s(moves: &[ColumnMove], comm: Comm) -> f64 {
        moves.iter().map(|m| comm.latency_s + m.bytes as f64 / comm.bytes_per_s).sum()
    }
}

/// The kernel costs and the link the scheduler's τ tables come from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// The LU kernels' times at the run's block width.
    pub lu: LuCosts,
    /// The redistribution phases' link.
    pub comm: Comm,
}

impl Costs {
    /// From the platform file if there is one (its kernel tables and DPS link), else the
    /// kernels at 20 Gflop/s and free communication.
    pub fn of(platform: Option<&Platform>, r: usize) -> Costs {
        let comm = platform.and_then(Comm::from_platform).unwrap_or(Comm::FREE);
        Costs { lu: LuCosts::at_block(platform, r), comm }
    }
}

/// The scheduler's choices for one run: the schedule on all ranks and, computed ahead, the
/// one with a rank fewer.
#[derive(Debug)]
pub struct Scheduled {
    lookahead: Lookahead,
    /// P: the job's ranks.
    ranks: usize,
    /// The update tasks of each iteration (indices in the graph; none for the last).
    updates: Vec<Vec<usize>>,
}

impl Scheduled {
    /// Schedules block LU with m = `blocks` column blocks of width `r` on `ranks`
    /// processors, and ahead the loss of one (when there are two ranks or more).
    pub fn compute(blocks: usize, r: usize, ranks: usize, costs: Costs) -> Scheduled {
        let graph = generate::lu(blocks * r, r, costs.lu);
        let updates: Vec<Vec<usize>> = (0..blocks)
            .map(|k| {
                (k + 1..blocks).map(|j| graph.task(&format!("U{k}.{j}")).expect("the LU graph's update")).collect()
            })
            .collect();
        let family = Family::new(vec![graph], 0).expect("the LU graph is valid");
        let events = if ranks > 1 { vec![Event::Lose(1)] } else { vec![] };
        let config = Config { procs: ranks, dropped: Default::default() };
        let lookahead = Lookahead::compute(&mut Scheduler::new(costs.comm), &family, config, &events)
            .expect("one rank fewer is a configuration");
        Scheduled { lookahead, ranks, updates }
    }

    /// The ranks of each iteration in `layered`, whose processor i is `ranks[i]`. An
    /// iteration without multiplications gets the first rank (its token passes through).
    fn ranks_of(&self, layered: &Layered, ranks: &[usize]) -> Vec<Vec<usize>> {
        let placements = &layered.schedule.placements;
        self.updates
            .iter()
            .map(|tasks| {
                let mut chosen: Vec<usize> =
                    tasks.iter().flat_map(|&v| placements[v].procs.iter().map(|&q| ranks[q])).collect();
                chosen.sort_unstable();
                chosen.dedup();
                if chosen.is_empty() {
                    chosen.push(ranks[0]);
                }
                chosen
            })
            .collect()
    }

    /// Each iteration's ranks on all ranks.
    pub fn all_ranks(&self) -> Vec<Vec<usize>> {
        self.ranks_of(&self.lookahead.current, &(0..self.ranks).collect::<Vec<_>>())
    }

    /// Each iteration's ranks once `rank` is withdrawn: the pre-computed schedule on P − 1
    /// processors, a lookup, on the ranks left.
    pub fn without(&self, rank: usize) -> Option<Vec<Vec<usize>>> {
        let alternative = self.lookahead.switch(&Event::Lose(1))?;
        let left: Vec<usize> = (0..self.ranks).filter(|&q| q != rank).collect();
        Some(self.ranks_of(&alternative.layered, &left))
    }

    /// The model's makespans: on all ranks, on one fewer from the start, and with the
    /// withdrawal (all ranks up to iteration K, one fewer from it on).
    pub fn predicted(&self, withdraw: Option<Withdraw>) -> (f64, Option<f64>, Option<f64>) {
        let all = &self.lookahead.current;
        let Some(reduced) = self.lookahead.switch(&Event::Lose(1)).map(|a| &a.layered) else {
            return (all.schedule.makespan, None, None);
        };
        // Iteration K begins with the layer of its panel, F{K−1}: layer 2(K−1), after the
        // redistribution phase before it.
        let cut = |l: &Layered, layer: usize| if layer == 0 { 0.0 } else { l.schedule.phases[layer - 1].start };
        let withdrawn = withdraw.map(|w| {
            let layer = 2 * (w.iteration - 1);
            cut(all, layer) + reduced.schedule.makespan - cut(reduced, layer)
        });
        (all.schedule.makespan, Some(reduced.schedule.makespan), withdrawn)
    }

    /// Seconds to compute the schedule and its alternative.
    pub fn lookahead_s(&self) -> f64 {
        self.lookahead.compute_s
    }
}

/// The multiplication threads of every iteration, read by the dynamic pipeline's routes and
/// rewritten by the coordinator when it reaches the iteration of a withdrawal. Only rank 0's
/// copy is used: the coordinator and the stream that posts the multiplications live there.
#[derive(Debug)]
pub struct Allotment {
    initial: Vec<Vec<usize>>,
    rows: RwLock<Vec<Vec<usize>>>,
    switch: Option<Switch>,
    switch_s: Mutex<Option<f64>>,
}

/// A withdrawal to switch to.
#[derive(Debug)]
struct Switch {
    withdraw: Withdraw,
    scheduled: Arc<Scheduled>,
    /// The multiplication threads on each rank.
    threads_on: Vec<Vec<usize>>,
}

/// The threads on `ranks` (`threads_on[q]`: those on rank q); if they host none, those of
/// every rank but `excluded`.
fn threads(threads_on: &[Vec<usize>], ranks: &[usize], excluded: Option<usize>) -> Vec<usize> {
    let pick = |keep: &dyn Fn(usize) -> bool| -> Vec<usize> {
        let mut t: Vec<usize> =
            (0..threads_on.len()).filter(|&q| keep(q)).flat_map(|q| threads_on[q].clone()).collect();
        t.sort_unstable();
        t
    };
    let chosen = pick(&|q| ranks.contains(&q));
    if chosen.is_empty() {
        pick(&|q| Some(q) != excluded)
    } else {
        chosen
    }
}

impl Allotment {
    /// A fixed allotment: `rows[k]` the threads of iteration k (from 0).
    pub fn fixed(rows: Vec<Vec<usize>>) -> Allotment {
        Allotment { rows: RwLock::new(rows.clone()), initial: rows, switch: None, switch_s: Mutex::new(None) }
    }

    /// The scheduler's allotment, the threads of thread t on rank `rank_of[t]`, switching
    /// at `withdraw` to the schedule without its rank.
    ///
    /// # Errors
    /// The `--map` puts every multiplication thread on the withdrawn rank.
    pub fn scheduled(
        scheduled: Arc<Scheduled>,
        rank_of: &[usize],
        withdraw: Option<Withdraw>,
    ) -> Result<Allotment, String> {
        let mut threads_on = vec![Vec::new(); scheduled.ranks];
        for (t, &q) in rank_of.iter().enumerate() {
            threads_on[q].push(t);
        }
        let initial: Vec<Vec<usize>> =
            scheduled.all_ranks().iter().map(|ranks| threads(&threads_on, ranks, None)).collect();
        let switch = withdraw.map(|withdraw| Switch { withdraw, scheduled, threads_on });
        if let Some(s) = &switch {
            if threads(&s.threads_on, &[], Some(s.withdraw.rank)).is_empty() {
                return Err(format!(
                    "--withdraw {}: --map puts every multiplication thread on rank {}",
                    s.withdraw, s.withdraw.rank
                ));
            }
        }
        Ok(Allotment { rows: RwLock::new(initial.clone()), initial, switch, switch_s: Mutex::new(None) })
    }

    /// Called by the coordinator as iteration `k` (from 0) begins, before any of its
    /// multiplications is posted: a new factorization starts from the initial allotment;
    /// at the withdrawal's iteration, the iterations left switch to the pre-computed
    /// schedule without its rank (the withdrawn rank's threads get no more work).
    pub fn begin(&self, k: usize) {
        let mut rows = self.rows.write().expect("no route panics holding the allotment");
        if k == 0 {
            rows.clone_from(&self.initial);
        }
        let Some(s) = self.switch.as_ref().filter(|s| s.withdraw.iteration == k + 1) else { return };
        let clock = Instant::now();
        let ranks = s.scheduled.without(s.withdraw.rank).expect("the lookahead has the loss of a rank");
        for (row, ranks) in rows.iter_mut().zip(&ranks).skip(k) {
            *row = threads(&s.threads_on, ranks, Some(s.withdraw.rank));
        }
        *self.switch_s.lock().expect("not poisoned") = Some(clock.elapsed().as_secs_f64());
    }

    /// The number of threads of iteration `k`.
    pub fn count(&self, k: usize) -> usize {
        self.rows.read().expect("not poisoned")[k].len()
    }

    /// Thread `i` of iteration `k` (modulo their number).
    pub fn member(&self, k: usize, i: usize) -> usize {
        let rows = self.rows.read().expect("not poisoned");
        rows[k][i % rows[k].len()]
    }

    /// The threads of each iteration, as the last factorization used them.
    pub fn rows(&self) -> Vec<Vec<usize>> {
        self.rows.read().expect("not poisoned").clone()
    }

    /// The last switch's time, seconds: the lookup and the new rows.
    pub fn switch_s(&self) -> Option<f64> {
        *self.switch_s.lock().expect("not poisoned")
    }
}

/// One iteration's choice, as the record reports it.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Chosen {
    /// Iteration, from 1.
    pub iteration: usize,
    /// Multiplication threads.
    pub threads: usize,
    /// The ranks hosting them.
    pub ranks: Vec<usize>,
}

/// `--alloc schedule`: what the scheduler chose and predicted, in the record.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct ScheduleReport {
    /// Each iteration's threads and ranks (as the last factorization ran).
    pub iterations: Vec<Chosen>,
    /// Seconds to compute the schedule on all ranks and the one without a rank.
    pub lookahead_s: f64,
    /// The model's makespan on all ranks, s.
    pub predicted_all_s: f64,
    /// The model's makespan on one rank fewer from the start, s (two ranks or more).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_reduced_s: Option<f64>,
    /// `--withdraw`: the rank withdrawn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_rank: Option<usize>,
    /// `--withdraw`: the first iteration without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_at: Option<usize>,
    /// `--withdraw`: the switch's time on the coordinator, s (a lookup).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch_s: Option<f64>,
    /// `--withdraw`: the model's makespan with the withdrawal, s (the move of the column
    /// threads included).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_withdrawn_s: Option<f64>,
    /// `--withdraw` of a rank holding column blocks: the column threads moved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub column_moves: Vec<ColumnMove>,
    /// The moves' time on the run's clock, s (median over the timed factorizations).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_s: Option<f64>,
    /// The model's time for the moves, s: l + bytes/b per thread on the platform file's link.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub predicted_move_s: Option<f64>,
}

/// A withdrawal's moves of column threads, for the record.
#[derive(Debug, Clone, Default)]
pub struct Moves {
    /// The threads moved.
    pub moves: Vec<ColumnMove>,
    /// Their measured time, s.
    pub seconds: Option<f64>,
    /// The link they are predicted on.
    pub comm: Option<Comm>,
}

impl ScheduleReport {
    /// The report of a run: `rows[k]` the threads of iteration k, `rank_of[t]` thread t's rank.
    pub fn new(
        scheduled: &Scheduled,
        allotment: &Allotment,
        rank_of: &[usize],
        withdraw: Option<Withdraw>,
        moved: Moves,
    ) -> ScheduleReport {
        let iterations = allotment
            .rows()
            .iter()
            .enumerate()
            .map(|(k, threads)| {
                let mut ranks: Vec<usize> = threads.iter().map(|&t| rank_of[t]).collect();
                ranks.sort_unstable();
                ranks.dedup();
                Chosen { iteration: k + 1, threads: threads.len(), ranks }
            })
            .collect();
        let (all, reduced, withdrawn) = scheduled.predicted(withdraw);
        let predicted_move_s =
            (!moved.moves.is_empty()).then(|| ColumnMove::predicted_s(&moved.moves, moved.comm.unwrap_or(Comm::FREE)));
        let withdrawn = withdrawn.map(|w| w + predicted_move_s.unwrap_or(0.0));
        ScheduleReport {
            iterations,
            lookahead_s: scheduled.lookahead_s(),
            predicted_all_s: all,
            predicted_reduced_s: reduced,
            withdrawn_rank: withdraw.map(|w| w.rank),
            withdrawn_at: withdraw.map(|w| w.iteration),
            switch_s: allotment.switch_s(),
            predicted_withdrawn_s: withdrawn,
            column_moves: moved.moves,
            move_s: moved.seconds,
            predicted_move_s,
        }
    }
}

impl fmt::Display for ScheduleReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |r: &[usize]| r.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
        let chosen: Vec<String> =
            self.iterations.iter().map(|c| format!("{}: {} on {}", c.iteration, c.threads, join(&c.ranks))).collect();
        write!(f, "schedule (iteration: threads on ranks) {}", chosen.join(" | "))?;
        if let (Some(rank), Some(k)) = (self.withdrawn_rank, self.withdrawn_at) {
            write!(f, "; rank {rank} withdrawn at iteration {k}")?;
            if let Some(s) = self.switch_s {
                write!(f, ", switch {:.1} µs", s * 1e6)?;
            }
            for m in &self.column_moves {
                write!(
                    f,
                    ", column thread {} ({} blocks, {:.1} MB) moved to rank {}",
                    m.thread,
                    m.blocks,
                    m.bytes as f64 / 1e6,
                    m.to
                )?;
            }
            if let Some(s) = self.move_s {
                write!(f, " in {:.3} ms", s * 1e3)?;
            }
        }
        write!(f, "; model: {:.3} ms on all ranks", self.predicted_all_s * 1e3)?;
        if let Some(r) = self.predicted_reduced_s {
            write!(f, ", {:.3} ms on one fewer", r * 1e3)?;
        }
        if let Some(w) = self.predicted_withdrawn_s {
            write!(f, ", {:.3} ms with the withdrawal", w * 1e3)?;
        }
        if let Some(m) = self.predicted_move_s {
            write!(f, " (its move {:.3} ms)", m * 1e3)?;
        }
        write!(f, " (lookahead {:.1} ms)", self.lookahead_s * 1e3)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn withdrawals_parse_print_back_and_are_checked() {
        let w: WithdrawArg = "2@iteration:3".parse().unwrap();
        assert_eq!((&w.who, w.iteration, w.to_string()), (&Leaving::Rank(2), 3, "2@iteration:3".into()));
        let h: WithdrawArg = "n2@iteration:3".parse().unwrap();
        assert_eq!((&h.who, h.to_string()), (&Leaving::Host("n2".into()), "n2@iteration:3".into()));
        for bad in ["", "2", "2@3", "2@iteration:", "2@iteration:x", "-1@iteration:2", "2@it:3", "n 2@iteration:3"] {
            assert!(bad.parse::<WithdrawArg>().is_err(), "{bad}");
        }
        assert!(Withdraw { rank: 1, iteration: 2 }.check(2, 5).is_ok());
        assert!(Withdraw { rank: 2, iteration: 5 }.check(3, 5).is_ok());
        let e = |rank, iteration, ranks| Withdraw { rank, iteration }.check(ranks, 5).unwrap_err();
        assert!(e(2, 2, 2).contains("not in the job"));
        assert!(e(0, 2, 4).contains("coordinator"));
        assert!(Withdraw { rank: 1, iteration: 2 }.check(4, 5).is_ok(), "a column holder may leave");
        assert!(e(1, 6, 2).contains("1..=5") && e(1, 0, 2).contains("1..=5"));
    }

    #[test]
    fn a_column_thread_moves_to_the_rank_that_stays_with_the_fewest_blocks_left() {
        let w = |rank, iteration| Withdraw { rank, iteration };
        // 4 ranks, columns on 0..2, n = 96 in blocks of 16 (6 blocks: 1, 3, 5 on thread 1).
        let m = ColumnMove::plan(w(1, 3), 4, 2, (96, 16));
        assert_eq!(m, [ColumnMove { thread: 1, from: 1, to: 2, blocks: 3, bytes: 3 * 96 * 16 * 8 }]);
        assert!(ColumnMove::plan(w(3, 3), 4, 2, (96, 16)).is_empty(), "rank 3 holds no column");
        // 2 ranks: everything to rank 0.
        assert_eq!(ColumnMove::plan(w(1, 2), 2, 2, (96, 16))[0].to, 0);
        // 3 ranks, columns on all: rank 2 leaves at iteration 5 (blocks 4, 5 left: 4 on rank
        // 1, 5 on rank 2): rank 0 has none left, rank 1 one.
        assert_eq!(ColumnMove::plan(w(2, 5), 3, 3, (96, 16))[0].to, 0);
        // A tie goes to a rank other than 0; the last block is narrower (n = 90).
        let m = ColumnMove::plan(w(2, 1), 3, 3, (90, 16));
        assert_eq!((m[0].to, m[0].bytes), (1, (16 + 10) * 90 * 8));
        let comm = Comm { latency_s: 1e-5, bytes_per_s: 1e9 };
        assert!((ColumnMove::predicted_s(&m, comm) - (1e-5 + 26.0 * 90.0 * 8.0 / 1e9)).abs() < 1e-15);
        assert_eq!(ColumnMove::predicted_s(&m, Comm::FREE), 0.0);
    }

    #[test]
    fn a_host_name_resolves_to_its_one_rank() {
        let hosts: Vec<String> = ["n1", "n2", "n3", "n3"].iter().map(|h| h.to_string()).collect();
        let arg = |s: &str| s.parse::<WithdrawArg>().unwrap();
        assert_eq!(arg("n2@iteration:2").resolve(&hosts[..3], 5), Ok(Withdraw { rank: 1, iteration: 2 }));
        let e = |s: &str, n| arg(s).resolve(&hosts[..n], 5).unwrap_err();
        assert!(e("n9@iteration:2", 3).contains("no rank of the job runs on n9 (hosts: n1, n2, n3)"));
        assert!(e("n3@iteration:2", 4).contains("n3 runs ranks 2, 3"));
        assert!(e("n1@iteration:2", 3).contains("coordinator") && e("n1@iteration:2", 3).contains("n1 runs rank 0"));
        assert!(arg("n2@iteration:9").check(3, 5).unwrap_err().contains("1..=5"));
        assert_eq!(arg("1@iteration:2").resolve(&hosts[..2], 5), Ok(Withdraw { rank: 1, iteration: 2 }));
    }

    #[test]
    fn the_schedule_gives_each_iteration_at_most_its_multiplications_and_the_switch_drops_the_rank() {
        let s = Scheduled::compute(5, 16, 4, Costs::of(None, 16));
        let all = s.all_ranks();
        assert_eq!(all.len(), 5);
        // Iteration k has (4 − k)² multiplications: never more ranks than those, at least one.
        for (k, ranks) in all.iter().enumerate() {
            assert!(!ranks.is_empty() && ranks.len() <= (4 - k).pow(2).max(1), "{k}: {ranks:?}");
        }
        assert_eq!(all[3].len(), 1, "one multiplication: {all:?}");
        let without = s.without(2).unwrap();
        assert!(without.iter().all(|r| !r.contains(&2) && r.len() <= 3), "{without:?}");
        let (a, reduced, w) = s.predicted(Some(Withdraw { rank: 2, iteration: 3 }));
        let (reduced, w) = (reduced.unwrap(), w.unwrap());
        assert!(a <= w + 1e-12 && w <= reduced + 1e-12, "{a} {w} {reduced}");
        let (_, _, from_start) = s.predicted(Some(Withdraw { rank: 2, iteration: 1 }));
        assert!((from_start.unwrap() - reduced).abs() < 1e-12);
    }

    #[test]
    fn the_allotment_switches_at_the_withdrawal_and_resets_for_the_next_run() {
        let s = Arc::new(Scheduled::compute(5, 16, 3, Costs::of(None, 16)));
        // Two threads per rank: t on rank t % 3.
        let rank_of = [0, 1, 2, 0, 1, 2];
        let a = Allotment::scheduled(s, &rank_of, Some(Withdraw { rank: 2, iteration: 2 })).unwrap();
        a.begin(0);
        assert!(a.rows()[1].iter().any(|&t| rank_of[t] == 2), "before the switch: {:?}", a.rows());
        a.begin(1);
        assert!(a.rows()[1..].iter().flatten().all(|&t| rank_of[t] != 2), "{:?}", a.rows());
        assert!(a.switch_s().is_some());
        a.begin(0);
        assert!(a.rows()[1].iter().any(|&t| rank_of[t] == 2), "reset: {:?}", a.rows());
        let only_on_2 = Allotment::scheduled(
            Arc::new(Scheduled::compute(3, 8, 3, Costs::of(None, 8))),
            &[2, 2],
            Some(Withdraw { rank: 2, iteration: 2 }),
        );
        assert!(only_on_2.unwrap_err().contains("every multiplication thread on rank 2"));
    }
}
