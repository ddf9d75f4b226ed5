//! The world's geometry: how it is cut into horizontal bands ([`Layout`]) and rectangles of
//! it ([`Rect`]), shared by the graphs, the options that name a region and the viewer.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// How the world is cut into bands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// World width.
    pub width: usize,
    /// World height.
    pub height: usize,
    /// Number of bands.
    pub bands: usize,
    /// Torus (edges wrap) or dead edges.
    pub wrap: bool,
}

impl Layout {
    /// Rows of band `b`: the height shared as evenly as possible.
    pub fn rows(&self, b: usize) -> Range<usize> {
        self.height * b / self.bands..self.height * (b + 1) / self.bands
    }

    /// The band holding the row above band `b`, if any.
    pub fn above(&self, b: usize) -> Option<usize> {
        match b {
            0 if self.wrap => Some(self.bands - 1),
            0 => None,
            b => Some(b - 1),
        }
    }

    /// The band holding the row below band `b`, if any.
    pub fn below(&self, b: usize) -> Option<usize> {
        match b + 1 {
            n if n < self.bands => Some(n),
            _ if self.wrap => Some(0),
            _ => None,
        }
    }
}

/// A rectangle of the world.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rect {
    /// Left column.
    pub x: usize,
    /// Top row.
    pub y: usize,
    /// Columns.
    pub width: usize,
    /// Rows.
    pub height: usize,
}
