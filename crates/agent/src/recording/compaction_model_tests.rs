//! The recorder with a compaction model: its summaries are recorded apart, at its model.

use super::tests::{observe, session};
use super::*;
use pith_session::ReadOptions;

fn auto(usage: Usage, model: &str) -> HistoryRewrite {
    HistoryRewrite::Compaction(pith_core::Compaction {
        trigger: CompactionTrigger::Auto,
        replacement: vec![Message::user("<compacted_context>S</compacted_context>")],
        summary: "S".into(),
        tokens_before: 1000,
        tokens_after: 10,
        usage: Some(usage),
        carried: pith_core::Carried::default(),
        model: Some(model.into()),
    })
}

fn report(usage: Usage, compaction_model: Option<&str>) -> LoopEvent {
    LoopEvent::RequestFinished(RequestReport {
        id: 0,
        purpose: if compaction_model.is_some() {
            pith_core::RequestPurpose::Compaction
        } else {
            pith_core::RequestPurpose::Turn
        },
        protocol: "test".into(),
        model: "m".into(),
        usage,
        usage_reported: true,
        duration_ms: 1,
        retries: 0,
        error: None,
        compaction_model: compaction_model.map(str::to_owned),
    })
}

fn spent(input_tokens: u64) -> Usage {
    Usage {
        input_tokens,
        output_tokens: 1,
        ..Usage::default()
    }
}

fn sum(a: Usage, b: Usage) -> Usage {
    let mut total = a;
    total += b;
    total
}

#[test]
fn a_compaction_models_summaries_are_recorded_apart_at_their_model() {
    let (_root, mut session) = session();
    session.append(Event::user_text("go")).unwrap();
    let mut recorder = TurnRecorder::new();
    let cheap = "other/cheap";
    observe(
        &mut recorder,
        vec![
            report(spent(100), None),
            // A summary prepared on the compaction model and never used.
            report(spent(7_000), Some(cheap)),
            LoopEvent::AutoCompaction(pith_core::AutoCompaction::Unused {
                reason: "rewritten".into(),
                usage: spent(7_000),
                model: Some(cheap.into()),
            }),
            // The summary that applies.
            report(spent(9_000), Some(cheap)),
        ],
    );
    recorder
        .persist(&auto(spent(9_000), cheap), &mut session)
        .unwrap();
    observe(&mut recorder, vec![report(spent(50), None)]);
    recorder.finish(&mut session, false, None).unwrap();
    let records = session.read(ReadOptions::default()).unwrap().records;
    match (&records[2].event, &records[3].event, &records[4].event) {
        (
            Event::AssistantTurn {
                usage,
                compaction_model_usage,
                ..
            },
            Event::CompactionApplied {
                usage: summary,
                model,
                ..
            },
            Event::AssistantTurn {
                usage: after,
                compaction_model_usage: none,
                ..
            },
        ) => {
            assert_eq!(*usage, Some(spent(100)));
            assert_eq!(
                compaction_model_usage,
                &Some(ModelUsage {
                    model: cheap.into(),
                    usage: spent(7_000),
                })
            );
            assert_eq!(
                (*summary, model.as_deref()),
                (Some(spent(9_000)), Some(cheap))
            );
            assert_eq!((*after, none), (Some(spent(50)), &None));
        }
        other => panic!("unexpected records: {other:?}"),
    }
    let totals = recorder.compaction_totals();
    assert_eq!(totals.usage, sum(spent(7_000), spent(9_000)));
    assert_eq!(totals.compaction_model_usage, totals.usage);
    assert_eq!(totals.compaction_model_unused_usage, spent(7_000));
    let by_model = pith_session::SessionSpend::from_records(&records);
    let by_model: Vec<(&str, &Usage)> = by_model.by_model().collect();
    assert_eq!(
        by_model,
        vec![
            (cheap, &sum(spent(7_000), spent(9_000))),
            ("test/m", &sum(spent(100), spent(50))),
        ]
    );
}
