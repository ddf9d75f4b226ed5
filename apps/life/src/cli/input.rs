//! The options that name the world and the files, read and checked: the world (a random one
//! or an RLE pattern placed in it), the region, the viewer's block, the generation counts,
//! and the output paths (opened here, so a missing or read-only directory is refused before
//! the run). Sums of user numbers are checked: a position or size near `usize::MAX` is
//! refused, never wrapped around into the world.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use dps_harness::OutputFile;

use super::{Args, Export, Plan, Variant, Viewer, MAX_STEPS_PER_CALL};
use crate::layout::Rect;
use crate::output::{self, Format, Snapshots};
use crate::rle;
use crate::world::Source;

/// Reads and checks everything the options name, into a plan. Errors name the option (and
/// the file and line); the caller marks them as bad input.
pub(super) fn read(args: &Args) -> Result<Plan> {
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
    // `compare` runs --generations of each schedule, --view runs them again with calls, and
    // --view-process also as many with its calls paused, in turns.
    let view_phases = match (&view, args.view_process) {
        (None, _) => 0,
        (Some(_), false) => 1,
        (Some(_), true) => 2,
    };
    let phases = 1 + u64::from(args.variant == Variant::Compare) + view_phases;
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
            (args.export_region, "--export-region"),
        ];
        if let Some((_, option)) = parallel_only.iter().find(|(given, _)| *given) {
            bail!("{option} needs a parallel variant (--variant serial runs the kernel alone)");
        }
    }
    let snapshots = args
        .snapshot_every
        .map(|every| Snapshots { every, base: args.out.clone().unwrap_or_else(|| "life.png".into()) });
    let out = outputs(args, rect, snapshots.as_ref(), view)?;
    if args.view_process && !(1..=MAX_VIEW_FAN).contains(&args.view_fan) {
        bail!("--view-fan {} must be between 1 and {MAX_VIEW_FAN}", args.view_fan);
    }
    let serve = match args.serve_seconds {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= MAX_SERVE_SECONDS) => {
            bail!("--serve-seconds {s} must be a number of seconds above 0 and at most {MAX_SERVE_SECONDS}")
        }
        s => s.map(Duration::from_secs_f64),
    };
    let export = (args.export_region || args.view_process).then_some(Export { serve });
    let viewer = view.map(|block| Viewer {
        block,
        period: Duration::from_millis(args.view_period_ms),
        png_dir: args.view_png.clone(),
        process_fan: args.view_process.then_some(args.view_fan),
    });
    let mut standard = args.standard.clone();
    standard.runtime = args.runtime();
    Ok(Plan {
        variant: args.variant,
        source,
        size_from,
        wrap: args.wrap,
        generations: args.generations,
        warmup: args.warmup,
        total_generations,
        depth: args.depth,
        serial_depth: None,
        steps_per_call: args.steps_per_call,
        map: args.map.clone(),
        rect,
        out,
        snapshots,
        compare_serial: args.compare_serial,
        viewer,
        export,
        seed: args.seed.seed,
        standard,
    })
}

/// Most calls a --view-process client keeps in flight.
const MAX_VIEW_FAN: usize = 4096;

/// Longest --serve-seconds (a week).
const MAX_SERVE_SECONDS: f64 = 7.0 * 86400.0;

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

/// Parses a block size `WxH` given to `option`.
pub(super) fn block(option: &str, s: &str) -> Result<(usize, usize)> {
    let parsed = s.split_once('x').and_then(|(a, b)| Some((a.parse().ok()?, b.parse().ok()?)));
    match parsed.filter(|&(bw, bh): &(usize, usize)| bw > 0 && bh > 0) {
        Some(block) => Ok(block),
        None => bail!("{option} {s:?}: expected a block size such as 400x2400"),
    }
}

/// Parses --view `WxH` and checks that the block fits in the world.
fn view_block(s: &str, w: usize, h: usize) -> Result<(usize, usize)> {
    let (bw, bh) = block("--view", s)?;
    if bw > w || bh > h {
        bail!("--view {bw}x{bh}: the block is larger than the {w}x{h} world");
    }
    Ok((bw, bh))
}

/// Opens --out and proves that the snapshots' and the viewer's directories can be written
/// (a file opened there and dropped), before the run.
fn outputs(
    args: &Args,
    rect: Rect,
    snapshots: Option<&Snapshots>,
    view: Option<(usize, usize)>,
) -> Result<Option<(OutputFile, Format)>> {
    let region = format!("--region {} {} {} {}", rect.x, rect.y, rect.width, rect.height);
    let out = match &args.out {
        None => None,
        Some(path) => {
            let format = Format::of("--out", path)?;
            format.check_size(&region, rect.width, rect.height)?;
            Some((OutputFile::create("--out", path)?, format))
        }
    };
    if let Some(snapshots) = snapshots {
        Format::Png.check_size(&region, rect.width, rect.height)?;
        drop(OutputFile::create("--snapshot-every", &snapshots.path(snapshots.every))?);
    }
    if let Some(dir) = &args.view_png {
        if !dir.is_dir() {
            let why = if dir.exists() { "is not a directory" } else { "no such directory" };
            bail!("--view-png {}: {why}", dir.display());
        }
        if let Some((bw, bh)) = view {
            Format::Png.check_size("--view", bw, bh)?;
        }
        drop(OutputFile::create("--view-png", &output::block_path(dir, 0, 0))?);
    }
    Ok(out)
}
