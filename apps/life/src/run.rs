//! The runner: executes a checked [`Plan`]: builds the bands and graphs, runs the generations
//! from rank 0, measures, verifies against the serial reference, writes PNG/RLE output and
//! prints the record.

use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dps::{Runtime, SimMode};
use dps_harness::simulate::Support;
use dps_harness::{median, Common, OutputFile};
use indicatif::ProgressBar;

use crate::cli::viewer::{REGION_SERVICE, WORLD_SERVICE};
use crate::cli::{Args, Command, Job, Plan, Variant, Viewer};
use crate::graph::{self, Band, Graphs, RegionRequest, Schedule, Step};
use crate::kernel;
use crate::layout::Rect;
use crate::output::{self, Format};
use crate::record::{AgainstSerial, Compare, Record, Served, View, ViewerRecord};
use crate::report::{progress_bar, verify, Observed};
use crate::view::{self, Client, Requests, Signal};
use crate::viewer;
use crate::world::World;

/// --compare-serial: parallel calls and serial steps alternate in blocks of at least this
/// many generations (shorter ones would leave the other ranks idle, and cold, for most of
/// each parallel call).
const SERIAL_BLOCK: u64 = 64;

/// What the simulator supports of dps-life: direct execution, PDEXEC (the band kernel
/// skipped and charged from the platform's `life` table; the cost of a Life step does not
/// depend on the cells, so the control flow is the same) and NOALLOC (PDEXEC with the
/// bands' cells and the ghost rows left out: only their sizes travel, so the simulator's
/// memory does not grow with the world).
const SIMULATION: Support =
    Support { program: "dps-life", modes: &[SimMode::Pdexec, SimMode::Noalloc], why_not: "", kernels: &["life"] };

/// The program: checks the options into a plan, then executes it.
///
/// # Errors
/// Bad options or input (a [`dps_harness::BadInput`], before any work), a failed call, a
/// failed output, or a failed verification.
pub fn run(args: &Args) -> Result<()> {
    match &args.command {
        Some(Command::View(view)) => viewer::execute(&view.plan()?),
        None => execute(args.plan()?),
    }
}

/// Executes a plan: the serial variant in this thread, the others on the DPS runtime. The
/// plan is taken whole: it holds the --out file its check opened, which the run writes.
///
/// # Errors
/// Bad input only the job's size shows ([`Plan::job`]), a failed call, a failed output, or
/// a failed verification.
pub fn execute(mut plan: Plan) -> Result<()> {
    // The plan chooses a serial depth for the serial variant only.
    if let Some(depth) = plan.serial_depth {
        return run_serial(plan, depth);
    }
    plan.check_before_start()?;
    let rt = plan.standard.sim.start(&plan.standard.runtime, &SIMULATION)?;
    let job = plan.job(&rt)?;
    // Every rank opened --out to check it; rank 0 writes it.
    let out = plan.out.take().filter(|_| rt.is_root());
    let (layout, depth) = (job.layout, job.steps.depth);
    // Rank 0's serial copy is made before the collections and graphs: the ranks then go from
    // building them (collective) into the first call together. Made after, it kept the other
    // ranks idle while rank 0 filled it, and they started the first call 0.8-2.6 ms late.
    let serial = (plan.compare_serial && rt.is_root()).then(|| World::new(&plan.source, plan.wrap, depth));
    let main = rt.collection("main", "0", |_| ())?;
    let source = &plan.source;
    let (bands, readers) = graph::band_collections(&rt, &job.map, |i| Band::new(&layout, i, source, depth))?;
    let portal = rt.collection("portal", "all", |_| ())?;
    let graphs = graph::build(&rt, layout, &main, &bands, &readers, &portal, job.steps.steps_per_call)?;
    let client = job.viewer.map(|v| view::build(&rt, v)).transpose()?;
    // Exported once built, withdrawn at shutdown (collective: rank 0 serves).
    let export = match plan.export {
        Some(_) => {
            let info = graph::world_info(&rt, layout, &main)?;
            rt.export(WORLD_SERVICE, &info)?;
            Some(rt.export(REGION_SERVICE, &graphs.region)?)
        }
        None => None,
    };

    let mut outcome = Ok(());
    if rt.is_root() {
        outcome = Sim::new(&rt, &graphs, &plan, &job, export.as_ref()).drive(client.as_ref(), out, serial);
        if let (Err(_), Some(client)) = (&outcome, &client) {
            // The client waits for a signal: without it, it would wait forever.
            let _ = rt.call(&client.signal, Signal::Stop);
        }
    } else if let (Some(client), Some(viewer)) = (&client, &plan.viewer) {
        if rt.rank() == client.rank {
            let req = Requests {
                world: (layout.width, layout.height),
                block: viewer.block,
                period: viewer.period,
                png_dir: viewer.png_dir.clone(),
                seed: plan.seed,
            };
            outcome = client.run(&rt, &graphs, &req);
        }
    }
    rt.shutdown()?;
    outcome
}

/// Rank 0's view of the running simulation.
struct Sim<'a> {
    rt: &'a Runtime,
    graphs: &'a Graphs,
    plan: &'a Plan,
    job: &'a Job,
    /// Generations run so far.
    done: u64,
    progress: ProgressBar,
    /// Generations per step.
    depth: usize,
    /// Steps per call of `overlap` (`compare` makes one step per call).
    steps_per_call: usize,
    /// The time per generation of the job's first call (warm-up or not).
    first: Option<f64>,
    /// `--export-region`: the region service's export, and when it began.
    export: Option<(&'a dps::Export, Instant)>,
}

impl<'a> Sim<'a> {
    fn new(
        rt: &'a Runtime,
        graphs: &'a Graphs,
        plan: &'a Plan,
        job: &'a Job,
        export: Option<&'a dps::Export>,
    ) -> Sim<'a> {
        let steps_per_call = if plan.variant == Variant::Overlap { job.steps.steps_per_call } else { 1 };
        let (progress, first) = (ProgressBar::hidden(), None);
        let export = export.map(|e| (e, Instant::now()));
        Sim { rt, graphs, plan, job, done: 0, progress, depth: job.steps.depth, steps_per_call, first, export }
    }

    /// Rank 0: runs the generations (and the viewer's phase), verifies, writes --out and
    /// prints the record.
    fn drive(
        mut self,
        client: Option<&Client>,
        out: Option<(OutputFile, Format)>,
        serial: Option<World>,
    ) -> Result<()> {
        let (plan, rt, graphs) = (self.plan, self.rt, self.graphs);
        let (width, height) = (plan.source.width(), plan.source.height());
        let cells = width as f64 * height as f64;
        let g = plan.generations;
        if plan.standard.verify() {
            // The bands' initial world against the input, counted without them: a pattern
            // that did not make it into the bands fails here, even if the reference lost it too.
            let (bands_hold, input_has) = (rt.call(&graphs.population, ())?, plan.source.population());
            if bands_hold != input_has {
                bail!("verification failed: the bands start with {bands_hold} live cells, the input has {input_has}");
            }
        }
        // Every generation the calls run (the plan counts the phases).
        self.progress = progress_bar(plan.total_generations, plan.standard.json());
        let main = if plan.variant == Variant::Simple { Schedule::Simple } else { Schedule::Overlap };
        self.generations(main, plan.warmup)?;
        let timed = self.timed(main, serial)?;
        let mut view = None;
        if let Some((viewer, fan)) = plan.viewer.as_ref().and_then(|v| Some((v, v.process_fan?))) {
            let mut process = ViewerProcess::spawn(viewer, fan, plan.seed)?;
            process.wait_for_calls(self.export.map(|(e, _)| e).expect("--view-process exports"))?;
            let (with, without) = self.alternate(main, g, &mut process)?;
            let report = process.finish()?;
            view = Some(View {
                view_block: report.view_block,
                view_calls: report.view_calls,
                view_call_median_s: report.view_call_median_s,
                view_read_median_s: report.view_read_median_s,
                view_straddling_calls: report.view_straddling_calls,
                iteration_without_calls_s: median(&without),
                iteration_with_calls_s: median(&with),
                iteration_overhead: median(&with) / median(&without) - 1.0,
                view_calls_per_s: Some(report.view_calls_per_s),
                view_comm_median_s: Some(report.view_comm_median_s),
            });
        } else if let (Some(client), Some(viewer)) = (client, &plan.viewer) {
            rt.call(&client.signal, Signal::Start)?;
            let with = self.generations(main, g)?;
            let report = rt.call(&client.signal, Signal::Stop)?;
            view = Some(View {
                view_block: format!("{}x{}", viewer.block.0, viewer.block.1),
                view_calls: report.call_seconds.len(),
                view_call_median_s: median(&report.call_seconds),
                view_read_median_s: median(&report.read_seconds),
                view_straddling_calls: report.straddling,
                iteration_without_calls_s: median(&timed.times),
                iteration_with_calls_s: median(&with),
                iteration_overhead: median(&with) / median(&timed.times) - 1.0,
                view_calls_per_s: None,
                view_comm_median_s: None,
            });
        }
        let served = self.serve(main)?;
        self.progress.finish_and_clear();
        // Not counted where the cells are skipped or left out: it would not be the world's.
        let population = if plan.cells_skipped().is_some() { None } else { Some(rt.call(&graphs.population, ())?) };
        let ranks_used = rt.ranks() - usize::from(client.is_some());
        let serial = timed.serial.as_ref().map(|(serial_times, block_times)| AgainstSerial {
            serial_iteration_median_s: median(serial_times),
            serial_cups: cells / median(serial_times),
            parallel_iteration_median_s: median(block_times),
            efficiency: median(serial_times) / median(block_times) / ranks_used as f64,
        });
        let compare = timed.simple.as_ref().map(|simple| Compare {
            simple_iteration_median_s: median(simple),
            overlap_iteration_median_s: median(&timed.times),
            simple_cups: cells / median(simple),
            overlap_cups: cells / median(&timed.times),
            speedup: median(simple) / median(&timed.times),
        });
        let seconds = timed.seconds;
        let bands = self.job.layout.bands;
        let mut record = Record {
            common: Common::new("life", &plan.variant.name(), rt.ranks(), bands, seconds, None).bound_by(rt),
            width,
            height,
            wrap: plan.wrap,
            generations: g,
            depth: self.depth,
            steps_per_call: Some(self.steps_per_call),
            schedule_reason: Some(self.job.steps.reason.clone()),
            cups: cells * g as f64 / seconds,
            iteration_median_s: Some(median(&timed.times)),
            first_iteration_s: self.first,
            compare,
            serial,
            view,
            served,
            generations_run: Some(self.done),
            population,
            reference: None,
        };
        let mut outcome = Ok(());
        if plan.standard.verify() {
            let whole = Rect { x: 0, y: 0, width, height };
            let got = rt.call(&graphs.region, RegionRequest { from: 0, rect: whole })?;
            let observed = Observed {
                generations: got.generations,
                width: got.rect.width,
                height: got.rect.height,
                cells: &got.cells,
                population: population.expect("counted: --verify is refused where the cells are skipped"),
            };
            // Against the generations asked for, not those counted on the way: a run that
            // skipped some cannot agree with a reference that skipped as many.
            let total = plan.total_generations + record.served.as_ref().map_or(0, |s| s.serve_generations);
            let verdict = verify(&plan.source, plan.wrap, total, &observed);
            outcome = record_verdict(verdict, &mut record);
        }
        let outcome = match (out, outcome) {
            (Some((file, format)), Ok(())) => self.write(file, format),
            // A world that failed verification is not written as if it were the result.
            (Some((file, _)), Err(e)) => Err(anyhow::anyhow!("{e:#}; {} not written", file.path().display())),
            (None, outcome) => outcome,
        };
        // The record is printed unless the output failed.
        if outcome.is_ok() || record.common.verified == Some(false) {
            let printed = dps_harness::print_record(&record, plan.standard.json());
            return outcome.and(printed);
        }
        outcome
    }

    /// The timed generations, call by call. `compare` runs a `simple` call before each
    /// `overlap` one, and --compare-serial alternates blocks of parallel calls (at least
    /// [`SERIAL_BLOCK`] generations) with the `serial` world stepped on rank 0 through as
    /// many: on a shared machine a change of load then hits both sides of the ratio, and the
    /// ratio is of per-generation medians, which ignore the odd descheduled call or block.
    fn timed(&mut self, main: Schedule, mut serial: Option<World>) -> Result<Timed> {
        let g = self.plan.generations;
        // Per-generation times of each call (its time over its generations), and the total.
        let (mut times, mut simple_times) = (vec![], vec![]);
        let (mut block_times, mut serial_times) = (vec![], vec![]);
        let (mut done, mut seconds) = (0, 0.0);
        let mut block = (0, 0.0);
        // `compare` runs --generations of each schedule (snapshots may cut their calls apart).
        let compare = self.plan.variant == Variant::Compare;
        let mut simple_done = if compare { 0 } else { g };
        while done < g || simple_done < g {
            if simple_done < g {
                let (generations, t) = self.call(Schedule::Simple, g - simple_done)?;
                simple_done += generations;
                simple_times.push(t);
            }
            if done == g {
                continue;
            }
            let (generations, t) = self.call(main, g - done)?;
            (done, seconds) = (done + generations, seconds + t * generations as f64);
            times.push(t);
            block = (block.0 + generations, block.1 + t * generations as f64);
            if let Some(world) = serial.as_mut().filter(|_| block.0 >= SERIAL_BLOCK || done == g) {
                let start = Instant::now();
                world.advance(block.0);
                serial_times.push(start.elapsed().as_secs_f64() / block.0 as f64);
                block_times.push(block.1 / block.0 as f64);
                block = (0, 0.0);
            }
        }
        let serial = self.plan.compare_serial.then_some((serial_times, block_times));
        Ok(Timed { times, seconds, simple: compare.then_some(simple_times), serial })
    }

    /// `--export-region`: with --serve-seconds, runs generations until that long after the
    /// export; what was served.
    fn serve(&mut self, schedule: Schedule) -> Result<Option<Served>> {
        let Some((export, since)) = self.export else { return Ok(None) };
        let mut serve_generations = 0;
        if let Some(serve) = self.plan.export.and_then(|e| e.serve) {
            while since.elapsed() < serve {
                serve_generations += self.call(schedule, u64::MAX)?.0;
            }
        }
        Ok(Some(Served { served_calls: export.served(), serve_generations }))
    }

    /// `--view-process`: `count` generations with the viewer calling and `count` with its
    /// calls paused, in 40 turns of each, so that the machine's other load (and its
    /// changes) weighs on both alike. Returns the per-generation times with and without.
    fn alternate(
        &mut self,
        schedule: Schedule,
        count: u64,
        viewer: &mut ViewerProcess,
    ) -> Result<(Vec<f64>, Vec<f64>)> {
        const TURNS: u64 = 40;
        let (mut with, mut without) = (Vec::new(), Vec::new());
        let mut left = count;
        while left > 0 {
            let turn = count.div_ceil(TURNS).min(left);
            with.extend(self.generations(schedule, turn)?);
            viewer.pause()?;
            without.extend(self.generations(schedule, turn)?);
            viewer.resume()?;
            left -= turn;
        }
        Ok((with, without))
    }

    /// Runs `count` generations; returns each call's time per generation.
    fn generations(&mut self, schedule: Schedule, count: u64) -> Result<Vec<f64>> {
        let mut times = Vec::new();
        let mut left = count;
        while left > 0 {
            let (generations, t) = self.call(schedule, left)?;
            left -= generations;
            times.push(t);
        }
        Ok(times)
    }

    /// One call of the generation graph: at most `limit` generations, and none past the next
    /// snapshot, in steps of --depth (`overlap`: up to --steps-per-call steps). Returns the
    /// generations run and the time per generation.
    fn call(&mut self, schedule: Schedule, limit: u64) -> Result<(u64, f64)> {
        let snapshots = self.plan.snapshots.as_ref();
        let budget = limit.min(snapshots.map_or(u64::MAX, |s| s.every - self.done % s.every));
        let depth = (self.depth as u64).min(budget);
        let steps = if schedule == Schedule::Overlap { (self.steps_per_call as u64).min(budget / depth) } else { 1 };
        let step = Step { generation: self.done, depth: depth as usize, end: self.done + steps * depth };
        let start = self.rt.stopwatch();
        self.rt.call(self.graphs.generation(schedule), step)?;
        let generations = steps * depth;
        let per_generation = start.seconds() / generations as f64;
        self.first.get_or_insert(per_generation);
        self.done += generations;
        self.progress.set_position(self.done);
        if let Some(snapshots) = snapshots.filter(|s| self.done.is_multiple_of(s.every)) {
            // Its directory was checked before the run; failing now is a failure of the
            // run (the disk filled, the directory went), not bad input.
            let file = OutputFile::create("--snapshot-every", &snapshots.path(self.done))
                .map_err(|e| anyhow::anyhow!("{e:#}"))?;
            self.write(file, Format::Png)?;
        }
        Ok((generations, per_generation))
    }

    /// Writes the world (or --region) gathered through the region service.
    fn write(&self, file: OutputFile, format: Format) -> Result<()> {
        let rect = self.plan.rect;
        let region = self.rt.call(&self.graphs.region, RegionRequest { from: 0, rect })?;
        output::write(file, format, rect.width, rect.height, &region.cells)
    }
}

/// The `--view-process` client: `dps-life view` started by rank 0 as a plain process.
struct ViewerProcess {
    child: std::process::Child,
    /// Its standard output's lines, from a thread that reads them (closed at its end).
    lines: std::sync::mpsc::Receiver<String>,
}

/// How long the spawned viewer may take to make its first call, or to pause.
const VIEWER_START: Duration = Duration::from_secs(60);

impl ViewerProcess {
    /// Starts this program's `view` subcommand, a plain process (no MPI job of its own: the
    /// variables mpirun gives this rank are left out), its record piped back.
    fn spawn(viewer: &Viewer, fan: usize, seed: u64) -> Result<ViewerProcess> {
        let exe = std::env::current_exe()?;
        let (w, h) = viewer.block;
        let mut cmd = std::process::Command::new(exe);
        cmd.arg("view")
            .args(["--block", &format!("{w}x{h}"), "--fan", &fan.to_string()])
            .args(["--period-ms", &viewer.period.as_millis().to_string(), "--seed", &seed.to_string()])
            .args(["--until-eof", "--json"]);
        if let Some(dir) = &viewer.png_dir {
            cmd.arg("--png").arg(dir);
        }
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let mpi =
                ["OMPI_", "PMIX_", "OPAL_", "PRTE_", "ORTE_", "PMI_", "HYDRA_"].iter().any(|p| key.starts_with(p));
            if mpi && !key.starts_with("OMPI_ALLOW_RUN_AS_ROOT") {
                cmd.env_remove(key.as_ref());
            }
        }
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| anyhow::anyhow!("--view-process: cannot start the viewer: {e}"))?;
        let stdout = child.stdout.take().expect("the viewer's output is piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(std::result::Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(ViewerProcess { child, lines })
    }

    /// Waits until the service has answered the viewer's first call.
    fn wait_for_calls(&mut self, export: &dps::Export) -> Result<()> {
        let start = Instant::now();
        while export.served() == 0 {
            if let Some(status) = self.child.try_wait()? {
                bail!("--view-process: the viewer ended before its first call ({status})");
            }
            if start.elapsed() > VIEWER_START {
                bail!("--view-process: the viewer made no call in {} s", VIEWER_START.as_secs());
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(())
    }

    /// Sends the viewer `command` (`p` pause, `r` resume).
    fn tell(&mut self, command: &[u8]) -> Result<()> {
        use std::io::Write as _;
        let input = self.child.stdin.as_mut().expect("the viewer's input is open until finish");
        input
            .write_all(command)
            .and_then(|()| input.flush())
            .map_err(|e| anyhow::anyhow!("--view-process: the viewer: {e}"))
    }

    /// Pauses the viewer's calls and waits until it says none is in flight (it does after
    /// its current call and pause; not within [`VIEWER_START`] is an error).
    fn pause(&mut self) -> Result<()> {
        self.tell(b"p")?;
        let start = Instant::now();
        loop {
            let left = VIEWER_START.saturating_sub(start.elapsed());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with("paused") => return Ok(()),
                Ok(_) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    bail!("--view-process: the viewer did not pause in {} s", VIEWER_START.as_secs())
                }
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    bail!("--view-process: the viewer ended instead of pausing")
                }
            }
        }
    }

    fn resume(&mut self) -> Result<()> {
        self.tell(b"r")
    }

    /// Closes the viewer's input (its signal to stop), waits for it and reads its record.
    fn finish(mut self) -> Result<ViewerRecord> {
        drop(self.child.stdin.take());
        let rest: Vec<String> = self.lines.iter().collect();
        let status = self.child.wait()?;
        if !status.success() {
            bail!("--view-process: the viewer failed ({status})");
        }
        let line = rest.iter().rev().find(|l| l.starts_with('{')).map_or("", String::as_str);
        serde_json::from_str(line).map_err(|e| anyhow::anyhow!("--view-process: the viewer's record {line:?}: {e}"))
    }
}

/// The timed generations' measurements: per-generation times of each call.
struct Timed {
    /// Of the main schedule's calls.
    times: Vec<f64>,
    /// Their total, seconds.
    seconds: f64,
    /// Of the `simple` calls of `compare`.
    simple: Option<Vec<f64>>,
    /// --compare-serial: of the serial blocks, and of the parallel calls over the same blocks.
    serial: Option<(Vec<f64>, Vec<f64>)>,
}

/// The bit kernel alone on this thread, `depth` generations per pass.
fn run_serial(mut plan: Plan, depth: usize) -> Result<()> {
    let (w, h) = (plan.source.width(), plan.source.height());
    let mut world = World::new(&plan.source, plan.wrap, depth);
    world.advance(plan.warmup);
    let start = Instant::now();
    world.advance(plan.generations);
    let seconds = start.elapsed().as_secs_f64();
    let population = world.slab.population();
    let mut record = Record {
        common: Common::new("life", "serial", 1, 1, seconds, None),
        width: w,
        height: h,
        wrap: plan.wrap,
        generations: plan.generations,
        depth,
        steps_per_call: None,
        schedule_reason: None,
        cups: w as f64 * h as f64 * plan.generations as f64 / seconds,
        iteration_median_s: None,
        first_iteration_s: None,
        compare: None,
        serial: None,
        view: None,
        served: None,
        generations_run: None,
        population: Some(population),
        reference: None,
    };
    let mut outcome = Ok(());
    if plan.standard.verify() {
        let total = plan.total_generations;
        let observed =
            Observed { generations: (total, total), width: w, height: h, cells: &world.slab.rows(), population };
        outcome = record_verdict(verify(&plan.source, plan.wrap, total, &observed), &mut record);
    }
    if let (Some((file, format)), Ok(())) = (plan.out.take(), &outcome) {
        let rect = plan.rect;
        let words = rect.width.div_ceil(64);
        let mut cells = vec![0u64; words * rect.height];
        for (y, out) in (rect.y..rect.y + rect.height).zip(cells.chunks_mut(words)) {
            kernel::extract(&world.slab.row(y), rect.x, rect.width, out);
        }
        output::write(file, format, rect.width, rect.height, &cells)?;
    }
    let printed = dps_harness::print_record(&record, plan.standard.json());
    outcome.and(printed)
}

/// Puts a verification's verdict in the record; a failed one becomes the run's error.
fn record_verdict(verdict: Result<&'static str, String>, record: &mut Record) -> Result<()> {
    record.common.verified = Some(verdict.is_ok());
    match verdict {
        Ok(reference) => {
            record.reference = Some(reference.into());
            Ok(())
        }
        Err(why) => Err(anyhow::anyhow!("verification failed: {why}")),
    }
}
