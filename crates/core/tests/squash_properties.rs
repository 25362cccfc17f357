//! Property tests of `squash::apply`: it never panics, never grows the output, never
//! alters `read`, and its gap markers account for every original line.

#![allow(clippy::unwrap_used, missing_docs)] // test code: a failed unwrap is a failed test, helpers need no docs
use pith_core::context::squash::{self, parse_omitted, SquashConfig};
use proptest::prelude::*;

const TOOLS: &[&str] = &["bash", "grep", "glob", "ls", "mcp_tool"];
const COMMANDS: &[Option<&str>] = &[
    None,
    Some("pytest -x"),
    Some("cargo test"),
    Some("grep -rn foo ."),
    Some("find . -name '*.py'"),
    Some("ls -R"),
    Some("cat src/lib.rs"),
    Some("make build"),
    Some("python script.py"),
];

/// Lines that exercise every squasher when mixed at random.
fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,60}",
        "(error|warning|FAILED|ERROR): [a-z ]{0,40}",
        "src/[a-z]{1,8}/[a-z]{1,8}\\.rs:[0-9]{1,4}:[ a-z(){};]{0,50}",
        "tests/test_[a-z]{1,6}\\.py::test_[a-z]{1,8} (PASSED|FAILED)",
        "  File \"/testbed/[a-z]{1,8}\\.py\", line [0-9]{1,3}, in [a-z]{1,6}",
        "E       assert [0-9] == [0-9]",
        "\\.{1,70}",
        "=+ [0-9] failed, [0-9]{1,3} passed in 0\\.[0-9]{2}s =+",
        "./[a-z]{1,8}/[a-z]{1,8}\\.py",
        "[ -~]{100,400}",
    ]
}

fn accounting(input: &str, text: &str) -> (usize, usize) {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let mut shown = 0usize;
    let mut omitted = 0usize;
    for line in body.split('\n') {
        if let Some(n) = parse_omitted(line) {
            omitted += n;
        } else {
            shown += line
                .rsplit_once(" (×")
                .and_then(|(_, n)| n.strip_suffix(')'))
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(1);
        }
    }
    let original = input
        .strip_suffix('\n')
        .unwrap_or(input)
        .split('\n')
        .count();
    (shown + omitted, original)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn arbitrary_bytes_never_panic_and_never_grow(
        bytes in proptest::collection::vec(any::<u8>(), 0..12_000),
        tool in 0..TOOLS.len(),
        command in 0..COMMANDS.len(),
        exit in proptest::option::of(-2i32..3),
    ) {
        let input = String::from_utf8_lossy(&bytes).into_owned();
        let out = squash::apply(TOOLS[tool], COMMANDS[command], exit, &input, &SquashConfig::default());
        prop_assert!(out.text.len() <= input.len(), "output grew: {} > {}", out.text.len(), input.len());
        prop_assert_eq!(out.dropped_anything, out.text != input);
    }

    #[test]
    fn line_shaped_outputs_account_for_every_line(
        lines in proptest::collection::vec(line_strategy(), 20..400),
        tool in 0..TOOLS.len(),
        command in 0..COMMANDS.len(),
    ) {
        let input = lines.join("\n");
        let out = squash::apply(TOOLS[tool], COMMANDS[command], Some(1), &input, &SquashConfig::default());
        prop_assert!(out.text.len() <= input.len());
        // JSON is rewritten and a source outline adds its own lines; every other
        // squasher shows original lines and gap markers only.
        if out.dropped_anything
            && !matches!(out.stats.family, squash::Family::Json | squash::Family::SourceOutline)
        {
            let (represented, original) = accounting(&input, &out.text);
            prop_assert_eq!(represented, original, "kept + omitted != original:\n{}", out.text);
        }
        let with_marker = squash::with_spill_marker(&out.text, "/tmp/spill/x.txt");
        prop_assert!(with_marker.ends_with("[full output: /tmp/spill/x.txt]"));
    }

    #[test]
    fn views_above_the_cap_stay_within_the_view_budget(
        lines in proptest::collection::vec(line_strategy(), 100..600),
        command in prop_oneof![Just("cat build.log"), Just("sed -n '1,9000p' x.py"), Just("head -n 5000 a.json")],
    ) {
        let config = SquashConfig {
            file_view_cap_bytes: 4_000,
            view_budget_bytes: 1_500,
            ..SquashConfig::default()
        };
        let input = lines.join("\n");
        prop_assume!(input.len() > config.file_view_cap_bytes);
        let out = squash::apply("bash", Some(command), Some(0), &input, &config);
        prop_assert!(out.text.len() <= config.view_budget_bytes, "{} bytes:\n{}", out.text.len(), out.text);
        if out.stats.family != squash::Family::SourceOutline {
            let (represented, original) = accounting(&input, &out.text);
            prop_assert_eq!(represented, original, "kept + omitted != original:\n{}", out.text);
        }
    }

    #[test]
    fn read_output_is_never_altered(text in "(?s).{0,6000}", pad in 0usize..4000) {
        let input = format!("{text}{}", "x".repeat(pad));
        let out = squash::apply("read", Some("cat x"), Some(1), &input, &SquashConfig::default());
        prop_assert_eq!(&out.text, &input);
        prop_assert!(!out.dropped_anything);
    }

    #[test]
    fn deeply_nested_json_never_panics(depth in 1usize..2_000, wide in 0usize..200, object in any::<bool>()) {
        let (open, close) = if object { ("{\"k\":", "}") } else { ("[", "]") };
        let inner = format!("[{}]", vec!["\"lorem ipsum dolor sit amet consectetur\""; wide].join(","));
        let input = format!("{}{}{}", open.repeat(depth), inner, close.repeat(depth));
        let input = if input.len() <= 1_500 { format!("{input}{}", " ".repeat(1_600)) } else { input };
        let out = squash::apply("mcp_tool", None, None, &input, &SquashConfig::default());
        prop_assert!(out.text.len() <= input.len());
        if out.stats.family == squash::Family::Json && out.dropped_anything {
            prop_assert!(serde_json::from_str::<serde_json::Value>(&out.text).is_ok(), "squashed JSON must stay valid");
        }
    }
}
