//! Runs `client`: imports the striped file service a running `serve` exports, fans the
//! windows out through it (a split, the service as a leaf, a merge), checks that repeated
//! requests of a window got the same pixels, prints each window's checksum and writes the
//! windows as PNGs.

use std::time::Instant;

use anyhow::{ensure, Result};
use dps::Runtime;
use dps_harness::{bad_input, OutputFile};

use crate::cli::client::ClientPlan;
use crate::graph::window::{self, WindowPixels, WindowRequest};
use crate::raster::Raster;

/// Executes a `client` plan on every rank (rank 0 makes the call; every rank's threads of
/// `--map` may send requests).
///
/// # Errors
/// No such service (or one of other types), a window the service refused, a lost
/// connection, an output that cannot be written.
pub(super) fn execute(plan: &ClientPlan) -> Result<()> {
    let rt = plan.runtime.start()?;
    let outcome = fetch(plan, &rt);
    let shutdown = rt.shutdown();
    outcome.and(shutdown.map_err(Into::into))
}

fn fetch(plan: &ClientPlan, rt: &Runtime) -> Result<()> {
    let main = rt.collection("main", "0", |_| ())?;
    let callers = rt.collection("callers", &plan.map, |_| ())?;
    let service = rt.import::<WindowRequest, WindowPixels>(&plan.service)?;
    let graph = rt.graph("filter_client", window::client_path(&main, &callers, &service, plan.in_flight))?;
    if !rt.is_root() {
        return Ok(());
    }
    let n = plan.windows.len();
    let requests: Vec<WindowRequest> = (0..n * plan.repeat)
        .map(|k| {
            let (x, y, w, h) = plan.windows[k % n];
            WindowRequest { id: k as u64, x: x as u64, y: y as u64, w: w as u64, h: h as u64 }
        })
        .collect();
    let clock = Instant::now();
    let replies = rt.call(&graph, requests)?;
    let seconds = clock.elapsed().as_secs_f64();
    ensure!(replies.len() == n * plan.repeat, "{} replies to {} requests", replies.len(), n * plan.repeat);
    let mut first: Vec<Option<&WindowPixels>> = vec![None; n];
    for reply in &replies {
        if let Some(why) = &reply.error {
            bad_input!("service \"{}\" refused {why}", plan.service);
        }
        if let Some(why) = &reply.failed {
            anyhow::bail!("service \"{}\" could not read the window: {why}", plan.service);
        }
        let i = reply.request.id as usize % n;
        match first[i] {
            None => first[i] = Some(reply),
            Some(f) => ensure!(f.pixels[..] == reply.pixels[..], "window {i}: two requests got different pixels"),
        }
    }
    for (i, reply) in first.iter().enumerate() {
        let reply = reply.expect("every window answered (counted above)");
        let r = reply.request;
        println!(
            "window {i} ({} {} {} {}): {} bytes, fnv1a64 {:016x}",
            r.x,
            r.y,
            r.w,
            r.h,
            reply.pixels.len(),
            fnv1a64(&reply.pixels)
        );
        if let Some(dir) = &plan.out_dir {
            let file = OutputFile::create("--out-dir", &dir.join(format!("window{i}.png")))?;
            let raster =
                Raster { width: r.w as usize, height: r.h as usize, depth: reply.depth, data: reply.pixels.to_vec() };
            raster.write_png(file)?;
        }
    }
    let bytes: usize = replies.iter().map(|r| r.pixels.len()).sum();
    println!(
        "read {n} windows ({} requests, {bytes} bytes) through service \"{}\" (graph {}) in {seconds:.3} s: {:.1} MB/s, {:.0} requests/s",
        replies.len(),
        service.name(),
        service.graph(),
        bytes as f64 / seconds / 1e6,
        replies.len() as f64 / seconds
    );
    Ok(())
}

/// The 64-bit FNV-1a hash of `bytes`: a checksum to compare windows by.
fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}
