//! Issue 21's fixture: a generated CI log of a script that runs two pytest sessions, the
//! first with three failures (its FAILURES section and short summary in the middle of
//! the log), the second passing. Included by path by the tests that need it (pith-core,
//! pith-tools, the pith binary), so the log is generated, never committed.

#![allow(dead_code)]

/// The failing test ids of the first session.
pub const FAILING_IDS: [&str; 3] = [
    "tests/unit/test_x.py::test_a",
    "tests/unit/test_y.py::test_b",
    "tests/unit/test_z.py::test_c",
];

/// The failure details a developer needs (pytest `E` and location lines).
pub const DETAILS: [&str; 7] = [
    "E       assert 41 == 42",
    "E        +  where 41 = compute_total()",
    "tests/unit/test_x.py:17: AssertionError",
    "E       KeyError: 'user_id'",
    "src/project/handler.py:12: KeyError",
    "E       ValueError: bad header on line 3",
    "src/project/parser.py:88: ValueError",
];

/// The summary line of each session.
pub const SUMMARIES: [&str; 2] = [
    "============ 3 failed, 6297 passed, 12 warnings in 120.45s (0:02:00) ============",
    "========================= 4200 passed in 61.02s (0:01:01) =========================",
];

fn session_header(out: &mut String, items: usize) {
    out.push_str(
        "============================= test session starts ==============================\n",
    );
    out.push_str(
        "platform linux -- Python 3.11.4, pytest-7.4.0, pluggy-1.2.0 -- /usr/bin/python3\n",
    );
    out.push_str("cachedir: .pytest_cache\nrootdir: /builds/project\nconfigfile: pyproject.toml\n");
    out.push_str(&format!("collected {items} items\n\n"));
}

/// Appends passing-test progress lines until `out` holds `until` bytes; returns the next
/// test number.
fn passing(out: &mut String, dir: &str, mut i: usize, until: usize) -> usize {
    while out.len() < until {
        out.push_str(&format!(
            "tests/{dir}/test_module_{:03}.py::test_behaviour_{i:05} PASSED{:>24}\n",
            i / 50,
            format!("[{:>3}%]", (i / 60).min(100))
        ));
        i += 1;
    }
    i
}

/// A CI log of about `bytes` bytes (see the module docs).
pub fn ci_log(bytes: usize) -> String {
    let mut out = String::from("+ python -m pip install -e '.[test]'\n");
    out.push_str("Obtaining file:///builds/project\n  Installing build dependencies: started\n");
    for i in 0..40 {
        out.push_str(&format!(
            "Collecting dependency-{i}>=1.{i}\n  Downloading dependency_{i}-1.{i}.0-py3-none-any.whl (45 kB)\n"
        ));
    }
    out.push_str("Successfully installed project-0.1.0 dependency-0 dependency-1\n");
    out.push_str("+ python -m pytest tests/unit -v\n");
    session_header(&mut out, 6300);
    // Session 1 runs to about 60% of the log, its failures at 20% and 40%.
    let next = passing(&mut out, "unit", 0, bytes / 5);
    out.push_str(&format!("{} FAILED{:>24}\n", FAILING_IDS[0], "[ 33%]"));
    let next = passing(&mut out, "unit", next, bytes * 2 / 5);
    out.push_str(&format!("{} FAILED{:>24}\n", FAILING_IDS[1], "[ 66%]"));
    out.push_str(&format!("{} FAILED{:>24}\n", FAILING_IDS[2], "[ 66%]"));
    passing(&mut out, "unit", next, bytes * 3 / 5);
    out.push_str(concat!(
        "\n=================================== FAILURES ===================================\n",
        "____________________________________ test_a ____________________________________\n",
        "\n",
        "    def test_a():\n",
        "        items = load_items()\n",
        ">       assert compute_total() == 42\n",
        "E       assert 41 == 42\n",
        "E        +  where 41 = compute_total()\n",
        "\n",
        "tests/unit/test_x.py:17: AssertionError\n",
        "----------------------------- Captured stdout call -----------------------------\n",
        "loading 12 items\n",
        "total computed: 41\n",
        "____________________________________ test_b ____________________________________\n",
        "\n",
        "    def test_b():\n",
        "        payload = {'name': 'x'}\n",
        ">       handle(payload)\n",
        "\n",
        "tests/unit/test_y.py:30: \n",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n",
        "\n",
        "    def handle(payload):\n",
        ">       return payload['user_id']\n",
        "E       KeyError: 'user_id'\n",
        "\n",
        "src/project/handler.py:12: KeyError\n",
        "____________________________________ test_c ____________________________________\n",
        "\n",
        "    def test_c():\n",
        ">       parse_file('fixtures/broken.csv')\n",
        "\n",
        "tests/unit/test_z.py:44: \n",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ \n",
        "\n",
        "    def parse_file(path):\n",
        "        for number, line in enumerate(open(path), 1):\n",
        ">           raise ValueError(f'bad header on line {number}')\n",
        "E       ValueError: bad header on line 3\n",
        "\n",
        "src/project/parser.py:88: ValueError\n",
        "=============================== warnings summary ===============================\n",
    ));
    for i in 0..12 {
        out.push_str(&format!(
            "tests/unit/test_module_{i:03}.py::test_behaviour_{i:05}\n  /builds/project/src/project/compat.py:{}: DeprecationWarning: datetime.utcnow() is deprecated\n    return datetime.utcnow()\n\n",
            20 + i
        ));
    }
    out.push_str("-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html\n");
    out.push_str(
        "=========================== short test summary info ============================\n",
    );
    out.push_str("FAILED tests/unit/test_x.py::test_a - assert 41 == 42\n");
    out.push_str("FAILED tests/unit/test_y.py::test_b - KeyError: 'user_id'\n");
    out.push_str("FAILED tests/unit/test_z.py::test_c - ValueError: bad header on line 3\n");
    out.push_str(SUMMARIES[0]);
    out.push('\n');
    out.push_str("+ python -m pytest tests/integration -v\n");
    session_header(&mut out, 4200);
    passing(&mut out, "integration", 0, bytes.saturating_sub(100));
    out.push('\n');
    out.push_str(SUMMARIES[1]);
    out.push('\n');
    out
}

/// Panics unless `text` holds every failing id, detail, summary and step command.
pub fn assert_keeps_everything(text: &str, what: &str) {
    for id in FAILING_IDS {
        assert!(text.contains(id), "{what}: lost failing id {id:?}:\n{text}");
    }
    for detail in DETAILS {
        assert!(
            text.contains(detail),
            "{what}: lost detail {detail:?}:\n{text}"
        );
    }
    for summary in SUMMARIES {
        assert!(
            text.contains(summary),
            "{what}: lost summary {summary:?}:\n{text}"
        );
    }
    for command in [
        "+ python -m pytest tests/unit -v",
        "+ python -m pytest tests/integration -v",
    ] {
        assert!(
            text.contains(command),
            "{what}: lost command {command:?}:\n{text}"
        );
    }
}
