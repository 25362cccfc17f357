//! pith-session: the JSONL transcript store (append, atomic `append_batch`, writer lock,
//! crash recovery), projection of a transcript into the model history and the UI view,
//! and session listing.
