//! Everything the options and files say, read and checked before any work: the world (a
//! random one or an RLE pattern placed in it), the region, the viewer's block, the
//! generation counts, and the output paths (opened here, so a missing or read-only
//! directory is refused before the run). Sums of user numbers are checked: a position or
//! size near `usize::MAX` is refused, never wrapped around into the world. The memory check
//! ([`Input::check_memory`]) comes once the bands and their depth are known.
//!
//! Every rank runs the same checks on the same input and reaches the same verdict, so a
//! refused run ends on every rank before the runtime starts (or, for the checks that need
//! the job's size, all together).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{bail, Result};
use dps_harness::OutputFile;

use crate::footprint::{self, sum};
use crate::graph::Rect;
use crate::output::Format;
use crate::report::uses_naive;
use crate::rle;
use crate::run::{Args, Variant};
use crate::world::Source;

/// Most steps in a call of `overlap`: its graph has a node per step.
pub(crate) const MAX_STEPS_PER_CALL: usize = 1024;

/// The checked input.
#[derive(Debug)]
pub(crate) struct Input {
    /// The initial world.
    pub source: Source,
    /// What --out and the snapshots write (--region, else the whole world).
    pub rect: Rect,
    /// The viewer's block (--view).
    pub view: Option<(usize, usize)>,
    /// --out, open; rank 0 writes it, the other ranks drop theirs.
    pub out: Option<(OutputFile, Format)>,
    /// Generations the world runs in all: --warmup, --generations, and --generations again
    /// with --view.
    pub total_generations: u64,
    /// The options that set the world's size, for messages: `--random 100 100`.
    pub size_from: String,
}

/// Reads and checks everything the options name. Errors name the option (and the file and
/// line); the caller marks them as bad input.
pub(crate) fn check(args: &Args) -> Result<Input> {
    let (source, size_from) = world(args)?;
    let (w, h) = (source.width(), source.height());
    let rect = match &args.region {
        None => Rect { x: 0, y: 0, width: w, height: h },
        Some(v) => {
            let r = Rect { x: v[0], y: v[1], width: v[2], height: v[3] };
            let inside = |at: usize, size: usize, room: usize| at.checked_add(size).is_some_and(|end| end <= room);
            if r.width == 0 || r.height == 0 || !inside(r.x, r.width, w) || !inside(r.y, r.height, h) {
                bail!("--region {} {} {} {} is not inside the {w}x{h} world", r.x, r.y, r.width, r.height);
            }
            r
        }
    };
    if let Some(k) = args.steps_per_call.filter(|&k| k == 0 || k > MAX_STEPS_PER_CALL) {
        bail!(
            "--steps-per-call {k} must be between 1 and {MAX_STEPS_PER_CALL} (the overlap graph has a node per step)"
        );
    }
    if args.depth == Some(0) {
        bail!("--depth must be at least 1");
    }
    if args.snapshot_every == Some(0) {
        bail!("--snapshot-every must be at least 1");
    }
    if args.generations == 0 {
        bail!("--generations must be at least 1 (the run times its generations)");
    }
    let view = args.view.as_deref().map(|s| view_block(s, w, h)).transpose()?;
    // `compare` runs --generations of each schedule, --view runs them again with calls.
    let phases = 1 + u64::from(args.variant == Variant::Compare) + u64::from(view.is_some());
    let total_generations = args.generations.checked_mul(phases).and_then(|g| g.checked_add(args.warmup));
    let Some(total_generations) = total_generations else {
        bail!(
            "--warmup {} and --generations {}{}: more generations than a 64-bit counter holds",
            args.warmup,
            args.generations,
            if phases > 1 { format!(" ({phases} times, with --variant compare or --view)") } else { String::new() }
        );
    };
    if args.variant == Variant::Serial {
        let parallel_only = [
            (view.is_some(), "--view"),
            (args.snapshot_every.is_some(), "--snapshot-every"),
            (args.compare_serial, "--compare-serial"),
        ];
        if let Some((_, option)) = parallel_only.iter().find(|(given, _)| *given) {
            bail!("{option} needs a parallel variant (--variant serial runs the kernel alone)");
        }
    }
    let out = outputs(args, rect, view)?;
    Ok(Input { source, rect, view, out, total_generations, size_from })
}

/// The world: an RLE pattern (--rle, --size, --at) or a random one (--random, --density).
fn world(args: &Args) -> Result<(Source, String)> {
    let Some(path) = &args.rle else {
        let (width, height) = pair(&args.random).unwrap_or((1024, 1024));
        if !(0.0..=1.0).contains(&args.density) {
            bail!("--density {} must be between 0 and 1", args.density);
        }
        if width == 0 || height == 0 {
            bail!("--random {width} {height}: the world must have at least one cell");
        }
        let source = Source::Random { width, height, density: args.density, seed: args.seed.seed };
        let from = if args.random.is_some() {
            format!("--random {width} {height}")
        } else {
            "the default 1024x1024 world".into()
        };
        return Ok((source, from));
    };
    let (pattern, line) = rle::read(path).map_err(|e| anyhow::anyhow!("--rle {e:#}"))?;
    let (width, height) = pair(&args.size).unwrap_or((pattern.width.max(1), pattern.height.max(1)));
    if width == 0 || height == 0 {
        bail!("--size {width} {height}: the world must have at least one cell");
    }
    let at =
        pair(&args.at).unwrap_or((width.saturating_sub(pattern.width) / 2, height.saturating_sub(pattern.height) / 2));
    let source = Source::pattern(width, height, Arc::new(pattern), at)
        .map_err(|why| anyhow::anyhow!("--rle {}:line {line}: {why} (see --at and --size)", path.display()))?;
    let from = match &args.size {
        Some(_) => format!("--size {width} {height}"),
        None => format!("--rle {} (x = {width}, y = {height})", path.display()),
    };
    Ok((source, from))
}

fn pair(v: &Option<Vec<usize>>) -> Option<(usize, usize)> {
    v.as_ref().map(|v| (v[0], v[1]))
}

/// Parses --view `WxH` and checks that the block fits in the world.
fn view_block(s: &str, w: usize, h: usize) -> Result<(usize, usize)> {
    let parsed = s.split_once('x').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    let Some((bw, bh)) = parsed.filter(|&(bw, bh): &(usize, usize)| bw > 0 && bh > 0) else {
        bail!("--view {s:?}: expected a block size such as 400x2400");
    };
    if bw > w || bh > h {
        bail!("--view {bw}x{bh}: the block is larger than the {w}x{h} world");
    }
    Ok((bw, bh))
}

/// The path of the snapshot after `generation` generations: after --out (default
/// `life.png`), `life-000010.png`.
pub(crate) fn snapshot_path(args: &Args, generation: u64) -> PathBuf {
    let base = args.out.clone().unwrap_or_else(|| PathBuf::from("life.png"));
    PathBuf::from(format!("{}-{generation:06}.png", base.with_extension("").display()))
}

/// The path of the viewer's `n`th block, of generation `generation`, in `dir`.
pub(crate) fn block_path(dir: &Path, n: usize, generation: u64) -> PathBuf {
    dir.join(format!("block-{n:05}-gen{generation}.png"))
}

/// Opens --out and proves that the snapshots' and the viewer's directories can be written
/// (a file opened there and dropped), before the run.
fn outputs(args: &Args, rect: Rect, view: Option<(usize, usize)>) -> Result<Option<(OutputFile, Format)>> {
    let region = format!("--region {} {} {} {}", rect.x, rect.y, rect.width, rect.height);
    let out = match &args.out {
        None => None,
        Some(path) => {
            let format = Format::of("--out", path)?;
            format.check_size(&region, rect.width, rect.height)?;
            Some((OutputFile::create("--out", path)?, format))
        }
    };
    if let Some(k) = args.snapshot_every {
        Format::Png.check_size(&region, rect.width, rect.height)?;
        drop(OutputFile::create("--snapshot-every", &snapshot_path(args, k))?);
    }
    if let Some(dir) = &args.view_png {
        if !dir.is_dir() {
            let why = if dir.exists() { "is not a directory" } else { "no such directory" };
            bail!("--view-png {}: {why}", dir.display());
        }
        if let Some((bw, bh)) = view {
            Format::Png.check_size("--view", bw, bh)?;
        }
        drop(OutputFile::create("--view-png", &block_path(dir, 0, 0))?);
    }
    Ok(out)
}

impl Input {
    /// Refuses the run when the ranks on this node need more memory than it has: the
    /// `bands` bands (double-buffered, with their ghost rows and the rows in flight), and
    /// what rank 0 adds (the world gathered and the serial reference for --verify, the
    /// region gathered and encoded for --out and the snapshots, the serial copy of
    /// --compare-serial) and the viewer its blocks. The total is shared evenly by the
    /// `ranks` in the figure given to [`dps_harness::check_memory`], so every rank reaches
    /// the same verdict (and the node's total is exact on one node, whatever --map says).
    pub(crate) fn check_memory(&self, args: &Args, ranks: usize, bands: usize, depth: usize) -> Result<()> {
        let (w, h) = (self.source.width(), self.source.height());
        let mut rank0 = self.rank0_extra(args, depth);
        rank0 = rank0.saturating_add(if args.check.verify { footprint::gathered(w, h) } else { 0 });
        let viewer = match (self.view, &args.view_png) {
            (Some((bw, bh)), Some(_)) => sum(&[footprint::gathered(bw, bh), footprint::png(bw, bh)]),
            (Some((bw, bh)), None) => footprint::gathered(bw, bh),
            (None, _) => 0,
        };
        let total = sum(&[footprint::bands(w, h, bands, depth), rank0, viewer]);
        let per_rank = total.div_ceil(ranks.max(1) as u64);
        dps_harness::check_memory(&self.size_from, per_rank, per_rank)
    }

    /// As [`check_memory`](Self::check_memory), for `--variant serial`: the world alone.
    pub(crate) fn check_serial_memory(&self, args: &Args, depth: usize) -> Result<()> {
        let (w, h) = (self.source.width(), self.source.height());
        let need = sum(&[footprint::serial_world(w, h, depth), self.rank0_extra(args, depth)]);
        dps_harness::check_memory(&self.size_from, need, need)
    }

    /// What rank 0 holds beyond its bands, at its peak: the largest of the --verify
    /// reference and an output being written, plus the serial copy of --compare-serial.
    fn rank0_extra(&self, args: &Args, depth: usize) -> u64 {
        let (w, h) = (self.source.width(), self.source.height());
        let reference = match (args.check.verify, uses_naive(w, h, self.total_generations)) {
            (false, _) => 0,
            (true, true) => sum(&[footprint::bytes(w, h).saturating_mul(2), footprint::serial_world(w, h, 1)]),
            (true, false) => footprint::serial_world(w, h, 1),
        };
        let (rw, rh) = (self.rect.width, self.rect.height);
        let png = args.snapshot_every.is_some() || self.out.as_ref().is_some_and(|(_, f)| *f == Format::Png);
        let output = if args.out.is_some() || args.snapshot_every.is_some() {
            sum(&[footprint::gathered(rw, rh), if png { footprint::png(rw, rh) } else { 0 }])
        } else {
            0
        };
        let serial = if args.compare_serial { footprint::serial_world(w, h, depth) } else { 0 };
        reference.max(output).saturating_add(serial)
    }
}
