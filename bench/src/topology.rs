//! `dps-bench topology`: the machine as hwloc sees it (packages, cores, hardware threads,
//! caches and the cores that share them, NUMA nodes), the BLAS kernels this process runs
//! (library, version, core, who chose it, threads), and where this job's threads may run.
//!
//! Rank 0 prints the machine and its own binding; with `--ranks` every rank reports its
//! binding (`--bind`, `DPS_BIND`) and the CPUs each of its threads may run on, as the kernel
//! says (`/proc/self/task/*/status`), gathered to rank 0 by a DPS graph. Cores are numbered
//! by hwloc's logical index, hardware threads (PUs) by the OS's number, as `lstopo` does.
//!
//! NUMA nodes come from `hwlocality`; the older `hwloc2` crate panics on that query with
//! hwloc 2.x (it panics on NUMA queries), which is why this crate is not used.

use std::fmt::Write as _;

use anyhow::{Context, Result};
use hwlocality::cpu::binding::CpuBindingFlags;
use hwlocality::cpu::cpuset::CpuSet;
use hwlocality::object::attributes::ObjectAttributes;
use hwlocality::object::types::ObjectType;
use hwlocality::object::TopologyObject;
use hwlocality::Topology;

use dps::{route, MergeFn, Node};

/// Options of `dps-bench topology`.
#[derive(clap::Args, Debug)]
pub(crate) struct Options {
    /// Also print, for every rank of the job, its binding and the CPUs each of its threads
    /// (workers, progress thread, main thread) may run on.
    #[arg(long)]
    ranks: bool,
    #[command(flatten)]
    runtime: dps::RuntimeArgs,
}

/// The cache levels, data and unified first, then instruction caches.
const CACHES: [ObjectType; 8] = [
    ObjectType::L1Cache,
    ObjectType::L2Cache,
    ObjectType::L3Cache,
    ObjectType::L4Cache,
    ObjectType::L5Cache,
    ObjectType::L1ICache,
    ObjectType::L2ICache,
    ObjectType::L3ICache,
];

/// Prints the machine (rank 0) and the ranks' bindings.
pub(crate) fn run(opts: &Options) -> Result<()> {
    let rt = opts.runtime.start()?;
    let mut text = String::new();
    if rt.is_root() {
        let topology = Topology::new().context("hwloc cannot read this machine's topology")?;
        text = describe_machine(&topology);
        let blas = dps_dense::kernel_choice::BlasInfo::of_this_process();
        let _ = writeln!(text, "BLAS: {}", blas.describe());
        let _ = writeln!(text, "Node-shared memory (/dev/shm): huge pages {}", dps::shared_memory_huge_pages());
    }
    let mapping = if opts.ranks { "all" } else { "0" };
    let threads = rt.threads_in(mapping)?;
    let main = rt.collection("main", "0", |_| ())?;
    let binding = rt.binding().to_string();
    // A rank of several has a progress thread.
    let several = rt.ranks() > 1;
    let reporters = rt.collection("reporters", mapping, move |_| (binding.clone(), several))?;
    let split = Node::split("one per rank", &main, route::fixed(0), |_: &mut (), n: usize| 0..n);
    let report = Node::leaf(
        "report",
        &reporters,
        route::by_key(|i: &usize| *i),
        |(binding, several): &mut (String, bool), _| describe_rank(binding, *several),
    );
    let gather = Node::merge(
        "gather",
        &main,
        MergeFn::new(|_: &mut ()| Vec::new(), |_, all: &mut Vec<String>, r: String| all.push(r), |_, all| all),
    );
    let graph = rt.graph("topology", split >> report >> gather)?;
    if rt.is_root() {
        let mut reports = rt.call(&graph, threads)?;
        reports.sort_by_key(|r| r.split_whitespace().nth(1).and_then(|n| n.parse::<usize>().ok()));
        text.push_str(&reports.concat());
        crate::print_out(&text)?;
    }
    rt.shutdown()?;
    Ok(())
}

/// The machine: counts, then packages, cores, caches and NUMA nodes, one per line.
fn describe_machine(topology: &Topology) -> String {
    let count = |ty| topology.objects_with_type(ty).len();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "machine: {} package(s), {} core(s), {} hardware thread(s) (PUs), {} NUMA node(s)",
        count(ObjectType::Package),
        count(ObjectType::Core),
        count(ObjectType::PU),
        count(ObjectType::NUMANode)
    );
    for package in topology.objects_with_type(ObjectType::Package) {
        let _ = writeln!(out, "package {}: cores {}", package.logical_index(), cores_in(topology, package));
    }
    for core in topology.objects_with_type(ObjectType::Core) {
        let _ = writeln!(out, "core {}: PUs {}", core.logical_index(), pus(core));
    }
    for ty in CACHES {
        let caches: Vec<_> = topology.objects_with_type(ty).collect();
        if caches.is_empty() {
            continue;
        }
        let level = ty.to_string().replace("Cache", ""); // "L1", "L1I", as lstopo writes them
        let sizes: Vec<String> = caches.iter().map(|c| cache_size(c)).collect();
        let same_size = sizes.iter().all(|s| *s == sizes[0]);
        let sharing: Vec<String> = caches
            .iter()
            .zip(&sizes)
            .map(|(c, size)| {
                let cores = cores_in(topology, c);
                if same_size {
                    format!("cores {cores}")
                } else {
                    format!("cores {cores} ({size})") // a hybrid CPU's caches differ
                }
            })
            .collect();
        let each = if same_size { sizes[0].as_str() } else { "sizes differ" };
        let _ = writeln!(out, "{level} {each} x{}: {}", caches.len(), sharing.join(" | "));
    }
    for node in topology.objects_with_type(ObjectType::NUMANode) {
        let memory = match node.attributes() {
            Some(ObjectAttributes::NUMANode(numa)) => numa.local_memory().map_or(0, |m| m.get()),
            _ => 0,
        };
        let _ = writeln!(
            out,
            "NUMA node {}: {}, PUs {}",
            node.logical_index(),
            dps_harness::format_bytes(memory),
            pus(node)
        );
    }
    let _ = writeln!(out, "allowed PUs (cgroup, cpuset): {}", list(&topology.allowed_cpuset()));
    if let Ok(set) = topology.cpu_binding(CpuBindingFlags::PROCESS) {
        let _ = writeln!(out, "this process may run on PUs {}", list(&set));
    }
    out
}

/// One rank's report: its binding and the CPUs its threads may run on.
fn describe_rank(binding: &str, has_progress_thread: bool) -> String {
    let rank = dps_harness::launch_rank().unwrap_or(0);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let mut out = format!("rank {rank} on {}: binding {binding}\n", host.trim());
    for (name, cpus) in runtime_thread_affinities(has_progress_thread) {
        let _ = writeln!(out, "  {name}: PUs {cpus}");
    }
    out
}

/// As [`thread_affinities`], once the runtime's threads bear their names: a thread names
/// itself when it first runs, which on a loaded machine can be after this report is asked
/// for (a worker not yet named would be taken for one of MPI's threads). Gives up after 2 s.
fn runtime_thread_affinities(has_progress_thread: bool) -> Vec<(String, String)> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let threads = thread_affinities();
        let named = |prefix: &str| threads.iter().any(|(name, _)| name.starts_with(prefix));
        if (named("dps-worker-") && (named("dps-progress") || !has_progress_thread))
            || std::time::Instant::now() > deadline
        {
            return threads;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// This process's main thread, workers and progress thread, each with the CPUs the kernel lets it
/// run on, main thread first, then by name.
fn thread_affinities() -> Vec<(String, String)> {
    let pid = std::process::id().to_string();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return vec![("threads".into(), "unknown (no /proc/self/task)".into())];
    };
    let mut threads = Vec::new();
    for task in tasks.flatten() {
        let dir = task.path();
        let (Ok(name), Ok(status)) =
            (std::fs::read_to_string(dir.join("comm")), std::fs::read_to_string(dir.join("status")))
        else {
            continue; // the thread ended meanwhile
        };
        let main = task.file_name().to_str() == Some(pid.as_str());
        let name = if main { "main thread".to_string() } else { name.trim().to_string() };
        // The runtime's threads; the others are MPI's own (they bear the program's name).
        if main || name.starts_with("dps-worker-") || name == "dps-progress" {
            let cpus = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:")).unwrap_or("?");
            threads.push((name, cpus.trim().to_string()));
        }
    }
    threads.sort_by_key(|(name, _)| (name != "main thread", natural(name)));
    threads
}

/// `dps-worker-10` after `dps-worker-9`.
fn natural(name: &str) -> (String, usize) {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (stem, number) = name.split_at(name.len() - digits);
    (stem.to_string(), number.parse().unwrap_or(0))
}

/// The logical indexes of the cores inside `object`, as a list such as `0-3,8`.
fn cores_in(topology: &Topology, object: &TopologyObject) -> String {
    let Some(set) = object.cpuset() else { return "none".into() };
    let cores = topology
        .objects_with_type(ObjectType::Core)
        .filter(|core| core.cpuset().is_some_and(|c| set.includes(&*c)))
        .map(|core| core.logical_index());
    ranges(cores)
}

fn pus(object: &TopologyObject) -> String {
    object.cpuset().map_or_else(|| "none".into(), |set| list(&set))
}

/// A CPU set as the kernel writes one: `0-3,6`.
fn list(set: &CpuSet) -> String {
    let bitmap: &hwlocality::bitmap::Bitmap = set.as_ref();
    bitmap.to_string()
}

/// Ascending numbers as `0-3,8`.
fn ranges(numbers: impl Iterator<Item = usize>) -> String {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    for n in numbers {
        match spans.last_mut() {
            Some((_, last)) if *last + 1 == n => *last = n,
            _ => spans.push((n, n)),
        }
    }
    let text: Vec<String> =
        spans.iter().map(|&(a, b)| if a == b { a.to_string() } else { format!("{a}-{b}") }).collect();
    if text.is_empty() {
        "none".into()
    } else {
        text.join(",")
    }
}

fn cache_size(cache: &TopologyObject) -> String {
    match cache.attributes() {
        Some(ObjectAttributes::Cache(c)) => {
            c.size().map_or("size unknown".into(), |s| dps_harness::format_bytes(s.get()))
        }
        _ => "size unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::{natural, ranges};

    #[test]
    fn numbers_print_as_ranges() {
        assert_eq!(ranges([0, 1, 2, 3, 8].into_iter()), "0-3,8");
        assert_eq!(ranges([5].into_iter()), "5");
        assert_eq!(ranges(std::iter::empty()), "none");
    }

    #[test]
    fn sizes_and_names_read_naturally() {
        assert!(natural("dps-worker-9") < natural("dps-worker-10"));
    }
}
