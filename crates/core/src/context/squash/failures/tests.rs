use super::blocks::{Block, BlockKind};
use super::*;
use crate::context::squash::lines::split_lines;

fn blocks_of(text: &str) -> (Vec<&str>, Vec<Block>) {
    let lines = split_lines(text);
    let blocks = find_blocks(text, &lines);
    (lines, blocks)
}

#[test]
fn pytest_blocks_run_from_header_to_the_next_header_or_section() {
    let text = "\
=================================== FAILURES ===================================
___________________________________ test_a ___________________________________

>       assert 41 == 42
E       assert 41 == 42

tests/test_x.py:17: AssertionError
___________________________________ test_b ___________________________________
E       KeyError: 'user_id'
=========================== short test summary info ============================
FAILED tests/test_x.py::test_a - assert 41 == 42
";
    let (lines, blocks) = blocks_of(text);
    assert_eq!(blocks.len(), 2, "{blocks:?}");
    assert_eq!((blocks[0].start, blocks[0].end), (1, 7));
    assert_eq!((blocks[1].start, blocks[1].end), (7, 9));
    assert!(lines[blocks[1].end].starts_with("===="));
}

#[test]
fn unittest_cargo_go_jest_and_mocha_headers_open_blocks() {
    let text = "\
======================================================================
FAIL: test_parse (pkg.tests.ParserTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/src/pkg/tests.py\", line 12, in test_parse
    self.assertEqual(parse('x'), 2)
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 3 tests in 0.01s
---- tests::adds stdout ----
thread 'tests::adds' panicked at src/lib.rs:9:5:
assertion `left == right` failed
failures:
--- FAIL: TestParse (0.00s)
    parse_test.go:12: got 1, want 2
FAIL
  ● math › adds
    Expected: 3
    Received: 2
Tests:       1 failed, 1 total
  1 failing
  1) Array
       #indexOf():
     AssertionError: expected -1 to equal 0
done
";
    let (lines, blocks) = blocks_of(text);
    let kinds: Vec<BlockKind> = blocks.iter().map(|b| b.kind).collect();
    assert_eq!(
        kinds,
        [
            BlockKind::Unittest,
            BlockKind::Cargo,
            BlockKind::Go,
            BlockKind::Jest,
            BlockKind::Mocha
        ]
    );
    // The traceback and the panic belong to their runner's block.
    assert_eq!(
        lines[blocks[0].end],
        "----------------------------------------------------------------------"
    );
    assert_eq!(lines[blocks[0].end - 2], "AssertionError: 1 != 2");
    assert_eq!(lines[blocks[1].end], "failures:");
    assert_eq!(lines[blocks[2].end], "FAIL");
    assert_eq!(lines[blocks[4].end], "done");
}

#[test]
fn a_standalone_traceback_ends_at_its_exception_line_and_keeps_it() {
    let text = "starting\nTraceback (most recent call last):\n  File \"a.py\", line 3, in <module>\n    d['user_id']\npkg.Missing: user_id\nafter\n";
    let (lines, blocks) = blocks_of(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].kind, BlockKind::Traceback);
    assert_eq!(lines[blocks[0].end - 1], "pkg.Missing: user_id");
    let picked = select(&lines, blocks[0], 40);
    assert!(
        picked.contains(&(blocks[0].end - 1, Pick::LastDetail)),
        "{picked:?}"
    );
}

#[test]
fn a_standalone_panic_keeps_its_message() {
    let text = "running\nthread 'main' panicked at src/main.rs:4:5:\nindex out of bounds: the len is 3 but the index is 7\nnote: run with `RUST_BACKTRACE=1`\n";
    let (lines, blocks) = blocks_of(text);
    assert_eq!(blocks.len(), 1);
    assert_eq!(blocks[0].kind, BlockKind::Panic);
    let picked: Vec<usize> = select(&lines, blocks[0], 40)
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(picked, [1, 2]);
}

#[test]
fn a_long_block_keeps_header_details_frames_and_captured_tail_only() {
    let mut text = String::from("____ test_deep ____\n");
    for i in 0..60 {
        text.push_str(&format!("    line_{i} = compute({i})\n"));
    }
    text.push_str(">       assert total == 42\nE       assert 41 == 42\nE        +  where 41 = f()\n\nsrc/calc.py:88: AssertionError\n");
    text.push_str(
        "----------------------------- Captured stdout call -----------------------------\n",
    );
    for i in 0..50 {
        text.push_str(&format!("log {i}\n"));
    }
    let (lines, blocks) = blocks_of(&text);
    assert_eq!(blocks.len(), 1);
    let kept = select(&lines, blocks[0], 40);
    assert!(kept.len() <= 20, "{}", kept.len());
    let shown: Vec<&str> = kept.iter().map(|(i, _)| lines[*i]).collect();
    for must in [
        "____ test_deep ____",
        ">       assert total == 42",
        "E       assert 41 == 42",
        "E        +  where 41 = f()",
        "src/calc.py:88: AssertionError",
        "log 49",
        "log 45",
    ] {
        assert!(shown.contains(&must), "lost {must:?}: {shown:#?}");
    }
    assert!(!shown.contains(&"    line_3 = compute(3)"));
    // A larger cap does not make the block whole: the traceback middle never matters.
    assert_eq!(select(&lines, blocks[0], 1000).len(), kept.len());
    let few = select(&lines, blocks[0], 3);
    assert_eq!(few.len(), 3);
    assert_eq!(few[0].1, Pick::Header);
}

#[test]
fn failing_tests_come_from_the_summary_and_the_block_headers() {
    let pytest = "\
============================= FAILURES =============================
____________________________ test_one ____________________________

    def test_one():
>       assert 1 == 2
E       assert 1 == 2

tests/test_a.py:3: AssertionError
___________________________ Klass.test_two ___________________________
E   ValueError: bad value
=========================== short test summary info ============================
FAILED tests/test_a.py::test_one - assert 1 == 2
FAILED tests/test_a.py::Klass::test_two
========================= 2 failed, 3 passed in 0.12s ==========================";
    let tests = failing_tests(pytest);
    assert_eq!(
        tests,
        vec![
            FailingTest {
                id: "tests/test_a.py::test_one".into(),
                error: Some("assert 1 == 2".into())
            },
            FailingTest {
                id: "tests/test_a.py::Klass::test_two".into(),
                error: Some("ValueError: bad value".into())
            },
        ]
    );
    let unittest = "\
======================================================================
FAIL: test_x (app.tests.ModelTests)
----------------------------------------------------------------------
Traceback (most recent call last):
  File \"/app/tests.py\", line 9, in test_x
    self.assertEqual(a, b)
AssertionError: 1 != 2

----------------------------------------------------------------------
Ran 4 tests in 0.010s

FAILED (failures=1)";
    assert_eq!(
        failing_tests(unittest),
        vec![FailingTest {
            id: "test_x (app.tests.ModelTests)".into(),
            error: Some("AssertionError: 1 != 2".into())
        }]
    );
    let cargo = "---- tests::adds stdout ----\nthread 'tests::adds' panicked at src/lib.rs:9:5:\nassertion failed\n\nfailures:\n    tests::adds\n\ntest result: FAILED. 0 passed; 1 failed";
    let tests = failing_tests(cargo);
    assert_eq!(tests.len(), 1);
    assert_eq!(tests[0].id, "tests::adds");
    assert!(tests[0].error.as_deref().unwrap().contains("panicked at"));
    assert!(failing_tests("Traceback (most recent call last):\nValueError: x").is_empty());
    assert!(failing_tests("all 12 passed").is_empty());
}
