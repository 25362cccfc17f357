//! pith-providers: the generic tool-loop driver (with automatic and manual compaction) and
//! one adapter per wire protocol (OpenAI Chat Completions, OpenAI Responses, Anthropic
//! Messages), plus configuration and the model catalog. Providers never print.
