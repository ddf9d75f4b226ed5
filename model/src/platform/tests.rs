//! The platform file's round trip, each refusal, and the loader on arbitrary text.

use std::path::Path;

use proptest::prelude::*;

use super::*;
use crate::fit::Segment;

fn machine() -> Machine {
    Machine { hostname: "node1".into(), cpu_model: "Test CPU 3000".into(), cpus: 8, blas: None }
}

fn now() -> jiff::Timestamp {
    "2026-11-24T00:00:00Z".parse().unwrap()
}

fn sample() -> Platform {
    let segment = |from, to, l, b| Segment { from_bytes: from, to_bytes: to, latency_us: l, bytes_per_us: b };
    let mut p = Platform {
        header: Header {
            format: FORMAT,
            dps_version: DPS_VERSION.into(),
            date: "2026-11-20T12:00:00Z".into(),
            hosts: vec!["node1".into()],
            cpu_model: "Test CPU 3000".into(),
            cpus: 8,
            cpu_share: None,
            blas: "OpenBLAS 0.3.21 Zen".into(),
            ranks: 2,
            quick: true,
            load_average: 0.5,
            warnings: vec![],
            measured_hash: String::new(),
        },
        links: vec![Link {
            path: PathKind::IntraNode,
            carrier: Carrier::Dps,
            ranks: [0, 1],
            sizes: vec![1, 4096, 1 << 20],
            times_us: vec![2.5, 4.0, 180.25],
            fit: vec![segment(1, 4096, 2.4, 3000.0), segment(8192, 1 << 20, 8.0, 6100.5)],
            stream: None,
        }],
        overheads: Overheads {
            measurable: false,
            note: "2 ranks on 2 cores".into(),
            send: TransferCost { us_per_message: 1.5, ns_per_byte: 0.05 },
            receive: TransferCost { us_per_message: 2.5, ns_per_byte: 0.15 },
            co_run_slowdown: 1.08,
        },
        kernels: vec![Kernel {
            name: "gemm".into(),
            dims: "m,n,k".into(),
            work_unit: "flop".into(),
            points: vec![
                KernelPoint { dims: vec![64, 64, 64], seconds: 2.0e-5, work: 524_288.0 },
                KernelPoint { dims: vec![256, 256, 256], seconds: 1.0e-3, work: 33_554_432.0 },
            ],
        }],
    };
    p.seal();
    p
}

fn parse(text: &str) -> Result<Platform, PlatformError> {
    Platform::parse(text, Path::new("p.toml"), &machine(), now())
}

fn message(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn a_platform_file_round_trips() {
    let p = sample();
    let text = p.to_toml();
    assert!(text.starts_with("# DPS platform file"), "{text}");
    assert_eq!(parse(&text).unwrap(), p);
    // And through a file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.toml");
    std::fs::write(&path, &text).unwrap();
    let loaded = Platform::parse(&std::fs::read_to_string(&path).unwrap(), &path, &machine(), now()).unwrap();
    assert_eq!(loaded, p);
    assert!(p.link(PathKind::IntraNode, Carrier::Dps).is_some() && p.link(PathKind::InterNode, Carrier::Dps).is_none());
}

#[test]
fn a_links_transfer_is_its_time_less_the_latency_of_the_segment_that_covers_the_size() {
    let link = &sample().links[0];
    assert_eq!(link.transfer_us(3000), 1.0);
    assert_eq!(link.time_us(3000), 3.4);
    // Above 4 KiB the second segment's latency (8 µs) is the one left out.
    assert_eq!(link.transfer_us(1 << 20), (1 << 20) as f64 / 6100.5);
    assert_eq!(link.transfer_us(0), 0.0);
}

/// A stream measured on the sample's link: 2 µs a message plus 1 µs per 8000 bytes.
fn with_stream(p: &mut Platform) {
    let link = &mut p.links[0];
    let times_us = link.sizes.iter().map(|&s| 2.0 + s as f64 / 8000.0).collect();
    let fit = vec![Segment { from_bytes: 1, to_bytes: 1 << 20, latency_us: 2.0, bytes_per_us: 8000.0 }];
    link.stream = Some(Stream { times_us, fit });
}

#[test]
fn where_a_stream_was_measured_a_message_holds_the_link_at_the_streams_bandwidth() {
    let mut p = sample();
    with_stream(&mut p);
    p.seal();
    assert_eq!(parse(&p.to_toml()).unwrap(), p, "round trip with the stream");
    let link = &p.links[0];
    assert_eq!(link.transfer_us(1 << 20), (1 << 20) as f64 / 8000.0);
    assert_eq!(link.bytes_per_us(64), 8000.0);
    // A lone message's time stays the ping-pong's.
    assert_eq!(link.time_us(3000), 3.4);
    // Files calibrated before streams were measured have none, and read as before.
    assert!(!sample().to_toml().contains("stream"));
    assert_eq!(sample().links[0].bytes_per_us(64), 3000.0);
}

#[test]
fn every_refusal_is_one_line_naming_the_file_and_the_command() {
    let good = sample().to_toml();
    let resealed = |edit: &dyn Fn(&mut Platform)| {
        let mut p = sample();
        edit(&mut p);
        p.seal();
        p.to_toml()
    };
    let cases: Vec<(String, &str)> = vec![
        (good.replace("format = 3", "format = 1"), "format 1, this dps reads format 3"),
        (good.replace(&format!("dps_version = \"{DPS_VERSION}\""), "dps_version = \"0.0.1\""), "made by dps 0.0.1"),
        (
            good.replace("hosts = [\"node1\"]", "hosts = [\"elsewhere\"]"),
            "measured on elsewhere, not on this host (node1)",
        ),
        (good.replace("Test CPU 3000", "Other CPU"), "measured on a Other CPU with 8 CPUs"),
        (good.replace("cpus = 8", "cpus = 4"), "with 4 CPUs, this is a Test CPU 3000 with 8"),
        (good.replace("2026-11-20T12:00:00Z", "2026-01-01T00:00:00Z"), "days ago"),
        (good.replace("2026-11-20T12:00:00Z", "2027-01-01T00:00:00Z"), "in the future"),
        (good.replace("2026-11-20T12:00:00Z", "yesterday"), "not an RFC 3339 time"),
        (good.replace("180.25", "180.5"), "do not match its measured_hash"),
        (
            resealed(&|p| p.overheads.receive.ns_per_byte = -1.0),
            "overheads.receive.ns_per_byte = -1: below the limit of 0",
        ),
        (resealed(&|p| p.overheads.co_run_slowdown = 0.5), "overheads.co_run_slowdown = 0.5"),
        (resealed(&|p| p.links[0].times_us.pop().map_or((), drop)), "3 sizes and 2 times"),
        (resealed(&|p| p.kernels[0].points[0].seconds = 0.0), "kernels[0].points[0].seconds (\"gemm\""),
        (resealed(&|p| p.links[0].fit[0].bytes_per_us = -1.0), "links[0].fit[0].bytes_per_us = -1: below the limit"),
        (
            resealed(&|p| {
                with_stream(p);
                p.links[0].stream.as_mut().map_or((), |s| s.times_us.truncate(1))
            }),
            "3 sizes and 1 stream times",
        ),
        (
            resealed(&|p| {
                with_stream(p);
                p.links[0].stream.as_mut().map_or((), |s| s.fit[0].bytes_per_us = 0.0)
            }),
            "links[0].stream.fit[0].bytes_per_us = 0: below the limit",
        ),
        (
            resealed(&|p| {
                with_stream(p);
                p.links[0].stream.as_mut().map_or((), |s| s.fit.clear())
            }),
            "no stream fit",
        ),
        (good.replace("ranks = 2\n", "ranks = 2\ncolour = 1\n"), "p.toml:"),
        ("[header]\nformat = 3\n".into(), "missing field"),
        ("links = 3\n".into(), "not a platform file"),
        ("[header\n".into(), "p.toml:1"),
        (String::new(), "not a platform file"),
    ];
    for (text, words) in cases {
        let m = message(&text);
        assert!(m.contains(words), "{m:?} does not contain {words:?}");
        assert!(m.contains("p.toml") && m.contains("dps-bench calibrate --out p.toml"), "{m}");
        assert!(!m.contains('\n'), "{m:?} is more than one line");
    }
}

/// A platform file with `edit` applied and sealed again (so only the value check can
/// refuse it), parsed.
fn resealed(edit: impl Fn(&mut Platform)) -> Result<Platform, PlatformError> {
    let mut p = sample();
    edit(&mut p);
    p.seal();
    parse(&p.to_toml())
}

/// Issue 27: values that overflowed the simulated clock (the prediction wrapped around to
/// less than with normal values) are refused, naming the field and the limit.
#[test]
fn values_beyond_the_simulated_clock_are_refused_with_the_field_and_the_limit() {
    type Edit = fn(&mut Platform, f64);
    let latency: Edit = |p, x| p.links[0].fit[0].latency_us = x;
    let send: Edit = |p, x| p.overheads.send.us_per_message = x;
    let per_byte: Edit = |p, x| p.overheads.receive.ns_per_byte = x;
    let bandwidth: Edit = |p, x| p.links[0].fit[1].bytes_per_us = x;
    let time: Edit = |p, x| p.links[0].times_us[2] = x;
    let kernel: Edit = |p, x| p.kernels[0].points[1].seconds = x;
    let rate: Edit = |p, x| p.kernels[0].points[0].work = x;
    let load: Edit = |p, x| p.header.load_average = x;
    let cases: &[(Edit, f64, &str)] = &[
        (latency, 1e17, "links[0].fit[0].latency_us = 1e17: above the limit of 3.6e9 µs (1 hour)"),
        (latency, 1e30, "links[0].fit[0].latency_us = 1e30: above the limit of 3.6e9 µs (1 hour)"),
        (latency, 1e15, "links[0].fit[0].latency_us = 1e15: above the limit of 3.6e9 µs"),
        (latency, f64::INFINITY, "links[0].fit[0].latency_us = inf: not a finite number"),
        (send, 1e20, "overheads.send.us_per_message = 1e20: above the limit of 3.6e9 µs (1 hour)"),
        (send, f64::NAN, "overheads.send.us_per_message = NaN: not a finite number"),
        (
            bandwidth,
            1e-12,
            "links[0].fit[1].bytes_per_us = 1e-12: below the limit of 1e-6 bytes/µs (1 byte per second)",
        ),
        (per_byte, 1e12, "overheads.receive.ns_per_byte = 1e12: above the limit of 1e9 ns/byte (1 byte per second)"),
        (time, 1e30, "links[0].times_us[2] = 1e30: above the limit of 3.6e9 µs"),
        (kernel, 1e20, "kernels[0].points[1].seconds (\"gemm\" [256, 256, 256]) = 1e20: above the limit of 3600 s"),
        (rate, 1e-5, "kernels[0].points[0].work / seconds (\"gemm\" [64, 64, 64]) = 0.5: below the limit of 1 per s"),
        (load, -1.0, "header.load_average = -1: below the limit of 0"),
    ];
    for &(edit, value, words) in cases {
        let m = resealed(|p| edit(p, value)).unwrap_err().to_string();
        assert!(m.contains(words), "{value}: {m:?} does not contain {words:?}");
        assert!(m.starts_with("platform file p.toml: ") && m.ends_with("`dps-bench calibrate --out p.toml`"), "{m}");
    }
    // At the limits: accepted.
    for (edit, value) in [(latency, 3.6e9), (send, 3.6e9), (bandwidth, 1e-6), (per_byte, 1e9), (kernel, 3600.0)] {
        if let Err(e) = resealed(|p| edit(p, value)) {
            panic!("{value} at its limit refused: {e}");
        }
    }
}

#[test]
fn a_file_measured_with_other_blas_kernels_is_refused_where_the_program_runs_blas() {
    let text = sample().to_toml();
    let runs = |blas: Option<&str>| Machine { blas: blas.map(String::from), ..machine() };
    let m = Platform::parse(&text, Path::new("p.toml"), &runs(Some("OpenBLAS 0.3.21 Prescott")), now())
        .unwrap_err()
        .to_string();
    assert!(m.contains("measured with OpenBLAS 0.3.21 Zen, this program runs OpenBLAS 0.3.21 Prescott"), "{m}");
    assert!(m.contains("dps-bench calibrate --out p.toml") && !m.contains('\n'), "{m}");
    // The same kernels, a program without BLAS, and a file that recorded none: accepted.
    assert!(Platform::parse(&text, Path::new("p.toml"), &runs(Some("OpenBLAS 0.3.21 Zen")), now()).is_ok());
    assert!(Platform::parse(&text, Path::new("p.toml"), &runs(None), now()).is_ok());
    let unrecorded = {
        let mut p = sample();
        p.header.blas.clear();
        p.to_toml()
    };
    assert!(Platform::parse(&unrecorded, Path::new("p.toml"), &runs(Some("OpenBLAS 0.3.21 Prescott")), now()).is_ok());
}

#[test]
fn the_line_of_a_fault_is_named() {
    let text = sample().to_toml().replace("cpus = 8", "cpus = \"eight\"");
    let line = text.lines().position(|l| l.starts_with("cpus")).unwrap() + 1;
    assert!(message(&text).contains(&format!("p.toml:{line}:")), "{}", message(&text));
}

#[test]
fn a_missing_file_names_the_command_that_makes_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("none.toml");
    let m = Platform::load(&path).unwrap_err().to_string();
    assert!(m.contains("not found") && m.contains(&format!("dps-bench calibrate --out {}", path.display())), "{m}");
}

#[test]
fn kernel_costs_are_looked_up_and_scaled() {
    let p = sample();
    let gemm = p.kernel("gemm").unwrap();
    assert_eq!(gemm.seconds(&[64, 64, 64], 1.0), Some(2.0e-5));
    // 200 is nearer 256 than 64 on a log scale: its rate scales the work.
    let flops = 2.0 * 200f64.powi(3);
    let s = gemm.seconds(&[200, 200, 200], flops).unwrap();
    assert!((s - flops / (33_554_432.0 / 1.0e-3)).abs() < 1e-12, "{s}");
    // A panel is matched to the panel of the nearest shape, not to a square block.
    let getrf = Kernel {
        name: "getrf".into(),
        dims: "m,n".into(),
        work_unit: "flop".into(),
        points: vec![
            KernelPoint { dims: vec![128, 128], seconds: 1.0, work: 1.0 },
            KernelPoint { dims: vec![512, 128], seconds: 1.0, work: 4.0 },
            KernelPoint { dims: vec![256, 256], seconds: 1.0, work: 2.0 },
        ],
    };
    assert_eq!(getrf.seconds(&[600, 128], 8.0), Some(2.0), "the 512x128 panel's rate");
    assert_eq!(getrf.seconds(&[100, 100], 1.0), Some(1.0), "the 128x128 block's rate");
    let m = p.kernel("median").unwrap_err();
    assert!(m.contains("\"median\"") && m.contains("gemm") && m.contains("dps-bench calibrate"), "{m}");
}

#[test]
fn this_machine_is_described() {
    let m = Machine::this();
    assert!(m.cpus >= 1 && !m.hostname.is_empty() && !m.cpu_model.is_empty(), "{m:?}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_is_an_error_never_a_panic(text in "\\PC{0,400}") {
        let error = parse(&text).unwrap_err().to_string();
        prop_assert!(!error.contains('\n'), "{error:?}");
    }

    #[test]
    fn toml_like_text_is_an_error_never_a_panic(
        text in "(\\[header\\]\n|format = [0-9]\n|[a-z_]{1,8} = (\"[a-z]*\"|[0-9.e-]{1,6}|\\[\\])\n|\\[\\[links\\]\\]\n){0,12}"
    ) {
        prop_assert!(parse(&text).is_err());
    }

    #[test]
    fn a_truncated_or_damaged_file_is_an_error(cut in 0usize..4000, at in 0usize..4000, byte in any::<u8>()) {
        let text = sample().to_toml();
        let body = text.trim_end();
        // Cut inside the content: refused, unless nothing was lost (cutting the ".0" off
        // the last "33554432.0" leaves the same number; found by this test).
        let cut = cut % body.len();
        if let Some(truncated) = body.get(..cut) {
            if let Ok(p) = parse(truncated) {
                prop_assert_eq!(p, sample(), "{}", truncated);
            }
        }
        // One byte changed anywhere: parsed or refused, never a panic.
        let mut bytes = text.clone().into_bytes();
        let at = at % bytes.len();
        bytes[at] = byte;
        if let Ok(damaged) = String::from_utf8(bytes) {
            let _ = parse(&damaged);
        }
    }
}
