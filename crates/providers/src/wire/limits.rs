//! How much pith accepts from a server, so that a runaway or hostile one cannot exhaust
//! memory: every buffer that grows with the server's output has a bound here, and going
//! past it is a [`ProviderError::LimitExceeded`] — never retried, since the same server
//! would do the same again.

use crate::wire::error::ProviderError;

/// Bounds on one provider's responses. The defaults are generous for every real API and
/// small enough that a runaway server cannot push pith past a few hundred MB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WireLimits {
    /// Largest single server-sent event (its `data:` lines together). Default 32 MiB: no
    /// provider sends events near that (tool arguments, the largest, are bounded below).
    pub max_event_bytes: usize,
    /// Largest argument text of one tool call. Default 16 MiB.
    pub max_tool_argument_bytes: usize,
    /// Most tool calls in one answer. Default 256.
    pub max_tool_calls: usize,
    /// Largest non-streaming JSON body (server probes). Default 16 MiB.
    pub max_body_bytes: usize,
    /// Most bytes of an error body read; the rest is discarded unread. Default 64 KiB.
    pub max_error_body_bytes: usize,
}

impl Default for WireLimits {
    fn default() -> Self {
        Self {
            max_event_bytes: 32 * 1024 * 1024,
            max_tool_argument_bytes: 16 * 1024 * 1024,
            max_tool_calls: 256,
            max_body_bytes: 16 * 1024 * 1024,
            max_error_body_bytes: 64 * 1024,
        }
    }
}

impl WireLimits {
    /// The error for tool-call arguments past the bound.
    pub fn arguments_too_large(&self) -> ProviderError {
        ProviderError::LimitExceeded(format!(
            "a tool call's arguments exceeded {} (max_tool_argument_bytes)",
            human_bytes(self.max_tool_argument_bytes)
        ))
    }

    /// The error for one answer with too many tool calls.
    pub fn too_many_tool_calls(&self) -> ProviderError {
        ProviderError::LimitExceeded(format!(
            "the answer holds more than {} tool calls (max_tool_calls)",
            self.max_tool_calls
        ))
    }
}

/// `33554432` → `32 MiB`, `65536` → `64 KiB` ([`pith_core::human_bytes`]).
pub fn human_bytes(bytes: usize) -> String {
    pith_core::human_bytes(u64::try_from(bytes).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human_bytes(32 * 1024 * 1024), "32 MiB");
        assert_eq!(human_bytes(64 * 1024), "64 KiB");
        assert_eq!(human_bytes(1000), "1000 B");
    }
}
