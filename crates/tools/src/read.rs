//! The `read` tool: a file's exact text with line numbers (`cat -n` style), one page at a
//! time. Never squashed: what the model reads is what is on disk (or in the editor's
//! buffer, when the front-end offers one: [`crate::files`]), so it can quote it back in
//! an edit. Directories, binary files and non-regular files (devices, FIFOs, which
//! could block forever) are refused with a clear message. A page ends at `limit` lines or
//! `read_max_page_bytes`, whichever comes first, with an explicit `offset=N` hint.
//!
//! PNG, JPEG, GIF and WebP files (recognised by their first bytes) are returned as an
//! image for a model that accepts images, scaled down to its provider's limits (see
//! [`crate::image`]), with a one-line description as the text; a model that accepts none
//! gets a clear refusal instead.

use std::fs::File;
use std::io::{BufRead, BufReader, Read as _};
use std::path::Path;

use async_trait::async_trait;
use pith_core::{FileAction, FileEffect, ToolContext, ToolError, ToolOutput};
use serde::Deserialize;
use serde_json::json;

use crate::arguments::object_schema;
use crate::config::{Limits, ToolEnv};
use crate::read_only::{blocking, Answer, Call, ReadOnly, ReadOnlyTool};
use crate::squash;
use crate::workspace::describe_io;

/// `read {path, offset?, limit?}`.
pub type ReadTool = ReadOnly<Read>;

/// What is read's own (see [`crate::read_only`] for the rest).
pub struct Read;

/// The arguments of `read`.
#[derive(Deserialize)]
pub struct ReadArgs {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// After a full page, at most this much more of the file is scanned to count its lines.
const COUNT_MAX_BYTES: u64 = 512 * 1024 * 1024;

/// Bytes inspected to decide whether a file is binary.
const SNIFF_BYTES: usize = 8192;

#[async_trait]
impl ReadOnlyTool for Read {
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str =
        "Read a text file. Returns its exact lines prefixed with line numbers (number, tab, \
         text). Long files are returned one page at a time; the result says which \
         `offset` to pass to read on. PNG, JPEG, GIF and WebP images are returned as \
         images when the model accepts them. Directories (use ls) and other binary files \
         are refused.";
    type Args = ReadArgs;

    fn parameters(env: &ToolEnv) -> serde_json::Value {
        object_schema(
            json!({
                "path": {"type": "string", "description": "File path, relative to the workspace root or absolute."},
                "offset": {"type": "integer", "minimum": 1, "description": "First line to return (1-based). Default 1."},
                "limit": {"type": "integer", "minimum": 1, "description": format!("Number of lines to return. Default {}.", env.limits.read_default_lines)}
            }),
            &["path"],
        )
    }

    fn path(args: &ReadArgs) -> Result<&str, ToolError> {
        if args.offset == Some(0) {
            return Err(ToolError::InvalidArguments(
                "`offset` is 1-based: the first line is offset=1".into(),
            ));
        }
        if args.limit == Some(0) {
            return Err(ToolError::InvalidArguments(
                "`limit` must be at least 1".into(),
            ));
        }
        Ok(&args.path)
    }

    async fn answer(call: Call<'_, ReadArgs>) -> Result<Answer, ToolError> {
        let (env, args, target) = (call.env, call.args, call.target);
        let offset = args.offset.unwrap_or(1);
        let limit = args.limit.unwrap_or(env.limits.read_default_lines as u64);
        let shown = env.workspace.display(&target.path);
        if let Some(media_type) = image_type(&target.path) {
            return image(env, target.path, shown, media_type, call.ctx).await;
        }
        if let Some(files) =
            crate::files::Files::new(env.files.as_deref(), &call.ctx.cancel).reader()
        {
            return buffer(files, env, target.path, shown, (offset, limit), call.ctx).await;
        }
        let limits = env.limits.clone();
        let path = target.path;
        let output = blocking(Self::NAME, call.ctx, move |_| {
            let page = read_lines(&path, &shown, offset, limit, &limits)?;
            let effect = FileEffect {
                path: shown,
                action: FileAction::Read,
                lines: page.lines,
                fingerprint: crate::fingerprint::of_file(&path),
            };
            Ok(ToolOutput::ok(page.text).with_effect(effect))
        })
        .await?;
        Ok(Answer::Exact(output))
    }
}

/// `read` through the front-end's files (an editor's buffer): the disk still says what
/// the path is (a directory, a device, a binary file are refused as they are without an
/// editor); the text is the editor's.
async fn buffer(
    files: &dyn crate::files::TextFiles,
    env: &ToolEnv,
    path: std::path::PathBuf,
    shown: String,
    (offset, limit): (u64, u64),
    ctx: &ToolContext,
) -> Result<Answer, ToolError> {
    {
        let (path, shown) = (path.clone(), shown.clone());
        blocking(Read::NAME, ctx, move |_| {
            open_text(&path, &shown)?;
            Ok(())
        })
        .await?;
    }
    let request = files.read_text(&path);
    let answer = tokio::select! {
        answer = request => answer,
        () = ctx.cancel.cancelled() => return Err(ToolError::Cancelled),
    };
    let text = match answer {
        Ok(Some(text)) => text,
        Ok(None) => {
            return Err(ToolError::Failed(format!(
                "cannot read `{shown}`: the editor says it does not exist"
            )))
        }
        Err(err) => {
            return Err(ToolError::Failed(format!(
                "cannot read `{shown}` from the editor: {err}"
            )))
        }
    };
    let reader = BufReader::new(std::io::Cursor::new(text.into_bytes()));
    let page = page_of(reader, &shown, offset, limit, &env.limits)?;
    let effect = FileEffect {
        path: shown,
        action: FileAction::Read,
        lines: page.lines,
        // The ledger compares fingerprints with the disk (docs/acp.md).
        fingerprint: crate::fingerprint::of_file(&path),
    };
    Ok(Answer::Exact(ToolOutput::ok(page.text).with_effect(effect)))
}

/// `read` of an image file: the image for a model that takes images, else a refusal.
async fn image(
    env: &ToolEnv,
    path: std::path::PathBuf,
    shown: String,
    media_type: &'static str,
    ctx: &ToolContext,
) -> Result<Answer, ToolError> {
    let kind = media_type.trim_start_matches("image/").to_ascii_uppercase();
    let Some(limits) = env.images else {
        return Ok(Answer::Exact(ToolOutput::error(format!(
            "`{shown}` is an image ({kind}); the model in use does not accept images, so \
             read cannot show it. Ask the user to describe it, or to switch to a model \
             that accepts images (/model)."
        ))));
    };
    let image = {
        let shown = shown.clone();
        blocking(Read::NAME, ctx, move |_| {
            crate::image::load(&path, &shown, limits)
                .map_err(|err| ToolError::Failed(format!("cannot read `{shown}`: {err}")))
        })
        .await?
    };
    Ok(Answer::Exact(
        ToolOutput::ok(format!(
            "image {shown} ({kind}, {}\u{d7}{} as sent)",
            image.width, image.height
        ))
        .with_image(image),
    ))
}

/// The media type of `path` when its first bytes are a PNG, JPEG, GIF or WebP image.
fn image_type(path: &Path) -> Option<&'static str> {
    // Only regular files: opening a FIFO would block.
    if !std::fs::metadata(path).ok()?.is_file() {
        return None;
    }
    let mut head = [0u8; 16];
    let mut file = File::open(path).ok()?;
    let mut filled = 0;
    while filled < head.len() {
        match file.read(&mut head[filled..]) {
            Ok(0) | Err(_) => break,
            Ok(n) => filled += n,
        }
    }
    crate::image::sniff(&head[..filled])
}

/// One page as `read` shows it, and which lines it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// The text the model sees: numbered lines and notes.
    pub text: String,
    /// The lines shown (1-based, inclusive) when the page is not the whole file.
    pub lines: Option<(u64, u64)>,
}

/// Reads one page of `path` (shown to the model as `shown`), with the range of lines it
/// shows.
pub fn read_lines(
    path: &Path,
    shown: &str,
    offset: u64,
    limit: u64,
    limits: &Limits,
) -> Result<Page, ToolError> {
    let reader = BufReader::new(open_text(path, shown)?);
    page_of(reader, shown, offset, limit, limits)
}

/// Opens `path` for reading as text: refuses a directory, a device or FIFO, and a file
/// whose first bytes hold a NUL (binary).
fn open_text(path: &Path, shown: &str) -> Result<impl std::io::Read, ToolError> {
    let failed = |err: std::io::Error| {
        ToolError::Failed(format!("cannot read `{shown}`: {}", describe_io(&err)))
    };
    let metadata = std::fs::metadata(path).map_err(failed)?;
    if metadata.is_dir() {
        return Err(ToolError::Failed(format!(
            "`{shown}` is a directory; use ls to list it"
        )));
    }
    if !metadata.is_file() {
        return Err(ToolError::Failed(format!(
            "`{shown}` is not a regular file (device, FIFO or socket); read refuses it"
        )));
    }
    let mut file = File::open(path).map_err(failed)?;
    let mut sniff = Vec::with_capacity(SNIFF_BYTES);
    (&mut file)
        .take(SNIFF_BYTES as u64)
        .read_to_end(&mut sniff)
        .map_err(failed)?;
    if sniff.contains(&0) {
        return Err(ToolError::Failed(format!(
            "`{shown}` is a binary file ({} bytes); read shows text files only",
            metadata.len()
        )));
    }
    Ok(std::io::Cursor::new(sniff).chain(file))
}

/// One page of the text `reader` yields (`shown` names it in notes).
fn page_of(
    mut reader: impl BufRead,
    shown: &str,
    offset: u64,
    limit: u64,
    limits: &Limits,
) -> Result<Page, ToolError> {
    let failed = |err: std::io::Error| {
        ToolError::Failed(format!("cannot read `{shown}`: {}", describe_io(&err)))
    };
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut last_shown: u64 = 0;
    let mut page_full = false;
    let mut invalid_utf8 = false;
    let mut truncated_lines = 0usize;
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line).map_err(failed)?;
        if read == 0 {
            break;
        }
        number += 1;
        if number < offset {
            continue;
        }
        if number >= offset.saturating_add(limit) {
            page_full = true;
        }
        if page_full {
            break;
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if body.contains(&0) {
            return Err(ToolError::Failed(format!(
                "`{shown}` is a binary file (NUL byte on line {number}); read shows text \
                 files only"
            )));
        }
        let text = match std::str::from_utf8(body) {
            Ok(text) => std::borrow::Cow::Borrowed(text),
            Err(_) => {
                invalid_utf8 = true;
                String::from_utf8_lossy(body)
            }
        };
        let (numbered, shortened) = numbered_line(number, &text, limits.read_max_line_chars);
        if last_shown > 0 && out.len() + numbered.len() > limits.read_max_page_bytes {
            page_full = true;
            break;
        }
        truncated_lines += shortened;
        out.push_str(&numbered);
        last_shown = number;
    }
    // The rest of the file is only counted (fast, by chunks), and only so far.
    let (total, counted_all) = if page_full {
        count_rest(&mut reader, number).map_err(failed)?
    } else {
        (number, true)
    };
    if total == 0 {
        return Ok(Page {
            text: format!("(`{shown}` is empty)"),
            lines: None,
        });
    }
    if offset > total {
        return Err(ToolError::Failed(format!(
            "offset {offset} is past the end of `{shown}`, which has {total} lines"
        )));
    }
    if invalid_utf8 {
        out.push_str(
            "[this file is not valid UTF-8: invalid bytes are shown as \u{FFFD}; edit cannot \
             match those lines]\n",
        );
    }
    if truncated_lines > 0 {
        out.push_str(&format!(
            "[{truncated_lines} line(s) longer than {} characters were shortened]\n",
            limits.read_max_line_chars
        ));
    }
    if last_shown < total {
        let of = if counted_all {
            total.to_string()
        } else {
            format!("more than {total}")
        };
        out.push_str(&format!(
            "[showing lines {offset}-{last_shown} of {of}; call read with offset={} to read \
             on]\n",
            last_shown + 1
        ));
    }
    let whole = offset == 1 && last_shown == total;
    Ok(Page {
        text: out,
        lines: (!whole).then_some((offset, last_shown)),
    })
}

/// Line `number` as read shows it (`number<TAB>text`, cut at `max_chars`), and
/// whether it was cut (1) or not (0).
fn numbered_line(number: u64, text: &str, max_chars: usize) -> (String, usize) {
    let mut numbered = format!("{number:>6}\t");
    let mut shortened = 0;
    push_capped(&mut numbered, text, max_chars, &mut shortened);
    numbered.push('\n');
    (numbered, shortened)
}

/// The line count of a file whose first `lines` lines were read, counting the rest of
/// `reader` by chunks up to [`COUNT_MAX_BYTES`]; `false` when it stopped there (the
/// count is then a lower bound).
fn count_rest(reader: &mut impl BufRead, lines: u64) -> std::io::Result<(u64, bool)> {
    let mut number = lines;
    let mut scanned: u64 = 0;
    let mut pending_partial_line = false;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        if scanned >= COUNT_MAX_BYTES {
            return Ok((number, false));
        }
        number += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        pending_partial_line = chunk.last() != Some(&b'\n');
        let len = chunk.len();
        scanned += len as u64;
        reader.consume(len);
    }
    if pending_partial_line {
        number += 1;
    }
    Ok((number, true))
}

fn push_capped(out: &mut String, text: &str, max_chars: usize, truncated: &mut usize) {
    match text.char_indices().nth(max_chars) {
        None => out.push_str(text),
        Some((cut, _)) => {
            *truncated += 1;
            out.push_str(&text[..cut]);
            out.push_str(&squash::chars_omitted_suffix(text[cut..].chars().count()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text of one page of `path`.
    fn read_page(
        path: &Path,
        shown: &str,
        offset: u64,
        limit: u64,
        limits: &Limits,
    ) -> Result<String, ToolError> {
        read_lines(path, shown, offset, limit, limits).map(|page| page.text)
    }

    fn page(content: &[u8], offset: u64, limit: u64) -> Result<String, ToolError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, content).unwrap();
        read_page(&path, "f", offset, limit, &Limits::default())
    }

    #[test]
    fn lines_are_numbered_exactly() {
        let text = page(b"fn main() {\n\tprintln!(\"hi\");\n}", 1, 100).unwrap();
        assert_eq!(
            text,
            "     1\tfn main() {\n     2\t\tprintln!(\"hi\");\n     3\t}\n"
        );
    }

    #[test]
    fn long_files_are_paged_with_an_offset_hint() {
        let content: String = (1..=10).map(|i| format!("l{i}\n")).collect();
        let text = page(content.as_bytes(), 4, 3).unwrap();
        assert!(
            text.starts_with("     4\tl4\n     5\tl5\n     6\tl6\n"),
            "{text}"
        );
        assert!(
            text.contains("[showing lines 4-6 of 10; call read with offset=7 to read on]"),
            "{text}"
        );
        let last = page(content.as_bytes(), 9, 100).unwrap();
        assert!(!last.contains("offset="), "last page has no hint: {last}");
    }

    #[test]
    fn huge_offsets_and_limits_from_the_model_do_not_overflow() {
        let text = page(b"a\nb\n", 2, u64::MAX).unwrap();
        assert_eq!(text, "     2\tb\n");
        assert!(page(b"a\n", u64::MAX, u64::MAX).is_err());
    }

    #[test]
    fn total_counts_a_last_line_without_newline() {
        let text = page(b"a\nb\nc\nd", 1, 2).unwrap();
        assert!(
            text.contains("[showing lines 1-2 of 4; call read with offset=3"),
            "{text}"
        );
        let text = page(b"a\nb\nc", 1, 2).unwrap();
        assert!(text.contains("of 3;"), "{text}");
    }

    #[test]
    fn page_byte_cap_stops_early_with_a_hint() {
        let limits = Limits {
            read_max_page_bytes: 100,
            ..Limits::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let content: String = (0..100).map(|_| format!("{}\n", "z".repeat(40))).collect();
        std::fs::write(&path, content).unwrap();
        let text = read_page(&path, "f", 1, 2000, &limits).unwrap();
        assert!(text.contains("call read with offset=3"), "{text}");
    }

    #[test]
    fn binary_files_directories_and_devices_are_refused() {
        let err = page(b"\x7fELF\x02\x01\x01\0\0\0", 1, 10).unwrap_err();
        assert!(err.to_string().contains("binary file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let err = read_page(dir.path(), "d", 1, 10, &Limits::default()).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");
        let err = read_page(
            Path::new("/dev/zero"),
            "/dev/zero",
            1,
            10,
            &Limits::default(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
    }

    #[test]
    fn binary_content_after_a_text_header_is_refused_too() {
        let mut content = b"%PDF-1.4\n".to_vec();
        content.extend(std::iter::repeat_n(b'x', 10_000));
        content.extend(b"\nstream\0\x01\x02\n");
        let err = page(&content, 1, 10).unwrap_err();
        assert!(err.to_string().contains("NUL byte on line 3"), "{err}");
    }

    #[test]
    fn invalid_utf8_is_shown_with_replacement_and_a_note() {
        let text = page(b"caf\xe9\nok\n", 1, 10).unwrap();
        assert!(text.contains("     1\tcaf\u{FFFD}\n"), "{text}");
        assert!(text.contains("not valid UTF-8"), "{text}");
    }

    #[test]
    fn very_long_lines_are_shortened_visibly() {
        let text = page(format!("{}\n", "a".repeat(2500)).as_bytes(), 1, 10).unwrap();
        assert!(text.contains("…[500 chars omitted]"), "{text}");
        assert!(text.contains("shortened"));
    }

    #[test]
    fn empty_files_and_offsets_past_the_end_are_explained() {
        assert!(page(b"", 1, 10).unwrap().contains("is empty"));
        let err = page(b"a\nb\n", 5, 10).unwrap_err();
        assert!(err.to_string().contains("has 2 lines"), "{err}");
    }
}
