//! Codex CLI's compaction replacement: the user messages, newest first within its
//! `COMPACT_USER_MESSAGE_MAX_TOKENS` (20,000), then the summary.

use pith_core::message::Message;

use super::engine::Replay;

/// Tokens of user messages the `codex` replacement keeps (Codex CLI's figure).
const CODEX_USER_MESSAGES_TOKENS: usize = 20_000;

impl Replay<'_> {
    /// Codex CLI's replacement: the user messages, newest first within
    /// [`CODEX_USER_MESSAGES_TOKENS`] (a message that does not fit whole is cut), in
    /// their order, then the summary.
    pub(super) fn codex_replacement(&self) -> Vec<Message> {
        let counter = self.params.counter.as_ref();
        let mut left = CODEX_USER_MESSAGES_TOKENS;
        let mut kept = Vec::new();
        for text in self.user_texts.iter().rev() {
            if left == 0 {
                break;
            }
            let tokens = counter.count(text);
            if tokens <= left {
                kept.push(text.clone());
                left -= tokens;
            } else {
                let cut: String = text.chars().take(left * 4).collect();
                kept.push(format!("{cut}\n[truncated]"));
                left = 0;
            }
        }
        kept.reverse();
        let mut messages: Vec<Message> = kept.into_iter().map(Message::user).collect();
        messages.push(Message::user(self.params.summary.clone()));
        messages
    }
}
