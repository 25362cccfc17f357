//! A model for summaries ([`SummaryModel`], `[context] compaction_model`): another model
//! the summary requests of compactions go to, with its own window, caps and prices.
//!
//! A summary request to it carries the same messages as one to the conversation's model,
//! but none of its prompt cache: the provider caches per model, so the request is sent
//! without cache breakpoints in its messages and pays the full input price. When the history to
//! summarise is larger than its input budget, that compaction's summary goes to the
//! conversation's model instead, and the loop says so ([`fallback_notice`]).

use std::sync::Arc;

use crate::tool_loop::spend::SpendGuard;
use crate::wire::adapter::{CacheHints, ModelRequest, ProviderAdapter};
use crate::wire::ReasoningEffort;

/// Another model summaries are requested from; see the module docs.
#[derive(Clone)]
pub struct SummaryModel {
    /// Its provider's adapter.
    pub adapter: Arc<dyn ProviderAdapter>,
    /// The model id sent.
    pub model: String,
    /// `provider/model`: how reports and the transcript name it, and whose prices its
    /// usage is charged at.
    pub spec: String,
    /// The input budget of its window: a summary request larger than this goes to the
    /// conversation's model.
    pub input_budget: u64,
    /// The output cap sent with its requests.
    pub max_output_tokens: Option<u32>,
    /// Output tokens at which pith cuts its answer itself.
    pub output_cap: u64,
    /// How hard it may think (its own `reasoning =`, else none).
    pub reasoning: Option<ReasoningEffort>,
    /// Its requests held to the job's ceilings at its prices (on the conversation's
    /// meter); `None` without ceilings.
    pub spend: Option<Arc<SpendGuard>>,
}

pith_core::debug_fields!(SummaryModel { spec, input_budget });

impl SummaryModel {
    /// Whether a summary request of `counted` tokens (pith's count) fits its input
    /// budget.
    pub fn fits(&self, counted: u64) -> bool {
        counted <= self.input_budget
    }

    /// `request` (built for the conversation's model) as it is sent to this one: its
    /// model id, output cap and reasoning, and no cache breakpoint in the messages
    /// (another model's cache holds nothing of this conversation, and no later request
    /// extends a summary request: writing it would only pay for writes). The system
    /// prompt and the tools keep theirs: the next summary on this model reads them.
    pub fn retarget(&self, request: ModelRequest) -> ModelRequest {
        ModelRequest {
            model: self.model.clone(),
            max_output_tokens: self.max_output_tokens,
            reasoning: self.reasoning,
            cache: CacheHints {
                anchor: None,
                key: None,
                no_message_breakpoints: true,
            },
            ..request
        }
    }
}

/// What the loop tells the user when a summary of `counted` tokens goes to the
/// conversation's model because it is larger than `summary`'s input budget.
pub fn fallback_notice(summary: &SummaryModel, counted: u64) -> String {
    format!(
        "the history to summarise ({} tokens) is larger than the input budget of the compaction model `{}` ({} tokens); this summary goes to the conversation's model",
        pith_core::thousands(counted),
        summary.spec,
        pith_core::thousands(summary.input_budget),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::adapter::CacheHints;

    struct Never;

    #[async_trait::async_trait]
    impl ProviderAdapter for Never {
        fn protocol_name(&self) -> &'static str {
            "never"
        }
        async fn start(
            &self,
            _request: &ModelRequest,
        ) -> Result<crate::wire::ChunkStream, crate::wire::ProviderError> {
            Err(crate::wire::ProviderError::Cancelled)
        }
    }

    fn cheap() -> SummaryModel {
        SummaryModel {
            adapter: Arc::new(Never),
            model: "cheap-1".into(),
            spec: "other/cheap-1".into(),
            input_budget: 1_000,
            max_output_tokens: Some(4_000),
            output_cap: 4_500,
            reasoning: None,
            spend: None,
        }
    }

    #[test]
    fn a_retargeted_request_keeps_its_messages_and_drops_the_message_breakpoints() {
        let request = ModelRequest {
            model: "main".into(),
            system: "system".into(),
            messages: Arc::new(vec![pith_core::Message::user("hello")]),
            tools: Vec::new(),
            max_output_tokens: Some(64_000),
            temperature: None,
            reasoning: Some(ReasoningEffort::High),
            output: None,
            cache: CacheHints {
                anchor: Some(3),
                key: Some("session".into()),
                no_message_breakpoints: false,
            },
        };
        let sent = cheap().retarget(request.clone());
        assert_eq!(sent.model, "cheap-1");
        assert_eq!(sent.max_output_tokens, Some(4_000));
        assert_eq!(sent.reasoning, None);
        assert_eq!(sent.cache.anchor, None);
        assert_eq!(sent.cache.key, None);
        assert!(sent.cache.no_message_breakpoints);
        assert_eq!(sent.system, request.system);
        assert_eq!(sent.messages, request.messages);
    }

    #[test]
    fn a_request_larger_than_its_input_budget_does_not_fit_and_the_notice_says_so() {
        let model = cheap();
        assert!(model.fits(1_000));
        assert!(!model.fits(1_001));
        let notice = fallback_notice(&model, 12_345);
        assert!(notice.contains("12,345 tokens"), "{notice}");
        assert!(
            notice.contains("`other/cheap-1` (1,000 tokens)"),
            "{notice}"
        );
    }
}
