//! The runs of one event and their effects: what each event's answer is read from.

use pith_core::hooks::Hooked;
use pith_core::HookRun;

use crate::outcome::Effect;

/// The runs of one event and their effects, in order.
#[derive(Default)]
pub(crate) struct Runs(Vec<(HookRun, Effect)>);

impl Runs {
    /// Adds one run and its effect.
    pub(crate) fn push(&mut self, run: HookRun, effect: Effect) {
        self.0.push((run, effect));
    }

    /// Adds the runs of another event, after these.
    pub(crate) fn extend(&mut self, other: Runs) {
        self.0.extend(other.0);
    }

    /// The effects, in order.
    pub(crate) fn effects(&self) -> impl Iterator<Item = &Effect> {
        self.0.iter().map(|(_, effect)| effect)
    }

    /// The texts `pick` takes from the effects, joined by newlines; `None` when there
    /// are none.
    pub(crate) fn joined(&self, pick: impl Fn(&Effect) -> Option<&str>) -> Option<String> {
        let parts: Vec<&str> = self.effects().filter_map(pick).collect();
        (!parts.is_empty()).then(|| parts.join("\n"))
    }

    /// The contexts, joined.
    pub(crate) fn contexts(&self) -> Option<String> {
        self.joined(|effect| match effect {
            Effect::Context(context) => Some(context.as_str()),
            _ => None,
        })
    }

    /// The reason of the first block, if a run blocked.
    pub(crate) fn first_block(&self) -> Option<String> {
        self.effects().find_map(|effect| match effect {
            Effect::Block(reason) => Some(reason.clone()),
            _ => None,
        })
    }

    /// The event's answer: `value`, with these runs for the front-ends.
    pub(crate) fn answer<T>(self, value: T) -> Hooked<T> {
        Hooked {
            value,
            runs: self.0.into_iter().map(|(run, _)| run).collect(),
        }
    }

    /// The event's answer: what `read` takes from these runs, with them.
    pub(crate) fn answer_with<T>(self, read: impl FnOnce(&Self) -> T) -> Hooked<T> {
        let value = read(&self);
        self.answer(value)
    }

    /// The answer of an event whose hooks can stop something: `block` of the first
    /// block's reason, else `proceed` with the contexts.
    pub(crate) fn gate<T>(
        self,
        block: impl FnOnce(String) -> T,
        proceed: impl FnOnce(Option<String>) -> T,
    ) -> Hooked<T> {
        let value = match self.first_block() {
            Some(reason) => block(reason),
            None => proceed(self.contexts()),
        };
        self.answer(value)
    }
}
