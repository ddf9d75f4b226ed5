//! The platform file: what `dps-bench calibrate --out FILE` measured on one machine, for the
//! simulator and the tuners to predict from.
//!
//! A TOML file (format [`FORMAT`]; bench/README.md documents every field) with four parts:
//!
//! * `[header]`: the format, the dps version, the date, the machine (host names, CPU model,
//!   logical CPUs), the ranks it was measured on, and `measured_hash`, a hash of everything
//!   below it;
//! * `[[links]]`: per path between ranks (`intra-node`, `inter-node`) and transport (`dps`
//!   tokens, raw `mpi`), the one-way times measured by ping-pong and their fit `t(s) = l + s/b`
//!   (one or two segments, see [`crate::fit`]);
//! * `[overheads]`: the CPU cost of a message to the sending and to the receiving rank
//!   (µs per message, ns per byte), measured on saturated cores, or why it was not measured;
//! * `[[kernels]]`: cost tables (gemm, trsm, getrf, life, median, laswp, copy), each point the
//!   dimensions, the seconds per call and the work per call.
//!
//! Loading checks, in order: the file exists and parses; its format and dps version are this
//! build's; it was measured on this machine (this host among its hosts, same CPU model and
//! CPU count); it is at most [`MAX_AGE_DAYS`] old and not from the future; its hash matches
//! what it holds (no hand edits); every value is in range ([`limits`]: what the
//! simulator's clock can hold). Each failure is one line that names the file and the
//! command that makes a new one.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::fit::Segment;

/// The format this build reads and writes.
pub const FORMAT: u32 = 3;

/// A platform file older than this many days is stale (the machine's software may have
/// changed since: MPI, BLAS, the kernel).
pub const MAX_AGE_DAYS: i64 = 90;

/// The dps version of this build (the workspace's version).
pub const DPS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The platform file: see the module documentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// Where and when it was measured.
    pub header: Header,
    /// Latency and bandwidth per path and transport.
    #[serde(default)]
    pub links: Vec<Link>,
    /// The CPU cost of concurrent transfers.
    pub overheads: Overheads,
    /// Kernel cost tables.
    #[serde(default)]
    pub kernels: Vec<Kernel>,
}

/// The header: format, version, date, machine, and the hash of what was measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// The file format, [`FORMAT`].
    pub format: u32,
    /// The dps version that measured it.
    pub dps_version: String,
    /// When, RFC 3339 (UTC).
    pub date: String,
    /// The host of each rank measured, rank 0 first, without repeats.
    pub hosts: Vec<String>,
    /// The CPU model (`/proc/cpuinfo`'s `model name`).
    pub cpu_model: String,
    /// Logical CPUs of the machine.
    pub cpus: u32,
    /// The share of a core that rank 0's node gives it, where a CPU quota limits it (a node
    /// of an emulated cluster, `slurm/cluster.sh --cpu`): the simulator then gives each
    /// virtual rank a node of its own with this share of one core. Absent: whole cores.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_share: Option<f64>,
    /// The BLAS library, version and kernel set (OpenBLAS's core) the kernel tables were
    /// measured with, `OpenBLAS 0.3.21 Zen`; empty where none was recorded (a file made up
    /// for tests), which is not checked.
    pub blas: String,
    /// Ranks of the calibration job.
    pub ranks: u32,
    /// Whether this was a quick calibration (fewer sizes, shorter measurements).
    pub quick: bool,
    /// The 1-minute load average of rank 0's host when the measurement started
    /// (`/proc/loadavg`; 0 if unknown): above the CPU count, the machine was shared.
    pub load_average: f64,
    /// What the calibration found suspect in its own measurements (a busy machine, a
    /// latency no shared-memory path has); empty when nothing was.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// `fnv1a64:` and 16 hex digits: FNV-1a of the TOML of `links`, `overheads`, `kernels`.
    pub measured_hash: String,
}

/// A path between two ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PathKind {
    /// Two ranks on one host (shared memory).
    IntraNode,
    /// Two ranks on different hosts (the network).
    InterNode,
}

/// What carried the messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Carrier {
    /// DPS tokens (`Bulk<u8>`) through the runtime: what the simulator models.
    Dps,
    /// Raw MPI blocking send/receive of byte buffers, beside it.
    Mpi,
}

/// One path's measured one-way times and their fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    /// Intra- or inter-node.
    pub path: PathKind,
    /// DPS tokens or raw MPI.
    pub carrier: Carrier,
    /// The two ranks measured.
    pub ranks: [u32; 2],
    /// Message sizes, bytes, ascending.
    pub sizes: Vec<u64>,
    /// One-way time per size (half the median round trip), µs.
    pub times_us: Vec<f64>,
    /// The fit: one segment, or two when the protocol switch shows.
    pub fit: Vec<Segment>,
    /// The same sizes sent one after another (DPS only): how long each message holds the
    /// path while others follow. Absent in files calibrated before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<Stream>,
}

/// A stream's time per message over a link's sizes, and its fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stream {
    /// Time per message while a sender keeps messages in flight, per size, µs.
    pub times_us: Vec<f64>,
    /// The fit of those times, as [`Link::fit`].
    pub fit: Vec<Segment>,
}

impl Link {
    /// The fitted one-way time of an `s`-byte message, µs.
    pub fn time_us(&self, s: u64) -> f64 {
        crate::fit::predict(&self.fit, s)
    }

    /// How long an `s`-byte message occupies the link, µs: `s / b` of the segment that
    /// covers `s` (without its latency), b measured by the stream where there is one (a
    /// ping-pong waits for each message to arrive; a stream overlaps the copies of
    /// consecutive messages, as a sender's burst does).
    pub fn transfer_us(&self, s: u64) -> f64 {
        s as f64 / self.bytes_per_us(s)
    }

    /// The bandwidth that carries `s`-byte messages, B/µs: the stream's where measured, else
    /// the ping-pong's.
    pub fn bytes_per_us(&self, s: u64) -> f64 {
        let fit = self.stream.as_ref().map_or(&self.fit, |stream| &stream.fit);
        crate::fit::segment_for(fit, s).bytes_per_us
    }
}

/// The CPU cost of messages between ranks, measured as what a compute kernel on each side
/// loses while a stream flows, all cores busy (bench/src/calibrate/overheads.rs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overheads {
    /// Whether it was measured (false: one rank, no transfers; the costs are then 0).
    pub measurable: bool,
    /// How it was measured, or why not.
    pub note: String,
    /// The sending rank's cost per message.
    pub send: TransferCost,
    /// The receiving rank's cost per message.
    pub receive: TransferCost,
    /// A computation's time while the node's other cores compute too, over its time alone
    /// (their shared memory bandwidth and caches); 1 when not measured.
    pub co_run_slowdown: f64,
}

/// One side's CPU cost of a message of `s` bytes: `us_per_message + s·ns_per_byte`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferCost {
    /// µs per message.
    pub us_per_message: f64,
    /// ns per byte.
    pub ns_per_byte: f64,
}

impl TransferCost {
    /// The cost of a message of `bytes` bytes, µs.
    pub fn us(&self, bytes: u64) -> f64 {
        self.us_per_message + self.ns_per_byte * bytes as f64 * 1e-3
    }
}

/// A kernel's cost table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Kernel {
    /// `gemm`, `trsm`, `getrf`, `life` (`median`: reserved for apps/filter's kernel).
    pub name: String,
    /// What the dimensions of a point are, e.g. `m,n,k` or `width,rows,depth`.
    pub dims: String,
    /// The unit of `work`, e.g. `flop` or `cell update`.
    pub work_unit: String,
    /// The measured points.
    pub points: Vec<KernelPoint>,
}

/// One measured call shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KernelPoint {
    /// The dimensions, as the kernel's `dims` names them.
    pub dims: Vec<u64>,
    /// Seconds per call (median).
    pub seconds: f64,
    /// Work per call, in the kernel's `work_unit`.
    pub work: f64,
}

impl KernelPoint {
    /// Work per second.
    pub fn rate(&self) -> f64 {
        self.work / self.seconds
    }
}

impl Kernel {
    /// The point measured at exactly `dims`, if any.
    pub fn at(&self, dims: &[u64]) -> Option<&KernelPoint> {
        self.points.iter().find(|p| p.dims == dims)
    }

    /// The seconds of a call of shape `dims` doing `work`: the measured time if that shape
    /// was measured, else `work` at the rate of the nearest measured shape (distance: the
    /// logarithms of the dimensions, so a 4r×r panel is matched to panels, not to squares).
    pub fn seconds(&self, dims: &[u64], work: f64) -> Option<f64> {
        if let Some(p) = self.at(dims) {
            return Some(p.seconds);
        }
        let log = |d: u64| (d.max(1) as f64).ln();
        let distance = |p: &KernelPoint| -> f64 {
            p.dims.iter().zip(dims).map(|(&a, &b)| (log(a) - log(b)).powi(2)).sum::<f64>()
                + (p.dims.len().abs_diff(dims.len()) as f64) * 1e6
        };
        let nearest = self.points.iter().min_by(|a, b| distance(a).total_cmp(&distance(b)))?;
        Some(work / nearest.rate())
    }
}

/// The machine a platform file belongs to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    /// This host's name.
    pub hostname: String,
    /// The CPU model.
    pub cpu_model: String,
    /// Logical CPUs.
    pub cpus: u32,
    /// The BLAS kernels this process runs ([`Header::blas`]'s form), where it calls BLAS and
    /// has said so ([`Machine::register_blas`]).
    pub blas: Option<String>,
}

/// What [`Machine::register_blas`] registered.
static PROCESS_BLAS: std::sync::OnceLock<String> = std::sync::OnceLock::new();

impl Machine {
    /// This machine, from `/proc` (host name, `model name` and `processor` lines of
    /// `/proc/cpuinfo`); `unknown` where it cannot be read.
    pub fn this() -> Machine {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |line: &str, name: &str| {
            let (key, value) = line.split_once(':')?;
            (key.trim() == name).then(|| value.trim().to_string())
        };
        let cpu_model = cpuinfo.lines().find_map(|l| field(l, "model name")).unwrap_or_else(|| "unknown".into());
        let listed = cpuinfo.lines().filter(|l| field(l, "processor").is_some()).count() as u32;
        let cpus = if listed > 0 { listed } else { std::thread::available_parallelism().map_or(1, |n| n.get() as u32) };
        Machine { hostname, cpu_model, cpus, blas: PROCESS_BLAS.get().cloned() }
    }

    /// Registers the BLAS kernels this process runs (`dps_dense::kernel_choice` does, as it
    /// starts): a platform file measured with other kernels is then refused, since its
    /// kernel tables time another code. The first registration stays.
    pub fn register_blas(kernels: String) {
        let _ = PROCESS_BLAS.set(kernels);
    }
}

/// Why a platform file cannot be used. Every message is one line naming the file and the
/// command that makes a good one.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// No such file.
    #[error("platform file {0}: not found; measure this machine with `dps-bench calibrate --out {0}`")]
    Missing(PathBuf),
    /// It cannot be read.
    #[error("platform file {0}: cannot be read ({1}); make one with `dps-bench calibrate --out {0}`")]
    Unreadable(PathBuf, String),
    /// It is not a platform file of this format.
    #[error("platform file {path}:{line}: {why}; make a new one with `dps-bench calibrate --out {path}`")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The line of the fault (1-based; 1 when unknown).
        line: usize,
        /// What is wrong.
        why: String,
    },
    /// It was made by another format, dps version, machine, or too long ago.
    #[error("platform file {path}: {why}; recalibrate with `dps-bench calibrate --out {path}`")]
    Unusable {
        /// The file.
        path: PathBuf,
        /// What does not match.
        why: String,
    },
}

fn unusable(path: &Path, why: String) -> PlatformError {
    PlatformError::Unusable { path: path.to_path_buf(), why }
}

/// The view of a platform file its hash covers: everything measured.
#[derive(Serialize)]
struct Measured<'a> {
    links: &'a [Link],
    overheads: &'a Overheads,
    kernels: &'a [Kernel],
}

/// The comment at the top of every platform file.
const PREAMBLE: &str = "# DPS platform file, written by `dps-bench calibrate --out FILE`; format documented in\n\
# bench/README.md. Do not edit: the header's measured_hash covers every value below it.\n";

impl Platform {
    /// The hash of what this file measured (its `links`, `overheads` and `kernels`).
    pub fn measured_hash(&self) -> String {
        use std::hash::Hasher;
        let text =
            toml::to_string(&Measured { links: &self.links, overheads: &self.overheads, kernels: &self.kernels })
                .expect("measurements serialise to TOML");
        let mut hasher = fnv::FnvHasher::default();
        hasher.write(text.as_bytes());
        format!("fnv1a64:{:016x}", hasher.finish())
    }

    /// Sets the header's hash to what the file now holds (after measuring).
    pub fn seal(&mut self) {
        self.header.measured_hash = self.measured_hash();
    }

    /// The file's text: a comment, then the TOML.
    pub fn to_toml(&self) -> String {
        format!("{PREAMBLE}{}", toml::to_string(self).expect("a platform serialises to TOML"))
    }

    /// Reads and checks the platform file at `path` for this machine, now.
    ///
    /// # Errors
    /// A [`PlatformError`] naming the file and `dps-bench calibrate --out FILE`.
    pub fn load(path: &Path) -> Result<Platform, PlatformError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(PlatformError::Missing(path.into())),
            Err(e) => return Err(PlatformError::Unreadable(path.into(), e.to_string())),
        };
        Platform::parse(&text, path, &Machine::this(), jiff::Timestamp::now())
    }

    /// Parses and checks the text of a platform file (`path` names it in errors) for
    /// `machine` at time `now`. Never panics, whatever the text.
    ///
    /// # Errors
    /// As [`Platform::load`].
    pub fn parse(text: &str, path: &Path, machine: &Machine, now: jiff::Timestamp) -> Result<Platform, PlatformError> {
        // toml's messages may span lines: one line, as every refusal is.
        let malformed = |line: usize, why: String| PlatformError::Malformed {
            path: path.into(),
            line,
            why: why.split_whitespace().collect::<Vec<_>>().join(" "),
        };
        let line_of =
            |e: &toml::de::Error| e.span().map_or(1, |s| 1 + text[..s.start.min(text.len())].matches('\n').count());
        // The format first: a file of another format need not deserialise as this one.
        let table: toml::Table =
            text.parse().map_err(|e: toml::de::Error| malformed(line_of(&e), e.message().to_string()))?;
        let format = table.get("header").and_then(|h| h.get("format")).and_then(toml::Value::as_integer);
        match format {
            None => return Err(malformed(1, "no [header] with a format number: not a platform file".into())),
            Some(f) if f != i64::from(FORMAT) => {
                return Err(unusable(path, format!("format {f}, this dps reads format {FORMAT}")))
            }
            Some(_) => {}
        }
        let platform: Platform = toml::from_str(text).map_err(|e| malformed(line_of(&e), e.message().to_string()))?;
        platform.check(path, machine, now)?;
        Ok(platform)
    }

    /// The checks after parsing: version, machine, date, hash, values.
    fn check(&self, path: &Path, machine: &Machine, now: jiff::Timestamp) -> Result<(), PlatformError> {
        let h = &self.header;
        if h.dps_version != DPS_VERSION {
            return Err(unusable(path, format!("made by dps {}, this is dps {DPS_VERSION}", h.dps_version)));
        }
        if !h.hosts.contains(&machine.hostname) {
            let hosts = h.hosts.join(", ");
            return Err(unusable(path, format!("measured on {hosts}, not on this host ({})", machine.hostname)));
        }
        if h.cpu_model != machine.cpu_model || h.cpus != machine.cpus {
            return Err(unusable(
                path,
                format!(
                    "measured on a {} with {} CPUs, this is a {} with {} CPUs",
                    h.cpu_model, h.cpus, machine.cpu_model, machine.cpus
                ),
            ));
        }
        if let Some(blas) = machine.blas.as_ref().filter(|_| !h.blas.is_empty()) {
            if h.blas != *blas {
                return Err(unusable(
                    path,
                    format!("its kernel tables were measured with {}, this program runs {blas}", h.blas),
                ));
            }
        }
        let date: jiff::Timestamp =
            h.date.parse().map_err(|e| unusable(path, format!("date {:?} is not an RFC 3339 time ({e})", h.date)))?;
        let age_days = (now.as_second() - date.as_second()) / 86_400;
        if now.as_second() + 86_400 < date.as_second() {
            return Err(unusable(path, format!("dated {}, in the future", h.date)));
        }
        if age_days > MAX_AGE_DAYS {
            return Err(unusable(
                path,
                format!("measured {age_days} days ago ({}), stale after {MAX_AGE_DAYS}", h.date),
            ));
        }
        if h.measured_hash != self.measured_hash() {
            return Err(unusable(path, "its values do not match its measured_hash (edited or damaged)".into()));
        }
        self.check_values().map_err(|why| unusable(path, why))
    }

    /// Every value in range ([`limits`]: what the simulated clock can hold), lengths
    /// consistent. The error names the field by its place in the TOML.
    fn check_values(&self) -> Result<(), String> {
        limits::LOAD_AVERAGE.check("header.load_average", self.header.load_average)?;
        for (i, link) in self.links.iter().enumerate() {
            let name = format!("links[{i}] ({:?}/{:?} {:?})", link.path, link.carrier, link.ranks);
            if link.sizes.len() != link.times_us.len() || link.sizes.is_empty() {
                return Err(format!("{name}: {} sizes and {} times", link.sizes.len(), link.times_us.len()));
            }
            if !link.sizes.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!("{name}: sizes not ascending"));
            }
            for (j, &t) in link.times_us.iter().enumerate() {
                limits::ONE_WAY_US.check(format_args!("links[{i}].times_us[{j}]"), t)?;
            }
            if link.fit.is_empty() {
                return Err(format!("{name}: no fit"));
            }
            check_fit(&format!("links[{i}].fit"), &link.fit)?;
            if let Some(stream) = &link.stream {
                if stream.times_us.len() != link.sizes.len() {
                    return Err(format!(
                        "{name}: {} sizes and {} stream times",
                        link.sizes.len(),
                        stream.times_us.len()
                    ));
                }
                for (j, &t) in stream.times_us.iter().enumerate() {
                    limits::ONE_WAY_US.check(format_args!("links[{i}].stream.times_us[{j}]"), t)?;
                }
                if stream.fit.is_empty() {
                    return Err(format!("{name}: no stream fit"));
                }
                check_fit(&format!("links[{i}].stream.fit"), &stream.fit)?;
            }
        }
        if let Some(share) = self.header.cpu_share {
            limits::CPU_SHARE.check("header.cpu_share", share)?;
        }
        let o = &self.overheads;
        limits::CO_RUN_SLOWDOWN.check("overheads.co_run_slowdown", o.co_run_slowdown)?;
        for (side, c) in [("send", o.send), ("receive", o.receive)] {
            limits::US_PER_MESSAGE.check(format_args!("overheads.{side}.us_per_message"), c.us_per_message)?;
            limits::NS_PER_BYTE.check(format_args!("overheads.{side}.ns_per_byte"), c.ns_per_byte)?;
        }
        for (i, k) in self.kernels.iter().enumerate() {
            if k.points.is_empty() {
                return Err(format!("kernels[{i}] ({:?}): no points", k.name));
            }
            for (j, p) in k.points.iter().enumerate() {
                let field = |f: &str| format!("kernels[{i}].points[{j}].{f} ({:?} {:?})", k.name, p.dims);
                limits::KERNEL_SECONDS.check(field("seconds"), p.seconds)?;
                limits::KERNEL_WORK.check(field("work"), p.work)?;
                limits::KERNEL_RATE.check(field("work / seconds"), p.rate())?;
            }
        }
        Ok(())
    }

    /// The link of `path` and `carrier`, if measured.
    pub fn link(&self, path: PathKind, carrier: Carrier) -> Option<&Link> {
        self.links.iter().find(|l| l.path == path && l.carrier == carrier)
    }

    /// The cost table of kernel `name`.
    ///
    /// # Errors
    /// One line naming the kernel, the kernels the file has, and the command to rerun.
    pub fn kernel(&self, name: &str) -> Result<&Kernel, String> {
        self.kernels.iter().find(|k| k.name == name).ok_or_else(|| {
            let have: Vec<&str> = self.kernels.iter().map(|k| k.name.as_str()).collect();
            format!(
                "the platform file has no cost table for kernel {name:?} (it has {}); \
                 a newer `dps-bench calibrate --out FILE` may measure it",
                have.join(", ")
            )
        })
    }
}

pub mod limits;

#[cfg(test)]
mod tests;

/// Every segment of a fit (named `field` in the TOML) in range.
fn check_fit(field: &str, fit: &[Segment]) -> Result<(), String> {
    for (j, g) in fit.iter().enumerate() {
        limits::LATENCY_US.check(format_args!("{field}[{j}].latency_us"), g.latency_us)?;
        limits::BYTES_PER_US.check(format_args!("{field}[{j}].bytes_per_us"), g.bytes_per_us)?;
    }
    Ok(())
}
