//! The spend guard: the job's ceilings (`--max-cost`, `--max-duration`) applied to every
//! model request of one loop — turn requests and compaction requests alike, since both
//! go through `request::send_with_retries`.
//!
//! Before each attempt the guard estimates what the request will cost (its tokens, the
//! model's prices, see [`pith_core::cost`]) and asks the shared [`SpendMeter`]; a refusal
//! ends the request with [`ProviderError::Ceiling`] before anything is sent. After it, the
//! guard charges the meter what the request cost: the provider's own figure, else the
//! prices applied to the reported usage, else (no usage reported) the estimate.
//! A subagent's loop has its own guard on its parent's meter, so its requests count too.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use pith_core::{
    usage_cost, CeilingReached, Pricing, RequestEstimator, SpendMeter, TokenCounter, Usage,
};

use crate::wire::adapter::ModelRequest;

/// One loop's guard on a shared [`SpendMeter`]; see the module docs.
pub struct SpendGuard {
    meter: Arc<SpendMeter>,
    pricing: Option<Pricing>,
    /// Counts the requests this guard sees (anchored on their reported usage, so only
    /// new messages are counted).
    estimator: Mutex<RequestEstimator>,
    /// The last usage a request of this loop reported: its prompt is likely cached now.
    last: Mutex<Option<Usage>>,
}

impl std::fmt::Debug for SpendGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpendGuard")
            .field("ceilings", &self.meter.ceilings())
            .field("pricing", &self.pricing)
            .finish()
    }
}

/// What [`SpendGuard::admit`] let through: the estimate the request will be charged when
/// its provider reports no usage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Admitted {
    /// Estimated dollars (0 without a cost ceiling).
    pub estimate: f64,
}

impl SpendGuard {
    /// A guard charging `meter`, estimating with `pricing` and `counter`. A cost ceiling
    /// without prices is an error: the guard could not tell what a request costs.
    pub fn new(
        meter: Arc<SpendMeter>,
        pricing: Option<Pricing>,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, String> {
        if meter.ceilings().max_cost.is_some() && pricing.is_none() {
            return Err(
                "--max-cost needs the model's prices, and pith knows none for this model: set [models.\"provider/model\"] pricing = { input = …, cached_input = …, output = … } (dollars per million tokens)"
                    .to_owned(),
            );
        }
        Ok(Self {
            meter,
            pricing,
            // Its estimate predicts the bill, and the provider bills what it reports: every
            // report is believed here (not so for the context decisions).
            estimator: Mutex::new({
                let mut estimator = RequestEstimator::new(counter);
                estimator.set_usage_band(pith_core::context::calibration::Band {
                    min: 0.0,
                    max: f64::MAX,
                });
                estimator
            }),
            last: Mutex::new(None),
        })
    }

    /// The meter it charges.
    pub fn meter(&self) -> &Arc<SpendMeter> {
        &self.meter
    }

    /// May `request`, whose answer may reach `output_cap` tokens, be sent now?
    pub fn admit(
        &self,
        request: &ModelRequest,
        output_cap: u64,
    ) -> Result<Admitted, CeilingReached> {
        let estimate = match (&self.pricing, self.meter.ceilings().max_cost) {
            (Some(pricing), Some(_)) => {
                let input = self
                    .estimator
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .estimate(&request.system, &request.messages, &request.tools)
                    .total as u64;
                let likely_cached = self
                    .last
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .filter(|usage| usage.cached_input_tokens > 0)
                    .map_or(0, |usage| usage.input_tokens);
                let cap = request.max_output_tokens.map_or(output_cap, u64::from);
                self.meter.estimate(pricing, input, likely_cached, cap)
            }
            _ => 0.0,
        };
        self.meter.admit(estimate, Instant::now())?;
        Ok(Admitted { estimate })
    }

    /// Charges the meter for `request`, admitted as `admitted`: `usage` when the provider
    /// reported it, else the estimate when the provider produced anything (`answered`).
    pub fn charge(
        &self,
        request: &ModelRequest,
        admitted: Admitted,
        usage: Option<&Usage>,
        answered: bool,
    ) {
        match usage {
            Some(usage) => {
                let dollars = usage_cost(usage, self.pricing.as_ref()).unwrap_or(0.0);
                self.meter.charge(dollars, usage.output_tokens);
                *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(*usage);
                let mut estimator = self.estimator.lock().unwrap_or_else(|e| e.into_inner());
                // The report is weighed against pith's count of the same request (the
                // band of docs/context-pipeline.md): what the provider bills is its count.
                let counted = estimator
                    .estimate(&request.system, &request.messages, &request.tools)
                    .counted as u64;
                estimator.record_usage(
                    usage.input_tokens,
                    usage.output_tokens,
                    request.messages.len() + 1,
                    counted,
                );
            }
            None if answered => self.meter.charge(admitted.estimate, 0),
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pith_core::{BpeCounter, Ceilings, Encoding, Message};
    use std::time::Duration;

    const PRICES: Pricing = Pricing {
        input: 3.0,
        cached_input: 0.3,
        output: 15.0,
    };

    fn request(text: &str) -> ModelRequest {
        ModelRequest {
            model: "m".into(),
            system: String::new(),
            messages: Arc::new(vec![Message::user(text)]),
            tools: Vec::new(),
            max_output_tokens: Some(1_000),
            temperature: None,
            reasoning: None,
            output: None,
        }
    }

    fn guard(max_cost: Option<f64>, pricing: Option<Pricing>) -> Result<SpendGuard, String> {
        SpendGuard::new(
            Arc::new(SpendMeter::new(Ceilings {
                max_cost,
                max_duration: Some(Duration::from_secs(600)),
            })),
            pricing,
            Arc::new(BpeCounter::new(Encoding::O200kBase)),
        )
    }

    #[test]
    fn a_cost_ceiling_without_prices_is_an_error_at_start() {
        let error = guard(Some(1.0), None).unwrap_err();
        assert!(error.contains("pricing"), "{error}");
        assert!(guard(None, None).is_ok(), "a time ceiling needs no prices");
    }

    #[test]
    fn requests_are_charged_their_reported_cost_and_refused_past_the_ceiling() {
        let guard = guard(Some(0.02), Some(PRICES)).unwrap();
        let request = request("hello");
        let admitted = guard.admit(&request, 32_000).unwrap();
        // A few input tokens plus the 1,000-token cap of the request at $15/M.
        assert!(admitted.estimate > 0.015 && admitted.estimate < 0.0151);
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 1_000,
            ..Usage::default()
        };
        guard.charge(&request, admitted, Some(&usage), true);
        assert!((guard.meter().spent() - 0.018).abs() < 1e-9);
        let refused = guard.admit(&request, 32_000).unwrap_err();
        assert!(matches!(refused, CeilingReached::Cost { .. }), "{refused}");
    }

    #[test]
    fn a_request_without_reported_usage_is_charged_its_estimate_only_when_it_answered() {
        let guard = guard(Some(10.0), Some(PRICES)).unwrap();
        let request = request("hello");
        let admitted = guard.admit(&request, 32_000).unwrap();
        guard.charge(&request, admitted, None, false);
        assert_eq!(
            guard.meter().spent(),
            0.0,
            "a refused connection costs nothing"
        );
        guard.charge(&request, admitted, None, true);
        assert!((guard.meter().spent() - admitted.estimate).abs() < 1e-12);
    }
}
