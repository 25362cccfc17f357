//! Tests of prices, cost and the spend meter.

use super::*;

const SONNET: Pricing = Pricing {
    input: 3.0,
    cached_input: 0.3,
    output: 15.0,
    cache_write: None,
};

/// Claude's prices: writes at 1.25× input.
const CLAUDE: Pricing = Pricing {
    cache_write: Some(3.75),
    ..SONNET
};

fn ceiling(max_cost: f64) -> SpendMeter {
    SpendMeter::new(Ceilings {
        max_cost: Some(max_cost),
        max_duration: None,
    })
}

fn input(tokens: u64, likely_cached: u64) -> InputEstimate {
    InputEstimate {
        tokens,
        likely_cached,
    }
}

#[test]
fn cost_prices_cached_and_uncached_input_apart() {
    let usage = Usage {
        input_tokens: 1_000_000,
        cached_input_tokens: 400_000,
        output_tokens: 100_000,
        ..Usage::default()
    };
    let cost = SONNET.cost(&usage);
    assert!((cost - (1.8 + 0.12 + 1.5)).abs() < 1e-9, "{cost}");
    assert_eq!(usage_cost(&usage, None), None);
    let reported = Usage {
        provider_cost_nanousd: 250_000_000,
        ..usage
    };
    assert_eq!(usage_cost(&reported, Some(&SONNET)), Some(0.25));
}

#[test]
fn cache_writes_are_priced_at_the_write_price_or_the_input_price() {
    let usage = Usage {
        input_tokens: 1_000_000,
        cached_input_tokens: 400_000,
        cache_write_tokens: 500_000,
        output_tokens: 0,
        ..Usage::default()
    };
    // 100k plain input at $3, 500k written at $3.75, 400k read at $0.30 (per M).
    assert!((CLAUDE.cost(&usage) - (0.3 + 1.875 + 0.12)).abs() < 1e-9);
    // Without a write price, writes are input.
    assert!((SONNET.cost(&usage) - (1.8 + 0.12)).abs() < 1e-9);
}

#[test]
fn the_input_estimate_prices_the_cached_part_as_read_and_the_rest_as_written() {
    // 100k tokens, 90k of them likely cached: 90k read at $0.30/M, 10k at $3/M.
    let cost = SONNET.input_cost(input(100_000, 90_000));
    assert!((cost - (0.027 + 0.03)).abs() < 1e-12, "{cost}");
    // Where writes are billed apart the new part may be written, at $3.75/M.
    let cost = CLAUDE.input_cost(input(100_000, 90_000));
    assert!((cost - (0.027 + 0.0375)).abs() < 1e-12, "{cost}");
    // A write price below the input price never lowers the bound.
    let cheap_writes = Pricing {
        cache_write: Some(1.0),
        ..SONNET
    };
    assert!((cheap_writes.input_cost(input(100_000, 0)) - 0.3).abs() < 1e-12);
    // More cached than sent is the whole prompt cached.
    assert!((SONNET.input_cost(input(1_000, 5_000)) - 0.0003).abs() < 1e-12);
}

#[test]
fn output_tokens_for_is_what_the_dollars_pay_rounded_down() {
    assert_eq!(SONNET.output_tokens_for(0.015), 1_000);
    assert_eq!(SONNET.output_tokens_for(0.015 - 1e-9), 999);
    assert_eq!(SONNET.output_tokens_for(0.0), 0);
    assert_eq!(SONNET.output_tokens_for(-1.0), 0);
    assert_eq!(SONNET.output_tokens_for(f64::NAN), 0);
    let free = Pricing {
        output: 0.0,
        ..SONNET
    };
    assert_eq!(free.output_tokens_for(0.01), u64::MAX);
    // Never a token more than the dollars pay, whatever the rounding.
    for cents in 1..2_000 {
        let dollars = f64::from(cents) * 0.000_173;
        let tokens = SONNET.output_tokens_for(dollars);
        assert!(SONNET.output_cost(tokens) <= dollars, "{dollars}");
        assert!(SONNET.output_cost(tokens + 1) > dollars, "{dollars}");
    }
}

#[test]
fn the_output_cap_is_clamped_to_what_the_rest_of_the_budget_pays() {
    // $0.05 left, 5,000 uncached input tokens ($0.015): $0.035 pays 2,333 tokens.
    let plan = plan_request(&SONNET, input(5_000, 0), 64_000, Some(0.05));
    assert_eq!(
        plan,
        RequestPlan::Send {
            output_cap: 2_333,
            clamped: true,
            estimate: 0.015 + 2_333.0 * 15.0 / 1e6,
        }
    );
    assert!(plan.estimate() <= 0.05);
    // The same prompt mostly cached leaves more for the answer: 4,000 read ($0.0012)
    // and 1,000 new ($0.003) leave $0.0458, 3,053 tokens.
    let RequestPlan::Send { output_cap, .. } =
        plan_request(&SONNET, input(5_000, 4_000), 64_000, Some(0.05))
    else {
        panic!("sent")
    };
    assert_eq!(output_cap, 3_053);
    // Writes at 1.25× take their share: 1,000 new at $3.75/M leave $0.04505, 3,003.
    let RequestPlan::Send { output_cap, .. } =
        plan_request(&CLAUDE, input(5_000, 4_000), 64_000, Some(0.05))
    else {
        panic!("sent")
    };
    assert_eq!(output_cap, 3_003);
    // Without a cost ceiling the model's cap stands.
    assert_eq!(
        plan_request(&SONNET, input(5_000, 0), 64_000, None),
        RequestPlan::Send {
            output_cap: 64_000,
            clamped: false,
            estimate: 0.015 + 0.96,
        }
    );
}

#[test]
fn a_model_cap_below_the_clamp_stands() {
    // $1 pays 64,000+ tokens after the input, but the model answers at most 8,192.
    let plan = plan_request(&SONNET, input(5_000, 0), 8_192, Some(1.0));
    assert_eq!(
        plan,
        RequestPlan::Send {
            output_cap: 8_192,
            clamped: false,
            estimate: 0.015 + 8_192.0 * 15.0 / 1e6,
        }
    );
}

#[test]
fn a_request_is_refused_only_when_the_smallest_useful_answer_does_not_fit() {
    // $0.015 for the input; 1,024 tokens of answer are $0.01536: $0.03036 in all.
    let needed = 0.015 + 0.015_36;
    assert_eq!(
        plan_request(&SONNET, input(5_000, 0), 64_000, Some(needed - 1e-6)),
        RequestPlan::Refuse { estimate: needed }
    );
    assert_eq!(
        plan_request(&SONNET, input(5_000, 0), 64_000, Some(needed + 1e-9)),
        RequestPlan::Send {
            output_cap: MIN_USEFUL_OUTPUT_TOKENS,
            clamped: true,
            estimate: needed,
        }
    );
    // Input alone past the budget.
    assert!(matches!(
        plan_request(&SONNET, input(100_000, 0), 64_000, Some(0.2)),
        RequestPlan::Refuse { .. }
    ));
    // A model whose own cap is below the minimum needs only its cap: 500 tokens.
    let small = 0.015 + 500.0 * 15.0 / 1e6;
    assert_eq!(
        plan_request(&SONNET, input(5_000, 0), 500, Some(small)),
        RequestPlan::Send {
            output_cap: 500,
            clamped: false,
            estimate: small,
        }
    );
    assert!(matches!(
        plan_request(&SONNET, input(5_000, 0), 500, Some(small - 1e-6)),
        RequestPlan::Refuse { .. }
    ));
}

fn send(plan: RequestPlan) -> Result<(f64, u64), f64> {
    match plan {
        RequestPlan::Send {
            output_cap,
            estimate,
            ..
        } => Ok((estimate, output_cap)),
        RequestPlan::Refuse { estimate } => Err(estimate),
    }
}

#[test]
fn an_admitted_request_holds_its_most_until_it_is_charged() {
    let meter = ceiling(0.1);
    let now = Instant::now();
    let plan = |remaining| send(plan_request(&SONNET, input(5_000, 0), 64_000, remaining));
    let (first, cap) = meter.reserve_with(now, plan).unwrap();
    // $0.085 pays 5,666 tokens after the input: the whole budget is held.
    assert_eq!(cap, 5_666);
    assert!(meter.remaining().unwrap() < 1e-4);
    // A request running beside it (a subagent) sees what is left: nothing useful.
    let refused = meter.reserve_with(now, plan).unwrap_err();
    let CeilingReached::Cost {
        spent, in_flight, ..
    } = refused
    else {
        panic!("{refused}")
    };
    assert_eq!(spent, 0.0);
    assert!((in_flight - first.dollars()).abs() < 1e-12);
    assert!(
        refused.to_string().contains("held for requests"),
        "{refused}"
    );
    // It cost less than its most: the rest is free again.
    first.settle(0.02);
    assert!((meter.spent() - 0.02).abs() < 1e-12);
    assert!((meter.remaining().unwrap() - 0.08).abs() < 1e-12);
    // Dropped unsettled (abandoned), a hold charges nothing.
    let (held, _) = meter.reserve_with(now, plan).unwrap();
    drop(held);
    assert!((meter.remaining().unwrap() - 0.08).abs() < 1e-12);
    assert!((meter.spent() - 0.02).abs() < 1e-12);
}

#[test]
fn a_request_that_would_cross_the_cost_ceiling_is_refused_before_it_is_sent() {
    let meter = ceiling(0.5);
    let now = Instant::now();
    assert_eq!(meter.admit(0.3, now), Ok(()));
    meter.charge(0.3);
    assert!((meter.spent() - 0.3).abs() < 1e-12);
    assert_eq!(
        meter.admit(0.2, now),
        Ok(()),
        "exactly at the ceiling is fine"
    );
    let refused = meter.admit(0.25, now).unwrap_err();
    assert_eq!(
        refused,
        CeilingReached::Cost {
            spent: 0.3,
            in_flight: 0.0,
            estimate: 0.25,
            max: 0.5
        }
    );
    assert!(refused.to_string().contains("$0.50 "), "{refused}");
    assert!(!refused.to_string().contains("held"), "{refused}");
    let fine = CeilingReached::Cost {
        spent: 0.0241,
        in_flight: 0.0,
        estimate: 0.0187,
        max: 0.024_13,
    };
    assert!(fine.to_string().contains("ceiling of $0.0241 "), "{fine}");
    // A plan that does not fit what is left is refused, whatever it says.
    let overreach = meter.reserve_with(now, |_| Ok((0.25, ())));
    assert!(matches!(overreach, Err(CeilingReached::Cost { .. })));
    // Nonsense never lowers the spend.
    meter.charge(f64::NAN);
    meter.charge(-1.0);
    assert!((meter.spent() - 0.3).abs() < 1e-12);
}

#[test]
fn the_time_ceiling_counts_from_the_start_of_the_turn() {
    let meter = SpendMeter::new(Ceilings {
        max_cost: None,
        max_duration: Some(Duration::from_secs(60)),
    });
    let start = Instant::now();
    assert_eq!(meter.admit(1e9, start), Ok(()), "no turn, no deadline");
    assert_eq!(
        meter.start_turn(start),
        Some(start + Duration::from_secs(60))
    );
    assert_eq!(meter.admit(0.0, start + Duration::from_secs(59)), Ok(()));
    assert!(!meter.past_deadline(start + Duration::from_secs(59)));
    assert_eq!(
        meter.admit(0.0, start + Duration::from_secs(60)),
        Err(CeilingReached::Duration {
            max: Duration::from_secs(60)
        })
    );
    assert!(matches!(
        meter.reserve_with(start + Duration::from_secs(60), |_| Ok((0.0, ()))),
        Err(CeilingReached::Duration { .. })
    ));
    assert!(meter.past_deadline(start + Duration::from_secs(61)));
    meter.end_turn();
    assert_eq!(meter.admit(0.0, start + Duration::from_secs(61)), Ok(()));
    assert_eq!(meter.remaining(), None, "no cost ceiling");
    assert!(Ceilings::default().is_empty());
}
