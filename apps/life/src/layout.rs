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

    /// `rect` moved and cut to lie inside the world, at least one cell: what the region
    /// service serves for a request from another program, which may ask for any rectangle.
    pub fn clamp(&self, rect: Rect) -> Rect {
        let x = rect.x.min(self.width - 1);
        let y = rect.y.min(self.height - 1);
        Rect { x, y, width: rect.width.clamp(1, self.width - x), height: rect.height.clamp(1, self.height - y) }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_keeps_inside_rectangles_and_cuts_the_others() {
        let layout = Layout { width: 10, height: 6, bands: 2, wrap: false };
        let inside = Rect { x: 2, y: 1, width: 8, height: 5 };
        assert_eq!(layout.clamp(inside), inside);
        let r = |x, y, width, height| Rect { x, y, width, height };
        assert_eq!(layout.clamp(r(8, 5, 7, 9)), r(8, 5, 2, 1));
        assert_eq!(layout.clamp(r(usize::MAX, 40, 0, usize::MAX)), r(9, 5, 1, 1));
    }
}
