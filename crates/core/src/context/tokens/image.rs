//! What an image costs the model, from the providers' published formulas.

/// How a provider counts an image, from its published formula.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImageFormula {
    /// Anthropic: an image larger than 1568 px on its long edge (or about 1.15
    /// megapixels) is scaled down first, then costs `width × height / 750` tokens.
    Anthropic,
    /// OpenAI (GPT-4o and later, `detail: high`/`auto`): scaled to fit 2048 × 2048, then
    /// its short side to at most 768 px; `85 + 170 × tiles`, one tile per 512 × 512
    /// square (partial tiles count).
    OpenAiTiles,
    /// The larger of the two: for a provider whose formula pith does not know.
    #[default]
    Conservative,
}

impl ImageFormula {
    /// Estimated input tokens of an image of `width` × `height` pixels.
    pub fn tokens(self, width: u32, height: u32) -> usize {
        match self {
            ImageFormula::Anthropic => anthropic_image_tokens(width, height),
            ImageFormula::OpenAiTiles => openai_image_tokens(width, height),
            ImageFormula::Conservative => {
                anthropic_image_tokens(width, height).max(openai_image_tokens(width, height))
            }
        }
    }
}

/// Scales `(w, h)` down (never up) so that it fits `max_long` on its long edge and
/// `max_short` on its short edge, keeping the aspect ratio.
pub fn fit_within(width: u32, height: u32, max_long: u32, max_short: u32) -> (u32, u32) {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let (long, short) = if w >= h { (w, h) } else { (h, w) };
    let scale = (f64::from(max_long) / long)
        .min(f64::from(max_short) / short)
        .min(1.0);
    let scaled = |v: f64| ((v * scale).round() as u32).max(1);
    (scaled(w), scaled(h))
}

fn anthropic_image_tokens(width: u32, height: u32) -> usize {
    let (mut w, mut h) = fit_within(width, height, 1568, 1568);
    let pixels = f64::from(w) * f64::from(h);
    // Anthropic's largest unresized square is 1092 × 1092 ("about 1.15 megapixels").
    const MAX_PIXELS: f64 = 1092.0 * 1092.0;
    if pixels > MAX_PIXELS {
        let scale = (MAX_PIXELS / pixels).sqrt();
        w = ((f64::from(w) * scale) as u32).max(1);
        h = ((f64::from(h) * scale) as u32).max(1);
    }
    (u64::from(w) * u64::from(h)).div_ceil(750) as usize
}

fn openai_image_tokens(width: u32, height: u32) -> usize {
    let (w, h) = fit_within(width, height, 2048, 2048);
    let (w, h) = fit_within(w, h, u32::MAX, 768);
    let tiles = w.div_ceil(512) as usize * h.div_ceil(512) as usize;
    85 + 170 * tiles
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_formulas_follow_the_published_examples() {
        // Anthropic's table: 1092×1092 ≈ 1590 tokens, 200×200 ≈ 54.
        assert_eq!(ImageFormula::Anthropic.tokens(1092, 1092), 1590);
        assert_eq!(ImageFormula::Anthropic.tokens(200, 200), 54);
        // Larger images are scaled down first: never more than ~1.15 MP / 750.
        assert!(ImageFormula::Anthropic.tokens(4000, 3000) <= 1590);
        // OpenAI: 1024×1024 → 768×768 → 4 tiles → 85 + 680; 2048×4096 → 768×1536 → 6 tiles.
        assert_eq!(ImageFormula::OpenAiTiles.tokens(1024, 1024), 765);
        assert_eq!(ImageFormula::OpenAiTiles.tokens(2048, 4096), 1105);
        assert_eq!(ImageFormula::OpenAiTiles.tokens(100, 100), 255);
        assert_eq!(ImageFormula::Conservative.tokens(1092, 1092), 1590);
        assert_eq!(fit_within(4000, 1000, 2000, 2000), (2000, 500));
        assert_eq!(fit_within(10, 20, 2000, 2000), (10, 20));
    }
}
