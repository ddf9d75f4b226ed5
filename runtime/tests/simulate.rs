//! The simulator (`Runtime::simulate`): exact predictions where the costs are known
//! (PDEXEC with a kernel table and a fixed link), determinism, the result of a simulated
//! run equal to the real one's, the trace in simulated time, and loud failure.

use std::sync::Arc;

use dps::{route, MergeFn, Node, Runtime, SimMode, SimOptions, TransferCpu};

/// Each leaf call charges kernel "k" at 1 ms per unit of work; messages between ranks take
/// 10 µs; one core per rank.
fn costed(mode: SimMode) -> SimOptions {
    let mut opts = SimOptions::ideal(mode);
    opts.link = Arc::new(|_, _, _| 10e-6);
    opts.kernels = Arc::new(|name, _, work| (name == "k").then_some(work * 1e-3));
    opts.cores_per_rank = Some(1);
    opts
}

/// Sum of squares of 0..n, the squares on the `work` collection ("all"); each square
/// charges one unit of kernel "k" (skipped, so it also computes it: the result stays right).
fn sum_of_squares(rt: &Runtime) -> dps::Graph<u64, u64> {
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |i| i).unwrap();
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    let square = Node::leaf("square", &work, route::round_robin(), |_: &mut usize, x: u64| {
        dps::skip_kernel("k", &[1], 1.0);
        x * x
    });
    let sum =
        Node::merge("sum", &main, MergeFn::new(|_: &mut ()| 0u64, |_, acc: &mut u64, x: u64| *acc += x, |_, acc| acc));
    rt.graph("sum of squares", split >> square >> sum).unwrap()
}

#[test]
fn pdexec_predicts_exactly_what_the_costs_say() {
    let rt = Runtime::simulate(4, costed(SimMode::Pdexec)).unwrap();
    let g = sum_of_squares(&rt);
    let watch = rt.stopwatch();
    assert_eq!(rt.call(&g, 8).unwrap(), (0..8).map(|x| x * x).sum::<u64>());
    // Each rank squares two numbers (2 ms); ranks 1-3 get theirs 10 µs late and send the
    // squares back in 10 µs: the last arrives at 2.020 ms. The split and merge cost nothing.
    assert_eq!(watch.seconds(), 2.020e-3);
    let report = rt.simulation().unwrap();
    assert_eq!(report.busy_s, vec![2e-3; 4]);
    assert_eq!(report.messages, 12, "6 numbers out to ranks 1-3, 6 squares back");
    rt.shutdown().unwrap();
}

/// The trace of one PDEXEC run, and its prediction.
fn traced_run(dir: &std::path::Path, name: &str) -> (String, f64) {
    let mut rt = Runtime::simulate(3, costed(SimMode::Pdexec)).unwrap();
    let path = dir.join(name);
    rt.trace_to(&path).unwrap();
    let g = sum_of_squares(&rt);
    let watch = rt.stopwatch();
    for n in [5, 17, 40] {
        rt.call(&g, n).unwrap();
    }
    let seconds = watch.seconds();
    rt.shutdown().unwrap();
    (std::fs::read_to_string(path).unwrap(), seconds)
}

#[test]
fn pdexec_runs_are_identical_down_to_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (a, ta) = traced_run(dir.path(), "a.json");
    let (b, tb) = traced_run(dir.path(), "b.json");
    assert_eq!(ta, tb);
    assert_eq!(a, b, "two simulations of the same program wrote different traces");
    // The trace is in simulated time: it starts at 0 and ends at the prediction.
    let trace: serde_json::Value = serde_json::from_str(&a).unwrap();
    let spans: Vec<&serde_json::Value> =
        trace["traceEvents"].as_array().unwrap().iter().filter(|e| e["ph"] == "X").collect();
    assert!(!spans.is_empty());
    let end = spans.iter().map(|e| e["ts"].as_f64().unwrap() + e["dur"].as_f64().unwrap()).fold(0.0, f64::max);
    assert!(end <= ta * 1e6 + 1e-6 && end > 0.5 * ta * 1e6, "last span ends at {end} µs, prediction {ta} s");
    let pids: std::collections::BTreeSet<u64> = spans.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
    assert_eq!(pids.into_iter().collect::<Vec<_>>(), [0, 1, 2], "every virtual rank has its track");
}

#[test]
fn de_gives_the_real_result_on_any_number_of_ranks() {
    let real = {
        let rt = Runtime::single();
        let g = sum_of_squares(&rt);
        let r = rt.call(&g, 1000).unwrap();
        rt.shutdown().unwrap();
        r
    };
    for ranks in [1, 2, 4, 7] {
        let rt = Runtime::simulate(ranks, costed(SimMode::De)).unwrap();
        let g = sum_of_squares(&rt);
        let watch = rt.stopwatch();
        assert_eq!(rt.call(&g, 1000).unwrap(), real, "{ranks} virtual ranks");
        assert_eq!(rt.call(&g, 1000).unwrap(), real, "{ranks} virtual ranks, second call");
        // DE charges the measured CPU time, never less than the messages' 10 µs.
        assert!(watch.seconds() > if ranks > 1 { 20e-6 } else { 0.0 }, "{ranks} ranks: {}", watch.seconds());
        assert_eq!(rt.simulation().unwrap().ranks, ranks);
        rt.shutdown().unwrap();
    }
}

#[test]
fn a_panic_ends_the_simulation_naming_the_virtual_rank() {
    let rt = Runtime::simulate(3, SimOptions::ideal(SimMode::De)).unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |i| i).unwrap();
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    let fail = Node::leaf("fail", &work, route::round_robin(), |i: &mut usize, x: u64| {
        assert!(*i != 2, "thread 2 refuses");
        x
    });
    let sum =
        Node::merge("sum", &main, MergeFn::new(|_: &mut ()| 0u64, |_, acc: &mut u64, x: u64| *acc += x, |_, acc| acc));
    let g = rt.graph("fails on rank 2", split >> fail >> sum).unwrap();
    let e = rt.call(&g, 9).unwrap_err().to_string();
    assert!(e.contains("rank 2") && e.contains("'fail'") && e.contains("thread 2 refuses"), "{e}");
    let again = rt.call(&g, 9).unwrap_err().to_string();
    assert!(again.contains("rank 2"), "a later call gets the same failure: {again}");
    drop(rt);
}

#[test]
fn zero_ranks_is_refused() {
    let e = Runtime::simulate(0, SimOptions::ideal(SimMode::De)).unwrap_err().to_string();
    assert!(e.contains("at least one rank"), "{e}");
}

#[test]
fn a_call_waited_for_on_another_thread_is_charged_too() {
    let rt = Runtime::simulate(2, costed(SimMode::Pdexec)).unwrap();
    let g = sum_of_squares(&rt);
    let watch = rt.stopwatch();
    let (sum, seconds) = std::thread::scope(|s| {
        s.spawn(|| {
            let sum = rt.call(&g, 8).unwrap();
            (sum, watch.seconds())
        })
        .join()
        .unwrap()
    });
    assert_eq!(sum, (0..8).map(|x| x * x).sum::<u64>());
    // Four squares per rank at 1 ms; rank 1's arrive 10 µs late and return in 10 µs.
    assert_eq!(seconds, 4.020e-3);
    rt.shutdown().unwrap();
}

/// `costed`, with a message costing the sender 1 µs and the receiver 4 µs of CPU.
fn costed_transfers() -> SimOptions {
    let mut opts = costed(SimMode::Pdexec);
    opts.send_cpu = TransferCpu { per_message_s: 1e-6, per_byte_s: 0.0 };
    opts.receive_cpu = TransferCpu { per_message_s: 4e-6, per_byte_s: 0.0 };
    opts
}

/// The prediction and report of one call of `sum_of_squares(n)` on 2 ranks.
fn two_ranks(opts: SimOptions, n: u64) -> (f64, dps::SimReport) {
    let rt = Runtime::simulate(2, opts).unwrap();
    let g = sum_of_squares(&rt);
    let watch = rt.stopwatch();
    assert_eq!(rt.call(&g, n).unwrap(), (0..n).map(|x| x * x).sum::<u64>());
    let out = (watch.seconds(), rt.simulation().unwrap());
    rt.shutdown().unwrap();
    out
}

#[test]
fn transfer_costs_take_cpu_but_not_latency_when_cores_are_free() {
    // Rank 1 gets 1 at 10 µs (the link's time: 1 µs sending, 5 in flight, 4 receiving),
    // squares it by 1.010 ms, and rank 0, idle by then, has the square at 1.020 ms: the
    // link's 10 µs after rank 1 began to send it, as without transfer costs.
    let (seconds, report) = two_ranks(costed_transfers(), 2);
    assert_eq!(seconds, 1.020e-3);
    assert_eq!(two_ranks(costed(SimMode::Pdexec), 2).0, seconds);
    assert_eq!(report.receive_s, vec![4e-6, 4e-6]);
    assert_eq!(report.busy_s, vec![1.001e-3, 1.001e-3], "each rank's operations paid one send");
}

#[test]
fn on_a_share_of_a_core_the_link_still_contains_both_sides_cpu_work() {
    // At half a core the 1 µs send and 4 µs reception take 2 and 8 µs: with the link's 10 µs
    // measured on such nodes, nothing is left in flight, and the square still arrives the
    // link's time after its send began, as without transfer costs.
    let half = |opts: SimOptions| two_ranks(SimOptions { cpu_share: 0.5, ..opts }, 2).0;
    assert_eq!(half(costed_transfers()), half(costed(SimMode::Pdexec)));
}

#[test]
fn a_reception_waits_for_a_free_core() {
    // With 8 numbers each rank squares 4 (4 ms): rank 0's core is busy when rank 1's
    // squares come back, so their receptions (4 µs each) wait and then add to rank 0's time.
    let (free, _) = two_ranks(costed(SimMode::Pdexec), 8);
    let (costed, report) = two_ranks(costed_transfers(), 8);
    assert_eq!(report.receive_s, vec![16e-6, 16e-6]);
    assert!(costed > free + 4e-6, "receptions cost rank 0 nothing: {costed} s against {free} s");
    assert!(costed <= free + 4.0 * 1e-6 + 8.0 * 4e-6, "{costed} s against {free} s: more than the transfers cost");
}

#[test]
fn messages_queue_for_their_ranks_ports_when_contention_is_on() {
    // Each message holds its sender's and receiver's port for the whole 10 µs link. Rank 0
    // sends 6 numbers at once: they leave one after the other, at 0, 10, ..., 50 µs, so
    // rank 3's second number arrives at 60 µs (free: 10 µs) but waits for its first square
    // (30 µs + 1 ms) all the same. The squares come back as their ranks finish, at 2.010,
    // 2.020 and 2.030 ms, each reaching rank 0's free port and arriving 10 µs later.
    let mut opts = costed(SimMode::Pdexec);
    opts.port_contention = Some(Arc::new(|_, _, _| 10e-6));
    let rt = Runtime::simulate(4, opts).unwrap();
    let g = sum_of_squares(&rt);
    let watch = rt.stopwatch();
    assert_eq!(rt.call(&g, 8).unwrap(), (0..8).map(|x| x * x).sum::<u64>());
    assert_eq!(watch.seconds(), 2.040e-3);
    rt.shutdown().unwrap();
}

#[test]
fn a_reception_takes_longer_on_a_share_of_a_core() {
    // A node at half a core receives in twice the CPU time.
    let (_, whole) = two_ranks(costed_transfers(), 2);
    let (_, half) = two_ranks(SimOptions { cpu_share: 0.5, ..costed_transfers() }, 2);
    assert_eq!(whole.receive_s, vec![4e-6, 4e-6]);
    assert_eq!(half.receive_s, vec![8e-6, 8e-6]);
}

/// Threads move in simulated time: a move is the request to the thread's rank, its state to
/// the new rank and the arrival back at the requester (three messages of 10 µs here); every
/// virtual rank keeps its own view of where threads live, as a real rank does, and tokens
/// sent by any rank reach a thread wherever it went, its state intact.
#[test]
fn threads_move_in_simulated_time() {
    let rt = Runtime::simulate(3, costed(SimMode::Pdexec)).unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let relays = rt.collection("relays", "all", |_| ()).unwrap();
    let cells = rt.movable_collection("cells", "all*2", |i| (i, 0u64)).unwrap();
    let threads = cells.len();
    let ask = Node::split("ask", &main, route::fixed(0), move |_: &mut (), _: ()| 0..threads);
    // Token i passes through the relay of rank i % 3, which sends it by its own view.
    let relay = Node::leaf("relay", &relays, route::by_key(|i: &usize| *i), |_: &mut (), i: usize| i);
    let visit = Node::leaf("visit", &cells, route::by_key(|i: &usize| *i), |s: &mut (usize, u64), i: usize| {
        assert_eq!(s.0, i, "a thread's state belongs to its index");
        s.1 += 1;
        (i, s.1)
    });
    let gather = Node::merge(
        "gather",
        &main,
        MergeFn::new(
            |_: &mut ()| Vec::new(),
            |_, acc: &mut Vec<(usize, u64)>, r: (usize, u64)| acc.push(r),
            |_, mut acc| {
                acc.sort();
                acc
            },
        ),
    );
    let visits = rt.graph("visits", ask >> relay >> visit >> gather).unwrap();
    let visited = |calls: u64| (0..threads).map(|i| (i, calls)).collect::<Vec<_>>();
    assert_eq!(rt.call(&visits, ()).unwrap(), visited(1));
    let watch = rt.stopwatch();
    rt.migrate(&cells, 1, 2).unwrap();
    assert_eq!(watch.seconds(), 30e-6, "request, state and arrival: three messages of 10 µs");
    assert_eq!(cells.rank_of(1), 2);
    assert_eq!(rt.call(&visits, ()).unwrap(), visited(2));
    rt.remap(&cells, "2*6").unwrap();
    assert!((0..threads).all(|i| cells.rank_of(i) == 2));
    assert_eq!(rt.call(&visits, ()).unwrap(), visited(3));
    rt.remap(&cells, "all*2").unwrap();
    assert_eq!(rt.call(&visits, ()).unwrap(), visited(4));
    let e = rt.migrate(&cells, 0, 3).unwrap_err();
    assert_eq!(e.kind(), dps::ErrorKind::Mapping, "{e}");
    assert_eq!(rt.simulation().unwrap().busy_s, vec![0.0; 3], "PDEXEC charges nothing here but the links");
    rt.shutdown().unwrap();
}

#[test]
fn an_operation_started_beside_another_on_its_host_is_slowed() {
    // Rank 0 squares 0 from 0 ms alone; rank 1 squares 1 from 10 µs while rank 0 computes:
    // 1 ms × 1.5, and its square is back at 1.520 ms. On hosts of their own, 1.020 ms.
    let mut shared = costed(SimMode::Pdexec);
    shared.co_run_slowdown = 1.5;
    let (t, _) = two_ranks(shared.clone(), 2);
    assert_eq!(t, 1.520e-3);
    let mut apart = shared;
    apart.host_of = Arc::new(|rank| rank);
    assert_eq!(two_ranks(apart, 2).0, 1.020e-3);
}

/// Issue 27: a cost past the clock's range (u64 ns, 584 years) once wrapped around, and a
/// link of 10³⁰ µs predicted less than a normal one. Whichever cost grows (the link, a
/// kernel, a transfer's CPU per message or per byte), the prediction never shrinks, and a
/// run whose clock reached the end of its range says so.
#[test]
fn a_larger_cost_never_predicts_less_and_the_end_of_the_clock_is_reported() {
    const END_S: f64 = u64::MAX as f64 / 1e9;
    let costs = [10e-6, 1.0, 3600.0, 1e9, 1e10, END_S, 1e15, 1e17, 1e24, 1e30, f64::MAX, f64::INFINITY, f64::NAN];
    type Edit = fn(&mut SimOptions, f64);
    let edits: [(&str, Edit); 4] = [
        ("link", |o, c| o.link = Arc::new(move |_, _, _| c)),
        ("kernel", |o, c| o.kernels = Arc::new(move |name, _, work| (name == "k").then_some(work * c))),
        ("send per message", |o, c| o.send_cpu.per_message_s = c),
        ("receive per byte", |o, c| o.receive_cpu.per_byte_s = c),
    ];
    for (what, edit) in edits {
        let runs: Vec<(f64, dps::SimReport)> = costs
            .iter()
            .map(|&c| {
                let mut opts = costed_transfers();
                edit(&mut opts, c);
                two_ranks(opts, 8)
            })
            .collect();
        let times: Vec<f64> = runs.iter().map(|r| r.0).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{what} costs {costs:?} s predicted {times:?} s");
        for (&cost, (_, report)) in costs.iter().zip(&runs) {
            if cost <= 3600.0 {
                assert!(!report.clock_saturated && report.now_s < END_S, "{what} {cost} s: {report:?}");
            } else if cost.is_nan() || cost >= END_S {
                assert!(report.clock_saturated, "{what} {cost} s: not reported as the end of the clock: {report:?}");
            }
        }
    }
}

/// A stopwatch started after the clock reached the end of its range reads the whole range,
/// not the 0 between two stopped times: a later call of a run past the clock must not look
/// free.
#[test]
fn a_stopwatch_started_past_the_clock_reads_the_whole_range() {
    let mut opts = costed(SimMode::Pdexec);
    opts.link = Arc::new(|_, _, _| 1e30);
    let rt = Runtime::simulate(2, opts).unwrap();
    let g = sum_of_squares(&rt);
    let first = rt.stopwatch();
    assert_eq!(rt.call(&g, 4).unwrap(), 14);
    let second = rt.stopwatch();
    assert_eq!(rt.call(&g, 4).unwrap(), 14);
    let end = u64::MAX as f64 / 1e9;
    assert_eq!((first.seconds(), second.seconds()), (end, end));
    assert!(rt.simulation().unwrap().clock_saturated);
    rt.shutdown().unwrap();
}

/// One thread runs two operations in a row on each of 0..10, posted at once by a split:
/// `first`, then `second`, whose tokens for the numbers `urgent` holds for are marked
/// (`Node::first_if`). Returns, for each number, the turns (a count on the thread) of its
/// two operations.
fn turns(urgent: fn(u64) -> bool) -> Vec<(u64, u64)> {
    let rt = Runtime::simulate(1, costed(SimMode::Pdexec)).unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "0", |_| 0u64).unwrap();
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n).unbounded();
    let first = Node::leaf("first", &work, route::fixed(0), |turn: &mut u64, x: u64| {
        dps::skip_kernel("k", &[1], 1.0);
        *turn += 1;
        (x, *turn)
    });
    let second = Node::leaf("second", &work, route::fixed(0), |turn: &mut u64, (x, t1): (u64, u64)| {
        dps::skip_kernel("k", &[1], 1.0);
        *turn += 1;
        (x, t1, *turn)
    });
    let second = second.first_if(move |t: &(u64, u64)| urgent(t.0));
    let collect =
        MergeFn::new(|_: &mut ()| Vec::new(), |_, acc: &mut Vec<(u64, u64, u64)>, t| acc.push(t), |_, acc| acc);
    let g = rt.graph("order", split >> first >> second >> Node::merge("collect", &main, collect)).unwrap();
    let mut done = rt.call(&g, 10).unwrap();
    rt.shutdown().unwrap();
    done.sort_unstable();
    done.into_iter().map(|(_, t1, t2)| (t1, t2)).collect()
}

#[test]
fn first_if_tokens_overtake_other_operations_but_keep_their_own_order() {
    // Plain: the thread's queue is FIFO, so every `first` runs before any `second`.
    let plain = turns(|_| false);
    assert!(plain.iter().all(|&(t1, t2)| t1 <= 10 && t2 > 10), "{plain:?}");
    // Urgent: each `second` overtakes the queued `first`s and runs right after its own
    // `first` (no other `second` is queued then, so none holds it back), in order.
    let urgent = turns(|_| true);
    assert!(urgent.iter().all(|&(t1, t2)| t2 == t1 + 1), "{urgent:?}");
    assert!(urgent.windows(2).all(|w| w[0].1 < w[1].1), "urgent tokens keep their order: {urgent:?}");
    // Only 7 urgent: it does not pass the plain `second`s of 0-6 queued before it (it
    // would run right after its `first` if it did).
    let seven = turns(|x| x == 7);
    assert_eq!(seven[7].1, seven[6].1 + 1, "behind the second of 6: {seven:?}");
    assert_ne!(seven[7].1, seven[7].0 + 1, "{seven:?}");
}
