//! The process exit codes every pith command shares: 0 success, 1 agent, provider or I/O
//! failure, 2 usage or configuration error (nothing ran), 4 the output schema was not
//! met, 5 the cost ceiling stopped the job, 124 the time ceiling stopped it, 130
//! interrupted. (3 is kept free.)

/// How a pith process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok,
    /// The agent, the provider or the file system failed; what could be saved was.
    Failure,
    /// Bad options or configuration: nothing ran.
    Usage,
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
            ExitCode::SchemaNotMet => 4,
            ExitCode::CostCeiling => 5,
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
            ExitCode::SchemaNotMet,
            ExitCode::CostCeiling,
            ExitCode::TimeCeiling,
            ExitCode::Interrupted,
        ]
        .map(ExitCode::code);
        assert_eq!(codes, [0, 1, 2, 4, 5, 124, 130]);
    }
}
