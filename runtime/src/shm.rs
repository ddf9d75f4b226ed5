//! Segments of memory that the ranks of one node share: files in `/dev/shm` (tmpfs).
//!
//! A segment is created nameless (`O_TMPFILE`): one that is never lent leaves nothing behind.
//! The first time it is lent, its owner gives it a home name (an `O_TMPFILE` file can be
//! linked once, while it has no name); for each transfer it links a fresh name to the home
//! name, and the receiver opens that name, takes it over as its own home name and maps the
//! file read-only. The pages then belong to both mappings, and live until the last one goes:
//! the owner may drop its segment (which removes its home name) while the receiver still
//! reads it, and nothing has to be acknowledged. Names are left over only when a process dies: [`remove_lent_names`]
//! clears this process's at shutdown, [`remove_names_of_the_dead`] those of processes gone.
//!
//! This is a leaf module: it imports nothing from the crate.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Where segments live. A node whose ranks see one tmpfs here can share them.
const DIR: &str = "/dev/shm";
/// Lent names begin with this, then the pid namespace and the pid of the process that made
/// them (pids are only unique, and only checked for life, in their namespace).
const PREFIX: &str = "dps-";

/// `dps-<pid namespace>-`: the start of the names this process's namespace makes.
fn namespace_prefix() -> &'static str {
    static NS: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NS.get_or_init(|| {
        let ns = std::fs::read_link("/proc/self/ns/pid").map(|l| l.to_string_lossy().into_owned()).unwrap_or_default();
        let id: String = ns.chars().filter(char::is_ascii_digit).collect();
        format!("{PREFIX}{}-", if id.is_empty() { "0" } else { &id })
    })
}

/// A mapped segment: `len` bytes at `ptr`, shared with the file `file`.
#[derive(Debug)]
pub(crate) struct Segment {
    ptr: *mut u8,
    len: usize,
    file: File,
    writable: bool,
    /// The path linked to the file at its first lending, removed with the segment.
    home: std::sync::Mutex<Option<String>>,
}

// SAFETY: the mapping is plain memory owned by the segment; it is written only through
// `bytes_mut`, which takes `&mut self`, and only while the segment is not yet lent.
unsafe impl Send for Segment {}
// SAFETY: as above; shared references only read.
unsafe impl Sync for Segment {}

static NEXT_NAME: AtomicU64 = AtomicU64::new(0);

/// Held by the tests that lend: one of them removes every name this process lent.
#[cfg(test)]
pub(crate) static LENDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Segment {
    /// A zeroed writable segment of `len` bytes (more than zero), or `None` where this node
    /// has no usable `/dev/shm` (no tmpfs there, or too little room left in it: the space
    /// is reserved now, so a full tmpfs is an error here rather than a SIGBUS later).
    pub(crate) fn create(len: usize) -> Option<Segment> {
        if len == 0 {
            return None;
        }
        let dir = CString::new(DIR).expect("no NUL in the path");
        // SAFETY: a valid C string; the flags make an unnamed file in that directory.
        let fd = unsafe { libc::open(dir.as_ptr(), libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC, 0o600) };
        if fd < 0 {
            return None;
        }
        // SAFETY: `fd` was just opened and is owned by nothing else.
        let file = unsafe { File::from_raw_fd(fd) };
        file.set_len(len as u64).ok()?;
        map(file, len, true).ok()
    }

    /// Opens a segment another process lent as `name` (see [`Segment::lend`]), takes the
    /// name over as its own home name (so that it can lend the segment on) and maps the
    /// file read-only. Fails unless the file holds exactly `len` bytes.
    pub(crate) fn open_lent(name: &str, len: usize) -> io::Result<Segment> {
        if name.contains('/') || !name.starts_with(PREFIX) {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("not a segment name: {name:?}")));
        }
        let (path, home) = (format!("{DIR}/{name}"), format!("{DIR}/{}", fresh_name()));
        let file = File::open(&path)?;
        std::fs::rename(&path, &home)?;
        let size = file.metadata()?.len();
        if size != len as u64 || len == 0 {
            let _ = std::fs::remove_file(&home);
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("segment {name} holds {size} bytes, not {len}"),
            ));
        }
        match map(file, len, false) {
            Ok(segment) => {
                *segment.home.lock().unwrap_or_else(|p| p.into_inner()) = Some(home);
                Ok(segment)
            }
            Err(e) => {
                let _ = std::fs::remove_file(&home);
                Err(e)
            }
        }
    }

    /// Links a fresh name to the segment and returns it, for one receiver to open; `None`
    /// if the link fails (the caller then sends the bytes). The owner must not write the
    /// segment any more, so that the receiver sees it as it was lent (`Shared` writes only
    /// while it builds one).
    pub(crate) fn lend(&self) -> Option<String> {
        let mut home = self.home.lock().unwrap_or_else(|p| p.into_inner());
        if home.is_none() {
            let path = format!("{DIR}/{}", fresh_name());
            let fd = format!("/proc/self/fd/{}", self.file.as_raw_fd());
            // AT_SYMLINK_FOLLOW links the file the descriptor refers to.
            link(&fd, &path, libc::AT_SYMLINK_FOLLOW)?;
            *home = Some(path);
        }
        let name = fresh_name();
        link(home.as_deref()?, &format!("{DIR}/{name}"), 0)?;
        Some(name)
    }

    /// The segment's bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The segment's bytes, to fill it before it is shared (`None` if it is a received one).
    pub(crate) fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        // SAFETY: as in `bytes`, and the mapping is writable; `&mut self` excludes readers.
        self.writable.then(|| unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) })
    }
}

/// `dps-<pid namespace>-<pid>-<n>`, unique on this node.
fn fresh_name() -> String {
    format!("{}{}-{}", namespace_prefix(), std::process::id(), NEXT_NAME.fetch_add(1, Ordering::Relaxed))
}

/// `linkat(2)` from `from` to `to`, both absolute paths.
fn link(from: &str, to: &str, flags: libc::c_int) -> Option<()> {
    let (from, to) = (CString::new(from).ok()?, CString::new(to).ok()?);
    // SAFETY: valid C strings; absolute paths, so the directory descriptors are unused.
    let linked = unsafe { libc::linkat(libc::AT_FDCWD, from.as_ptr(), libc::AT_FDCWD, to.as_ptr(), flags) };
    (linked == 0).then_some(())
}

impl Drop for Segment {
    fn drop(&mut self) {
        if let Some(home) = self.home.get_mut().unwrap_or_else(|p| p.into_inner()).take() {
            let _ = std::fs::remove_file(home);
        }
        // SAFETY: `ptr` and `len` are the mapping made in `map`, unmapped only here.
        unsafe { libc::munmap(self.ptr.cast(), self.len) };
    }
}

/// Maps `len` bytes of `file` and fills its page tables now: a fault per page on first
/// reading would cost as much as copying. A writable (new) segment's pages are allocated
/// here, so that a full tmpfs is an error now rather than a SIGBUS later. The mapping asks
/// for huge pages first: a tmpfs mounted `huge=advise` gives them only then (`within_size`
/// and `always` without asking), and kernels that walk the data with large strides read it
/// 3-6 % faster (dps-matmul's lent strips; Debian's `/dev/shm` has `huge=never`).
fn map(file: File, len: usize, writable: bool) -> io::Result<Segment> {
    let prot = if writable { libc::PROT_READ | libc::PROT_WRITE } else { libc::PROT_READ };
    // SAFETY: a fresh mapping of an open file, checked below.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, file.as_raw_fd(), 0) };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    // Dropped on an error below: unmapped.
    let segment = Segment { ptr: ptr.cast(), len, file, writable, home: std::sync::Mutex::new(None) };
    // SAFETY: advice on the mapping just made (an error leaves it on small pages).
    unsafe { libc::madvise(ptr, len, libc::MADV_HUGEPAGE) };
    let fill = if writable { libc::MADV_POPULATE_WRITE } else { libc::MADV_POPULATE_READ };
    // SAFETY: as above; populating reports a failure instead of raising SIGBUS.
    let populated = unsafe { libc::madvise(ptr, len, fill) } == 0;
    // A read mapping that could not be populated faults its pages in as it is read (the
    // owner allocated them all); a new segment must have its space.
    if writable && !populated {
        let error = io::Error::last_os_error();
        // Kernels before 5.14 have no such advice: reserve the file's space instead.
        let reserved = error.raw_os_error() == Some(libc::EINVAL)
            // SAFETY: a valid descriptor; allocates the file's blocks.
            && unsafe { libc::fallocate(segment.file.as_raw_fd(), 0, 0, len as libc::off_t) } == 0;
        if !reserved {
            return Err(error);
        }
    }
    Ok(segment)
}

/// How the tmpfs at `/dev/shm` pages segments: the `huge=` option of its mount (`never`
/// where it has none, as Debian mounts it; `advise`, `within_size`, `always`), or the
/// kernel's `shmem_enabled` where that overrides every mount (`deny`, `force`).
pub(crate) fn huge_pages() -> String {
    let read = |path| std::fs::read_to_string(path).unwrap_or_default();
    huge_mode(&read("/proc/self/mounts"), &read("/sys/kernel/mm/transparent_hugepage/shmem_enabled"))
}

/// [`huge_pages`] from the texts of `/proc/self/mounts` and `shmem_enabled`.
fn huge_mode(mounts: &str, shmem_enabled: &str) -> String {
    let forced = shmem_enabled.split_whitespace().find_map(|mode| mode.strip_prefix('[')?.strip_suffix(']'));
    if let Some(mode @ ("deny" | "force")) = forced {
        return mode.to_string();
    }
    // The last mount at the path is the one seen there.
    let options = mounts.lines().rev().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        (fields.get(1) == Some(&DIR)).then(|| fields.get(3).copied().unwrap_or_default())
    });
    let huge = options.and_then(|o| o.split(',').find_map(|o| o.strip_prefix("huge=")));
    huge.unwrap_or("never").to_string()
}

/// Whether segments can be made here (checked once, with a small one).
pub(crate) fn usable() -> bool {
    static USABLE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *USABLE.get_or_init(|| Segment::create(4096).is_some())
}

/// What identifies this process's `/dev/shm`: the boot (a machine) and the tmpfs's device
/// (a mount). Ranks with equal identities can lend each other segments; empty where there
/// is no `/dev/shm` or segments cannot be made (no rank then shares with this one).
pub(crate) fn memory_domain() -> String {
    use std::os::unix::fs::MetadataExt;
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    match std::fs::metadata(DIR) {
        Ok(dir) if usable() && !boot.trim().is_empty() => format!("{} {}", boot.trim(), dir.dev()),
        _ => String::new(),
    }
}

/// The size of `/dev/shm` in bytes (0 where it cannot be read): its total, not what is free
/// now, so that the ranks of a node, which read it at slightly different times, agree.
pub(crate) fn size() -> u64 {
    let dir = CString::new(DIR).expect("no NUL in the path");
    // SAFETY: `statvfs` is plain data; the kernel fills it through a valid, exclusive borrow.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a valid C string and a valid pointer to `stat`.
    if unsafe { libc::statvfs(dir.as_ptr(), &mut stat) } != 0 {
        return 0;
    }
    (stat.f_blocks as u64).saturating_mul(stat.f_frsize as u64)
}

/// Removes the names this process lent that no receiver took (a job that ended with a
/// transfer in flight). The segments still alive keep their pages (their descriptors and
/// mappings hold them) but can no longer be lent. Best effort.
pub(crate) fn remove_lent_names() {
    let mine = std::process::id();
    remove_names(|pid| pid == mine);
}

/// Removes the names left by processes of this machine (and pid namespace) that are gone (killed with segments
/// or transfers in flight), whose pages would otherwise stay in memory until a reboot.
pub(crate) fn remove_names_of_the_dead() {
    remove_names(|pid| !std::path::Path::new(&format!("/proc/{pid}")).exists());
}

fn remove_names(of: impl Fn(u32) -> bool) {
    let Ok(entries) = std::fs::read_dir(DIR) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name.strip_prefix(namespace_prefix()).and_then(|rest| rest.split('-').next()?.parse::<u32>().ok());
        if pid.is_some_and(&of) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_huge_page_mode_is_the_last_dev_shm_mount_s_unless_the_kernel_overrides_it() {
        let debian = "proc /proc proc rw 0 0\ntmpfs /dev/shm tmpfs rw,relatime,size=24684084k 0 0\n";
        let advised = format!("{debian}tmpfs /dev/shm tmpfs rw,relatime,size=1024k,huge=advise 0 0\n");
        let enabled = "always within_size advise [never] deny force";
        assert_eq!(huge_mode(debian, enabled), "never");
        assert_eq!(huge_mode(&advised, enabled), "advise");
        assert_eq!(huge_mode(&advised, "always within_size advise never [deny] force"), "deny");
        assert_eq!(huge_mode(debian, "always within_size advise never deny [force]"), "force");
        assert_eq!(huge_mode("tmpfs /dev/shmx tmpfs rw,huge=always 0 0", ""), "never", "another path");
    }

    #[test]
    fn a_lent_segment_is_read_once_by_its_receiver_after_the_owner_drops_it() {
        let _lending = LENDING.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut seg) = Segment::create(8192) else {
            eprintln!("no usable /dev/shm here: nothing to test");
            return;
        };
        seg.bytes_mut().unwrap()[..4].copy_from_slice(&[1, 2, 3, 4]);
        let name = seg.lend().expect("a lent name");
        let (wrong, left) = (seg.lend().unwrap(), seg.lend().unwrap());
        let home = seg.home.lock().unwrap().clone().expect("a home name once lent");
        drop(seg);
        assert!(!std::path::Path::new(&home).exists(), "dropping the segment removes its home name");
        let got = Segment::open_lent(&name, 8192).unwrap();
        assert_eq!(&got.bytes()[..5], &[1, 2, 3, 4, 0]);
        assert!(got.bytes().len() == 8192 && !std::path::Path::new(&format!("{DIR}/{name}")).exists());
        let again = got.lend().expect("a received segment is lent on");
        assert_eq!(Segment::open_lent(&again, 8192).unwrap().bytes()[3], 4);
        assert!(Segment::open_lent(&name, 8192).is_err(), "a name is taken once");
        assert!(Segment::open_lent(&wrong, 4096).is_err(), "a wrong size is refused");
        assert!(Segment::open_lent("../etc/passwd", 4096).is_err());
        remove_lent_names();
        assert!(!std::path::Path::new(&format!("{DIR}/{left}")).exists());
        // A name of a process that is gone (pid 2^22 + 1 is above Linux's pid_max).
        let dead = format!("{DIR}/{}4194305-0", namespace_prefix());
        let other_namespace = format!("{DIR}/{PREFIX}1-4194305-0");
        std::fs::write(&other_namespace, b"not ours").unwrap();
        std::fs::write(&dead, b"left").unwrap();
        remove_names_of_the_dead();
        assert!(!std::path::Path::new(&dead).exists());
        assert!(std::path::Path::new(&other_namespace).exists(), "another pid namespace's names are left alone");
        std::fs::remove_file(other_namespace).unwrap();
        assert!(!memory_domain().is_empty());
    }
}
