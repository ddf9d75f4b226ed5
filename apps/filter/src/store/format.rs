//! The store's format: where a stored image's files are (`DIR/NAME.json`,
//! `DIR/disk<k>/NAME.<generation>.tiles`), the metadata, the generation that names a write's
//! tile files, and the tile file's header.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::layout::Tiling;
use crate::raster::Depth;

/// The first bytes of a tile file.
pub const MAGIC: &[u8; 8] = b"DPSTILE1";
/// Bytes of a tile file's header.
pub const HEADER: usize = 32;
/// The metadata's `format` field.
pub const FORMAT: &str = "dps-filter tiled image";
/// The format version written: 3, the geometry sealed by a checksum (2: the tile files
/// named by generation; 1: neither).
pub const VERSION: u32 = 3;
/// The largest image side accepted (pixels).
pub const MAX_SIDE: usize = 1 << 20;
/// The largest image accepted (bytes).
pub const MAX_BYTES: usize = 1 << 40;

/// A stored image's metadata (`NAME.json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Meta {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version: 1 (tile files `NAME.tiles`), 2 (with `generation`), both still read,
    /// or 3 (with `checksum`).
    pub version: u32,
    /// Image width, pixels.
    pub width: usize,
    /// Image height, pixels.
    pub height: usize,
    /// Tile side, pixels.
    pub tile: usize,
    /// Bits per pixel: 1, 8, 16 or 24.
    pub bits: u32,
    /// Disks the tiles are striped over.
    pub disks: usize,
    /// The allocation rule's row offset s.
    pub stride: usize,
    /// The generation of the tile files (version 2 on; version 1 has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<Generation>,
    /// `fnv1a64:` and 16 hex digits: FNV-1a of every field above (version 3; see
    /// [`Meta::seal`]). Its low 32 bits are also in each tile file's header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<String>,
}

impl Meta {
    /// The metadata of an image with this geometry, its tiles in files of `generation`.
    pub fn new(tiling: Tiling, depth: Depth, generation: Generation) -> Meta {
        let Tiling { width, height, tile, disks, stride } = tiling;
        let bits = depth.bits();
        let generation = Some(generation);
        let format = FORMAT.into();
        Meta { format, version: VERSION, width, height, tile, bits, disks, stride, generation, checksum: None }.sealed()
    }

    /// The same image in tile files of `generation` (a replacement, or a filter's output).
    pub fn with_generation(&self, generation: Generation) -> Meta {
        Meta { version: VERSION, generation: Some(generation), ..self.clone() }.sealed()
    }

    /// FNV-1a 64 of the text `FORMAT version V: width W height H tile T bits B disks D
    /// stride S generation G`: every field that gives the tile files their meaning.
    pub fn seal(&self) -> u64 {
        use std::hash::Hasher;
        let generation = self.generation.map(|g| g.to_string()).unwrap_or_default();
        let text = format!(
            "{} version {}: width {} height {} tile {} bits {} disks {} stride {} generation {generation}",
            self.format, self.version, self.width, self.height, self.tile, self.bits, self.disks, self.stride
        );
        let mut hasher = fnv::FnvHasher::default();
        hasher.write(text.as_bytes());
        hasher.finish()
    }

    /// The `checksum` field's text for [`seal`](Self::seal).
    fn checksum_text(&self) -> String {
        format!("fnv1a64:{:016x}", self.seal())
    }

    fn sealed(mut self) -> Meta {
        self.checksum = Some(self.checksum_text());
        self
    }

    /// What a tile file's header holds of the seal: its low 32 bits (version 3), 0 (older
    /// versions, whose header had 0 there).
    pub fn header_seal(&self) -> u32 {
        if self.version >= 3 {
            self.seal() as u32
        } else {
            0
        }
    }

    /// `DIR/disk<k>/NAME.<generation>.tiles` (version 1: `NAME.tiles`).
    pub fn tile_path(&self, dir: &Path, name: &str, disk: usize) -> PathBuf {
        disk_dir(dir, disk).join(tile_file_name(name, self.generation))
    }

    /// The tiling it describes.
    pub fn tiling(&self) -> Tiling {
        Tiling { width: self.width, height: self.height, tile: self.tile, disks: self.disks, stride: self.stride }
    }

    /// Its pixel depth.
    pub fn depth(&self) -> Depth {
        Depth::from_bits(self.bits).expect("checked when parsed")
    }

    /// Bytes of one tile slot.
    pub fn tile_bytes(&self) -> usize {
        self.tile * self.tile * self.depth().bytes()
    }

    /// Parses and checks the metadata's text.
    ///
    /// # Errors
    /// What is wrong, in words: not JSON, a missing or unknown field, a value out of range.
    pub fn parse(text: &str) -> Result<Meta, String> {
        let meta: Meta = serde_json::from_str(text).map_err(|e| e.to_string())?;
        meta.check()?;
        Ok(meta)
    }

    /// Checks the values.
    ///
    /// # Errors
    /// The first value out of range, named.
    pub fn check(&self) -> Result<(), String> {
        if self.format != FORMAT || !(1..=VERSION).contains(&self.version) {
            return Err(format!(
                "format {:?} version {}: expected {FORMAT:?} version 1 or {VERSION} (a newer dps-filter wrote it?)",
                self.format, self.version
            ));
        }
        match (self.version, self.generation) {
            (1, Some(_)) => return Err("version 1 has no \"generation\" field".into()),
            (2.., None) => return Err(format!("missing field `generation` (version {})", self.version)),
            _ => {}
        }
        match (self.version, &self.checksum) {
            (1 | 2, Some(_)) => return Err(format!("version {} has no \"checksum\" field", self.version)),
            (3.., None) => return Err(format!("missing field `checksum` (version {})", self.version)),
            (3.., Some(sum)) if *sum != self.checksum_text() => {
                return Err(format!(
                    "field `checksum` {sum:?} does not match the fields it seals (width, height, tile, bits, \
                     disks, stride, generation: one was edited or damaged)"
                ))
            }
            _ => {}
        }
        if !(1..=MAX_SIDE).contains(&self.width) || !(1..=MAX_SIDE).contains(&self.height) {
            return Err(format!("size {}x{}: each side must be between 1 and {MAX_SIDE}", self.width, self.height));
        }
        let depth = Depth::from_bits(self.bits).ok_or(format!("bits {}: must be 1, 8, 16 or 24", self.bits))?;
        if self.width * self.height * depth.bytes() > MAX_BYTES {
            return Err(format!(
                "{}x{} pixels of {} bits is more than {MAX_BYTES} bytes",
                self.width, self.height, self.bits
            ));
        }
        check_tile(self.tile, self.width, self.height)?;
        if !(1..=u32::MAX as usize).contains(&self.disks) || self.stride >= self.disks.max(1) {
            return Err(format!("disks {} stride {}: need 1 ≤ disks and stride < disks", self.disks, self.stride));
        }
        Ok(())
    }
}

/// Checks a tile side against the image.
///
/// # Errors
/// A tile of 0, or larger than both sides of the image.
pub fn check_tile(tile: usize, width: usize, height: usize) -> Result<(), String> {
    if tile == 0 {
        return Err("tile size 0: must be at least 1".into());
    }
    if tile > width.max(height) {
        return Err(format!("tile size {tile} is larger than the {width}x{height} image"));
    }
    Ok(())
}

/// A tile file's header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileHeader {
    /// The disk the file belongs to.
    pub disk: u32,
    /// Disks of the image.
    pub disks: u32,
    /// Tiles in the file.
    pub tiles: u32,
    /// Tile side.
    pub tile: u32,
    /// Bytes per pixel.
    pub bytes_per_pixel: u32,
    /// The low 32 bits of the metadata's seal (version 3; 0 before): binds the file to the
    /// width, height, bits, stride and generation, which its other fields do not give.
    pub seal: u32,
}

impl TileHeader {
    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER] {
        let mut out = [0u8; HEADER];
        out[..8].copy_from_slice(MAGIC);
        for (i, v) in self.fields().into_iter().enumerate() {
            out[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    fn fields(&self) -> [u32; 6] {
        [self.disk, self.disks, self.tiles, self.tile, self.bytes_per_pixel, self.seal]
    }

    /// The first field that differs from `want`'s, as `name is X, expected Y`.
    pub fn mismatch(&self, want: &TileHeader) -> Option<String> {
        let names = ["disk", "disks", "tiles", "tile", "bytes_per_pixel", "seal"];
        let (name, (have, want)) =
            names.into_iter().zip(self.fields().into_iter().zip(want.fields())).find(|(_, (h, w))| h != w)?;
        Some(format!("header field `{name}` is {have}, expected {want}"))
    }

    /// Parses the first [`HEADER`] bytes of a tile file.
    ///
    /// # Errors
    /// Too short, or a wrong magic.
    pub fn parse(bytes: &[u8]) -> Result<TileHeader, String> {
        if bytes.len() < HEADER {
            return Err(format!("{} bytes: shorter than the {HEADER}-byte header", bytes.len()));
        }
        if &bytes[..8] != MAGIC {
            return Err("not a dps-filter tile file (wrong magic)".into());
        }
        let field = |i: usize| u32::from_le_bytes(bytes[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
        Ok(TileHeader {
            disk: field(0),
            disks: field(1),
            tiles: field(2),
            tile: field(3),
            bytes_per_pixel: field(4),
            seal: field(5),
        })
    }

    /// The header disk `disk` of `meta` must have.
    pub fn expected(meta: &Meta, disk: usize) -> TileHeader {
        TileHeader {
            disk: disk as u32,
            disks: meta.disks as u32,
            tiles: meta.tiling().tiles_on(disk) as u32,
            tile: meta.tile as u32,
            bytes_per_pixel: meta.depth().bytes() as u32,
            seal: meta.header_seal(),
        }
    }
}

/// `DIR/NAME.json`.
pub fn meta_path(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}.json"))
}

/// `DIR/disk<k>`.
pub fn disk_dir(dir: &Path, disk: usize) -> PathBuf {
    dir.join(format!("disk{disk}"))
}

/// The disk directories present in `dir` (`disk<k>`, whatever k: an earlier image of the
/// same name may have had more disks).
pub fn disk_dirs_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<(usize, PathBuf)> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let k: usize = name.strip_prefix("disk")?.parse().ok()?;
            (disk_dir(dir, k).is_dir()).then(|| (k, disk_dir(dir, k)))
        })
        .collect();
    found.sort();
    found.into_iter().map(|(_, p)| p).collect()
}

/// Which write of a stored image its tile files belong to (a random 64-bit number, written
/// as 16 lowercase hex digits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Generation(pub u64);

impl Generation {
    /// A generation no earlier write of any image used (random: unique in practice, so two
    /// writers or a killed writer's files never share a name with the new write's).
    pub fn fresh() -> Generation {
        Generation(rand::random())
    }

    /// Parses 16 lowercase hex digits.
    pub fn parse(text: &str) -> Option<Generation> {
        let hex = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
        (text.len() == 16 && text.bytes().all(hex)).then(|| Generation(u64::from_str_radix(text, 16).expect("hex")))
    }
}

impl fmt::Display for Generation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl Serialize for Generation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Generation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Generation, D::Error> {
        let text = String::deserialize(d)?;
        Generation::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("generation {text:?}: expected 16 lowercase hex digits")))
    }
}

/// The file name of image `name`'s tiles on each disk: `NAME.<generation>.tiles`, or the
/// version-1 format's `NAME.tiles` (no generation).
pub fn tile_file_name(name: &str, generation: Option<Generation>) -> String {
    match generation {
        Some(g) => format!("{name}.{g}.tiles"),
        None => format!("{name}.tiles"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn generations_print_and_parse_as_16_hex_digits() {
        let g = Generation(0x00ab_cdef_0123_4567);
        assert_eq!(g.to_string(), "00abcdef01234567");
        assert_eq!(Generation::parse(&g.to_string()), Some(g));
        for bad in ["", "00ABCDEF01234567", "abc", "00abcdef012345678", "00abcdef0123456g"] {
            assert_eq!(Generation::parse(bad), None, "{bad}");
        }
        assert_ne!(Generation::fresh(), Generation::fresh());
    }

    #[test]
    fn versions_and_generations_must_agree() {
        let tiling = Tiling { width: 30, height: 20, tile: 8, disks: 3, stride: 2 };
        let meta = Meta::new(tiling, Depth::Bit8, Generation(0xab));
        let text = serde_json::to_string(&meta).unwrap();
        assert!(text.contains("\"generation\":\"00000000000000ab\""), "{text}");
        assert_eq!(Meta::parse(&text), Ok(meta.clone()));
        let no_generation = text.replace(",\"generation\":\"00000000000000ab\"", "");
        assert!(Meta::parse(&no_generation).unwrap_err().contains("generation"));
        let unsealed = Meta { version: 2, checksum: None, ..meta.clone() };
        let v2 = serde_json::to_string(&unsealed).unwrap();
        assert_eq!(Meta::parse(&v2), Ok(unsealed.clone()), "version 2 is still read");
        let v1_with_generation = v2.replace("\"version\":2", "\"version\":1");
        assert!(Meta::parse(&v1_with_generation).unwrap_err().contains("version 1"));
        let v4 = text.replace("\"version\":3", "\"version\":4");
        assert!(Meta::parse(&v4).unwrap_err().contains("version 4"));
        let bad = text.replace("00000000000000ab", "../../etc");
        assert!(Meta::parse(&bad).unwrap_err().contains("16 lowercase hex"));
    }

    #[test]
    fn the_checksum_seals_every_geometry_field_of_version_3_only() {
        let tiling = Tiling { width: 30, height: 20, tile: 8, disks: 5, stride: 2 };
        let meta = Meta::new(tiling, Depth::Bit8, Generation(0xab));
        let text = serde_json::to_string(&meta).unwrap();
        // Each of these leaves the tile files' sizes and the rest of their header as they were.
        for (from, to) in [
            ("\"stride\":2", "\"stride\":3"),
            ("\"width\":30", "\"width\":29"),
            ("\"height\":20", "\"height\":24"),
            ("\"bits\":8", "\"bits\":1"),
            ("00000000000000ab", "00000000000000ac"),
        ] {
            let edited = text.replace(from, to);
            assert_ne!(edited, text);
            let e = Meta::parse(&edited).unwrap_err();
            assert!(e.contains("field `checksum`") && e.contains("does not match"), "{from}: {e}");
        }
        let unsealed = text.replace(&format!(",\"checksum\":\"{}\"", meta.checksum.as_ref().unwrap()), "");
        assert!(Meta::parse(&unsealed).unwrap_err().contains("missing field `checksum`"));
        let v2_sealed = text.replace("\"version\":3", "\"version\":2");
        assert!(Meta::parse(&v2_sealed).unwrap_err().contains("version 2 has no \"checksum\""));
        // The header holds the seal's low bits; a version-2 header held 0 there.
        assert_eq!(TileHeader::expected(&meta, 0).seal, meta.seal() as u32);
        assert_eq!(TileHeader::expected(&Meta { version: 2, checksum: None, ..meta }, 0).seal, 0);
    }

    proptest! {
        #[test]
        fn metadata_parsing_never_panics(text in ".{0,200}") {
            let _ = Meta::parse(&text);
        }

        #[test]
        fn metadata_fields_are_checked(width in 0usize..5000, height in 0usize..5000, tile in 0usize..6000,
                                       bits in 0u32..30, disks in 0usize..20, stride in 0usize..25) {
            let meta = Meta { format: FORMAT.into(), version: 1, width, height, tile, bits, disks, stride, generation: None, checksum: None };
            let text = serde_json::to_string(&meta).unwrap();
            let ok = (1..=MAX_SIDE).contains(&width) && (1..=MAX_SIDE).contains(&height)
                && Depth::from_bits(bits).is_some() && tile >= 1 && tile <= width.max(height)
                && disks >= 1 && stride < disks;
            prop_assert_eq!(Meta::parse(&text).is_ok(), ok, "{}", text);
        }

        #[test]
        fn tile_headers_round_trip_and_garbage_is_refused(disk: u32, disks: u32, tiles: u32, tile: u32, bpp: u32, seal: u32,
                                                          garbage in proptest::collection::vec(any::<u8>(), 0..64)) {
            let h = TileHeader { disk, disks, tiles, tile, bytes_per_pixel: bpp, seal };
            prop_assert_eq!(TileHeader::parse(&h.encode()), Ok(h));
            if garbage.len() < HEADER || &garbage[..8] != MAGIC {
                prop_assert!(TileHeader::parse(&garbage).is_err());
            }
        }
    }
}
