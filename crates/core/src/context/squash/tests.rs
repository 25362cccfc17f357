//! Scenario tests of `squash::apply` (one per family and per contract rule).

use super::*;

fn cfg() -> SquashConfig {
    SquashConfig::default()
}

fn accounting_holds(input: &str, out: &Squashed) {
    let represented: usize = lines::split_lines(&out.text)
        .into_iter()
        .filter(|l| parse_omitted(l).is_none())
        .map(|l| {
            l.rsplit_once(" (×")
                .and_then(|(_, n)| n.strip_suffix(')'))
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(1)
        })
        .sum();
    let omitted: usize = lines::split_lines(&out.text)
        .into_iter()
        .filter_map(parse_omitted)
        .sum();
    assert_eq!(omitted, out.stats.lines_omitted, "marker sum vs stats");
    assert_eq!(
        represented + omitted,
        lines::split_lines(input).len(),
        "kept + omitted must equal the original line count:\n{}",
        out.text
    );
}

#[test]
fn read_output_is_never_altered_even_when_huge_json() {
    let big = format!("{{\"d\": \"{}\"}}", "long text ".repeat(1000));
    let out = apply("read", None, None, &big, &cfg());
    assert_eq!(out.text, big);
    assert!(!out.dropped_anything);
    assert_eq!(out.stats.family, Family::Read);
}

#[test]
fn output_at_the_floor_passes_unchanged() {
    let text = "x".repeat(1_500);
    let out = apply("bash", Some("python x.py"), Some(1), &text, &cfg());
    assert_eq!(out.text, text);
    assert!(!out.dropped_anything);
}

#[test]
fn file_view_is_byte_exact_under_the_cap_and_within_the_view_budget_above() {
    let file: String = (0..200)
        .map(|i| format!("    let value_{i} = compute({i});\n"))
        .collect();
    let out = apply("bash", Some("cat src/lib.rs"), Some(0), &file, &cfg());
    assert_eq!(
        out.text, file,
        "a file view under the cap must be byte-exact"
    );

    let huge: String = (0..3000)
        .map(|i| format!("line {i} of a very large text file\n"))
        .collect();
    let out = apply(
        "bash",
        Some("nl -ba big.txt | sed -n '1,4000p'"),
        Some(0),
        &huge,
        &cfg(),
    );
    assert!(out.dropped_anything);
    assert!(
        out.text.len() <= cfg().view_budget_bytes,
        "{}",
        out.text.len()
    );
    assert!(out
        .text
        .starts_with("line 0 of a very large text file\nline 1 "));
    assert!(out
        .text
        .trim_end()
        .ends_with("line 2999 of a very large text file"));
    accounting_holds(&huge, &out);
}

#[test]
fn a_view_above_the_cap_of_a_log_keeps_its_failures_within_the_budget() {
    let mut log = String::new();
    let mut i = 0;
    while log.len() < 400_000 {
        log.push_str(&format!(
            "2026-11-29T10:00:{:02}Z INFO worker-{}: processed batch {i}\n",
            i % 60,
            i % 8
        ));
        i += 1;
        if i == 5_000 {
            log.push_str("Traceback (most recent call last):\n  File \"/srv/app/jobs.py\", line 88, in run\n    payload['user_id']\nKeyError: 'user_id'\n");
        }
    }
    let out = apply("bash", Some("cat worker.log"), Some(0), &log, &cfg());
    assert!(
        out.text.len() <= cfg().view_budget_bytes,
        "{}",
        out.text.len()
    );
    assert!(out.text.contains("KeyError: 'user_id'"), "{}", out.text);
    accounting_holds(&log, &out);
}

#[test]
fn a_view_above_the_cap_of_source_code_is_head_tail_and_an_outline() {
    // About 1 MB of source.
    let mut source = String::from("use std::io;\n\n");
    for k in 0..10_000 {
        source.push_str(&format!(
            "pub fn handler_{k}(input: &str) -> io::Result<usize> {{\n    let n = input.len() + {k};\n    Ok(n)\n}}\n\n"
        ));
    }
    let out = apply(
        "bash",
        Some("cat src/handlers.rs"),
        Some(0),
        &source,
        &cfg(),
    );
    assert_eq!(out.stats.family, Family::SourceOutline);
    assert!(
        out.text.len() <= cfg().view_budget_bytes,
        "{}",
        out.text.len()
    );
    assert!(out.text.starts_with("use std::io;\n"));
    assert!(
        out.text.contains("read src/handlers.rs with offset=LINE"),
        "{}",
        out.text
    );
    // Entries carry the file's line numbers: handler_k is defined on line 3 + 5k.
    let entries: Vec<(usize, usize)> = out
        .text
        .lines()
        .filter_map(|l| {
            let (number, text) = l.trim_start().split_once(": pub fn handler_")?;
            let k = text.split('(').next()?.parse().ok()?;
            Some((number.parse().ok()?, k))
        })
        .collect();
    assert!(entries.len() > 50, "{}", out.text);
    assert!(
        entries.iter().all(|(line, k)| *line == 3 + 5 * k),
        "{entries:?}"
    );
}

#[test]
fn pytest_failures_keep_ids_errors_and_summary_and_drop_passing_noise() {
    let mut text = String::from(
        "============================= test session starts ==============================\n\
         platform linux -- Python 3.11.11, pytest-8.3.4, pluggy-1.5.0\ncollected 300 items\n\n",
    );
    for i in 0..200 {
        text.push_str(&format!(
            "tests/test_mod.py::test_case_{i} PASSED   [ {}%]\n",
            i / 3
        ));
    }
    text.push_str("tests/test_mod.py::test_broken FAILED   [ 70%]\n");
    text.push_str(
        "\n=================================== FAILURES ===================================\n",
    );
    text.push_str(
        "________________________________ test_broken _________________________________\n\n",
    );
    text.push_str("    def test_broken():\n        x = compute()\n>       assert x == 3\nE       assert 2 == 3\n\ntests/test_mod.py:42: AssertionError\n");
    text.push_str(
        "=========================== short test summary info ============================\n",
    );
    text.push_str("FAILED tests/test_mod.py::test_broken - assert 2 == 3\n");
    text.push_str(
        "========================= 1 failed, 200 passed in 1.23s =========================\n",
    );
    let out = apply(
        "bash",
        Some("python -m pytest tests -v"),
        Some(1),
        &text,
        &cfg(),
    );
    assert_eq!(out.stats.family, Family::TestRunner);
    for must in [
        "FAILED tests/test_mod.py::test_broken - assert 2 == 3",
        "tests/test_mod.py::test_broken FAILED",
        "E       assert 2 == 3",
        "tests/test_mod.py:42: AssertionError",
        "1 failed, 200 passed in 1.23s",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
    assert!(!out.text.contains("test_case_100 PASSED"));
    assert!(out.text.len() * 3 < text.len(), "expected a large saving");
    accounting_holds(&text, &out);
}

#[test]
fn django_tracebacks_keep_first_project_frame_last_frame_and_exception() {
    let mut text = String::from("Creating test database for alias 'default'...\n");
    text.push_str(&".".repeat(60));
    text.push_str("E\n======================================================================\n");
    text.push_str("ERROR: test_upload (file_uploads.tests.FileUploadTests)\n");
    text.push_str("----------------------------------------------------------------------\n");
    text.push_str("Traceback (most recent call last):\n");
    text.push_str("  File \"/opt/conda/lib/python3.6/unittest/case.py\", line 59, in testPartExecutor\n    yield\n");
    text.push_str("  File \"/testbed/tests/file_uploads/tests.py\", line 105, in test_upload\n    self.client.post(url)\n");
    for k in 0..30 {
        text.push_str(&format!("  File \"/testbed/django/core/mod{k}.py\", line {k}, in call{k}\n    return inner{k}()\n"));
    }
    text.push_str("UnicodeEncodeError: 'ascii' codec can't encode characters\n\n");
    text.push_str("----------------------------------------------------------------------\nRan 61 tests in 0.5s\n\nFAILED (errors=1)\n");
    let out = apply(
        "bash",
        Some("./tests/runtests.py file_uploads"),
        Some(1),
        &text,
        &cfg(),
    );
    for must in [
        "ERROR: test_upload (file_uploads.tests.FileUploadTests)",
        "Traceback (most recent call last):",
        "File \"/testbed/tests/file_uploads/tests.py\", line 105, in test_upload",
        "File \"/testbed/django/core/mod29.py\", line 29, in call29",
        "UnicodeEncodeError: 'ascii' codec can't encode characters",
        "Ran 61 tests in 0.5s",
        "FAILED (errors=1)",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
    assert!(
        !out.text.contains("mod15.py"),
        "middle frames should go:\n{}",
        out.text
    );
    accounting_holds(&text, &out);
}

#[test]
fn cargo_and_go_failures_keep_their_identifiers() {
    let mut text = String::new();
    for i in 0..80 {
        text.push_str(&format!("test tests::case_{i} ... ok\n"));
    }
    text.push_str("test tests::broken ... FAILED\n\nfailures:\n\n---- tests::broken stdout ----\n");
    text.push_str("thread 'tests::broken' panicked at src/lib.rs:10:5:\nassertion `left == right` failed\n  left: 1\n right: 2\n");
    text.push_str(
        "\nfailures:\n    tests::broken\n\ntest result: FAILED. 80 passed; 1 failed; 0 ignored\n",
    );
    let out = apply("bash", Some("cargo test"), Some(101), &text, &cfg());
    for must in [
        "test tests::broken ... FAILED",
        "panicked at src/lib.rs:10:5:",
        "  left: 1",
        " right: 2",
        "test result: FAILED.",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
    accounting_holds(&text, &out);

    let mut go = String::new();
    for i in 0..80 {
        go.push_str(&format!(
            "=== RUN   TestOk{i}\n--- PASS: TestOk{i} (0.00s)\n"
        ));
    }
    go.push_str("=== RUN   TestBad\n    bad_test.go:12: expected 3, got 2\n--- FAIL: TestBad (0.00s)\nFAIL\nFAIL\texample.com/pkg\t0.01s\n");
    let out = apply("bash", Some("go test ./..."), Some(1), &go, &cfg());
    for must in [
        "--- FAIL: TestBad (0.00s)",
        "bad_test.go:12: expected 3, got 2",
        "FAIL\texample.com/pkg\t0.01s",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
}

#[test]
fn after_the_block_cap_failures_are_named_by_their_header_only() {
    let mut text = String::from(
        "============================= test session starts ==============================\n",
    );
    text.push_str(&"tests/test_m.py::test_ok PASSED\n".repeat(100));
    text.push_str(
        "=================================== FAILURES ===================================\n",
    );
    for k in 0..30 {
        text.push_str(&format!(
            "________________________________ test_case_{k} ________________________________\n\n    def test_case_{k}():\n>       assert value({k}) == {}\nE       assert {k} == {}\n\ntests/test_m.py:{}: AssertionError\n",
            k + 1,
            k + 1,
            10 * k + 3
        ));
    }
    text.push_str(
        "=========================== short test summary info ============================\n",
    );
    for k in 0..30 {
        text.push_str(&format!(
            "FAILED tests/test_m.py::test_case_{k} - assert {k} == {}\n",
            k + 1
        ));
    }
    text.push_str("============= 30 failed, 100 passed in 2.00s =============\n");
    let out = apply("bash", Some("pytest tests"), Some(1), &text, &cfg());
    for k in 0..30 {
        let header = format!("_ test_case_{k} _");
        assert!(out.text.contains(&header), "lost header {k}:\n{}", out.text);
        assert!(out
            .text
            .contains(&format!("FAILED tests/test_m.py::test_case_{k} -")));
        let detail = format!("E       assert {k} == {}", k + 1);
        assert_eq!(
            out.text.contains(&detail),
            k < cfg().failure_blocks_max,
            "block {k}'s detail:\n{}",
            out.text
        );
    }
    assert!(out.text.contains("30 failed, 100 passed in 2.00s"));
    accounting_holds(&text, &out);
}

#[test]
fn a_make_log_with_cargo_go_and_jest_steps_keeps_every_step_s_failures() {
    let mut text =
        String::from("make[1]: Entering directory '/src/core'\n   Compiling core v0.1.0\n");
    text.push_str(
        "     Running unittests src/lib.rs (target/debug/deps/core-1a2b)\n\nrunning 60 tests\n",
    );
    for i in 0..60 {
        text.push_str(&format!("test tests::case_{i} ... ok\n"));
    }
    text.push_str("test tests::parse ... FAILED\n\nfailures:\n\n---- tests::parse stdout ----\nthread 'tests::parse' panicked at src/parse.rs:41:9:\nassertion `left == right` failed\n  left: 3\n right: 4\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nfailures:\n    tests::parse\n\ntest result: FAILED. 60 passed; 1 failed; 0 ignored; 0 measured\n");
    text.push_str(
        "make[1]: Leaving directory '/src/core'\nmake[1]: Entering directory '/src/server'\n",
    );
    for i in 0..60 {
        text.push_str(&format!(
            "=== RUN   TestOk{i}\n--- PASS: TestOk{i} (0.00s)\n"
        ));
    }
    text.push_str("=== RUN   TestServe\n--- FAIL: TestServe (0.01s)\n    serve_test.go:27: status = 500, want 200\nFAIL\nFAIL\texample.com/server\t0.02s\n");
    text.push_str(
        "make[1]: Leaving directory '/src/server'\nmake[1]: Entering directory '/src/web'\n",
    );
    for i in 0..60 {
        text.push_str(&format!("PASS src/ok{i}.test.js\n"));
    }
    text.push_str("FAIL src/cart.test.js\n  ● cart › adds items\n\n    expect(received).toBe(expected) // Object.is equality\n\n    Expected: 3\n    Received: 2\n\n      12 |   cart.add(item);\n    > 13 |   expect(cart.size).toBe(3);\n         |                     ^\n\n      at Object.<anonymous> (src/cart.test.js:13:21)\n\nTest Suites: 1 failed, 60 passed, 61 total\nTests:       1 failed, 60 passed, 61 total\n");
    text.push_str("make[1]: Leaving directory '/src/web'\n");
    let out = apply("bash", Some("make check"), Some(2), &text, &cfg());
    assert_eq!(out.stats.family, Family::MultiStep);
    for must in [
        "make[1]: Entering directory '/src/core'",
        "thread 'tests::parse' panicked at src/parse.rs:41:9:",
        "assertion `left == right` failed",
        "  left: 3",
        " right: 4",
        "test result: FAILED. 60 passed; 1 failed; 0 ignored; 0 measured",
        "make[1]: Entering directory '/src/server'",
        "--- FAIL: TestServe (0.01s)",
        "serve_test.go:27: status = 500, want 200",
        "FAIL\texample.com/server\t0.02s",
        "make[1]: Entering directory '/src/web'",
        "● cart › adds items",
        "Expected: 3",
        "Received: 2",
        "> 13 |   expect(cart.size).toBe(3);",
        "Tests:       1 failed, 60 passed, 61 total",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
    assert!(!out.text.contains("TestOk30"), "{}", out.text);
    assert!(!out.text.contains("PASS src/ok30.test.js"), "{}", out.text);
    assert!(
        out.text.contains("test tests::parse ... FAILED"),
        "{}",
        out.text
    );
    assert!(out.text.contains("FAIL src/cart.test.js"), "{}", out.text);
    accounting_holds(&text, &out);
}

#[test]
fn a_script_s_traceback_keeps_its_details_beside_the_generic_head_and_tail() {
    let mut text = String::new();
    for i in 0..200 {
        text.push_str(&format!("processing record {i}: ok\n"));
        if i == 100 {
            text.push_str("Traceback (most recent call last):\n  File \"/work/reproduce.py\", line 12, in <module>\n    main()\n  File \"/work/app/models.py\", line 88, in main\n    raise LookupFailure(name)\napp.models.LookupFailure: no record named 'user_id'\n");
        }
    }
    let out = apply("bash", Some("python reproduce.py"), Some(0), &text, &cfg());
    for must in [
        "processing record 0: ok",
        "processing record 199: ok",
        "Traceback (most recent call last):",
        "File \"/work/app/models.py\", line 88, in main",
        "app.models.LookupFailure: no record named 'user_id'",
    ] {
        assert!(out.text.contains(must), "lost {must:?}:\n{}", out.text);
    }
    accounting_holds(&text, &out);
}

#[test]
fn logs_keep_errors_with_context_and_collapse_repeats() {
    let mut lines = vec!["build started".to_owned()];
    for i in 0..300 {
        lines.push(format!("info: compiling module {i}"));
    }
    lines.push("error: something failed early in the build".to_owned());
    for i in 0..14 {
        lines.push(format!(
            "2024-01-01T10:00:{i:02} warning: connection timeout, retrying"
        ));
    }
    for i in 0..300 {
        lines.push(format!("info: linking object {i}"));
    }
    lines.push("error: something failed at the end".to_owned());
    lines.push("build finished with 2 errors".to_owned());
    let text = lines.join("\n");
    let out = apply("bash", Some("make"), Some(2), &text, &cfg());
    assert_eq!(out.stats.family, Family::Log);
    assert!(out
        .text
        .contains("error: something failed early in the build"));
    assert!(out.text.contains("error: something failed at the end"));
    assert!(
        out.text
            .contains("warning: connection timeout, retrying (×14)"),
        "{}",
        out.text
    );
    assert!(out.text.contains("build finished with 2 errors"));
    assert!(out.text.len() < text.len() / 5);
    accounting_holds(&text, &out);
}

#[test]
fn grep_output_keeps_every_path() {
    let mut text = String::new();
    for f in 0..30 {
        for m in 0..20 {
            text.push_str(&format!(
                "django/app{f}/models.py:{m}:    name = models.CharField(max_length={m})\n"
            ));
        }
    }
    let out = apply(
        "bash",
        Some("grep -rn CharField django"),
        Some(0),
        &text,
        &cfg(),
    );
    for f in 0..30 {
        assert!(
            out.text.contains(&format!("django/app{f}/models.py")),
            "path {f} lost"
        );
    }
    assert!(out.text.len() * 2 < text.len());
    assert!(out.text.contains("[19 lines omitted]"), "{}", out.text);
    accounting_holds(&text, &out);
}

#[test]
fn generic_output_keeps_head_and_tail_and_marks_the_gap() {
    let text: String = (0..500)
        .map(|i| format!("line number {i} of plain output\n"))
        .collect();
    let out = apply("bash", Some("python script.py"), Some(0), &text, &cfg());
    assert!(out.text.contains("line number 0 of plain output"));
    assert!(out.text.contains("line number 499 of plain output"));
    assert!(out.text.contains("lines omitted]"));
    assert!(
        !out.text.contains("// "),
        "markers must never be comment-shaped"
    );
    accounting_holds(&text, &out);
}

#[test]
fn json_output_stays_valid_json() {
    let items: Vec<serde_json::Value> = (0..100)
        .map(|i| serde_json::json!({"id": i, "body": "lorem ipsum dolor sit amet ".repeat(5)}))
        .collect();
    let text = serde_json::to_string(&items).unwrap();
    let out = apply("mcp_search", None, None, &text, &cfg());
    assert_eq!(out.stats.family, Family::Json);
    let parsed: serde_json::Value = serde_json::from_str(&out.text).expect("valid JSON");
    assert!(parsed.as_array().unwrap().len() <= 5);
}

#[test]
fn detection_without_a_command_uses_content() {
    let text = "============================= test session starts ==============================\n"
        .to_owned()
        + &"tests/test_a.py ........................................ [ 50%]\n".repeat(40)
        + "FAILED tests/test_a.py::test_x - ValueError: bad\n= 1 failed, 800 passed in 2.00s =\n";
    let out = apply("bash", None, None, &text, &cfg());
    assert_eq!(out.stats.family, Family::TestRunner);
    assert!(out
        .text
        .contains("FAILED tests/test_a.py::test_x - ValueError: bad"));
}

#[test]
fn one_huge_line_is_shortened_not_kept_whole() {
    let text = "z".repeat(100_000);
    let out = apply("bash", Some("python dump.py"), Some(0), &text, &cfg());
    assert!(out.dropped_anything);
    assert!(out.text.len() < 5_000, "{}", out.text.len());
}
