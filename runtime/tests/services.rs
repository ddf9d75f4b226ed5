//! Parallel services between separately started applications (issue 30): the examples
//! `service_server` and `service_client`, each under its own `mpirun` (or as a plain
//! process), on 1 and 2 ranks, and every fault the runtime README's "Services" section lists.

use std::path::{Path, PathBuf};

use std::sync::Mutex;
use std::time::{Duration, Instant};

use dps_launch::{example, test_job, Background, Finished, Job, Launcher};

/// One test at a time: each starts applications that must not compete with another test's
/// for the two cores.
static ONE_TEST: Mutex<()> = Mutex::new(());

fn one_test() -> std::sync::MutexGuard<'static, ()> {
    ONE_TEST.lock().unwrap_or_else(|p| p.into_inner())
}

/// A registry directory of a test's own, with the outputs of its applications; removed
/// when the test ends.
struct TempDir(PathBuf);

impl std::ops::Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn registry(test: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("dps-services-test-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

/// A job on `ranks` ranks (0: a plain process, no mpirun) with the registry `dir`.
fn job(program: &str, ranks: usize, dir: &Path, args: &[&str]) -> Job {
    let job = Job::new(example(program)).env("DPS_SERVICES", dir).env("RUST_BACKTRACE", "0").args(args).timeout_s(90);
    match ranks {
        0 => job.launcher(Launcher::None),
        n => job.ranks(n),
    }
}

/// `service_server` on `ranks` ranks exporting `name`.squares and `name`.echo; returns once
/// both are in the registry. It lends the bulks of 1 KiB and more to clients on this node
/// (`DPS_SERVICE_LEND_MIN`; replies of 128 numbers or more), so that every test sees lent
/// replies beside others.
fn server(dir: &Path, ranks: usize, name: &str, extra: &[&str]) -> Background {
    let stop = dir.join(format!("stop-{name}"));
    let mut args = vec!["--name", name, "--until", stop.to_str().unwrap(), "--seconds", "80"];
    args.extend_from_slice(extra);
    let entries = [dir.join(format!("{name}.squares.service")), dir.join(format!("{name}.echo.service"))];
    // A killed server's entries may be there: wait for new ones.
    let read = || entries.iter().map(|e| std::fs::read_to_string(e).ok()).collect::<Vec<_>>();
    let before = read();
    let bg = job("service_server", ranks, dir, &args)
        .env("DPS_SERVICE_LEND_MIN", "1024")
        .spawn_logged(dir, &format!("server-{name}"));
    let start = Instant::now();
    while read().iter().zip(&before).any(|(now, then)| now.is_none() || now == then) {
        assert!(start.elapsed() < Duration::from_secs(60), "the server did not export {name}: {:?}", bg.outputs());
        std::thread::sleep(Duration::from_millis(50));
    }
    bg
}

/// Ends a server started by [`server`]: returns its outputs once it has exited.
fn stop(dir: &Path, name: &str, bg: Background) -> (String, String) {
    std::fs::write(dir.join(format!("stop-{name}")), b"").unwrap();
    let (status, out, err) = bg.wait();
    assert!(status.success(), "server {name}: {status}\n{out}\n{err}");
    (out, err)
}

/// Waits until `file` exists (a client's `--started`).
fn wait_for(file: &Path, app: &Background) {
    let start = Instant::now();
    while !file.exists() {
        assert!(start.elapsed() < Duration::from_secs(60), "{} never appeared: {:?}", file.display(), app.outputs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn client(dir: &Path, ranks: usize, args: &[&str]) -> Finished {
    test_job(job("service_client", ranks, dir, args))
}

/// The server's last lines: every call served, no connection, call or lent reply left.
fn assert_nothing_left(name: &str, out: &str) {
    for service in ["squares", "echo"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("{name}.{service}: served")))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.ends_with("; 0 bytes lent, 0 connections, 0 calls in flight left"), "{line}");
    }
}

#[test]
fn clients_on_1_and_2_ranks_call_a_service_on_1_and_2_ranks_with_many_calls_in_flight() {
    let _one = one_test();
    let dir = registry("calls");
    for server_ranks in [1, 2] {
        let name = format!("calls{server_ranks}");
        let srv = server(&dir, server_ranks, &name, &[]);
        // Two clients at once, one of them a plain process over TCP.
        let tcp = job("service_client", 0, &dir, &["--name", &name, "--requests", "300", "--window", "16"])
            .env("DPS_SERVICE_NET", "tcp")
            .spawn_logged(&dir, "tcp-client");
        for ranks in [1, 2] {
            let args = ["--name", &name, "--requests", "2000", "--window", "64", "--rtt", "200", "--numbers", "1200"];
            let c = client(&dir, ranks, &args);
            assert!(c.status.success(), "client on {ranks} ranks, server on {server_ranks}: {}", c.stderr);
            assert!(c.stdout.contains(&format!("checked 2000 replies of {name}.squares")), "{}", c.stdout);
            assert!(c.stdout.contains("8-byte round trip: service"), "{}", c.stdout);
        }
        let (status, out, err) = tcp.wait();
        assert!(status.success() && out.contains("checked 300 replies"), "TCP client: {out}\n{err}");
        let (out, err) = stop(&dir, &name, srv);
        assert_nothing_left(&name, &out);
        assert!(out.contains(&format!("{name}.squares: served 4300 calls")), "{out}");
        // The clients on this node borrowed the replies of 512 numbers and more (requests
        // 511..1200 and 1711..2000 of each), the TCP client none.
        let lent: u64 = out
            .split(&format!("{name}.squares: served 4300 calls ("))
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(lent, 2 * (689 + 289), "{out}");
        assert!(!err.contains("dropped") && !err.contains("panicked"), "{err}");
        assert!(!dir.join(format!("{name}.squares.service")).exists(), "withdrawn at shutdown");
    }
}

#[test]
fn bad_names_types_fingerprints_and_registries_are_one_line_errors() {
    let _one = one_test();
    let dir = registry("refusals");
    let srv = server(&dir, 1, "refusals", &[]);
    for ranks in [1, 2] {
        let cases: &[(&[&str], &str)] = &[
            (&["--name", "nobody"], "service \"nobody.squares\" is not running: nobody exports it"),
            (
                &["--name", "refusals", "--wrong-types"],
                "service \"refusals.echo\": types differ: the client imports u32 -> u64, the service (graph \"echo\", pid",
            ),
            (
                &["--name", "refusals", "--pin", "0123456789abcdef"],
                "service \"refusals.squares\": graph fingerprints differ: the client pinned 0123456789abcdef, the service's graph \"squares\" is",
            ),
        ];
        for (args, expect) in cases {
            let c = client(&dir, ranks, args);
            assert!(!c.status.success(), "{args:?}");
            assert!(c.stderr.contains(expect), "{ranks} ranks, {args:?}: {}", c.stderr);
            assert!(!c.stderr.contains("panicked"), "{}", c.stderr);
        }
        // The same name, live: the second exporter is refused.
        let second = test_job(job("service_server", ranks, &dir, &["--name", "refusals", "--seconds", "5"]));
        assert!(!second.status.success());
        assert!(second.stderr.contains("service \"refusals.squares\" is already exported by pid"), "{}", second.stderr);
        for (registry, expect) in [
            ("/nonexistent/dps-registry", "service registry /nonexistent/dps-registry (DPS_SERVICES): No such file"),
            ("/proc", "service registry /proc (DPS_SERVICES) is not writable"),
        ] {
            let s = test_job(job("service_server", ranks, Path::new(registry), &["--seconds", "5"]));
            assert!(!s.status.success() && s.stderr.contains(expect), "{ranks} ranks, {registry}: {}", s.stderr);
        }
        let c = client(Path::new("/nonexistent/dps-registry"), ranks, &[]);
        assert!(c.stderr.contains("service registry /nonexistent/dps-registry (DPS_SERVICES)"), "{}", c.stderr);
        // The services' settings are checked, not silently replaced by their defaults.
        let s = test_job(
            job("service_server", ranks, &dir, &["--name", "lend", "--seconds", "5"])
                .env("DPS_SERVICE_LEND_MIN", "64k"),
        );
        let expect = "DPS_SERVICE_LEND_MIN=\"64k\": the smallest bulk lent must be a number of bytes from 1, or off";
        assert!(!s.status.success() && s.stderr.contains(expect), "{ranks} ranks: {}", s.stderr);
        let c = test_job(job("service_client", ranks, &dir, &["--name", "refusals"]).env("DPS_SERVICE_NET", "udp"));
        assert!(!c.status.success() && c.stderr.contains("DPS_SERVICE_NET=\"udp\": give tcp"), "{}", c.stderr);
    }
    // The right fingerprint is accepted.
    let entry = std::fs::read_to_string(dir.join("refusals.squares.service")).unwrap();
    let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
    let c =
        client(&dir, 1, &["--name", "refusals", "--requests", "10", "--pin", entry["fingerprint"].as_str().unwrap()]);
    assert!(c.status.success(), "{}", c.stderr);
    let (out, _) = stop(&dir, "refusals", srv);
    assert_nothing_left("refusals", &out);
}

#[test]
fn a_service_killed_during_calls_fails_them_within_seconds_and_is_then_not_running() {
    let _one = one_test();
    let dir = registry("killed");
    for ranks in [1, 2] {
        let name = format!("killed{ranks}");
        // 5 ms per 64 numbers: the client's 5000 calls take far longer than the kill.
        let srv = server(&dir, ranks, &name, &["--slow-ms", "5"]);
        let started = dir.join(format!("started-{name}"));
        let args = ["--name", &name, "--requests", "5000", "--numbers", "1200", "--started", started.to_str().unwrap()];
        let c = job("service_client", ranks, &dir, &args).spawn_logged(&dir, "victim");
        wait_for(&started, &c);
        std::thread::sleep(Duration::from_millis(500));
        let killed_at = Instant::now();
        srv.terminate();
        let (status, out, err) = c.wait();
        let took = killed_at.elapsed();
        assert!(!status.success(), "{out}");
        assert!(err.contains(&format!("service \"{name}.squares\" is not running: the connection was lost")), "{err}");
        assert!(took < Duration::from_secs(20), "the client took {took:?} to fail");
        // The entry is left behind; a client finds it stale at once.
        let c = client(&dir, ranks, &["--name", &name]);
        assert!(
            c.stderr.contains(&format!("service \"{name}.squares\" is not running: its registry entry (pid")),
            "{}",
            c.stderr
        );
        assert!(c.stderr.contains("is stale: nobody answers"), "{}", c.stderr);
        // And a new server takes the name over.
        let srv = server(&dir, ranks, &name, &[]);
        let c = client(&dir, ranks, &["--name", &name, "--requests", "50"]);
        assert!(c.status.success(), "{}", c.stderr);
        stop(&dir, &name, srv);
    }
}

#[test]
fn a_client_killed_during_calls_leaves_nothing_in_the_service() {
    let _one = one_test();
    let dir = registry("victim");
    for ranks in [1, 2] {
        let name = format!("victim{ranks}");
        let srv = server(&dir, ranks, &name, &["--slow-ms", "2"]);
        for round in 0..2 {
            let started = dir.join(format!("started-{name}-{round}"));
            let args =
                ["--name", &name, "--requests", "100000", "--numbers", "1200", "--started", started.to_str().unwrap()];
            let c = job("service_client", ranks, &dir, &args).spawn_logged(&dir, "dying");
            wait_for(&started, &c);
            std::thread::sleep(Duration::from_millis(500));
            c.terminate();
        }
        let c = client(&dir, ranks, &["--name", &name, "--requests", "100"]);
        assert!(c.status.success(), "the service serves others: {}", c.stderr);
        let (out, err) = stop(&dir, &name, srv);
        assert_nothing_left(&name, &out);
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn malformed_and_truncated_messages_drop_their_connection_with_one_line() {
    use std::io::{Read, Write};
    let _one = one_test();
    let dir = registry("malformed");
    for ranks in [1, 2] {
        let name = format!("malformed{ranks}");
        let srv = server(&dir, ranks, &name, &[]);
        let entry = std::fs::read_to_string(dir.join(format!("{name}.squares.service"))).unwrap();
        let entry: serde_json::Value = serde_json::from_str(&entry).unwrap();
        let addr = entry["tcp"].as_array().unwrap().last().unwrap().as_str().unwrap().to_string();
        let junk: [&[u8]; 3] = [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
            &[0xff, 0xff, 0xff, 0x7f, 1, 2, 3],
            // A header length of 100 and only 10 bytes of it.
            &[100, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
        ];
        for bytes in junk {
            let mut s = std::net::TcpStream::connect(&addr).unwrap();
            s.write_all(bytes).unwrap();
            s.shutdown(std::net::Shutdown::Write).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
            let mut rest = Vec::new();
            let _ = s.read_to_end(&mut rest);
            assert!(rest.is_empty(), "the service answers nothing to junk");
        }
        let c = client(&dir, ranks, &["--name", &name, "--requests", "100"]);
        assert!(c.status.success(), "the service still serves: {}", c.stderr);
        let (out, err) = stop(&dir, &name, srv);
        assert_nothing_left(&name, &out);
        let dropped: Vec<&str> = err.lines().filter(|l| l.contains("dropped")).collect();
        assert_eq!(dropped.len(), 3, "one line per bad connection:\n{err}");
        assert!(dropped.iter().all(|l| l.contains("malformed message")), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// Two-level flow control (issue 30, item 6): an outer split with window F1 whose tokens
/// each open an inner split with window F2 has at most F1·F2 inner tokens in flight, since
/// an outer token's slot returns only once its inner instance is merged. The count here is
/// of tokens created (pulled from the split's iterator, not yet merged): each open instance
/// pulls one token ahead of its window, to learn early that it is over, so the bound on
/// what exists is F1·(F2 + 1), and it is reached.
#[test]
fn nested_windows_bound_the_inner_tokens_in_flight_by_their_product() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use dps::{route, MergeFn, Node, Runtime};
    let (f1, f2, outer, inner) = (8usize, 16usize, 200u64, 500u64);
    let rt = Runtime::single();
    let main = rt.collection("main", "0", |_| ()).unwrap();
    let middle = rt.collection("middle", "0*4", |_| ()).unwrap();
    let work = rt.collection("work", "0*4", |_| ()).unwrap();
    let (count, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (up, high, down) = (count.clone(), most.clone(), count.clone());
    let outer_split =
        Node::split("outer", &main, route::fixed(0), move |_: &mut (), n: u64| (0..n).map(move |_| inner)).window(f1);
    let inner_split = Node::split("inner", &middle, route::round_robin(), move |_: &mut (), n: u64| {
        let (up, high) = (up.clone(), high.clone());
        (0..n).inspect(move |_| {
            high.fetch_max(up.fetch_add(1, Ordering::SeqCst) + 1, Ordering::SeqCst);
        })
    })
    .window(f2);
    let leaf = Node::leaf("touch", &work, route::round_robin(), |_: &mut (), i: u64| i % 7);
    let inner_merge = Node::merge(
        "inner_sum",
        &middle,
        MergeFn::new(
            |_: &mut ()| 0u64,
            move |_, acc: &mut u64, x: u64| {
                down.fetch_sub(1, Ordering::SeqCst);
                *acc += x;
            },
            |_, acc| acc,
        ),
    );
    let outer_merge = Node::merge(
        "outer_sum",
        &main,
        MergeFn::new(|_: &mut ()| 0u64, |_, acc: &mut u64, x: u64| *acc += x, |_, acc| acc),
    );
    let graph = rt.graph("nested", outer_split >> inner_split >> leaf >> inner_merge >> outer_merge).unwrap();
    let total = rt.call(&graph, outer).unwrap();
    assert_eq!(total, outer * (0..inner).map(|i| i % 7).sum::<u64>(), "every inner token merged once");
    let most = most.load(Ordering::SeqCst);
    assert!(most <= f1 * (f2 + 1), "{most} inner tokens exist at once, above F1·(F2 + 1) = {}", f1 * (f2 + 1));
    assert!(most > f2, "outer tokens' inner instances overlap ({most} in flight at most)");
    rt.shutdown().unwrap();
}

/// The same bound across applications: the client's split (window F1) calls a service whose
/// graph splits each request (window F2); the service never has more than F1·F2 chunks in flight
/// (F1·(F2 + 1) created: see above).
#[test]
fn a_client_window_times_the_service_window_bounds_the_service_tokens_in_flight() {
    let _one = one_test();
    let dir = registry("nested");
    for ranks in [1, 2] {
        let name = format!("nested{ranks}");
        let srv = server(&dir, ranks, &name, &["--chunk", "1", "--window", "4", "--slow-ms", "1"]);
        let c = client(&dir, ranks, &["--name", &name, "--requests", "200", "--window", "8"]);
        assert!(c.status.success(), "{}", c.stderr);
        let (out, _) = stop(&dir, &name, srv);
        let most: usize = out
            .lines()
            .find_map(|l| l.strip_prefix("at most ")?.strip_suffix(" chunks in flight")?.parse().ok())
            .unwrap_or_else(|| panic!("{out}"));
        assert!(most <= 8 * (4 + 1), "{most} chunks exist at once, above F1·(F2 + 1) = 40");
        assert!(most > 4, "the client's calls overlap in the service ({most} chunks in flight at most)");
    }
}

/// An export is withdrawn when its runtime ends, also when it is dropped without
/// `shutdown` (a program that returns an error); a long name fits the socket's.
#[test]
fn an_export_is_withdrawn_when_its_runtime_is_dropped() {
    use dps::{route, Node, Runtime};
    let _one = one_test();
    let dir = registry("dropped");
    // Only this test reads the variable in this process, and ONE_TEST keeps the others out.
    std::env::set_var("DPS_SERVICES", &*dir);
    let name = format!("dropped.{}", "x".repeat(92));
    let entry = dir.join(format!("{name}.service"));
    let rt = Runtime::single();
    let c = rt.collection("c", "0", |_| ()).unwrap();
    let g = rt.graph("inc", Node::leaf("inc", &c, route::fixed(0), |_: &mut (), x: u64| x + 1)).unwrap();
    rt.export(&name, &g).unwrap();
    assert!(entry.exists());
    let client = Runtime::single();
    let here = client.collection("here", "0", |_| ()).unwrap();
    let inc = client.import::<u64, u64>(&name).unwrap();
    let call = client.graph("call", inc.leaf("inc", &here, route::fixed(0))).unwrap();
    assert_eq!(client.call(&call, 1).unwrap(), 2);
    drop(rt);
    assert!(!entry.exists(), "withdrawn when dropped");
    let failed = client.call(&call, 1).unwrap_err();
    assert!(failed.to_string().contains(&format!("service \"{name}\" is not running")), "{failed}");
    client.shutdown().unwrap();
    std::env::remove_var("DPS_SERVICES");
}
