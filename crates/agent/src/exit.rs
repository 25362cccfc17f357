//! The process exit codes every pith command shares: 0 success, 1 agent, provider or I/O
//! failure, 2 usage or configuration error (nothing ran), 3 the request cannot fit the
//! context window, 4 the output schema was not met, 5 the cost ceiling stopped the job,
//! 6 stopped by the doom-loop guard, 124 the time ceiling stopped it, 130 interrupted.

/// How a pith process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok,
    /// The agent, the provider or the file system failed; what could be saved was.
    Failure,
    /// Bad options or configuration: nothing ran.
    Usage,
    /// The request cannot fit the model's context window: pith could not make it fit (what
    /// is never cut is larger than the input budget), or the provider refused it as too
    /// long.
    ContextTooLarge,
    /// The doom-loop guard stopped the job: the model made the same call with the same
    /// result `[doom_loop] stop_after` times in a row.
    RepeatedCall,
    /// The job's final answer did not validate against `--output-schema`, even after
    /// the one correction pith asks for.
    SchemaNotMet,
    /// The next request would have crossed `--max-cost`: it was not sent, the partial
    /// result is saved.
    CostCeiling,
    /// The job reached `--max-duration` (as `timeout(1)`'s 124): it was stopped, the
    /// partial result is saved.
    TimeCeiling,
    /// Interrupted (SIGINT, SIGTERM, Ctrl+C); the transcript is consistent.
    Interrupted,
}

impl ExitCode {
    /// The numeric code for `std::process::exit`.
    pub fn code(self) -> i32 {
        match self {
            ExitCode::Ok => 0,
            ExitCode::Failure => 1,
            ExitCode::Usage => 2,
            ExitCode::ContextTooLarge => 3,
            ExitCode::SchemaNotMet => 4,
            ExitCode::CostCeiling => 5,
            ExitCode::RepeatedCall => 6,
            ExitCode::TimeCeiling => 124,
            ExitCode::Interrupted => 130,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_documented_numbers() {
        let codes = [
            ExitCode::Ok,
            ExitCode::Failure,
            ExitCode::Usage,
            ExitCode::ContextTooLarge,
            ExitCode::SchemaNotMet,
            ExitCode::CostCeiling,
            ExitCode::RepeatedCall,
            ExitCode::TimeCeiling,
            ExitCode::Interrupted,
        ]
        .map(ExitCode::code);
        assert_eq!(codes, [0, 1, 2, 3, 4, 5, 6, 124, 130]);
    }
}
