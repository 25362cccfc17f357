//! pith-repl: the interactive front-end — line editing, streaming render, the compaction
//! loader, Esc / Ctrl+C handling, and slash commands.
