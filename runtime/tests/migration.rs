//! Threads that move between ranks while the program runs, on 1, 2 and 4 ranks: moves under
//! a flood of tokens (every token handled exactly once, on the thread its route names, and
//! every thread's state intact), remapping between calls of a graph, and the errors a move
//! that cannot happen gets before anything moves. Each `scenario_*` test is `#[ignore]`d: the
//! matching normal test relaunches this binary under `mpirun`.

use dps::{route, Bulk, ErrorKind, MergeFn, Node, Runtime};
use dps_launch::scenario_passes_on_1_2_4 as passes_on_1_2_4;
use serde::{Deserialize, Serialize};

/// A moving thread's state: what it has handled, and a large payload that must survive
/// every move (out of band, as a `Bulk`).
#[derive(Serialize, Deserialize)]
struct Counter {
    index: usize,
    handled: u64,
    sum: u64,
    payload: Bulk<u64>,
}

impl Counter {
    fn new(index: usize) -> Self {
        Counter { index, handled: 0, sum: 0, payload: Bulk((0..6000).map(|k| k * 31 + index as u64).collect()) }
    }

    fn payload_intact(&self) -> bool {
        self.payload.len() == 6000
            && self.payload.iter().enumerate().all(|(k, &v)| v == k as u64 * 31 + self.index as u64)
    }
}

/// What a thread reports: its index, the rank it ran on, its counts, whether its payload is
/// intact.
type Report = (usize, usize, u64, u64, bool);

/// A small deterministic generator for the moves.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}

// ---------------------------------------------------------------- moves under a flood

#[test]
fn threads_move_under_a_flood_of_tokens() {
    passes_on_1_2_4("scenario_flood");
}

#[test]
#[ignore]
fn scenario_flood() {
    let rt = Runtime::init().unwrap();
    let (here, ranks) = (rt.rank(), rt.ranks());
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let movers = rt.movable_collection("movers", "all*2", Counter::new).unwrap();
    let threads = movers.len();
    // Every token goes to thread `t % threads` and comes back with where it ran.
    let split = Node::split("flood", &main, route::fixed(0), |_: &mut (), n: u64| 0..n).window(256);
    let count = Node::leaf("count", &movers, route::by_key(|t: &u64| *t as usize), move |c: &mut Counter, t: u64| {
        c.handled += 1;
        c.sum += t;
        (t, c.index, here)
    });
    let collect = Node::merge(
        "collect",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, acc: &mut Vec<(u64, usize, usize)>, x: (u64, usize, usize)| acc.push(x),
            |_, acc| acc,
        ),
    );
    let flood = rt.graph("flood", split >> count >> collect).unwrap();
    let ask = Node::split("ask", &main, route::fixed(0), move |_: &mut (), _: ()| 0..threads);
    let report = Node::leaf("report", &movers, route::by_key(|i: &usize| *i), move |c: &mut Counter, _: usize| {
        (c.index, here, c.handled, c.sum, c.payload_intact())
    });
    let gather = Node::merge(
        "gather",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, acc: &mut Vec<Report>, r: Report| acc.push(r),
            |_, mut acc| {
                acc.sort();
                acc
            },
        ),
    );
    let reports = rt.graph("reports", ask >> report >> gather).unwrap();
    if rt.is_root() {
        let mut rng = Lcg(7);
        let n: u64 = 20_000;
        let (mut moved_during_a_call, mut moves) = (false, 0);
        for _ in 0..3 {
            let pending = rt.start(&flood, n);
            for _ in 0..12 {
                let (i, to) = (rng.below(threads), rng.below(ranks));
                rt.migrate(&movers, i, to).unwrap();
                assert_eq!(movers.rank_of(i), to, "the moving rank knows where the thread went");
                moves += 1;
            }
            let mut got = pending.wait().unwrap();
            got.sort();
            assert_eq!(got.len() as u64, n, "tokens lost or duplicated");
            let mut places = std::collections::HashMap::<usize, std::collections::HashSet<usize>>::new();
            for (k, &(t, index, rank)) in got.iter().enumerate() {
                assert_eq!(t, k as u64, "token {k} missing or duplicated");
                assert_eq!(index, t as usize % threads, "token {t} reached the wrong thread");
                places.entry(index).or_default().insert(rank);
            }
            moved_during_a_call |= places.values().any(|r| r.len() > 1);
        }
        if ranks > 1 {
            assert!(moved_during_a_call, "no thread ran on two ranks within one call: the moves missed the flood");
        }
        // Every thread's state came along: its counts are those of the tokens routed to it.
        let got = rt.call(&reports, ()).unwrap();
        assert_eq!(got.len(), threads);
        for (index, rank, handled, sum, intact) in got {
            let mine = (0..n).filter(|t| *t as usize % threads == index);
            assert_eq!(handled, 3 * mine.clone().count() as u64, "thread {index}: tokens handled");
            assert_eq!(sum, 3 * mine.sum::<u64>(), "thread {index}: sum of its tokens");
            assert!(intact, "thread {index}: its payload changed on the way");
            assert_eq!(rank, movers.rank_of(index), "thread {index} runs where rank 0 believes");
        }
        // Back and forth: every thread to every rank and home again, between calls.
        for to in (0..ranks).chain([0]) {
            rt.remap(&movers, &format!("{to}*{threads}")).unwrap();
            moves += threads;
        }
        let got = rt.call(&reports, ()).unwrap();
        assert!(got.iter().all(|r| r.1 == 0 && r.4), "after the round trip every thread is on rank 0, intact");
        println!("{moves} moves");
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- remap between calls

#[test]
fn remap_between_calls_and_bad_moves() {
    passes_on_1_2_4("scenario_remap");
}

#[test]
#[ignore]
fn scenario_remap() {
    let rt = Runtime::init().unwrap();
    let (here, ranks) = (rt.rank(), rt.ranks());
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let cells = rt.movable_collection("cells", "all*2", |i| (i, 0u64)).unwrap();
    let fixed = rt.collection("fixed", "all", |_| ()).unwrap();
    let threads = cells.len();
    let ask = Node::split("ask", &main, route::fixed(0), move |_: &mut (), _: ()| 0..threads);
    let visit = Node::leaf("visit", &cells, route::by_key(|i: &usize| *i), move |s: &mut (usize, u64), i: usize| {
        assert_eq!(s.0, i, "a thread's state belongs to its index");
        s.1 += 1;
        (i, here, s.1)
    });
    let gather = Node::merge(
        "gather",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, acc: &mut Vec<(usize, usize, u64)>, r: (usize, usize, u64)| acc.push(r),
            |_, mut acc| {
                acc.sort();
                acc
            },
        ),
    );
    let visits = rt.graph("visits", ask >> visit >> gather).unwrap();
    if rt.is_root() {
        let check = |expect_rank: &dyn Fn(usize) -> usize, calls: u64| {
            let got = rt.call(&visits, ()).unwrap();
            assert_eq!(got.len(), threads);
            for (i, rank, count) in got {
                assert_eq!(rank, expect_rank(i), "thread {i} ran on rank {rank}");
                assert_eq!(count, calls, "thread {i}: its state did not survive");
                assert_eq!(cells.rank_of(i), rank);
            }
        };
        let initial = |i: usize| i % ranks;
        check(&initial, 1);
        // Reversed: thread i on rank ranks-1-(i % ranks).
        let reversed = |i: usize| ranks - 1 - i % ranks;
        let mapping: Vec<String> = (0..threads).map(|i| reversed(i).to_string()).collect();
        rt.remap(&cells, &mapping.join(" ")).unwrap();
        check(&reversed, 2);
        // All on the last rank, then back to the original mapping.
        rt.remap(&cells, &format!("{}*{threads}", ranks - 1)).unwrap();
        check(&|_| ranks - 1, 3);
        rt.remap(&cells, "all*2").unwrap();
        check(&initial, 4);

        // Moves that cannot happen fail before anything moves.
        let e = rt.migrate(&cells, 0, ranks).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Mapping);
        assert!(e.to_string().contains(&format!("rank {ranks}, which does not exist")), "{e}");
        let e = rt.remap(&cells, &format!("0*{} {ranks}", threads - 1)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Mapping);
        assert!(e.to_string().contains("does not exist"), "{e}");
        let e = rt.remap(&cells, "0").unwrap_err();
        assert!(e.to_string().contains("has 1 threads"), "{e}");
        let e = rt.migrate(&cells, threads, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage);
        let e = rt.migrate(&fixed, 0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Usage);
        assert!(e.to_string().contains("cannot move"), "{e}");
        check(&initial, 5);
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- a move waits for instances

#[test]
fn a_thread_moves_only_once_its_instances_are_done() {
    passes_on_1_2_4("scenario_deferred");
}

static MERGED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

#[test]
#[ignore]
fn scenario_deferred() {
    use std::sync::atomic::Ordering;
    let rt = Runtime::init().unwrap();
    let last = rt.ranks() - 1;
    // The split and its merge run on thread 0 of a movable collection, on rank 0.
    let openers = rt.movable_collection("openers", "0", |_| 0u64).unwrap();
    let workers = rt.collection("workers", "all", |_| ()).unwrap();
    let split = Node::split("open", &openers, route::fixed(0), |_: &mut u64, n: u64| 0..n).window(4);
    let slow = Node::leaf("slow", &workers, route::round_robin(), |_: &mut (), x: u64| {
        std::thread::sleep(std::time::Duration::from_millis(2));
        x
    });
    let sum = Node::merge(
        "sum",
        &openers,
        MergeFn::new(
            |_: &mut u64| 0u64,
            |_, acc: &mut u64, x: u64| *acc += x,
            |calls: &mut u64, acc| {
                *calls += 1;
                MERGED.store(true, Ordering::SeqCst);
                (acc, *calls)
            },
        ),
    );
    let g = rt.graph("deferred", split >> slow >> sum).unwrap();
    if rt.is_root() {
        let pending = rt.start(&g, 100);
        // Asked while the instance is open: the move waits for the merge to finish.
        rt.migrate(&openers, 0, last).unwrap();
        assert!(MERGED.load(Ordering::SeqCst), "the thread moved before its instance was merged");
        assert_eq!(pending.wait().unwrap(), ((0..100).sum::<u64>(), 1));
        assert_eq!(openers.rank_of(0), last);
        // The state came along: the next call counts on from 1, on the new rank.
        assert_eq!(rt.call(&g, 10).unwrap(), ((0..10).sum::<u64>(), 2));
    }
    rt.shutdown().unwrap();
}
