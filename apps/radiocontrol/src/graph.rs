//! The farm of §2.6 as a DPS graph: the master on rank 0 hands out jobs (hour, station)
//! in hour-major order through a flow-controlled split whose window is PipelineDepth ×
//! workers, with load-balanced routing (a job goes to the worker that just returned one,
//! the thesis's `Slave[cap_fcindex0 % NbSlaves]`). Each rank is a worker of three threads,
//! the thesis's `IOThread[0] >-> ComputeThread >-> IOThread[1]` (Fig. 9.5):
//!
//! ```text
//!   master[0]: split "dispatch" --(window depth·ranks, load_balanced)-->
//!   readers[r]:  leaf "read"      station hour file + the hour's watch block (cached per hour)
//!   computes[r]: leaf "correlate" 60 minutes × all watches
//!   writers[r]:  leaf "pack"      the job's self-checking record (CRC-32), sent to the master
//!   master[0]: merge "collect"    appends the records to the result file in job order
//! ```
//!
//! The three threads of a rank are separate DPS threads, so while one job correlates the
//! next is read and the previous one packed and sent (the progress thread sends it): I/O
//! hides behind computation. The stages of one job stay on one rank (routed by the
//! reader's index). The master appends records in job order, holding the ones that
//! arrive early, so the file is the same bytes whatever the ranks and the timing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::Result;
use dps::{route, Bulk, MergeFn, Node, Runtime};
use serde::{Deserialize, Serialize};

use crate::data::DataSet;
use crate::job::{correlate_job, WatchHour};
use crate::kernel::Watch;
use crate::results::{encode_record, ResultFile};

/// A job: its index (hour-major) and (hour, station).
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Job {
    /// Index in hour-major order.
    pub index: usize,
    /// Hour.
    pub hour: usize,
    /// Station.
    pub station: usize,
}

/// A job with its data, on the rank that read it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Loaded {
    job: Job,
    worker: usize,
    data: Result<(Vec<i16>, Arc<WatchHour>), String>,
    read_s: f64,
}

/// A job's payload, on the rank that computed it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Correlated {
    job: Job,
    worker: usize,
    payload: Result<Vec<u8>, String>,
    read_s: f64,
    compute_s: f64,
}

/// A job's record, on its way to the master.
#[derive(Debug, Serialize, Deserialize)]
pub struct Packed {
    job: Job,
    worker: usize,
    record: Result<Bulk<u8>, String>,
    read_s: f64,
    compute_s: f64,
}

/// The graph's input: the jobs to run, `first..jobs`.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct Start {
    /// The first job not in the result file.
    pub first: usize,
    /// All jobs.
    pub jobs: usize,
}

/// The graph's output.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Jobs appended by this run.
    pub written: usize,
    /// Per worker (rank), the jobs it computed.
    pub per_worker: Vec<usize>,
    /// Seconds spent reading (summed over workers).
    pub read_s: f64,
    /// Seconds spent correlating (summed over workers).
    pub compute_s: f64,
    /// The first error (a failed read or append); jobs after it were not written.
    pub error: Option<String>,
}

/// The master's state, shared by the split's iterator and the merge.
#[derive(Debug, Default)]
pub struct Master {
    /// The result file (rank 0, set before the call).
    pub file: Option<ResultFile>,
    pending: BTreeMap<usize, Bulk<u8>>,
    summary: Summary,
}

impl Master {
    fn take(&mut self, p: Packed) {
        if self.summary.per_worker.len() <= p.worker {
            self.summary.per_worker.resize(p.worker + 1, 0);
        }
        self.summary.per_worker[p.worker] += 1;
        self.summary.read_s += p.read_s;
        self.summary.compute_s += p.compute_s;
        if self.summary.error.is_some() {
            return;
        }
        match p.record {
            Err(e) => self.summary.error = Some(e),
            Ok(rec) => {
                self.pending.insert(p.job.index, rec);
                self.drain();
            }
        }
    }

    /// Appends the records that are next in order.
    fn drain(&mut self) {
        let Some(file) = self.file.as_mut() else {
            self.summary.error = Some("the result file is not open".into());
            return;
        };
        while let Some(rec) = self.pending.remove(&file.done) {
            if let Err(e) = file.append_encoded(&rec) {
                self.summary.error = Some(format!("{e:#}"));
                return;
            }
            self.summary.written += 1;
        }
    }
}

struct Reader {
    worker: usize,
    data: DataSet,
    cache: Option<Arc<WatchHour>>,
}

impl Reader {
    fn read(&mut self, job: Job) -> Result<(Vec<i16>, Arc<WatchHour>)> {
        let hour = match &self.cache {
            Some(h) if h.hour == job.hour => h.clone(),
            _ => {
                let recs = self.data.read_watch_hour(job.hour)?;
                let h = Arc::new(WatchHour::new(job.hour, self.data.manifest.watches, &recs));
                self.cache = Some(h.clone());
                h
            }
        };
        Ok((self.data.read_station_hour(job.station, job.hour)?, hour))
    }
}

/// The compute thread's prepared watch hour.
#[derive(Default)]
struct Computer {
    hour: Option<(usize, Vec<Watch>)>,
}

/// The farm, built on every rank; [`Farm::run`] on rank 0.
#[derive(Debug)]
pub struct Farm {
    graph: dps::Graph<Start, Summary>,
    /// The master's state (its result file is set on rank 0 before [`Farm::run`]).
    pub master: Arc<Mutex<Master>>,
}

impl Farm {
    /// Builds the collections and graph (collective). `depth` jobs are queued per worker;
    /// each job also sleeps `throttle_ms` (test pacing, 0 in production).
    ///
    /// # Errors
    /// If the runtime refuses the collections or the graph.
    pub fn build(rt: &Runtime, data: &DataSet, depth: usize, throttle_ms: u64) -> Result<Farm> {
        let master_state = Arc::new(Mutex::new(Master::default()));
        let m = master_state.clone();
        let master = rt.collection("master", "0", move |_| m.clone())?;
        let d = data.clone();
        let readers = rt.collection("readers", "all", move |i| Reader { worker: i, data: d.clone(), cache: None })?;
        let computes = rt.collection("computes", "all", |_| Computer::default())?;
        let manifest = data.manifest.clone();
        let writers = rt.collection("writers", "all", move |_| manifest.clone())?;
        let window = depth.checked_mul(readers.len()).filter(|&w| w <= dps::MAX_WINDOW).ok_or_else(|| {
            dps_harness::BadInput::new(format!("--pipeline-depth {depth} × {} ranks is too large", readers.len()))
        })?;
        let stations = data.manifest.stations;
        let dispatch =
            Node::split("dispatch", &master, route::fixed(0), move |m: &mut Arc<Mutex<Master>>, s: Start| {
                let m = m.clone();
                // Stop handing out jobs after an error: the rest could not be appended.
                (s.first..s.jobs).take_while(move |_| m.lock().unwrap().summary.error.is_none()).map(move |index| Job {
                    index,
                    hour: index / stations,
                    station: index % stations,
                })
            })
            .window(window);
        let read = Node::leaf("read", &readers, route::load_balanced(), |r: &mut Reader, job: Job| {
            let t = Instant::now();
            let data = r.read(job).map_err(|e| format!("{e:#}"));
            Loaded { job, worker: r.worker, data, read_s: t.elapsed().as_secs_f64() }
        });
        let same_worker = |l: &Loaded| l.worker;
        let throttle = std::time::Duration::from_millis(throttle_ms);
        let correlate =
            Node::leaf("correlate", &computes, route::by_key(same_worker), move |c: &mut Computer, l: Loaded| {
                let t = Instant::now();
                let payload = l.data.map(|(station, hour)| {
                    if c.hour.as_ref().map(|h| h.0) != Some(hour.hour) {
                        c.hour = Some((hour.hour, hour.prepare()));
                    }
                    let watches = &c.hour.as_ref().expect("prepared above").1;
                    let payload = correlate_job(&station, watches, hour.watches);
                    std::thread::sleep(throttle);
                    payload
                });
                Correlated {
                    job: l.job,
                    worker: l.worker,
                    payload,
                    read_s: l.read_s,
                    compute_s: t.elapsed().as_secs_f64(),
                }
            });
        let same_worker = |c: &Correlated| c.worker;
        let pack =
            Node::leaf("pack", &writers, route::by_key(same_worker), |m: &mut crate::data::Manifest, c: Correlated| {
                let record = c.payload.map(|p| Bulk(encode_record(m, c.job.index, &p)));
                Packed { job: c.job, worker: c.worker, record, read_s: c.read_s, compute_s: c.compute_s }
            });
        let collect = Node::merge(
            "collect",
            &master,
            MergeFn::new(
                |m: &mut Arc<Mutex<Master>>| {
                    let mut m = m.lock().unwrap();
                    m.summary = Summary::default();
                    m.pending.clear();
                },
                |m: &mut Arc<Mutex<Master>>, _: &mut (), p: Packed| m.lock().unwrap().take(p),
                |m: &mut Arc<Mutex<Master>>, ()| m.lock().unwrap().summary.clone(),
            ),
        );
        let graph = rt.graph("radiocontrol", dispatch >> read >> correlate >> pack >> collect)?;
        Ok(Farm { graph, master: master_state })
    }

    /// Runs jobs `first..jobs` (rank 0).
    ///
    /// # Errors
    /// If an operation failed.
    pub fn run(&self, rt: &Runtime, start: Start) -> Result<Summary> {
        Ok(rt.call(&self.graph, start)?)
    }
}
