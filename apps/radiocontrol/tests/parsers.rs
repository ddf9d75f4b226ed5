//! Property tests over every parser of the formats: watch records, result records and
//! headers, ground-truth lines, and the watchdog's command lines. Arbitrary bytes never
//! panic; what is encoded reads back; any damaged record is refused.

use dps_radiocontrol::data::{
    parse_truth_line, Manifest, Truth, WatchRecord, FORMAT, FORMAT_1, FORMAT_2, WATCH_RECORD,
};
use dps_radiocontrol::kernel::Match;
use dps_radiocontrol::launcher::with_ranks;
use dps_radiocontrol::results::{
    check_header, check_record, decode_payload, encode_payload, encode_record, header, record_len,
};
use proptest::prelude::*;

fn manifest(watches: usize, stations: usize, hours: usize, id: u64) -> Manifest {
    Manifest::new(watches, stations, hours, 1, id)
}

proptest! {
    #[test]
    fn watch_records_read_back_and_garbage_never_panics(
        minute in 0u16..1440, flags in 0u8..2, temp in any::<i8>(), other_flags in 2u8..,
        scale in any::<f32>(), reserved in 0usize..7,
        env in proptest::collection::vec(any::<u8>(), 80), junk in proptest::collection::vec(any::<u8>(), WATCH_RECORD),
    ) {
        let rec = WatchRecord { minute, flags, temperature: temp, envelope: env.try_into().unwrap() };
        prop_assert_eq!(WatchRecord::decode(&rec.encode(), usize::from(minute)), Ok(rec));
        prop_assert!(WatchRecord::decode(&rec.encode(), usize::from(minute) + 1).is_err());
        // Every field that changes the record's meaning is checked: flags, scale, reserved.
        let mut bad = rec.encode();
        bad[2] = other_flags;
        prop_assert!(WatchRecord::decode(&bad, usize::from(minute)).unwrap_err().contains("flags"));
        let mut bad = rec.encode();
        bad[4..8].copy_from_slice(&scale.to_le_bytes());
        prop_assert_eq!(WatchRecord::decode(&bad, usize::from(minute)).is_ok(), scale == 1.0);
        let mut bad = rec.encode();
        bad[8 + reserved] = 1;
        prop_assert!(WatchRecord::decode(&bad, usize::from(minute)).unwrap_err().contains("reserved"));
        let junk: [u8; WATCH_RECORD] = junk.try_into().unwrap();
        let _ = WatchRecord::decode(&junk, 0);
    }

    #[test]
    fn result_records_read_back_and_every_damage_is_refused(
        watches in 1usize..4, stations in 1usize..4, hours in 1usize..3, id in any::<u64>(),
        seed in any::<u64>(), flip in any::<prop::sample::Index>(), bit in 0u8..8, cut in any::<prop::sample::Index>(),
    ) {
        let m = manifest(watches, stations, hours, id);
        let job = (seed as usize) % m.jobs();
        let matches: Vec<Match> = (0..60 * watches)
            .map(|i| Match { r: (i as f32 * 0.01) - 0.3, lag: (i * 7 % 6001) as u16, flags: (i % 3) as u16 })
            .collect();
        let payload = encode_payload(&matches);
        prop_assert_eq!(decode_payload(&payload), matches);
        let rec = encode_record(&m, job, &payload);
        prop_assert_eq!(rec.len(), record_len(watches));
        prop_assert_eq!(check_record(&m, job, &rec), Some(&payload[..]));
        prop_assert!(check_record(&m, (job + 1) % (m.jobs() + 1), &rec).is_none() || m.jobs() == 1 && job == 0);
        let mut damaged = rec.clone();
        damaged[flip.index(rec.len())] ^= 1 << bit;
        prop_assert!(check_record(&m, job, &damaged).is_none(), "a flipped bit passed");
        prop_assert!(check_record(&m, job, &rec[..cut.index(rec.len())]).is_none(), "a torn record passed");
        // Headers: this data set's passes, another's and garbage are refused.
        prop_assert_eq!(check_header(&m, &header(&m)), None);
        let other = manifest(watches, stations, hours, id ^ 1);
        prop_assert!(check_header(&m, &header(&other)).unwrap().contains("another data set"));
        let mut h = header(&m);
        h[flip.index(64)] ^= 1 << bit;
        prop_assert!(check_header(&m, &h).is_some());
        prop_assert!(check_header(&m, &rec[..cut.index(rec.len()).min(63)]).is_some());
    }

    #[test]
    fn truth_lines_read_back_and_garbage_is_an_error_not_a_panic(
        w in 0usize..10_000, minute in 0usize..1440, s in 0usize..1000, lag in 0usize..6001, junk in ".{0,40}",
    ) {
        prop_assert_eq!(parse_truth_line(&format!("{w},{minute},listen,{s},{lag}")).unwrap(), (w, minute, Truth::Listen { station: s, lag }));
        prop_assert_eq!(parse_truth_line(&format!("{w},{minute},noise,,")).unwrap(), (w, minute, Truth::Noise));
        prop_assert!(parse_truth_line(&format!("{w},{minute},off,{s},")).is_err(), "an off minute with a station");
        let _ = parse_truth_line(&junk);
    }

    #[test]
    fn the_watchdog_only_changes_the_launchers_rank_count(n in 1usize..64, words in proptest::collection::vec("[a-z=-]{1,8}", 0..6)) {
        let mut cmd: Vec<String> = vec!["mpirun".into(), "-n".into(), n.to_string(), "dps-radiocontrol".into()];
        cmd.extend(words);
        let lowered = with_ranks(&cmd, n.saturating_sub(1).max(1));
        prop_assert_eq!(&lowered[2], &n.saturating_sub(1).max(1).to_string());
        prop_assert_eq!(&lowered[3..], &cmd[3..]);
    }
}

/// The manifest gets the platform file's rigour: unknown fields refused, and from format 2
/// a checksum over every field (so an edited size, seed, id, truth or stations hash is
/// refused); formats 1 (no checksum) and 2 (no stations hash) are still read.
#[test]
fn the_manifest_is_sealed_and_format_1_still_reads() {
    let m = manifest(20, 5, 2, 0xabc).sealed("fnv1a64:0123456789abcdef".into(), "fnv1a64:fedcba9876543210".into());
    assert_eq!(m.format, FORMAT);
    let text = serde_json::to_string_pretty(&m).unwrap();
    assert_eq!(Manifest::parse(&text), Ok(m.clone()));
    for (from, to) in [
        ("\"watches\": 20", "\"watches\": 10"),
        ("\"stations\": 5", "\"stations\": 4"),
        ("\"hours\": 2", "\"hours\": 1"),
        ("\"seed\": 1", "\"seed\": 2"),
        ("\"dataset_id\": 2748", "\"dataset_id\": 2749"),
        ("0123456789abcdef", "0123456789abcdee"),
        ("fedcba9876543210", "fedcba9876543211"),
    ] {
        let edited = text.replace(from, to);
        assert_ne!(edited, text, "{from}");
        let e = Manifest::parse(&edited).unwrap_err();
        assert!(e.contains("field `checksum`") && e.contains("does not match"), "{from}: {e}");
    }
    let unknown = text.replace("\"seed\"", "\"extra\": 1, \"seed\"");
    assert!(Manifest::parse(&unknown).unwrap_err().contains("unknown field `extra`"));
    let unsealed = text.replace("\"checksum\"", "\"checksum_\"");
    assert!(Manifest::parse(&unsealed).unwrap_err().contains("unknown field `checksum_`"));
    let v1 = serde_json::to_string(&Manifest { format: FORMAT_1.into(), ..manifest(20, 5, 2, 7) }).unwrap();
    assert!(!v1.contains("checksum"), "{v1}");
    assert!(Manifest::parse(&v1).is_ok(), "format 1 is still read");
    let v1_sealed = text.replace(FORMAT, FORMAT_1);
    assert!(Manifest::parse(&v1_sealed).unwrap_err().contains("has no"));
    let v3_unsealed = v1.replace(FORMAT_1, FORMAT);
    assert!(Manifest::parse(&v3_unsealed).unwrap_err().contains("missing field `truth_hash`"));
    // Format 2: sealed, without the station files' hashes; still read.
    let v2 = Manifest { format: FORMAT_2.into(), stations_hash: None, checksum: None, ..m.clone() };
    let v2 = Manifest { checksum: Some(v2.seal()), ..v2 };
    let v2_text = serde_json::to_string(&v2).unwrap();
    assert!(!v2_text.contains("stations_hash"), "{v2_text}");
    assert_eq!(Manifest::parse(&v2_text), Ok(v2.clone()), "format 2 is still read");
    let v2_with = serde_json::to_string(&Manifest { format: FORMAT_2.into(), ..m.clone() }).unwrap();
    assert!(Manifest::parse(&v2_with).unwrap_err().contains("has no \"stations_hash\""));
    let v3_without = serde_json::to_string(&Manifest { format: FORMAT.into(), ..v2 }).unwrap();
    assert!(Manifest::parse(&v3_without).unwrap_err().contains("missing field `stations_hash`"));
}
