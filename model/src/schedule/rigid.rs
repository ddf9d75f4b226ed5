//! Greedy list scheduling of rigid tasks (each on a fixed number of processors), with or
//! without precedence: at every event (time 0, a task's end) the ready tasks are scanned in
//! list order and each one that fits on the free processors starts, on the lowest-numbered
//! free ones.
//!
//! For independent tasks this is within 2·max(W/P, τ_max) (W the total work, τ_max the
//! longest task): the proof is in model/README.md ("The layer's factor"), and
//! `tests::list_schedule_is_within_twice_its_lower_bound` checks it.

/// A task with its processor count and time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rigid {
    /// Processors it runs on (1…P).
    pub procs: usize,
    /// Seconds it runs.
    pub time: f64,
}

/// Where and when a task runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    /// Start, seconds.
    pub start: f64,
    /// The processors (0…P−1), ascending.
    pub procs: Vec<usize>,
}

/// Schedules `tasks` on `p` processors, scanning ready tasks in the order `order` (a
/// permutation of the tasks); `preds[v]` must end before `v` starts, plus `delay(u, v)`
/// seconds after `u` (data moved between them). Every task must fit (`procs ≤ p`) and the
/// precedence must be acyclic.
pub fn list_schedule(
    tasks: &[Rigid],
    order: &[usize],
    preds: &[Vec<usize>],
    p: usize,
    delay: impl Fn(usize, usize) -> f64,
) -> Vec<Slot> {
    let n = tasks.len();
    debug_assert!(tasks.iter().all(|t| t.procs >= 1 && t.procs <= p));
    let mut slots: Vec<Option<Slot>> = vec![None; n];
    let mut finish = vec![f64::INFINITY; n];
    let mut free_at = vec![0.0f64; p]; // when each processor is next free
    let mut started = 0;
    let mut now = 0.0f64;
    while started < n {
        let mut free: Vec<usize> = (0..p).filter(|&q| free_at[q] <= now).collect();
        for &v in order {
            if slots[v].is_some() || tasks[v].procs > free.len() {
                continue;
            }
            let ready = preds[v].iter().map(|&u| finish[u] + delay(u, v)).fold(0.0f64, f64::max);
            if ready > now {
                continue;
            }
            let on: Vec<usize> = free.drain(..tasks[v].procs).collect();
            finish[v] = now + tasks[v].time;
            for &q in &on {
                free_at[q] = finish[v];
            }
            slots[v] = Some(Slot { start: now, procs: on });
            started += 1;
        }
        if started == n {
            break;
        }
        // The next event: a processor freed, or a pending task's data arriving.
        let next_free = free_at.iter().copied().filter(|&t| t > now).fold(f64::INFINITY, f64::min);
        let next_ready = (0..n)
            .filter(|&v| slots[v].is_none() && preds[v].iter().all(|&u| finish[u].is_finite()))
            .map(|v| preds[v].iter().map(|&u| finish[u] + delay(u, v)).fold(0.0f64, f64::max))
            .filter(|&t| t > now)
            .fold(f64::INFINITY, f64::min);
        let next = next_free.min(next_ready);
        assert!(next.is_finite(), "list scheduling is stuck (a cycle, or a task wider than P)");
        now = next;
    }
    slots.into_iter().map(|s| s.expect("every task placed")).collect()
}

/// The makespan of `slots` for `tasks`.
pub fn makespan(tasks: &[Rigid], slots: &[Slot]) -> f64 {
    tasks.iter().zip(slots).map(|(t, s)| s.start + t.time).fold(0.0, f64::max)
}
