//! pith-testkit: a scripted provider server on 127.0.0.1 that speaks the real OpenAI Chat,
//! OpenAI Responses and Anthropic Messages wire formats (SSE) and records requests, for
//! pith's integration and end-to-end tests.
