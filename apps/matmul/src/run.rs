//! The runner: executes a checked [`Plan`]: builds the graphs, times the chosen variant,
//! checks the product against one serial dgemm, and prints the record.

use std::time::Instant;

use anyhow::{bail, Result};
use dps::{Runtime, SimMode};
use dps_harness::simulate::Support;
use dps_harness::{median, Common, FiniteOrText};

use crate::cli::{Args, Plan, Variant};
use crate::graph::{self, Graphs, Master};
use crate::kernel::{self, Kernel};
use crate::record::Record;

/// What the simulator supports of dps-matmul: every mode (the control flow never depends
/// on the values). PDEXEC charges the products as gemm calls and the strip cuts and the
/// assembly of C as copies; NOALLOC also leaves A, B, C and every block out (tokens carry
/// their sizes).
const SIMULATION: Support = Support {
    program: "dps-matmul",
    modes: &[SimMode::De, SimMode::Pdexec, SimMode::Noalloc],
    why_not: "",
    kernels: &["gemm", "copy"],
};

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options (before any work) or a failed run.
pub fn run(args: &Args) -> Result<()> {
    execute(&args.plan()?)
}

/// Executes a plan: the serial variant in this process, the others on the DPS runtime.
///
/// # Errors
/// A failed run or a failed verification.
pub fn execute(plan: &Plan) -> Result<()> {
    if plan.variant == Variant::Serial {
        return run_serial(plan);
    }
    dps_dense::blas::one_thread_per_worker();
    let standard = &plan.standard;
    let rt = standard.sim.start(&standard.runtime, &SIMULATION)?;
    let (n, tiling) = (plan.n, &plan.tiling);
    let workers = rt.collection("workers", &plan.map, |_| graph::worker(plan.kernel))?;
    // Job `index` goes to worker `index % workers` (`Graphs::build`); the master is rank 0.
    let remote = |index: usize| workers.rank_of(index % workers.len()) != 0;
    let main = rt.collection("main", "0", |_| Master::new(n, tiling, plan.seed, remote))?;
    let window = plan.window.unwrap_or(2 * workers.len());
    let graphs = Graphs::build(&rt, &main, &workers, window)?;
    if rt.is_root() {
        report(plan, &rt, &graphs, workers.len())?;
    }
    rt.shutdown()?;
    Ok(())
}

/// The time of `f` on the runtime's clock (simulated under --simulate).
fn timed(rt: &Runtime, f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let t = rt.stopwatch();
    f()?;
    Ok(t.seconds())
}

fn report(plan: &Plan, rt: &Runtime, g: &Graphs, threads: usize) -> Result<()> {
    let n = plan.n;
    let call = |graph| timed(rt, || rt.call(graph, ()).map(|_| ()).map_err(Into::into));
    let mut seconds = Vec::new();
    let (mut phased, mut pipelined, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let mut first_call = None;
    for rep in 0..plan.repeat.runs() {
        if rep == plan.repeat.warmup {
            (seconds, phased, pipelined, ratios) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        }
        match plan.variant {
            Variant::Pipelined => seconds.push(call(&g.pipelined)?),
            Variant::Farm => seconds.push(call(&g.farm)?),
            Variant::Phased | Variant::Compare => {
                let t1 = call(&g.distribute)?;
                let t2 = call(&g.compute)?;
                let t3 = call(&g.gather)?;
                phased.push(t1 + t2 + t3);
                ratios.push((t1 + t3) / t2);
                if plan.variant == Variant::Compare {
                    pipelined.push(call(&g.pipelined)?);
                }
            }
            Variant::Serial => unreachable!("handled before the runtime starts"),
        }
        first_call = first_call.or(seconds.first().copied()).or(phased.first().copied());
    }
    if plan.variant == Variant::Compare {
        seconds = pipelined.clone();
    } else if plan.variant == Variant::Phased {
        seconds = phased.clone();
    }
    let common = Common::new("matmul", &plan.variant.name(), rt.ranks(), threads, median(&seconds), None).bound_by(rt);
    let blocks = Some(plan.tiling.row_strips(n));
    let mut record = Record::new(common, n, &plan.tiling, blocks, plan.repeat.reps, plan.kernel);
    record.first_call_s = first_call;
    if !ratios.is_empty() {
        let ratio = median(&ratios);
        record.comm_comp_ratio = Some(ratio);
        record.phased_s = Some(median(&phased));
        record.potential_reduction = Some(if ratio <= 1.0 { ratio / (ratio + 1.0) } else { 1.0 / (1.0 + ratio) });
    }
    if plan.variant == Variant::Compare {
        let (p, f) = (median(&pipelined), median(&phased));
        record.pipelined_s = Some(p);
        record.reduction = Some(1.0 - p / f);
    }
    if plan.standard.verify() {
        let c = rt.call(&g.fetch, ())?;
        let (sa, sb) = kernel::seeds(plan.seed);
        let (err, ok) = kernel::error_against_serial(&c, &kernel::matrix(n, sa), &kernel::matrix(n, sb), n);
        record.error = Some(FiniteOrText(err));
        record.common.verified = Some(ok);
        if !ok {
            dps_harness::print_record(&record, plan.standard.json())?;
            bail!(
                "verification failed: relative error {err:.3e} is not within 10·n·ε = {:.3e}",
                10.0 * n as f64 * f64::EPSILON
            );
        }
    }
    dps_harness::print_record(&record, plan.standard.json())
}

fn run_serial(plan: &Plan) -> Result<()> {
    let n = plan.n;
    dps_dense::blas::set_threads(plan.blas_threads);
    let (sa, sb) = kernel::seeds(plan.seed);
    let (a, b) = (kernel::matrix(n, sa), kernel::matrix(n, sb));
    let seconds = median(
        &(0..plan.repeat.runs())
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(match plan.kernel {
                    Kernel::Blas => kernel::serial(&a, &b, n),
                    Kernel::Loops => kernel::serial_loops(&a, &b, n, plan.tiling.rows),
                });
                t.elapsed().as_secs_f64()
            })
            .skip(plan.repeat.warmup)
            .collect::<Vec<_>>(),
    );
    // The serial product is the reference itself: nothing to verify.
    let common = Common::new("matmul", "serial", 1, plan.blas_threads, seconds, None);
    dps_harness::print_record(
        &Record::new(common, n, &plan.tiling, None, plan.repeat.reps, plan.kernel),
        plan.standard.json(),
    )
}
