//! `service`: a parallel service exported by one process and called from another on the
//! same node (the DPS paper's §4, the runtime's `service` module), beside the same graphs
//! called inside one application: 8-byte round trips, and the bandwidth of bulk replies.
//!
//! The launcher starts the serving process (`service-server`, a plain process exporting
//! `echo` and `produce` in a registry directory of its own), then `service-worker` under
//! `scripts/mpirun -n 2`, whose rank 0 calls three routes to the same leaves, one after
//! the other: the service (another process, over a socket), rank 1 of its own application
//! (another process, over MPI: the in-application call the floors compare against), and
//! its own rank (no process boundary, for reference). Rank 0 prints one JSON [`Record`];
//! the launcher prints it as a JSON line or a table, then stops the server.

mod graphs;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use clap::Args;
use dps_launch::{Job, Launcher};
use serde::{Deserialize, Serialize};

use crate::table;
use crate::transport::MAX_REPS;

/// Requests in flight when streaming (as `transport`'s window).
const WINDOW: usize = 8;
/// The names the server exports, as `PREFIX.echo` and `PREFIX.produce`.
const PREFIX: &str = "dps-bench";
/// How long the launcher waits for the server to export, and then to end.
const SERVER_WAIT: Duration = Duration::from_secs(30);
/// The largest `--bytes`: 256 MiB (the window's replies are held at both ends).
const MAX_BYTES: usize = 256 << 20;

/// Options shared by the launcher and the worker.
#[derive(Args, Clone, Debug)]
pub(crate) struct Options {
    /// Repetitions of each measurement (the median is reported; 1 to 10000).
    #[arg(long, default_value_t = 5)]
    pub(crate) reps: usize,
    /// Bytes of each bulk reply when measuring bandwidth (1 to 256 MiB).
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) bytes: usize,
    /// Calls to the service go over TCP on loopback instead of an abstract Unix socket
    /// (`DPS_SERVICE_NET=tcp`).
    #[arg(long)]
    pub(crate) tcp: bool,
}

impl Options {
    /// Checks the options (bad input).
    fn check(&self) -> Result<()> {
        if !(1..=MAX_REPS).contains(&self.reps) {
            dps_harness::bad_input!("--reps {} must be between 1 and {MAX_REPS}", self.reps);
        }
        if !(1..=MAX_BYTES).contains(&self.bytes) {
            dps_harness::bad_input!("--bytes {} must be between 1 and {MAX_BYTES}", self.bytes);
        }
        Ok(())
    }

    fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--reps".into(), self.reps.to_string(), "--bytes".into(), self.bytes.to_string()];
        if self.tcp {
            args.push("--tcp".into());
        }
        args
    }
}

/// What the worker measured. Bandwidths are in GB/s (1e9 bytes per second); `in_app` is
/// the same graph inside the worker's application with the leaf on rank 1 (another
/// process, over MPI), `local` with the leaf on the caller's own rank.
#[derive(Serialize, Deserialize, Debug, Clone)]
pub(crate) struct Record {
    /// How the service was reached: `unix` (abstract socket) or `tcp` (loopback).
    net: String,
    /// 8-byte call to the service: median round trip, µs.
    service_rtt_us: f64,
    /// The same call inside the application, leaf on rank 1: µs.
    in_app_rtt_us: f64,
    /// The same call, leaf on the caller's rank: µs.
    local_rtt_us: f64,
    /// `service_rtt_us / in_app_rtt_us` (the floor: at most 3).
    rtt_ratio: f64,
    /// Bytes of each bulk reply.
    bytes: usize,
    /// Bulk replies from the service, GB/s.
    service_gbps: f64,
    /// The same stream inside the application, leaf on rank 1: GB/s.
    in_app_gbps: f64,
    /// The same stream, leaf on the caller's rank: GB/s.
    local_gbps: f64,
    /// `service_gbps / in_app_gbps` (the floor: at least 0.8).
    bw_ratio: f64,
    /// Replies per streaming repetition through the service.
    service_stream_msgs: usize,
    /// Replies per streaming repetition inside the application (rank 1).
    in_app_stream_msgs: usize,
    /// Requests in flight when streaming.
    window: usize,
    /// Repetitions per measurement.
    reps: usize,
}

/// The launcher: the server as a plain process, the worker under `mpirun -n 2`, then the
/// record printed and the server stopped.
pub(crate) fn launch(opts: &Options, json: bool, timeout_s: u64) -> Result<()> {
    opts.check()?;
    let exe = std::env::current_exe().context("cannot locate the dps-bench executable")?;
    let registry = Registry::new()?;
    let stop = registry.0.join("stop");
    let server = Server::start(&exe, &registry.0, &stop, timeout_s)?;
    let mut args = vec!["service-worker".to_string()];
    args.extend(opts.to_args());
    let mut job = Job::new(&exe).ranks(2).args(&args).env("DPS_SERVICES", &registry.0).timeout_s(timeout_s);
    if opts.tcp {
        job = job.env("DPS_SERVICE_NET", "tcp");
    }
    let mut records = Vec::new();
    let ran = job
        .stream(|line| match serde_json::from_str::<Record>(line) {
            Ok(record) => records.push(record),
            Err(_) => eprintln!("{line}"),
        })
        .with_context(|| format!("dps-bench {} on 2 ranks", args.join(" ")));
    let stopped = server.stop(&stop);
    ran?;
    stopped?;
    let Some(record) = records.pop() else { bail!("the worker printed no record") };
    let value = serde_json::to_value(&record)?;
    if json {
        crate::print_out(&format!("{value}\n"))
    } else {
        let serde_json::Value::Object(row) = value else { unreachable!("a record is an object") };
        crate::print_out(&table::markdown(&[row]))
    }
}

/// A registry directory of the run's own (so no other service is found), removed at the end.
struct Registry(PathBuf);

impl Registry {
    fn new() -> Result<Registry> {
        let dir = std::env::temp_dir().join(format!("dps-bench-service-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Registry(dir))
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The serving process, running in the background.
struct Server(Child);

impl Server {
    /// Starts `service-server` (inside `timeout`) and waits until both graphs are exported.
    fn start(exe: &Path, registry: &Path, stop: &Path, timeout_s: u64) -> Result<Server> {
        let job = Job::new(exe)
            .launcher(Launcher::None)
            .args(["service-server", "--until", stop.to_str().context("a temporary path that is not UTF-8")?])
            .timeout_s(timeout_s);
        let words = job.command_line();
        let child = Command::new(&words[0])
            .args(&words[1..])
            .env("DPS_SERVICES", registry)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start the serving process")?;
        let mut server = Server(child);
        let entries = ["echo", "produce"].map(|g| registry.join(format!("{PREFIX}.{g}.service")));
        let start = Instant::now();
        while !entries.iter().all(|e| e.exists()) {
            if let Some(status) = server.0.try_wait()? {
                bail!("the serving process ended before it exported its graphs ({status})");
            }
            if start.elapsed() > SERVER_WAIT {
                server.kill();
                bail!("the serving process did not export its graphs within {} s", SERVER_WAIT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(server)
    }

    /// Asks the server to end (the file `stop`) and waits for it.
    fn stop(mut self, stop: &Path) -> Result<()> {
        std::fs::write(stop, b"").with_context(|| format!("cannot create {}", stop.display()))?;
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait()? {
                ensure!(status.success(), "the serving process failed ({status})");
                return Ok(());
            }
            if start.elapsed() > SERVER_WAIT {
                self.kill();
                bail!("the serving process did not end within {} s of being asked", SERVER_WAIT.as_secs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The serving process: exports `echo` and `produce` on its one rank until `until` exists.
pub(crate) fn server(until: &Path) -> Result<()> {
    let rt = dps::RuntimeArgs::default().start()?;
    let here = rt.collection("here", "0", |_| ())?;
    let echo = rt.graph("echo", graphs::echo(&here))?;
    let produce = rt.graph("produce", graphs::produce(&here))?;
    let exports = [rt.export(&format!("{PREFIX}.echo"), &echo)?, rt.export(&format!("{PREFIX}.produce"), &produce)?];
    while !until.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(exports);
    rt.shutdown()?;
    Ok(())
}

/// The worker, on exactly two ranks: rank 0 measures the three routes; prints the record.
pub(crate) fn worker(opts: &Options) -> Result<()> {
    opts.check()?;
    let rt = dps::RuntimeArgs::default().start()?;
    ensure!(rt.ranks() == 2, "service-worker needs exactly 2 ranks, got {}", rt.ranks());
    let main = rt.collection("main", "0", |_| ())?;
    let remote = rt.collection("remote", "1", |_| ())?;
    let local = rt.collection("local", "0", |_| ())?;
    let in_app = graphs::Route::in_app(&rt, "in-app", &main, &remote, WINDOW)?;
    let own = graphs::Route::in_app(&rt, "local", &main, &local, WINDOW)?;
    let service = graphs::Route::service(&rt, PREFIX, &main, WINDOW)?;
    if rt.is_root() {
        let (reps, bytes) = (opts.reps, opts.bytes);
        let service_rtt_us = service.rtt(&rt, reps)?;
        let in_app_rtt_us = in_app.rtt(&rt, reps)?;
        let local_rtt_us = own.rtt(&rt, reps)?;
        let (service_k, service_s) = service.bandwidth(&rt, bytes, reps)?;
        let (in_app_k, in_app_s) = in_app.bandwidth(&rt, bytes, reps)?;
        let (local_k, local_s) = own.bandwidth(&rt, bytes, reps)?;
        let gbps = |k: usize, s: f64| (k * bytes) as f64 / s / 1e9;
        let (service_gbps, in_app_gbps) = (gbps(service_k, service_s), gbps(in_app_k, in_app_s));
        let record = Record {
            net: if opts.tcp { "tcp" } else { "unix" }.to_string(),
            service_rtt_us,
            in_app_rtt_us,
            local_rtt_us,
            rtt_ratio: service_rtt_us / in_app_rtt_us,
            bytes,
            service_gbps,
            in_app_gbps,
            local_gbps: gbps(local_k, local_s),
            bw_ratio: service_gbps / in_app_gbps,
            service_stream_msgs: service_k,
            in_app_stream_msgs: in_app_k,
            window: WINDOW,
            reps,
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{}", serde_json::to_string(&record)?)?;
        out.flush()?;
    }
    rt.shutdown()?;
    Ok(())
}
