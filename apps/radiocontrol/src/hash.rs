//! The hash the data set's metadata is sealed with.

/// `fnv1a64:` and the 16 hex digits of FNV-1a 64 of `bytes` (the platform file's hash).
pub fn fnv1a64(bytes: &[u8]) -> String {
    use std::hash::Hasher;
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(bytes);
    format!("fnv1a64:{:016x}", hasher.finish())
}
