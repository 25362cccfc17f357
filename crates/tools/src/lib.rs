//! pith-tools: the agent's tools (read, write, edit, bash, grep, glob, ls) implementing
//! `pith_core::Tool`, the permission policy (read-only / ask / auto-edit / full), workspace
//! confinement, and squash-at-capture with spill files for large outputs.
