//! What a resolved model can take, as its protocol and provider decide: how its images
//! are counted and how large they may be, whether a reasoning setting reaches it, and
//! how much output room its thinking needs. pith-agent asks [`ResolvedModel::capabilities`]
//! and [`ResolvedModel::output_cap_with`] instead of matching protocols itself.

use pith_core::{ImageFormula, ImageLimits};

use super::resolve::ResolvedModel;
use super::tables::ProtocolKind;
use crate::wire::ReasoningEffort;

/// What one model can take (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// How the provider counts an image's tokens.
    pub image_formula: ImageFormula,
    /// The images `read` may return to this model: its provider's limits, or `None`
    /// when the model accepts no images (the catalog's `images`, or `[models."p/m"]
    /// images`).
    pub image_limits: Option<ImageLimits>,
    /// Why a reasoning setting is not sent to this model, as a notice for the user;
    /// `None` when it is sent.
    pub reasoning_not_sent: Option<String>,
    /// The model thinks within its output budget (Anthropic's extended thinking, also a
    /// Claude model on Bedrock): the output cap must leave room for the thinking.
    pub thinking_counts_as_output: bool,
}

impl ResolvedModel {
    /// What this model can take.
    pub fn capabilities(&self) -> Capabilities {
        let claude_on_bedrock = self.kind == ProtocolKind::Bedrock
            && crate::wire::bedrock::encode::is_anthropic(&self.model);
        // Compatible servers (OpenRouter, local) may run any model: the larger formula
        // and the smaller limits.
        let openai_itself = self.provider == "openai-chat";
        let (image_formula, image_limits) = match self.kind {
            ProtocolKind::Anthropic => (ImageFormula::Anthropic, ImageLimits::ANTHROPIC),
            ProtocolKind::Bedrock if claude_on_bedrock => {
                (ImageFormula::Anthropic, ImageLimits::ANTHROPIC)
            }
            ProtocolKind::Bedrock => (ImageFormula::Conservative, ImageLimits::COMPATIBLE),
            ProtocolKind::OpenAiResponses => (ImageFormula::OpenAiTiles, ImageLimits::OPENAI),
            ProtocolKind::OpenAiChat if openai_itself => {
                (ImageFormula::OpenAiTiles, ImageLimits::OPENAI)
            }
            ProtocolKind::OpenAiChat => (ImageFormula::Conservative, ImageLimits::COMPATIBLE),
            // Gemini's tiles (258 tokens per 768 px) are not modelled: the larger.
            ProtocolKind::Gemini => (ImageFormula::Conservative, ImageLimits::COMPATIBLE),
        };
        let reasoning_not_sent = match self.kind {
            ProtocolKind::OpenAiChat => Some(format!(
                "note: reasoning settings are not sent to Chat Completions servers (`{}`): they disagree on the field; the model reasons as its server decides",
                self.spec()
            )),
            ProtocolKind::Bedrock if !claude_on_bedrock => Some(format!(
                "note: on Bedrock, reasoning settings are sent to Claude models only (`{}` reasons as its provider decides)",
                self.spec()
            )),
            _ => None,
        };
        Capabilities {
            image_formula,
            image_limits: self.images.then_some(image_limits),
            reasoning_not_sent,
            thinking_counts_as_output: self.thinks_within_output(),
        }
    }

    /// Anthropic's extended thinking, also for a Claude model on Bedrock: the thinking
    /// counts against the output cap.
    fn thinks_within_output(&self) -> bool {
        match self.kind {
            ProtocolKind::Anthropic => true,
            ProtocolKind::Bedrock => crate::wire::bedrock::encode::is_anthropic(&self.model),
            _ => false,
        }
    }

    /// The output cap pith enforces with `reasoning` on: the model's own cap, raised for
    /// a model whose thinking counts as output so that the thinking budget still leaves
    /// the answer its room.
    pub fn output_cap_with(&self, reasoning: Option<ReasoningEffort>) -> u32 {
        match reasoning {
            Some(reasoning) if self.thinks_within_output() => {
                let answer_room = crate::wire::anthropic::DEFAULT_MAX_TOKENS;
                self.output_cap
                    .max(reasoning.anthropic_budget().saturating_add(answer_room))
            }
            _ => self.output_cap,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::models::resolve::resolve_model;
    use crate::models::tables::ModelTables;

    fn model(spec: &str) -> ResolvedModel {
        let env = |name: &str| match name {
            "AWS_REGION" => Some("us-east-1".to_owned()),
            _ => name.ends_with("_KEY").then(|| "k".to_owned()),
        };
        resolve_model(spec, &ModelTables::default(), &env).unwrap()
    }

    #[test]
    fn images_follow_the_provider_and_a_claude_model_on_bedrock_counts_as_anthropic() {
        let claude = model("anthropic/claude-sonnet-4-5").capabilities();
        assert_eq!(claude.image_formula, ImageFormula::Anthropic);
        assert_eq!(claude.image_limits, Some(ImageLimits::ANTHROPIC));
        let on_bedrock = model("bedrock/anthropic.claude-sonnet-4-5").capabilities();
        assert_eq!(on_bedrock.image_formula, ImageFormula::Anthropic);
        assert!(on_bedrock.thinking_counts_as_output);
        assert!(on_bedrock.reasoning_not_sent.is_none());
        let gpt = model("openai/gpt-5").capabilities();
        assert_eq!(gpt.image_formula, ImageFormula::OpenAiTiles);
        assert!(!gpt.thinking_counts_as_output);
    }

    #[test]
    fn a_model_without_images_gets_no_limits_and_chat_servers_get_no_reasoning() {
        let local = model("local/smollm2").capabilities();
        assert_eq!(local.image_limits, None);
        assert_eq!(local.image_formula, ImageFormula::Conservative);
        let notice = local.reasoning_not_sent.unwrap();
        assert!(notice.contains("Chat Completions") && notice.contains("local/smollm2"));
        let nova = model("bedrock/amazon.nova-pro-v1:0").capabilities();
        assert!(nova
            .reasoning_not_sent
            .unwrap()
            .contains("Claude models only"));
        assert!(!nova.thinking_counts_as_output);
    }

    #[test]
    fn thinking_raises_the_output_cap_only_where_it_counts_as_output() {
        let claude = model("anthropic/claude-sonnet-4-5");
        let high = Some(ReasoningEffort::High);
        let raised = claude.output_cap_with(high);
        assert!(raised >= ReasoningEffort::High.anthropic_budget());
        assert!(raised >= claude.output_cap);
        assert_eq!(claude.output_cap_with(None), claude.output_cap);
        let gpt = model("openai/gpt-5");
        assert_eq!(gpt.output_cap_with(high), gpt.output_cap);
    }
}
