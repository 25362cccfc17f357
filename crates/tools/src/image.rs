//! Images for the model: recognising PNG, JPEG, GIF and WebP files, and loading one as a
//! [`pith_core::Image`] scaled down to a provider's limits ([`ImageLimits`]).
//!
//! A file already within the limits goes as it is (its bytes, its type). A larger one is
//! decoded, scaled (aspect kept, never up) and encoded again — JPEG stays JPEG, the others
//! become PNG (a GIF gives its first frame) — and, while still above the byte limit, made
//! smaller again. Decoding is bounded: the decoder's own memory limit, and at most
//! [`MAX_FILE_BYTES`] read.

use std::io::Cursor;
use std::path::Path;

use image::{DynamicImage, ImageFormat, ImageReader};
use pith_core::{Image, ImageLimits};
use thiserror::Error;

/// Largest image file `read` loads.
pub const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;

/// Why an image could not be loaded.
#[derive(Debug, Error)]
pub enum ImageError {
    /// The file could not be read.
    #[error("cannot read the image: {0}")]
    Io(#[from] std::io::Error),
    /// The file is larger than [`MAX_FILE_BYTES`].
    #[error("the image file is {0} bytes; read loads images of at most 50 MB")]
    TooLarge(u64),
    /// The bytes are not a valid image of a supported format.
    #[error("the file is not a valid PNG, JPEG, GIF or WebP image: {0}")]
    Decode(String),
}

/// The media type of an image file, from its first bytes (PNG, JPEG, GIF, WebP), or
/// `None` when it is none of them.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// Loads the image at `path` (shown to the model as `shown`) within `limits`.
pub fn load(path: &Path, shown: &str, limits: ImageLimits) -> Result<Image, ImageError> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_FILE_BYTES {
        return Err(ImageError::TooLarge(size));
    }
    let bytes = std::fs::read(path)?;
    from_bytes(&bytes, shown, limits)
}

/// [`load`] on bytes already read.
pub fn from_bytes(bytes: &[u8], shown: &str, limits: ImageLimits) -> Result<Image, ImageError> {
    let media_type = sniff(bytes).ok_or_else(|| ImageError::Decode("unknown format".into()))?;
    // Decoded whole even when it goes as it is: a broken file is refused here, not by
    // the provider.
    let decoded = ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(ImageError::Io)?
        .decode()
        .map_err(|e| ImageError::Decode(e.to_string()))?;
    let (width, height) = (decoded.width(), decoded.height());
    let (fit_w, fit_h) = fit(width, height, limits);
    if (fit_w, fit_h) == (width, height) && bytes.len() <= limits.max_bytes {
        return Ok(image(shown, media_type, width, height, bytes));
    }
    let jpeg = media_type == "image/jpeg";
    let (mut w, mut h) = (fit_w, fit_h);
    loop {
        let scaled = decoded.resize_exact(w, h, image::imageops::FilterType::Triangle);
        let encoded = encode(&scaled, jpeg)?;
        if encoded.len() <= limits.max_bytes || w <= 64 || h <= 64 {
            let media_type = if jpeg { "image/jpeg" } else { "image/png" };
            return Ok(image(shown, media_type, w, h, &encoded));
        }
        // Still too many bytes: three quarters of the size, again.
        w = (w * 3 / 4).max(1);
        h = (h * 3 / 4).max(1);
    }
}

/// `width × height` scaled down (never up) into `limits`, aspect kept.
pub fn fit(width: u32, height: u32, limits: ImageLimits) -> (u32, u32) {
    let (mut w, mut h) =
        pith_core::tokens::fit_within(width, height, limits.max_long, limits.max_short);
    let pixels = u64::from(w) * u64::from(h);
    if pixels > limits.max_pixels {
        let scale = (limits.max_pixels as f64 / pixels as f64).sqrt();
        w = ((f64::from(w) * scale) as u32).max(1);
        h = ((f64::from(h) * scale) as u32).max(1);
    }
    (w, h)
}

fn encode(image: &DynamicImage, jpeg: bool) -> Result<Vec<u8>, ImageError> {
    let mut out = Cursor::new(Vec::new());
    let result = if jpeg {
        image.to_rgb8().write_to(&mut out, ImageFormat::Jpeg)
    } else {
        image.write_to(&mut out, ImageFormat::Png)
    };
    result.map_err(|e| ImageError::Decode(e.to_string()))?;
    Ok(out.into_inner())
}

fn image(shown: &str, media_type: &str, width: u32, height: u32, bytes: &[u8]) -> Image {
    Image {
        path: shown.to_owned(),
        media_type: media_type.to_owned(),
        width,
        height,
        data: base64(bytes),
    }
}

/// Standard base64 with padding.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png(width: u32, height: u32) -> Vec<u8> {
        let image = DynamicImage::ImageRgb8(image::RgbImage::from_fn(width, height, |x, y| {
            image::Rgb([(x % 256) as u8, (y % 256) as u8, ((x + y) % 256) as u8])
        }));
        encode(&image, false).unwrap()
    }

    #[test]
    fn formats_are_recognised_by_their_first_bytes() {
        assert_eq!(sniff(&png(2, 2)), Some("image/png"));
        assert_eq!(sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(sniff(b"GIF89a...."), Some("image/gif"));
        assert_eq!(sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(sniff(b"fn main() {}"), None);
    }

    #[test]
    fn a_small_image_goes_as_it_is_and_a_large_one_is_scaled_into_the_limits() {
        let small = png(40, 30);
        let image = from_bytes(&small, "small.png", ImageLimits::ANTHROPIC).unwrap();
        assert_eq!((image.width, image.height), (40, 30));
        assert_eq!(image.data, base64(&small), "unchanged bytes");
        let large = png(3000, 1500);
        let image = from_bytes(&large, "large.png", ImageLimits::ANTHROPIC).unwrap();
        assert!(image.width <= 1568 && image.height <= 1568);
        assert!(u64::from(image.width) * u64::from(image.height) <= 1092 * 1092);
        assert!((image.width as f64 / image.height as f64 - 2.0).abs() < 0.02);
        assert_eq!(image.media_type, "image/png");
        let openai = from_bytes(&large, "large.png", ImageLimits::OPENAI).unwrap();
        assert_eq!((openai.width, openai.height), (1536, 768));
    }

    #[test]
    fn broken_files_are_clear_errors() {
        let mut broken = png(10, 10);
        broken.truncate(30);
        let error = from_bytes(&broken, "b.png", ImageLimits::OPENAI).unwrap_err();
        assert!(error.to_string().contains("not a valid"), "{error}");
        assert!(from_bytes(b"hello", "x.png", ImageLimits::OPENAI).is_err());
    }

    #[test]
    fn base64_matches_the_standard_alphabet_and_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"f"), "Zg==");
        assert_eq!(base64(b"fo"), "Zm8=");
        assert_eq!(base64(b"foo"), "Zm9v");
        assert_eq!(base64(b"foobar"), "Zm9vYmFy");
        assert_eq!(base64(&[0xFF, 0xFE]), "//4=");
    }
}
