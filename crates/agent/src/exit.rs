//! The process exit codes every pith command shares: 0 success, 1 agent, provider or I/O
//! failure, 2 usage or configuration error (nothing ran), 130 interrupted.

/// How a pith process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok,
    /// The agent, the provider or the file system failed; what could be saved was.
    Failure,
    /// Bad options or configuration: nothing ran.
    Usage,
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
            ExitCode::Interrupted,
        ]
        .map(ExitCode::code);
        assert_eq!(codes, [0, 1, 2, 130]);
    }
}
