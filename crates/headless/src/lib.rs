//! pith-headless: `pith run --prompt` — scripted and CI jobs with text, json and
//! stream-json output, persisting every event through the session store.
