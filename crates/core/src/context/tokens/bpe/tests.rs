//! The counter against tiktoken-rs, the reference: counts and token ids on varied,
//! random and whole-vocabulary text, in both encodings.

use super::*;

fn table(encoding: Encoding) -> &'static Table {
    match encoding {
        Encoding::O200kBase => &table::O200K_BASE,
        Encoding::Cl100kBase => &table::CL100K_BASE,
    }
}

#[test]
fn hello_world_is_two_tokens_in_both_encodings() {
    for encoding in ENCODINGS {
        assert_eq!(BpeCounter::new(encoding).count("hello world"), 2);
    }
}

#[test]
fn empty_text_is_zero_tokens_and_needs_no_tables() {
    assert_eq!(BpeCounter::new(Encoding::O200kBase).count(""), 0);
}

#[test]
fn special_token_text_is_counted_as_ordinary_text() {
    // bpe-openai knows no special tokens: `<|endoftext|>` is plain text, as in
    // tiktoken's encode_ordinary, never the single special token.
    for encoding in ENCODINGS {
        let text = "<|endoftext|>";
        let counted = BpeCounter::new(encoding).count(text);
        assert!(counted > 1, "{encoding:?}: {counted}");
        assert_eq!(counted, tiktoken_count(encoding, text), "{encoding:?}");
        assert_eq!(
            tiktoken(encoding).encode_with_special_tokens(text).len(),
            1,
            "{encoding:?}: the special-token reading, which pith must not use"
        );
        let mixed = "done<|endoftext|>next <|fim_prefix|><|im_start|>user\n";
        assert_eq!(
            BpeCounter::new(encoding).count(mixed),
            tiktoken_count(encoding, mixed),
            "{encoding:?}"
        );
    }
}

const ENCODINGS: [Encoding; 2] = [Encoding::O200kBase, Encoding::Cl100kBase];

/// tiktoken-rs, the reference implementation the counter must agree with.
fn tiktoken(encoding: Encoding) -> &'static tiktoken_rs::CoreBPE {
    match encoding {
        Encoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

/// tiktoken's count: the length of the ordinary encoding.
fn tiktoken_count(encoding: Encoding, text: &str) -> usize {
    tiktoken(encoding).encode_ordinary(text).len()
}

/// Texts chosen to exercise every branch of the o200k and cl100k pre-tokenizers and
/// the BPE merges behind them.
fn varied_texts() -> Vec<String> {
    let fixed = [
        "",
        "hello world",
        "fn main() {\n    let x: Vec<u8> = vec![1, 2, 3];\n\tprintln!(\"{x:?}\");\n}\n",
        "def f(a, b=None):\n    return {'k': [a, b]}  # comment\n\n\nclass C:\n\tpass\n",
        r#"{"name":"read","arguments":{"path":"src/lib.rs","offset":0},"ok":true}"#,
        "error[E0308]: mismatched types\n  --> src/lib.rs:3:5\n   |\n3  |     x\n   |     ^ expected `u8`",
        "Ünïcödé façade naïve café — “quoted” ‘single’ … ½ ß ẞ",
        "Здравствуйте, как дела? Γειά σου κόσμε. مرحبا بالعالم. नमस्ते दुनिया. สวัสดีชาวโลก",
        "これは日本語のテキストです。中文字符测试，标点符号！한국어 문장입니다.",
        "emoji: 👍🏽 🚀🔥 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵 keycap 1️⃣ ✔︎",
        "a    b\t\t\tc   \n\n\n   d  \n \n\t\n",
        "   leading spaces and trailing spaces   ",
        " \u{3000}\u{3000}ideographic\u{a0}\u{a0}no-break\u{2009}thin\u{200b}zero-width",
        "\n\n\n",
        "   ",
        "12345678901234567890 3.14159265358979323846 1,000,000 0x7fffffff 1e-10 ١٢٣٤٥",
        "line one\r\nline two\r\n\r\n  indented\r\n\r\r\n\n\r",
        "He'S here, they'll go, I'M sure, we'VE, you'D, don't, DON'T, 'll alone, ''s, it’s",
        "camelCaseIdentifier HTTPServerError XMLHttpRequest snake_case_name SCREAMING_CASE",
        "!!!???...---///***  a//b  ===\n  <<<>>> ||| && ->  => :: ;; @#$%^&",
        "e\u{301} a\u{308}\u{304} Z̤̈a̫͛l̢g͛o",
        "\u{0}\u{1}\u{7}\u{1b}[31mred\u{1b}[0m \u{7f} \u{fffd} \u{feff}bom",
        "https://example.com/path?q=1&r=two#frag /usr/local/bin/pith ~/.config/pith/x.toml",
        "<compacted_context>\n<summary>short</summary>\n</compacted_context>",
    ];
    let mut texts: Vec<String> = fixed.iter().map(|t| (*t).to_owned()).collect();
    texts.push("a".repeat(3_000));
    texts.push("ab".repeat(1_500));
    texts.push(format!("{}x", " ".repeat(1_000)));
    texts.push("9".repeat(1_001));
    texts.push("日本".repeat(700));
    texts.push("/*".repeat(800));
    texts.push(fixed.concat().repeat(3));
    texts
}

#[test]
fn counts_and_ids_equal_tiktoken_on_varied_text_in_both_encodings() {
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding);
        for text in varied_texts() {
            let expected = tiktoken(encoding).encode_ordinary(&text);
            assert_eq!(
                counter.count(&text),
                expected.len(),
                "{encoding:?} on {text:?}"
            );
            assert_eq!(
                counter.encode(&text),
                expected,
                "{encoding:?} token ids on {text:?}"
            );
        }
    }
}

#[test]
fn every_vocabulary_entry_counts_as_tiktoken_does() {
    // Each token's own text (when it is valid UTF-8): catches a token the tables lost.
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding);
        let table = table(encoding);
        for rank in 0..table.len() as u32 {
            let Ok(text) = std::str::from_utf8(table.token(rank)) else {
                continue;
            };
            assert_eq!(
                counter.count(text),
                tiktoken_count(encoding, text),
                "{encoding:?}: token {rank} {text:?}"
            );
        }
    }
}

#[test]
fn the_tables_hold_tiktokens_vocabulary() {
    for encoding in ENCODINGS {
        let table = table(encoding);
        for rank in 0..table.len() as u32 {
            assert_eq!(
                tiktoken(encoding).decode_bytes(&[rank]).ok().as_deref(),
                Some(table.token(rank)),
                "{encoding:?}: rank {rank}"
            );
        }
        assert!(tiktoken(encoding)
            .decode_bytes(&[table.len() as u32])
            .is_err());
    }
}

#[test]
fn vendored_corpus_counts_equal_tiktoken() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/corpus-sample");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("the vendored corpus sample exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).expect("corpus files are UTF-8");
        for encoding in ENCODINGS {
            assert_eq!(
                BpeCounter::new(encoding).count(&text),
                tiktoken_count(encoding, &text),
                "{encoding:?} on {}",
                file.display()
            );
        }
    }
}

/// Pieces that sit on the pre-tokenizers' boundaries, for the property tests.
const ATOMS: &[&str] = &[
    "a",
    "Z",
    "the",
    "HTTP",
    "Server",
    "é",
    "e\u{301}",
    "ß",
    "日本",
    "한",
    "я",
    "1",
    "123",
    "4567",
    "٣",
    " ",
    "  ",
    "\t",
    "\n",
    "\r",
    "\r\n",
    "\u{a0}",
    "\u{3000}",
    "'",
    "'s",
    "'LL",
    "'ve",
    "’",
    ".",
    ",",
    "//",
    "/",
    "!?",
    "\\",
    "{",
    "}",
    "_",
    "-",
    "<|endoftext|>",
    "👍🏽",
    "🇫🇷",
    "\u{0}",
    "\u{fffd}",
    "\u{200b}",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_strings_count_as_tiktoken_does(text in proptest::prelude::any::<String>()) {
        for encoding in ENCODINGS {
            proptest::prop_assert_eq!(
                BpeCounter::new(encoding).count(&text),
                tiktoken_count(encoding, &text),
                "{:?}", encoding
            );
        }
    }

    #[test]
    fn boundary_pieces_count_as_tiktoken_does(
        pieces in proptest::collection::vec(proptest::sample::select(ATOMS), 0..80),
    ) {
        let text = pieces.concat();
        for encoding in ENCODINGS {
            proptest::prop_assert_eq!(
                BpeCounter::new(encoding).count(&text),
                tiktoken_count(encoding, &text),
                "{:?} on {:?}", encoding, text
            );
        }
    }

    #[test]
    fn concatenated_vocabulary_entries_count_as_tiktoken_does(
        ids in proptest::collection::vec(proptest::prelude::any::<u32>(), 1..40),
    ) {
        // Runs of real tokens stress the merges across token boundaries.
        for encoding in ENCODINGS {
            let table = table(encoding);
            let tokens = table.len() as u32;
            let bytes: Vec<u8> = ids
                .iter()
                .flat_map(|&id| table.token(id % tokens).to_vec())
                .collect();
            let text = String::from_utf8_lossy(&bytes);
            proptest::prop_assert_eq!(
                BpeCounter::new(encoding).count(&text),
                tiktoken_count(encoding, &text),
                "{:?} on {:?}", encoding, text
            );
        }
    }
}

#[test]
fn encodings_differ_on_non_english_text() {
    let text = "Здравствуйте, как дела? これは日本語のテキストです。";
    let o = BpeCounter::new(Encoding::O200kBase).count(text);
    let c = BpeCounter::new(Encoding::Cl100kBase).count(text);
    assert_ne!(o, c);
}

#[test]
fn counting_halves_on_two_threads_gives_exactly_the_whole_count() {
    let text = "fn main() {\n    println!(\"héllo\");\n}\nerror[E0308]: mismatched types\n  --> src/lib.rs:3:5\n\n\nDone. Ünïcode\r\nnext line's text\n"
        .repeat(40);
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding);
        let whole = counter.count_serial(&text);
        assert_eq!(whole, tiktoken_count(encoding, &text), "{encoding:?}");
        assert!(safe_split(&text).is_some());
        assert_eq!(counter.count_split(&text, 0), whole, "{encoding:?}");
    }
    assert_eq!(safe_split("no newline followed by a letter\n\n  "), None);
    // Additivity holds at every such boundary, not only the one picked.
    let sample = "a\nb\n\nc  \nd\r\ne's\n'f\n1\ng:\nh\n";
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding);
        let whole = counter.count_serial(sample);
        let bytes = sample.as_bytes();
        for i in 1..bytes.len() {
            if bytes[i - 1] == b'\n' && bytes[i].is_ascii_alphabetic() {
                let (a, b) = sample.split_at(i);
                let parts = counter.count_serial(a) + counter.count_serial(b);
                assert_eq!(parts, whole, "{encoding:?}: split at {i}");
            }
        }
    }
}

#[test]
fn a_background_load_makes_the_counter_ready_and_counts_alike() {
    for encoding in ENCODINGS {
        let counter = BpeCounter::new(encoding).load_in_background();
        // Counting waits for the background build when it is under way.
        assert_eq!(counter.count("hello world"), 2);
        assert!(counter.is_ready());
        // Once built, another background request starts nothing and changes nothing.
        assert_eq!(counter.load_in_background().count("hello world"), 2);
    }
}

#[test]
fn huge_pieces_count_as_tiktoken_does() {
    // One pre-token of 20 kB (letters without a space) goes through the heap merge.
    for text in ["a".repeat(20_000), "ab".repeat(10_000), "qzx".repeat(7_000)] {
        assert!(text.len() > merge::SMALL_PIECE_BYTES);
        for encoding in ENCODINGS {
            assert_eq!(
                BpeCounter::new(encoding).count(&text),
                tiktoken_count(encoding, &text),
                "{encoding:?}"
            );
        }
    }
}
