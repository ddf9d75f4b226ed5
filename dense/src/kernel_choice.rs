//! Which OpenBLAS kernels run, and the correction when OpenBLAS does not know the CPU
//! (where the process calls MKL instead, [`crate::library`], MKL chooses its own kernels).
//!
//! Debian 12's OpenBLAS 0.3.21 is built with `DYNAMIC_ARCH`: at load time it picks a "core"
//! (a kernel set: `Haswell`, `Zen`, `SkylakeX`, ...) from the CPU's family and model. A CPU
//! newer than the library (an Emerald Rapids Xeon, say) is not in its tables, and it falls
//! back to `Prescott`'s SSE3 kernels: 4-6× slower, and every reference run with the same
//! library shares the loss, so no ratio shows it (issue 26). The library reads
//! `OPENBLAS_CORETYPE` once, in its load-time constructor, before `main`; so the only way to
//! change its choice from inside the program is to start the program again with the
//! variable set. [`use_the_best_core`] does that, as the first thing in `main`, when the
//! library's core uses narrower vectors than the CPU has (read from the CPU's features, not
//! its model name). A user's own `OPENBLAS_CORETYPE` always wins.
//!
//! The choice travels to child processes in the environment (`mpirun` started from a
//! corrected process passes it on); a variable this module set is marked so
//! ([`SET_BY_DPS`]), and a process on another CPU (a heterogeneous cluster) chooses again
//! instead of taking it for the user's.

use std::ffi::{c_char, c_int, CStr};

use serde::{Deserialize, Serialize};

extern "C" {
    fn openblas_get_corename() -> *const c_char;
    fn openblas_get_config() -> *const c_char;
    fn openblas_get_num_threads() -> c_int;
}

/// The variable OpenBLAS reads its core from.
pub const CORETYPE: &str = "OPENBLAS_CORETYPE";
/// Set beside [`CORETYPE`] when this module chose it: the core it chose.
pub const SET_BY_DPS: &str = "DPS_BLAS_CORETYPE";
/// Set beside [`CORETYPE`] when this module chose it: the core the library had chosen.
pub const LIBRARY_CHOICE: &str = "DPS_BLAS_LIBRARY_CORE";

/// The widest vectors a core's kernels use (or a CPU supports), in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Vectors {
    /// SSE2/SSE3, 128 bits, no FMA.
    Sse,
    /// AVX, 256 bits, no FMA.
    Avx,
    /// AVX2 with FMA, 256 bits.
    Avx2,
    /// AVX-512 F, CD, BW, DQ and VL: what OpenBLAS's SkylakeX kernels need.
    Avx512,
}

/// The vectors of an OpenBLAS 0.3.x core, by the name `openblas_get_corename` gives, or of
/// an MKL code path; `None`
/// for a name this table does not know (left alone).
pub fn vectors_of_core(core: &str) -> Option<Vectors> {
    let core = core.to_ascii_lowercase();
    // MKL's code paths (`library::code_path_name`): AVX512, AVX512_E1, ..., AVX2, AVX, SSE4_2, ...
    if core.starts_with("avx512") {
        return Some(Vectors::Avx512);
    }
    let v = match core.as_str() {
        "avx2" => Vectors::Avx2,
        "avx" => Vectors::Avx,
        "sse2" | "ssse3" | "sse4_1" | "sse4_2" => Vectors::Sse,
        "skylakex" | "cooperlake" | "sapphirerapids" => Vectors::Avx512,
        "haswell" | "zen" | "excavator" => Vectors::Avx2,
        "sandybridge" | "bulldozer" | "piledriver" | "steamroller" => Vectors::Avx,
        "prescott" | "core2" | "penryn" | "dunnington" | "nehalem" | "atom" | "athlon" | "opteron"
        | "opteron(sse3)" | "barcelona" | "nano" | "bobcat" | "katmai" | "coppermine" | "northwood" | "banias"
        | "unknown" => Vectors::Sse,
        _ => return None,
    };
    Some(v)
}

/// The widest vectors this CPU (and its OS) supports, from its features.
pub fn cpu_vectors() -> Vectors {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx512f") && has!("avx512cd") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return Vectors::Avx512;
        }
        if has!("avx2") && has!("fma") {
            return Vectors::Avx2;
        }
        if has!("avx") {
            return Vectors::Avx;
        }
    }
    Vectors::Sse
}

/// Whether this is an AMD CPU (`/proc/cpuinfo`'s vendor): AVX2 AMD CPUs get OpenBLAS's `Zen`
/// kernels, Intel ones `Haswell`.
pub fn amd() -> bool {
    std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| c.lines().any(|l| l.contains("AuthenticAMD")))
}

/// The OpenBLAS core for a CPU with `vectors`. AVX-512 gets `SkylakeX` on every vendor: it is the kernel set OpenBLAS itself uses for
/// later AVX-512 CPUs it does know (Zen 4 included, from 0.3.22).
pub fn best_core(vectors: Vectors, amd: bool) -> &'static str {
    match vectors {
        Vectors::Avx512 => "SkylakeX",
        Vectors::Avx2 if amd => "Zen",
        Vectors::Avx2 => "Haswell",
        Vectors::Avx => "Sandybridge",
        Vectors::Sse => "Prescott",
    }
}

/// What [`use_the_best_core`] should do, given the library's core, the CPU, and the
/// environment: `Some(core)` to start again with `OPENBLAS_CORETYPE=core`.
///
/// `explicit` says the user set `OPENBLAS_CORETYPE`; `ours` is the core a dps process set
/// (and marked), maybe on another CPU. The library's own choice is corrected when its vectors
/// are narrower than the CPU's; a core a dps process set, when it is not this CPU's best (too
/// narrow, or too wide: the kernels would stop on an illegal instruction). Nothing is done
/// for a user's choice, for a core this table does not know, or when dps already asked for
/// the best core and the library runs another (it lacks those kernels: asking again would
/// loop).
pub fn correction(
    library_core: &str,
    cpu: Vectors,
    amd: bool,
    explicit: bool,
    ours: Option<&str>,
) -> Option<&'static str> {
    if explicit {
        return None;
    }
    let best = best_core(cpu, amd);
    let current = vectors_of_core(library_core)?;
    let wrong = match ours {
        Some(_) => !library_core.eq_ignore_ascii_case(best),
        None => current < cpu,
    };
    (wrong && ours != Some(best)).then_some(best)
}

/// The BLAS a process runs: what every record of a program that calls BLAS carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlasInfo {
    /// The library, `OpenBLAS`.
    pub blas_library: String,
    /// Its version, `0.3.21`.
    pub blas_version: String,
    /// The kernel set it runs (`openblas_get_corename`), `Zen`, `SkylakeX`, `Prescott`, ...
    pub blas_core: String,
    /// Who chose that core: `library` (OpenBLAS, from the CPU model: it knew this CPU),
    /// `OPENBLAS_CORETYPE` (the user), or `dps over the library's X` (the library's own
    /// choice X used narrower vectors than the CPU has).
    pub blas_core_chosen_by: String,
    /// The widest vectors the CPU supports, for comparison with the core's.
    pub cpu_vectors: String,
    /// The threads one BLAS call may use in this process now.
    pub blas_threads: usize,
    /// The kernel's transparent huge pages mode (`madvise`, `always`, `never`, or
    /// `unavailable`): under the first two the large operands of the programs that install
    /// [`crate::huge::HugePages`] are on huge pages.
    #[serde(default)]
    pub huge_pages: String,
}

fn c_text(p: *const c_char) -> String {
    if p.is_null() {
        return "unknown".into();
    }
    // SAFETY: OpenBLAS returns pointers to static NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The core OpenBLAS runs in this process.
pub fn core() -> String {
    // SAFETY: a plain getter exported by libopenblas.
    c_text(unsafe { openblas_get_corename() })
}

impl BlasInfo {
    /// The BLAS of this process, now: the library [`crate::library`] chose.
    pub fn of_this_process() -> BlasInfo {
        match crate::library::get() {
            crate::library::Library::Mkl(mkl) => BlasInfo {
                blas_library: "MKL".into(),
                blas_version: mkl.version(),
                blas_core: mkl.code_path.clone(),
                blas_core_chosen_by: "library".into(),
                cpu_vectors: format!("{:?}", cpu_vectors()).to_ascii_lowercase(),
                blas_threads: mkl.threads(),
                huge_pages: crate::huge::mode(),
            },
            crate::library::Library::OpenBlas => BlasInfo::of_openblas(),
        }
    }

    /// OpenBLAS's, now.
    fn of_openblas() -> BlasInfo {
        // SAFETY: plain getters exported by libopenblas.
        let config = c_text(unsafe { openblas_get_config() });
        // SAFETY: as above.
        let threads = unsafe { openblas_get_num_threads() }.max(1) as usize;
        let mut words = config.split_whitespace();
        let blas_library = words.next().unwrap_or("OpenBLAS").to_string();
        let blas_version = words.next().unwrap_or("unknown").to_string();
        let chosen_by = match (std::env::var(CORETYPE).ok(), std::env::var(SET_BY_DPS).ok()) {
            (Some(c), Some(ours)) if c == ours => {
                format!("dps over the library's {}", std::env::var(LIBRARY_CHOICE).as_deref().unwrap_or("unknown"))
            }
            (Some(_), _) => CORETYPE.to_string(),
            (None, _) => "library".to_string(),
        };
        BlasInfo {
            blas_library,
            blas_version,
            blas_core: core(),
            blas_core_chosen_by: chosen_by,
            cpu_vectors: format!("{:?}", cpu_vectors()).to_ascii_lowercase(),
            blas_threads: threads,
            huge_pages: crate::huge::mode(),
        }
    }

    /// One line: `OpenBLAS 0.3.21, core Zen (chosen by library; the CPU has avx2), 2 threads`.
    pub fn describe(&self) -> String {
        format!(
            "{} {}, core {} (chosen by {}; the CPU has {}), {} thread{}, huge pages {}",
            self.blas_library,
            self.blas_version,
            self.blas_core,
            self.blas_core_chosen_by,
            self.cpu_vectors,
            self.blas_threads,
            if self.blas_threads == 1 { "" } else { "s" },
            self.huge_pages
        )
    }

    /// The library and the core, the part of [`BlasInfo`] that decides kernel times: what a
    /// platform file records and checks.
    pub fn kernels(&self) -> String {
        format!("{} {} {}", self.blas_library, self.blas_version, self.blas_core)
    }
}

/// Whether the user set `OPENBLAS_CORETYPE` (set, and not to the value a dps process chose
/// and marked with [`SET_BY_DPS`]).
pub fn users_coretype() -> bool {
    let given = std::env::var(CORETYPE).ok();
    given.is_some() && given != std::env::var(SET_BY_DPS).ok()
}

/// Makes this process run the best BLAS kernels it can: first the library
/// ([`crate::library`]: MKL where it is installed, from `DPS_BLAS`; a bad `DPS_BLAS` ends
/// the program with exit status 2 before any work). Then, on OpenBLAS: if it chose a core
/// with narrower vectors than the CPU has, and the user set no `OPENBLAS_CORETYPE`, the
/// program starts again (`exec`, same process id, arguments and environment) with
/// `OPENBLAS_CORETYPE` set to the best core. Call it first in `main`, before MPI starts.
/// Also registers the kernels for the platform file's check
/// ([`dps_model::platform::Machine::this`]).
///
/// Returns only when no restart is needed (or the restart failed, which it reports on
/// standard error).
pub fn use_the_best_core() {
    match crate::library::try_get() {
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
        Ok(crate::library::Library::Mkl(_)) => {
            dps_model::platform::Machine::register_blas(BlasInfo::of_this_process().kernels());
            return;
        }
        Ok(crate::library::Library::OpenBlas) => {}
    }
    let ours = std::env::var(SET_BY_DPS).ok();
    let explicit = users_coretype();
    let library = core();
    if let Some(best) = correction(&library, cpu_vectors(), amd(), explicit, ours.as_deref()) {
        restart_with(best, &library);
    }
    dps_model::platform::Machine::register_blas(BlasInfo::of_this_process().kernels());
}

/// Starts this program again with `OPENBLAS_CORETYPE=core`; returns only if that failed.
fn restart_with(core: &str, library_choice: &str) {
    use std::os::unix::process::CommandExt;
    let mut args = std::env::args_os();
    let arg0 = args.next().unwrap_or_default();
    // When the library had itself been told (by a dps parent on another CPU), what it had
    // chosen on its own is unknown: keep the first library choice recorded.
    let first_choice = std::env::var(LIBRARY_CHOICE).unwrap_or_else(|_| library_choice.to_string());
    let error = std::process::Command::new("/proc/self/exe")
        .arg0(arg0)
        .args(args)
        .env(CORETYPE, core)
        .env(SET_BY_DPS, core)
        .env(LIBRARY_CHOICE, first_choice)
        .exec();
    eprintln!(
        "warning: OpenBLAS runs its {library_choice} kernels on a CPU with wider vectors, and \
         starting again with {CORETYPE}={core} failed ({error}): BLAS calls will be slow"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generic_fallback_is_corrected_to_the_cpus_vectors() {
        assert_eq!(correction("Prescott", Vectors::Avx512, false, false, None), Some("SkylakeX"));
        assert_eq!(correction("Prescott", Vectors::Avx2, true, false, None), Some("Zen"));
        assert_eq!(correction("Nehalem", Vectors::Avx2, false, false, None), Some("Haswell"));
        assert_eq!(correction("Sandybridge", Vectors::Avx2, false, false, None), Some("Haswell"));
        assert_eq!(correction("Haswell", Vectors::Avx512, false, false, None), Some("SkylakeX"));
    }

    #[test]
    fn a_core_as_wide_as_the_cpu_is_kept() {
        assert_eq!(correction("Zen", Vectors::Avx2, true, false, None), None);
        assert_eq!(correction("Haswell", Vectors::Avx2, true, false, None), None);
        assert_eq!(correction("SkylakeX", Vectors::Avx512, false, false, None), None);
        assert_eq!(correction("Cooperlake", Vectors::Avx512, false, false, None), None);
        assert_eq!(correction("Prescott", Vectors::Sse, false, false, None), None);
    }

    #[test]
    fn the_users_choice_an_unknown_core_and_a_refused_request_are_left_alone() {
        assert_eq!(correction("Prescott", Vectors::Avx512, false, true, None), None);
        assert_eq!(correction("SomeFutureLake", Vectors::Avx512, false, false, None), None);
        // dps asked for SkylakeX already and the library still runs Prescott: no loop.
        assert_eq!(correction("Prescott", Vectors::Avx512, false, false, Some("SkylakeX")), None);
        // A dps parent on another CPU asked for SkylakeX; this CPU has AVX2 only.
        assert_eq!(correction("SkylakeX", Vectors::Avx2, true, false, Some("SkylakeX")), Some("Zen"));
        assert_eq!(correction("Prescott", Vectors::Avx2, false, false, Some("Prescott")), Some("Haswell"));
    }

    #[test]
    fn core_names_are_read_without_case() {
        assert_eq!(vectors_of_core("SKYLAKEX"), Some(Vectors::Avx512));
        assert_eq!(vectors_of_core("zen"), Some(Vectors::Avx2));
        assert_eq!(vectors_of_core("AVX512_E1"), Some(Vectors::Avx512));
        assert_eq!(vectors_of_core("AVX2"), Some(Vectors::Avx2));
    }
}
