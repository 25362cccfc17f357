//! What images a provider accepts: the limits `read` scales an image to before it goes
//! to the model. The provider layer says which apply to a model
//! (`pith_providers::models::Capabilities`); the tools apply them.

/// What a provider accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ImageLimits {
    /// Longest edge in pixels.
    pub max_long: u32,
    /// Shortest edge in pixels (OpenAI scales the short side to 768 anyway).
    pub max_short: u32,
    /// Most pixels (Anthropic: about 1.15 megapixels).
    pub max_pixels: u64,
    /// Most bytes of the encoded image (before base64).
    pub max_bytes: usize,
}

impl ImageLimits {
    /// Anthropic: 1568 px on the long edge, 1092 × 1092 pixels at most, 5 MB base64.
    pub const ANTHROPIC: ImageLimits = ImageLimits {
        max_long: 1568,
        max_short: 1568,
        max_pixels: 1092 * 1092,
        max_bytes: 3_750_000,
    };
    /// OpenAI (`detail: high`): within 2048 × 2048, short side 768.
    pub const OPENAI: ImageLimits = ImageLimits {
        max_long: 2048,
        max_short: 768,
        max_pixels: 2048 * 768,
        max_bytes: 3_750_000,
    };
    /// An OpenAI-compatible server running any model: within both.
    pub const COMPATIBLE: ImageLimits = ImageLimits {
        max_long: 1568,
        max_short: 768,
        max_pixels: 1568 * 768,
        max_bytes: 3_750_000,
    };
}
