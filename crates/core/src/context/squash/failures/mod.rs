//! Failure blocks of test runners: where each failing test's explanation starts and ends,
//! and which of its lines a developer needs to fix it.
//!
//! A block starts at a header and runs to the next header or to the end of its section:
//!
//! | runner | header | ends before |
//! |---|---|---|
//! | pytest | `____ test_a ____` | next header, a `===` section line (not a nested `test session starts`) |
//! | unittest / django | `FAIL: test_x (mod.Class)`, `ERROR: …` | next header, a `======` line, the `------` line above `Ran N tests` |
//! | cargo test | `---- tests::a stdout ----` | next header, `failures:`, `test result:` |
//! | go test | `--- FAIL: TestA (0.00s)` | next header, the first line not indented deeper than the header |
//! | jest / vitest | `● Suite › test` (not `● Console`) | next header, `PASS` / `FAIL` file lines, `Tests:` / `Test Suites:` |
//! | mocha | `  1) suite` after `N failing` | next header, the first non-indented line |
//! | Python traceback | `Traceback (most recent call last):` outside a block | its exception line (included) |
//! | Rust panic | `thread '…' panicked at` outside a block | a blank or `note:` line, at most 8 lines |
//!
//! Within a block, [`select`] keeps the header, the failure details (pytest `E` lines and
//! the last `>` line, the `path:line: ErrorType` line, the exception line that ends each
//! traceback, exception lines, `panicked at` with its message and `left` / `right`, go
//! `_test.go:N:` messages, jest `Expected` / `Received` and the code-frame line), the
//! first and last project frames and the last frame with their source lines (and the
//! first `>` line, in the test), the captured output's header and last lines, and the
//! two code lines above the last `>` line; within `failure_block_max_lines`, most
//! important first. The caller drops what an earlier block already showed.

mod blocks;
mod failing;
mod select;

pub(crate) use blocks::find_blocks;
pub use failing::{failing_tests, FailingTest};
pub(crate) use select::{is_project_frame, keep_blocks, select, Pick};

#[cfg(test)]
mod tests;
