//! CPU clocks: the time this thread, or this whole process, has run on a CPU. The simulator's
//! direct execution charges an operation the calling thread's CPU time; the apps and the
//! benchmarks that set a measurement against it read the same clock through here.

use std::time::Duration;

/// The CPU time this thread has used (`CLOCK_THREAD_CPUTIME_ID`).
///
/// # Panics
/// If the kernel cannot read the clock (Linux always can).
pub fn thread() -> Duration {
    read(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// The CPU time every thread of this process has used (`CLOCK_PROCESS_CPUTIME_ID`).
///
/// # Panics
/// As [`thread`].
pub fn process() -> Duration {
    read(libc::CLOCK_PROCESS_CPUTIME_ID)
}

fn read(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one `timespec` into `ts`, a valid and exclusive borrow.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    assert_eq!(rc, 0, "the CPU clock {clock} cannot be read");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clocks_advance_with_work_and_the_process_holds_the_thread() {
        // The process's clock read outside the thread's at both ends, so that the process's
        // span holds the thread's.
        let p0 = super::process();
        let t0 = super::thread();
        let mut x = 0u64;
        while super::thread() - t0 < std::time::Duration::from_millis(5) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let t1 = super::thread();
        let p1 = super::process();
        assert!(t1 - t0 >= std::time::Duration::from_millis(5));
        assert!(p1 - p0 >= t1 - t0, "process {:?}, thread {:?}", p1 - p0, t1 - t0);
    }
}
