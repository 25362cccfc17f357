//! The user's pins in the loop ([`pith_core::context::pins`]): the front-end adds and
//! removes them through its conversation; every compaction's replacement carries them,
//! read afresh (`compaction`), and the floor counts them (`decision`).

use pith_core::context::pins::{pins_budget_tokens, render_pins, Pin, Pins, RenderedPins};
use pith_core::{Carried, EventSink, LoopEvent};

use crate::tool_loop::agent::AgentLoop;

impl AgentLoop {
    /// The pins.
    pub fn pins(&self) -> &Pins {
        &self.context.pins
    }

    /// The pins, to add or remove one (the conversation records the change first).
    pub fn pins_mut(&mut self) -> &mut Pins {
        &mut self.context.pins
    }

    /// Replaces the pins (a resumed, forked or rewound session's, rebuilt from its
    /// transcript; none after `/clear`).
    pub fn set_pins(&mut self, pins: Pins) {
        self.context.pins = pins;
    }

    /// The pins' token budget (0: pins are off).
    pub fn pins_budget_tokens(&self) -> usize {
        pins_budget_tokens(
            self.context.budget.working_budget(),
            self.options.ledger.pins_percent,
        )
    }

    /// Every pin as a replacement carries it now: files read from disk, within the
    /// budget, each one that does not fit named.
    pub fn render_pins(&self) -> RenderedPins {
        self.render_pin_set(&self.context.pins)
    }

    /// `pins` as a replacement would carry them now (to try a pin before it is made).
    pub fn render_pin_set(&self, pins: &Pins) -> RenderedPins {
        self.render_these_pins(pins.iter(), self.pins_budget_tokens())
    }

    /// The pins the model has not been shown yet, as the next user message carries them:
    /// within what the pins shown before it leave of the budget.
    pub fn render_unshown_pins(&self) -> RenderedPins {
        let unshown = self.context.pins.unshown();
        if unshown.is_empty() {
            return RenderedPins::default();
        }
        let all = self.render_pins();
        let shown: usize = all
            .carried
            .iter()
            .filter(|carried| !unshown.contains(&carried.pin))
            .map(|carried| carried.tokens)
            .sum();
        self.render_these_pins(
            unshown.iter(),
            self.pins_budget_tokens().saturating_sub(shown),
        )
    }

    /// After a replacement carrying pins was installed: the model has seen every pin, and
    /// the user is told of each one it could not carry.
    pub(super) fn pins_carried(&mut self, carried: &Carried, sink: &mut dyn EventSink) {
        self.context.pins.mark_all_shown();
        for left_out in &carried.pins_left_out {
            sink.emit(LoopEvent::Notice(left_out.clone()));
        }
    }

    fn render_these_pins<'a>(
        &self,
        pins: impl IntoIterator<Item = &'a Pin>,
        budget: usize,
    ) -> RenderedPins {
        render_pins(
            pins,
            self.context.files.as_deref(),
            self.counter().as_ref(),
            budget,
        )
    }
}
