//! `read` on images: returned as an image, scaled into the provider's limits, for a model
//! that accepts images; refused in words for one that does not; broken files are errors.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
mod common;

use std::io::Cursor;

use common::Fixture;
use pith_core::ImageLimits;
use pith_tools::{Limits, PermissionMode};
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn picture(width: u32, height: u32, format: image::ImageFormat) -> Vec<u8> {
    let pixels = image::RgbImage::from_fn(width, height, |x, y| {
        image::Rgb([(x % 251) as u8, (y % 241) as u8, 90])
    });
    let mut out = Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(pixels)
        .write_to(&mut out, format)
        .unwrap();
    out.into_inner()
}

fn fixture(images: Option<ImageLimits>) -> Fixture {
    Fixture::build_with(
        PermissionMode::ReadOnly,
        None,
        Limits::default(),
        |_, config| config.with_images(images),
    )
}

#[tokio::test]
async fn a_screenshot_is_returned_as_an_image_within_the_limits() {
    let f = fixture(Some(ImageLimits::ANTHROPIC));
    f.write(
        "shots/wide.png",
        picture(2400, 1200, image::ImageFormat::Png),
    );
    f.write("photo.jpg", picture(300, 200, image::ImageFormat::Jpeg));
    let call = f.next_call("read", json!({"path": "shots/wide.png"}));
    let (result, images) = f
        .registry
        .execute_with_images(&call, &CancellationToken::new(), false)
        .await;
    assert!(!result.is_error, "{}", result.content);
    assert_eq!(images.len(), 1);
    let image = &images[0];
    assert_eq!(image.path, "shots/wide.png");
    assert_eq!(image.media_type, "image/png");
    assert!(image.width <= 1568 && u64::from(image.width) * u64::from(image.height) <= 1092 * 1092);
    assert!(
        result
            .content
            .contains(&format!("{}×{}", image.width, image.height)),
        "{}",
        result.content
    );
    let call = f.next_call("read", json!({"path": "photo.jpg"}));
    let (_, images) = f
        .registry
        .execute_with_images(&call, &CancellationToken::new(), false)
        .await;
    assert_eq!(
        (images[0].width, images[0].height),
        (300, 200),
        "small: as it is"
    );
    assert_eq!(images[0].media_type, "image/jpeg");
}

#[tokio::test]
async fn a_model_without_images_gets_a_clear_refusal() {
    let f = fixture(None);
    f.write("shot.png", picture(20, 10, image::ImageFormat::Png));
    let result = f.call("read", json!({"path": "shot.png"})).await;
    assert!(result.is_error);
    assert_eq!(
        result.content,
        "`shot.png` is an image (PNG); the model in use does not accept images, so read \
         cannot show it. Ask the user to describe it, or to switch to a model that accepts \
         images (/model)."
    );
}

#[tokio::test]
async fn a_broken_image_is_an_error_and_text_files_read_as_before() {
    let f = fixture(Some(ImageLimits::OPENAI));
    let mut broken = picture(20, 10, image::ImageFormat::Png);
    broken.truncate(40);
    f.write("broken.png", broken);
    f.write("notes.png.txt", "not an image\n");
    let result = f.call("read", json!({"path": "broken.png"})).await;
    assert!(result.is_error);
    assert!(
        result.content.contains("not a valid PNG"),
        "{}",
        result.content
    );
    let text = f.call("read", json!({"path": "notes.png.txt"})).await;
    assert!(text.content.contains("not an image"), "{}", text.content);
}
