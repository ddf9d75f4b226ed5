//! Which BLAS/LAPACK library this process calls: OpenBLAS (linked, always there) or Intel
//! MKL (`libmkl_rt`, loaded at run time where it is installed).
//!
//! Why both: on AVX-512 Xeons, Debian 12's OpenBLAS 0.3.21 (even with its best `SkylakeX`
//! kernels, `kernel_choice`) runs dgemm at 0.86-0.90 and dgetrf at 0.93 of MKL's rate, and
//! the dense apps inherit that gap (issue 26); MKL picks its kernels from the CPU's
//! features at run time. MKL is not a Debian package of this project's distribution, so it
//! is loaded, not linked: `scripts/setup.sh` installs it from PyPI (`bench/blasref/mkl.sh`),
//! and a cluster's own MKL (a module that puts `libmkl_rt.so` on `LD_LIBRARY_PATH`) is
//! found the same way.
//!
//! The choice, made once per process from `DPS_BLAS`:
//! - unset or `auto`: MKL where it is found, else OpenBLAS; but OpenBLAS when the user set
//!   `OPENBLAS_CORETYPE` (they are steering OpenBLAS);
//! - `openblas`: OpenBLAS;
//! - `mkl`: MKL, an error if it is not found;
//! - a path: that `libmkl_rt` file.
//!
//! MKL is looked for in `$DPS_MKL_DIR/lib`, then in `mkl.sh`'s install directory
//! (`${XDG_CACHE_HOME:-~/.cache}/dps/mkl/lib`), then by name on the loader's search path.

use std::ffi::{c_char, c_int, CStr};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable that chooses the library.
pub const CHOICE: &str = "DPS_BLAS";

/// `dgemm_` and `dtrsm_` share the Fortran calling convention: every argument by pointer.
type Dgemm = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *const c_int,
    *const f64,
    *const f64,
    *const c_int,
    *const f64,
    *const c_int,
    *const f64,
    *mut f64,
    *const c_int,
);
type Dtrsm = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *const f64,
    *const f64,
    *const c_int,
    *mut f64,
    *const c_int,
);
type Dgetrf = unsafe extern "C" fn(*const c_int, *const c_int, *mut f64, *const c_int, *mut c_int, *mut c_int);
type Dgetrs = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *const f64,
    *const c_int,
    *const c_int,
    *mut f64,
    *const c_int,
    *mut c_int,
);
type Dlaswp =
    unsafe extern "C" fn(*const c_int, *mut f64, *const c_int, *const c_int, *const c_int, *const c_int, *const c_int);

/// MKL's routines, resolved from its single dynamic library (LP64 interface, 32-bit ints).
pub struct Mkl {
    pub(crate) dgemm: Dgemm,
    pub(crate) dtrsm: Dtrsm,
    pub(crate) dgetrf: Dgetrf,
    pub(crate) dgetrs: Dgetrs,
    pub(crate) dlaswp: Dlaswp,
    set_num_threads: unsafe extern "C" fn(c_int),
    get_max_threads: unsafe extern "C" fn() -> c_int,
    /// `Intel(R) oneAPI Math Kernel Library Version 2026.2-Product Build ...`.
    pub version_string: String,
    /// The instruction set of the kernels MKL chose (its "auto branch"), e.g. `AVX512_E1`.
    pub code_path: String,
    /// The file it was loaded from.
    pub path: PathBuf,
    /// Kept loaded for the life of the process (the pointers above point into it).
    _library: libloading::Library,
}

impl std::fmt::Debug for Mkl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mkl")
            .field("version", &self.version())
            .field("code_path", &self.code_path)
            .field("path", &self.path)
            .finish()
    }
}

impl Mkl {
    /// Loads `libmkl_rt` from `path` (a file name alone: the loader's search path).
    fn load(path: &Path) -> Result<Mkl, String> {
        // SAFETY: loading MKL runs its initialisers, which only set up its own state.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| e.to_string())?;
        macro_rules! symbol {
            ($name:literal) => {
                // SAFETY: the symbol's type is MKL's documented C/Fortran signature.
                *unsafe { library.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{}: no {}: {e}", path.display(), $name))?
            };
        }
        let version: unsafe extern "C" fn(*mut c_char, c_int) = symbol!("MKL_Get_Version_String");
        let branch: unsafe extern "C" fn() -> c_int = symbol!("mkl_cbwr_get_auto_branch");
        let mut text = [0 as c_char; 256];
        // SAFETY: MKL writes at most `len` bytes, NUL-terminated.
        unsafe { version(text.as_mut_ptr(), text.len() as c_int) };
        // Terminated even if MKL filled the buffer.
        text[text.len() - 1] = 0;
        // SAFETY: NUL-terminated (the line above).
        let version_string = unsafe { CStr::from_ptr(text.as_ptr()) }.to_string_lossy().trim().to_string();
        // SAFETY: a plain getter.
        let code_path = code_path_name(unsafe { branch() });
        Ok(Mkl {
            dgemm: symbol!("dgemm_"),
            dtrsm: symbol!("dtrsm_"),
            dgetrf: symbol!("dgetrf_"),
            dgetrs: symbol!("dgetrs_"),
            dlaswp: symbol!("dlaswp_"),
            set_num_threads: symbol!("MKL_Set_Num_Threads"),
            get_max_threads: symbol!("MKL_Get_Max_Threads"),
            version_string,
            code_path,
            path: path.to_path_buf(),
            _library: library,
        })
    }

    /// The version, `2026.2`, from the version string.
    pub fn version(&self) -> String {
        let after = self.version_string.split("Version ").nth(1).unwrap_or("unknown");
        after.split(['-', ' ']).next().unwrap_or("unknown").to_string()
    }

    /// Sets the threads one call may use (MKL's own, process-wide).
    pub fn set_threads(&self, n: usize) {
        // SAFETY: a plain setter.
        unsafe { (self.set_num_threads)(n.max(1) as c_int) }
    }

    /// The threads one call may use now.
    pub fn threads(&self) -> usize {
        // SAFETY: a plain getter.
        unsafe { (self.get_max_threads)() }.max(1) as usize
    }
}

/// The name of an MKL code path (`mkl_cbwr_get_auto_branch`, the `MKL_CBWR_*` values of
/// `mkl_cbwr.h`).
pub fn code_path_name(branch: c_int) -> String {
    let name = match branch {
        4 => "SSE2",
        6 => "SSSE3",
        7 => "SSE4_1",
        8 => "SSE4_2",
        9 => "AVX",
        10 => "AVX2",
        12 => "AVX512",
        14 => "AVX512_E1",
        _ => return format!("branch {branch}"),
    };
    name.to_string()
}

/// The library a process calls.
#[derive(Debug)]
pub enum Library {
    /// Debian's OpenBLAS, linked.
    OpenBlas,
    /// Intel MKL, loaded.
    Mkl(Box<Mkl>),
}

/// What `DPS_BLAS` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// MKL where it is found, else OpenBLAS.
    Auto,
    /// OpenBLAS.
    OpenBlas,
    /// MKL, found where [`mkl_candidates`] looks.
    Mkl,
    /// MKL from this file.
    MklAt(PathBuf),
}

impl Request {
    /// Reads a value of `DPS_BLAS` (`None`: unset).
    pub fn parse(value: Option<&str>) -> Result<Request, String> {
        Ok(match value.map(str::trim) {
            None | Some("") | Some("auto") => Request::Auto,
            Some("openblas") => Request::OpenBlas,
            Some("mkl") => Request::Mkl,
            Some(path) if path.contains('/') => Request::MklAt(PathBuf::from(path)),
            Some(other) => {
                return Err(format!("{CHOICE}={other:?}: expected auto, openblas, mkl or the path of a libmkl_rt file"))
            }
        })
    }
}

/// Where MKL may be, in order: `$DPS_MKL_DIR/lib`, `mkl.sh`'s default directory, then the
/// loader's search path by name.
fn mkl_candidates() -> Vec<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")));
    let dirs = [std::env::var_os("DPS_MKL_DIR").map(PathBuf::from), cache.map(|c| c.join("dps/mkl"))];
    let mut found = Vec::new();
    for dir in dirs.into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(dir.join("lib")) else { continue };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libmkl_rt.so")))
            .collect();
        files.sort();
        found.extend(files.into_iter().rev());
    }
    found.extend(["libmkl_rt.so.3", "libmkl_rt.so.2", "libmkl_rt.so"].map(PathBuf::from));
    found
}

/// The library for a request: `Err` where MKL was asked for and cannot be loaded.
fn choose(request: &Request, user_coretype: bool) -> Result<Library, String> {
    let first_mkl = |paths: Vec<PathBuf>| {
        let mut errors = Vec::new();
        for path in paths {
            match Mkl::load(&path) {
                Ok(mkl) => return Ok(mkl),
                Err(e) => errors.push(e),
            }
        }
        Err(errors)
    };
    match request {
        Request::OpenBlas => Ok(Library::OpenBlas),
        Request::Auto if user_coretype => Ok(Library::OpenBlas),
        Request::Auto => Ok(first_mkl(mkl_candidates()).map_or(Library::OpenBlas, |m| Library::Mkl(Box::new(m)))),
        Request::Mkl => first_mkl(mkl_candidates()).map(|m| Library::Mkl(Box::new(m))).map_err(|errors| {
            format!("{CHOICE}=mkl: Intel MKL not found (install it with bench/blasref/mkl.sh): {}", errors.join("; "))
        }),
        Request::MklAt(path) => {
            Mkl::load(path).map(|m| Library::Mkl(Box::new(m))).map_err(|e| format!("{CHOICE}: cannot load MKL: {e}"))
        }
    }
}

static LIBRARY: OnceLock<Result<Library, String>> = OnceLock::new();

/// The library of this process, chosen on first use; `Err` names the bad `DPS_BLAS`.
pub fn try_get() -> Result<&'static Library, &'static str> {
    LIBRARY
        .get_or_init(|| {
            let value = std::env::var(CHOICE).ok();
            let request = Request::parse(value.as_deref())?;
            choose(&request, crate::kernel_choice::users_coretype())
        })
        .as_ref()
        .map_err(String::as_str)
}

/// The library of this process.
///
/// # Panics
/// If `DPS_BLAS` is bad or names an MKL that cannot be loaded (programs check it first
/// thing in `main`: `kernel_choice::use_the_best_core`).
pub fn get() -> &'static Library {
    try_get().unwrap_or_else(|e| panic!("{e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_choice_is_read_from_its_variable() {
        assert_eq!(Request::parse(None), Ok(Request::Auto));
        assert_eq!(Request::parse(Some("auto")), Ok(Request::Auto));
        assert_eq!(Request::parse(Some("openblas")), Ok(Request::OpenBlas));
        assert_eq!(Request::parse(Some("mkl")), Ok(Request::Mkl));
        assert_eq!(Request::parse(Some("/opt/mkl/libmkl_rt.so")), Ok(Request::MklAt("/opt/mkl/libmkl_rt.so".into())));
        let bad = Request::parse(Some("atlas")).unwrap_err();
        assert!(bad.contains("DPS_BLAS=\"atlas\"") && bad.contains("openblas"), "{bad}");
    }

    #[test]
    fn a_missing_mkl_is_an_error_only_when_asked_for() {
        let missing = Request::MklAt("/nonexistent/libmkl_rt.so".into());
        let error = choose(&missing, false).expect_err("no MKL there");
        assert!(error.contains("/nonexistent/libmkl_rt.so"), "{error}");
        assert!(matches!(choose(&Request::OpenBlas, false), Ok(Library::OpenBlas)));
        assert!(matches!(choose(&Request::Auto, true), Ok(Library::OpenBlas)), "the user's OPENBLAS_CORETYPE");
    }

    #[test]
    fn code_paths_are_named() {
        assert_eq!(code_path_name(14), "AVX512_E1");
        assert_eq!(code_path_name(10), "AVX2");
        assert_eq!(code_path_name(99), "branch 99");
    }
}
