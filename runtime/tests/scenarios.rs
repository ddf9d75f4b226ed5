//! Runtime scenarios on 1, 2 and 4 ranks. Each `scenario_*` test is `#[ignore]`d: the
//! matching normal test relaunches this test binary under `mpirun` to run it on every rank.

use dps_launch::{self as common, scenario_args as only, scenario_passes_on_1_2_4 as passes_on_1_2_4};

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::time::Duration;

use dps::{branch, route, Either, Merge, MergeFn, Node, Posted, Runtime, Stream};

/// Arguments that make this test binary run just `scenario`.
fn run_on(ranks: usize, scenario: &str) -> common::Finished {
    common::mpirun(ranks, &std::env::current_exe().unwrap(), &only(scenario))
}

/// Sums `u64` tokens.
struct Sum;
impl Merge<()> for Sum {
    type In = u64;
    type Out = u64;
    type Acc = u64;
    fn start(&self, _: &mut ()) -> u64 {
        0
    }
    fn merge(&self, _: &mut (), acc: &mut u64, x: u64) {
        *acc += x;
    }
    fn finish(&self, _: &mut (), acc: u64) -> u64 {
        acc
    }
}

// ---------------------------------------------------------------- nested split-merge

#[test]
fn nested_split_merge() {
    passes_on_1_2_4("scenario_nested");
}

#[test]
#[ignore]
fn scenario_nested() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let rows = rt.collection("rows", "all", |_| ()).unwrap();
    let cells = rt.collection("cells", "all*2", |_| ()).unwrap();
    // Sum of i*j over an n x m grid: outer split by row, inner split by cell.
    let outer =
        Node::split("rows", &main, route::fixed(0), |_: &mut (), (n, m): (u64, u64)| (0..n).map(move |i| (i, m)));
    let inner =
        Node::split("cells", &rows, route::by_key(|t: &(u64, u64)| t.0 as usize), |_: &mut (), (i, m): (u64, u64)| {
            (0..m).map(move |j| (i, j))
        })
        .window(3);
    let product = Node::leaf("product", &cells, route::round_robin(), |_: &mut (), (i, j): (u64, u64)| i * j);
    let row_sum = Node::merge("row_sum", &rows, Sum);
    let total = Node::merge("total", &main, Sum);
    let g = rt.graph("nested", outer >> inner >> product >> row_sum >> total).unwrap();
    if rt.is_root() {
        for (n, m) in [(1, 1), (7, 5), (30, 40)] {
            let expect: u64 = (0..n).flat_map(|i| (0..m).map(move |j| i * j)).sum();
            assert_eq!(rt.call(&g, (n, m)).unwrap(), expect);
        }
        // An empty split still completes its merge.
        assert_eq!(rt.call(&g, (0, 5)).unwrap(), 0);
        assert_eq!(rt.call(&g, (3, 0)).unwrap(), 0);
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- stream

#[test]
fn stream_posts_outputs_while_inputs_arrive() {
    passes_on_1_2_4("scenario_stream");
}

static STREAM_FINISHED: AtomicBool = AtomicBool::new(false);
static EARLY_ARRIVALS: AtomicUsize = AtomicUsize::new(0);

/// Passes each input on at once, doubled.
struct Forward;
impl Stream<()> for Forward {
    type In = u64;
    type Out = u64;
    type Acc = ();
    fn start(&self, _: &mut ()) {}
    fn input(&self, _: &mut (), _: &mut (), x: u64, out: &mut Posted<u64>) {
        out.post(2 * x);
    }
    fn finish(&self, _: &mut (), _: (), _: &mut Posted<u64>) {
        STREAM_FINISHED.store(true, Ordering::SeqCst);
    }
}

/// Sums, and counts the tokens that arrived before the stream had all its inputs.
struct SumAndWatch;
impl Merge<()> for SumAndWatch {
    type In = u64;
    type Out = u64;
    type Acc = u64;
    fn start(&self, _: &mut ()) -> u64 {
        0
    }
    fn merge(&self, _: &mut (), acc: &mut u64, x: u64) {
        if !STREAM_FINISHED.load(Ordering::SeqCst) {
            EARLY_ARRIVALS.fetch_add(1, Ordering::SeqCst);
        }
        *acc += x;
    }
    fn finish(&self, _: &mut (), acc: u64) -> u64 {
        acc
    }
}

#[test]
#[ignore]
fn scenario_stream() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |_| ()).unwrap();
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    let slow = Node::leaf("slow", &work, route::round_robin(), |_: &mut (), x: u64| {
        std::thread::sleep(Duration::from_millis(5));
        x
    });
    let stream = Node::stream("forward", &main, Forward);
    // Its own threads: behind the slow tokens in work's queues it could not start early.
    let after = rt.collection("after", "all", |_| ()).unwrap();
    let add_one = Node::leaf("add_one", &after, route::round_robin(), |_: &mut (), x: u64| x + 1);
    let merge = Node::merge("sum", &main, SumAndWatch);
    let g = rt.graph("stream", split >> slow >> stream >> add_one >> merge).unwrap();
    if rt.is_root() {
        let n = 40;
        assert_eq!(rt.call(&g, n).unwrap(), (0..n).map(|x| 2 * x + 1).sum::<u64>());
        assert!(EARLY_ARRIVALS.load(Ordering::SeqCst) > 0, "stream outputs must flow before its last input");
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- type branching

#[test]
fn branching_by_token_type() {
    passes_on_1_2_4("scenario_branch");
}

#[test]
#[ignore]
fn scenario_branch() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let numbers = rt.collection("numbers", "all", |_| ()).unwrap();
    let words = rt.collection("words", "all", |_| ()).unwrap();
    let split = Node::split("mixed", &main, route::fixed(0), |_: &mut (), n: u64| {
        (0..n).map(|i| if i % 3 == 0 { Either::Right(format!("w{i}")) } else { Either::Left(i) })
    });
    let num = Node::leaf("number", &numbers, route::round_robin(), |_: &mut (), x: u64| x);
    let word = Node::leaf("word_length", &words, route::round_robin(), |_: &mut (), w: String| 1000 * w.len() as u64);
    let merge = Node::merge("sum", &main, Sum);
    let g = rt.graph("branch", split >> branch(num, word) >> merge).unwrap();
    if rt.is_root() {
        let n = 30u64;
        let expect: u64 = (0..n).map(|i| if i % 3 == 0 { 1000 * format!("w{i}").len() as u64 } else { i }).sum();
        assert_eq!(rt.call(&g, n).unwrap(), expect);
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- node-shared bulks

#[test]
fn shared_bulks_are_lent_between_ranks_of_a_node() {
    passes_on_1_2_4("scenario_shared");
}

#[test]
fn shared_bulks_travel_as_bytes_with_shared_memory_off() {
    let exe = std::env::current_exe().unwrap();
    let job = common::mpirun_env(2, &[("DPS_SHARED_MEMORY", "off")], &exe, &only("scenario_shared"));
    assert!(job.status.success() && job.stdout.contains("1 passed"), "{}\n{}", job.stdout, job.stderr);
}

/// The root sends one `Shared` strip to a thread on every rank, which sends it back: every
/// rank reads the root's values, and where the root's strip is in node memory (a usable
/// `/dev/shm`) the other ranks of this one node map it (not a copy), and so does the root
/// when it comes back (lent on by the mapping rank).
#[test]
#[ignore]
fn scenario_shared() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let all = rt.collection("all", "all*2", |_| ()).unwrap();
    let strip = dps::Shared::<f64>::from_fn(1 << 16, |x| x.iter_mut().enumerate().for_each(|(i, v)| *v = i as f64));
    let lent = strip.in_node_memory();
    let split = Node::split("send", &main, route::fixed(0), move |_: &mut (), n: usize| {
        let strip = strip.clone();
        (0..n).map(move |i| (i, strip.clone()))
    });
    let here = rt.rank();
    let check =
        Node::leaf("check", &all, route::round_robin(), move |_: &mut (), (i, s): (usize, dps::Shared<f64>)| {
            assert_eq!(s[..3], [0.0, 1.0, 2.0]);
            assert_eq!(s[(1 << 16) - 1], 65535.0);
            assert_eq!(s.in_node_memory(), lent, "rank {here}: lent strips map, others are bytes");
            (i, s)
        });
    let back = Node::merge(
        "back",
        &main,
        MergeFn::new(
            |_: &mut ()| 0usize,
            move |_: &mut (), n: &mut usize, (_, s): (usize, dps::Shared<f64>)| {
                assert_eq!((s.len(), s[12345], s.in_node_memory()), (1 << 16, 12345.0, lent));
                *n += 1;
            },
            |_, n| n,
        ),
    );
    let g = rt.graph("shared", split >> check >> back).unwrap();
    if rt.is_root() {
        assert_eq!(rt.call(&g, 4 * rt.ranks()).unwrap(), 4 * rt.ranks());
    }
    rt.shutdown().unwrap();
}

/// Where this test may mount (root, a mount namespace and a tmpfs there, transparent huge
/// pages), it gives `/dev/shm` a tmpfs mounted `huge=advise` in a private mount namespace
/// (Debian's own has 4 KiB pages) and runs `scenario_shared_huge` on 2 ranks there.
#[test]
fn shared_bulks_are_on_huge_pages_where_the_tmpfs_allows_them() {
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    let thp = std::path::Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
    let mount = "mount -t tmpfs -o huge=advise,size=1m tmpfs /dev/shm";
    let unshare =
        std::process::Command::new("unshare").args(["-m", "--propagation", "private", "sh", "-c", mount]).output();
    let unshare = unshare.is_ok_and(|o| o.status.success());
    if !(root && thp && unshare) {
        eprintln!(
            "skipped: needs root, a tmpfs with huge pages in a mount namespace, transparent huge pages (root {root}, THP {thp}, namespace and tmpfs {unshare})"
        );
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let inner = format!(
        "mount -t tmpfs -o huge=advise,size=256m,mode=1777 tmpfs /dev/shm && exec {} -n 2 {} {}",
        common::MPIRUN,
        exe.display(),
        only("scenario_shared_huge").join(" ")
    );
    let unshare = ["-m", "--propagation", "private", "sh", "-c", &inner];
    let job = common::test_job(common::Job::new("unshare").launcher(common::Launcher::None).args(unshare));
    assert!(job.status.success() && job.stdout.contains("1 passed"), "{}\n{}", job.stdout, job.stderr);
}

/// Kilobytes of this process's mapping that holds `at` mapped through huge pages (the
/// `ShmemPmdMapped` of its entry in `/proc/self/smaps`).
fn huge_kib_of_mapping_at(at: *const f64) -> u64 {
    let (addr, mut inside) = (at as usize, false);
    for line in std::fs::read_to_string("/proc/self/smaps").unwrap().lines() {
        let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
        if let Some((Ok(start), Ok(end))) =
            range.map(|(s, e)| (usize::from_str_radix(s, 16), usize::from_str_radix(e, 16)))
        {
            inside = (start..end).contains(&addr);
        } else if let Some(kib) = line.strip_prefix("ShmemPmdMapped:").filter(|_| inside) {
            return kib.trim().trim_end_matches("kB").trim().parse().unwrap();
        }
    }
    0
}

/// On a tmpfs mounted `huge=advise`: the root's 8 MiB strip lies on huge pages, and so does
/// the mapping of it that the other rank receives.
#[test]
#[ignore]
fn scenario_shared_huge() {
    let rt = Runtime::init().unwrap();
    assert_eq!(dps::shared_memory_huge_pages(), "advise");
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let last = rt.collection("last", &(rt.ranks() - 1).to_string(), |_| ()).unwrap();
    let strip = dps::Shared::<f64>::from_fn(1 << 20, |x| x.fill(1.0));
    assert!(strip.in_node_memory() && huge_kib_of_mapping_at(strip.as_ptr()) >= 2048, "the owner's mapping");
    let send = Node::split("send", &main, route::fixed(0), move |_: &mut (), _: ()| std::iter::once(strip.clone()));
    let check = Node::leaf("check", &last, route::fixed(0), |_: &mut (), s: dps::Shared<f64>| {
        assert_eq!(s[(1 << 20) - 1], 1.0);
        huge_kib_of_mapping_at(s.as_ptr())
    });
    let back =
        Node::merge("back", &main, MergeFn::new(|_: &mut ()| 0u64, |_, kib: &mut u64, k: u64| *kib += k, |_, k| k));
    let g = rt.graph("shared huge", send >> check >> back).unwrap();
    if rt.is_root() {
        assert!(rt.call(&g, ()).unwrap() >= 2048, "the receiver's mapping");
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- load balancing

#[test]
fn load_balancing_starves_the_slow_thread() {
    passes_on_1_2_4("scenario_load_balance");
}

#[test]
#[ignore]
fn scenario_load_balance() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let threads = 4;
    let slaves = rt.collection("slaves", &format!("all*{}", threads / rt.ranks().min(threads)), |i| i).unwrap();
    let n = slaves.len();
    let split = Node::split("jobs", &main, route::fixed(0), |_: &mut (), jobs: u64| 0..jobs).window(2 * n);
    let work = Node::leaf("work", &slaves, route::load_balanced(), |me: &mut usize, _job: u64| {
        // Thread 0 is 50 times slower than the others: its share is about the run's time
        // over its 100 ms, and the run takes longer on a loaded machine (0.4 s on 4 ranks
        // oversubscribed, where a 20 ms job gave it 19 of the 24 it may have).
        std::thread::sleep(Duration::from_millis(if *me == 0 { 100 } else { 2 }));
        *me as u64
    });
    let count = Node::merge(
        "count",
        &main,
        MergeFn::new(
            move |_: &mut ()| vec![0u64; n],
            |_, acc: &mut Vec<u64>, who: u64| acc[who as usize] += 1,
            |_, acc| acc,
        ),
    );
    let g = rt.graph("balance", split >> work >> count).unwrap();
    if rt.is_root() {
        let jobs = 200;
        let per_thread = rt.call(&g, jobs).unwrap();
        assert_eq!(per_thread.iter().sum::<u64>(), jobs);
        let fair = jobs / n as u64;
        assert!(
            per_thread[0] < fair / 2,
            "the slow thread got {} of {jobs} jobs (fair share {fair}): {per_thread:?}",
            per_thread[0]
        );
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- flow control

#[test]
fn flow_control_bounds_tokens_created() {
    passes_on_1_2_4("scenario_flow_control");
}

static IN_FLIGHT: AtomicI64 = AtomicI64::new(0);
static MAX_IN_FLIGHT: AtomicI64 = AtomicI64::new(0);

#[test]
#[ignore]
fn scenario_flow_control() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all*2", |_| ()).unwrap();
    let window = 16;
    // Split and merge share thread main[0]: the split must suspend, not block, when the
    // window is full, or the merge could never return a credit.
    let split = Node::split("lazy", &main, route::fixed(0), |_: &mut (), n: u64| {
        (0..n).inspect(|_| {
            let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
            MAX_IN_FLIGHT.fetch_max(now, Ordering::SeqCst);
        })
    })
    .window(window);
    let leaf = Node::leaf("touch", &work, route::round_robin(), |_: &mut (), x: u64| x);
    let merge = Node::merge(
        "count",
        &main,
        MergeFn::new(
            |_: &mut ()| 0u64,
            |_, n: &mut u64, _x: u64| {
                IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
                *n += 1
            },
            |_, n| n,
        ),
    );
    let g = rt.graph("flow", split >> leaf >> merge).unwrap();
    if rt.is_root() {
        let n = 100_000;
        assert_eq!(rt.call(&g, n).unwrap(), n);
        let max = MAX_IN_FLIGHT.load(Ordering::SeqCst);
        // The split looks one token ahead to learn early that it is done.
        assert!(max <= window as i64 + 1, "{max} tokens were created and not merged at once; window {window}");
        assert!(max >= window as i64, "the window should fill up: max {max}");
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- start / wait

#[test]
fn concurrent_calls_with_start_and_wait() {
    passes_on_1_2_4("scenario_start_wait");
}

#[test]
#[ignore]
fn scenario_start_wait() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |_| ()).unwrap();
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    let leaf = Node::leaf("square", &work, route::round_robin(), |_: &mut (), x: u64| x * x);
    let merge = Node::merge("sum", &main, Sum);
    let g = rt.graph("squares", split >> leaf >> merge).unwrap();
    // Every rank calls the graph, several times at once.
    let pending: Vec<_> = (0..8u64).map(|k| (k, rt.start(&g, 10 * k + rt.rank() as u64))).collect();
    for (k, p) in pending {
        let n = 10 * k + rt.rank() as u64;
        assert_eq!(p.wait().unwrap(), (0..n).map(|x| x * x).sum::<u64>());
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- failures

#[test]
fn panic_on_last_rank_ends_the_job_loudly() {
    for ranks in [1, 2, 4] {
        let job = run_on(ranks, "scenario_panic_on_last_rank");
        assert!(!job.status.success(), "{ranks} ranks: the job must fail");
        let last = ranks - 1;
        let expect =
            format!("dps: rank {last}: operation 'explode' on thread 'work[{last}]' panicked: boom on rank {last}");
        assert!(job.stderr.contains(&expect), "{ranks} ranks: stderr lacks \"{expect}\":\n{}", job.stderr);
        assert!(job.elapsed < Duration::from_secs(30), "{ranks} ranks: took {:?}", job.elapsed);
    }
}

#[test]
#[ignore]
fn scenario_panic_on_last_rank() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |i| i).unwrap();
    let last = rt.ranks() - 1;
    let split = Node::split("split", &main, route::fixed(0), |_: &mut (), n: usize| 0..n);
    let leaf = Node::leaf("explode", &work, route::round_robin(), move |me: &mut usize, x: usize| {
        if *me == last {
            panic!("boom on rank {last}");
        }
        x
    });
    let merge =
        Node::merge("count", &main, MergeFn::new(|_: &mut ()| 0usize, |_, n: &mut usize, _x: usize| *n += 1, |_, n| n));
    let g = rt.graph("explode", split >> leaf >> merge).unwrap();
    if rt.is_root() {
        // On one rank the failure comes back as an error; on more, the job is aborted.
        let err = rt.call(&g, 100).unwrap_err();
        panic!("{err}");
    }
    rt.shutdown().unwrap();
}

#[test]
fn ranks_with_different_graphs_fail_fast() {
    let job = run_on(2, "scenario_mismatched_graphs");
    assert!(!job.status.success());
    assert!(
        job.stderr.contains("ranks built different graphs: graph #0 on rank 1 differs from rank 0"),
        "{}",
        job.stderr
    );
    assert!(job.elapsed < Duration::from_secs(30));
}

#[test]
#[ignore]
fn scenario_mismatched_graphs() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let name = if rt.rank() == 0 { "double" } else { "triple" };
    let leaf = Node::leaf(name, &main, route::fixed(0), |_: &mut (), x: u64| x * 2);
    let err = rt.graph("mismatch", leaf).unwrap_err();
    panic!("{err}");
}

#[test]
fn invalid_graphs_are_rejected_with_names() {
    let rt = Runtime::single();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let split = Node::split("lonely_split", &main, route::fixed(0), |_: &mut (), n: u64| 0..n);
    let leaf = Node::leaf("leaf", &main, route::fixed(0), |_: &mut (), x: u64| x);
    let err = rt.graph("unclosed", split >> leaf).unwrap_err().to_string();
    assert!(err.contains("the path ends at \"leaf\" inside split \"lonely_split\""), "{err}");
    let merge = Node::merge("orphan_merge", &main, Sum);
    let err = rt.graph("orphan", merge).unwrap_err().to_string();
    assert!(err.contains("merge \"orphan_merge\" has no split before it"), "{err}");
    let shut = Node::split("shut", &main, route::fixed(0), |_: &mut (), n: u64| 0..n).window(0);
    let err = rt.graph("window 0", shut >> Node::merge("sum", &main, Sum)).unwrap_err().to_string();
    assert!(err.contains("split \"shut\" has window 0: a window of 0 tokens would never let a token through"), "{err}");
    let leaf = Node::leaf("windowed_leaf", &main, route::fixed(0), |_: &mut (), x: u64| x).window(4);
    let err = rt.graph("leaf window", leaf).unwrap_err().to_string();
    assert!(err.contains("leaf \"windowed_leaf\" has window 4: only splits and streams take a window"), "{err}");
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- graph sized to the problem

#[test]
fn graph_length_depends_on_the_problem() {
    passes_on_1_2_4("scenario_dynamic_length");
}

#[test]
#[ignore]
fn scenario_dynamic_length() {
    let rt = Runtime::init().unwrap();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let work = rt.collection("work", "all", |_| ()).unwrap();
    let stages = 3 + rt.ranks(); // known only at run time
                                 // Each stage splits x into 4 copies, adds 1 to each on any rank, and sums them: 4x + 4.
    let stage = |k: usize| {
        let split = Node::split(&format!("split{k}"), &main, route::fixed(0), |_: &mut (), x: u64| [x; 4]);
        let add = Node::leaf(&format!("add{k}"), &work, route::round_robin(), |_: &mut (), x: u64| x + 1);
        split >> add >> Node::merge(&format!("sum{k}"), &main, Sum)
    };
    let mut path = stage(0);
    for k in 1..stages {
        path = path >> stage(k);
    }
    let g = rt.graph("stages", path).unwrap();
    if rt.is_root() {
        let expect = (0..stages).fold(1u64, |x, _| 4 * x + 4);
        assert_eq!(rt.call(&g, 1).unwrap(), expect);
    }
    rt.shutdown().unwrap();
}

// ---------------------------------------------------------------- callers helping the transport

#[test]
fn concurrent_callers_that_drive_the_transport_each_get_their_own_output() {
    passes_on_1_2_4("scenario_helpers");
}

/// Several threads of every rank call at once a graph whose leaf is on the next rank, so that
/// their waits run the transport's rounds side by side (`Helper::help`) while the progress
/// thread parks and wakes: every call must get its own output, in a sequence of short calls
/// (the ping-pong the helping is for) and with a long one in between (a caller that gives up
/// helping and blocks).
#[test]
#[ignore]
fn scenario_helpers() {
    const THREADS: u64 = 4;
    const CALLS: u64 = 150;
    let rt = Runtime::init().unwrap();
    let ranks = rt.ranks();
    let next = (rt.rank() + 1) % ranks;
    let echo = rt.collection("echo", "all", |_| ()).unwrap();
    let g = rt
        .graph(
            "helped",
            Node::leaf(
                "echo",
                &echo,
                route::by_key(|x: &(u64, u64)| x.0 as usize),
                |_: &mut (), (to, x): (u64, u64)| {
                    if x % 50 == 49 {
                        std::thread::sleep(Duration::from_millis(20)); // longer than a caller helps
                    }
                    (to, x * 3 + 1)
                },
            ),
        )
        .unwrap();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (rt, g) = (&rt, &g);
            s.spawn(move || {
                for i in 0..CALLS {
                    let x = (rt.rank() as u64 * THREADS + t) * 1_000_000 + i;
                    let (_, y) = rt.call(g, (next as u64, x)).unwrap();
                    assert_eq!(y, x * 3 + 1, "rank {} thread {t} call {i} got another call's output", rt.rank());
                }
            });
        }
    });
    rt.shutdown().unwrap();
}
