//! `cargo xtask demo`: pith's main job, end to end, on a real model, offline.
//!
//! Starts a private llama.cpp server with SmolLM2-135M (installing it first if needed),
//! then runs real headless jobs in one session of a scratch workspace with a small context
//! window: the parts of a long design document, one job each, then a question about the
//! first part. The history crosses the automatic threshold at least twice, so pith
//! compacts through the real model, and the first request the server receives after each
//! compaction must still carry every fact of part one. Finally it prints `pith replay` of
//! the session.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::local_llm::{self, Cache, MODEL_ALIAS, PENALTY_LAST_N};

mod documents;
mod evidence;
mod proxy;

use documents::{QUESTION, STEPS};
use pith_providers::models::builtin::{
    LOCAL_FREQUENCY_PENALTY, LOCAL_MAX_OUTPUT_TOKENS, LOCAL_REPEAT_PENALTY,
};
use proxy::Recorder;

/// Port of the demo's own server (the default local port stays free for the user's).
const DEMO_PORT: u16 = 8078;
/// Context size of the demo server.
const DEMO_SERVER_CTX: u32 = 8192;
/// The window pith is told to work with: small, so a few thousand tokens fill it.
const DEMO_WINDOW: u64 = 6144;

/// What a demo run showed (it has already failed if a fact was lost, a step printed a
/// spill warning, or a step's answer was cut off at the output cap).
#[derive(Debug)]
pub struct Outcome {
    /// Automatic compactions of the session.
    pub compactions: usize,
    /// Requests checked: the first after each compaction (two compactions in a row share
    /// one).
    pub checked: usize,
    /// Facts found in the checked requests, over all of them.
    pub facts_kept: usize,
}

/// Runs the demo (`cargo xtask demo [--no-build]`).
pub fn run(build: Build) -> Result<()> {
    let outcome = run_checked(build)?;
    eprintln!(
        "demo: passed ({} compactions, {} facts found in the {} requests after them, no step cut off)",
        outcome.compactions, outcome.facts_kept, outcome.checked
    );
    Ok(())
}

/// Whether the demo builds pith first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// `cargo build --bin pith` first (the command).
    Yes,
    /// Use the `pith` already built in the target directory (the test, which runs
    /// inside `cargo test`: a nested build would wait for the lock that run holds).
    No,
}

/// Runs the demo and returns what it showed.
pub fn run_checked(build: Build) -> Result<Outcome> {
    let root = local_llm::repo_root()?;
    let cache = Cache::new()?;
    let already_running = local_llm::models_answer(DEMO_PORT);
    let server = local_llm::ensure_running(&cache, DEMO_PORT, DEMO_SERVER_CTX)?;
    let outcome = demo(&root, &server.base_url, build);
    if !already_running {
        local_llm::run(DEMO_PORT, DEMO_SERVER_CTX, true)?;
    }
    outcome
}

fn demo(root: &Path, server_url: &str, build: Build) -> Result<Outcome> {
    if build == Build::Yes {
        build_pith(root)?;
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), std::path::PathBuf::from);
    let pith = target.join("debug").join("pith");
    let scratch = root.join(".cache").join("demo");
    let _ = std::fs::remove_dir_all(&scratch);
    let work = scratch.join("work");
    std::fs::create_dir_all(&work)?;

    // pith talks to the model through a recording proxy: the demo shows what the model
    // received after each compaction, not what pith meant to send.
    let port = server_url
        .trim_end_matches("/v1")
        .rsplit(':')
        .next()
        .and_then(|port| port.parse().ok())
        .context("the model server's URL has no port")?;
    let recorder = Recorder::start(port)?;
    let model = format!("local/{MODEL_ALIAS}");
    let window = DEMO_WINDOW.to_string();
    println!(
        "pith with {model} (SmolLM2-135M on llama.cpp: greedy, repeat penalty {LOCAL_REPEAT_PENALTY} \
         and frequency penalty {LOCAL_FREQUENCY_PENALTY} over the last {PENALTY_LAST_N} tokens), \
         a {window}-token window, default settings\n"
    );

    let steps = Steps {
        pith: &pith,
        scratch: &scratch,
        work: &work,
        recorder: &recorder,
        model: &model,
        window: &window,
    };
    let (results, looped, session, answer) = steps.run_all()?;

    let compactions: Vec<Value> = results
        .iter()
        .flat_map(|result| {
            result["compactions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .collect();
    let errors = recorder.errors();
    if !errors.is_empty() {
        bail!("the demo's proxy could not relay: {}", errors.join("; "));
    }
    let requests = recorder.requests();
    let checked = evidence::after_compactions(&requests);
    // Two compactions in a row (the history still over the mark after the first) share
    // the request after them: each distinct request is checked once.
    if compactions.len() < 2 || checked.len() < 2 {
        bail!(
            "the demo expected at least two automatic compactions, each followed by a request; it saw {} compaction(s) and {} request(s) after one",
            compactions.len(),
            checked.len()
        );
    }
    for (number, compaction) in compactions.iter().enumerate() {
        println!(
            "compaction {} ({}): {} → {} tokens (pith's estimate)",
            number + 1,
            compaction["trigger"].as_str().unwrap_or("?"),
            compaction["tokens_before"],
            compaction["tokens_after"]
        );
    }
    let missing = print_evidence(&checked, &requests);
    println!(
        "\nThe 135M model's words (a tiny model; the evidence above is what pith kept for it):\n  {}",
        one_paragraph(answer["text"].as_str().unwrap_or_default())
    );
    println!(
        "\ndemo: every request the model received is in {}; the session is in {}; see it all with\n  PITH_HOME={} {} replay {session}",
        requests_file(&scratch).display(),
        scratch.join("home").display(),
        scratch.join("home").display(),
        pith.display()
    );
    if let Some(failure) = failure(&missing, &looped) {
        bail!("{failure}");
    }
    println!(
        "\ndemo: kept through {} compactions: SQLite in WAL mode (and why), 90-day retention, mutual TLS",
        compactions.len()
    );
    Ok(Outcome {
        compactions: compactions.len(),
        checked: checked.len(),
        facts_kept: checked
            .iter()
            .map(|after| after.facts.len() - after.missing().len())
            .sum(),
    })
}

/// Builds the pith binary the demo runs.
fn build_pith(root: &Path) -> Result<()> {
    eprintln!("demo: building pith");
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(["build", "--quiet", "--bin", "pith"])
        .current_dir(root)
        .status()
        .context("cargo build")?;
    if !status.success() {
        bail!("building pith failed");
    }
    Ok(())
}

/// Prints what the model received in the first request after each compaction, each
/// fact ticked as kept (with where) or marked lost, and the ledger a request with a lost
/// fact carried instead; the lost facts, for the verdict.
fn print_evidence(checked: &[evidence::AfterCompaction], requests: &[Value]) -> Vec<String> {
    println!("\nWhat the model received in the first request after each compaction:");
    let mut missing = Vec::new();
    for after in checked {
        println!(
            "\nrequest {} (the first after a compaction):",
            after.request + 1
        );
        for found in &after.facts {
            match &found.at {
                Some((part, line)) => {
                    println!(
                        "  ✓ kept  {}\n          in {part}: {line}",
                        found.fact.label
                    )
                }
                None => println!("  ✗ LOST  {}", found.fact.label),
            }
        }
        if !after.missing().is_empty() {
            // What the model received instead, for a reader of a failed run (CI's log).
            match requests.get(after.request).and_then(evidence::ledger_block) {
                Some(ledger) => println!("  its session ledger:\n{ledger}"),
                None => println!("  it carried no session ledger"),
            }
        }
        missing.extend(
            after
                .missing()
                .into_iter()
                .map(|label| format!("{label} (in request {})", after.request + 1)),
        );
    }
    missing
}

/// What every step of the demo runs with.
struct Steps<'a> {
    pith: &'a Path,
    scratch: &'a Path,
    work: &'a Path,
    recorder: &'a Recorder,
    model: &'a str,
    window: &'a str,
}

impl Steps<'_> {
    /// Every step in order, then the question: their results, the steps cut off, the
    /// session's id and the answer to the question.
    fn run_all(&self) -> Result<(Vec<Value>, Vec<&'static str>, String, Value)> {
        let mut session: Option<String> = None;
        let mut results = Vec::new();
        let mut looped = Vec::new();
        for step in STEPS {
            let (result, cut_off) = self.run(session.as_deref(), step.shown, step.prompt)?;
            println!(
                "  {}\n",
                one_paragraph(result["text"].as_str().unwrap_or_default())
            );
            if cut_off {
                looped.push(step.shown);
            }
            session = session.or_else(|| result["session_id"].as_str().map(str::to_owned));
            results.push(result);
        }
        let session = session.context("no session id in pith's result")?;
        let (answer, answer_cut_off) = self.run(Some(&session), QUESTION, QUESTION)?;
        results.push(answer.clone());
        if answer_cut_off {
            looped.push(QUESTION);
        }
        Ok((results, looped, session, answer))
    }

    /// Runs one `pith run` step of the demo: prints the command, runs it, and fails on
    /// what a newcomer must not see in a step (a message spilled for its size); whether
    /// the answer was cut off.
    fn run(&self, session: Option<&str>, shown: &str, prompt: &str) -> Result<(Value, bool)> {
        let Steps {
            pith,
            scratch,
            work,
            recorder,
            model,
            window,
        } = *self;
        let mut args = vec!["run"];
        match session {
            Some(id) => args.extend(["--session", id]),
            None => args.extend(["--model", model]),
        }
        args.extend(["--context-window", window, "--format", "json", prompt]);
        let shown_args = match session {
            Some(id) => format!("--session {}", &id[..id.len().min(8)]),
            None => format!("--model {model} --context-window {window}"),
        };
        println!("$ pith run {shown_args} \"{shown}\"");
        let output = pith_command(pith, scratch, work, &recorder.base_url)
            .args(&args)
            .output()
            .context("running pith")?;
        // Every request so far, for a reader who wants all of it (and for a failed step).
        let lines: Vec<String> = recorder.requests().iter().map(Value::to_string).collect();
        let saved = requests_file(scratch);
        std::fs::write(&saved, lines.join("\n") + "\n")
            .with_context(|| format!("writing {}", saved.display()))?;
        let stderr = String::from_utf8_lossy(&output.stderr);
        for line in stderr.lines().filter(|line| !line.trim().is_empty()) {
            eprintln!("  {line}");
        }
        if let Some(line) = stderr.lines().find(|line| is_spill_warning(line)) {
            bail!("a demo step must not print this: {line}");
        }
        let cut_off = stderr
            .lines()
            .any(|line| line.contains("the answer was cut off"));
        Ok((report(&output)?, cut_off))
    }
}

/// Why a demo run fails, if it does: facts of part 1 missing from a request after a
/// compaction, or steps whose answer pith cut off at the output cap (the model did not
/// finish it).
fn failure(missing: &[String], cut_off: &[&str]) -> Option<String> {
    let mut reasons = Vec::new();
    if !missing.is_empty() {
        reasons.push(format!("facts of part 1 were lost: {}", missing.join("; ")));
    }
    if !cut_off.is_empty() {
        reasons.push(format!(
            "the model did not finish {} step(s): pith cut the answer off at its output cap \
             ({LOCAL_MAX_OUTPUT_TOKENS} tokens): {}",
            cut_off.len(),
            cut_off.join(" | ")
        ));
    }
    (!reasons.is_empty()).then(|| reasons.join("; and "))
}

/// Where the demo keeps every request body the model received, one JSON object a line.
fn requests_file(scratch: &Path) -> std::path::PathBuf {
    scratch.join("requests.jsonl")
}

/// A stderr line no demo step may print: a message too large for its share of the
/// window (the steps are sized for it).
fn is_spill_warning(line: &str) -> bool {
    line.contains("more than its share of the context window")
}

/// `text` on one line, at most about 300 characters.
fn one_paragraph(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= 300 {
        return joined;
    }
    let cut: String = joined.chars().take(300).collect();
    format!("{cut}…")
}

fn pith_command(pith: &Path, scratch: &Path, work: &Path, base_url: &str) -> Command {
    let mut command = Command::new(pith);
    command
        .current_dir(work)
        .env("PITH_HOME", scratch.join("home"))
        .env("XDG_CONFIG_HOME", scratch.join("config"))
        .env("PITH_LOCAL_BASE_URL", base_url)
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("GEMINI_API_KEY")
        .env_remove("GOOGLE_API_KEY");
    command
}

fn report(output: &Output) -> Result<Value> {
    let stderr = String::from_utf8_lossy(&output.stderr);
    if !stderr.trim().is_empty() {
        eprint!("{stderr}");
    }
    let value: Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "pith printed no JSON result (exit {:?})",
            output.status.code()
        )
    })?;
    if !output.status.success() {
        bail!("pith failed: {}", value["error"]);
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_spill_warning_fails_a_step() {
        assert!(!is_spill_warning(
            "pith: the answer was cut off: the provider's output limit (length)"
        ));
        assert!(is_spill_warning("pith: your message is 2,400 tokens, more than its share of the context window (1,024 tokens): …"));
        assert!(!is_spill_warning(
            "pith: automatic compaction: 2,856 → 2,281 tokens"
        ));
    }

    #[test]
    fn every_step_fits_its_share_of_the_demo_window() {
        // A user message's share is 25% of the input budget (half of a window this
        // small); bytes / 3 over-counts tokens for English prose.
        let share = DEMO_WINDOW / 2 / 4;
        for step in STEPS {
            assert!((step.prompt.len() as u64) / 3 < share, "{}", step.shown);
        }
    }

    #[test]
    fn a_step_cut_off_at_the_output_cap_fails_the_demo_as_a_lost_fact_does() {
        assert_eq!(failure(&[], &[]), None);
        let cut = failure(&[], &["Part 8: deleting data…", QUESTION]).expect("a failure");
        assert!(cut.contains("did not finish 2 step(s)"), "{cut}");
        assert!(cut.contains("Part 8: deleting data…"), "{cut}");
        assert!(cut.contains(QUESTION), "{cut}");
        let lost = failure(&["retention (in request 23)".to_owned()], &[]).expect("a failure");
        assert!(lost.contains("retention (in request 23)"), "{lost}");
        assert!(!lost.contains("did not finish"), "{lost}");
        let both = failure(&["retention".to_owned()], &["Part 9: upgrades…"]).expect("a failure");
        assert!(
            both.contains("retention") && both.contains("Part 9: upgrades…"),
            "{both}"
        );
    }

    /// The demo end to end, as `cargo xtask demo` runs it: two automatic compactions,
    /// every fact of part 1 in the first request after each, no step spilled and no step
    /// cut off at the output cap (the run fails otherwise). Needs the local model's install
    /// (`cargo xtask local-llm`, cached in `.cache/`) and a built `pith` (`cargo test
    /// --workspace` builds it); `.ci/run` runs it.
    #[test]
    #[ignore = "needs the local model (cargo xtask local-llm); .ci/run runs it"]
    fn the_demo_keeps_every_fact_of_part_one_through_two_compactions() {
        let outcome = run_checked(Build::No)
            .expect("the demo runs, keeps its facts and the model finishes every step");
        assert!(outcome.compactions >= 2, "{outcome:?}");
        assert!(outcome.checked >= 2, "{outcome:?}");
        assert_eq!(
            outcome.facts_kept,
            outcome.checked * evidence::FACTS.len(),
            "{outcome:?}"
        );
    }
}
